//! What a finished session's events say about notes: which were shown and
//! read, and whether the outcome credits them as helpful or harmful.
//!
//! Crediting is deterministic (not the note-taker's judgement): a note read
//! in a session that ended with an accepted change is counted helpful, one
//! read in a session that failed is counted harmful.

use std::collections::HashMap;

use quire_types::{Event, EventKind};

/// The retrieval tool whose successful calls mark a note as read.
pub const READ_NOTE: &str = "read_note";

/// How a note reached the session (`NotesRetrieved` events' `via`).
pub mod via {
    use quire_types::NotesVia;
    /// Listed in the message after the task.
    pub const START: NotesVia = NotesVia::Start;
    /// Returned by `search_notes`.
    pub const SEARCH: NotesVia = NotesVia::Search;
    /// Offered next to a failing tool result.
    pub const ERROR: NotesVia = NotesVia::Error;
    /// Read in full with `read_note`.
    pub const READ: NotesVia = NotesVia::Read;
}

/// How a session's outcome credits the notes it read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    Helpful,
    Harmful,
}

/// Facts about one session, from its events alone.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SessionFacts {
    pub task: String,
    pub project: String,
    /// `SessionEnded` status (`completed`, `failed`, `rejected`, `interrupted`).
    pub status: Option<String>,
    pub outcome: Option<String>,
    /// The last proposed change was not empty.
    pub changed: bool,
    /// The session ended on a model (provider) error: no fault of a note.
    pub model_error: bool,
    /// Notes the session was shown (listed, searched, offered), first-seen order.
    pub shown: Vec<String>,
    /// Notes read in full, first-read order.
    pub read: Vec<String>,
    pub tool_calls: usize,
}

impl SessionFacts {
    pub fn from_events(events: &[Event]) -> SessionFacts {
        let mut facts = SessionFacts::default();
        // read_note calls waiting for their result: call id -> note id.
        let mut reading: HashMap<String, String> = HashMap::new();
        let mut last_error: Option<String> = None;
        for event in events {
            match &event.kind {
                EventKind::SessionStarted { task, project, .. } => {
                    facts.task = task.clone();
                    facts.project = project.clone();
                }
                EventKind::ToolCallStarted {
                    call_id,
                    name,
                    arguments,
                } if name == READ_NOTE => {
                    if let Some(id) = serde_json::from_str::<serde_json::Value>(arguments)
                        .ok()
                        .and_then(|v| v.get("id")?.as_str().map(|s| s.trim().to_string()))
                    {
                        reading.insert(call_id.clone(), id);
                    }
                }
                EventKind::ToolResult {
                    call_id, is_error, ..
                } => {
                    facts.tool_calls += 1;
                    if let Some(id) = reading.remove(call_id)
                        && !is_error
                    {
                        push_unique(&mut facts.read, &id);
                        push_unique(&mut facts.shown, &id);
                    }
                }
                EventKind::NotesRetrieved { via: how, ids } => {
                    for id in ids {
                        push_unique(&mut facts.shown, id);
                        if *how == via::READ {
                            push_unique(&mut facts.read, id);
                        }
                    }
                }
                EventKind::Patch { diff, .. } => facts.changed = !diff.trim().is_empty(),
                EventKind::Error { message } => last_error = Some(message.clone()),
                EventKind::SessionEnded {
                    status, outcome, ..
                } => {
                    facts.status = Some(status.to_string());
                    facts.outcome = Some(outcome.clone());
                    facts.model_error = last_error
                        .as_deref()
                        .is_some_and(|m| m.starts_with("model error"));
                }
                _ => {}
            }
        }
        facts
    }

    /// Whether the session has ended (an interrupted one will go on).
    pub fn ended(&self) -> bool {
        self.status
            .as_deref()
            .is_some_and(|s| s != "interrupted" && s != "running")
    }

    /// The credit the session's outcome gives the notes it read: helpful
    /// when it ended with a change that was accepted (applied or saved),
    /// harmful when it failed or the change was rejected; none when it
    /// changed nothing, was interrupted or the model provider failed.
    pub fn verdict(&self) -> Option<Verdict> {
        match self.status.as_deref()? {
            "completed" if self.changed => Some(Verdict::Helpful),
            "failed" | "rejected" if !self.model_error => Some(Verdict::Harmful),
            _ => None,
        }
    }
}

/// The event recording that notes reached the session.
pub(crate) fn retrieval_event(how: quire_types::NotesVia, ids: &[String]) -> EventKind {
    EventKind::NotesRetrieved {
        via: how,
        ids: ids.to_vec(),
    }
}

fn push_unique(list: &mut Vec<String>, id: &str) {
    if !id.is_empty() && !list.iter().any(|x| x == id) {
        list.push(id.to_string());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use quire_types::{ToolResultViews, Usage};

    fn ended(status: &str) -> Event {
        Event::now(EventKind::SessionEnded {
            status: status.parse().unwrap(),
            outcome: "o".into(),
            usage: Usage::default(),
            iterations: 1,
            tool_calls: 1,
            elapsed_ms: 1,
            cost_usd: 0.0,
        })
    }

    fn read(call: &str, id: &str, ok: bool) -> Vec<Event> {
        vec![
            Event::now(EventKind::ToolCallStarted {
                call_id: call.into(),
                name: READ_NOTE.into(),
                arguments: serde_json::json!({ "id": id }).to_string(),
            }),
            Event::now(EventKind::ToolResult {
                call_id: call.into(),
                name: READ_NOTE.into(),
                views: ToolResultViews {
                    agent_view: "x".into(),
                    user_view: "x".into(),
                },
                is_error: !ok,
                duration_ms: 1,
            }),
        ]
    }

    fn patch(diff: &str) -> Event {
        Event::now(EventKind::Patch {
            diff: diff.into(),
            files: vec![],
        })
    }

    #[test]
    fn reads_and_shown_notes_are_collected_once() {
        let mut events = vec![Event::now(retrieval_event(
            via::START,
            &["A".into(), "B".into()],
        ))];
        events.extend(read("c1", "B", true));
        events.extend(read("c2", "B", true));
        events.extend(read("c3", "MISSING", false));
        events.push(Event::now(retrieval_event(via::READ, &["C".into()])));
        let facts = SessionFacts::from_events(&events);
        assert_eq!(facts.shown, vec!["A", "B", "C"]);
        assert_eq!(facts.read, vec!["B", "C"]);
    }

    #[test]
    fn verdict_follows_the_outcome() {
        let verdict = |events: Vec<Event>| SessionFacts::from_events(&events).verdict();
        assert_eq!(
            verdict(vec![patch("+x"), ended("completed")]),
            Some(Verdict::Helpful)
        );
        assert_eq!(verdict(vec![patch(""), ended("completed")]), None);
        assert_eq!(verdict(vec![ended("failed")]), Some(Verdict::Harmful));
        assert_eq!(
            verdict(vec![patch("+x"), ended("rejected")]),
            Some(Verdict::Harmful)
        );
        assert_eq!(verdict(vec![ended("interrupted")]), None);
        assert_eq!(verdict(vec![]), None);
        let model_error = vec![
            Event::now(EventKind::Error {
                message: "model error: 500".into(),
            }),
            ended("failed"),
        ];
        assert_eq!(verdict(model_error), None);
    }
}
