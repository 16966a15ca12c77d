//! `quire eval run --learn` end to end: the scripted model plays the coding
//! agent on the three-task fixture suite and the note-taker between tasks
//! (told apart by the note-taker's system prompt). The tasks run one after
//! another; the first session is distilled into a note before the second
//! task starts, and the second task sees it. A run killed during a
//! distillation resumes there, without redoing a session or a note. With
//! `--notes off` nothing is shown or written. `eval curve` reads two
//! stored runs.

use std::process::{Output, Stdio};
use std::time::{Duration, Instant};

use quire_store::{DistillStatus, EvalResultRow, EvalRunStatus, Store};
use quire_testkit::{Fault, RecordedRequest, Reply, Script, ScriptedServer, call};
use serde_json::{Value, json};

use crate::harness::{EVALSUITE_TASKS as TASKS, Env, note_files, quire_in, stderr, stdout};

const NOTE_TAKER: &str = "You keep the notebook of a coding agent";
const NOTE_TITLE: &str = "Layout of the mini project: one module per function under src";

fn is_note_taker(req: &RecordedRequest) -> bool {
    req.all_text().contains(NOTE_TAKER)
}

/// The task a coding request is about.
fn task_of(
    req: &RecordedRequest,
) -> &'static (
    &'static str,
    &'static str,
    &'static str,
    &'static str,
    &'static str,
) {
    let text = req.all_text();
    let found: Vec<_> = TASKS.iter().filter(|t| text.contains(t.1)).collect();
    assert_eq!(found.len(), 1, "one task per conversation: {text}");
    found[0]
}

fn assistant_turns(req: &RecordedRequest) -> usize {
    req.messages()
        .iter()
        .filter(|m| m.get("role").and_then(Value::as_str) == Some("assistant"))
        .count()
}

/// Whether the notes showed the code of the task's file with the task:
/// its header line, as the notes extension renders it.
fn code_shown(req: &RecordedRequest) -> bool {
    let (_, _, path, _, _) = task_of(req);
    req.all_text().contains(&format!("`{path}` (whole file, "))
}

/// The coding agent: read (unless the notes showed the code), edit, test,
/// finish.
fn solve(req: &RecordedRequest) -> Reply {
    let (_, _, path, old, new) = task_of(req);
    let step = assistant_turns(req) + usize::from(code_shown(req));
    match step {
        0 => Reply::ToolCalls(vec![call("read_file", json!({"path": path}))]),
        1 => Reply::ToolCalls(vec![call(
            "edit_file",
            json!({"path": path, "old": old, "new": new}),
        )]),
        2 => Reply::ToolCalls(vec![call("run_tests", json!({}))]),
        _ => Reply::ToolCalls(vec![call("finish", json!({"summary": "fixed"}))]),
    }
}

/// The note-taker: writes the project's map after the first session (the
/// tree holds no note yet), nothing after the others.
fn take_notes(req: &RecordedRequest) -> Reply {
    let first_job = req.all_text().contains(TASKS[0].1);
    match (first_job, assistant_turns(req)) {
        (true, 0) => Reply::ToolCalls(vec![call(
            "note_create",
            json!({
                "title": NOTE_TITLE,
                "kind": "architecture",
                "scope": "project",
                "topic": "layout",
                "description": "where the code and the tests of each function live",
                "body": "- src/calc.py: add\n- src/bounds.py: clamp\n- src/greet.py: greet\n- tests/: one test file per module; run them all with the test command",
                "keywords": ["layout", "src", "tests", "clamp", "greet", "range", "bound", "name"],
                // Each task is its own copy with one module: naming them as
                // provenance would flag the note stale in every task.
                "files": [],
            }),
        )]),
        _ => Reply::ToolCalls(vec![call("note_done", json!({"summary": "nothing new"}))]),
    }
}

pub fn script() -> Script {
    Script::from_fn(|req, _| {
        if is_note_taker(req) {
            take_notes(req)
        } else {
            solve(req)
        }
    })
}

fn env() -> Env {
    Env::new("evalsuite", ScriptedServer::start_blocking(script()))
}

fn suite(env: &Env) -> String {
    env.ws().display().to_string()
}

fn json_of(out: &Output) -> Value {
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}", stdout(out)))
}

fn results(env: &Env, run: &str) -> Vec<EvalResultRow> {
    env.store().eval_results(run).unwrap()
}

fn tool_names(req: &RecordedRequest) -> Vec<String> {
    req.body
        .get("tools")
        .and_then(Value::as_array)
        .map(|tools| {
            tools
                .iter()
                .filter_map(|t| t.pointer("/function/name").and_then(Value::as_str))
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

/// Index of the first request that satisfies `pred`.
fn first(requests: &[RecordedRequest], pred: impl Fn(&RecordedRequest) -> bool) -> usize {
    requests
        .iter()
        .position(pred)
        .unwrap_or_else(|| panic!("no such request among {}", requests.len()))
}

fn point_calls(point: &Value, arm: &str) -> f64 {
    point[arm]["calls"].as_f64().unwrap()
}

fn run_id(out: &Output) -> String {
    json_of(out)["run"]["id"].as_str().unwrap().to_string()
}

#[test]
fn a_learn_run_distills_each_task_before_the_next_and_the_next_sees_the_note() {
    let env = env();
    let out = env.run(&["--json", "eval", "run", &suite(&env), "--learn"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let run = run_id(&out);
    env.server.assert_clean();

    // In order: task 1's session, its note-taker, then task 2.
    let requests = env.server.requests();
    let coding = |task: usize| {
        move |r: &RecordedRequest| !is_note_taker(r) && r.all_text().contains(TASKS[task].1)
    };
    let taker_first = first(&requests, is_note_taker);
    let last_of_task1 = requests.iter().rposition(coding(0)).unwrap();
    assert!(last_of_task1 < taker_first);
    assert!(taker_first < first(&requests, coding(1)));
    let takers: Vec<usize> = requests
        .iter()
        .enumerate()
        .filter(|(_, r)| is_note_taker(r))
        .map(|(i, _)| i)
        .collect();
    assert!(
        takers.iter().all(|&i| i < first(&requests, coding(2))
            || i > requests.iter().rposition(coding(2)).unwrap()),
        "a note-taker ran while task 3's session was going on"
    );

    // The note went into the run's own tree, not the data home's.
    let run_dir = env.home.path().join("evals").join(&run);
    let notes = note_files(&run_dir.join("notes"));
    assert_eq!(notes.len(), 1, "{notes:?}");
    assert!(note_files(&env.home.path().join("notes")).is_empty());

    // Task 1 had no notes (none existed); task 2's first request shows the
    // note in full, so no notes tool rides along.
    let first1 = &requests[first(&requests, coding(0))];
    assert!(!first1.all_text().contains(NOTE_TITLE));
    let first2 = &requests[first(&requests, coding(1))];
    assert!(
        first2.all_text().contains(NOTE_TITLE),
        "{}",
        first2.all_text()
    );
    assert!(!tool_names(first2).contains(&"read_note".to_string()));
    // The note names the module of `clamp`, which the task names: its code
    // comes with the note, numbered, and the edit needs no read first.
    assert!(
        first2
            .all_text()
            .contains("`src/bounds.py` (whole file, 10 lines):\n 1| \"\"\"Keeping numbers inside a range.\"\"\""),
        "{}",
        first2.all_text()
    );
    assert!(!code_shown(first1));

    // Every result says what notes did; every session was distilled, and
    // what that cost is kept on its job.
    let rows = results(&env, &run);
    assert_eq!(
        rows.iter().map(|r| r.task_id.as_str()).collect::<Vec<_>>(),
        vec!["fix-add", "clamp-range", "greeting"]
    );
    assert!(
        rows.iter()
            .all(|r| r.outcome.resolved || r.task_id == "clamp-range")
    );
    let notes_of =
        |r: &EvalResultRow| quire_evals::NotesUse::from_details(&r.outcome.details).unwrap();
    assert!(notes_of(&rows[0]).shown.is_empty());
    assert_eq!(notes_of(&rows[0]).prompt_tokens, 0);
    let used = notes_of(&rows[1]);
    assert_eq!(used.shown.len(), 1, "{used:?}");
    assert_eq!(
        used.inlined,
        used.shown,
        "the one fresh note is inlined: {}",
        first2.all_text()
    );
    assert!(used.prompt_tokens > 100, "{used:?}");
    // The code shown is recorded with the notes, and weighed in their tokens.
    assert_eq!(used.code, vec!["src/bounds.py".to_string()]);
    assert!(used.code_chars > 100 && used.prompt_tokens > used.code_chars / 4);
    assert!(notes_of(&rows[0]).code.is_empty());
    let store = env.store();
    for (i, row) in rows.iter().enumerate() {
        let job = store
            .distill_job(row.outcome.session_id.as_ref().unwrap())
            .unwrap()
            .unwrap();
        assert_eq!(job.status, DistillStatus::Done, "{job:?}");
        assert_eq!(job.attempts, 1);
        assert!(
            job.notes_root
                .as_deref()
                .is_some_and(|r| r.ends_with("notes"))
        );
        if i == 0 {
            assert!(job.calls >= 1 && job.usage.prompt_tokens > 0, "{job:?}");
        } else {
            // Clean sessions on files the map already names teach nothing
            // new: triaged without a model call.
            assert_eq!(job.calls, 0, "{job:?}");
            assert!(
                job.summary
                    .as_deref()
                    .is_some_and(|s| s.contains("nothing new to learn")),
                "{job:?}"
            );
        }
    }
    assert_eq!(requests.iter().filter(|r| is_note_taker(r)).count(), 2);
    assert_eq!(
        store.get_eval_run(&run).unwrap().unwrap().status,
        EvalRunStatus::Completed
    );

    // `quire notes distill --pending` (the user's note-taker) has nothing
    // to do with the run's jobs.
    let out = env.run(&["notes", "distill", "--pending"]);
    assert!(
        stdout(&out).contains("no pending distillation jobs"),
        "{}",
        stdout(&out)
    );
    // People browse what the run learnt with `quire notes --run`.
    let out = env.run(&["notes", "--run", &run, "list"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stdout(&out).contains("Layout of the mini project"),
        "{}",
        stdout(&out)
    );
    let out = env.run(&["notes", "list"]);
    assert!(
        !stdout(&out).contains("Layout of the mini project"),
        "{}",
        stdout(&out)
    );
    let out = env.run(&["notes", "--run", &run, "distill", "--pending"]);
    assert_eq!(out.status.code(), Some(1));

    // The curve puts it beside a baseline, task by task, from the store.
    let out = env.run(&["--json", "eval", "run", &suite(&env), "--notes", "off"]);
    let baseline = run_id(&out);
    let base_rows = results(&env, &baseline);
    let svg = env.home.path().join("curve.svg");
    let out = env.run(&[
        "--json",
        "eval",
        "curve",
        &run,
        &baseline,
        "--svg",
        svg.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let curve = json_of(&out);
    let points = curve["points"].as_array().unwrap();
    assert_eq!(points.len(), 3);
    for (i, point) in points.iter().enumerate() {
        assert_eq!(point["position"], i + 1);
        assert_eq!(point["task_id"], rows[i].task_id.as_str());
        let learn = rows[i].outcome.usage.prompt_tokens as f64;
        let base = base_rows[i].outcome.usage.prompt_tokens as f64;
        assert_eq!(point["learn"]["prompt_tokens"].as_f64(), Some(learn));
        assert_eq!(point["baseline"]["prompt_tokens"].as_f64(), Some(base));
        assert_eq!(
            point["learn"]["calls"].as_f64(),
            Some(f64::from(rows[i].outcome.turns))
        );
    }
    let job = store
        .distill_job(rows[0].outcome.session_id.as_ref().unwrap())
        .unwrap()
        .unwrap();
    assert_eq!(
        points[0]["distill"]["prompt_tokens"].as_f64(),
        Some(job.usage.prompt_tokens as f64)
    );
    assert!(curve["totals"]["prompt_change"].is_number(), "{curve}");
    // With the code shown, the tasks after the first skip their read: one
    // call fewer than without notes, and the curve says so.
    for i in 1..3 {
        assert_eq!(
            rows[i].outcome.turns + 1,
            base_rows[i].outcome.turns,
            "{}",
            rows[i].task_id
        );
        assert!(point_calls(&points[i], "learn") < point_calls(&points[i], "baseline"));
    }
    assert_eq!(rows[0].outcome.turns, base_rows[0].outcome.turns);
    let drawn = std::fs::read_to_string(&svg).unwrap();
    assert!(
        drawn.starts_with("<svg") && drawn.contains("<polyline"),
        "{drawn}"
    );
    let out = env.run(&["eval", "curve", &run, &baseline]);
    assert!(
        stdout(&out).contains("learn vs baseline: prompt tokens"),
        "{}",
        stdout(&out)
    );
    let default_svg = env
        .home
        .path()
        .join("evals")
        .join(&run)
        .join(format!("curve-{run}.svg"));
    assert!(default_svg.is_file());
    let out = env.run(&["eval", "curve", &run, "nope"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("no eval run matches `nope`"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn notes_off_shows_and_writes_none_and_is_the_default() {
    let env = env();
    // A note in the data home that a run with notes would list.
    let out = env.run(&["--json", "eval", "run", &suite(&env), "--learn"]);
    assert_eq!(out.status.code(), Some(0));
    let learnt = run_id(&out);
    let before = env.server.requests().len();
    for args in [vec!["--notes", "off"], vec![]] {
        let mut all = vec!["--json", "eval", "run"];
        let path = suite(&env);
        all.push(&path);
        all.extend(args.iter().copied());
        let out = env.run(&all);
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        let run = run_id(&out);
        for row in results(&env, &run) {
            assert!(row.outcome.details.get("notes").is_none());
            let id = row.outcome.session_id.unwrap();
            assert!(env.store().distill_job(&id).unwrap().is_none());
        }
        assert!(
            !env.home
                .path()
                .join("evals")
                .join(&run)
                .join("notes")
                .exists()
        );
    }
    let requests = env.server.requests();
    for req in &requests[before..] {
        assert!(!is_note_taker(req));
        assert!(!req.all_text().contains(NOTE_TITLE));
        assert!(
            !tool_names(req).iter().any(|t| t.contains("note")),
            "{:?}",
            tool_names(req)
        );
    }

    // --notes from=<run> shows what that run learnt, read-only.
    let before = env.server.requests().len();
    let path = suite(&env);
    let from = format!("from={learnt}");
    let out = env.run(&["--json", "eval", "run", &path, "--notes", &from]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let run = run_id(&out);
    let requests = env.server.requests();
    assert!(requests[before..].iter().all(|r| !is_note_taker(r)));
    assert!(
        requests[before..]
            .iter()
            .any(|r| r.all_text().contains(NOTE_TITLE))
    );
    for row in results(&env, &run) {
        let id = row.outcome.session_id.unwrap();
        assert!(env.store().distill_job(&id).unwrap().is_none());
    }
    assert_eq!(
        note_files(&env.home.path().join("evals").join(&run).join("notes")).len(),
        1
    );

    // Contradictions are refused before anything runs.
    let out = env.run(&["eval", "run", &path, "--learn", "--notes", "off"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("cannot run with --notes off"),
        "{}",
        stderr(&out)
    );
    let out = env.run(&["eval", "run", &path, "--learn", "--jobs", "2"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("one at a time"), "{}", stderr(&out));
}

/// Task 1's note-taker hangs: the run is killed while it distills.
fn hanging_taker() -> Script {
    Script::from_fn(|req, _| {
        if is_note_taker(req) {
            Reply::Fault(Fault::Delay(
                Duration::from_secs(120),
                Box::new(Reply::Text("too late".into())),
            ))
        } else {
            solve(req)
        }
    })
}

#[test]
fn a_learn_run_killed_while_distilling_resumes_there_and_does_nothing_twice() {
    let env = Env::new("evalsuite", ScriptedServer::start_blocking(hanging_taker()));
    let path = suite(&env);
    let mut child = env
        .quire()
        .args(["eval", "run", &path, "--learn"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    while !env.server.requests().iter().any(is_note_taker) {
        assert!(Instant::now() < deadline, "the note-taker never started");
        std::thread::sleep(Duration::from_millis(50));
    }
    child.kill().unwrap();
    child.wait().unwrap();

    let store = Store::open(&env.home.path().join("quire.db")).unwrap();
    let run = store.list_eval_runs(None, None).unwrap()[0].run.id.clone();
    let rows = store.eval_results(&run).unwrap();
    let first_session = rows[0].outcome.session_id.clone().unwrap();
    let job = store.distill_job(&first_session).unwrap().unwrap();
    assert_eq!(
        job.status,
        DistillStatus::Running,
        "killed mid-distillation"
    );
    assert_eq!(store.list_sessions(&Default::default()).unwrap().len(), 1);

    // Resume against a model that answers: the killed job is taken over at
    // once (the run's lock proves its worker dead), then tasks 2 and 3.
    let server = ScriptedServer::start_blocking(script());
    let out = quire_in(env.home.path(), &server.openai_base_url())
        .args(["eval", "resume", &run])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    server.assert_clean();
    let requests = server.requests();
    assert!(
        is_note_taker(&requests[0]),
        "the resume starts with the distillation"
    );
    assert!(requests[0].all_text().contains(TASKS[0].1));
    assert!(
        !requests
            .iter()
            .any(|r| !is_note_taker(r) && r.all_text().contains(TASKS[0].1)),
        "task 1's session ran again"
    );
    let store = Store::open(&env.home.path().join("quire.db")).unwrap();
    assert_eq!(store.list_sessions(&Default::default()).unwrap().len(), 3);
    let job = store.distill_job(&first_session).unwrap().unwrap();
    assert_eq!(job.status, DistillStatus::Done);
    assert_eq!(job.attempts, 2);
    let run_dir = env.home.path().join("evals").join(&run);
    assert_eq!(note_files(&run_dir.join("notes")).len(), 1);
    let second = &store.eval_results(&run).unwrap()[1];
    let used = quire_evals::NotesUse::from_details(&second.outcome.details).unwrap();
    assert_eq!(
        used.shown.len(),
        1,
        "task 2 saw the note distilled on resume"
    );
    assert_eq!(
        store.get_eval_run(&run).unwrap().unwrap().status,
        EvalRunStatus::Completed
    );
}
