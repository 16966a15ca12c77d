//! Crash safety: `quire run` killed with SIGKILL at random points, many
//! times. After each kill the database opens, the session is in a state
//! `sessions resume` accepts or a final one, and the original workspace is
//! either untouched or fully patched, never half.

use std::collections::BTreeMap;
use std::time::Duration;

use quire_testkit::rng::Rng;
use quire_testkit::{Fault, Reply, Script, ScriptedServer, call};
use serde_json::json;

use crate::harness::{Env, snapshot};

const OLD: &str = "    return round(price * (100 - percent) / 100, 2)";

/// The whole run, each model answer delayed a little so kills land
/// between and inside steps (tool calls, tests, apply, post-apply tests).
fn script(rng: &mut Rng) -> Vec<Reply> {
    let replies = vec![
        Reply::ToolCalls(vec![call("read_file", json!({"path": "src/pricing.py"}))]),
        Reply::ToolCalls(vec![call(
            "edit_file",
            json!({"path": "src/pricing.py", "old": OLD,
                   "new": format!("    if not 0 <= percent <= 100:\n        raise ValueError(percent)\n{OLD}")}),
        )]),
        Reply::ToolCalls(vec![call("run_tests", json!({}))]),
        Reply::ToolCalls(vec![call("finish", json!({"summary": "range check"}))]),
    ];
    replies
        .into_iter()
        .map(|r| {
            let ms = rng.below(150) as u64;
            Reply::Fault(Fault::Delay(Duration::from_millis(ms), Box::new(r)))
        })
        .collect()
}

/// Continues a killed session from wherever it stopped, reading the
/// conversation: edit if the fix is not in yet, then test, then finish.
fn resume_script() -> Script {
    Script::from_fn(|req, _| {
        let read = || Reply::ToolCalls(vec![call("read_file", json!({"path": "src/pricing.py"}))]);
        let Some(last) = req.last_tool_result() else {
            return read();
        };
        if last.contains("def apply_discount") && last.contains("raise ValueError(percent)") {
            // The fix made before the kill is in the copy already.
            Reply::ToolCalls(vec![call("run_tests", json!({}))])
        } else if last.contains("def apply_discount") {
            Reply::ToolCalls(vec![call(
                "edit_file",
                json!({"path": "src/pricing.py", "old": OLD,
                       "new": format!("    if not 0 <= percent <= 100:\n        raise ValueError(percent)\n{OLD}")}),
            )])
        } else if last.contains("Tests passed") {
            Reply::ToolCalls(vec![call("finish", json!({"summary": "range check"}))])
        } else if last.contains("Tests failed")
            || last.contains("read_file")
            || last.contains("no change")
        {
            read()
        } else {
            Reply::ToolCalls(vec![call("run_tests", json!({}))])
        }
    })
}

#[test]
fn kill_9_at_random_points_never_leaves_a_half_patched_workspace_or_a_broken_store() {
    let mut rng = Rng::new(0x6b11_0009);
    // Reference: the run left alone, fully patched.
    let env = Env::new(
        "pricing",
        ScriptedServer::start_blocking(Script::sequence(script(&mut rng))),
    );
    let untouched = snapshot(&env.ws());
    let started = std::time::Instant::now();
    let out = env.run(&["run", env.ws().to_str().unwrap(), "--yes"]);
    // Kill points spread over the whole run, and past its end.
    let span = (started.elapsed().as_millis() as usize * 3 / 2).max(200);
    assert_eq!(out.status.code(), Some(0));
    let patched = snapshot(&env.ws());
    assert_ne!(untouched, patched);

    let mut outcomes: BTreeMap<String, usize> = BTreeMap::new();
    for round in 0..12 {
        let env = Env::new(
            "pricing",
            ScriptedServer::start_blocking(Script::sequence(script(&mut rng))),
        );
        let mut child = env
            .quire()
            .args(["run", env.ws().to_str().unwrap(), "--yes"])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let at = Duration::from_millis(rng.below(span) as u64);
        std::thread::sleep(at);
        // SIGKILL, no chance to clean up.
        let _ = child.kill();
        let _ = child.wait();

        let state = snapshot(&env.ws());
        let which = if state == untouched {
            "untouched"
        } else if state == patched {
            "patched"
        } else {
            panic!("round {round} (kill at {at:?}): the original is half patched");
        };
        let store = env.store();
        let rows = store.list_sessions(&Default::default()).unwrap();
        assert!(rows.len() <= 1, "round {round}");
        let status = match rows.first() {
            Some(row) => {
                store.events(&row.id).unwrap();
                row.status.as_str().to_string()
            }
            None => "none".to_string(),
        };
        assert!(
            ["none", "running", "interrupted", "completed"].contains(&status.as_str()),
            "round {round}: status {status}"
        );
        if status == "completed" {
            assert_eq!(which, "patched", "round {round}");
        }
        // The CLI reads the store after the crash.
        let list = env.quire().args(["sessions", "list"]).output().unwrap();
        assert_eq!(list.status.code(), Some(0), "round {round}");
        // A killed session resumes to the end and the original ends patched
        // (a change applied but not yet verified is rolled back first).
        if status == "running" {
            let server = ScriptedServer::start_blocking(resume_script());
            let id = rows[0].id.as_str().to_string();
            let out = env
                .quire_at(&server.openai_base_url())
                .args(["sessions", "resume", &id, "--yes"])
                .output()
                .unwrap();
            assert_eq!(
                out.status.code(),
                Some(0),
                "round {round}: resume\n{}\n{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
            assert!(
                snapshot(&env.ws()) == patched,
                "round {round}: resumed, not patched\n{}\n{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
        }
        *outcomes.entry(format!("{status}/{which}")).or_default() += 1;
    }
    eprintln!("kill outcomes (session status/original): {outcomes:?}");
}
