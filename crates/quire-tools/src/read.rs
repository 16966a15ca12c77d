//! `read_file`: numbered lines in ranges, and the record that a file was read.

use std::path::Path;

use quire_core::{Ctx, ToolOutput};
use quire_workspace::SessionCopy;
use serde_json::{Map, Value};

use crate::paths::{Refusal, resolve};
use crate::state::WorkspaceState;
use crate::symbols::{self, Syntax, definitions};
use crate::util::{
    bool_arg, content_hash, edit_distance, int_arg, number_lines, split_lines, str_arg, text,
};
use crate::walk::{rel_string, walk};

pub(crate) const TOOL: &str = "read_file";
/// The `[errors]` keys this tool renders (checked when a config loads).
pub(crate) const ERRORS: &[&str] = &[
    "binary",
    "cut",
    "empty",
    "io",
    "is_dir",
    "more",
    "not_found",
    "offset_past_end",
    "outside",
    "suggestion",
    "symbol_not_found",
    "symbol_near",
    "symbol_unsupported",
    "symbol_also",
    "symbol_loose",
    "outline_header",
    "outline_imports",
    "outline_none",
];

pub(crate) fn run(copy: &SessionCopy, ctx: &mut Ctx, args: &Map<String, Value>) -> ToolOutput {
    let config = ctx.config.clone();
    let raw = str_arg(args, "path").unwrap_or("");
    let not_found = |rel: &str| {
        let suggestion = match suggest_path(copy.root(), rel) {
            Some(path) => text(&config, TOOL, "suggestion", &[("path", &path)]),
            None => String::new(),
        };
        ToolOutput::error(text(
            &config,
            TOOL,
            "not_found",
            &[("path", rel), ("suggestion", &suggestion)],
        ))
    };
    let file = match resolve(copy, raw) {
        Ok(file) => file,
        Err(Refusal::Outside) => {
            return ToolOutput::error(text(&config, TOOL, "outside", &[("path", raw)]));
        }
        Err(Refusal::Missing(_)) => return not_found(raw.trim()),
    };
    let Ok(meta) = std::fs::metadata(&file.abs) else {
        return not_found(&file.rel);
    };
    if meta.is_dir() {
        return ToolOutput::error(text(&config, TOOL, "is_dir", &[("path", &file.rel)]));
    }
    let bytes = match std::fs::read(&file.abs) {
        Ok(bytes) => bytes,
        Err(err) => {
            return ToolOutput::error(text(
                &config,
                TOOL,
                "io",
                &[("path", &file.rel), ("error", &err.to_string())],
            ));
        }
    };
    if bytes.contains(&0) {
        return ToolOutput::error(text(
            &config,
            TOOL,
            "binary",
            &[("path", &file.rel), ("size", &bytes.len().to_string())],
        ));
    }
    let content = String::from_utf8_lossy(&bytes);
    let lines = split_lines(&content);
    let total = lines.len();
    ctx.state
        .get_mut::<WorkspaceState>()
        .mark_read(&file.rel, content_hash(&bytes));
    if total == 0 {
        let out = text(&config, TOOL, "empty", &[("path", &file.rel)]);
        return ToolOutput::ok(out.clone(), out);
    }

    let max = (config.limits.read_max_lines as usize).max(1);
    if bool_arg(args, "outline") == Some(true) {
        return outline(&config, &file.rel, &lines);
    }
    let mut also = String::new();
    let mut range = None;
    if let Some(wanted) = str_arg(args, "symbol").filter(|s| !s.trim().is_empty()) {
        match symbol_range(&config, &file.rel, &lines, wanted) {
            Ok((start, end, others)) => {
                range = Some((start, end));
                also = others;
            }
            Err(refusal) => return refusal,
        }
    }
    let offset = match range {
        Some((start, _)) => start,
        None => int_arg(args, "offset").map_or(1, |o| (o as usize).max(1)),
    };
    if offset > total {
        return ToolOutput::error(text(
            &config,
            TOOL,
            "offset_past_end",
            &[
                ("path", &file.rel),
                ("total", &total.to_string()),
                ("offset", &offset.to_string()),
            ],
        ));
    }
    let limit = match (range, int_arg(args, "limit")) {
        // A symbol is shown whole up to the read limit; `limit` is ignored.
        (Some((start, end)), _) => (end + 1 - start).min(max),
        (None, Some(l)) if l > 0 => (l as usize).min(max),
        _ => max,
    };
    let last = (offset + limit - 1).min(total);
    let mut out = number_lines(&lines[offset - 1..last], offset);
    let block_cut = range.is_some_and(|(_, end)| last < end);
    if !also.is_empty() {
        out.push('\n');
        out.push_str(&also);
    }
    if (range.is_none() || block_cut) && last < total {
        out.push('\n');
        out.push_str(&text(
            &config,
            TOOL,
            "more",
            &[
                ("from", &offset.to_string()),
                ("to", &last.to_string()),
                ("total", &total.to_string()),
                ("next", &(last + 1).to_string()),
            ],
        ));
    }
    ToolOutput::ok(out.clone(), out)
}

/// The lines of the definition `wanted` names, and a line naming its
/// other definitions (or nothing); the refusal when there is none.
fn symbol_range(
    config: &quire_config::AgentConfig,
    rel: &str,
    lines: &[&str],
    wanted: &str,
) -> Result<(usize, usize, String), ToolOutput> {
    let Some(syntax) = Syntax::of(rel) else {
        return Err(ToolOutput::error(text(
            config,
            TOOL,
            "symbol_unsupported",
            &[("path", rel), ("symbol", wanted)],
        )));
    };
    let defs = definitions(lines, syntax);
    let hits = symbols::find(&defs, wanted);
    let Some(first) = hits.first() else {
        if let Some(only) = symbols::loose(&defs, wanted) {
            let shown = text(
                config,
                TOOL,
                "symbol_loose",
                &[("symbol", wanted), ("name", &only.qualified)],
            );
            return Ok((only.start, only.end, shown));
        }
        let near = symbols::near(&defs, wanted, 8);
        let near = if near.is_empty() {
            String::new()
        } else {
            text(config, TOOL, "symbol_near", &[("names", &near.join(", "))])
        };
        return Err(ToolOutput::error(text(
            config,
            TOOL,
            "symbol_not_found",
            &[("path", rel), ("symbol", wanted), ("near", &near)],
        )));
    };
    let others: Vec<String> = hits[1..]
        .iter()
        .map(|d| format!("{} ({}-{})", d.qualified, d.start, d.end))
        .collect();
    let also = if others.is_empty() {
        String::new()
    } else {
        text(
            config,
            TOOL,
            "symbol_also",
            &[("symbol", wanted), ("others", &others.join(", "))],
        )
    };
    Ok((first.start, first.end, also))
}

/// An outline shows a file's import lines when there are at most this many.
const OUTLINE_MAX_IMPORT_LINES: usize = 30;

/// Most definitions an outline lists; a file with more shows the top-level
/// ones only.
const OUTLINE_MAX_ENTRIES: usize = 200;

/// A file's definitions with their line ranges, methods under their class.
fn outline(config: &quire_config::AgentConfig, rel: &str, lines: &[&str]) -> ToolOutput {
    let defs = Syntax::of(rel)
        .map(|syntax| definitions(lines, syntax))
        .unwrap_or_default();
    if defs.is_empty() {
        let out = text(
            config,
            TOOL,
            "outline_none",
            &[("path", rel), ("total", &lines.len().to_string())],
        );
        return ToolOutput::ok(out.clone(), out);
    }
    let max_depth = if defs.len() > OUTLINE_MAX_ENTRIES {
        0
    } else {
        1
    };
    let mut out = text(
        config,
        TOOL,
        "outline_header",
        &[("path", rel), ("total", &lines.len().to_string())],
    );
    // The import lines too, when few: what a module uses (and whether a new
    // import would be circular) without a read of its top.
    if Syntax::of(rel) == Some(Syntax::Indent)
        && let Some(end) = crate::excerpt::import_block_end(&lines.join("\n"))
        && end <= OUTLINE_MAX_IMPORT_LINES
    {
        out.push('\n');
        out.push_str(&text(
            config,
            TOOL,
            "outline_imports",
            &[
                ("end", &end.to_string()),
                ("lines", &number_lines(&lines[..end], 1)),
            ],
        ));
    }
    for d in defs.iter().filter(|d| d.depth <= max_depth) {
        out.push('\n');
        out.push_str(&format!(
            "{}{}-{} {}",
            "  ".repeat(d.depth),
            d.start,
            d.end,
            signature(lines.get(d.header - 1).copied().unwrap_or(""), d)
        ));
    }
    ToolOutput::ok(out.clone(), out)
}

/// Characters of a definition's header line an outline shows.
const OUTLINE_SIGNATURE_CHARS: usize = 110;

/// A definition as an outline lists it: its header line (`def
/// available(self, sku: str) -> int:`), so the names come with their
/// parameters and types; a header of another shape, or one cut short,
/// says `…`. A player guessed what `available(sku)` returns from a bare
/// name.
fn signature(header: &str, d: &symbols::Definition) -> String {
    let text = header.trim();
    if !text.contains(d.name.as_str()) {
        return format!("{} {}", d.kind, d.name);
    }
    let text = text.strip_suffix('{').map_or(text, str::trim_end);
    if text.chars().count() > OUTLINE_SIGNATURE_CHARS {
        let kept: String = text.chars().take(OUTLINE_SIGNATURE_CHARS).collect();
        format!("{kept}…")
    } else {
        text.to_string()
    }
}

/// Most files a suggestion search looks at; bigger trees get no suggestion
/// rather than a slow one.
const SUGGEST_SCAN_LIMIT: usize = 50_000;

/// The existing file the model most likely meant by `wanted`: one with the
/// same file name (closest path first), else one whose path is within a few
/// edits.
pub(crate) fn suggest_path(root: &Path, wanted: &str) -> Option<String> {
    let wanted_name = wanted.rsplit('/').next().unwrap_or(wanted);
    let files: Vec<String> = walk(root, root, None, None)
        .into_iter()
        .filter(|f| !f.is_dir)
        .take(SUGGEST_SCAN_LIMIT)
        .map(|f| rel_string(root, &f.path))
        .collect();
    let same_name = files
        .iter()
        .filter(|p| p.rsplit('/').next() == Some(wanted_name))
        .min_by_key(|p| edit_distance(p, wanted));
    if let Some(path) = same_name {
        return Some(path.clone());
    }
    let threshold = (wanted.chars().count() / 4).max(2);
    files
        .iter()
        .map(|p| (edit_distance(p, wanted), p))
        .filter(|(d, _)| *d <= threshold)
        .min_by_key(|(d, _)| *d)
        .map(|(_, p)| p.clone())
}
