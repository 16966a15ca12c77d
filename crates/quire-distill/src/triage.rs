//! Which finished sessions are worth a note-taker's model calls.
//!
//! Distilling costs a model conversation per session. A session that went
//! right without a single tool error or protocol repair has nothing to
//! teach that the notes do not already say when it worked on files the
//! project's notes already name, or when it took so few model calls
//! (`notes.triage_max_calls`) that no note could have saved one and it
//! changed only files the notes name, or when it took the fewest calls a
//! change can take (two: one batch of reads, one reply with the change):
//! it is skipped without a model call.
//! Everything else (the first session on a project, any error, a change in
//! a part of the code the notes do not know yet, a longer session on files
//! they do not know) goes to the note-taker.

use std::collections::BTreeSet;

use quire_types::{Event, EventKind};

use quire_notes::Note;
use quire_recall::SessionFacts;

/// The workspace paths a session read or changed, from its tool calls'
/// `path` arguments and the `+++` lines of patches it applied.
pub fn paths_touched(events: &[Event]) -> BTreeSet<String> {
    let mut paths = BTreeSet::new();
    for event in events {
        let EventKind::ToolCallStarted { arguments, .. } = &event.kind else {
            continue;
        };
        let Ok(value) = serde_json::from_str::<serde_json::Value>(arguments) else {
            continue;
        };
        if let Some(path) = value.get("path").and_then(|p| p.as_str()) {
            let path = path.trim().trim_start_matches("./");
            if !path.is_empty() {
                paths.insert(path.to_string());
            }
        }
        if let Some(patch) = value.get("patch").and_then(|p| p.as_str()) {
            for line in patch.lines() {
                if let Some(rest) = line.strip_prefix("+++ ") {
                    let path = rest.trim().trim_start_matches("b/");
                    if path != "/dev/null" && !path.is_empty() {
                        paths.insert(path.to_string());
                    }
                }
            }
        }
    }
    paths
}

/// Why the session can be skipped, or `None` when the note-taker should
/// see it. `project_notes` are the project's active notes; `max_calls` is
/// `notes.triage_max_calls`.
pub fn nothing_to_learn(
    facts: &SessionFacts,
    events: &[Event],
    project_notes: &[Note],
    max_calls: u32,
) -> Option<String> {
    if project_notes.is_empty() || facts.verdict() != Some(quire_recall::Verdict::Helpful) {
        return None;
    }
    let troubled = events.iter().any(|e| {
        matches!(
            e.kind,
            EventKind::ToolResult { is_error: true, .. } | EventKind::ProtocolRepair { .. }
        )
    });
    if troubled {
        return None;
    }
    let known = |path: &str| {
        project_notes
            .iter()
            .any(|n| n.meta.provenance.files.iter().any(|f| f == path) || n.body.contains(path))
    };
    let calls = events
        .iter()
        .filter(|e| matches!(e.kind, EventKind::ModelRequest { .. }))
        .count();
    // One batch of reads and one reply with the change is the fewest calls
    // a change can take: no note could have saved one, whatever files it
    // touched (distilling such sessions cost 5-8k prompt tokens each in a
    // live sitting and bought nothing later sessions could use).
    if calls > 0 && calls <= 2 && calls <= max_calls as usize {
        return Some(format!(
            "nothing new to learn: the change went through in {calls} model calls without an error, the fewest a change takes"
        ));
    }
    // A short session has no call a note could have saved; what it can
    // still teach is where the code it changed lives, when no note says.
    let changed: Vec<&str> = events
        .iter()
        .rev()
        .find_map(|e| match &e.kind {
            EventKind::Patch { files, .. } => Some(files.iter().map(String::as_str).collect()),
            _ => None,
        })
        .unwrap_or_default();
    if calls > 0 && calls <= max_calls as usize && changed.iter().all(|p| known(p)) {
        return Some(format!(
            "nothing new to learn: the change went through in {calls} model calls without an error, in files the project's notes already name"
        ));
    }
    let touched = paths_touched(events);
    if touched.is_empty() {
        return None;
    }
    if touched.iter().all(|p| known(p)) {
        Some(format!(
            "nothing new to learn: the change went through without an error, on files the project's notes already cover ({})",
            touched.into_iter().collect::<Vec<_>>().join(", ")
        ))
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use quire_notes::{Kind, NewNote, NoteTree, Provenance};

    fn call(name: &str, args: serde_json::Value) -> Event {
        Event::now(EventKind::ToolCallStarted {
            call_id: "c".into(),
            name: name.into(),
            arguments: args.to_string(),
        })
    }

    fn result(is_error: bool) -> Event {
        Event::now(EventKind::ToolResult {
            call_id: "c".into(),
            name: "edit_file".into(),
            views: quire_types::ToolResultViews {
                agent_view: String::new(),
                user_view: String::new(),
            },
            is_error,
            duration_ms: 0,
        })
    }

    fn ended() -> Vec<Event> {
        vec![
            Event::now(EventKind::Patch {
                diff: "+x".into(),
                files: vec!["src/a.py".into()],
            }),
            Event::now(EventKind::SessionEnded {
                status: quire_types::SessionStatus::Completed,
                outcome: "applied".into(),
                usage: Default::default(),
                iterations: 3,
                tool_calls: 3,
                elapsed_ms: 1,
                cost_usd: 0.0,
            }),
        ]
    }

    fn map_note(dir: &std::path::Path) -> Note {
        let tree = NoteTree::open(dir).unwrap();
        tree.create(
            NewNote::project("p", "map", Kind::Architecture, "Map of p")
                .description("layout")
                .provenance(Provenance {
                    files: vec!["src/a.py".into()],
                    ..Provenance::default()
                })
                .body("- src/a.py: the code\n- tests/test_a.py: its tests"),
        )
        .unwrap()
    }

    #[test]
    fn a_clean_session_on_known_files_is_skipped_and_anything_else_is_not() {
        let dir = tempfile::tempdir().unwrap();
        let notes = vec![map_note(dir.path())];
        let clean: Vec<Event> = [
            call("read_file", serde_json::json!({"path": "src/a.py"})),
            result(false),
            call(
                "apply_patch",
                serde_json::json!({"patch": "--- a/tests/test_a.py\n+++ b/tests/test_a.py\n@@ -1 +1 @@\n-x\n+y\n"}),
            ),
            result(false),
        ]
        .into_iter()
        .chain(ended())
        .collect();
        let facts = SessionFacts::from_events(&clean);
        let why = nothing_to_learn(&facts, &clean, &notes, 0);
        assert!(
            why.as_deref()
                .is_some_and(|w| w.contains("src/a.py, tests/test_a.py")),
            "{why:?}"
        );

        // No notes yet for the project: always distilled.
        assert!(nothing_to_learn(&facts, &clean, &[], 0).is_none());

        // A tool error: distilled.
        let mut troubled = clean.clone();
        troubled.insert(2, result(true));
        let facts_t = SessionFacts::from_events(&troubled);
        assert!(nothing_to_learn(&facts_t, &troubled, &notes, 0).is_none());

        // A file the notes do not name: distilled.
        let mut new_file = clean.clone();
        new_file.insert(
            0,
            call("read_file", serde_json::json!({"path": "src/b.py"})),
        );
        let facts_n = SessionFacts::from_events(&new_file);
        assert!(nothing_to_learn(&facts_n, &new_file, &notes, 0).is_none());

        // A failed session: distilled (it may be worth a hindsight note).
        let failed: Vec<Event> = clean[..4]
            .iter()
            .cloned()
            .chain([Event::now(EventKind::SessionEnded {
                status: quire_types::SessionStatus::Failed,
                outcome: "tests failed".into(),
                usage: Default::default(),
                iterations: 3,
                tool_calls: 3,
                elapsed_ms: 1,
                cost_usd: 0.0,
            })])
            .collect();
        let facts_f = SessionFacts::from_events(&failed);
        assert!(nothing_to_learn(&facts_f, &failed, &notes, 0).is_none());
    }

    fn request(iteration: u32) -> Event {
        Event::now(EventKind::ModelRequest {
            iteration,
            messages: 2,
            tools: 5,
            estimated_tokens: 1000,
        })
    }

    #[test]
    fn a_short_clean_session_is_skipped_unless_a_third_call_went_to_files_no_note_names() {
        let dir = tempfile::tempdir().unwrap();
        let notes = vec![map_note(dir.path())];
        // Two calls: read a file the map does not name, then edit one it does.
        let short: Vec<Event> = [
            request(1),
            call("read_file", serde_json::json!({"path": "src/b.py"})),
            result(false),
            request(2),
            call(
                "edit_file",
                serde_json::json!({"path": "src/a.py", "old": "x", "new": "y"}),
            ),
            result(false),
        ]
        .into_iter()
        .chain(ended())
        .collect();
        // The same session changing a file no note names: two calls are the
        // fewest a change takes, so it is skipped too; with a third call
        // (one a map could have saved) it is distilled, the map has not
        // heard of that part of the code yet.
        let elsewhere: Vec<Event> = short
            .iter()
            .map(|e| match &e.kind {
                EventKind::Patch { diff, .. } => Event::now(EventKind::Patch {
                    diff: diff.clone(),
                    files: vec!["src/a.py".into(), "src/reports.py".into()],
                }),
                _ => e.clone(),
            })
            .collect();
        let facts_e = SessionFacts::from_events(&elsewhere);
        let why = nothing_to_learn(&facts_e, &elsewhere, &notes, 3);
        assert!(
            why.as_deref().is_some_and(|w| w.contains("the fewest")),
            "{why:?}"
        );
        let mut longer = elsewhere.clone();
        longer.insert(3, request(2));
        let facts_l = SessionFacts::from_events(&longer);
        assert!(nothing_to_learn(&facts_l, &longer, &notes, 3).is_none());
        let mut longer_known = short.clone();
        longer_known.insert(3, request(2));
        let facts_k = SessionFacts::from_events(&longer_known);
        let why = nothing_to_learn(&facts_k, &longer_known, &notes, 3);
        assert!(
            why.as_deref()
                .is_some_and(|w| w.contains("in 3 model calls")),
            "{why:?}"
        );
        let facts = SessionFacts::from_events(&short);
        // Past the limit, or with the rule off, the unknown file counts.
        assert!(nothing_to_learn(&facts, &short, &notes, 1).is_none());
        assert!(nothing_to_learn(&facts, &short, &notes, 0).is_none());
        // The first session on a project and a troubled one still go through.
        assert!(nothing_to_learn(&facts, &short, &[], 3).is_none());
        let mut troubled = short.clone();
        troubled.insert(3, result(true));
        let facts_t = SessionFacts::from_events(&troubled);
        assert!(nothing_to_learn(&facts_t, &troubled, &notes, 3).is_none());
    }
}
