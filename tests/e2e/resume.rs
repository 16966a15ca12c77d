use std::time::{Duration, Instant};

use quire_testkit::{Fault, Reply, Script, ScriptedServer, call};
use serde_json::json;

use crate::harness::{Env, kinds, read};

/// Reads the file, then hangs on the second model call until killed.
fn hanging_script() -> Vec<Reply> {
    vec![
        Reply::ToolCalls(vec![call("read_file", json!({"path": "src/pricing.py"}))]),
        Reply::Fault(Fault::Delay(
            Duration::from_secs(60),
            Box::new(Reply::Text("too late".into())),
        )),
    ]
}

fn finishing_script() -> Vec<Reply> {
    vec![
        Reply::ToolCalls(vec![call(
            "edit_file",
            json!({"path": "src/pricing.py", "old": "    return round(price * (100 - percent) / 100, 2)",
                   "new": "    if not 0 <= percent <= 100:\n        raise ValueError(percent)\n    return round(price * (100 - percent) / 100, 2)"}),
        )]),
        Reply::ToolCalls(vec![call("run_tests", json!({}))]),
        Reply::ToolCalls(vec![call(
            "finish",
            json!({"summary": "resumed and fixed"}),
        )]),
    ]
}

/// Waits until the session has recorded a tool result (the read).
fn wait_for_tool_result(env: &Env) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while Instant::now() < deadline {
        if env.home.path().join("quire.db").exists() {
            let store = env.store();
            let requests = store
                .list_sessions(&Default::default())
                .ok()
                .and_then(|rows| {
                    rows.first()
                        .map(|row| store.events(&row.id).unwrap_or_default())
                })
                .map_or(0, |events| {
                    events.iter().filter(|e| e.kind == "model_request").count()
                });
            if requests >= 2 {
                return;
            }
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("the session never reached its second model call");
}

fn interrupt_then_resume(signal: &str, expected_status: &str) {
    let env = Env::new(
        "pricing",
        ScriptedServer::start_blocking(Script::sequence(hanging_script())),
    );
    let mut child = env
        .quire()
        .args(["run", env.ws().to_str().unwrap(), "--yes"])
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    wait_for_tool_result(&env);
    let status = std::process::Command::new("kill")
        .args([signal, &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let exit = child.wait().unwrap();
    if signal == "-INT" {
        assert_eq!(exit.code(), Some(130), "Ctrl-C stops cleanly");
    }
    let (row, events) = env.only_session();
    assert_eq!(row.status.as_str(), expected_status);
    assert!(
        kinds(&events).iter().any(|k| k == "tool_result"),
        "the read was committed before the stop"
    );

    // Resume against a fresh model that finishes the job.
    let server = ScriptedServer::start_blocking(Script::sequence(finishing_script()));
    let out = env
        .quire_at(&server.openai_base_url())
        .args(["sessions", "resume", &row.id.as_str()[..10], "--yes"])
        .output()
        .unwrap();
    eprintln!(
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(out.status.code(), Some(0));
    server.assert_clean();
    let first = &server.requests()[0];
    assert!(
        first.all_text().contains("def apply_discount"),
        "the earlier read is in the rebuilt history"
    );
    assert!(read(&env.ws().join("src/pricing.py")).contains("raise ValueError"));
    let (row, _) = env.only_session();
    assert_eq!(row.status.as_str(), "completed");
    assert_eq!(
        row.totals.iterations, 4,
        "answered model calls add up across the resume"
    );
}

#[test]
fn ctrl_c_saves_the_session_and_resume_finishes_it() {
    interrupt_then_resume("-INT", "interrupted");
}

#[test]
fn kill_9_leaves_a_resumable_session() {
    interrupt_then_resume("-KILL", "running");
}

#[test]
fn finished_sessions_are_not_resumable_and_show_reads_like_a_trace() {
    let env = Env::new(
        "pricing",
        ScriptedServer::start_blocking(Script::sequence(vec![
            Reply::ToolCalls(vec![call("read_file", json!({"path": "src/pricing.py"}))]),
            Reply::ToolCalls(vec![call("finish", json!({"summary": "nothing to do"}))]),
            Reply::ToolCalls(vec![call("finish", json!({"summary": "nothing to do"}))]),
        ])),
    );
    let out = env.run(&[
        "run",
        env.ws().to_str().unwrap(),
        "--yes",
        "-c",
        "limits.max_iterations=3",
    ]);
    assert_eq!(out.status.code(), Some(1));
    let (row, _) = env.only_session();
    let shown = env.run(&["sessions", "show", row.id.as_str()]);
    let text = String::from_utf8_lossy(&shown.stdout);
    assert!(
        text.contains("▸ read_file") && text.contains("path=\"src/pricing.py\""),
        "{text}"
    );
    assert!(text.contains("iteration cap"), "{text}");
    let listed = env.run(&["sessions", "list"]);
    assert!(String::from_utf8_lossy(&listed.stdout).contains(row.id.as_str()));
    let export = env.run(&["sessions", "export", row.id.as_str(), "--json"]);
    let value: serde_json::Value = serde_json::from_slice(&export.stdout).unwrap();
    assert_eq!(value["session"]["id"], row.id.as_str());
    assert!(value["events"].as_array().unwrap().len() > 5);
    // Failed by the cap: resumable (e.g. with a higher cap); rejected/completed would not be.
    let done = Env::new(
        "pricing",
        ScriptedServer::start_blocking(Script::sequence(vec![])),
    );
    let out = done.run(&["sessions", "resume", "01NOSUCHSESSION"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no session matches"));
}
