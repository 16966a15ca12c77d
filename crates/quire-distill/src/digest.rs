//! The compact digest of a finished session that the note-taker reads: the
//! task, each action as `name(short args)`, errors verbatim (capped) with
//! the step that resolved them, failing test digests and what fixed them,
//! the outcome and the final change. Secrets are redacted.
//!
//! A trajectory can be thousands of events; the note-taker needs the story,
//! not the file contents, so reads are one line and only errors, test
//! failures and the final diff keep their text.

use std::collections::HashMap;
use std::fmt::Write as _;

use quire_config::{AgentConfig, render};
use quire_types::{Event, EventKind, MessageSource, Redactor, TestPhase};

use quire_recall::SessionFacts;

/// How much of each part is kept, in characters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DigestLimits {
    pub task: usize,
    /// One tool error, verbatim up to here.
    pub error: usize,
    /// One failing test digest.
    pub test: usize,
    /// What the model said before a step.
    pub thought: usize,
    /// One argument value in `name(args)`.
    pub arg: usize,
    pub diff: usize,
    /// Steps listed in full; past it, uneventful steps in the middle are elided.
    pub steps: usize,
    /// Hit lines of one search shown under it (where things are is what a
    /// project map needs, and the call alone does not say).
    pub search_hits: usize,
}

impl Default for DigestLimits {
    fn default() -> Self {
        DigestLimits {
            task: 2_000,
            error: 700,
            test: 1_000,
            thought: 240,
            arg: 70,
            diff: 2_500,
            steps: 80,
            search_hits: 3,
        }
    }
}

/// What shapes a digest: the frame template (`messages.toml`
/// `notes_digest`), which tools edit files, the redactor and the caps.
#[derive(Debug, Clone)]
pub struct DigestOptions {
    /// Placeholders `{project}`, `{tests}`, `{status}`, `{outcome}`, `{task}`,
    /// `{steps}`, `{notes}`, `{diff}`.
    pub template: String,
    /// Tools whose success between a failing and a passing test run count
    /// as the fix (`tool_roles.edits`).
    pub edit_tools: Vec<String>,
    pub redactor: Redactor,
    pub limits: DigestLimits,
}

impl DigestOptions {
    /// Texts and tool roles from the agent config.
    pub fn from_config(config: &AgentConfig, redactor: Redactor) -> DigestOptions {
        DigestOptions {
            template: config.message("notes_digest").to_string(),
            edit_tools: config.tool_roles.edits.clone(),
            redactor,
            limits: DigestLimits::default(),
        }
    }
}

/// What a step's tool call came to.
#[derive(Debug, Clone, PartialEq)]
enum Outcome {
    Pending,
    Ok,
    Error(String),
    TestsFailed(String),
    TestsPassed(String),
    /// A search's first hit lines, and how many more there were.
    Found(Vec<String>, usize),
}

#[derive(Debug, Clone)]
struct Step {
    /// `name(short args)`, or a line for a non-tool step.
    line: String,
    name: String,
    /// The `path` argument, to tell which later call resolved an error.
    path: Option<String>,
    thought: Option<String>,
    outcome: Outcome,
    /// Set on errors and test failures once resolution is known.
    resolution: Option<String>,
    /// A step that is not a tool call (feedback, post-apply tests).
    event: bool,
    /// The model reply that made the call (1-based; 0 for events): the
    /// note-taker tells one batched reply from several.
    reply: u32,
}

/// Builds the digest text of one session from its events.
pub fn digest(events: &[Event], options: &DigestOptions) -> String {
    let facts = SessionFacts::from_events(events);
    let limits = &options.limits;
    let mut steps: Vec<Step> = Vec::new();
    let mut by_call: HashMap<String, usize> = HashMap::new();
    let mut thought: Option<String> = None;
    let mut diff: Option<(String, Vec<String>)> = None;
    let mut approval: Option<String> = None;
    let mut reply = 0;

    for event in events {
        match &event.kind {
            EventKind::ModelResponse { content, .. } => {
                reply += 1;
                let text = one_line(content);
                thought = (!text.is_empty()).then(|| cap(&text, limits.thought));
            }
            EventKind::ToolCallStarted {
                call_id,
                name,
                arguments,
            } => {
                by_call.insert(call_id.clone(), steps.len());
                steps.push(Step {
                    line: format!("{name}({})", short_args(arguments, limits.arg)),
                    name: name.clone(),
                    path: path_arg(arguments),
                    thought: thought.take(),
                    outcome: Outcome::Pending,
                    resolution: None,
                    event: false,
                    reply,
                });
            }
            EventKind::TestRun {
                phase,
                exit_code,
                timed_out,
                digest,
                output,
                ..
            } => {
                let failed = *exit_code != Some(0) || *timed_out;
                let text = if digest.trim().is_empty() {
                    output.as_str()
                } else {
                    digest.as_str()
                };
                let outcome = if failed {
                    Outcome::TestsFailed(cap(text.trim(), limits.test))
                } else {
                    Outcome::TestsPassed(first_line(text))
                };
                if *phase == TestPhase::Agent
                    && let Some(step) = steps
                        .iter_mut()
                        .rev()
                        .find(|s| !s.event && s.outcome == Outcome::Pending)
                {
                    step.outcome = outcome;
                } else {
                    steps.push(Step {
                        line: format!("{phase} tests"),
                        name: String::new(),
                        path: None,
                        thought: None,
                        outcome,
                        resolution: None,
                        event: true,
                        reply: 0,
                    });
                }
            }
            EventKind::ToolResult {
                call_id,
                views,
                is_error,
                ..
            } => {
                let Some(&index) = by_call.get(call_id) else {
                    continue;
                };
                let step = &mut steps[index];
                if step.outcome == Outcome::Pending {
                    step.outcome = if *is_error {
                        Outcome::Error(cap(views.agent_view.trim(), limits.error))
                    } else if step.name == quire_tools::SEARCH_TOOL {
                        search_hits(&views.agent_view, limits)
                    } else {
                        Outcome::Ok
                    };
                }
            }
            EventKind::UserMessage { source, content }
                if matches!(
                    source,
                    MessageSource::Feedback | MessageSource::PostApplyFailure
                ) =>
            {
                steps.push(Step {
                    line: format!("{source}: {}", cap(&one_line(content), limits.error)),
                    name: String::new(),
                    path: None,
                    thought: None,
                    outcome: Outcome::Ok,
                    resolution: None,
                    event: true,
                    reply: 0,
                });
            }
            EventKind::Patch { diff: d, files } => {
                diff = Some((d.clone(), files.clone()));
            }
            EventKind::Approval { decision, feedback } => {
                approval = Some(match feedback {
                    Some(f) => format!("{decision}: {}", one_line(f)),
                    None => decision.to_string(),
                });
            }
            EventKind::RolledBack { reason, .. } => {
                steps.push(Step {
                    line: format!("rolled back: {reason}"),
                    name: String::new(),
                    path: None,
                    thought: None,
                    outcome: Outcome::Ok,
                    resolution: None,
                    event: true,
                    reply: 0,
                });
            }
            EventKind::Error { message } => {
                steps.push(Step {
                    line: "error".into(),
                    name: String::new(),
                    path: None,
                    thought: None,
                    outcome: Outcome::Error(cap(message, limits.error)),
                    resolution: None,
                    event: true,
                    reply: 0,
                });
            }
            _ => {}
        }
    }
    resolve(&mut steps, options);

    let mut outcome = facts.outcome.clone().unwrap_or_default();
    if let Some(a) = approval {
        let _ = write!(outcome, " (review: {a})");
    }
    let diff_text = match diff {
        Some((d, files)) if !d.trim().is_empty() => {
            format!(
                "{}\n```diff\n{}\n```",
                files.join(", "),
                cap_diff(d.trim_end(), limits.diff)
            )
        }
        _ => {
            // No change was proposed (the session ended before finish), but
            // edits may still have been made: say so, so the note-taker
            // does not read "nothing changed" into it.
            let mut edited: Vec<&str> = Vec::new();
            for step in steps.iter().filter(|s| {
                options.edit_tools.contains(&s.name) && matches!(s.outcome, Outcome::Ok)
            }) {
                if let Some(path) = step.path.as_deref()
                    && !edited.contains(&path)
                {
                    edited.push(path);
                }
            }
            if edited.is_empty() {
                "(none)".to_string()
            } else {
                format!(
                    "(none proposed: the session ended before finish, after editing {})",
                    edited.join(", ")
                )
            }
        }
    };
    let notes = notes_used(&facts);
    // The test command the session ran: a map note wants it, and the steps
    // list only `run_tests()`.
    let tests = events
        .iter()
        .find_map(|e| match &e.kind {
            EventKind::TestRun { command, .. } if !command.trim().is_empty() => {
                Some(format!("`{}`", command.trim()))
            }
            _ => None,
        })
        .unwrap_or_else(|| "none run".to_string());
    let text = render(
        &options.template,
        &[
            ("project", &facts.project),
            ("tests", &tests),
            ("status", facts.status.as_deref().unwrap_or("unknown")),
            ("outcome", &outcome),
            ("task", &cap(facts.task.trim(), limits.task)),
            ("steps", &render_steps(&steps, limits.steps)),
            ("notes", &notes),
            ("diff", &diff_text),
        ],
    );
    options.redactor.redact(&text)
}

/// Annotates each error with the step that resolved it: for a tool error,
/// the next success of the same tool on the same path; for failing tests,
/// the next passing run and the edits in between.
fn resolve(steps: &mut [Step], options: &DigestOptions) {
    for i in 0..steps.len() {
        let resolution = match &steps[i].outcome {
            Outcome::Error(_) if !steps[i].event => {
                let (name, path) = (steps[i].name.clone(), steps[i].path.clone());
                steps[i + 1..]
                    .iter()
                    .position(|s| s.name == name && s.path == path && s.outcome == Outcome::Ok)
                    .map(|j| format!("resolved at step {}", i + 2 + j))
                    .or_else(|| Some("not resolved".into()))
            }
            Outcome::TestsFailed(_) => {
                let passed = steps[i + 1..]
                    .iter()
                    .position(|s| matches!(s.outcome, Outcome::TestsPassed(_)))
                    .map(|j| i + 1 + j);
                Some(match passed {
                    Some(p) => {
                        let edits: Vec<String> = (i + 1..p)
                            .filter(|&k| {
                                options.edit_tools.contains(&steps[k].name)
                                    && steps[k].outcome == Outcome::Ok
                            })
                            .map(|k| (k + 1).to_string())
                            .collect();
                        if edits.is_empty() {
                            format!("passed at step {}", p + 1)
                        } else {
                            format!(
                                "fixed by step {} (passed at step {})",
                                edits.join(", "),
                                p + 1
                            )
                        }
                    }
                    None => "not resolved".into(),
                })
            }
            _ => None,
        };
        steps[i].resolution = resolution;
    }
}

fn render_steps(steps: &[Step], max: usize) -> String {
    if steps.is_empty() {
        return "(no actions)".into();
    }
    let keep = kept_steps(steps, max);
    let mut out = String::new();
    let mut elided = 0;
    let mut last_reply = 0;
    for (i, step) in steps.iter().enumerate() {
        if !keep[i] {
            elided += 1;
            continue;
        }
        if elided > 0 {
            let _ = writeln!(out, "   … {elided} uneventful step(s) …");
            elided = 0;
        }
        if step.reply != 0 && step.reply != last_reply {
            let _ = writeln!(out, "model reply {}:", step.reply);
            last_reply = step.reply;
        }
        if let Some(t) = &step.thought {
            let _ = writeln!(out, "   ({t})");
        }
        let n = i + 1;
        let resolution = step
            .resolution
            .as_deref()
            .map(|r| format!(" [{r}]"))
            .unwrap_or_default();
        match &step.outcome {
            Outcome::Pending | Outcome::Ok => {
                let _ = writeln!(out, "{n}. {}", step.line);
            }
            Outcome::Found(hits, more) => {
                let _ = writeln!(out, "{n}. {} → found:", step.line);
                for hit in hits {
                    let _ = writeln!(out, "     {hit}");
                }
                if *more > 0 {
                    let _ = writeln!(out, "     (+{more} more)");
                }
            }
            Outcome::TestsPassed(summary) => {
                let _ = writeln!(out, "{n}. {} → tests passed: {summary}", step.line);
            }
            Outcome::Error(text) => {
                let _ = writeln!(out, "{n}. {} → error{resolution}:", step.line);
                out.push_str(&quote(text));
            }
            Outcome::TestsFailed(text) => {
                let _ = writeln!(out, "{n}. {} → tests failed{resolution}:", step.line);
                out.push_str(&quote(text));
            }
        }
    }
    if elided > 0 {
        let _ = writeln!(out, "   … {elided} uneventful step(s) …");
    }
    out.trim_end().to_string()
}

/// Which steps are listed: all when few; else every eventful step and its
/// neighbours, plus the first and last ones.
fn kept_steps(steps: &[Step], max: usize) -> Vec<bool> {
    if steps.len() <= max {
        return vec![true; steps.len()];
    }
    let mut keep = vec![false; steps.len()];
    let head = max / 4;
    let tail = max / 4;
    for (i, k) in keep.iter_mut().enumerate() {
        *k = i < head || i + tail >= steps.len();
    }
    for (i, step) in steps.iter().enumerate() {
        let eventful = step.event
            || matches!(
                step.outcome,
                Outcome::Error(_) | Outcome::TestsFailed(_) | Outcome::TestsPassed(_)
            );
        if eventful {
            keep[i] = true;
            if i + 1 < steps.len() {
                keep[i + 1] = true;
            }
        }
    }
    keep
}

fn notes_used(facts: &SessionFacts) -> String {
    let mut lines = Vec::new();
    if !facts.shown.is_empty() {
        lines.push(format!("shown: {}", facts.shown.join(", ")));
    }
    if !facts.read.is_empty() {
        lines.push(format!("read: {}", facts.read.join(", ")));
    }
    if lines.is_empty() {
        "(none)".into()
    } else {
        lines.join("\n")
    }
}

/// The first `path:line:text` hits of a search result (with the scope a
/// hit is in, so the note-taker copies real class names), each capped, and
/// how many more there were (other lines, such as a cap notice, are not
/// hits and are left out).
fn search_hits(agent_view: &str, limits: &DigestLimits) -> Outcome {
    let hits: Vec<&str> = agent_view
        .lines()
        .filter(|l| quire_tools::search_hit_location(l).is_some())
        .collect();
    if hits.is_empty() {
        return Outcome::Ok;
    }
    let shown = hits
        .iter()
        .take(limits.search_hits)
        .map(|h| cap(h.trim_end(), limits.thought / 2))
        .collect();
    Outcome::Found(shown, hits.len().saturating_sub(limits.search_hits))
}

fn quote(text: &str) -> String {
    let mut out = String::new();
    for line in text.lines() {
        let _ = writeln!(out, "   | {line}");
    }
    out
}

/// `path=src/a.py, old=<52 chars>`: values flattened and capped; long ones
/// (file contents, patches) only by size.
fn short_args(arguments: &str, max: usize) -> String {
    let Ok(serde_json::Value::Object(map)) = serde_json::from_str::<serde_json::Value>(arguments)
    else {
        let raw = one_line(arguments);
        return if raw.is_empty() || raw == "{}" {
            String::new()
        } else {
            cap(&raw, max)
        };
    };
    map.iter()
        .map(|(key, value)| {
            let text = match value {
                serde_json::Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            let flat = one_line(&text);
            if text.contains('\n') && text.chars().count() > max {
                format!("{key}=<{} chars>", text.chars().count())
            } else {
                format!("{key}={}", cap(&flat, max))
            }
        })
        .collect::<Vec<_>>()
        .join(", ")
}

fn path_arg(arguments: &str) -> Option<String> {
    serde_json::from_str::<serde_json::Value>(arguments)
        .ok()?
        .get("path")?
        .as_str()
        .map(|p| p.trim().trim_start_matches("./").to_string())
}

fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn first_line(text: &str) -> String {
    text.lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("")
        .to_string()
}

/// At most `max` characters, marking how much was cut.
/// A unified diff within `max` characters, every file of it kept: each
/// file gets an even share of what is left after the shorter ones, cut at a
/// line, with a note of how many of its lines were left out. A plain cut
/// lost the files at the end of a long change (a refactor's other modules).
pub(crate) fn cap_diff(diff: &str, max: usize) -> String {
    if diff.chars().count() <= max {
        return diff.to_string();
    }
    let mut files: Vec<Vec<&str>> = Vec::new();
    for line in diff.lines() {
        if line.starts_with("diff --git ") || files.is_empty() {
            files.push(Vec::new());
        }
        if let Some(file) = files.last_mut() {
            file.push(line);
        }
    }
    let sizes: Vec<usize> = files
        .iter()
        .map(|f| f.iter().map(|l| l.chars().count() + 1).sum())
        .collect();
    // Shares: the small files whole, the rest split what remains evenly.
    let mut order: Vec<usize> = (0..files.len()).collect();
    order.sort_by_key(|&i| sizes[i]);
    let mut share = vec![0; files.len()];
    let mut left = max;
    for (k, &i) in order.iter().enumerate() {
        let even = left / (files.len() - k);
        share[i] = sizes[i].min(even);
        left -= share[i];
    }
    let mut out = Vec::new();
    for (i, file) in files.iter().enumerate() {
        let mut used = 0;
        let mut kept = 0;
        for line in file {
            let cost = line.chars().count() + 1;
            if used + cost > share[i] && kept > 0 {
                break;
            }
            used += cost;
            kept += 1;
            out.push((*line).to_string());
        }
        if kept < file.len() {
            out.push(format!(
                "[… {} more lines of this file's diff cut]",
                file.len() - kept
            ));
        }
    }
    out.join("\n")
}

pub(crate) fn cap(text: &str, max: usize) -> String {
    let total = text.chars().count();
    if total <= max {
        return text.to_string();
    }
    let kept: String = text.chars().take(max).collect();
    format!("{kept} [… {} characters cut]", total - max)
}

#[cfg(test)]
mod tests;
