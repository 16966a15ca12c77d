//! `read_file`: numbered lines in ranges, and the record that a file was read.

use std::path::Path;

use quire_core::{Ctx, ToolOutput};
use quire_workspace::SessionCopy;
use serde_json::{Map, Value};

use crate::paths::{Refusal, resolve};
use crate::state::WorkspaceState;
use crate::util::{content_hash, edit_distance, int_arg, number_lines, split_lines, str_arg, text};
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
    let offset = int_arg(args, "offset").map_or(1, |o| (o as usize).max(1));
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
    let limit = match int_arg(args, "limit") {
        Some(l) if l > 0 => (l as usize).min(max),
        _ => max,
    };
    let last = (offset + limit - 1).min(total);
    let mut out = number_lines(&lines[offset - 1..last], offset);
    if last < total {
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
