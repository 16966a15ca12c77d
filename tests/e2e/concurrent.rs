//! Two `quire run` processes at once on one data home, each with its own
//! model server and workspace: both finish, both sessions are complete and
//! their events are not mixed up (SQLite WAL + busy timeout).

use std::time::Duration;

use quire_testkit::{Fault, Reply, Script, ScriptedServer, call};
use serde_json::json;

use crate::harness::{Env, copy_dir, fixture};

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
