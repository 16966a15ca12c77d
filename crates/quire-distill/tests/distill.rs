//! The note-taker end to end against the scripted model server: a stored
//! session is distilled into notes, its read notes are credited once, and
//! failures are retried.

use std::sync::Arc;
use std::time::Duration;

use quire_config::{AgentConfig, AgentSource, Loader};
use quire_core::Interrupt;
use quire_distill::{DistillSettings, Distiller, JobOutcome, NoteAction};
use quire_llm::{ClientSettings, Provider, build_client};
use quire_notes::{Kind, NewNote, NoteFilter, Notes, NotesPaths, SearchQuery};
use quire_store::{DistillStatus, NewSession, Store};
use quire_testkit::{Fault, Reply, Script, ScriptedServer, call};
use quire_types::{Event, EventKind, Redactor, SessionId, ToolResultViews, Usage};
use serde_json::json;

const SECRET: &str = "tok-9f8e7d6c5b4a39281706";

struct Env {
    dir: tempfile::TempDir,
    notes: Notes,
    redactor: Redactor,
}

impl Env {
    fn new() -> Env {
        let dir = tempfile::tempdir().unwrap();
        let mut redactor = Redactor::new();
        redactor.add_secret(SECRET);
        let (notes, _) = Notes::open(
            &NotesPaths {
                root: dir.path().join("notes"),
                index_dir: dir.path().join("index"),
            },
            redactor.clone(),
        )
        .unwrap();
        Env {
            dir,
            notes,
            redactor,
        }
    }

    fn db(&self) -> std::path::PathBuf {
        self.dir.path().join("quire.db")
    }

    fn store(&self) -> Store {
        Store::open(&self.db()).unwrap()
    }

    /// Stores a finished session (an import error, fixed) and queues its job.
    fn session(&self, read_notes: &[&str], status: &str) -> SessionId {
        let store = self.store();
        let id = SessionId::new();
        store
            .create_session(&NewSession {
                id: id.clone(),
                project: "shop".into(),
                task: "Make the tests pass".into(),
                ..NewSession::default()
            })
            .unwrap();
        for event in session_events(read_notes, status) {
            store.append_event(&id, &event).unwrap();
        }
        assert!(store.queue_distill_job(&id).unwrap());
        id
    }

    fn distiller(&self, server: &ScriptedServer) -> Distiller {
        let mut settings =
            ClientSettings::new(Provider::OpenAi, "scripted-model", server.openai_base_url());
        settings.stream = false;
        settings.max_attempts = 1;
        settings.request_timeout = Duration::from_secs(5);
        let client = build_client(settings).unwrap();
        Distiller::new(
            self.db(),
            self.notes.clone(),
            Arc::new(config()),
            client,
            self.redactor.clone(),
        )
        .unwrap()
        .with_settings(DistillSettings {
            max_iterations: 6,
            lease: Duration::from_secs(30),
            max_attempts: 2,
        })
    }
}

fn config() -> AgentConfig {
    Loader::default().load(&AgentSource::Builtin).unwrap()
}

fn ev(kind: EventKind) -> Event {
    Event::now(kind)
}

fn tool(id: &str, name: &str, args: serde_json::Value, result: &str, is_error: bool) -> Vec<Event> {
    vec![
        ev(EventKind::ToolCallStarted {
            call_id: id.into(),
            name: name.into(),
            arguments: args.to_string(),
        }),
        ev(EventKind::ToolResult {
            call_id: id.into(),
            name: name.into(),
            views: ToolResultViews {
                agent_view: result.into(),
                user_view: result.into(),
            },
            is_error,
            duration_ms: 1,
        }),
    ]
}

fn session_events(read_notes: &[&str], status: &str) -> Vec<Event> {
    let mut events = vec![ev(EventKind::SessionStarted {
        task: format!("Make the tests pass (token {SECRET})"),
        workspace: "/ws".into(),
        project: "shop".into(),
        agent: "default".into(),
        config_hash: "h".into(),
        model: "m".into(),
    })];
    events.extend(tool(
        "c1",
        "run_tests",
        json!({}),
        "Tests failed (exit code 2).\nE   ModuleNotFoundError: No module named 'src'",
        true,
    ));
    for (i, id) in read_notes.iter().enumerate() {
        events.extend(tool(
            &format!("r{i}"),
            "read_note",
            json!({ "id": id }),
            "# note",
            false,
        ));
    }
    events.extend(tool(
        "c2",
        "write_file",
        json!({"path": "pytest.ini", "content": "[pytest]\npythonpath = .\n"}),
        "Wrote pytest.ini",
        false,
    ));
    events.extend(tool("c3", "run_tests", json!({}), "Tests passed.", false));
    events.push(ev(EventKind::Patch {
        diff: "+pythonpath = .\n".into(),
        files: vec!["pytest.ini".into()],
    }));
    events.push(ev(EventKind::SessionEnded {
        status: status.parse().unwrap(),
        outcome: "done".into(),
        usage: Usage::default(),
        iterations: 3,
        tool_calls: 3,
        elapsed_ms: 1,
        cost_usd: 0.0,
    }));
    events
}

fn hindsight_create() -> Reply {
    Reply::ToolCalls(vec![call(
        "note_create",
        json!({
            "title": "Tests fail with ModuleNotFoundError: No module named 'src'",
            "kind": "hindsight",
            "scope": "project",
            "topic": "testing",
            "description": "pytest cannot import src",
            "body": format!("## Error\n\n```\nModuleNotFoundError: No module named 'src'\n```\n\n## Cause\n\nNo pythonpath (key {SECRET}).\n\n## Fix\n\nSet pythonpath = . in pytest.ini."),
            "error_signatures": ["ModuleNotFoundError: No module named 'src'"],
            "files": ["pytest.ini"],
        }),
    )])
}

fn done(summary: &str) -> Reply {
    Reply::ToolCalls(vec![call("note_done", json!({ "summary": summary }))])
}

#[tokio::test]
async fn a_session_with_an_error_and_its_fix_becomes_one_hindsight_note() {
    let env = Env::new();
    let id = env.session(&[], "completed");
    let server = ScriptedServer::start(Script::sequence(vec![
        Reply::ToolCalls(vec![call(
            "note_search",
            json!({"query": "ModuleNotFoundError No module named src"}),
        )]),
        hindsight_create(),
        done("one hindsight note"),
    ]))
    .await;
    let distiller = env.distiller(&server);
    let reports = distiller
        .run_pending(&Interrupt::new(), |_| {})
        .await
        .unwrap();
    server.assert_clean();
    assert_eq!(reports.len(), 1);
    let report = &reports[0];
    assert_eq!(
        report.outcome,
        JobOutcome::Done {
            summary: "one hindsight note".into()
        }
    );
    assert_eq!(report.written.len(), 1);
    assert_eq!(report.written[0].action, NoteAction::Created);

    // The note-taker's first request: its own prompt and the digest, no secret.
    let requests = server.requests();
    let first = requests[0].all_text();
    assert!(
        first.contains("You keep the notebook of a coding agent"),
        "{first}"
    );
    assert!(
        first.contains("ModuleNotFoundError: No module named 'src'"),
        "{first}"
    );
    assert!(first.contains("write_file(content="), "{first}");
    assert!(!first.contains(SECRET), "the digest is redacted");
    let tools = requests[0].tool_names();
    assert!(
        tools.contains(&"note_create".to_string()) && !tools.contains(&"edit_file".to_string())
    );

    let notes = env.notes.tree.list(&NoteFilter::default()).unwrap();
    assert_eq!(notes.len(), 1);
    let note = &notes[0];
    assert_eq!(note.meta.kind, Kind::Hindsight);
    assert_eq!(note.meta.provenance.sessions, vec![id.to_string()]);
    let file = std::fs::read_to_string(env.notes.tree.abs_path(note)).unwrap();
    assert!(
        !file.contains(SECRET) && file.contains("[REDACTED]"),
        "{file}"
    );
    let hits = env
        .notes
        .index
        .search_errors("E   ModuleNotFoundError: No module named 'src'", 3)
        .unwrap();
    assert_eq!(hits[0].id, note.meta.id, "indexed at once");

    let job = env.store().distill_job(&id).unwrap().unwrap();
    assert_eq!(job.status, DistillStatus::Done);
    assert_eq!(job.notes_written.as_array().unwrap().len(), 1);
    // Processed once: nothing left to claim.
    assert!(
        distiller
            .run_pending(&Interrupt::new(), |_| {})
            .await
            .unwrap()
            .is_empty()
    );
}

#[tokio::test]
async fn an_existing_note_is_updated_in_place_and_read_notes_are_credited_once() {
    let env = Env::new();
    let existing = env
        .notes
        .tree
        .create(
            NewNote::project(
                "shop",
                "testing",
                Kind::Hindsight,
                "Tests fail with ModuleNotFoundError",
            )
            .error_signatures(["ModuleNotFoundError: No module named 'src'"])
            .body("## Error\n\nModuleNotFoundError\n\n## Fix\n\nRun from the root."),
        )
        .unwrap();
    env.notes.index.upsert(&existing).unwrap();
    let id = env.session(&[existing.id()], "completed");
    let note_id = existing.id().to_string();
    let server = ScriptedServer::start(Script::sequence(vec![
        Reply::ToolCalls(vec![call("note_search", json!({"query": "ModuleNotFoundError src"}))]),
        Reply::ToolCalls(vec![call(
            "note_update",
            json!({"id": note_id, "old": "Run from the root.", "new": "Run from the root, or set pythonpath = . in pytest.ini."}),
        )]),
        done("updated the existing note"),
    ]))
    .await;
    let distiller = env.distiller(&server);
    let report = distiller
        .run_session(&id, &Interrupt::new())
        .await
        .unwrap()
        .unwrap();
    server.assert_clean();
    assert_eq!(report.credited, vec![(note_id.clone(), "helpful")]);
    assert!(
        requests_mention(&server, &note_id),
        "the digest lists the read note"
    );
    let notes = env.notes.tree.list(&NoteFilter::default()).unwrap();
    assert_eq!(notes.len(), 1, "no duplicate");
    assert!(notes[0].body.contains("set pythonpath = . in pytest.ini"));
    assert_eq!(notes[0].meta.helpful, 1);
    assert!(notes[0].meta.provenance.sessions.contains(&id.to_string()));

    // The session is resumed and ends again: distilled again, never credited twice.
    env.store().queue_distill_job(&id).unwrap();
    let again = ScriptedServer::start(Script::sequence(vec![done("nothing new")])).await;
    let report = env
        .distiller(&again)
        .run_session(&id, &Interrupt::new())
        .await
        .unwrap()
        .unwrap();
    assert!(report.credited.is_empty());
    assert_eq!(
        env.notes.tree.get(&note_id).unwrap().unwrap().meta.helpful,
        1
    );
}

fn requests_mention(server: &ScriptedServer, text: &str) -> bool {
    server
        .requests()
        .iter()
        .any(|r| r.all_text().contains(text))
}

#[tokio::test]
async fn writing_nothing_is_a_valid_outcome_and_failed_sessions_credit_harm() {
    let env = Env::new();
    let read = env
        .notes
        .tree
        .create(NewNote::shared(
            "python",
            Kind::Insight,
            "Misleading advice",
        ))
        .unwrap();
    let id = env.session(&[read.id()], "failed");
    let server = ScriptedServer::start(Script::sequence(vec![done("nothing worth keeping")])).await;
    let report = env
        .distiller(&server)
        .run_session(&id, &Interrupt::new())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        report.outcome,
        JobOutcome::Done {
            summary: "nothing worth keeping".into()
        }
    );
    assert!(report.written.is_empty());
    assert_eq!(
        env.notes.tree.list(&NoteFilter::default()).unwrap().len(),
        1
    );
    assert_eq!(
        env.notes.tree.get(read.id()).unwrap().unwrap().meta.harmful,
        1
    );
    let job = env.store().distill_job(&id).unwrap().unwrap();
    assert_eq!(job.summary.as_deref(), Some("nothing worth keeping"));
}

#[tokio::test]
async fn model_errors_are_retried_then_the_job_fails() {
    let env = Env::new();
    let id = env.session(&[], "completed");
    let server = ScriptedServer::start(Script::sequence(vec![
        Reply::Fault(Fault::ServerError),
        Reply::Fault(Fault::ServerError),
    ]))
    .await;
    let distiller = env.distiller(&server);
    let reports = distiller
        .run_pending(&Interrupt::new(), |_| {})
        .await
        .unwrap();
    assert_eq!(reports.len(), 2, "retried once");
    assert!(matches!(reports[1].outcome, JobOutcome::Failed { .. }));
    let job = env.store().distill_job(&id).unwrap().unwrap();
    assert_eq!(job.status, DistillStatus::Failed);
    assert_eq!(job.attempts, 2);
    assert!(job.error.unwrap().contains("model"));
}

#[tokio::test]
async fn hand_edits_and_broken_notes_do_not_stop_a_job() {
    let env = Env::new();
    let id = env.session(&[], "completed");
    let dir = env.notes.root().join("projects/shop/testing");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("broken.md"),
        "---\nid: x\ntitle: [unclosed\n---\nbody\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("by-hand.md"),
        "---\nid: HAND1\ntitle: Written by hand about pythonpath\nkind: insight\nscope: shared\ntopic: python\ncreated: 2025-01-01\n---\nbody\n",
    )
    .unwrap();
    let server = ScriptedServer::start(Script::sequence(vec![
        Reply::ToolCalls(vec![call("note_search", json!({"query": "pythonpath"}))]),
        done("already known"),
    ]))
    .await;
    env.distiller(&server)
        .run_session(&id, &Interrupt::new())
        .await
        .unwrap()
        .unwrap();
    let result = server.requests()[1].last_tool_result().unwrap();
    assert!(
        result.contains("HAND1"),
        "hand-written note found: {result}"
    );
    let hits = env
        .notes
        .index
        .search(&SearchQuery::new("pythonpath"))
        .unwrap();
    assert!(hits.iter().any(|h| h.id == "HAND1"));
}

/// The note-taker learns what goes with a change from the project itself:
/// the definitions the diff touched, with the stubs, export lists, docs and
/// tests that name them, read from the session's edited copy.
#[tokio::test]
async fn the_digest_says_where_the_changed_definitions_are_named_in_the_project() {
    let env = Env::new();
    let work = env.dir.path().join("work");
    let files = [
        (
            "pkg/more.py",
            "__all__ = ['first', 'second']\n\n\ndef first(n):\n    if n < 0:\n        raise ValueError('n')\n    return n\n\n\ndef second():\n    return 2\n",
        ),
        (
            "pkg/more.pyi",
            "def first(n: int) -> int: ...\ndef second() -> int: ...\n",
        ),
        (
            "docs/api.rst",
            ".. autofunction:: first\n.. autofunction:: second\n",
        ),
        (
            "tests/test_more.py",
            "class FirstTests:\n    def test_negative(self):\n        mi.first(-1)\n        mi.first(0)\n",
        ),
        ("prompt.txt", "first() accepts a negative n\n"),
    ];
    for (path, text) in files {
        let path = work.join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    let store = env.store();
    let id = SessionId::new();
    store
        .create_session(&NewSession {
            id: id.clone(),
            project: "shop".into(),
            work_dir: work.display().to_string(),
            workspace: "/gone".into(),
            task: "Make the tests pass".into(),
            ..NewSession::default()
        })
        .unwrap();
    for event in session_events(&[], "completed") {
        let event = match event.kind {
            EventKind::Patch { .. } => ev(EventKind::Patch {
                diff: "--- a/pkg/more.py\n+++ b/pkg/more.py\n@@ -4,2 +4,4 @@\n def first(n):\n+    if n < 0:\n+        raise ValueError('n')\n     return n\n".into(),
                files: vec!["pkg/more.py".into()],
            }),
            _ => event,
        };
        store.append_event(&id, &event).unwrap();
    }
    assert!(store.queue_distill_job(&id).unwrap());
    drop(store);
    let server = ScriptedServer::start(Script::sequence(vec![done("nothing new")])).await;
    let reports = env
        .distiller(&server)
        .run_pending(&Interrupt::new(), |_| {})
        .await
        .unwrap();
    assert_eq!(reports.len(), 1);
    let first = server.requests()[0].all_text();
    assert!(
        first.contains(
            "- first (defined in pkg/more.py; quoted there: `__all__ = ['first', 'second']`): \
             docs/api.rst (1: `.. autofunction:: first`), pkg/more.pyi (1: `def first(n: int) -> int: ...`), \
             tests/test_more.py (2, first: `mi.first(-1)`)"
        ),
        "{first}"
    );
    assert!(
        !first.contains("- second"),
        "only what the diff touched: {first}"
    );
}

/// The note-taker copies lines of the map from the digest into
/// `note_update`'s `old`, which matches the stored body exactly: the digest
/// shows the body as stored (a player copied an indent the digest had
/// added, and the update could not apply).
#[tokio::test]
async fn the_digest_shows_the_map_as_stored_so_its_lines_can_be_updated() {
    let env = Env::new();
    let map = env
        .notes
        .tree
        .create(
            NewNote::project("shop", "map", Kind::Architecture, "shop project map")
                .body("- src/orders.py: OrderService.\n- Tests: tests/test_orders.py."),
        )
        .unwrap();
    env.notes.index.upsert(&map).unwrap();
    let id = env.session(&[], "completed");
    let map_id = map.id().to_string();
    let server = ScriptedServer::start(Script::sequence(vec![
        Reply::ToolCalls(vec![call(
            "note_update",
            json!({"id": map_id, "old": "- src/orders.py: OrderService.\n- Tests: tests/test_orders.py.", "new": "- src/orders.py: OrderService, Order.\n- Tests: tests/test_orders.py."}),
        )]),
        done("map extended"),
    ]))
    .await;
    env.distiller(&server)
        .run_session(&id, &Interrupt::new())
        .await
        .unwrap()
        .unwrap();
    server.assert_clean();
    assert!(
        requests_mention(
            &server,
            "\n- src/orders.py: OrderService.\n- Tests: tests/test_orders.py.\n"
        ),
        "the map's lines as stored: {}",
        server.requests()[0].all_text()
    );
    let body = env.notes.tree.get(&map_id).unwrap().unwrap().body;
    assert!(body.contains("OrderService, Order."), "{body}");
}
