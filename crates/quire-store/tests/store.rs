//! Behaviour of the trajectory store through its public API.

use std::path::{Path, PathBuf};

use chrono::{DateTime, TimeZone, Utc};
use quire_store::{
    NewSession, SCHEMA_VERSION, SessionFilter, SessionStatus, Store, StoreError, Totals,
};
use quire_types::{
    Event, EventKind, Message, MessageSource, Redactor, SessionId, TestPhase, ToolCall,
    ToolResultViews, Usage,
};

fn temp_db() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("nested").join("quire.db");
    (dir, path)
}

fn new_session(task: &str) -> NewSession {
    NewSession {
        project: "demo".into(),
        workspace: "/src/demo".into(),
        work_dir: "/data/sessions/demo".into(),
        task: task.into(),
        agent: "coder".into(),
        config_hash: "abc123".into(),
        model: "test-model".into(),
        ..NewSession::default()
    }
}

fn at(secs: i64) -> DateTime<Utc> {
    Utc.timestamp_opt(1_700_000_000 + secs, 123_456_789)
        .unwrap()
}

fn user(content: &str) -> Event {
    Event::now(EventKind::UserMessage {
        source: MessageSource::Task,
        content: content.into(),
    })
}

fn model_response(iteration: u32, prompt: u64, completion: u64, cached: u64) -> Event {
    Event::now(EventKind::ModelResponse {
        iteration,
        content: format!("thinking {iteration}"),
        tool_calls: vec![ToolCall::new("c1", "read_file", r#"{"path":"src/lib.rs"}"#)],
        usage: Usage {
            prompt_tokens: prompt,
            completion_tokens: completion,
            cached_tokens: cached,
        },
        duration_ms: 40,
        model: "test-model".into(),
    })
}

fn tool_result(call: &str) -> Event {
    Event::now(EventKind::ToolResult {
        call_id: call.into(),
        name: "read_file".into(),
        views: ToolResultViews {
            agent_view: "1: fn main".into(),
            user_view: "fn main() {}".into(),
        },
        is_error: false,
        duration_ms: 3,
    })
}

fn raw(path: &Path) -> rusqlite::Connection {
    rusqlite::Connection::open(path).unwrap()
}

#[test]
fn migrations_are_idempotent_across_reopen() {
    let (_dir, path) = temp_db();
    let id = {
        let store = Store::open(&path).unwrap();
        assert_eq!(store.schema_version().unwrap(), SCHEMA_VERSION);
        store.create_session(&new_session("first")).unwrap()
    };
    for _ in 0..2 {
        let store = Store::open(&path).unwrap();
        assert_eq!(store.schema_version().unwrap(), SCHEMA_VERSION);
        assert_eq!(store.get_session(&id).unwrap().unwrap().task, "first");
    }
    let rows: i64 = raw(&path)
        .query_row("SELECT COUNT(*) FROM schema_migrations", [], |r| r.get(0))
        .unwrap();
    assert_eq!(
        rows,
        i64::from(SCHEMA_VERSION),
        "each migration recorded exactly once"
    );
}

#[test]
fn newer_schema_version_is_refused_with_a_clear_error() {
    let (_dir, path) = temp_db();
    drop(Store::open(&path).unwrap());
    raw(&path)
        .execute(
            "INSERT INTO schema_migrations (version, applied_at) VALUES (?1, 'later')",
            [SCHEMA_VERSION + 1],
        )
        .unwrap();
    let err = Store::open(&path).unwrap_err();
    assert!(
        matches!(err, StoreError::SchemaTooNew { found, known, .. }
            if found == SCHEMA_VERSION + 1 && known == SCHEMA_VERSION),
        "{err:?}"
    );
    let msg = err.to_string();
    assert!(
        msg.contains(&path.display().to_string()) && msg.contains("newer"),
        "{msg}"
    );
}

#[test]
fn corrupt_file_is_reported_with_its_path() {
    let (dir, _) = temp_db();
    let path = dir.path().join("garbage.db");
    std::fs::write(&path, vec![0xAB_u8; 8192]).unwrap();
    let err = Store::open(&path).unwrap_err();
    assert!(matches!(err, StoreError::Corrupt { .. }), "{err:?}");
    assert!(
        err.to_string().contains(&path.display().to_string()),
        "{err}"
    );
}

#[test]
fn parent_directories_are_created_and_wal_is_active() {
    let (_dir, path) = temp_db();
    let store = Store::open(&path).unwrap();
    assert!(path.exists());
    assert_eq!(store.path(), Some(path.as_path()));
    assert_eq!(store.journal_mode().unwrap(), "wal");
    // WAL is a property of the file: a plain connection sees it too.
    let mode: String = raw(&path)
        .query_row("PRAGMA journal_mode", [], |r| r.get(0))
        .unwrap();
    assert_eq!(mode, "wal");
}

#[test]
fn events_of_several_kinds_round_trip() {
    let store = Store::open_in_memory().unwrap();
    let id = store.create_session(&new_session("round trip")).unwrap();
    let kinds = vec![
        EventKind::SessionStarted {
            task: "t".into(),
            workspace: "/w".into(),
            project: "p".into(),
            agent: "a".into(),
            config_hash: "h".into(),
            model: "m".into(),
        },
        EventKind::SystemPrompt {
            content: "You are careful.".into(),
        },
        EventKind::UserMessage {
            source: MessageSource::Task,
            content: "fix the bug ✓".into(),
        },
        EventKind::ModelRequest {
            iteration: 1,
            messages: 3,
            tools: 5,
            estimated_tokens: 900,
        },
        model_response(1, 100, 20, 50).kind,
        tool_result("c1").kind,
        EventKind::TestRun {
            phase: TestPhase::PostApply,
            command: "cargo test".into(),
            exit_code: None,
            passed: Some(3),
            failed: None,
            timed_out: true,
            digest: "timed out".into(),
            output: "running 3 tests".into(),
            duration_ms: 30_000,
        },
        EventKind::Patch {
            diff: "--- a\n+++ b\n".into(),
            files: vec!["src/lib.rs".into()],
        },
        EventKind::HistoryReplaced {
            reason: "compaction".into(),
            messages: vec![
                Message::system("sys"),
                Message::assistant("", vec![ToolCall::new("c9", "grep", "{}")]),
                Message::tool("c9", "grep", "no match", true),
            ],
        },
        EventKind::SessionEnded {
            status: SessionStatus::Completed,
            outcome: "applied".into(),
            usage: Usage {
                prompt_tokens: 100,
                completion_tokens: 20,
                cached_tokens: 50,
            },
            iterations: 1,
            tool_calls: 1,
            elapsed_ms: 1234,
            cost_usd: 0.0125,
        },
    ];
    let originals: Vec<Event> = kinds
        .into_iter()
        .enumerate()
        .map(|(i, kind)| Event {
            at: at(i as i64),
            kind,
        })
        .collect();
    for (i, event) in originals.iter().enumerate() {
        assert_eq!(store.append_event(&id, event).unwrap(), i as u64 + 1);
    }
    let stored = store.events(&id).unwrap();
    assert_eq!(stored.len(), originals.len());
    for (i, (got, want)) in stored.iter().zip(&originals).enumerate() {
        assert_eq!(got.seq, i as u64 + 1);
        assert_eq!(got.at, want.at, "timestamp kept to the nanosecond");
        assert_eq!(got.kind, want.kind.name());
        assert_eq!(&got.event, want);
    }
    assert_eq!(store.event_count(&id).unwrap(), originals.len() as u64);
    assert_eq!(
        store
            .events_after(&id, 8)
            .unwrap()
            .iter()
            .map(|e| e.seq)
            .collect::<Vec<_>>(),
        [9, 10]
    );
}

#[test]
fn seqs_are_dense_per_session() {
    let store = Store::open_in_memory().unwrap();
    let a = store.create_session(&new_session("a")).unwrap();
    let b = store.create_session(&new_session("b")).unwrap();
    let mut got_a = Vec::new();
    let mut got_b = Vec::new();
    for i in 0..7 {
        got_a.push(store.append_event(&a, &user(&format!("a{i}"))).unwrap());
        if i % 2 == 0 {
            got_b.push(store.append_event(&b, &user(&format!("b{i}"))).unwrap());
        }
    }
    assert_eq!(got_a, (1..=7).collect::<Vec<u64>>());
    assert_eq!(got_b, (1..=4).collect::<Vec<u64>>());
    let seqs: Vec<u64> = store.events(&b).unwrap().iter().map(|e| e.seq).collect();
    assert_eq!(seqs, [1, 2, 3, 4]);
}

#[test]
fn running_totals_follow_model_responses_and_tool_results() {
    let store = Store::open_in_memory().unwrap();
    let id = store.create_session(&new_session("totals")).unwrap();
    store.append_event(&id, &user("go")).unwrap();
    store
        .append_event(&id, &model_response(1, 1000, 50, 400))
        .unwrap();
    store.append_event(&id, &tool_result("c1")).unwrap();
    store.append_event(&id, &tool_result("c2")).unwrap();
    store
        .append_event(&id, &model_response(2, 1500, 70, 900))
        .unwrap();
    store.append_event(&id, &tool_result("c3")).unwrap();

    let row = store.get_session(&id).unwrap().unwrap();
    assert_eq!(
        row.totals.usage,
        Usage {
            prompt_tokens: 2500,
            completion_tokens: 120,
            cached_tokens: 1300
        }
    );
    assert_eq!(row.totals.iterations, 2);
    assert_eq!(row.totals.tool_calls, 3);
    assert_eq!(row.status, SessionStatus::Running);
    assert!(row.ended_at.is_none());

    let final_totals = Totals {
        usage: Usage {
            prompt_tokens: 2600,
            completion_tokens: 130,
            cached_tokens: 1300,
        },
        cost_usd: 0.042,
        iterations: 2,
        tool_calls: 3,
        elapsed_ms: 9_876,
    };
    store
        .finish_session(
            &id,
            SessionStatus::Completed,
            Some("applied"),
            &final_totals,
        )
        .unwrap();
    let row = store.get_session(&id).unwrap().unwrap();
    assert_eq!(row.totals, final_totals);
    assert_eq!(row.status, SessionStatus::Completed);
    assert_eq!(row.outcome.as_deref(), Some("applied"));
    assert!(row.ended_at.is_some_and(|end| end >= row.started_at));

    store
        .set_session_status(&id, SessionStatus::Rejected)
        .unwrap();
    assert_eq!(
        store.get_session(&id).unwrap().unwrap().status,
        SessionStatus::Rejected
    );
}

#[test]
fn secrets_are_redacted_before_they_reach_the_file() {
    let (_dir, path) = temp_db();
    let secret = "sekrit-api-key-value-42";
    let shaped = "ghp_A1b2C3d4E5f6G7h8I9j0K1l2";
    let mut redactor = Redactor::new();
    redactor.add_secret(secret);
    let store = Store::open(&path).unwrap().with_redactor(redactor);

    let mut new = new_session(&format!("use key {secret} please"));
    new.metadata = serde_json::json!({ "env": { "TOKEN": shaped } });
    let id = store.create_session(&new).unwrap();
    store
        .append_event(
            &id,
            &Event::now(EventKind::ToolCallStarted {
                call_id: "c1".into(),
                name: "shell".into(),
                arguments: format!(r#"{{"cmd":"curl -H 'Authorization: {secret}' -H {shaped}"}}"#),
            }),
        )
        .unwrap();
    store
        .finish_session(
            &id,
            SessionStatus::Failed,
            Some(&format!("leaked {secret}")),
            &Totals::default(),
        )
        .unwrap();

    let row = store.get_session(&id).unwrap().unwrap();
    assert_eq!(row.task, "use key [REDACTED] please");
    assert_eq!(row.outcome.as_deref(), Some("leaked [REDACTED]"));
    assert_eq!(row.metadata["env"]["TOKEN"], "[REDACTED]");
    let events = store.events(&id).unwrap();
    let EventKind::ToolCallStarted { arguments, .. } = &events[0].event.kind else {
        panic!("unexpected {:?}", events[0].event.kind);
    };
    assert!(
        arguments.contains("[REDACTED]") && !arguments.contains(secret),
        "{arguments}"
    );
    assert!(!arguments.contains(shaped), "{arguments}");
    drop(store);

    // Nothing in the database files, WAL included, holds either secret.
    for file in [path.clone(), path.with_extension("db-wal")] {
        if let Ok(bytes) = std::fs::read(&file) {
            let text = String::from_utf8_lossy(&bytes);
            assert!(
                !text.contains(secret) && !text.contains(shaped),
                "secret in {}",
                file.display()
            );
        }
    }
}

#[test]
fn prefix_lookup_resolves_unique_prefixes_and_rejects_ambiguous_ones() {
    let store = Store::open_in_memory().unwrap();
    for id in ["01HAAA1", "01HAAA2", "01HBBB0"] {
        store
            .create_session(&NewSession {
                id: SessionId(id.into()),
                ..new_session(id)
            })
            .unwrap();
    }
    assert_eq!(
        store.find_session("01HB").unwrap().unwrap().id.as_str(),
        "01HBBB0"
    );
    assert_eq!(
        store.find_session("01hbb").unwrap().unwrap().id.as_str(),
        "01HBBB0"
    );
    assert_eq!(
        store.find_session("01HAAA2").unwrap().unwrap().id.as_str(),
        "01HAAA2"
    );
    assert!(store.find_session("01HC").unwrap().is_none());
    assert!(store.find_session("").unwrap().is_none());
    assert!(
        store.find_session("%").unwrap().is_none(),
        "LIKE wildcards are literal"
    );

    let err = store.find_session("01HA").unwrap_err();
    match &err {
        StoreError::AmbiguousPrefix {
            prefix, matches, ..
        } => {
            assert_eq!(prefix, "01HA");
            assert_eq!(matches, &["01HAAA1", "01HAAA2"]);
        }
        other => panic!("expected ambiguity, got {other:?}"),
    }
    assert!(err.to_string().contains("01HAAA1, 01HAAA2"), "{err}");
}

#[test]
fn sessions_list_newest_first_with_filters() {
    let store = Store::open_in_memory().unwrap();
    let mk = |task: &str, project: &str, secs: i64| {
        store
            .create_session(&NewSession {
                project: project.into(),
                started_at: Some(at(secs)),
                ..new_session(task)
            })
            .unwrap()
    };
    let middle = mk("middle", "alpha", 20);
    let _old = mk("old", "beta", 10);
    let _new = mk("new", "alpha", 30);
    store
        .finish_session(&middle, SessionStatus::Completed, None, &Totals::default())
        .unwrap();

    let tasks = |filter: SessionFilter| -> Vec<String> {
        store
            .list_sessions(&filter)
            .unwrap()
            .into_iter()
            .map(|r| r.task)
            .collect()
    };
    assert_eq!(tasks(SessionFilter::default()), ["new", "middle", "old"]);
    assert_eq!(
        tasks(SessionFilter {
            project: Some("alpha".into()),
            ..Default::default()
        }),
        ["new", "middle"]
    );
    assert_eq!(
        tasks(SessionFilter {
            status: Some(SessionStatus::Running),
            ..Default::default()
        }),
        ["new", "old"]
    );
    assert_eq!(
        tasks(SessionFilter {
            project: Some("alpha".into()),
            status: Some(SessionStatus::Completed),
            limit: None
        }),
        ["middle"]
    );
    assert_eq!(
        tasks(SessionFilter {
            limit: Some(2),
            ..Default::default()
        }),
        ["new", "middle"]
    );
    let rows = store.list_sessions(&SessionFilter::default()).unwrap();
    assert_eq!(rows[2].started_at, at(10));
}

#[test]
fn dropped_store_leaves_a_running_session_that_can_be_marked_interrupted() {
    let (_dir, path) = temp_db();
    let (id, other, last_at) = {
        let store = Store::open(&path).unwrap();
        let id = store
            .create_session(&NewSession {
                started_at: Some(at(0)),
                ..new_session("crashy")
            })
            .unwrap();
        let other = store.create_session(&new_session("also running")).unwrap();
        for i in 0..3 {
            store
                .append_event(
                    &id,
                    &Event {
                        at: at(i * 5 + 1),
                        ..user(&format!("step {i}"))
                    },
                )
                .unwrap();
        }
        (id, other, at(11))
        // Dropped here with no finish_session, as if the process died.
    };

    let store = Store::open(&path).unwrap();
    let events = store.events(&id).unwrap();
    assert_eq!(events.iter().map(|e| e.seq).collect::<Vec<_>>(), [1, 2, 3]);
    assert_eq!(
        store.get_session(&id).unwrap().unwrap().status,
        SessionStatus::Running
    );

    assert!(store.mark_interrupted(&id).unwrap());
    let row = store.get_session(&id).unwrap().unwrap();
    assert_eq!(row.status, SessionStatus::Interrupted);
    assert_eq!(row.ended_at, Some(last_at), "ends at its last event");
    assert_eq!(row.totals.elapsed_ms, 11_000);
    assert!(!store.mark_interrupted(&id).unwrap(), "already interrupted");

    assert_eq!(
        store.mark_interrupted_sessions().unwrap(),
        vec![other.clone()]
    );
    assert_eq!(
        store.get_session(&other).unwrap().unwrap().status,
        SessionStatus::Interrupted
    );
    assert!(store.mark_interrupted_sessions().unwrap().is_empty());
}

/// Env var naming the database the crash child writes to.
const CRASH_DB: &str = "QUIRE_STORE_CRASH_CHILD_DB";

/// Child half of `killed_writer_leaves_a_readable_session`: appends forever.
#[test]
#[ignore = "run as a child process by killed_writer_leaves_a_readable_session"]
fn crash_child_appends_until_killed() {
    let Ok(path) = std::env::var(CRASH_DB) else {
        return;
    };
    let store = Store::open(Path::new(&path)).unwrap();
    let id = store.create_session(&new_session("killed")).unwrap();
    let big = "x".repeat(4096);
    loop {
        store.append_event(&id, &user(&big)).unwrap();
    }
}

#[test]
fn killed_writer_leaves_a_readable_session() {
    let (_dir, path) = temp_db();
    let mut child = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "crash_child_appends_until_killed",
            "--ignored",
            "--nocapture",
        ])
        .env(CRASH_DB, &path)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();

    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    let id = loop {
        assert!(std::time::Instant::now() < deadline, "child wrote nothing");
        std::thread::sleep(std::time::Duration::from_millis(20));
        let Ok(store) = Store::open(&path) else {
            continue;
        };
        let Ok(rows) = store.list_sessions(&SessionFilter::default()) else {
            continue;
        };
        if let Some(row) = rows.first()
            && store.event_count(&row.id).unwrap() >= 50
        {
            break row.id.clone();
        }
    };
    child.kill().unwrap(); // SIGKILL: no destructors, mid-write at any point.
    child.wait().unwrap();

    let store = Store::open(&path).unwrap();
    let events = store.events(&id).unwrap();
    assert!(events.len() >= 50);
    for (i, event) in events.iter().enumerate() {
        assert_eq!(event.seq, i as u64 + 1, "dense after a kill");
    }
    assert_eq!(
        store.get_session(&id).unwrap().unwrap().status,
        SessionStatus::Running
    );
    assert!(store.mark_interrupted(&id).unwrap());
    // Appending after reopen continues the sequence.
    assert_eq!(
        store.append_event(&id, &user("resumed")).unwrap(),
        events.len() as u64 + 1
    );
}

#[test]
fn two_stores_on_one_file_keep_seqs_dense_and_ordered() {
    const PER_WRITER: usize = 150;
    let (_dir, path) = temp_db();
    let setup = Store::open(&path).unwrap();
    let sessions = [
        setup.create_session(&new_session("s1")).unwrap(),
        setup.create_session(&new_session("s2")).unwrap(),
    ];
    drop(setup);

    // Both open first, then start together, so the appends really overlap.
    let start = std::sync::Arc::new(std::sync::Barrier::new(2));
    let writers: Vec<_> = ["A", "B"]
        .into_iter()
        .map(|name| {
            let path = path.clone();
            let sessions = sessions.clone();
            let start = start.clone();
            std::thread::spawn(move || {
                let store = Store::open(&path).unwrap();
                start.wait();
                for i in 0..PER_WRITER {
                    // Each writer alternates sessions (B in the other order),
                    // so both contend for both sessions' sequences.
                    let target = &sessions[(i + usize::from(name == "B")) % 2];
                    store
                        .append_event(target, &user(&format!("{name}:{i}")))
                        .unwrap();
                    // An agent does work between events; without a pause the
                    // lock holder re-takes the lock while the other sleeps in
                    // SQLite's busy handler, and the writers hardly interleave.
                    std::thread::sleep(std::time::Duration::from_micros(500));
                }
            })
        })
        .collect();
    for writer in writers {
        writer.join().unwrap();
    }

    let store = Store::open(&path).unwrap();
    let mut switches = 0;
    for id in &sessions {
        let events = store.events(id).unwrap();
        assert_eq!(
            events.len(),
            PER_WRITER,
            "each writer put half its events here"
        );
        let mut last = [None::<usize>; 2];
        let mut prev_writer = None;
        for (n, event) in events.iter().enumerate() {
            assert_eq!(event.seq, n as u64 + 1, "dense");
            let EventKind::UserMessage { content, .. } = &event.event.kind else {
                panic!()
            };
            let (name, i) = content.split_once(':').unwrap();
            let i: usize = i.parse().unwrap();
            if prev_writer.is_some_and(|p| p != name) {
                switches += 1;
            }
            prev_writer = Some(name);
            let slot = &mut last[usize::from(name == "B")];
            assert!(
                slot.is_none_or(|prev| prev < i),
                "{name} out of order at seq {}",
                event.seq
            );
            *slot = Some(i);
        }
    }
    assert!(
        switches >= 10,
        "writers barely interleaved ({switches} switches); test proves nothing"
    );
}

#[test]
fn unknown_sessions_and_duplicate_ids_are_errors_naming_the_session() {
    let store = Store::open_in_memory().unwrap();
    let ghost = SessionId("01GHOST".into());
    let err = store.append_event(&ghost, &user("hi")).unwrap_err();
    assert!(matches!(err, StoreError::SessionNotFound { .. }), "{err:?}");
    assert!(err.to_string().contains("01GHOST"), "{err}");
    assert!(matches!(
        store.events(&ghost),
        Err(StoreError::SessionNotFound { .. })
    ));
    assert!(matches!(
        store.event_count(&ghost),
        Err(StoreError::SessionNotFound { .. })
    ));
    assert!(matches!(
        store.finish_session(&ghost, SessionStatus::Failed, None, &Totals::default()),
        Err(StoreError::SessionNotFound { .. })
    ));
    assert!(matches!(
        store.mark_interrupted(&ghost),
        Err(StoreError::SessionNotFound { .. })
    ));

    let id = store.create_session(&new_session("one")).unwrap();
    assert_eq!(store.event_count(&id).unwrap(), 0);
    assert!(store.events(&id).unwrap().is_empty());
    let dup = store.create_session(&NewSession {
        id: id.clone(),
        ..new_session("two")
    });
    assert!(
        matches!(dup, Err(StoreError::SessionExists { .. })),
        "{dup:?}"
    );

    let orphan = store.create_session(&NewSession {
        parent_id: Some(ghost),
        ..new_session("x")
    });
    assert!(
        matches!(orphan, Err(StoreError::SessionNotFound { .. })),
        "{orphan:?}"
    );
    let child = store
        .create_session(&NewSession {
            parent_id: Some(id.clone()),
            ..new_session("resumed")
        })
        .unwrap();
    assert_eq!(
        store.get_session(&child).unwrap().unwrap().parent_id,
        Some(id)
    );
}

#[test]
fn rows_and_events_serialize_for_json_export() {
    let store = Store::open_in_memory().unwrap();
    let id = store.create_session(&new_session("export")).unwrap();
    store
        .append_event(&id, &model_response(1, 10, 2, 0))
        .unwrap();
    let row = store.get_session(&id).unwrap().unwrap();
    let json = serde_json::to_value(&row).unwrap();
    assert_eq!(json["status"], "running");
    assert_eq!(json["usage"]["prompt_tokens"], 10);
    assert_eq!(json["iterations"], 1);
    assert_eq!(json["metadata"], serde_json::json!({}));
    let back: quire_store::SessionRow = serde_json::from_value(json).unwrap();
    assert_eq!(back, row);

    let event = serde_json::to_value(&store.events(&id).unwrap()[0]).unwrap();
    assert_eq!(event["seq"], 1);
    assert_eq!(event["kind"], "model_response");
    assert_eq!(event["event"]["usage"]["completion_tokens"], 2);
}

/// A status word this build does not know is a clear error naming it, not
/// a silent default (a `done` job read as `pending` would run again).
#[test]
fn an_unknown_status_word_is_an_error_naming_it() {
    let (_dir, path) = temp_db();
    let id = Store::open(&path)
        .unwrap()
        .create_session(&new_session("x"))
        .unwrap();
    raw(&path)
        .execute("UPDATE sessions SET status = 'paused'", [])
        .unwrap();
    let err = Store::open(&path)
        .unwrap()
        .get_session(&id)
        .unwrap_err()
        .to_string();
    assert!(err.contains("unknown session status `paused`"), "{err}");
    assert!(err.contains("running, completed"), "{err}");
}

#[test]
fn a_page_of_sessions_filters_by_project_agent_status_and_date_and_counts_all_matches() {
    let store = Store::open_in_memory().unwrap();
    for i in 0..25 {
        let mut new = new_session(&format!("task {i}"));
        new.started_at = Some(at(i * 60));
        if i % 5 == 0 {
            new.project = "other".into();
        }
        if i % 2 == 0 {
            new.agent = "mini".into();
        }
        let id = store.create_session(&new).unwrap();
        if i % 3 == 0 {
            store
                .finish_session(&id, SessionStatus::Completed, None, &Totals::default())
                .unwrap();
        }
    }
    let page = store
        .session_page(&quire_store::SessionQuery {
            limit: 10,
            ..Default::default()
        })
        .unwrap();
    assert_eq!(page.total, 25);
    assert_eq!(page.rows.len(), 10);
    assert_eq!(page.rows[0].task, "task 24", "newest first");
    let last = store
        .session_page(&quire_store::SessionQuery {
            limit: 10,
            offset: 20,
            ..Default::default()
        })
        .unwrap();
    assert_eq!(last.rows.len(), 5);
    assert_eq!(last.rows[4].task, "task 0");

    let filtered = store
        .session_page(&quire_store::SessionQuery {
            project: Some("demo".into()),
            agent: Some("mini".into()),
            status: Some(SessionStatus::Completed),
            since: Some(at(6 * 60)),
            until: Some(at(20 * 60)),
            limit: 100,
            ..Default::default()
        })
        .unwrap();
    // Even, not a multiple of 5 or outside [6, 20), multiple of 3: 6, 12, 18.
    let tasks: Vec<&str> = filtered.rows.iter().map(|r| r.task.as_str()).collect();
    assert_eq!(tasks, ["task 18", "task 12", "task 6"]);
    assert_eq!(filtered.total, 3);

    let facets = store.session_facets().unwrap();
    assert_eq!(facets.projects, ["demo", "other"]);
    assert_eq!(facets.agents, ["coder", "mini"]);
    assert_eq!(facets.statuses, ["completed", "running"]);
}

#[test]
fn sessions_that_retrieved_a_note_are_found_by_its_exact_id() {
    let store = Store::open_in_memory().unwrap();
    let a = store.create_session(&new_session("a")).unwrap();
    let b = store.create_session(&new_session("b")).unwrap();
    let retrieved = |ids: &[&str]| {
        Event::now(EventKind::NotesRetrieved {
            via: quire_types::NotesVia::Search,
            ids: ids.iter().map(|s| s.to_string()).collect(),
        })
    };
    store
        .append_event(&a, &retrieved(&["01NOTE_A", "01NOTEB"]))
        .unwrap();
    store.append_event(&a, &retrieved(&["01NOTE_A"])).unwrap();
    store.append_event(&b, &retrieved(&["01NOTEXA"])).unwrap();
    // Another kind of event naming the id does not count.
    store.append_event(&b, &user("see \"01NOTE_A\"")).unwrap();
    assert_eq!(
        store.sessions_retrieving_note("01NOTE_A").unwrap(),
        vec![a.clone()]
    );
    // `_` is literal, not a LIKE wildcard: 01NOTEXA is another note.
    assert_eq!(
        store.sessions_retrieving_note("01NOTEXA").unwrap(),
        vec![b.clone()]
    );
    assert!(
        store.sessions_retrieving_note("01NOTE").unwrap().is_empty(),
        "whole ids only"
    );
    assert_eq!(store.session_eval_run(&a).unwrap(), None);
}
