//! `quire eval` end to end: the real binary runs a three-task suite against
//! the scripted model, which solves one task, half fixes another (visible
//! tests pass, the hidden evaluation does not) and hangs on the third.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Output;
use std::time::{Duration, Instant};

use quire_store::{EvalResultRow, EvalResultStatus, EvalRunStatus, Store};
use quire_testkit::{Fault, RecordedRequest, Reply, Script, ScriptedServer, call};
use serde_json::{Value, json};

use crate::harness::{Env, read, stdout};

const ADD: &str = "fix-add";
const CLAMP: &str = "clamp-range";
const GREET: &str = "greeting";

/// Words of each task's prompt.txt that no other request contains.
const MARKERS: &[(&str, &str)] = &[
    (ADD, "returns the difference instead of the sum"),
    (CLAMP, "returns the lower bound for values above the range"),
    (GREET, "The greeting is too curt"),
];

/// What the scripted model does on the tasks that vary between tests.
#[derive(Clone, Copy)]
struct Model {
    /// Fix both clamp bugs (else only the one the visible tests see).
    clamp_full: bool,
    /// Solve the greeting task (else hang on it for this long).
    greet: Option<Duration>,
}

const HALF_FIX_AND_HANG: Model = Model {
    clamp_full: false,
    greet: Some(Duration::from_secs(120)),
};

fn tasks_in(req: &RecordedRequest) -> Vec<&'static str> {
    let text = req.all_text();
    MARKERS
        .iter()
        .filter(|(_, marker)| text.contains(marker))
        .map(|(task, _)| *task)
        .collect()
}

/// Read, edit, run the tests, finish: one step per model call, picked by how
/// many assistant turns the conversation already has (so interleaved
/// parallel sessions each get their own next step).
fn edit_test_finish(req: &RecordedRequest, path: &str, old: &str, new: &str) -> Reply {
    let step = req
        .messages()
        .iter()
        .filter(|m| m.get("role").and_then(Value::as_str) == Some("assistant"))
        .count();
    match step {
        0 => Reply::ToolCalls(vec![call("read_file", json!({"path": path}))]),
        1 => Reply::ToolCalls(vec![call(
            "edit_file",
            json!({"path": path, "old": old, "new": new}),
        )]),
        2 => Reply::ToolCalls(vec![call("run_tests", json!({}))]),
        _ => Reply::ToolCalls(vec![call("finish", json!({"summary": "done"}))]),
    }
}

fn scripted(model: Model) -> Script {
    Script::from_fn(move |req, _| {
        let tasks = tasks_in(req);
        assert_eq!(
            tasks.len(),
            1,
            "each conversation is about one task: {tasks:?}"
        );
        match tasks[0] {
            ADD => edit_test_finish(req, "src/calc.py", "    return a - b", "    return a + b"),
            CLAMP if model.clamp_full => edit_test_finish(
                req,
                "src/bounds.py",
                "    if value > high:\n        return low",
                "    if low > high:\n        raise ValueError(\"empty range\")\n    if value > high:\n        return high",
            ),
            CLAMP => edit_test_finish(
                req,
                "src/bounds.py",
                "    if value > high:\n        return low",
                "    if value > high:\n        return high",
            ),
            _ => match model.greet {
                Some(hang) => {
                    Reply::Fault(Fault::Delay(hang, Box::new(Reply::Text("too late".into()))))
                }
                None => edit_test_finish(
                    req,
                    "src/greet.py",
                    "    return \"Hello \" + name",
                    "    return f\"Hello, {name or 'stranger'}!\"",
                ),
            },
        }
    })
}

fn env(model: Model) -> Env {
    Env::new("evalsuite", ScriptedServer::start_blocking(scripted(model)))
}

fn suite(env: &Env) -> String {
    env.ws().display().to_string()
}

fn run_json(out: &Output) -> Value {
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}", stdout(out)))
}

fn by_task(rows: Vec<EvalResultRow>) -> BTreeMap<String, EvalResultRow> {
    rows.into_iter()
        .map(|r| (format!("{}#{}", r.task_id, r.attempt), r))
        .collect()
}

fn results(store: &Store, run: &str) -> BTreeMap<String, EvalResultRow> {
    by_task(store.eval_results(run).unwrap())
}

fn wait_for(what: &str, limit: Duration, mut ready: impl FnMut() -> bool) {
    let deadline = Instant::now() + limit;
    while Instant::now() < deadline {
        if ready() {
            return;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    panic!("timed out waiting for {what}");
}

/// The only run in the store (tests that start one without `--json`).
fn only_run(env: &Env) -> Option<String> {
    let path = env.home.path().join("quire.db");
    if !path.exists() {
        return None;
    }
    let runs = Store::open(&path).ok()?.list_eval_runs(None, None).ok()?;
    runs.first().map(|r| r.run.id.clone())
}

fn tree(env: &Env, run: &str, attempt: &str) -> std::path::PathBuf {
    env.home
        .path()
        .join("evals")
        .join(run)
        .join(attempt.replace('#', "-"))
}

#[test]
fn eval_check_passes_the_fixture_suite_and_names_broken_tasks() {
    let env = env(HALF_FIX_AND_HANG);
    let out = env.run(&["eval", "check", &suite(&env)]);
    assert_eq!(out.status.code(), Some(0));
    let text = stdout(&out);
    assert!(text.contains("3 tasks checked, 3 ok, 0 bad"), "{text}");

    // Break two tasks: one already solved, one with unreadable metadata.
    std::fs::write(
        env.ws().join(GREET).join("evaluation/test_greet_hidden.py"),
        "def test_nothing():\n    assert True\n",
    )
    .unwrap();
    let metadata = env.ws().join(ADD).join("metadata.json");
    let broken = read(&metadata).replace("\"difficulty\": \"easy\"", "\"difficulty\": 3");
    std::fs::write(&metadata, broken).unwrap();
    let out = env.run(&["eval", "check", &suite(&env)]);
    assert_eq!(out.status.code(), Some(1));
    let text = stdout(&out);
    assert!(text.contains("3 tasks checked, 1 ok, 2 bad"), "{text}");
    assert!(
        text.contains("hidden evaluation already passes on the untouched project"),
        "{text}"
    );
    assert!(
        text.contains("fix-add/metadata.json:5:3: `difficulty` must be a non-empty string"),
        "{text}"
    );
    let out = env.run(&["--json", "eval", "check", &suite(&env), "--task", GREET]);
    let value = run_json(&out);
    assert_eq!(value["tasks"][0]["id"], GREET);
    assert_eq!(value["tasks"][0]["ok"], false);

    // A run refuses a task whose metadata is unusable, before starting.
    let out = env.run(&["eval", "run", &suite(&env), "--task", ADD]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("metadata.json:5:3"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn a_run_records_resolved_hidden_failed_and_timeout_then_reports_and_compares() {
    let env = env(HALF_FIX_AND_HANG);
    let original_calc = read(&env.ws().join(ADD).join("src/calc.py"));
    let started = Instant::now();
    // 10 s: long enough for the other tasks on a loaded 2-core machine.
    let out = env.run(&["--json", "eval", "run", &suite(&env), "--timeout", "10"]);
    assert_eq!(out.status.code(), Some(0));
    assert!(
        started.elapsed() < Duration::from_secs(60),
        "the hang was cut"
    );
    env.server.assert_clean();
    let report = run_json(&out);
    let run_a = report["run"]["id"].as_str().unwrap().to_string();
    assert_eq!(report["totals"]["resolved"], 1);
    assert_eq!(report["totals"]["done"], 3);

    let store = env.store();
    let run = store.get_eval_run(&run_a).unwrap().unwrap();
    assert_eq!(run.status, EvalRunStatus::Completed);
    assert_eq!((run.suite.as_str(), run.split.as_str()), ("mini", "test"));
    assert_eq!((run.agent.as_str(), run.timeout_secs), ("default", 10));
    let rows = results(&store, &run_a);
    assert_eq!(rows.len(), 3);

    let add = &rows["fix-add#1"];
    assert_eq!(add.status, EvalResultStatus::Done);
    assert!(add.outcome.resolved);
    assert_eq!(add.outcome.category, "resolved");
    assert_eq!(
        (add.outcome.visible_passed, add.outcome.visible_failed),
        (Some(2), Some(0))
    );
    assert_eq!(
        (add.outcome.hidden_passed, add.outcome.hidden_failed),
        (Some(2), Some(0))
    );
    assert_eq!((add.outcome.turns, add.outcome.tool_calls), (4, 4));
    assert!(add.outcome.usage.prompt_tokens > 0 && add.outcome.usage.completion_tokens > 0);
    let session = add
        .outcome
        .session_id
        .clone()
        .expect("linked to its session");
    let session = store.get_session(&session).unwrap().unwrap();
    assert_eq!(session.status.as_str(), "completed");
    assert_eq!(session.project, "mini");
    assert_eq!(session.totals.usage, add.outcome.usage);

    let clamp = &rows["clamp-range#1"];
    assert!(!clamp.outcome.resolved);
    assert_eq!(clamp.outcome.category, "hidden_failed");
    assert_eq!(
        (clamp.outcome.visible_passed, clamp.outcome.visible_failed),
        (Some(3), Some(0))
    );
    assert_eq!(
        (clamp.outcome.hidden_passed, clamp.outcome.hidden_failed),
        (Some(1), Some(1))
    );

    let greet = &rows["greeting#1"];
    assert!(!greet.outcome.resolved);
    assert_eq!(greet.outcome.category, "timeout");
    assert!(
        greet
            .outcome
            .error
            .as_deref()
            .unwrap_or("")
            .contains("timed out after 10s"),
        "{:?}",
        greet.outcome.error
    );
    assert_eq!(greet.outcome.hidden_failed, Some(2));
    assert!(greet.outcome.wall_ms >= 10_000);
    let hung = store
        .get_session(greet.outcome.session_id.as_ref().expect("linked"))
        .unwrap()
        .unwrap();
    assert_eq!(hung.status.as_str(), "interrupted");

    // Each attempt had its own tree; the suite itself is untouched.
    assert!(read(&tree(&env, &run_a, "fix-add#1").join("src/calc.py")).contains("a + b"));
    assert!(tree(&env, &run_a, "fix-add#1").join("evaluation").is_dir());
    assert!(
        !tree(&env, &run_a, "fix-add#1")
            .join("solution.patch")
            .exists()
    );
    assert_eq!(read(&env.ws().join(ADD).join("src/calc.py")), original_calc);

    // The report.
    let out = env.run(&["eval", "report", &run_a]);
    let text = stdout(&out);
    assert!(
        text.contains("1/3 resolved (33.3%, 95% CI 6.1%–79.2%)"),
        "{text}"
    );
    for expected in [
        "fix-add#1",
        "resolved",
        "hidden_failed",
        "timeout",
        "mean per attempt",
    ] {
        assert!(text.contains(expected), "{expected} in {text}");
    }
    let out = env.run(&["eval", "report", &run_a[..12], "--markdown"]);
    let md = stdout(&out);
    assert!(
        md.contains("| `clamp-range#1` | hidden_failed | 3/3 | 1/2 |"),
        "{md}"
    );
    let out = env.run(&["--json", "eval", "report", "last"]);
    let value = run_json(&out);
    let ci = value["totals"]["ci95"].as_array().unwrap();
    assert!((ci[0].as_f64().unwrap() - 0.0615).abs() < 1e-3, "{ci:?}");
    assert!((ci[1].as_f64().unwrap() - 0.7923).abs() < 1e-3, "{ci:?}");

    // A second run whose model fixes clamp fully: one flip.
    let server = ScriptedServer::start_blocking(scripted(Model {
        clamp_full: true,
        ..HALF_FIX_AND_HANG
    }));
    let out = env
        .quire_at(&server.openai_base_url())
        .args(["--json", "eval", "run", &suite(&env), "--timeout", "10"])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let run_b = run_json(&out)["run"]["id"].as_str().unwrap().to_string();
    let out = env.run(&["--json", "eval", "compare", &run_a, &run_b]);
    let cmp = run_json(&out);
    assert_eq!(cmp["gained"], json!(["clamp-range#1"]));
    assert_eq!(cmp["lost"], json!([]));
    assert_eq!(cmp["pairs"].as_array().unwrap().len(), 3);
    assert!((cmp["rate_diff"].as_f64().unwrap() - 1.0 / 3.0).abs() < 1e-9);
    let ci = cmp["rate_diff_ci95"].as_array().unwrap();
    assert!(
        ci[0].as_f64().unwrap() >= 0.0 && ci[1].as_f64().unwrap() >= 1.0 / 3.0,
        "{ci:?}"
    );
    let out = env.run(&["eval", "compare", &run_a, &run_b]);
    let text = stdout(&out);
    assert!(text.contains("1 gained (clamp-range#1) · 0 lost"), "{text}");
    assert!(text.contains("33.3% → 66.7%"), "{text}");
    let out = env.run(&["eval", "compare", &run_a, &run_b, "--markdown"]);
    assert!(stdout(&out).contains("| `clamp-range#1` | hidden_failed | resolved | gained |"));

    // Both runs are listed, newest first, with their headline figures.
    let out = env.run(&["eval", "list"]);
    let text = stdout(&out);
    let (a_at, b_at) = (text.find(&run_a).unwrap(), text.find(&run_b).unwrap());
    assert!(b_at < a_at, "{text}");
    assert!(
        text.contains("1/3") && text.contains("2/3") && text.contains("mini/test"),
        "{text}"
    );
}

#[test]
fn a_killed_run_resumes_with_only_what_is_missing() {
    let env = env(HALF_FIX_AND_HANG);
    let mut child = env
        .quire()
        .args(["eval", "run", &suite(&env), "--timeout", "300"])
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // Wait until the first two are done and the third hangs in its model call.
    wait_for(
        "two results and the third running",
        Duration::from_secs(60),
        || {
            let Some(run) = only_run(&env) else {
                return false;
            };
            let rows = results(&env.store(), &run);
            let done = rows
                .values()
                .filter(|r| r.status == EvalResultStatus::Done)
                .count();
            done == 2
                && rows["greeting#1"].status == EvalResultStatus::Running
                && env.server.requests().iter().any(|r| tasks_in(r) == [GREET])
        },
    );
    child.kill().unwrap();
    child.wait().unwrap();
    let run = only_run(&env).unwrap();
    let before = results(&env.store(), &run);
    assert_eq!(before["greeting#1"].status, EvalResultStatus::Running);
    assert_eq!(
        env.store().get_eval_run(&run).unwrap().unwrap().status,
        EvalRunStatus::Running
    );

    let server = ScriptedServer::start_blocking(scripted(Model {
        clamp_full: false,
        greet: None,
    }));
    let out = env
        .quire_at(&server.openai_base_url())
        .args(["eval", "resume", &run[..10]])
        .output()
        .unwrap();
    let text = stdout(&out);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.contains("resuming: 1 of 3 attempts to do"), "{text}");
    server.assert_clean();
    assert!(
        server.requests().iter().all(|r| tasks_in(r) == [GREET]),
        "only the missing task ran again"
    );
    let after = results(&env.store(), &run);
    for done in ["fix-add#1", "clamp-range#1"] {
        assert_eq!(after[done], before[done], "{done} was not rerun");
    }
    let greet = &after["greeting#1"];
    assert!(greet.outcome.resolved, "{greet:?}");
    assert_eq!(greet.outcome.category, "resolved");
    assert_eq!(
        env.store().get_eval_run(&run).unwrap().unwrap().status,
        EvalRunStatus::Completed
    );
    // The killed attempt's session is not left looking alive.
    let store = env.store();
    let killed: Vec<_> = store
        .list_sessions(&Default::default())
        .unwrap()
        .into_iter()
        .filter(|s| s.status.as_str() == "running")
        .collect();
    assert!(killed.is_empty(), "{killed:?}");
    let out = env.run(&["eval", "report", &run]);
    assert!(stdout(&out).contains("2/3 resolved"), "{}", stdout(&out));
}

#[test]
fn ctrl_c_stops_a_run_cleanly_and_resume_finishes_it() {
    let env = env(HALF_FIX_AND_HANG);
    let mut child = env
        .quire()
        .args([
            "eval",
            "run",
            &suite(&env),
            "--task",
            GREET,
            "--timeout",
            "300",
        ])
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    wait_for("the hanging model call", Duration::from_secs(60), || {
        !env.server.requests().is_empty()
    });
    let status = std::process::Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let exit = child.wait().unwrap();
    assert_eq!(exit.code(), Some(130));
    let run = only_run(&env).unwrap();
    let store = env.store();
    assert_eq!(
        store.get_eval_run(&run).unwrap().unwrap().status,
        EvalRunStatus::Interrupted
    );
    let rows = results(&store, &run);
    assert_eq!(rows.len(), 1);
    assert_eq!(rows["greeting#1"].status, EvalResultStatus::Pending);

    let server = ScriptedServer::start_blocking(scripted(Model {
        clamp_full: false,
        greet: None,
    }));
    let out = env
        .quire_at(&server.openai_base_url())
        .args(["--quiet", "eval", "resume", "last"])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout(&out).contains("1/1 resolved"), "{}", stdout(&out));
    let out = env.run(&["eval", "resume", &run]);
    assert_eq!(out.status.code(), Some(0));
}

#[test]
fn parallel_jobs_give_the_same_results_without_cross_talk() {
    let env = env(HALF_FIX_AND_HANG);
    let mut runs = Vec::new();
    for jobs in ["1", "3"] {
        let out = env.run(&[
            "--json",
            "eval",
            "run",
            &suite(&env),
            "--jobs",
            jobs,
            "--timeout",
            "10",
        ]);
        assert_eq!(out.status.code(), Some(0));
        runs.push(run_json(&out)["run"]["id"].as_str().unwrap().to_string());
    }
    env.server.assert_clean();
    // Every request the model saw was about exactly one task (asserted in
    // the script too), and each task's conversations stayed its own.
    for req in env.server.requests() {
        assert_eq!(tasks_in(&req).len(), 1);
    }
    let store = env.store();
    let serial = results(&store, &runs[0]);
    let parallel = results(&store, &runs[1]);
    assert_eq!(
        serial.keys().collect::<Vec<_>>(),
        parallel.keys().collect::<Vec<_>>()
    );
    for (key, s) in &serial {
        let p = &parallel[key];
        let view = |r: &EvalResultRow| {
            let o = &r.outcome;
            (
                o.resolved,
                o.category.clone(),
                o.visible_passed,
                o.visible_failed,
                o.hidden_passed,
                o.hidden_failed,
                o.turns,
                o.tool_calls,
            )
        };
        assert_eq!(view(s), view(p), "{key}");
        assert_ne!(s.outcome.session_id, p.outcome.session_id);
    }
    // They really ran at the same time: all three started before any ended.
    let last_start = parallel
        .values()
        .filter_map(|r| r.started_at)
        .max()
        .unwrap();
    let first_end = parallel.values().filter_map(|r| r.ended_at).min().unwrap();
    assert!(last_start < first_end, "{last_start} !< {first_end}");
    // Each tree holds its own task's change and nothing of the others'.
    let run = &runs[1];
    assert!(read(&tree(&env, run, "fix-add#1").join("src/calc.py")).contains("a + b"));
    assert!(!tree(&env, run, "fix-add#1").join("src/bounds.py").exists());
    let bounds = read(&tree(&env, run, "clamp-range#1").join("src/bounds.py"));
    assert!(bounds.contains("return high") && !bounds.contains("ValueError"));
    assert!(
        !tree(&env, run, "clamp-range#1")
            .join("src/calc.py")
            .exists()
    );
    assert_eq!(
        read(&tree(&env, run, "greeting#1").join("src/greet.py")),
        read(&env.ws().join(GREET).join("src/greet.py"))
    );
    for (key, row) in &parallel {
        let session = store
            .get_session(row.outcome.session_id.as_ref().unwrap())
            .unwrap()
            .unwrap();
        let expected = tree(&env, run, key).canonicalize().unwrap();
        assert_eq!(Path::new(&session.workspace), expected, "{key}");
    }
    let out = env.run(&["--json", "eval", "compare", &runs[0], &runs[1]]);
    let cmp = run_json(&out);
    assert_eq!(
        (cmp["gained"].clone(), cmp["lost"].clone()),
        (json!([]), json!([]))
    );
    assert_eq!(cmp["rate_diff"], 0.0);
}

#[test]
fn a_task_named_without_a_split_runs_from_the_split_that_lists_it() {
    // `sum-total` is in the meta suite's train split, not the default test split.
    let env = Env::new(
        "metasuite",
        ScriptedServer::start_blocking(Script::sequence(vec![Reply::ToolCalls(vec![call(
            "finish",
            json!({"summary": "nothing to change"}),
        )])])),
    );
    let out = env.run(&["--json", "eval", "run", &suite(&env), "--task", "sum-total"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let run_id = run_json(&out)["run"]["id"].as_str().unwrap().to_string();
    let store = env.store();
    let run = store.get_eval_run(&run_id).unwrap().unwrap();
    assert_eq!(run.split, "train");
    let rows = results(&store, &run_id);
    assert_eq!(rows.keys().collect::<Vec<_>>(), vec!["sum-total#1"]);
    assert_eq!(rows["sum-total#1"].status, EvalResultStatus::Done);

    // An explicit split still means that split, and says where the task is.
    let out = env.run(&[
        "eval",
        "run",
        &suite(&env),
        "--split",
        "test",
        "--task",
        "sum-total",
    ]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("use --split train"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
