//! Several `quire` processes at once on one data home: two runs, a run and
//! a distill, two distills, several processes rebuilding a missing or
//! broken note index. All succeed, sessions are complete with their events
//! not mixed up (SQLite WAL + busy timeout), each distillation job is
//! claimed once, and the one index holds every process's notes (one
//! writer at a time, the others wait).

use std::process::Stdio;
use std::time::Duration;

use quire_store::DistillStatus;
use quire_testkit::{Fault, Reply, Script, ScriptedServer, call};
use serde_json::json;

use crate::harness::{Env, copy_dir, fixture, stderr, stdout};
use crate::kill9_distill::{
    DISTILL, TAG_PREFIX, check_consistent, is_note_taker, make_sessions, script as distill_script,
    title,
};

const OLD: &str = "    return round(price * (100 - percent) / 100, 2)";

fn script(tag: &str) -> Vec<Reply> {
    let slow = |r: Reply| Reply::Fault(Fault::Delay(Duration::from_millis(30), Box::new(r)));
    vec![
        slow(Reply::ToolCalls(vec![call(
            "read_file",
            json!({"path": "src/pricing.py"}),
        )])),
        slow(Reply::ToolCalls(vec![call(
            "edit_file",
            json!({"path": "src/pricing.py", "old": OLD,
                   "new": format!("    if percent < 0:\n        raise ValueError({tag:?})\n{OLD}")}),
        )])),
        slow(Reply::ToolCalls(vec![call("run_tests", json!({}))])),
        slow(Reply::ToolCalls(vec![call(
            "finish",
            json!({"summary": format!("fixed by {tag}")}),
        )])),
    ]
}

#[test]
fn two_runs_at_once_on_one_data_home_both_complete() {
    let env = Env::new(
        "pricing",
        ScriptedServer::start_blocking(Script::sequence(script("first"))),
    );
    let other_server = ScriptedServer::start_blocking(Script::sequence(script("second")));
    let other_parent = tempfile::tempdir().unwrap();
    let other_ws = other_parent.path().join("pricing");
    copy_dir(&fixture("pricing"), &other_ws);

    let first = env
        .quire()
        .args(["run", env.ws().to_str().unwrap(), "--yes"])
        .spawn()
        .unwrap();
    let second = env
        .quire_at(&other_server.openai_base_url())
        .args(["run", other_ws.to_str().unwrap(), "--yes"])
        .spawn()
        .unwrap();
    let first = first.wait_with_output().unwrap();
    let second = second.wait_with_output().unwrap();
    assert_eq!(first.status.code(), Some(0));
    assert_eq!(second.status.code(), Some(0));
    env.server.assert_clean();
    other_server.assert_clean();

    let store = env.store();
    let rows = store.list_sessions(&Default::default()).unwrap();
    assert_eq!(rows.len(), 2);
    for row in &rows {
        assert_eq!(row.status.as_str(), "completed");
        let events = store.events(&row.id).unwrap();
        let seqs: Vec<u64> = events.iter().map(|e| e.seq).collect();
        assert_eq!(seqs, (1..=events.len() as u64).collect::<Vec<_>>());
    }
    assert!(
        std::fs::read_to_string(env.ws().join("src/pricing.py"))
            .unwrap()
            .contains("\"first\"")
    );
    assert!(
        std::fs::read_to_string(other_ws.join("src/pricing.py"))
            .unwrap()
            .contains("\"second\"")
    );
}

fn tags(names: &[&str]) -> Vec<String> {
    names.iter().map(|t| format!("{TAG_PREFIX}{t}")).collect()
}

fn ok(out: &std::process::Output, what: &str) {
    assert_eq!(
        out.status.code(),
        Some(0),
        "{what}\nstdout:\n{}\nstderr:\n{}",
        stdout(out),
        stderr(out)
    );
}

#[test]
fn a_run_and_a_distill_at_once_on_one_data_home_both_succeed() {
    let env = Env::new("pricing", ScriptedServer::start_blocking(distill_script(7)));
    let earlier = tags(&["oak", "pine", "yew"]);
    make_sessions(&env, &earlier);
    let url = env.server.openai_base_url();

    // The distill drains the earlier sessions' jobs while a new session runs
    // (and applies its fix), ends and queues its own job.
    let run = env
        .quire()
        .args(["run", env.ws().to_str().unwrap(), "--yes"])
        .args(["--task", "Reject bad discounts (zqfir)"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let distill = env
        .quire()
        .args(DISTILL)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let run = run.wait_with_output().unwrap();
    let distill = distill.wait_with_output().unwrap();
    ok(&run, "run");
    ok(&distill, "distill");
    env.server.assert_clean();

    let store = env.store();
    let rows = store.list_sessions(&Default::default()).unwrap();
    assert_eq!(rows.len(), 4);
    for row in &rows {
        assert_eq!(row.status.as_str(), "completed", "{row:?}");
        let events = store.events(&row.id).unwrap();
        let seqs: Vec<u64> = events.iter().map(|e| e.seq).collect();
        assert_eq!(seqs, (1..=events.len() as u64).collect::<Vec<_>>());
    }
    assert!(
        std::fs::read_to_string(env.ws().join("src/pricing.py"))
            .unwrap()
            .contains("raise ValueError(percent)"),
        "the run applied its fix"
    );
    // Every job of the earlier sessions done; the new one's done or queued.
    let jobs = store.distill_jobs(None, usize::MAX).unwrap();
    assert_eq!(jobs.len(), 4);
    let done = jobs
        .iter()
        .filter(|j| j.status == DistillStatus::Done)
        .count();
    assert!(done >= 3, "{jobs:?}");
    assert!(
        jobs.iter()
            .all(|j| matches!(j.status, DistillStatus::Done | DistillStatus::Pending)),
        "{jobs:?}"
    );
    drop(store);
    // What distill wrote parses and is found.
    let state = check_consistent(env.home.path(), &url, "run + distill");
    let titles: Vec<&str> = state.notes.iter().map(|(t, _)| t.as_str()).collect();
    for tag in &earlier {
        assert!(titles.contains(&title(tag).as_str()), "{titles:?}");
    }
    assert_eq!(state.notes.len(), done, "{titles:?}");
}

#[test]
fn two_distills_at_once_process_each_job_once() {
    let env = Env::new(
        "pricing",
        ScriptedServer::start_blocking(distill_script(11)),
    );
    let all = tags(&["ash", "beech", "elm", "hazel", "lime", "rowan"]);
    make_sessions(&env, &all);
    let url = env.server.openai_base_url();
    // The derived index is gone too: both workers rebuild it at once.
    std::fs::remove_dir_all(env.home.path().join("index/notes")).unwrap();

    // Default (long) lease: a job taken twice would be a double claim.
    let worker = || {
        env.quire()
            .args(["--json", "notes", "distill", "--pending"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };
    let (a, b) = (worker(), worker());
    let a = a.wait_with_output().unwrap();
    let b = b.wait_with_output().unwrap();
    ok(&a, "first worker");
    ok(&b, "second worker");
    env.server.assert_clean();

    let sessions = |out: &std::process::Output| -> Vec<String> {
        stdout(out)
            .lines()
            .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
            .map(|r| {
                assert_eq!(r["outcome"], "done", "{r}");
                r["session_id"].as_str().unwrap().to_string()
            })
            .collect()
    };
    let (from_a, from_b) = (sessions(&a), sessions(&b));
    eprintln!(
        "two distills at once: {} and {} jobs",
        from_a.len(),
        from_b.len()
    );
    let mut both: Vec<String> = from_a.iter().chain(&from_b).cloned().collect();
    both.sort();
    let mut expected: Vec<String> = env
        .store()
        .list_sessions(&Default::default())
        .unwrap()
        .into_iter()
        .map(|s| s.id.as_str().to_string())
        .collect();
    expected.sort();
    assert_eq!(both, expected, "every job once, by one worker");
    for job in env.store().distill_jobs(None, usize::MAX).unwrap() {
        assert_eq!(job.status, DistillStatus::Done);
        assert_eq!(job.attempts, 1, "claimed once: {job:?}");
    }
    // The note-taker started each session's job once.
    let starts = env
        .server
        .requests()
        .into_iter()
        .filter(|r| is_note_taker(r) && r.last_tool_result().is_none())
        .count();
    assert_eq!(starts, all.len());
    // Notes from both workers are in the one index, each once.
    let state = check_consistent(env.home.path(), &url, "two distills");
    let mut titles: Vec<String> = state.notes.iter().map(|(t, _)| t.clone()).collect();
    titles.sort();
    let mut want: Vec<String> = all.iter().map(|t| title(t)).collect();
    want.sort();
    assert_eq!(titles, want);
}

#[test]
fn processes_opening_a_missing_or_broken_index_at_once_all_succeed() {
    let env = Env::new(
        "pricing",
        ScriptedServer::start_blocking(Script::sequence(vec![])),
    );
    copy_dir(&fixture("../../notes"), &env.home.path().join("notes"));
    let index = env.home.path().join("index/notes");
    for round in 0..4 {
        if round % 2 == 1 {
            std::fs::create_dir_all(&index).unwrap();
            std::fs::write(index.join("meta.json"), b"{ not json").unwrap();
        } else {
            let _ = std::fs::remove_dir_all(&index);
        }
        let children: Vec<_> = (0..4)
            .map(|_| {
                env.quire()
                    .args(["--json", "notes", "search", "decimal float money"])
                    .stdout(Stdio::piped())
                    .stderr(Stdio::piped())
                    .spawn()
                    .unwrap()
            })
            .collect();
        for child in children {
            let out = child.wait_with_output().unwrap();
            ok(&out, &format!("round {round}"));
            let hits: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
            assert!(
                hits.as_array().is_some_and(|h| !h.is_empty()),
                "round {round}: {hits}"
            );
        }
    }
    let leftovers: Vec<_> = std::fs::read_dir(env.home.path().join("index"))
        .unwrap()
        .flatten()
        .map(|e| e.file_name())
        .collect();
    assert_eq!(leftovers, vec![std::ffi::OsString::from("notes")]);
}
