use quire_types::{Event, EventKind, Message};

/// Rebuilds the conversation (after the system prompt) from a trajectory,
/// so a session can be resumed exactly where it stopped.
pub fn rebuild_history(events: &[Event]) -> Vec<Message> {
    let mut messages = Vec::new();
    for event in events {
        match &event.kind {
            EventKind::UserMessage { content, .. } => messages.push(Message::user(content.clone())),
            EventKind::ModelResponse {
                content,
                tool_calls,
                ..
            } => messages.push(Message::assistant(content.clone(), tool_calls.clone())),
            EventKind::ToolResult {
                call_id,
                name,
                views,
                is_error,
                ..
            } => messages.push(Message::tool(
                call_id.clone(),
                name.clone(),
                views.agent_view.clone(),
                *is_error,
            )),
            EventKind::HistoryReplaced {
                messages: replaced, ..
            }
            | EventKind::Compaction {
                messages: replaced, ..
            } => messages = replaced.clone(),
            _ => {}
        }
    }
    messages
}

/// Ensures every tool call has its result right after its assistant message
/// (a process killed mid-step leaves calls unanswered). Returns the calls
/// that were given a placeholder result.
pub fn pair_tool_calls(messages: &mut Vec<Message>, placeholder: &str) -> Vec<String> {
    let mut repaired = Vec::new();
    let mut i = 0;
    while i < messages.len() {
        if let Message::Assistant { tool_calls, .. } = &messages[i] {
            let calls = tool_calls.clone();
            let mut j = i + 1;
            let mut answered = Vec::new();
            while let Some(Message::Tool { call_id, .. }) = messages.get(j) {
                answered.push(call_id.clone());
                j += 1;
            }
            for call in calls.iter().filter(|c| !answered.contains(&c.id)) {
                messages.insert(
                    j,
                    Message::tool(call.id.clone(), call.name.clone(), placeholder, true),
                );
                repaired.push(call.id.clone());
                j += 1;
            }
            i = j;
        } else {
            i += 1;
        }
    }
    repaired
}

#[cfg(test)]
mod tests {
    use super::*;
    use quire_types::{CompactionStage, MessageSource, ToolCall, ToolResultViews, Usage};

    #[test]
    fn history_is_rebuilt_from_events_in_agent_view() {
        let events = vec![
            Event::now(EventKind::UserMessage {
                source: MessageSource::Task,
                content: "fix it".into(),
            }),
            Event::now(EventKind::ModelResponse {
                iteration: 1,
                content: "look".into(),
                tool_calls: vec![ToolCall::new("c1", "read_file", "{}")],
                usage: Usage::default(),
                duration_ms: 1,
                model: "m".into(),
            }),
            Event::now(EventKind::ToolResult {
                call_id: "c1".into(),
                name: "read_file".into(),
                views: ToolResultViews {
                    agent_view: "compact".into(),
                    user_view: "rich".into(),
                },
                is_error: false,
                duration_ms: 1,
            }),
        ];
        let history = rebuild_history(&events);
        assert_eq!(history.len(), 3);
        assert_eq!(history[2].text(), "compact");
    }

    #[test]
    fn a_compaction_replaces_the_history_and_later_events_extend_it() {
        let events = vec![
            Event::now(EventKind::UserMessage {
                source: MessageSource::Task,
                content: "fix it".into(),
            }),
            Event::now(EventKind::UserMessage {
                source: MessageSource::Reminder,
                content: "long gone".into(),
            }),
            Event::now(EventKind::Compaction {
                stage: CompactionStage::Summary,
                tokens_before: 10,
                tokens_after: 5,
                summary: Some("s".into()),
                usage: Usage::default(),
                messages: vec![Message::user("fix it"), Message::user("summary")],
            }),
            Event::now(EventKind::UserMessage {
                source: MessageSource::Feedback,
                content: "more".into(),
            }),
        ];
        let history = rebuild_history(&events);
        let texts: Vec<&str> = history.iter().map(Message::text).collect();
        assert_eq!(texts, ["fix it", "summary", "more"]);
    }

    #[test]
    fn unanswered_calls_get_placeholder_results_in_place() {
        let mut messages = vec![
            Message::user("task"),
            Message::assistant(
                "",
                vec![ToolCall::new("a", "x", "{}"), ToolCall::new("b", "y", "{}")],
            ),
            Message::tool("a", "x", "done", false),
            Message::user("later"),
        ];
        let repaired = pair_tool_calls(&mut messages, "interrupted");
        assert_eq!(repaired, vec!["b".to_string()]);
        assert!(
            matches!(&messages[3], Message::Tool { call_id, is_error: true, .. } if call_id == "b")
        );
        assert_eq!(messages[4].text(), "later");
        assert!(pair_tool_calls(&mut messages, "interrupted").is_empty());
    }
}
