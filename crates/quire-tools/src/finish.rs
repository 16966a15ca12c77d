//! `finish`: hands the change to the user, once there is one and it was
//! tested after the last edit.

use quire_core::{Control, Ctx, ToolOutput};
use serde_json::{Map, Value};

use crate::state::WorkspaceState;
use crate::util::{str_arg, text};
use quire_workspace::SessionCopy;

pub(crate) const TOOL: &str = "finish";
/// The `[errors]` keys this tool renders (checked when a config loads).
pub(crate) const ERRORS: &[&str] = &[
    "cut",
    "done",
    "edit_failed_this_reply",
    "no_change",
    "tests_failed_this_reply",
    "tests_not_run",
];

/// Whether the latest reply ran the tests before this finish.
fn tests_ran_in_this_reply(ctx: &Ctx) -> bool {
    let Some(quire_types::Message::Assistant { tool_calls, .. }) = ctx
        .messages
        .iter()
        .rev()
        .find(|m| matches!(m, quire_types::Message::Assistant { .. }))
    else {
        return false;
    };
    let tests = &ctx.config.tool_roles.tests;
    tool_calls
        .iter()
        .take_while(|c| c.name != TOOL)
        .any(|c| tests.contains(&c.name))
}

/// Whether an edit earlier in the latest reply failed: a finish sent with
/// it was decided before its result, so the change is not the one the
/// model meant (a refused edit to the tests went unseen when the same
/// reply ran the old tests green and finished).
fn edit_failed_in_this_reply(ctx: &Ctx) -> bool {
    let Some(last) = ctx
        .messages
        .iter()
        .rposition(|m| matches!(m, quire_types::Message::Assistant { .. }))
    else {
        return false;
    };
    let edits = &ctx.config.tool_roles.edits;
    ctx.messages[last + 1..].iter().any(|m| {
        matches!(m, quire_types::Message::Tool { name, is_error: true, .. } if edits.contains(name))
    })
}

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
    if edit_failed_in_this_reply(ctx) {
        return ToolOutput::error(text(&config, TOOL, "edit_failed_this_reply", &[]));
    }
    if config.finish.require_tests_after_edit {
        let tested_in_this_reply = tests_ran_in_this_reply(ctx);
        let can_test = ctx.state.get_mut::<WorkspaceState>().test_command.is_some();
        if can_test && ctx.facts.edited_since_test {
            return ToolOutput::error(text(&config, TOOL, "tests_not_run", &[]));
        }
        // A finish sent in the same reply as a test run was decided before
        // its result: it stands only if the tests passed.
        if tested_in_this_reply && ctx.facts.last_test.is_some_and(|t| !t.passed()) {
            return ToolOutput::error(text(&config, TOOL, "tests_failed_this_reply", &[]));
        }
    }
    let agent = text(&config, TOOL, "done", &[]);
    ToolOutput::ok(agent, summary.clone()).with_control(Control::Finish { summary })
}
