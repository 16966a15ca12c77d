//! The workspace tools as extensions of the agent loop.
//!
//! Three extensions, so an agent config can leave out tests or finishing:
//! [`WorkspaceTools`] (`list_files`, `read_file`, `search`, `edit_file`,
//! `write_file`, `apply_patch`), [`TestRunner`] (`run_tests`) and
//! [`Finisher`] (`finish`). Every path goes through the session copy's
//! guard, every word the model reads comes from the tool's config texts, and
//! every agent view is capped at `limits.tool_output_max_chars`. What the
//! tools learn (files read and edited, the last test run) lives in
//! [`WorkspaceState`] in `ctx.state`, for reminders and the session driver.

mod commands;
mod edit;
mod excerpt;
mod finish;
mod insert;
mod list;
mod mentions;
mod patch;
mod paths;
mod read;
mod run_tests;
mod search;
mod state;
mod symbols;
#[cfg(test)]
mod tests;
mod util;
mod walk;
mod write;

use std::sync::Arc;

use async_trait::async_trait;
use quire_config::{AgentConfig, ToolTexts, render};
use quire_core::{Action, CoreError, Ctx, Extension, ToolOutput};

use quire_workspace::{Sandbox, SandboxEnforcement, SandboxStatus, SessionCopy};

pub use commands::{CommandApprover, NobodyToAsk, Verdict, dangerous, glob_match, judge};
pub use excerpt::{CodeDefinition, code_definitions, import_block_end, line_count, numbered_lines};
pub use list::render_tree;
pub use mentions::{Mentions, Place, changed_definitions_named_elsewhere};
/// The code search tool's name, for readers of trajectories (the digest
/// shows what a search found).
pub use search::TOOL as SEARCH_TOOL;
pub use search::hit_location as search_hit_location;

/// The texts of one tool of this crate.
const fn texts(tool: &'static str, errors: &'static [&'static str]) -> ToolTexts {
    ToolTexts { tool, errors }
}

/// The tools each extension of this crate declares, with the texts their
/// code renders, by extension name: a config is checked against them when
/// it loads, without building a session.
pub fn texts_by_extension() -> &'static [(&'static str, &'static [ToolTexts])] {
    TEXTS_BY_EXTENSION
}

const TEXTS_BY_EXTENSION: &[(&str, &[ToolTexts])] = &[
    (
        WorkspaceTools::NAME,
        &[
            texts(list::TOOL, list::ERRORS),
            texts(read::TOOL, read::ERRORS),
            texts(search::TOOL, search::ERRORS),
            texts(edit::TOOL, edit::ERRORS),
            texts(write::TOOL, write::ERRORS),
            texts(patch::TOOL, patch::ERRORS),
        ],
    ),
    (
        TestRunner::NAME,
        &[texts(run_tests::TOOL, run_tests::ERRORS)],
    ),
    (Finisher::NAME, &[texts(finish::TOOL, finish::ERRORS)]),
    (
        CommandRunner::NAME,
        &[texts(commands::TOOL, commands::ERRORS)],
    ),
];
pub use state::{TestSummary, WorkspaceState};
pub use util::cap_output;

/// Exploring and changing files: `list_files`, `read_file`, `search`,
/// `edit_file`, `write_file`, `apply_patch`.
pub struct WorkspaceTools {
    copy: Arc<SessionCopy>,
}

impl WorkspaceTools {
    /// The extension name used in agent.toml `extensions`.
    pub const NAME: &'static str = "workspace_tools";

    pub fn new(copy: Arc<SessionCopy>) -> WorkspaceTools {
        WorkspaceTools { copy }
    }
}

#[async_trait]
impl Extension for WorkspaceTools {
    fn name(&self) -> &str {
        Self::NAME
    }

    fn tools(&self) -> Vec<&'static str> {
        vec![
            list::TOOL,
            read::TOOL,
            search::TOOL,
            edit::TOOL,
            write::TOOL,
            patch::TOOL,
        ]
    }

    /// On resume the conversation is already there: rebuild what the tools
    /// knew (files read, edits since the last test) from it.
    async fn on_start(&self, ctx: &mut Ctx) -> Result<(), CoreError> {
        if ctx
            .messages
            .iter()
            .any(|m| matches!(m, quire_types::Message::Assistant { .. }))
        {
            let (rebuilt, facts) = state::rebuild(&self.copy, &ctx.messages);
            ctx.facts = facts;
            let current = ctx.state.get_mut::<WorkspaceState>();
            let test_command = current.test_command.take();
            // Files another extension showed (the code notes point to) stay
            // seen, whichever of the two started first.
            let mut files_read = std::mem::take(&mut current.files_read);
            files_read.extend(rebuilt.files_read.clone());
            *current = WorkspaceState {
                test_command,
                files_read,
                ..rebuilt
            };
        }
        Ok(())
    }

    async fn execute(&self, ctx: &mut Ctx, action: &Action) -> ToolOutput {
        let tool = action.call.name.as_str();
        let out = match tool {
            list::TOOL => {
                let (copy, config, args) =
                    (self.copy.clone(), ctx.config.clone(), action.args.clone());
                blocking(move || list::run(&copy, &config, &args)).await
            }
            search::TOOL => {
                let target = paths::resolve(
                    &self.copy,
                    util::str_arg(&action.args, "path").unwrap_or(""),
                );
                let request = search::Request::from_args(self.copy.root(), target, &action.args);
                let config = ctx.config.clone();
                let searched = tokio::task::spawn_blocking(move || search::run(&config, &request));
                match searched.await {
                    Ok((out, seen)) => {
                        let state = ctx.state.get_mut::<WorkspaceState>();
                        for (path, hash) in seen {
                            state.mark_read(&path, hash);
                        }
                        out
                    }
                    Err(err) => {
                        tracing::error!(%err, "tool task failed");
                        ToolOutput::error(err.to_string())
                    }
                }
            }
            read::TOOL => read::run(&self.copy, ctx, &action.args),
            edit::TOOL => edit::run(&self.copy, ctx, &action.args),
            write::TOOL => write::run(&self.copy, ctx, &action.args),
            patch::TOOL => patch::run(&self.copy, ctx, &action.args),
            other => unknown_tool(&ctx.config, other, &self.tools()),
        };
        if matches!(tool, edit::TOOL | write::TOOL | patch::TOOL) {
            ctx.facts.edit_call(
                &action.call.id,
                util::edit_targets(&action.args),
                !out.is_error,
            );
        }
        capped(&ctx.config, tool, out)
    }
}

/// `run_tests`: the project's test command in the session copy, digested.
pub struct TestRunner {
    copy: Arc<SessionCopy>,
    command: Option<String>,
}

impl TestRunner {
    /// The extension name used in agent.toml `extensions`.
    pub const NAME: &'static str = "tests";

    /// `command` is the shell command to run; `None` (or blank) means the
    /// project has none, and `run_tests` says so.
    pub fn new(copy: Arc<SessionCopy>, command: Option<String>) -> TestRunner {
        let command = command
            .map(|c| c.trim().to_string())
            .filter(|c| !c.is_empty());
        TestRunner { copy, command }
    }
}

#[async_trait]
impl Extension for TestRunner {
    fn name(&self) -> &str {
        Self::NAME
    }

    fn tools(&self) -> Vec<&'static str> {
        vec![run_tests::TOOL]
    }

    /// Publishes the test command, so `finish` demands a test run after
    /// edits only when tests can actually run.
    async fn on_start(&self, ctx: &mut Ctx) -> Result<(), CoreError> {
        ctx.state.get_mut::<WorkspaceState>().test_command = self.command.clone();
        Ok(())
    }

    async fn execute(&self, ctx: &mut Ctx, action: &Action) -> ToolOutput {
        let tool = action.call.name.as_str();
        let out = if tool == run_tests::TOOL {
            run_tests::run(&self.copy, self.command.as_deref(), ctx).await
        } else {
            unknown_tool(&ctx.config, tool, &self.tools())
        };
        capped(&ctx.config, tool, out)
    }
}

/// `finish`: ends the run once there is a change and, when tests exist, a
/// test run after the last edit.
///
/// Whether tests exist is read from [`WorkspaceState::test_command`], which
/// [`TestRunner`] sets when the agent starts; without the `tests` extension
/// `finish` never asks for a test run the model could not make.
pub struct Finisher {
    copy: Arc<SessionCopy>,
}

impl Finisher {
    /// The extension name used in agent.toml `extensions`.
    pub const NAME: &'static str = "finish";

    pub fn new(copy: Arc<SessionCopy>) -> Finisher {
        Finisher { copy }
    }
}

#[async_trait]
impl Extension for Finisher {
    fn name(&self) -> &str {
        Self::NAME
    }

    fn tools(&self) -> Vec<&'static str> {
        vec![finish::TOOL]
    }

    async fn execute(&self, ctx: &mut Ctx, action: &Action) -> ToolOutput {
        let tool = action.call.name.as_str();
        let out = if tool == finish::TOOL {
            finish::run(&self.copy, ctx, &action.args)
        } else {
            unknown_tool(&ctx.config, tool, &self.tools())
        };
        capped(&ctx.config, tool, out)
    }
}

/// `run_command`: shell commands in the session copy under the `[commands]`
/// policy. Off unless `commands` is listed in `extensions`.
pub struct CommandRunner {
    copy: Arc<SessionCopy>,
    approver: Arc<dyn CommandApprover>,
}

impl CommandRunner {
    /// The extension name used in agent.toml `extensions`.
    pub const NAME: &'static str = "commands";

    pub fn new(copy: Arc<SessionCopy>, approver: Arc<dyn CommandApprover>) -> CommandRunner {
        CommandRunner { copy, approver }
    }
}

#[async_trait]
impl Extension for CommandRunner {
    fn name(&self) -> &str {
        Self::NAME
    }

    fn tools(&self) -> Vec<&'static str> {
        vec![commands::TOOL]
    }

    async fn execute(&self, ctx: &mut Ctx, action: &Action) -> ToolOutput {
        let tool = action.call.name.as_str();
        let out = if tool == commands::TOOL {
            commands::run(&self.copy, &self.approver, ctx, &action.args).await
        } else {
            unknown_tool(&ctx.config, tool, &self.tools())
        };
        capped(&ctx.config, tool, out)
    }
}

/// The sandbox for a process started in `root` (the session copy, or the
/// original for post-apply tests), from `[sandbox]`; `None` when turned off.
/// Where the kernel cannot confine, the process runs unconfined: the
/// session records that once ([`sandbox_note`]).
pub fn process_sandbox(config: &AgentConfig, root: &std::path::Path) -> Option<Sandbox> {
    if !config.sandbox.enabled {
        return None;
    }
    let mut sandbox = Sandbox::confined_to(root, config.sandbox.network);
    sandbox
        .writable
        .extend(config.sandbox.writable.iter().map(std::path::PathBuf::from));
    Some(sandbox)
}

/// Whether processes will be confined, and how or why not, for the
/// session's `Sandbox` event. Warns on stderr once per process when the
/// sandbox is wanted but the kernel cannot provide it.
pub fn sandbox_note(config: &AgentConfig) -> (bool, String) {
    if !config.sandbox.enabled {
        return (false, "turned off by sandbox.enabled = false".into());
    }
    match quire_workspace::sandbox_status() {
        SandboxStatus::Available { abi, network } => {
            let net = match (config.sandbox.network, network) {
                (true, _) => "network allowed",
                (false, true) => "network blocked",
                (false, false) => "network NOT blocked (Landlock ABI < 4)",
            };
            let level = match quire_workspace::sandbox_enforcement() {
                SandboxEnforcement::Partial => " (partially enforced by this kernel)",
                _ => "",
            };
            (
                true,
                format!(
                    "Landlock ABI {abi}{level}: writes confined to the workspace and temp; {net}"
                ),
            )
        }
        SandboxStatus::Unavailable(why) => {
            static WARNED: std::sync::Once = std::sync::Once::new();
            WARNED.call_once(|| {
                tracing::warn!("processes run unconfined: {why}");
            });
            (false, why.clone())
        }
    }
}

/// Runs file-system-heavy work (walks, searches) off the async threads, so
/// an interrupt is noticed while it runs.
async fn blocking<F>(work: F) -> ToolOutput
where
    F: FnOnce() -> ToolOutput + Send + 'static,
{
    match tokio::task::spawn_blocking(work).await {
        Ok(out) => out,
        Err(err) => {
            tracing::error!(%err, "tool task failed");
            ToolOutput::error(err.to_string())
        }
    }
}

/// The loop routes only this extension's tools here; kept for safety.
fn unknown_tool(config: &AgentConfig, name: &str, tools: &[&str]) -> ToolOutput {
    ToolOutput::error(render(
        config.message("unknown_tool"),
        &[("name", name), ("tools", &tools.join(", "))],
    ))
}

/// Applies the agent-view cap with the tool's own `cut` marker.
fn capped(config: &AgentConfig, tool: &str, mut out: ToolOutput) -> ToolOutput {
    let max = config.limits.tool_output_max_chars as usize;
    out.agent_view = cap_output(&out.agent_view, max, config.tool_error(tool, "cut"));
    out
}
