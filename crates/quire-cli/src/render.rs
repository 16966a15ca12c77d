//! The user's view: a readable trace rendered from events. It is never fed
//! to the model (the model reads tool results' agent views only).

use std::io::{IsTerminal, Write};
use std::sync::Mutex;

use quire_core::{EventSink, SinkError};
use quire_types::{Event, EventKind, MessageSource, NotesVia, Redactor, SessionStatus};

/// ANSI styling, off when the output is not a terminal.
#[derive(Clone, Copy)]
pub struct Style {
    pub color: bool,
}

impl Style {
    pub fn detect() -> Style {
        Style {
            color: std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none(),
        }
    }

    fn paint(&self, code: &str, text: &str) -> String {
        if self.color {
            format!("\x1b[{code}m{text}\x1b[0m")
        } else {
            text.to_string()
        }
    }

    pub fn bold(&self, t: &str) -> String {
        self.paint("1", t)
    }
    pub fn dim(&self, t: &str) -> String {
        self.paint("2", t)
    }
    pub fn red(&self, t: &str) -> String {
        self.paint("31", t)
    }
    pub fn green(&self, t: &str) -> String {
        self.paint("32", t)
    }
    pub fn yellow(&self, t: &str) -> String {
        self.paint("33", t)
    }
    pub fn cyan(&self, t: &str) -> String {
        self.paint("36", t)
    }

    /// Colours a unified diff line by line.
    pub fn diff(&self, diff: &str) -> String {
        diff.lines()
            .map(|line| {
                if line.starts_with("+++")
                    || line.starts_with("---")
                    || line.starts_with("diff --git")
                {
                    self.bold(line)
                } else if line.starts_with('+') {
                    self.green(line)
                } else if line.starts_with('-') {
                    self.red(line)
                } else if line.starts_with("@@") {
                    self.cyan(line)
                } else {
                    line.to_string()
                }
            })
            .collect::<Vec<_>>()
            .join("\n")
    }
}

/// Formats events as a trace a person can follow.
pub struct Renderer {
    pub style: Style,
    /// Lines of tool output to show; `None` shows everything.
    pub preview_lines: Option<usize>,
    pub redactor: Redactor,
}

impl Renderer {
    pub fn render(&self, event: &Event) -> Option<String> {
        // Redact the event before rendering, not only the finished text:
        // previews cut strings short, and a secret cut in half no longer
        // matches its exact value or its key shape.
        let redacted = redact_event(&self.redactor, event);
        let event = redacted.as_ref().unwrap_or(event);
        let s = &self.style;
        let text = match &event.kind {
            EventKind::SessionStarted {
                task,
                project,
                agent,
                model,
                workspace,
                ..
            } => format!(
                "{} {}\n{} {workspace}  {} {agent}  {} {model}\n{}\n{}",
                s.bold("quire"),
                s.dim(&format!("project {project}")),
                s.dim("workspace"),
                s.dim("agent"),
                s.dim("model"),
                s.bold("task"),
                indent(task, self.preview_lines.map(|n| n.max(8)))
            ),
            EventKind::SystemPrompt { .. }
            | EventKind::ModelRequest { .. }
            | EventKind::HistoryReplaced { .. } => return None,
            EventKind::UserMessage { source, content } => match source {
                MessageSource::Task => return None,
                _ => format!(
                    "{} {}",
                    s.yellow(&format!("» {source}")),
                    first_line(content)
                ),
            },
            EventKind::ModelResponse {
                iteration,
                content,
                usage,
                duration_ms,
                ..
            } => {
                let mut out = s.dim(&format!(
                    "── step {iteration} · {} tok in ({} cached) · {} out · {:.1}s",
                    usage.prompt_tokens,
                    usage.cached_tokens,
                    usage.completion_tokens,
                    *duration_ms as f64 / 1000.0
                ));
                if !content.trim().is_empty() {
                    out.push('\n');
                    out.push_str(&indent(content.trim(), self.preview_lines));
                }
                out
            }
            EventKind::ModelRetry {
                failed_attempt,
                max_attempts,
                reason,
                timed_out_after_secs,
                ..
            } => {
                let next = format!("retrying {}/{max_attempts}", failed_attempt + 1);
                s.yellow(&match timed_out_after_secs {
                    Some(secs) => format!("model did not answer in {} s; {next}", secs.round()),
                    None => format!("model request failed ({}); {next}", first_line(reason)),
                })
            }
            EventKind::ToolCallStarted {
                name, arguments, ..
            } => {
                format!(
                    "{} {}",
                    s.cyan(&format!("▸ {name}")),
                    summarize_args(arguments)
                )
            }
            EventKind::ToolResult {
                views, is_error, ..
            } => {
                let body = indent(&views.user_view, self.preview_lines);
                if *is_error {
                    s.red(&body)
                } else {
                    s.dim(&body)
                }
            }
            EventKind::ProtocolRepair { attempt, reason } => s.yellow(&format!(
                "  protocol repair #{attempt}: {}",
                first_line(reason)
            )),
            EventKind::TestRun {
                phase,
                passed,
                failed,
                exit_code,
                timed_out,
                digest,
                ..
            } => {
                let verdict = if *timed_out {
                    s.red("timed out")
                } else if *exit_code == Some(0) {
                    s.green("passed")
                } else {
                    s.red("failed")
                };
                let counts = format!(
                    "{} passed, {} failed",
                    passed.unwrap_or(0),
                    failed.unwrap_or(0)
                );
                let mut out = format!(
                    "{} {verdict} ({counts})",
                    s.bold(&format!("tests [{phase}]"))
                );
                if *exit_code != Some(0) {
                    out.push('\n');
                    out.push_str(&indent(digest, self.preview_lines));
                }
                out
            }
            EventKind::Patch { diff, files } => {
                if files.is_empty() {
                    s.dim("no change")
                } else {
                    format!(
                        "{} {}\n{}",
                        s.bold("change"),
                        files.join(", "),
                        s.diff(diff)
                    )
                }
            }
            EventKind::Approval { decision, feedback } => match feedback {
                Some(f) => format!("{} {decision}: {f}", s.bold("review")),
                None => format!("{} {decision}", s.bold("review")),
            },
            EventKind::Applied { files } => {
                s.green(&format!("applied to the workspace: {}", files.join(", ")))
            }
            EventKind::RolledBack { files, reason } => {
                s.red(&format!("rolled back {} ({reason})", files.join(", ")))
            }
            EventKind::Compaction {
                stage,
                tokens_before,
                tokens_after,
                ..
            } => s.dim(&format!(
                "context {stage}: ~{tokens_before} → ~{tokens_after} tokens"
            )),
            EventKind::Error { message } => s.red(&format!("error: {message}")),
            EventKind::Extension(payload) => {
                match payload.decode::<quire_mcp::McpServerStatus>() {
                    // A server that did not start was the warning line already.
                    Some(Ok(status)) if status.error.is_some() => return None,
                    Some(Ok(status)) => s.dim(&format!(
                        "mcp server {}: {} tool(s)",
                        status.server,
                        status.tools.len()
                    )),
                    _ => s.dim(&format!("{} · {}", payload.extension, payload.event)),
                }
            }
            // Reads show as the read_note call; the rest as one dim line.
            EventKind::NotesRetrieved { via, ids } => match via {
                NotesVia::Read => return None,
                _ => s.dim(&format!("notes ({via}): {}", ids.join(", "))),
            },
            EventKind::Sandbox { enforced, detail } => {
                if *enforced {
                    return None;
                }
                s.yellow(&format!("sandbox off: {detail}"))
            }
            EventKind::CommandDecision {
                command,
                decision,
                reason,
            } => {
                let line = format!("command {decision} ({reason}): {}", first_line(command));
                if decision.runs() {
                    s.dim(&line)
                } else {
                    s.yellow(&line)
                }
            }
            EventKind::SessionEnded {
                status,
                outcome,
                usage,
                iterations,
                tool_calls,
                elapsed_ms,
                cost_usd,
            } => {
                let status_text = match status {
                    SessionStatus::Completed => s.green(status.as_str()),
                    SessionStatus::Interrupted => s.yellow(status.as_str()),
                    _ => s.red(status.as_str()),
                };
                format!(
                    "{} {status_text}: {outcome}\n{}",
                    s.bold("session"),
                    s.dim(&format!(
                        "tokens in {} ({} cached) · out {} · ~${cost_usd:.4} · {iterations} model calls · {tool_calls} tool calls · {:.1}s",
                        usage.prompt_tokens,
                        usage.cached_tokens,
                        usage.completion_tokens,
                        *elapsed_ms as f64 / 1000.0
                    ))
                )
            }
        };
        Some(self.redactor.redact(&text))
    }
}

/// Prints events to stdout as they happen.
pub struct TerminalSink {
    renderer: Renderer,
    out: Mutex<()>,
}

impl TerminalSink {
    pub fn new(renderer: Renderer) -> TerminalSink {
        TerminalSink {
            renderer,
            out: Mutex::new(()),
        }
    }
}

impl EventSink for TerminalSink {
    fn emit(&self, event: &Event) -> Result<(), SinkError> {
        if let Some(text) = self.renderer.render(event) {
            let _guard = self.out.lock();
            let mut stdout = std::io::stdout().lock();
            // A closed stdout must not fail the session: the store has the events.
            let _ = writeln!(stdout, "{text}");
        }
        Ok(())
    }
}

/// The event with every string redacted; `None` only if the event does not
/// survive a JSON round trip (then the rendered text is still redacted whole).
fn redact_event(redactor: &Redactor, event: &Event) -> Option<Event> {
    let mut value = serde_json::to_value(event).ok()?;
    redactor.redact_json(&mut value);
    serde_json::from_value(value).ok()
}

fn first_line(text: &str) -> String {
    let line = text.lines().next().unwrap_or("");
    if text.lines().nth(1).is_some() {
        format!("{line} …")
    } else {
        line.to_string()
    }
}

fn indent(text: &str, max_lines: Option<usize>) -> String {
    let lines: Vec<&str> = text.lines().collect();
    let shown = max_lines.map_or(lines.len(), |n| n.min(lines.len()));
    let mut out: Vec<String> = lines[..shown].iter().map(|l| format!("  {l}")).collect();
    if shown < lines.len() {
        out.push(format!(
            "  … {} more lines (quire sessions show <id> --full)",
            lines.len() - shown
        ));
    }
    out.join("\n")
}

/// One line of arguments: long strings shortened, so the trace stays readable.
fn summarize_args(raw: &str) -> String {
    let Ok(serde_json::Value::Object(map)) = serde_json::from_str::<serde_json::Value>(raw) else {
        return raw.chars().take(120).collect();
    };
    map.iter()
        .map(|(k, v)| {
            let v = match v {
                serde_json::Value::String(s) => {
                    let one = s.replace('\n', "⏎");
                    if one.chars().count() > 60 {
                        format!(
                            "{:?}",
                            format!("{}…", one.chars().take(60).collect::<String>())
                        )
                    } else {
                        format!("{one:?}")
                    }
                }
                other => other.to_string(),
            };
            format!("{k}={v}")
        })
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use quire_types::{ToolResultViews, Usage};

    fn plain() -> Renderer {
        Renderer {
            style: Style { color: false },
            preview_lines: Some(3),
            redactor: Redactor::new(),
        }
    }

    #[test]
    fn tool_results_show_the_user_view_truncated() {
        let ev = Event::now(EventKind::ToolResult {
            call_id: "c".into(),
            name: "read_file".into(),
            views: ToolResultViews {
                agent_view: "AGENT".into(),
                user_view: "a\nb\nc\nd\ne".into(),
            },
            is_error: false,
            duration_ms: 1,
        });
        let text = plain().render(&ev).unwrap();
        assert!(text.contains("  a\n  b\n  c"), "{text}");
        assert!(text.contains("2 more lines"), "{text}");
        assert!(
            !text.contains("AGENT"),
            "the user view, not the agent view: {text}"
        );
    }

    #[test]
    fn args_are_summarized_on_one_line() {
        let long = "x".repeat(100);
        let out = summarize_args(&format!("{{\"path\":\"a.py\",\"old\":\"{long}\\nmore\"}}"));
        assert!(out.starts_with("old=\"xxx"), "{out}");
        assert!(out.contains("…") && out.contains("path=\"a.py\""), "{out}");
    }

    #[test]
    fn secrets_are_redacted_in_the_trace() {
        let mut r = plain();
        r.redactor.add_secret("sk-live-abcdefghijklmnop12345");
        let ev = Event::now(EventKind::Error {
            message: "bad key sk-live-abcdefghijklmnop12345".into(),
        });
        let text = r.render(&ev).unwrap();
        assert!(!text.contains("abcdefghijklmnop"), "{text}");
    }

    #[test]
    fn secrets_cut_short_by_a_preview_are_still_redacted() {
        let mut r = plain();
        r.redactor.add_secret("plainvalue-QQ-31415926-zebra");
        let pattern = format!("{}|plainvalue-QQ-31415926-zebra", "x".repeat(40));
        let ev = Event::now(EventKind::ToolCallStarted {
            call_id: "c1".into(),
            name: "search".into(),
            arguments: serde_json::json!({ "pattern": pattern }).to_string(),
        });
        let text = r.render(&ev).unwrap();
        assert!(!text.contains("plainvalue-QQ"), "{text}");
    }

    #[test]
    fn session_end_summarizes_totals() {
        let ev = Event::now(EventKind::SessionEnded {
            status: SessionStatus::Completed,
            outcome: "applied".into(),
            usage: Usage {
                prompt_tokens: 1200,
                completion_tokens: 80,
                cached_tokens: 600,
            },
            iterations: 4,
            tool_calls: 5,
            elapsed_ms: 2500,
            cost_usd: 0.0012,
        });
        let text = plain().render(&ev).unwrap();
        assert!(text.contains("completed: applied"));
        assert!(
            text.contains("tokens in 1200 (600 cached)")
                && text.contains("4 model calls")
                && text.contains("2.5s"),
            "{text}"
        );
    }
}
