//! Digests of eval trajectories for the reflection: what the agent read
//! right before it went wrong (tool errors, protocol repairs, reminders,
//! test digests) and how the attempt was judged (hidden test output).
//! Failed attempts first, then the costliest resolved ones.

use std::fmt::Write as _;

use quire_store::{EvalResultRow, EvalResultStatus, Store};
use quire_types::{EventKind, MessageSource};

/// Characters kept of one excerpt.
const EXCERPT: usize = 300;
/// Characters kept of one attempt's digest.
const PER_ATTEMPT: usize = 2_500;

fn clip(text: &str, n: usize) -> String {
    let text = text.trim();
    if text.chars().count() <= n {
        return text.to_string();
    }
    let head: String = text.chars().take(n).collect();
    format!("{head} […]")
}

fn tail(text: &str, n: usize) -> String {
    let count = text.chars().count();
    if count <= n {
        return text.trim().to_string();
    }
    let rest: String = text.chars().skip(count - n).collect();
    format!("[…] {}", rest.trim())
}

fn tokens(r: &EvalResultRow) -> u64 {
    r.outcome.usage.prompt_tokens + r.outcome.usage.completion_tokens
}

/// The attempts worth reading: every failed one, then resolved ones that
/// cost more than the median, then the other resolved ones by cost, at
/// most `max`. When everything passed, cost is the only signal and the
/// meta model needs several trajectories to see a pattern in it.
pub fn pick(results: &[EvalResultRow], max: usize) -> Vec<&EvalResultRow> {
    let done: Vec<&EvalResultRow> = results
        .iter()
        .filter(|r| r.status == EvalResultStatus::Done)
        .collect();
    let mut costs: Vec<u64> = done.iter().map(|r| tokens(r)).collect();
    costs.sort_unstable();
    let median = costs.get(costs.len() / 2).copied().unwrap_or(0);
    let mut picked: Vec<&EvalResultRow> = done
        .iter()
        .filter(|r| !r.outcome.resolved)
        .copied()
        .collect();
    let mut costly: Vec<&EvalResultRow> = done
        .iter()
        .filter(|r| r.outcome.resolved && tokens(r) > median)
        .copied()
        .collect();
    costly.sort_by_key(|r| std::cmp::Reverse(tokens(r)));
    let mut cheaper: Vec<&EvalResultRow> = done
        .iter()
        .filter(|r| r.outcome.resolved && tokens(r) <= median)
        .copied()
        .collect();
    cheaper.sort_by_key(|r| std::cmp::Reverse(tokens(r)));
    picked.extend(costly);
    picked.extend(cheaper);
    picked.truncate(max);
    picked
}

/// One attempt's digest, from its result row and its session's events.
pub fn digest(store: &Store, result: &EvalResultRow) -> String {
    let o = &result.outcome;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "### {}#{}: {} · {} tokens · {} turns · {} tool calls",
        result.task_id,
        result.attempt,
        o.category,
        tokens(result),
        o.turns,
        o.tool_calls
    );
    if let Some(error) = &o.error {
        let _ = writeln!(out, "error: {}", clip(error, EXCERPT));
    }
    if let Some(id) = &o.session_id {
        match store.events(id) {
            Ok(events) => {
                let mut last_args: Option<String> = None;
                for e in events {
                    let line = match e.event.kind {
                        // Turn by turn: what each request cost and what the
                        // model did with it (where the tokens go).
                        EventKind::ModelResponse {
                            iteration,
                            tool_calls,
                            usage,
                            ..
                        } => Some(format!(
                            "- turn {iteration} ({} prompt tokens): {}",
                            usage.prompt_tokens,
                            if tool_calls.is_empty() {
                                "no tool call".to_string()
                            } else {
                                tool_calls
                                    .iter()
                                    .map(|c| format!("{}({})", c.name, clip(&c.arguments, 60)))
                                    .collect::<Vec<_>>()
                                    .join(", ")
                            }
                        )),
                        EventKind::ToolCallStarted { arguments, .. } => {
                            last_args = Some(arguments);
                            None
                        }
                        EventKind::ToolResult {
                            name,
                            views,
                            is_error: true,
                            ..
                        } => Some(format!(
                            "- tool error from `{name}` (arguments {}): {}",
                            clip(last_args.as_deref().unwrap_or("{}"), 120),
                            clip(&views.agent_view, EXCERPT)
                        )),
                        EventKind::ProtocolRepair { reason, .. } => {
                            Some(format!("- protocol repair: {}", clip(&reason, EXCERPT)))
                        }
                        EventKind::UserMessage { source, content }
                            if matches!(
                                source,
                                MessageSource::Reminder | MessageSource::PostApplyFailure
                            ) =>
                        {
                            Some(format!("- {source}: {}", clip(&content, EXCERPT)))
                        }
                        EventKind::TestRun {
                            phase,
                            digest,
                            exit_code,
                            ..
                        } if exit_code != Some(0) => Some(format!(
                            "- tests failed ({phase}): {}",
                            clip(&digest, EXCERPT)
                        )),
                        EventKind::Error { message } => {
                            Some(format!("- error: {}", clip(&message, EXCERPT)))
                        }
                        EventKind::SessionEnded { outcome, .. } => {
                            Some(format!("- session ended: {}", clip(&outcome, EXCERPT)))
                        }
                        _ => None,
                    };
                    if let Some(line) = line {
                        let _ = writeln!(out, "{line}");
                    }
                }
            }
            Err(err) => tracing::warn!(%err, "cannot read the attempt's events"),
        }
    }
    if !o.resolved
        && let Some(log) = o
            .details
            .get("hidden")
            .and_then(|h| h.get("log"))
            .and_then(|l| l.as_str())
        && let Ok(text) = std::fs::read_to_string(log)
    {
        let _ = writeln!(out, "- hidden tests output: {}", tail(&text, 800));
    }
    clip(&out, PER_ATTEMPT)
}

/// The digests of the attempts worth reading, or a line saying all passed.
pub fn digests(store: &Store, results: &[EvalResultRow], max: usize) -> String {
    let picked = pick(results, max);
    if picked.is_empty() {
        return "(every attempt was resolved at about the same cost)".into();
    }
    picked
        .into_iter()
        .map(|r| digest(store, r))
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(task: &str, resolved: bool, prompt_tokens: u64) -> EvalResultRow {
        let mut outcome = quire_store::EvalOutcome {
            resolved,
            ..Default::default()
        };
        outcome.usage.prompt_tokens = prompt_tokens;
        EvalResultRow {
            run_id: "r".into(),
            task_id: task.into(),
            attempt: 1,
            status: EvalResultStatus::Done,
            started_at: None,
            ended_at: None,
            outcome,
        }
    }

    #[test]
    fn failures_first_then_every_resolved_attempt_by_cost() {
        let rows = vec![
            row("cheap", true, 10),
            row("failed", false, 5),
            row("dear", true, 30),
            row("middle", true, 20),
        ];
        let picked: Vec<&str> = pick(&rows, 6).iter().map(|r| r.task_id.as_str()).collect();
        assert_eq!(picked, vec!["failed", "dear", "middle", "cheap"]);
        let two: Vec<&str> = pick(&rows, 2).iter().map(|r| r.task_id.as_str()).collect();
        assert_eq!(two, vec!["failed", "dear"]);
    }
}
