//! `write_file`: create a new file (never overwrite one).

use quire_core::{Ctx, ToolOutput};
use quire_workspace::SessionCopy;
use serde_json::{Map, Value};

use crate::paths::{Refusal, not_applicable, resolve};
use crate::state::WorkspaceState;
use crate::util::{content_hash, file_diff, split_lines, str_arg, text, write_atomic};

pub(crate) const TOOL: &str = "write_file";
/// The `[errors]` keys this tool renders (checked when a config loads).
pub(crate) const ERRORS: &[&str] = &[
    "created",
    "cut",
    "exists",
    "io",
    "not_applicable",
    "outside",
];

pub(crate) fn run(copy: &SessionCopy, ctx: &mut Ctx, args: &Map<String, Value>) -> ToolOutput {
    let config = ctx.config.clone();
    let raw = str_arg(args, "path").unwrap_or("");
    let content = str_arg(args, "content").unwrap_or("");
    let file = match resolve(copy, raw) {
        Ok(file) => file,
        Err(Refusal::Outside) => {
            return ToolOutput::error(text(&config, TOOL, "outside", &[("path", raw)]));
        }
        Err(Refusal::Missing(error)) => {
            return ToolOutput::error(text(
                &config,
                TOOL,
                "io",
                &[("path", raw.trim()), ("error", &error)],
            ));
        }
    };
    let path = file.rel.as_str();
    if let Some(reason) = not_applicable(copy, &file) {
        return ToolOutput::error(text(
            &config,
            TOOL,
            "not_applicable",
            &[("path", path), ("reason", &reason)],
        ));
    }
    // symlink_metadata: a dangling link is still something in the way.
    if std::fs::symlink_metadata(&file.abs).is_ok() || file.abs == copy.root() {
        return ToolOutput::error(text(&config, TOOL, "exists", &[("path", path)]));
    }
    let written = file
        .abs
        .parent()
        .map_or(Ok(()), std::fs::create_dir_all)
        .and_then(|()| write_atomic(&file.abs, content.as_bytes()));
    if let Err(err) = written {
        return ToolOutput::error(text(
            &config,
            TOOL,
            "io",
            &[("path", path), ("error", &err.to_string())],
        ));
    }
    ctx.state
        .get_mut::<WorkspaceState>()
        .mark_edited(path, content_hash(content.as_bytes()));
    ctx.facts.touched(path);
    let lines = split_lines(content).len().to_string();
    let agent = text(
        &config,
        TOOL,
        "created",
        &[("path", path), ("lines", &lines)],
    );
    ToolOutput::ok(agent, file_diff(path, None, Some(content)))
}
