//! Notes end to end: the scripted model plays both the coding agent and the
//! note-taker (told apart by the note-taker's system prompt). A session that
//! hits an error and fixes it is distilled into a hindsight note by a
//! background worker; a later session on a similar task gets the note in its
//! first request, finds it with `search_notes`, is offered it next to the
//! same error, reads it and credits it.

use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use quire_store::DistillStatus;
use quire_testkit::{Fault, RecordedRequest, Reply, Script, ScriptedServer, call};
use quire_types::SessionId;
use serde_json::{Value, json};

use crate::harness::{Env, copy_dir, fixture, note_files, read, stderr, stdout};

const NOTE_TAKER: &str = "You keep the notebook of a coding agent";
const FIX_OLD: &str = "    return round(price * (100 - percent) / 100, 2)";
const SIGNATURE: &str = "Failed: DID NOT RAISE ValueError";
const NOTE_TITLE: &str = "apply_discount must raise ValueError for a negative percent";

/// Tool results so far in this request's conversation: the step within it.
fn step(req: &RecordedRequest) -> usize {
    req.messages()
        .iter()
        .filter(|m| m.get("role").and_then(Value::as_str) == Some("tool"))
        .count()
}

fn is_note_taker(req: &RecordedRequest) -> bool {
    req.all_text().contains(NOTE_TAKER)
}

fn fix() -> Reply {
    Reply::ToolCalls(vec![call(
        "edit_file",
        json!({
            "path": "src/pricing.py",
            "old": FIX_OLD,
            "new": format!("    if percent < 0 or percent > 100:\n        raise ValueError(\"percent must be between 0 and 100\")\n{FIX_OLD}"),
        }),
    )])
}

fn read_source() -> Reply {
    Reply::ToolCalls(vec![call("read_file", json!({"path": "src/pricing.py"}))])
}

fn finish(summary: &str) -> Reply {
    Reply::ToolCalls(vec![call("finish", json!({ "summary": summary }))])
}

fn done(summary: &str) -> Reply {
    Reply::ToolCalls(vec![call("note_done", json!({ "summary": summary }))])
}

fn create_hindsight(extra_body: &str) -> Reply {
    Reply::ToolCalls(vec![call(
        "note_create",
        json!({
            "title": NOTE_TITLE,
            "kind": "hindsight",
            "scope": "project",
            "topic": "pricing",
            "description": "test_negative_discount_rejected fails until apply_discount range-checks percent",
            "body": format!("## Error\n\n```\n{SIGNATURE}\n```\n\n## Cause\n\napply_discount did no range check.\n\n## Fix\n\nRaise ValueError when percent < 0 or > 100.{extra_body}"),
            "error_signatures": [SIGNATURE],
            "keywords": ["discount", "percent", "validation"],
            "files": ["src/pricing.py"],
            "symbols": ["apply_discount"],
        }),
    )])
}

/// Session 1: the tests fail, the agent fixes the code, the tests pass.
/// Its note-taker searches, writes one hindsight note, and is done.
fn first_script(note_body_extra: &'static str) -> Script {
    Script::from_fn(move |req, _| {
        if is_note_taker(req) {
            return match step(req) {
                0 => Reply::ToolCalls(vec![call("note_search", json!({"query": SIGNATURE}))]),
                1 => create_hindsight(note_body_extra),
                _ => done("one hindsight note about the range check"),
            };
        }
        match step(req) {
            0 => Reply::ToolCalls(vec![call("run_tests", json!({}))]),
            1 => read_source(),
            2 => fix(),
            3 => Reply::ToolCalls(vec![call("run_tests", json!({}))]),
            _ => finish("apply_discount rejects percentages outside 0..100"),
        }
    })
}

fn wait_for_job(env: &Env, id: &SessionId, status: DistillStatus) {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let job = env.store().distill_job(id).unwrap();
        if job.as_ref().is_some_and(|j| j.status == status) {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "job of {id} never became {status}: {job:?}\nlog: {}",
            std::fs::read_to_string(env.home.path().join(format!("logs/distill-{id}.log")))
                .unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The id in a note file's frontmatter.
fn note_id(path: &Path) -> String {
    read(path)
        .lines()
        .find_map(|l| l.strip_prefix("id: "))
        .unwrap()
        .trim_matches('"')
        .to_string()
}

fn session_ids(env: &Env) -> Vec<SessionId> {
    let mut rows = env.store().list_sessions(&Default::default()).unwrap();
    rows.sort_by(|a, b| a.id.cmp(&b.id));
    rows.into_iter().map(|r| r.id).collect()
}

#[test]
fn an_error_fixed_in_one_session_becomes_a_note_the_next_session_gets() {
    let env = Env::new("pricing", ScriptedServer::start_blocking(first_script("")));
    let ws = env.ws();
    let out = env.run(&[
        "run",
        ws.to_str().unwrap(),
        "--yes",
        "--no-apply",
        "-c",
        "notes.auto_distill=true",
    ]);
    assert_eq!(out.status.code(), Some(0));
    assert!(
        stdout(&out).contains("distilling this session in the background"),
        "{}",
        stdout(&out)
    );
    let first = session_ids(&env)[0].clone();
    wait_for_job(&env, &first, DistillStatus::Done);
    env.server.assert_clean();

    // The note-taker saw a digest of the session, not the raw trajectory.
    let taker: Vec<RecordedRequest> = env
        .server
        .requests()
        .into_iter()
        .filter(is_note_taker)
        .collect();
    assert_eq!(taker.len(), 3);
    let digest = taker[0].all_text();
    assert!(
        digest.contains("run_tests() → tests failed [fixed by step 3"),
        "{digest}"
    );
    assert!(digest.contains("DID NOT RAISE"), "{digest}");
    assert!(digest.contains("```diff"), "{digest}");

    let notes_root = env.home.path().join("notes");
    let files = note_files(&notes_root);
    assert_eq!(files.len(), 1, "{files:?}");
    assert!(
        files[0].starts_with(notes_root.join("projects/pricing/pricing")),
        "{files:?}"
    );
    let note = read(&files[0]);
    assert!(note.contains("kind: hindsight"), "{note}");
    assert!(
        note.contains(first.as_str()),
        "provenance names the session: {note}"
    );
    assert!(notes_root.join("projects/pricing/README.md").exists());
    let id = note_id(&files[0]);

    // A later session on a similar task, against a second scripted model.
    let id_for_script = id.clone();
    let second = ScriptedServer::start_blocking(Script::from_fn(move |req, _| {
        if is_note_taker(req) {
            return done("nothing new: the existing note covered it");
        }
        match step(req) {
            0 => Reply::ToolCalls(vec![call(
                "search_notes",
                json!({"query": "apply_discount negative percent"}),
            )]),
            1 => Reply::ToolCalls(vec![call("run_tests", json!({}))]),
            2 => Reply::ToolCalls(vec![call("read_note", json!({"id": id_for_script}))]),
            3 => read_source(),
            4 => fix(),
            5 => Reply::ToolCalls(vec![call("run_tests", json!({}))]),
            _ => finish("range check, as the note said"),
        }
    }));
    let out = env
        .quire_at(&second.openai_base_url())
        .args([
            // Titles and a short text only, so the notes tools are offered.
            "-c",
            "notes.inline_chars=20",
            "run",
            ws.to_str().unwrap(),
            "--yes",
            "--task",
            "Negative discount percentages must be rejected: apply_discount should raise ValueError.",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let requests: Vec<RecordedRequest> = second
        .requests()
        .into_iter()
        .filter(|r| !is_note_taker(r))
        .collect();
    let first_request = requests[0].all_text();
    assert!(
        first_request.contains(&id) && first_request.contains(NOTE_TITLE),
        "the note is in the first request: {first_request}"
    );
    assert!(
        first_request.contains(&format!("read_note {id} for the rest")),
        "its text cut, with a pointer to the rest: {first_request}"
    );
    let found = requests[1].last_tool_result().unwrap();
    assert!(found.contains(&id), "search_notes finds it: {found}");
    let tests = requests[2].last_tool_result().unwrap();
    assert!(
        tests.contains("DID NOT RAISE") && tests.contains(&id),
        "offered next to the same error: {tests}"
    );
    let body = requests[3].last_tool_result().unwrap();
    assert!(body.contains("Raise ValueError when percent < 0"), "{body}");

    // The events record what was shown and read.
    let later = session_ids(&env)[1].clone();
    let events = env.store().events(&later).unwrap();
    let vias: Vec<String> = events
        .iter()
        .filter(|e| e.kind == "notes_retrieved")
        .filter_map(|e| match &e.event.kind {
            quire_types::EventKind::NotesRetrieved { via, ids } if ids.contains(&id) => {
                Some(via.to_string())
            }
            _ => None,
        })
        .collect();
    // Listed with its text cut (so not read yet), then searched, offered, read.
    assert_eq!(vias, vec!["start", "search", "error", "read"]);

    // Distilling the later session writes nothing and credits the note it read.
    let out = env
        .quire_at(&second.openai_base_url())
        .args(["notes", "distill", "--pending"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stdout(&out).contains("nothing new"), "{}", stdout(&out));
    assert!(stdout(&out).contains("as helpful"), "{}", stdout(&out));
    second.assert_clean();
    assert_eq!(note_files(&notes_root).len(), 1, "wrote nothing");
    let note = read(&files[0]);
    assert!(note.contains("helpful: 1"), "{note}");
    wait_for_job(&env, &later, DistillStatus::Done);
}

#[test]
fn the_note_taker_updates_an_existing_note_instead_of_duplicating_it() {
    let server = ScriptedServer::start_blocking(Script::from_fn(|req, _| {
        if is_note_taker(req) {
            return match step(req) {
                0 => Reply::ToolCalls(vec![call("note_search", json!({"query": SIGNATURE}))]),
                1 => {
                    // The id comes from the search result.
                    let found = req.last_tool_result().unwrap_or_default();
                    let id = found
                        .split_whitespace()
                        .find(|w| w.len() == 26 && w.chars().all(|c| c.is_ascii_alphanumeric()))
                        .unwrap_or("none")
                        .to_string();
                    Reply::ToolCalls(vec![call(
                        "note_update",
                        json!({"id": id, "old": "Check the range.", "new": "Check the range: raise ValueError when percent < 0 or > 100."}),
                    )])
                }
                _ => done("updated the existing note"),
            };
        }
        match step(req) {
            0 => Reply::ToolCalls(vec![call("run_tests", json!({}))]),
            1 => read_source(),
            2 => fix(),
            3 => Reply::ToolCalls(vec![call("run_tests", json!({}))]),
            _ => finish("range check"),
        }
    }));
    let env = Env::new("pricing", server);
    // A note written by hand, before any session: picked up by the index.
    let folder = env.home.path().join("notes/projects/pricing/pricing");
    std::fs::create_dir_all(&folder).unwrap();
    let hand = folder.join("discount-range.md");
    std::fs::write(
        &hand,
        format!("---\nid: 01JHANDWRITTEN000000000000\ntitle: Discount percentages out of range\nkind: hindsight\nscope: project\nproject: pricing\ntopic: pricing\nerror_signatures:\n  - \"{SIGNATURE}\"\ncreated: 2025-01-01\n---\n## Error\n\n{SIGNATURE}\n\n## Fix\n\nCheck the range.\n"),
    )
    .unwrap();
    let out = env.run(&["run", env.ws().to_str().unwrap(), "--yes", "--no-apply"]);
    assert_eq!(out.status.code(), Some(0));
    let coding: Vec<RecordedRequest> = env
        .server
        .requests()
        .into_iter()
        .filter(|r| !is_note_taker(r))
        .collect();
    assert!(
        coding[0].all_text().contains("01JHANDWRITTEN000000000000"),
        "hand-written notes are retrieved"
    );
    let out = env.run(&["notes", "distill", "--pending"]);
    assert_eq!(out.status.code(), Some(0));
    env.server.assert_clean();
    let files = note_files(&env.home.path().join("notes"));
    assert_eq!(files, vec![hand.clone()], "updated in place, no duplicate");
    let text = read(&hand);
    assert!(
        text.contains("raise ValueError when percent < 0 or > 100"),
        "{text}"
    );
    assert!(
        text.contains("id: \"01JHANDWRITTEN000000000000\""),
        "{text}"
    );
}

#[test]
fn secrets_named_by_the_config_never_reach_a_note() {
    const TOKEN: &str = "qt-4242-abcdef-987654-zz";
    let env = Env::new(
        "pricing",
        ScriptedServer::start_blocking(first_script(
            "\n\nDeploy with QUIRE_TEST_TOKEN=qt-4242-abcdef-987654-zz and ghp_abcdefghijklmnopqrstuvwxyz0123.",
        )),
    );
    let secret_env = ["-c", r#"notes.secret_env=["QUIRE_TEST_TOKEN"]"#];
    let out = env
        .quire()
        .env("QUIRE_TEST_TOKEN", TOKEN)
        .args(secret_env)
        .args([
            "run",
            env.ws().to_str().unwrap(),
            "--yes",
            "--no-apply",
            "--task",
            &format!("apply_discount must reject negative percentages (staging token {TOKEN})"),
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let out = env
        .quire()
        .env("QUIRE_TEST_TOKEN", TOKEN)
        .args(secret_env)
        .args(["notes", "distill", "--pending"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let digest = env
        .server
        .requests()
        .into_iter()
        .find(is_note_taker)
        .unwrap()
        .all_text();
    assert!(!digest.contains(TOKEN), "the digest is redacted: {digest}");
    assert!(digest.contains("staging token [REDACTED]"), "{digest}");
    let files = note_files(&env.home.path().join("notes"));
    assert_eq!(files.len(), 1);
    let note = read(&files[0]);
    assert!(!note.contains(TOKEN), "{note}");
    assert!(
        !note.contains("ghp_abcdefghijklmnopqrstuvwxyz0123"),
        "{note}"
    );
    assert!(note.contains("[REDACTED]"), "{note}");
}

#[test]
fn broken_frontmatter_is_reported_with_path_and_line_and_the_rest_still_work() {
    let server = ScriptedServer::start_blocking(Script::from_fn(|req, _| {
        if is_note_taker(req) {
            return done("nothing");
        }
        match step(req) {
            0 => read_source(),
            1 => fix(),
            2 => Reply::ToolCalls(vec![call("run_tests", json!({}))]),
            _ => finish("range check"),
        }
    }));
    let env = Env::new("pricing", server);
    let notes = env.home.path().join("notes");
    copy_dir(&fixture("../../notes"), &notes);
    let broken = notes.join("projects/pricing/pricing/broken.md");
    std::fs::create_dir_all(broken.parent().unwrap()).unwrap();
    std::fs::write(
        &broken,
        "---\nid: 01JBROKEN\ntitle: Discount ranges\nkind: rumour\nscope: project\nproject: pricing\ntopic: pricing\ncreated: 2025-01-01\n---\nbody\n",
    )
    .unwrap();
    let out = env.run(&["notes", "list"]);
    assert_eq!(out.status.code(), Some(0));
    assert!(
        stderr(&out).contains(&format!("{}:4:", broken.display()))
            && stderr(&out).contains("rumour"),
        "{}",
        stderr(&out)
    );
    assert!(stdout(&out).contains("Never mix Decimal and float for money"));
    let out = env.run(&["notes", "search", "decimal float money"]);
    assert!(
        stdout(&out).contains("never-mix-decimal-and-float-for-money.md"),
        "{}",
        stdout(&out)
    );
    let out = env.run(&["notes", "stats"]);
    assert!(stdout(&out).contains("broken 1"), "{}", stdout(&out));

    // A session still runs, with the good notes.
    let out = env.run(&[
        "run",
        env.ws().to_str().unwrap(),
        "--yes",
        "--task",
        "Discount percentages: never mix Decimal and float for money",
    ]);
    assert_eq!(out.status.code(), Some(0));
    let first = env.server.requests()[0].all_text();
    assert!(
        first.contains("Never mix Decimal and float for money"),
        "{first}"
    );
    assert!(!first.contains("01JBROKEN"));
}

#[test]
fn a_distillation_killed_midway_leaves_a_consistent_tree_and_is_finished_once() {
    let server = ScriptedServer::start_blocking(Script::from_fn(|req, _| {
        if is_note_taker(req) {
            return match step(req) {
                0 => create_hindsight(""),
                // Hangs after writing the note, until the worker is killed.
                _ => Reply::Fault(Fault::Delay(
                    Duration::from_secs(120),
                    Box::new(done("too late")),
                )),
            };
        }
        match step(req) {
            0 => Reply::ToolCalls(vec![call("run_tests", json!({}))]),
            1 => read_source(),
            2 => fix(),
            3 => Reply::ToolCalls(vec![call("run_tests", json!({}))]),
            _ => finish("range check"),
        }
    }));
    let env = Env::new("pricing", server);
    let out = env.run(&["run", env.ws().to_str().unwrap(), "--yes", "--no-apply"]);
    assert_eq!(out.status.code(), Some(0));
    let id = session_ids(&env)[0].clone();

    let lease = [
        "-c",
        "notes.job_lease_secs=1",
        "-c",
        "model.request_timeout_secs=300",
    ];
    let mut worker = env
        .quire()
        .args(lease)
        .args(["notes", "distill", "--pending"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let notes = env.home.path().join("notes");
    let deadline = Instant::now() + Duration::from_secs(60);
    while note_files(&notes).is_empty()
        || env
            .server
            .requests()
            .iter()
            .filter(|r| is_note_taker(r))
            .count()
            < 2
    {
        assert!(
            Instant::now() < deadline,
            "the note-taker never wrote its note"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    // SAFETY: plain kill(2) on a child we spawned.
    unsafe {
        libc::kill(worker.id() as i32, libc::SIGKILL);
    }
    worker.wait().unwrap();
    let job = env.store().distill_job(&id).unwrap().unwrap();
    assert_eq!(
        job.status,
        DistillStatus::Running,
        "left running by the dead worker"
    );
    assert_eq!(
        job.notes_written.as_array().unwrap().len(),
        1,
        "progress was saved"
    );

    // The tree is consistent: every note parses, nothing is half written.
    let out = env.run(&["notes", "list", "--json"]);
    assert!(
        stderr(&out).is_empty() || !stderr(&out).contains("broken"),
        "{}",
        stderr(&out)
    );
    let listed: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(listed.as_array().unwrap().len(), 1);

    // After the lease, another worker takes the job over and finishes it once.
    std::thread::sleep(Duration::from_millis(1500));
    let resume = ScriptedServer::start_blocking(Script::from_fn(|req, _| {
        let text = req.all_text();
        assert!(
            text.contains("An earlier attempt"),
            "told about the earlier notes: {text}"
        );
        done("the note from the first attempt stands")
    }));
    let out = env
        .quire_at(&resume.openai_base_url())
        .args(lease)
        .args(["notes", "distill", "--pending"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    resume.assert_clean();
    let job = env.store().distill_job(&id).unwrap().unwrap();
    assert_eq!(job.status, DistillStatus::Done);
    assert_eq!(job.attempts, 2);
    assert_eq!(note_files(&notes).len(), 1, "no duplicate");
    let out = env.run(&["notes", "search", "DID NOT RAISE ValueError", "--json"]);
    let hits: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(hits.as_array().unwrap().len(), 1, "indexed");
    let out = env.run(&["notes", "distill", "--pending"]);
    assert!(
        stdout(&out).contains("no pending distillation jobs"),
        "processed once"
    );
}

#[test]
fn browsing_the_curated_tree() {
    let env = Env::new(
        "pricing",
        ScriptedServer::start_blocking(Script::sequence(vec![])),
    );
    let notes = env.home.path().join("team-notes");
    copy_dir(&fixture("../../notes"), &notes);
    let root = ["-c", "notes.root=\"team-notes\""];
    let run = |args: &[&str]| {
        let out = env.quire().args(root).args(args).output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{args:?}: {}", stderr(&out));
        stdout(&out)
    };
    let tree = run(&["notes", "tree"]);
    assert!(
        tree.contains("projects/") && tree.contains("    shop/") && tree.contains("shared/"),
        "{tree}"
    );
    let list = run(&["notes", "list", "--project", "shop", "--kind", "hindsight"]);
    assert_eq!(list.lines().count(), 2, "{list}");
    let hits = run(&["notes", "search", "ModuleNotFoundError src", "--json"]);
    let hits: Value = serde_json::from_str(&hits).unwrap();
    let id = hits[0]["id"].as_str().unwrap().to_string();
    assert!(hits[0]["snippet"].as_str().is_some());
    let show = run(&["notes", "show", &id[..12]]);
    assert!(
        show.starts_with("Tests fail with ModuleNotFoundError"),
        "{show}"
    );
    assert!(
        show.contains("\nError\n") && !show.contains("## Error"),
        "rendered: {show}"
    );
    let raw = run(&["notes", "show", &id, "--raw"]);
    assert!(raw.starts_with("---\n") && raw.contains("## Error"));
    let json = run(&["notes", "show", &id, "--json"]);
    let json: Value = serde_json::from_str(&json).unwrap();
    assert_eq!(json["meta"]["id"], id.as_str());
    let stats = run(&["notes", "stats", "--json"]);
    let stats: Value = serde_json::from_str(&stats).unwrap();
    assert_eq!(stats["notes"], 6);
    let reindexed = run(&["notes", "reindex"]);
    assert!(reindexed.contains("indexed 6 notes"), "{reindexed}");
    run(&["notes", "rm", &id]);
    let stats: Value = serde_json::from_str(&run(&["notes", "stats", "--json"])).unwrap();
    assert_eq!(stats["notes"], 5);
    assert_eq!(stats["index"]["documents"], 5);
    // Edit through $EDITOR: a script that rewrites the description.
    let editor = env.home.path().join("editor.sh");
    std::fs::write(
        &editor,
        "#!/bin/sh\nsed -i 's/^description: .*/description: \"edited by hand\"/' \"$1\"\n",
    )
    .unwrap();
    let target = hits[1]["id"].as_str().unwrap().to_string();
    let out = env
        .quire()
        .args(root)
        .env("VISUAL", format!("sh {}", editor.display()))
        .args(["notes", "edit", &target])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let found = run(&["notes", "search", "edited by hand", "--json"]);
    let found: Value = serde_json::from_str(&found).unwrap();
    assert_eq!(found[0]["id"], target.as_str(), "re-indexed after the edit");
}

#[test]
fn no_notes_turns_retrieval_and_distillation_off() {
    let env = Env::new(
        "pricing",
        ScriptedServer::start_blocking(Script::from_fn(|req, _| match step(req) {
            0 => read_source(),
            1 => fix(),
            2 => Reply::ToolCalls(vec![call("run_tests", json!({}))]),
            _ => finish("range check"),
        })),
    );
    copy_dir(&fixture("../../notes"), &env.home.path().join("notes"));
    let task = "Never mix Decimal and float for money in apply_discount";
    let out = env.run(&[
        "run",
        env.ws().to_str().unwrap(),
        "--yes",
        "--no-notes",
        "--task",
        task,
    ]);
    assert_eq!(out.status.code(), Some(0));
    let first = &env.server.requests()[0];
    assert!(!first.tool_names().contains(&"search_notes".to_string()));
    assert!(!first.all_text().contains("Notes from earlier sessions"));
    let id = session_ids(&env)[0].clone();
    assert!(
        env.store().distill_job(&id).unwrap().is_none(),
        "no job queued"
    );

    // With notes on, the same task gets the curated note and, as its text
    // is not shown in full here, the tools.
    let out = env.run(&[
        "-c",
        "notes.inline_chars=0",
        "run",
        env.ws().to_str().unwrap(),
        "--yes",
        "--task",
        task,
    ]);
    assert_eq!(out.status.code(), Some(0));
    let requests = env.server.requests();
    let first = requests
        .iter()
        .find(|r| step(r) == 0 && r.all_text().contains("Notes from earlier sessions"));
    let first = first.expect("the second session lists notes");
    assert!(first.tool_names().contains(&"search_notes".to_string()));
    assert!(first.tool_names().contains(&"read_note".to_string()));
}

#[test]
fn notes_written_by_hand_need_only_a_title_and_notes_new_writes_a_valid_skeleton() {
    let env = Env::new(
        "pricing",
        ScriptedServer::start_blocking(Script::sequence(vec![])),
    );
    let root = ["-c", "notes.root=\"team-notes\""];
    let notes = env.home.path().join("team-notes");
    let by_hand = notes.join("projects/pricing/money/decimal.md");
    std::fs::create_dir_all(by_hand.parent().unwrap()).unwrap();
    std::fs::write(
        &by_hand,
        "---\ntitle: Money is Decimal here\n---\nNever mix Decimal and float in apply_discount.\n",
    )
    .unwrap();
    let quire = |args: &[&str], visual: Option<&str>| {
        let mut cmd = env.quire();
        cmd.args(root).args(args);
        if let Some(editor) = visual {
            cmd.env("VISUAL", editor);
        }
        cmd.output().unwrap()
    };
    let ok = |args: &[&str]| {
        let out = quire(args, None);
        assert_eq!(out.status.code(), Some(0), "{args:?}: {}", stderr(&out));
        stdout(&out)
    };

    // Found by the id its path gives it, by search, and reported as filled.
    let show = ok(&["notes", "show", "projects/pricing/money/decimal", "--json"]);
    let show: Value = serde_json::from_str(&show).unwrap();
    assert_eq!(show["meta"]["title"], "Money is Decimal here");
    assert_eq!(show["meta"]["kind"], "insight");
    assert_eq!(show["meta"]["scope"], "project");
    assert_eq!(show["meta"]["project"], "pricing");
    assert_eq!(show["meta"]["topic"], "money");
    let hits: Value = serde_json::from_str(&ok(&[
        "notes",
        "search",
        "Decimal float apply_discount",
        "--json",
    ]))
    .unwrap();
    assert_eq!(hits[0]["id"], "projects/pricing/money/decimal");
    let stats: Value = serde_json::from_str(&ok(&["notes", "stats", "--json"])).unwrap();
    assert_eq!(stats["notes"], 1);
    assert!(stats["broken"].as_array().unwrap().is_empty(), "{stats}");
    assert_eq!(
        stats["filled"][0]["path"],
        "projects/pricing/money/decimal.md"
    );
    assert_eq!(
        stats["filled"][0]["fields"],
        json!([
            "id", "kind", "scope", "project", "topic", "created", "updated"
        ])
    );
    let text = ok(&["notes", "stats"]);
    assert!(
        text.contains("1 hand-written notes had fields filled")
            && text.contains("projects/pricing/money/decimal.md (id, kind, scope"),
        "{text}"
    );

    // `notes new`: a complete skeleton, opened in the editor, then indexed.
    let editor = env.home.path().join("editor.sh");
    std::fs::write(
        &editor,
        "#!/bin/sh\nprintf 'Round half even with quantize, never round().\\n' >> \"$1\"\n",
    )
    .unwrap();
    let visual = format!("sh {}", editor.display());
    let out = quire(
        &[
            "notes",
            "new",
            "shared/python/rounding",
            "--title",
            "Rounding money",
            "--kind",
            "how-to",
        ],
        Some(&visual),
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let written = read(&notes.join("shared/python/rounding.md"));
    for field in [
        "title: \"Rounding money\"",
        "kind: how-to",
        "scope: shared",
        "topic: \"python\"",
        "created: ",
        "## Steps",
        "never round().",
    ] {
        assert!(written.contains(field), "{field}: {written}");
    }
    let hits: Value =
        serde_json::from_str(&ok(&["notes", "search", "quantize", "--json"])).unwrap();
    assert_eq!(hits[0]["title"], "Rounding money");
    let stats: Value = serde_json::from_str(&ok(&["notes", "stats", "--json"])).unwrap();
    assert_eq!(stats["notes"], 2);
    assert_eq!(
        stats["filled"].as_array().unwrap().len(),
        1,
        "the skeleton lacks nothing"
    );

    // Never over an existing note; a skeleton broken in the editor is kept and named.
    let out = quire(
        &[
            "notes",
            "new",
            "shared/python/rounding.md",
            "--title",
            "Again",
        ],
        Some("true"),
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("already exists"), "{}", stderr(&out));
    assert!(read(&notes.join("shared/python/rounding.md")).contains("Rounding money"));
    let breaker = env.home.path().join("breaker.sh");
    std::fs::write(
        &breaker,
        "#!/bin/sh\nsed -i 's/^kind: .*/kind: rumour/' \"$1\"\n",
    )
    .unwrap();
    let out = quire(
        &["notes", "new", "shared/python/broken", "--title", "Broken"],
        Some(&format!("sh {}", breaker.display())),
    );
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(err.contains("broken.md") && err.contains("rumour"), "{err}");
    assert!(
        err.contains("quire notes edit shared/python/broken.md"),
        "{err}"
    );
    assert!(
        notes.join("shared/python/broken.md").exists(),
        "nothing is lost"
    );
    let out = quire(
        &["notes", "new", "../outside", "--title", "Out"],
        Some("true"),
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(!env.home.path().join("outside.md").exists());
}

#[test]
fn preview_shows_what_a_task_would_get_the_notes_and_the_code_they_point_to() {
    // No model: preview only builds the start of a session.
    let env = Env::new(
        "pricing",
        ScriptedServer::start_blocking(Script::from_fn(|_, _| done("unused"))),
    );
    let ws = env.ws();
    let task = "apply_discount() accepts a negative percent and raises the price";
    // Nothing kept yet: the task would get no notes.
    let run_preview = |json: bool| {
        let mut args = vec![
            "notes",
            "preview",
            ws.to_str().unwrap(),
            "--task",
            task,
            "--project",
            "pricing",
        ];
        if json {
            args.insert(0, "--json");
        }
        let out = env.run(&args);
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        out
    };
    let preview = || serde_json::from_slice::<Value>(&run_preview(true).stdout).unwrap();
    let json = preview();
    assert!(json["message"].is_null(), "{json}");

    let map = env.home.path().join("notes/projects/pricing/map/map.md");
    std::fs::create_dir_all(map.parent().unwrap()).unwrap();
    std::fs::write(
        &map,
        "---\ntitle: Pricing map\nkind: architecture\n---\n- Discounts: `apply_discount` in src/pricing.py; tests in tests/\n",
    )
    .unwrap();
    let json = preview();
    let message = json["message"].as_str().unwrap();
    assert!(message.contains("Pricing map"), "{message}");
    assert!(
        message.contains("`src/pricing.py` (whole file, ")
            && message.contains("| def apply_discount(price: float, percent: float) -> float:"),
        "{message}"
    );
    assert_eq!(json["code"][0]["path"], "src/pricing.py");
    assert_eq!(json["code"][0]["why"], "task_names_it");
    assert!(json["chars"].as_u64().unwrap() > json["code"][0]["chars"].as_u64().unwrap());

    // The terminal view says what it costs.
    let out = run_preview(false);
    assert!(stdout(&out).contains("1 code excerpts"), "{}", stdout(&out));
    // A workspace that is not there is a clear error.
    let out = env.run(&["notes", "preview", "/no/such/ws", "--task", task]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("/no/such/ws"), "{}", stderr(&out));
}
