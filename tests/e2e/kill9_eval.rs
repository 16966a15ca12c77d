//! Crash safety: `quire eval run` (and the `eval resume` that follows)
//! killed with SIGKILL at random points, many times. After each kill the
//! database opens, `eval list` and `eval report` read it, the run is left
//! `running` (its owner dead) or finished, and `eval resume` completes it
//! with exactly one result per task × attempt. The suite's own task folders
//! are never touched: attempts work on copies.

use std::collections::BTreeMap;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use quire_store::{EvalResultStatus, EvalRunStatus};
use quire_testkit::rng::Rng;
use quire_testkit::{Fault, RecordedRequest, Reply, Script, ScriptedServer, call};
use serde_json::{Value, json};

use crate::harness::{EVALSUITE_TASKS as TASKS, Env, snapshot, stderr, stdout};

/// Solves every task (read, edit, test, finish), each reply delayed
/// 0–150 ms at random.
fn script(seed: u64) -> Script {
    let rng = Arc::new(Mutex::new(Rng::new(seed)));
    Script::from_fn(move |req: &RecordedRequest, _| {
        let ms = rng.lock().unwrap().below(150) as u64;
        let text = req.all_text();
        let (_, _, path, old, new) = TASKS
            .iter()
            .find(|t| text.contains(t.1))
            .expect("a request about one of the tasks");
        let step = req
            .messages()
            .iter()
            .filter(|m| m.get("role").and_then(Value::as_str) == Some("assistant"))
            .count();
        let reply = match step {
            0 => Reply::ToolCalls(vec![call("read_file", json!({"path": path}))]),
            1 => Reply::ToolCalls(vec![call(
                "edit_file",
                json!({"path": path, "old": old, "new": new}),
            )]),
            2 => Reply::ToolCalls(vec![call("run_tests", json!({}))]),
            _ => Reply::ToolCalls(vec![call("finish", json!({"summary": "fixed"}))]),
        };
        Reply::Fault(Fault::Delay(Duration::from_millis(ms), Box::new(reply)))
    })
}

fn the_run(env: &Env) -> Option<String> {
    let runs = env.store().list_eval_runs(None, None).unwrap();
    assert!(runs.len() <= 1, "one run per home: {runs:?}");
    runs.first().map(|r| r.run.id.clone())
}

/// Resumes `run` against a fresh server and checks it completes with one
/// resolved result per task.
fn resume_to_the_end(env: &Env, run: &str, seed: u64, label: &str) {
    let server = ScriptedServer::start_blocking(script(seed));
    let out = env
        .quire_at(&server.openai_base_url())
        .args(["eval", "resume", run, "--timeout", "60"])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{label}: resume\n{}\n{}",
        stdout(&out),
        stderr(&out)
    );
    check_complete(env, run, label);
}

fn check_complete(env: &Env, run: &str, label: &str) {
    let store = env.store();
    let row = store.get_eval_run(run).unwrap().unwrap();
    assert_eq!(row.status, EvalRunStatus::Completed, "{label}");
    let results = store.eval_results(run).unwrap();
    let mut keys: Vec<(String, u32)> = results
        .iter()
        .map(|r| (r.task_id.clone(), r.attempt))
        .collect();
    keys.sort();
    let mut expected: Vec<(String, u32)> = TASKS.iter().map(|t| (t.0.to_string(), 1)).collect();
    expected.sort();
    assert_eq!(keys, expected, "{label}: one result per task × attempt");
    for r in &results {
        assert_eq!(r.status, EvalResultStatus::Done, "{label}: {r:?}");
        assert!(r.outcome.resolved, "{label}: {} {:?}", r.task_id, r.outcome);
    }
    // No attempt's session is left looking alive.
    let alive: Vec<_> = store
        .list_sessions(&Default::default())
        .unwrap()
        .into_iter()
        .filter(|s| s.status.as_str() == "running")
        .collect();
    assert!(alive.is_empty(), "{label}: {alive:?}");
}

/// What a kill left, after checking it: the run's status and how many of
/// its attempts are done (`None`: killed before the run was created).
fn after_kill(
    env: &Env,
    pristine: &BTreeMap<String, Vec<u8>>,
    killed: bool,
    label: &str,
) -> Option<(EvalRunStatus, usize, usize)> {
    assert!(
        snapshot(&env.ws()) == *pristine,
        "{label}: the suite changed"
    );
    let list = env.quire().args(["eval", "list"]).output().unwrap();
    assert_eq!(list.status.code(), Some(0), "{label}: {}", stderr(&list));
    let run = the_run(env)?;
    let report = env.quire().args(["eval", "report", &run]).output().unwrap();
    assert_eq!(
        report.status.code(),
        Some(0),
        "{label}: {}",
        stderr(&report)
    );
    let store = env.store();
    let status = store.get_eval_run(&run).unwrap().unwrap().status;
    let results = store.eval_results(&run).unwrap();
    assert_eq!(results.len(), TASKS.len(), "{label}: every attempt planned");
    let count = |s: EvalResultStatus| results.iter().filter(|r| r.status == s).count();
    let (done, running) = (
        count(EvalResultStatus::Done),
        count(EvalResultStatus::Running),
    );
    match status {
        // Resumable: its owner is dead, `eval resume` takes it over.
        EvalRunStatus::Running => assert!(killed, "{label}: finished but running"),
        EvalRunStatus::Completed => assert_eq!(done, TASKS.len(), "{label}"),
        other => panic!("{label}: a killed run is {other:?}"),
    }
    Some((status, done, running))
}

/// Waits `at`, then SIGKILLs the child unless it ended by itself; true
/// when it was killed.
fn kill_at(child: &mut std::process::Child, at: Duration) -> bool {
    std::thread::sleep(at);
    let exited = child.try_wait().unwrap().is_some();
    // SIGKILL, no chance to clean up.
    let _ = child.kill();
    child.wait().unwrap();
    !exited
}

#[test]
fn kill_9_of_eval_run_at_random_points_always_resumes_to_one_result_per_attempt() {
    let seed = std::env::var("QUIRE_KILL_SEED")
        .ok()
        .and_then(|s| u64::from_str_radix(s.trim_start_matches("0x"), 16).ok())
        .unwrap_or(0xe7a1_0009_u64);
    eprintln!("seed {seed:#x} (QUIRE_KILL_SEED=<hex> replays)");
    let mut rng = Rng::new(seed);

    // Reference: one uninterrupted run, three attempts at once.
    let env = Env::new("evalsuite", ScriptedServer::start_blocking(script(seed)));
    let suite = env.ws().display().to_string();
    let pristine = snapshot(&env.ws());
    let started = Instant::now();
    let out = env.run(&["eval", "run", &suite, "--jobs", "3", "--timeout", "60"]);
    let span = started.elapsed();
    assert_eq!(out.status.code(), Some(0));
    let run = the_run(&env).unwrap();
    check_complete(&env, &run, "reference");
    assert!(snapshot(&env.ws()) == pristine, "the suite is untouched");
    eprintln!("uninterrupted eval run of {} tasks: {span:?}", TASKS.len());

    // Four runs, each killed, its resume killed, then resumed to the end;
    // alternately three attempts at once and one at a time.
    let mut outcomes: BTreeMap<String, usize> = BTreeMap::new();
    let mut kills = 0;
    for chain in 1..=4 {
        let jobs = if chain % 2 == 1 { "3" } else { "1" };
        // One at a time takes about 1.6 times as long.
        let life = span.as_millis() as usize * if jobs == "1" { 16 } else { 10 } / 10;
        let env = Env::new(
            "evalsuite",
            ScriptedServer::start_blocking(script(rng.next_u64())),
        );
        let suite = env.ws().display().to_string();
        let mut child = env
            .quire()
            .args(["eval", "run", &suite, "--jobs", jobs, "--timeout", "60"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let at = Duration::from_millis(rng.below(life + 1) as u64);
        let label = format!("seed {seed:#x} chain {chain} run (jobs {jobs}, kill at {at:?})");
        let killed = kill_at(&mut child, at);
        kills += usize::from(killed);
        let Some((status, done, running)) = after_kill(&env, &pristine, killed, &label) else {
            *outcomes
                .entry("run: killed before it was created".into())
                .or_default() += 1;
            continue;
        };
        *outcomes
            .entry(format!(
                "run: {status:?}, {done} done, {running} mid-attempt"
            ))
            .or_default() += 1;
        let run = the_run(&env).unwrap();
        if status == EvalRunStatus::Running {
            // The resume is killed in its turn, over its own (shorter) life.
            let server = ScriptedServer::start_blocking(script(rng.next_u64()));
            let mut again = env
                .quire_at(&server.openai_base_url())
                .args(["eval", "resume", &run, "--timeout", "60"])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap();
            let left = TASKS.len() - done;
            let at = Duration::from_millis(rng.below(life * left / TASKS.len() + 1) as u64);
            let label = format!("seed {seed:#x} chain {chain} resume (kill at {at:?})");
            let killed = kill_at(&mut again, at);
            kills += usize::from(killed);
            let (status, done, running) = after_kill(&env, &pristine, killed, &label).unwrap();
            *outcomes
                .entry(format!(
                    "resume: {status:?}, {done} done, {running} mid-attempt"
                ))
                .or_default() += 1;
        }
        resume_to_the_end(&env, &run, rng.next_u64(), &label);
        assert!(
            snapshot(&env.ws()) == pristine,
            "{label}: the suite changed"
        );
    }
    eprintln!(
        "eval: {kills} kills; (after each: run status, results done, attempts running): {outcomes:?}"
    );
}
