//! The `guidance` extension: loop detection and reminders during the run.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::hash::{DefaultHasher, Hash, Hasher};

use async_trait::async_trait;
use quire_config::{AgentConfig, render};
use quire_core::{Control, CoreError, Ctx, Extension, StepSummary, WorkFacts};
use quire_types::{Message, MessageSource, ToolCall};

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

/// The files an edit call aimed at, as the tools published them; a call
/// the tools never saw (refused by its schema) by its `path` argument.
fn edit_paths(facts: &WorkFacts, call: &ToolCall) -> Vec<String> {
    let published = facts.edit_paths(&call.id);
    if !published.is_empty() {
        return published.to_vec();
    }
    serde_json::from_str::<serde_json::Value>(&call.arguments)
        .ok()
        .and_then(|args| {
            args.get("path")
                .and_then(|p| p.as_str())
                .map(|p| vec![p.trim().trim_start_matches("./").to_string()])
        })
        .unwrap_or_default()
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

/// What guidance knew before a resume, read back from the conversation: the
/// loop window (each call with its result) and how often each reminder was
/// sent, so a resumed session neither repeats capped reminders nor forgets
/// a loop it was in.
fn resumed_state(config: &AgentConfig, messages: &[Message]) -> GuidanceState {
    let mut state = GuidanceState::default();
    let mut calls: HashMap<&str, &ToolCall> = HashMap::new();
    // A reminder is recognised by its text up to the first placeholder.
    let prefixes: Vec<(&String, String)> = config
        .reminders
        .iter()
        .map(|(key, r)| {
            (
                key,
                r.text.split('{').next().unwrap_or("").trim().to_string(),
            )
        })
        .filter(|(_, prefix)| prefix.chars().count() >= 12)
        .collect();
    let window = config.guidance.loop_window.max(1) as usize;
    for message in messages {
        let text = match message {
            Message::Assistant { tool_calls, .. } => {
                calls.extend(tool_calls.iter().map(|c| (c.id.as_str(), c)));
                continue;
            }
            Message::Tool {
                call_id, content, ..
            } => {
                if let Some(call) = calls.get(call_id.as_str()) {
                    state.window.push_back(fingerprint(call, content));
                    if state.window.len() > window {
                        state.window.pop_front();
                    }
                }
                content
            }
            Message::User { content } => content,
            _ => continue,
        };
        for (key, prefix) in &prefixes {
            if text.trim_start().starts_with(prefix.as_str()) {
                *state.fired.entry((*key).clone()).or_insert(0) += 1;
            }
        }
    }
    state
}

#[async_trait]
impl Extension for GuidanceExtension {
    fn name(&self) -> &str {
        Self::NAME
    }

    /// A resumed session picks up its loop window and reminder counts.
    async fn on_start(&self, ctx: &mut Ctx) -> Result<(), CoreError> {
        if ctx
            .messages
            .iter()
            .any(|m| matches!(m, Message::Assistant { .. }))
        {
            let state = resumed_state(&ctx.config, &ctx.messages);
            *ctx.state.get_mut::<GuidanceState>() = state;
        }
        Ok(())
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
                for path in edit_paths(&ctx.facts, call) {
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
            ctx.push_user(MessageSource::Reminder, text)?;
        }
        Ok(Control::Continue)
    }

    async fn check_finish(&self, ctx: &mut Ctx) -> Option<String> {
        let config = ctx.config.clone();
        // The tools publish it (also rebuilt on resume); finish's own check
        // reads the same fact.
        if self.tests_available
            && ctx.facts.edited_since_test
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

#[cfg(test)]
mod tests {
    use super::*;
    use quire_config::{AgentSource, Loader};

    #[test]
    fn a_resumed_session_keeps_its_loop_window_and_reminder_counts() {
        let config = Loader::default().load(&AgentSource::Builtin).unwrap();
        let loop_text = render(
            &config.reminders["loop_detected"].text,
            &[("tool", "read_file"), ("count", "3")],
        );
        let mut messages = vec![Message::user("the task")];
        for i in 0..3 {
            let id = format!("c{i}");
            messages.push(Message::assistant(
                "",
                vec![ToolCall::new(&id, "read_file", r#"{"path": "a.py"}"#)],
            ));
            messages.push(Message::tool(&id, "read_file", "same text", false));
        }
        messages.push(Message::user(loop_text));
        let state = resumed_state(&config, &messages);
        assert_eq!(state.window.len(), 3);
        assert_eq!(
            state
                .window
                .iter()
                .collect::<std::collections::HashSet<_>>()
                .len(),
            1,
            "the same call and result three times"
        );
        assert_eq!(state.fired.get("loop_detected"), Some(&1));
        assert_eq!(state.fired.get("edit_failures"), None);
    }
}
