//! `finish`: hands the change to the user, once there is one and it was
//! tested after the last edit.

use quire_core::{Control, Ctx, ToolOutput};
use serde_json::{Map, Value};

use crate::state::WorkspaceState;
use crate::util::{str_arg, text};
use quire_workspace::SessionCopy;

pub(crate) const TOOL: &str = "finish";

pub(crate) fn run(copy: &SessionCopy, ctx: &mut Ctx, args: &Map<String, Value>) -> ToolOutput {
    let config = ctx.config.clone();
    let summary = str_arg(args, "summary").unwrap_or("").trim().to_string();
    if config.finish.require_change {
        match copy.changes() {
            Ok(changes) if changes.is_empty() => {
                return ToolOutput::error(text(&config, TOOL, "no_change", &[]));
            }
            Ok(_) => {}
            // Not knowing must not trap the model in a loop it cannot
            // leave; the user still reviews the diff.
            Err(err) => {
                tracing::warn!(%err, "could not list the session's changes; finish allowed")
            }
        }
    }
    if config.finish.require_tests_after_edit {
        let state = ctx.state.get_mut::<WorkspaceState>();
        if state.test_command.is_some() && state.edits_since_test {
            return ToolOutput::error(text(&config, TOOL, "tests_not_run", &[]));
        }
    }
    let agent = text(&config, TOOL, "done", &[]);
    ToolOutput::ok(agent, summary.clone()).with_control(Control::Finish { summary })
}
