//! The compaction stages as pure rewrites of the conversation (the messages
//! after the system prompt). Each returns the new conversation, or `None`
//! when it would change nothing, so a stage is recorded only when it acts.
//!
//! Invariants every stage keeps: the task (the first user message) is never
//! touched; an assistant message and its tool results are kept or removed
//! together, so calls and results stay paired.

use std::collections::HashMap;

use quire_config::{ToolRoles, render};
use quire_core::WorkFacts;
use quire_llm::text_protocol;
use quire_types::{Message, ToolCall};

/// Arguments shown in a pointer are cut here: enough to tell the call
/// apart, never a file's worth of `write_file` content.
const POINTER_ARGS_MAX: usize = 160;

/// Index of the assistant message that opens the `turns`-th last turn: the
/// first message kept verbatim. 0 when there are not that many turns (all
/// of it is recent).
pub(crate) fn turn_start(messages: &[Message], turns: usize) -> usize {
    let starts: Vec<usize> = messages
        .iter()
        .enumerate()
        .filter(|(_, m)| matches!(m, Message::Assistant { .. }))
        .map(|(i, _)| i)
        .collect();
    if turns == 0 {
        return messages.len();
    }
    match starts.len().checked_sub(turns) {
        Some(k) => starts[k],
        None => 0,
    }
}

/// The first user message: the task, never compacted.
fn task_index(messages: &[Message]) -> Option<usize> {
    messages
        .iter()
        .position(|m| matches!(m, Message::User { .. }))
}

fn call_map(messages: &[Message]) -> HashMap<&str, &ToolCall> {
    messages
        .iter()
        .filter_map(|m| match m {
            Message::Assistant { tool_calls, .. } => Some(tool_calls.iter()),
            _ => None,
        })
        .flatten()
        .map(|c| (c.id.as_str(), c))
        .collect()
}

/// A call's arguments on one line, cut to a readable length.
fn short_args(call: Option<&ToolCall>) -> String {
    let Some(call) = call else {
        return String::new();
    };
    let flat: String = call
        .arguments
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    if flat.chars().count() <= POINTER_ARGS_MAX {
        return flat;
    }
    let cut: String = flat.chars().take(POINTER_ARGS_MAX).collect();
    format!("{cut}…")
}

/// The one-line pointer that replaces a result: tool, arguments, size.
fn pointer(template: &str, name: &str, call: Option<&ToolCall>, content: &str) -> String {
    render(
        template,
        &[
            ("tool", name),
            ("args", &short_args(call)),
            ("lines", &content.lines().count().to_string()),
            ("chars", &content.chars().count().to_string()),
        ],
    )
}

/// Replaces a tool result's body with `pointer` when that at least halves
/// it. A pointer is never twice another pointer's size, so a result already
/// replaced stays as it is: applying a stage twice changes nothing.
fn replace_body(message: &mut Message, pointer: String) -> bool {
    match message {
        Message::Tool { content, .. } if pointer.len() * 2 <= content.len() => {
            *content = pointer;
            true
        }
        _ => false,
    }
}

fn str_arg<'a>(args: &'a serde_json::Value, key: &str) -> Option<&'a str> {
    args.get(key).and_then(|v| v.as_str())
}

fn normalize(path: &str) -> String {
    path.trim().trim_start_matches("./").to_string()
}

/// What a successful file tool did, in conversation order.
enum FileEvent {
    /// A read of lines `from..to` (`to` `None`: to the end).
    Read {
        index: usize,
        path: String,
        from: u64,
        to: Option<u64>,
    },
    Edit {
        index: usize,
        path: String,
    },
}

/// Stage 1: a read before `recent` of a file that was read again (the same
/// lines or more) or changed later is replaced with a pointer. Nothing is
/// lost: the newer read has the content, or the old one is stale. The
/// recent turns stay verbatim, like in every stage. Which files an edit
/// changed comes from the tools' `facts`, not from its arguments.
pub(crate) fn supersede(
    messages: &[Message],
    recent: usize,
    roles: &ToolRoles,
    facts: &WorkFacts,
    template: &str,
) -> Option<Vec<Message>> {
    let calls = call_map(messages);
    let mut events = Vec::new();
    for (index, message) in messages.iter().enumerate() {
        let Message::Tool {
            call_id,
            name,
            is_error: false,
            ..
        } = message
        else {
            continue;
        };
        let Some(call) = calls.get(call_id.as_str()) else {
            continue;
        };
        if roles.reads.contains(name) {
            let args: serde_json::Value = serde_json::from_str(&call.arguments).unwrap_or_default();
            let Some(path) = str_arg(&args, "path") else {
                continue;
            };
            let from = args.get("offset").and_then(|v| v.as_u64()).unwrap_or(1);
            let to = args
                .get("limit")
                .and_then(|v| v.as_u64())
                .map(|l| from.saturating_add(l));
            events.push(FileEvent::Read {
                index,
                path: normalize(path),
                from,
                to,
            });
        } else if roles.edits.contains(name) {
            for path in facts.edit_paths(call_id) {
                events.push(FileEvent::Edit {
                    index,
                    path: path.clone(),
                });
            }
        }
    }
    let mut out = messages.to_vec();
    let mut changed = false;
    for (k, event) in events.iter().enumerate() {
        let FileEvent::Read {
            index,
            path,
            from,
            to,
        } = event
        else {
            continue;
        };
        if *index >= recent {
            break;
        }
        let later = events[k + 1..].iter().any(|e| match e {
            FileEvent::Edit { index: j, path: p } => j > index && p == path,
            FileEvent::Read {
                index: j,
                path: p,
                from: f,
                to: t,
            } => {
                let covers_end = match (t, to) {
                    (None, _) => true,
                    (Some(_), None) => false,
                    (Some(t), Some(to)) => t >= to,
                };
                j > index && p == path && f <= from && covers_end
            }
        });
        if later {
            let (name, call) = tool_of(&out[*index], &calls);
            let text = pointer(template, &name, call, out[*index].text());
            changed |= replace_body(&mut out[*index], text);
        }
    }
    changed.then_some(out)
}

fn tool_of<'a>(
    message: &Message,
    calls: &HashMap<&str, &'a ToolCall>,
) -> (String, Option<&'a ToolCall>) {
    match message {
        Message::Tool { call_id, name, .. } => (name.clone(), calls.get(call_id.as_str()).copied()),
        _ => (String::new(), None),
    }
}

/// The texts faded content is replaced with (`messages.toml`).
#[derive(Clone, Copy)]
pub(crate) struct Faded<'a> {
    /// A tool result: `context_faded`.
    pub result: &'a str,
    /// A long argument of a call: `context_faded_arg`.
    pub arg: &'a str,
}

/// String arguments of old tool calls longer than this are faded too
/// (`write_file` content, big patches): the result says what the call did.
const ARG_KEEP_CHARS: usize = 400;

/// Fades `call`'s long string arguments to `template`. A patch keeps its
/// `---`/`+++` lines, so what it changed can still be read from it.
fn fade_args(call: &mut ToolCall, template: &str) -> bool {
    let Ok(serde_json::Value::Object(mut args)) =
        serde_json::from_str::<serde_json::Value>(&call.arguments)
    else {
        return false;
    };
    let mut changed = false;
    for (key, value) in args.iter_mut() {
        let serde_json::Value::String(text) = value else {
            continue;
        };
        let chars = text.chars().count();
        if chars <= ARG_KEEP_CHARS {
            continue;
        }
        let mut faded = render(template, &[("chars", &chars.to_string())]);
        if key == "patch" {
            for header in text
                .lines()
                .filter(|l| l.starts_with("--- ") || l.starts_with("+++ "))
            {
                faded.push('\n');
                faded.push_str(header);
            }
        }
        if faded.chars().count() < chars {
            *text = faded;
            changed = true;
        }
    }
    if changed {
        call.arguments = serde_json::Value::Object(args).to_string();
    }
    changed
}

/// Stage 2: tool results before `recent` become pointers. Errors and test
/// digests say what went wrong and what is left to fix, so they are kept
/// until they are older than `long` too, unless `all` (the fallback when
/// the summary failed). Long arguments of calls before `long` (or all
/// before `recent` with `all`) fade to `arg_template`.
pub(crate) fn fade(
    messages: &[Message],
    recent: usize,
    long: usize,
    all: bool,
    roles: &ToolRoles,
    faded: Faded<'_>,
) -> Option<Vec<Message>> {
    let (template, arg_template) = (faded.result, faded.arg);
    let calls = call_map(messages);
    let mut out = messages.to_vec();
    let mut changed = false;
    let args_before = if all { recent } else { long.min(recent) };
    for message in out.iter_mut().take(args_before) {
        if let Message::Assistant { tool_calls, .. } = message {
            for call in tool_calls.iter_mut() {
                changed |= fade_args(call, arg_template);
            }
        }
    }
    for index in 0..recent.min(out.len()) {
        let Message::Tool { name, is_error, .. } = &out[index] else {
            continue;
        };
        let long_lived = *is_error || roles.tests.contains(name);
        if long_lived && !all && index >= long {
            continue;
        }
        let (name, call) = tool_of(&out[index], &calls);
        let text = pointer(template, &name, call, out[index].text());
        changed |= replace_body(&mut out[index], text);
    }
    changed.then_some(out)
}

/// Stage 3's span: everything between the task and the recent turns, or
/// `None` when that is nothing new (empty, or only an earlier summary).
pub(crate) fn summary_span(messages: &[Message], recent: usize) -> Option<(usize, usize)> {
    let start = task_index(messages)? + 1;
    if recent <= start {
        return None;
    }
    let span = &messages[start..recent];
    if !span.iter().any(|m| matches!(m, Message::Assistant { .. })) {
        return None;
    }
    Some((start, recent))
}

/// The conversation with `span` replaced by one user message.
pub(crate) fn replace_span(
    messages: &[Message],
    (start, end): (usize, usize),
    summary: Message,
) -> Vec<Message> {
    let mut out = Vec::with_capacity(messages.len() - (end - start) + 1);
    out.extend_from_slice(&messages[..start]);
    out.push(summary);
    out.extend_from_slice(&messages[end..]);
    out
}

/// The messages of a span as tagged text for the summary call; each body is
/// cut to `body_max` characters (head kept).
pub(crate) fn transcript(messages: &[Message], body_max: usize) -> String {
    let cut = |text: &str| -> String {
        if text.chars().count() <= body_max {
            return text.to_string();
        }
        let head: String = text.chars().take(body_max).collect();
        format!("{head}\n…")
    };
    let mut parts = Vec::with_capacity(messages.len());
    for message in messages {
        parts.push(match message {
            Message::System { content } | Message::User { content } => {
                format!("<message role=\"user\">\n{}\n</message>", cut(content))
            }
            Message::Assistant {
                content,
                tool_calls,
            } => format!(
                "<message role=\"assistant\">\n{}\n</message>",
                text_protocol::encode_assistant(&cut(content), tool_calls)
            ),
            Message::Tool {
                call_id,
                name,
                content,
                is_error,
            } => text_protocol::encode_tool_result(name, call_id, &cut(content), *is_error),
        });
    }
    parts.join("\n\n")
}

/// Last resort when a request would not fit the model's window: fade every
/// result but the last turn's, then drop the oldest turns after the task,
/// then fade the last turn too. `fits` says whether a conversation fits.
pub(crate) fn trim(
    messages: &[Message],
    fits: impl Fn(&[Message]) -> bool,
    roles: &ToolRoles,
    faded: Faded<'_>,
) -> Option<Vec<Message>> {
    let last = turn_start(messages, 1);
    let mut out = fade(messages, last, 0, true, roles, faded).unwrap_or_else(|| messages.to_vec());
    let first = task_index(&out).map_or(0, |t| t + 1);
    // Oldest assistant turns first (with their results), then other user
    // messages (summaries, reminders) if that is still not enough.
    for drop_users in [false, true] {
        while !fits(&out) {
            let last = turn_start(&out, 1);
            let Some(at) = (first..last).find(|&i| match &out[i] {
                Message::Assistant { .. } => true,
                Message::User { .. } => drop_users,
                _ => false,
            }) else {
                break;
            };
            let mut end = at + 1;
            if matches!(out[at], Message::Assistant { .. }) {
                while matches!(out.get(end), Some(Message::Tool { .. })) {
                    end += 1;
                }
            }
            out.drain(at..end);
        }
    }
    if !fits(&out)
        && let Some(all) = fade(&out, out.len(), 0, true, roles, faded)
    {
        out = all;
    }
    (out != messages).then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SUPERSEDED: &str = "[gone: {tool} {args}]";
    const FADED: &str = "[faded: {tool} {args} {lines} lines]";
    const ARG: &str = "[{chars} chars faded]";
    const TEXTS: Faded<'static> = Faded {
        result: FADED,
        arg: ARG,
    };

    fn roles() -> ToolRoles {
        ToolRoles::default()
    }

    fn turn(id: &str, tool: &str, args: &str, result: &str, is_error: bool) -> Vec<Message> {
        vec![
            Message::assistant("", vec![ToolCall::new(id, tool, args)]),
            Message::tool(id, tool, result, is_error),
        ]
    }

    fn big(label: &str) -> String {
        format!("{label}\n").repeat(100)
    }

    fn conversation(turns: Vec<Vec<Message>>) -> Vec<Message> {
        let mut out = vec![Message::user("the task")];
        for t in turns {
            out.extend(t);
        }
        out
    }

    #[test]
    fn turn_start_counts_assistant_messages_from_the_end() {
        let msgs = conversation(vec![
            turn("a", "read_file", "{}", "x", false),
            turn("b", "read_file", "{}", "y", false),
        ]);
        assert_eq!(turn_start(&msgs, 1), 3);
        assert_eq!(turn_start(&msgs, 2), 1);
        assert_eq!(turn_start(&msgs, 3), 0);
    }

    #[test]
    fn reads_superseded_by_a_later_covering_read_or_an_edit() {
        let msgs = conversation(vec![
            turn("a", "read_file", r#"{"path":"a.py"}"#, &big("a1"), false),
            turn(
                "b",
                "read_file",
                r#"{"path":"b.py","offset":10,"limit":20}"#,
                &big("b1"),
                false,
            ),
            turn(
                "c",
                "read_file",
                r#"{"path":"b.py","offset":50}"#,
                &big("b2"),
                false,
            ),
            turn("d", "read_file", r#"{"path":"./a.py"}"#, &big("a2"), false),
            turn(
                "e",
                "apply_patch",
                r#"{"patch":"--- a/c.py\n+++ b/c.py\n@@\n"}"#,
                "ok",
                false,
            ),
            turn("f", "read_file", r#"{"path":"c.py"}"#, &big("c1"), false),
            turn(
                "g",
                "apply_patch",
                r#"{"patch":"--- a/c.py\n+++ b/c.py\n@@\n"}"#,
                "ok",
                false,
            ),
        ]);
        let facts = edits(&[("e", "c.py"), ("g", "c.py")]);
        let out = supersede(&msgs, msgs.len(), &roles(), &facts, SUPERSEDED).unwrap();
        // a.py's first read: read again in full later.
        assert_eq!(out[2].text(), r#"[gone: read_file {"path":"a.py"}]"#);
        // b.py lines 10-30 are not covered by a read from line 50.
        assert_eq!(out[4].text(), big("b1"));
        assert_eq!(out[6].text(), big("b2"));
        // The newest read of a.py stays.
        assert_eq!(out[8].text(), big("a2"));
        // c.py was read, then patched.
        assert!(out[12].text().starts_with("[gone: read_file"));
        // Calls and results still pair up, nothing removed.
        assert_eq!(out.len(), msgs.len());
        // Applying it again changes nothing.
        assert!(supersede(&out, msgs.len(), &roles(), &facts, SUPERSEDED).is_none());
        // The recent turns stay verbatim.
        let recent = supersede(&msgs, turn_start(&msgs, 2), &roles(), &facts, SUPERSEDED).unwrap();
        assert_eq!(recent[12].text(), big("c1"));
        assert!(recent[2].text().starts_with("[gone: read_file"));
    }

    /// The facts of edit calls, each changing one file.
    fn edits(calls: &[(&str, &str)]) -> WorkFacts {
        let mut facts = WorkFacts::default();
        for (id, path) in calls {
            facts.edit_call(id, vec![path.to_string()], true);
        }
        facts
    }

    #[test]
    fn an_edit_supersedes_reads_of_the_files_the_tools_say_it_changed() {
        // The arguments name no file (faded, or a tool of another format):
        // what the edit changed is the tools' fact.
        let msgs = conversation(vec![
            turn("r", "read_file", r#"{"path":"c.py"}"#, &big("c1"), false),
            turn(
                "e",
                "apply_patch",
                r#"{"patch":"[900 chars faded]"}"#,
                "ok",
                false,
            ),
            turn("s", "read_file", r#"{"path":"d.py"}"#, &big("d1"), false),
        ]);
        let out = supersede(
            &msgs,
            msgs.len(),
            &roles(),
            &edits(&[("e", "c.py")]),
            SUPERSEDED,
        )
        .unwrap();
        assert!(out[2].text().starts_with("[gone: read_file"));
        assert_eq!(out[6].text(), big("d1"));
        // Without the fact, the same conversation keeps the read.
        assert!(
            supersede(
                &msgs,
                msgs.len(),
                &roles(),
                &WorkFacts::default(),
                SUPERSEDED
            )
            .is_none()
        );
    }

    #[test]
    fn long_arguments_of_old_calls_fade_and_patches_keep_their_files() {
        let patch = format!(
            "--- a/a.py\n+++ b/a.py\n@@ -1 +1 @@\n-x\n+{}\n",
            "y".repeat(600)
        );
        let write = json_args(&[("path", "n.py"), ("content", &"z".repeat(900))]);
        let msgs = conversation(vec![
            turn(
                "a",
                "apply_patch",
                &json_args(&[("patch", &patch)]),
                "Patch applied: M a.py.",
                false,
            ),
            turn("b", "write_file", &write, "Created n.py.", false),
            turn("c", "read_file", r#"{"path":"a.py"}"#, &big("a"), false),
            turn("d", "write_file", &write, "Created m.py.", false),
        ]);
        let recent = turn_start(&msgs, 1);
        let long = turn_start(&msgs, 2);
        let out = fade(&msgs, recent, long, false, &roles(), TEXTS).unwrap();
        let args = |i: usize| match &out[i] {
            Message::Assistant { tool_calls, .. } => {
                serde_json::from_str::<serde_json::Value>(&tool_calls[0].arguments).unwrap()
            }
            other => panic!("{other:?}"),
        };
        let faded_patch = args(1)["patch"].as_str().unwrap().to_string();
        assert!(faded_patch.starts_with("[6"), "{faded_patch}");
        assert!(
            faded_patch.ends_with("--- a/a.py\n+++ b/a.py"),
            "{faded_patch}"
        );
        assert_eq!(args(3)["content"], "[900 chars faded]");
        assert_eq!(args(3)["path"], "n.py", "short arguments stay");
        assert_eq!(
            args(7)["content"].as_str().unwrap().len(),
            900,
            "recent call kept"
        );
        // The faded patch still names its file (the tools rebuild their
        // facts from it on resume).
        assert_eq!(
            quire_patch::header_paths(&faded_patch),
            vec!["a.py".to_string()]
        );
        // Fading again changes nothing.
        assert!(fade(&out, recent, long, false, &roles(), TEXTS).is_none());
    }

    fn json_args(pairs: &[(&str, &str)]) -> String {
        let map: serde_json::Map<String, serde_json::Value> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), serde_json::Value::String(v.to_string())))
            .collect();
        serde_json::Value::Object(map).to_string()
    }

    #[test]
    fn fade_keeps_recent_turns_and_errors_longer() {
        let msgs = conversation(vec![
            turn("a", "read_file", r#"{"path":"a.py"}"#, &big("a"), false),
            turn("b", "run_tests", "{}", &big("FAILED"), false),
            turn("c", "edit_file", r#"{"path":"a.py"}"#, &big("err"), true),
            turn("d", "search", r#"{"pattern":"x"}"#, &big("hit"), false),
            turn("e", "read_file", r#"{"path":"b.py"}"#, &big("b"), false),
        ]);
        let recent = turn_start(&msgs, 2);
        let long = turn_start(&msgs, 4);
        let out = fade(&msgs, recent, long, false, &roles(), TEXTS).unwrap();
        assert_eq!(
            out[2].text(),
            r#"[faded: read_file {"path":"a.py"} 100 lines]"#
        );
        assert_eq!(out[4].text(), big("FAILED"), "test digest kept longer");
        assert_eq!(out[6].text(), big("err"), "error kept longer");
        assert_eq!(out[8].text(), big("hit"), "recent");
        assert_eq!(out[10].text(), big("b"), "recent");
        let long = turn_start(&msgs, 3);
        let out = fade(&msgs, recent, long, false, &roles(), TEXTS).unwrap();
        assert!(out[4].text().starts_with("[faded: run_tests"));
        assert_eq!(out[6].text(), big("err"));
        let all = fade(&msgs, recent, 0, true, &roles(), TEXTS).unwrap();
        assert!(all[6].text().starts_with("[faded"));
        assert!(fade(&all, recent, 0, true, &roles(), TEXTS).is_none());
    }

    #[test]
    fn summary_span_is_between_task_and_recent_turns() {
        let msgs = conversation(vec![
            turn("a", "read_file", "{}", "x", false),
            turn("b", "read_file", "{}", "y", false),
            turn("c", "read_file", "{}", "z", false),
        ]);
        let recent = turn_start(&msgs, 1);
        assert_eq!(summary_span(&msgs, recent), Some((1, 5)));
        let out = replace_span(&msgs, (1, 5), Message::user("summary"));
        assert_eq!(out.len(), 4);
        assert_eq!(out[0].text(), "the task");
        assert_eq!(out[1].text(), "summary");
        assert!(matches!(out[2], Message::Assistant { .. }));
        // Nothing new to summarise: only the earlier summary before the recent turn.
        assert_eq!(summary_span(&out, turn_start(&out, 1)), None);
    }

    #[test]
    fn transcript_tags_roles_and_cuts_bodies() {
        let msgs = turn(
            "a",
            "read_file",
            r#"{"path":"a.py"}"#,
            &"x".repeat(50),
            false,
        );
        let text = transcript(&msgs, 10);
        assert!(text.contains("<tool_call name=\"read_file\">"), "{text}");
        assert!(text.contains("xxxxxxxxxx\n…"), "{text}");
        assert!(!text.contains(&"x".repeat(11)));
    }

    #[test]
    fn trim_drops_oldest_turns_until_it_fits_and_keeps_pairs() {
        let msgs = conversation(vec![
            turn("a", "read_file", "{}", &big("a"), false),
            turn("b", "read_file", "{}", &big("b"), false),
            turn("c", "read_file", "{}", &big("c"), false),
        ]);
        let fits = |m: &[Message]| m.len() <= 3;
        let out = trim(&msgs, fits, &roles(), TEXTS).unwrap();
        assert_eq!(out.len(), 3);
        assert_eq!(out[0].text(), "the task");
        assert!(
            matches!(&out[1], Message::Assistant { tool_calls, .. } if tool_calls[0].id == "c")
        );
        assert!(matches!(&out[2], Message::Tool { call_id, .. } if call_id == "c"));
    }
}
