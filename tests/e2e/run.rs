use quire_testkit::{Reply, Script, ScriptedCall, ScriptedServer, call};
use serde_json::json;

use crate::harness::{Env, kinds, read, stdout};

const OLD_LINE: &str = "    return round(price * (100 - percent) / 100, 2)";

fn fix_negative() -> ScriptedCall {
    call(
        "edit_file",
        json!({
            "path": "src/pricing.py",
            "old": OLD_LINE,
            "new": "    if percent < 0:\n        raise ValueError(\"percent must be between 0 and 100\")\n    return round(price * (100 - percent) / 100, 2)",
        }),
    )
}

fn happy_script() -> Vec<Reply> {
    vec![
        Reply::ToolCalls(vec![call("read_file", json!({"path": "src/pricing.py"}))]),
        Reply::TextAndToolCalls("Reject negative percentages.".into(), vec![fix_negative()]),
        Reply::ToolCalls(vec![call("run_tests", json!({}))]),
        Reply::ToolCalls(vec![call(
            "finish",
            json!({"summary": "apply_discount rejects negative percentages"}),
        )]),
    ]
}

fn pytest_passes(dir: &std::path::Path) -> bool {
    std::process::Command::new("python3")
        .args(["-m", "pytest", "-q", "-p", "no:cacheprovider"])
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .current_dir(dir)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .unwrap()
        .success()
}

#[test]
fn reads_edits_tests_finishes_and_the_change_lands_in_the_original() {
    let env = Env::new(
        "pricing",
        ScriptedServer::start_blocking(Script::sequence(happy_script())),
    );
    std::fs::write(
        env.ws().join("AGENTS.md"),
        "Keep functions pure; raise ValueError for bad input.",
    )
    .unwrap();
    assert!(!pytest_passes(&env.ws()));
    let out = env.run(&["run", env.ws().to_str().unwrap(), "--yes"]);
    assert_eq!(out.status.code(), Some(0));
    env.server.assert_clean();

    let source = read(&env.ws().join("src/pricing.py"));
    assert!(source.contains("raise ValueError"), "{source}");
    assert!(pytest_passes(&env.ws()), "tests green in the original");

    let requests = env.server.requests();
    assert_eq!(requests.len(), 4);
    let first = requests[0].all_text();
    assert!(
        first.contains("apply_discount` accepts negative percentages"),
        "task in the first request"
    );
    assert!(
        first.contains("Keep functions pure"),
        "AGENTS.md guidance in the first request"
    );
    assert!(
        first.contains("src/") && first.contains("pricing.py"),
        "file tree in the first request"
    );
    let test_result = requests[3].last_tool_result().unwrap();
    assert!(
        test_result.contains("passed"),
        "run_tests digest: {test_result}"
    );
    assert!(
        !test_result.contains("=== test session starts"),
        "the model gets a digest, not the raw log: {test_result}"
    );

    let (row, events) = env.only_session();
    assert_eq!(row.status.as_str(), "completed");
    assert_eq!(row.totals.iterations, 4);
    assert_eq!(row.totals.tool_calls, 4);
    assert!(row.totals.usage.prompt_tokens > 0 && row.totals.usage.completion_tokens > 0);
    let k = kinds(&events);
    for expected in [
        "session_started",
        "system_prompt",
        "user_message",
        "model_request",
        "model_response",
        "tool_call_started",
        "tool_result",
        "patch",
        "approval",
        "applied",
        "test_run",
        "session_ended",
    ] {
        assert!(
            k.iter().any(|x| x == expected),
            "missing {expected} in {k:?}"
        );
    }
    assert_eq!(k.first().map(String::as_str), Some("session_started"));
    assert_eq!(k.last().map(String::as_str), Some("session_ended"));
    let seqs: Vec<u64> = events.iter().map(|e| e.seq).collect();
    assert_eq!(
        seqs,
        (1..=events.len() as u64).collect::<Vec<_>>(),
        "dense ordered seqs"
    );
    assert!(
        stdout(&out).contains("session completed"),
        "{}",
        stdout(&out)
    );
}

#[test]
fn a_failing_post_apply_test_rolls_back_and_the_agent_tries_again() {
    let mut script = happy_script();
    script.extend([
        Reply::ToolCalls(vec![call(
            "edit_file",
            json!({"path": "src/pricing.py", "old": "    if percent < 0:", "new": "    if percent < 0 or percent > 100:"}),
        )]),
        Reply::ToolCalls(vec![call("run_tests", json!({}))]),
        Reply::ToolCalls(vec![call("finish", json!({"summary": "also reject over 100"}))]),
    ]);
    let env = Env::new(
        "pricing",
        ScriptedServer::start_blocking(Script::sequence(script)),
    );
    // Only the original has the flag (it is gitignored, so never copied): its
    // stricter test fails after the first apply.
    std::fs::write(env.ws().join("strict.flag"), "").unwrap();
    let original = read(&env.ws().join("src/pricing.py"));
    let out = env.run(&["run", env.ws().to_str().unwrap(), "--yes"]);
    assert_eq!(out.status.code(), Some(0));
    env.server.assert_clean();
    let requests = env.server.requests();
    let told = requests[4].last_user_text().unwrap();
    assert!(
        told.contains("rolled back") && told.contains("test_strict_rejects_over_100"),
        "{told}"
    );
    let final_source = read(&env.ws().join("src/pricing.py"));
    assert_ne!(final_source, original);
    assert!(final_source.contains("percent > 100"));
    let (_, events) = env.only_session();
    let k = kinds(&events);
    assert_eq!(k.iter().filter(|x| *x == "applied").count(), 2);
    assert_eq!(k.iter().filter(|x| *x == "rolled_back").count(), 1);
}

#[test]
fn rollback_restores_the_original_exactly_when_attempts_run_out() {
    let env = Env::new(
        "pricing",
        ScriptedServer::start_blocking(Script::sequence(happy_script())),
    );
    std::fs::write(env.ws().join("strict.flag"), "").unwrap();
    let before = read(&env.ws().join("src/pricing.py"));
    let out = env.run(&[
        "run",
        env.ws().to_str().unwrap(),
        "--yes",
        "-c",
        "limits.max_post_apply_attempts=0",
    ]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        read(&env.ws().join("src/pricing.py")),
        before,
        "byte for byte"
    );
    let (row, _) = env.only_session();
    assert_eq!(row.status.as_str(), "failed");
    assert!(row.outcome.unwrap().contains("post-apply tests failed"));
}

#[test]
fn a_patch_that_needs_repair_is_repaired_and_applied() {
    // Fenced, prose before the header, stale hunk counts.
    let patch = "Here is the fix:\n```diff\n--- a/src/pricing.py\n+++ b/src/pricing.py\n@@ -3,6 +3,9 @@\n \n def apply_discount(price: float, percent: float) -> float:\n     \"\"\"Price after taking `percent` off.\"\"\"\n+    if not 0 <= percent <= 100:\n+        raise ValueError(\"percent out of range\")\n     return round(price * (100 - percent) / 100, 2)\n```\n";
    let script = vec![
        Reply::ToolCalls(vec![call("read_file", json!({"path": "src/pricing.py"}))]),
        Reply::ToolCalls(vec![call("apply_patch", json!({"patch": patch}))]),
        Reply::ToolCalls(vec![call("run_tests", json!({}))]),
        Reply::ToolCalls(vec![call("finish", json!({"summary": "range check"}))]),
    ];
    let env = Env::new(
        "pricing",
        ScriptedServer::start_blocking(Script::sequence(script)),
    );
    let out = env.run(&["run", env.ws().to_str().unwrap(), "--yes"]);
    assert_eq!(out.status.code(), Some(0));
    let result = env.server.requests()[2].last_tool_result().unwrap();
    assert!(!result.to_lowercase().contains("did not apply"), "{result}");
    assert!(read(&env.ws().join("src/pricing.py")).contains("percent out of range"));
    assert!(pytest_passes(&env.ws()));
}

#[test]
fn paths_outside_the_workspace_are_refused() {
    let script = vec![
        Reply::ToolCalls(vec![
            call("read_file", json!({"path": "../../../../etc/passwd"})),
            call("read_file", json!({"path": "/etc/passwd"})),
            call("list_files", json!({"path": ".."})),
            call(
                "write_file",
                json!({"path": "../escaped.txt", "content": "x"}),
            ),
            call("read_file", json!({"path": "outside/passwd"})),
        ]),
        Reply::ToolCalls(vec![call("finish", json!({"summary": "nothing"}))]),
    ];
    let env = Env::new(
        "pricing",
        ScriptedServer::start_blocking(Script::sequence(script)),
    );
    std::os::unix::fs::symlink("/etc", env.ws().join("outside")).unwrap();
    let out = env.run(&[
        "run",
        env.ws().to_str().unwrap(),
        "--yes",
        "-c",
        "limits.max_iterations=2",
    ]);
    assert_eq!(out.status.code(), Some(1), "iteration cap, nothing changed");
    let requests = env.server.requests();
    let all = requests[1].all_text();
    assert!(
        !all.contains("root:x:0:0"),
        "no file outside the workspace was read"
    );
    assert!(!env.ws_parent.path().join("escaped.txt").exists());
    let msgs = requests[1].messages();
    let results: Vec<String> = msgs
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["content"].as_str().unwrap_or("").to_string())
        .collect();
    assert_eq!(results.len(), 5);
    for r in &results {
        assert!(
            r.contains("outside the workspace") || r.contains("No file"),
            "refused: {r}"
        );
    }
    let finish = requests.len();
    assert_eq!(finish, 2);
}

#[test]
fn no_apply_saves_the_patch_and_leaves_the_original_untouched() {
    let env = Env::new(
        "pricing",
        ScriptedServer::start_blocking(Script::sequence(happy_script())),
    );
    let before = read(&env.ws().join("src/pricing.py"));
    let out = env.run(&[
        "run",
        env.ws().to_str().unwrap(),
        "--yes",
        "--no-apply",
        "--json",
    ]);
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(read(&env.ws().join("src/pricing.py")), before);
    let value: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    let patch_path = value["patch_path"].as_str().unwrap();
    let patch = read(std::path::Path::new(patch_path));
    assert!(
        patch.contains("+++ b/src/pricing.py") && patch.contains("+        raise ValueError"),
        "{patch}"
    );
}

#[test]
fn the_user_can_reject_or_send_feedback_from_the_terminal() {
    let mut script = happy_script();
    script.extend([
        Reply::ToolCalls(vec![call(
            "edit_file",
            json!({"path": "src/pricing.py", "old": "    if percent < 0:", "new": "    if percent < 0 or percent > 100:"}),
        )]),
        Reply::ToolCalls(vec![call("run_tests", json!({}))]),
        Reply::ToolCalls(vec![call("finish", json!({"summary": "both bounds"}))]),
    ]);
    let env = Env::new(
        "pricing",
        ScriptedServer::start_blocking(Script::sequence(script)),
    );
    let mut child = env
        .quire()
        .args(["run", env.ws().to_str().unwrap()])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    child
        .stdin
        .as_mut()
        .unwrap()
        .write_all(b"f\nAlso reject percentages above 100.\ny\n")
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    let requests = env.server.requests();
    let feedback = requests[4].last_user_text().unwrap();
    assert!(
        feedback.contains("Also reject percentages above 100."),
        "{feedback}"
    );
    assert!(read(&env.ws().join("src/pricing.py")).contains("percent > 100"));

    let env = Env::new(
        "pricing",
        ScriptedServer::start_blocking(Script::sequence(happy_script())),
    );
    let before = read(&env.ws().join("src/pricing.py"));
    let mut child = env
        .quire()
        .args(["run", env.ws().to_str().unwrap()])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.as_mut().unwrap().write_all(b"n\n").unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(read(&env.ws().join("src/pricing.py")), before);
    assert_eq!(env.only_session().0.status.as_str(), "rejected");
}

#[test]
fn a_recorded_run_replays_offline_and_divergence_fails_loudly() {
    let env = Env::new(
        "pricing",
        ScriptedServer::start_blocking(Script::sequence(happy_script())),
    );
    let recording = env.home.path().join("rec.jsonl");
    let out = env.run(&[
        "run",
        env.ws().to_str().unwrap(),
        "--yes",
        "--no-apply",
        "--record",
        recording.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(read(&recording).lines().count(), 4);

    // Replay: a server with an empty script would fail any real call.
    let replay_env = Env::new(
        "pricing",
        ScriptedServer::start_blocking(Script::sequence(vec![])),
    );
    let out = replay_env.run(&[
        "run",
        replay_env.ws().to_str().unwrap(),
        "--yes",
        "--replay",
        recording.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0));
    assert!(
        replay_env.server.requests().is_empty(),
        "replay made no HTTP call"
    );
    assert!(read(&replay_env.ws().join("src/pricing.py")).contains("raise ValueError"));

    // A different workspace takes another path: the replay must refuse.
    let diverge = Env::new(
        "pricing",
        ScriptedServer::start_blocking(Script::sequence(vec![])),
    );
    std::fs::write(
        diverge.ws().join("src/pricing.py"),
        "def apply_discount(p, q):\n    return p\n",
    )
    .unwrap();
    let out = diverge.run(&[
        "run",
        diverge.ws().to_str().unwrap(),
        "--yes",
        "--replay",
        recording.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(1));
    let (row, _) = diverge.only_session();
    assert!(
        row.outcome
            .unwrap_or_default()
            .to_lowercase()
            .contains("replay")
    );
}

#[test]
fn a_model_that_keeps_breaking_the_protocol_fails_the_session_with_the_reason() {
    let script = vec![
        Reply::ToolCalls(vec![ScriptedCall {
            name: "read_file".into(),
            arguments: "{\"path\": src/pricing.py}".into(),
        }]),
        Reply::ToolCalls(vec![call("read_file", json!({"path": "src/pricing.py"}))]),
        Reply::Text("The fix is obvious, I will describe it.".into()),
        Reply::Text("As I said, change the function.".into()),
        Reply::ToolCalls(vec![call("delete_everything", json!({}))]),
    ];
    let env = Env::new(
        "pricing",
        ScriptedServer::start_blocking(Script::sequence(script)),
    );
    let out = env.run(&[
        "run",
        env.ws().to_str().unwrap(),
        "--yes",
        "-c",
        "limits.max_protocol_repairs=2",
    ]);
    assert_eq!(out.status.code(), Some(1));
    env.server.assert_clean();
    let requests = env.server.requests();
    assert!(
        requests[1]
            .last_tool_result()
            .unwrap()
            .contains("not a valid JSON object")
    );
    assert!(
        requests[3]
            .last_user_text()
            .unwrap()
            .contains("without calling a tool")
    );
    let (row, events) = env.only_session();
    assert_eq!(row.status.as_str(), "failed");
    let outcome = row.outcome.unwrap();
    assert!(
        outcome.contains("broke the tool protocol 3 times"),
        "{outcome}"
    );
    assert_eq!(
        kinds(&events)
            .iter()
            .filter(|k| *k == "protocol_repair")
            .count(),
        4
    );
}

#[test]
fn a_file_changed_in_the_original_meanwhile_blocks_the_apply_and_is_named() {
    let ws_path = std::sync::Arc::new(std::sync::Mutex::new(std::path::PathBuf::new()));
    let seen = ws_path.clone();
    let replies = happy_script();
    let server = ScriptedServer::start_blocking(Script::from_fn(move |_, i| {
        if i == 3 {
            // The user edits the file in their workspace while the agent works.
            let ws = seen.lock().unwrap().clone();
            std::fs::write(
                ws.join("src/pricing.py"),
                "# edited by the user meanwhile\n",
            )
            .unwrap();
        }
        replies
            .get(i)
            .cloned()
            .unwrap_or_else(|| Reply::Text("done".into()))
    }));
    let env = Env::new("pricing", server);
    *ws_path.lock().unwrap() = env.ws();
    let out = env.run(&["run", env.ws().to_str().unwrap(), "--yes"]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        read(&env.ws().join("src/pricing.py")),
        "# edited by the user meanwhile\n",
        "nothing applied over the user's edit"
    );
    let (row, events) = env.only_session();
    let outcome = row.outcome.unwrap();
    assert!(
        outcome.contains("src/pricing.py"),
        "names the file: {outcome}"
    );
    assert!(!kinds(&events).iter().any(|k| k == "applied"));
}

/// A stream that starts and stalls past the idle limit is retried; the user
/// sees one line, the trajectory keeps both attempts and their tokens, and
/// the session's totals count the stalled attempt's prompt too.
#[test]
fn a_stalled_stream_is_retried_visibly_and_both_attempts_are_recorded() {
    let mut script = vec![Reply::Fault(quire_testkit::Fault::StallStream)];
    script.extend(happy_script());
    let env = Env::new(
        "pricing",
        ScriptedServer::start_blocking(Script::sequence(script)),
    );
    let out = env
        .quire_at(&env.server.anthropic_base_url())
        .args([
            "--provider",
            "anthropic",
            "-c",
            "model.stream_idle_timeout_secs=1",
        ])
        .args(["run", env.ws().to_str().unwrap(), "--yes"])
        .output()
        .unwrap();
    let (out_text, err_text) = (stdout(&out), crate::harness::stderr(&out));
    assert_eq!(out.status.code(), Some(0), "{out_text}\n{err_text}");
    let shown = format!("{out_text}{err_text}");
    assert_eq!(
        shown
            .matches("model did not answer in 1 s; retrying 2/5")
            .count(),
        1,
        "{shown}"
    );
    assert!(
        !shown.contains("model request failed; retrying"),
        "no log line besides: {shown}"
    );

    let (session, events) = env.only_session();
    let kinds = kinds(&events);
    let first_request = kinds.iter().position(|k| k == "model_request").unwrap();
    assert_eq!(
        kinds[first_request..first_request + 3],
        ["model_request", "model_retry", "model_response"]
    );
    let retry = &events[first_request + 1].event.kind;
    let quire_types::EventKind::ModelRetry {
        failed_attempt,
        max_attempts,
        timed_out_after_secs,
        usage: stalled,
        ..
    } = retry
    else {
        panic!("{retry:?}");
    };
    assert_eq!((*failed_attempt, *max_attempts), (1, 5));
    assert_eq!(*timed_out_after_secs, Some(1.0));
    assert!(
        stalled.prompt_tokens > 0,
        "the stalled attempt's tokens: {stalled:?}"
    );
    let answered: u64 = events
        .iter()
        .filter_map(|e| match &e.event.kind {
            quire_types::EventKind::ModelResponse { usage, .. } => Some(usage.prompt_tokens),
            _ => None,
        })
        .sum();
    assert_eq!(
        session.totals.usage.prompt_tokens,
        answered + stalled.prompt_tokens
    );
    assert_eq!(
        env.server.requests().len(),
        5,
        "four steps, one of them sent twice"
    );
}

#[test]
fn a_test_runner_that_is_not_installed_ends_the_session_with_the_cause_not_a_loop() {
    let script = vec![
        Reply::ToolCalls(vec![fix_negative(), call("run_tests", json!({}))]),
        // Never asked for: the session ends at the failed run.
        Reply::ToolCalls(vec![call("finish", json!({"summary": "unreachable"}))]),
    ];
    let env = Env::new(
        "pricing",
        ScriptedServer::start_blocking(Script::sequence(script)),
    );
    let original = read(&env.ws().join("src/pricing.py"));
    let out = env.run(&[
        "run",
        env.ws().to_str().unwrap(),
        "--yes",
        "-c",
        "tests.command=python3 -m quire_no_such_runner -q",
    ]);
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    let requests = env.server.requests();
    assert_eq!(requests.len(), 1, "no model call after the runner failed");
    let (row, _) = env.only_session();
    assert_eq!(row.status.as_str(), "failed");
    let outcome = row.outcome.unwrap();
    assert!(
        outcome.contains("No module named quire_no_such_runner")
            && outcome.contains("tests.command"),
        "{outcome}"
    );
    assert_eq!(read(&env.ws().join("src/pricing.py")), original);
}
