//! `apply_patch`: a model-written unified diff, repaired, applied to every
//! file or to none.

use std::collections::HashMap;
use std::path::PathBuf;

use quire_config::AgentConfig;
use quire_core::{Ctx, ToolOutput};
use quire_patch::{
    ApplyError, ApplyOptions, ChangeKind, Fix, MatchMode, PatchError, SearchKind, apply_patch,
};
use quire_workspace::SessionCopy;
use serde_json::{Map, Value};

use crate::paths::{Refusal, not_applicable, resolve};
use crate::state::WorkspaceState;
use crate::util::{content_hash, file_diff, number_lines, str_arg, text, write_atomic};

pub(crate) const TOOL: &str = "apply_patch";
/// The `[errors]` keys this tool renders (checked when a config loads).
pub(crate) const ERRORS: &[&str] = &[
    "applied",
    "cut",
    "file_exists",
    "fix_context_prefix",
    "fix_counts",
    "fix_dropped_text",
    "fix_fences",
    "fix_line_endings",
    "fix_path_prefixes",
    "fuzz",
    "hunk_ambiguous",
    "hunk_failed",
    "io",
    "missing_file",
    "no_change",
    "no_nearest",
    "not_read",
    "outside",
    "parse",
    "placed_offset",
    "placed_unanchored",
    "placed_whitespace",
    "reason_not_found",
    "region",
    "repaired",
    "not_applicable",
];
/// Most expected lines quoted back for a failed hunk.
const EXPECTED_MAX: usize = 30;

pub(crate) fn run(copy: &SessionCopy, ctx: &mut Ctx, args: &Map<String, Value>) -> ToolOutput {
    let config = ctx.config.clone();
    let patch_text = str_arg(args, "patch").unwrap_or("");
    let mut outside: Vec<String> = Vec::new();
    // Original content by the path spelled in the patch; `None` = no file.
    let mut originals: HashMap<String, Option<String>> = HashMap::new();
    let result = apply_patch(
        patch_text,
        |p: &str| {
            if let Some(known) = originals.get(p) {
                return known.clone();
            }
            let content = match resolve(copy, p) {
                Err(Refusal::Outside) => {
                    outside.push(p.to_string());
                    None
                }
                Err(Refusal::Missing(_)) => None,
                Ok(r) if r.abs == copy.root() => None,
                Ok(r) => std::fs::read(&r.abs)
                    .ok()
                    .map(|b| String::from_utf8_lossy(&b).into_owned()),
            };
            originals.insert(p.to_string(), content.clone());
            content
        },
        &ApplyOptions::default(),
    );
    if let Some(path) = outside.first() {
        return ToolOutput::error(text(&config, TOOL, "outside", &[("path", path)]));
    }
    let outcome = match result {
        Ok(outcome) => outcome,
        Err(PatchError::Parse(err)) => {
            return ToolOutput::error(text(&config, TOOL, "parse", &[("error", &err.to_string())]));
        }
        Err(PatchError::Apply(err)) => {
            if let Ok(r) = resolve(copy, err.path()) {
                ctx.state
                    .get_mut::<WorkspaceState>()
                    .note_edit_failure(&r.rel);
            }
            return ToolOutput::error(apply_error_text(&config, &err));
        }
    };

    if outcome.files.is_empty() {
        return ToolOutput::error(text(&config, TOOL, "no_change", &[]));
    }

    // A file the patch changes must have been read, unless it is new or
    // every hunk matched exactly where the patch said: then its context
    // lines prove the model knew the current text (e.g. from search hits).
    let mut targets: Vec<(PathBuf, String)> = Vec::with_capacity(outcome.files.len());
    for file in &outcome.files {
        let r = match resolve(copy, &file.path) {
            Ok(r) => r,
            Err(Refusal::Outside) => {
                return ToolOutput::error(text(&config, TOOL, "outside", &[("path", &file.path)]));
            }
            Err(Refusal::Missing(error)) => {
                return ToolOutput::error(text(
                    &config,
                    TOOL,
                    "io",
                    &[("path", &file.path), ("error", &error)],
                ));
            }
        };
        if let Some(reason) = not_applicable(copy, &r) {
            return ToolOutput::error(text(
                &config,
                TOOL,
                "not_applicable",
                &[("path", &r.rel), ("reason", &reason)],
            ));
        }
        let exact = file.hunks.iter().all(|h| {
            h.stated_line != 0 && h.search == SearchKind::AtStatedLine && h.mode == MatchMode::Exact
        });
        if file.kind == ChangeKind::Modified
            && !exact
            && !ctx.state.get_mut::<WorkspaceState>().was_read(&r.rel)
        {
            return ToolOutput::error(text(&config, TOOL, "not_read", &[("path", &r.rel)]));
        }
        targets.push((r.abs, r.rel));
    }

    // Write everything; on the first failure put back what was written.
    let mut written: Vec<(PathBuf, Option<Vec<u8>>)> = Vec::new();
    for (file, (abs, rel)) in outcome.files.iter().zip(&targets) {
        let before = std::fs::read(abs).ok();
        let result = match &file.content {
            Some(content) => abs
                .parent()
                .map_or(Ok(()), std::fs::create_dir_all)
                .and_then(|()| write_atomic(abs, content.as_bytes())),
            None => std::fs::remove_file(abs),
        };
        if let Err(err) = result {
            rollback(&written);
            return ToolOutput::error(text(
                &config,
                TOOL,
                "io",
                &[("path", rel), ("error", &err.to_string())],
            ));
        }
        written.push((abs.clone(), before));
    }

    let state = ctx.state.get_mut::<WorkspaceState>();
    let mut touched = Vec::new();
    let mut listed = Vec::new();
    let mut diff = String::new();
    let mut notes = Vec::new();
    let mut regions = Vec::new();
    let mut shown_regions = 0;
    for (file, (_, rel)) in outcome.files.iter().zip(&targets) {
        let mark = match file.kind {
            ChangeKind::Created => "A",
            ChangeKind::Modified => "M",
            ChangeKind::Deleted => "D",
        };
        listed.push(format!("{mark} {rel}"));
        match &file.content {
            Some(content) => state.mark_edited(rel, content_hash(content.as_bytes())),
            None => state.mark_deleted(rel),
        }
        touched.push(rel.clone());
        let before = originals.get(&file.path).cloned().flatten();
        let before = if file.kind == ChangeKind::Created {
            None
        } else {
            before
        };
        let file_diff_text = file_diff(rel, before.as_deref(), file.content.as_deref());
        // Echo the changed lines only where the result may differ from what
        // the model wrote (a hunk placed away from its stated line, matched
        // loosely, or a repaired patch): elsewhere it already knows them.
        let placed_loosely = file.hunks.iter().any(|h| {
            h.stated_line == 0
                || placed_far(h.search, h.applied_line, h.stated_line)
                || h.mode != MatchMode::Exact
        });
        let echo = placed_loosely;
        if let (true, Some(content)) = (echo, &file.content) {
            for (first, last) in new_side_ranges(&file_diff_text, DIFF_CONTEXT) {
                if shown_regions >= REGIONS_MAX {
                    break;
                }
                shown_regions += 1;
                let (from, to) = (first.to_string(), last.to_string());
                regions.push(text(
                    &config,
                    TOOL,
                    "region",
                    &[
                        ("path", rel.as_str()),
                        ("from", &from),
                        ("to", &to),
                        ("region", &crate::edit::region(content, first, last)),
                    ],
                ));
            }
        }
        diff.push_str(&file_diff_text);
        for h in &file.hunks {
            let (hunk, line, stated) = (
                h.hunk.to_string(),
                h.applied_line.to_string(),
                h.stated_line.to_string(),
            );
            let vars = [
                ("hunk", hunk.as_str()),
                ("path", rel.as_str()),
                ("line", line.as_str()),
                ("stated", stated.as_str()),
            ];
            if h.stated_line == 0 {
                notes.push(text(&config, TOOL, "placed_unanchored", &vars));
            } else if placed_far(h.search, h.applied_line, h.stated_line) {
                notes.push(text(&config, TOOL, "placed_offset", &vars));
            }
            if h.mode == MatchMode::IgnoringTrailingWhitespace {
                notes.push(text(&config, TOOL, "placed_whitespace", &vars));
            }
        }
    }
    for path in &touched {
        ctx.facts.touched(path);
    }
    let mut agent = text(&config, TOOL, "applied", &[("files", &listed.join(", "))]);
    // A fix whose text is empty is not worth the model's attention.
    let fixes: Vec<String> = outcome
        .fixes
        .iter()
        .map(|f| fix_text(&config, f))
        .filter(|t| !t.trim().is_empty())
        .fold(Vec::new(), |mut seen, t| {
            if !seen.contains(&t) {
                seen.push(t);
            }
            seen
        });
    if !fixes.is_empty() {
        agent.push('\n');
        agent.push_str(&text(
            &config,
            TOOL,
            "repaired",
            &[("fixes", &fixes.join("; "))],
        ));
    }
    if !notes.is_empty() {
        agent.push('\n');
        agent.push_str(&text(
            &config,
            TOOL,
            "fuzz",
            &[("notes", &notes.join("; "))],
        ));
    }
    for region in regions {
        agent.push('\n');
        agent.push_str(&region);
    }
    ToolOutput::ok(agent, diff)
}

/// Most changed regions echoed back after a patch.
const REGIONS_MAX: usize = 6;

/// Context lines `file_diff` puts around each change.
const DIFF_CONTEXT: usize = 3;

/// New-file line ranges (first, last) of each hunk of a unified diff,
/// without the hunk's surrounding context lines.
fn new_side_ranges(diff: &str, context: usize) -> Vec<(usize, usize)> {
    diff.lines()
        .filter_map(|line| {
            let header = line.strip_prefix("@@ ")?;
            let new_side = header
                .split_whitespace()
                .find(|part| part.starts_with('+'))?;
            let mut parts = new_side[1..].split(',');
            let start: usize = parts.next()?.parse().ok()?;
            let count: usize = parts.next().map_or(Some(1), |c| c.parse().ok())?;
            (count > 0).then(|| {
                let last = start + count - 1;
                let first = (start + context).min(last);
                (first, last.saturating_sub(context).max(first))
            })
        })
        .collect()
}

/// Puts files back as they were before this patch started writing.
fn rollback(written: &[(PathBuf, Option<Vec<u8>>)]) {
    for (abs, before) in written.iter().rev() {
        let result = match before {
            Some(bytes) => write_atomic(abs, bytes),
            None => std::fs::remove_file(abs),
        };
        if let Err(err) = result {
            tracing::error!(path = %abs.display(), %err, "could not roll back a partly applied patch");
        }
    }
}

fn apply_error_text(config: &AgentConfig, err: &ApplyError) -> String {
    match err {
        ApplyError::ContextNotFound {
            path,
            hunk,
            expected,
            closest,
            ..
        } => {
            let mut shown: Vec<&str> = expected
                .iter()
                .take(EXPECTED_MAX)
                .map(String::as_str)
                .collect();
            if expected.len() > EXPECTED_MAX {
                shown.push("…");
            }
            let nearest = match closest {
                Some(region) => {
                    let lines: Vec<&str> = region
                        .lines
                        .iter()
                        .map(String::as_str)
                        .take(EXPECTED_MAX)
                        .collect();
                    number_lines(&lines, region.line)
                }
                None => text(config, TOOL, "no_nearest", &[]),
            };
            let reason = text(config, TOOL, "reason_not_found", &[]);
            text(
                config,
                TOOL,
                "hunk_failed",
                &[
                    ("hunk", &hunk.to_string()),
                    ("path", path),
                    ("reason", &reason),
                    ("expected", &shown.join("\n")),
                    ("nearest", &nearest),
                ],
            )
        }
        ApplyError::Ambiguous {
            path, hunk, places, ..
        } => {
            let lines: Vec<String> = places.iter().map(ToString::to_string).collect();
            text(
                config,
                TOOL,
                "hunk_ambiguous",
                &[
                    ("hunk", &hunk.to_string()),
                    ("path", path),
                    ("lines", &lines.join(", ")),
                ],
            )
        }
        ApplyError::FileMissing { path } => text(config, TOOL, "missing_file", &[("path", path)]),
        ApplyError::FileExists { path } => text(config, TOOL, "file_exists", &[("path", path)]),
    }
}

/// A repair in the config's words.
fn fix_text(config: &AgentConfig, fix: &Fix) -> String {
    match fix {
        Fix::NormalizedLineEndings => text(config, TOOL, "fix_line_endings", &[]),
        Fix::StrippedCodeFences { fences } => text(
            config,
            TOOL,
            "fix_fences",
            &[("count", &fences.to_string())],
        ),
        Fix::DroppedText {
            first_line,
            last_line,
        } => text(
            config,
            TOOL,
            "fix_dropped_text",
            &[
                ("first", &first_line.to_string()),
                ("last", &last_line.to_string()),
            ],
        ),
        Fix::AddedContextPrefix { lines, .. } => text(
            config,
            TOOL,
            "fix_context_prefix",
            &[("count", &lines.len().to_string())],
        ),
        Fix::RecomputedHunkCounts { .. } => text(config, TOOL, "fix_counts", &[]),
        Fix::AddedPathPrefixes { .. } => text(config, TOOL, "fix_path_prefixes", &[]),
    }
}

/// A hunk whose exact context was found a few lines from its stated line
/// (line numbers that did not count an earlier hunk's lines) landed where
/// the model meant: saying so is noise. Farther away, it is worth a look.
fn placed_far(search: SearchKind, applied: usize, stated: usize) -> bool {
    const NEAR_LINES: usize = 10;
    search != SearchKind::AtStatedLine && applied.abs_diff(stated) > NEAR_LINES
}
