//! The `guidance` extension: loop detection and reminders during the run.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::hash::{DefaultHasher, Hash, Hasher};

use async_trait::async_trait;
use quire_config::{AgentConfig, render};
use quire_core::{Control, CoreError, Ctx, Extension, StepSummary};
use quire_types::{Message, ToolCall};

use crate::compact::edited_paths;
use crate::memory::MemoryStore;

/// What guidance remembers during a run (in `ctx.state`).
#[derive(Debug, Default)]
struct GuidanceState {
    /// Fingerprints (tool, arguments, result) of the latest calls.
    window: VecDeque<u64>,
    /// Consecutive failed edits per file.
    edit_failures: BTreeMap<String, u32>,
    /// How often each reminder fired.
    fired: HashMap<String, u32>,
}

impl GuidanceState {
    /// The reminder's text with `vars`, unless it already fired `max_fires`
    /// times (or the config has no such reminder).
    fn fire(&mut self, config: &AgentConfig, key: &str, vars: &[(&str, &str)]) -> Option<String> {
        let reminder = config.reminders.get(key)?;
        let fired = self.fired.entry(key.to_string()).or_insert(0);
        if *fired >= reminder.max_fires {
            return None;
        }
        *fired += 1;
        Some(render(&reminder.text, vars))
    }
}

/// Watches the run and steers it with the reminders of `reminders.toml`:
/// - `loop_detected`: the same call (tool, arguments and result) repeated
///   `guidance.loop_warn` times within `guidance.loop_window` calls; at
///   `guidance.loop_stop` the run stops;
/// - `edit_failures`: `guidance.edit_failure_threshold` failed edits of one
///   file in a row;
/// - at finish, `tests_not_run` (files changed since the last test run) and
///   `open_todo` (an unchecked `- [ ]` item in working memory).
///
/// Same arguments *and* same result, because re-running the tests or
/// re-reading a file after an edit is progress, not a loop.
pub struct GuidanceExtension {
    memory: Option<MemoryStore>,
    tests_available: bool,
}

impl GuidanceExtension {
    /// The extension name used in agent.toml `extensions`.
    pub const NAME: &'static str = "guidance";

    /// `memory`: the working memory to check for open items at finish;
    /// `tests_available`: whether the project has a test command (else
    /// "run the tests" would be advice the model cannot follow).
    pub fn new(memory: Option<MemoryStore>, tests_available: bool) -> GuidanceExtension {
        GuidanceExtension {
            memory,
            tests_available,
        }
    }
}

/// The calls of the latest assistant message with their results.
fn last_step(messages: &[Message]) -> Vec<(&ToolCall, &str, bool)> {
    let Some(at) = messages
        .iter()
        .rposition(|m| matches!(m, Message::Assistant { .. }))
    else {
        return Vec::new();
    };
    let Message::Assistant { tool_calls, .. } = &messages[at] else {
        return Vec::new();
    };
    tool_calls
        .iter()
        .filter_map(|call| {
            messages[at + 1..].iter().find_map(|m| match m {
                Message::Tool {
                    call_id,
                    content,
                    is_error,
                    ..
                } if *call_id == call.id => Some((call, content.as_str(), *is_error)),
                _ => None,
            })
        })
        .collect()
}

fn fingerprint(call: &ToolCall, result: &str) -> u64 {
    // Parsed and printed again, so spacing in the model's JSON does not matter.
    let args = serde_json::from_str::<serde_json::Value>(&call.arguments)
        .map(|v| v.to_string())
        .unwrap_or_else(|_| call.arguments.trim().to_string());
    let mut hasher = DefaultHasher::new();
    (&call.name, args, result).hash(&mut hasher);
    hasher.finish()
}

/// Whether a file changed after the last test run, from the conversation
/// itself (so it holds on resume and within the step that finishes).
fn edits_since_test(config: &AgentConfig, messages: &[Message]) -> bool {
    let roles = &config.tool_roles;
    let mut pending = false;
    for message in messages {
        if let Message::Tool { name, is_error, .. } = message {
            if roles.tests.contains(name) {
                pending = false;
            } else if roles.edits.contains(name) && !is_error {
                pending = true;
            }
        }
    }
    pending
}

#[async_trait]
impl Extension for GuidanceExtension {
    fn name(&self) -> &str {
        Self::NAME
    }

    async fn after_step(&self, ctx: &mut Ctx, step: &StepSummary) -> Result<Control, CoreError> {
        if step.calls.is_empty() {
            return Ok(Control::Continue);
        }
        let config = ctx.config.clone();
        let g = &config.guidance;
        let results: Vec<(ToolCall, u64, bool)> = last_step(&ctx.messages)
            .into_iter()
            .map(|(call, result, is_error)| (call.clone(), fingerprint(call, result), is_error))
            .collect();
        let state = ctx.state.get_mut::<GuidanceState>();
        let mut reminders = Vec::new();
        for (call, print, is_error) in &results {
            state.window.push_back(*print);
            while state.window.len() > g.loop_window.max(1) as usize {
                state.window.pop_front();
            }
            let count = state.window.iter().filter(|p| *p == print).count() as u32;
            if count >= g.loop_stop {
                let reason = format!(
                    "loop detected: `{}` was called {count} times with the same arguments and result within the last {} calls",
                    call.name, g.loop_window
                );
                tracing::warn!(%reason, "stopping the run");
                return Ok(Control::Stop { reason });
            }
            if count >= g.loop_warn {
                let vars = [("tool", call.name.as_str()), ("count", &count.to_string())];
                reminders.extend(state.fire(&config, "loop_detected", &vars));
            }
            if config.tool_roles.edits.contains(&call.name) {
                for path in edited_paths(call) {
                    if !is_error {
                        state.edit_failures.remove(&path);
                        continue;
                    }
                    let failures = state.edit_failures.entry(path.clone()).or_insert(0);
                    *failures += 1;
                    if *failures >= g.edit_failure_threshold.max(1) {
                        let count = failures.to_string();
                        *failures = 0;
                        let vars = [("path", path.as_str()), ("count", count.as_str())];
                        reminders.extend(state.fire(&config, "edit_failures", &vars));
                    }
                }
            }
        }
        for text in reminders {
            ctx.push_user("reminder", text)?;
        }
        Ok(Control::Continue)
    }

    async fn check_finish(&self, ctx: &mut Ctx) -> Option<String> {
        let config = ctx.config.clone();
        if self.tests_available
            && edits_since_test(&config, &ctx.messages)
            && let Some(text) =
                ctx.state
                    .get_mut::<GuidanceState>()
                    .fire(&config, "tests_not_run", &[])
        {
            return Some(text);
        }
        let items = self.memory.as_ref()?.open_items();
        if items.is_empty() {
            return None;
        }
        ctx.state.get_mut::<GuidanceState>().fire(
            &config,
            "open_todo",
            &[("items", &items.join("\n"))],
        )
    }
}
