//! `run_command` under its policy: an allowlisted command runs in the
//! session copy, a dangerous one and an unlisted one (nobody to ask with
//! `--yes`) are refused, and every decision is in the trajectory.

use quire_testkit::{Reply, Script, ScriptedServer, call};
use quire_types::EventKind;
use serde_json::json;

use crate::harness::{Env, stdout};

#[test]
fn allowlisted_commands_run_in_the_copy_and_the_rest_are_refused_and_recorded() {
    let script = vec![
        Reply::ToolCalls(vec![call(
            "run_command",
            json!({"cmd": "echo made-by-command > made.txt && cat made.txt"}),
        )]),
        Reply::ToolCalls(vec![call(
            "run_command",
            json!({"cmd": "git push origin main"}),
        )]),
        Reply::ToolCalls(vec![call("run_command", json!({"cmd": "make install"}))]),
        Reply::ToolCalls(vec![call(
            "run_command",
            json!({"cmd": "echo slow && sleep 30", "timeout": 1}),
        )]),
        Reply::ToolCalls(vec![call("finish", json!({"summary": "wrote made.txt"}))]),
    ];
    let env = Env::new(
        "pricing",
        ScriptedServer::start_blocking(Script::sequence(script)),
    );
    let out = env
        .quire()
        .args([
            "-c",
            r#"extensions=["protocol", "workspace_tools", "commands", "finish"]"#,
            "-c",
            r#"commands.allow=["echo *"]"#,
            "-c",
            "finish.require_tests_after_edit=false",
        ])
        .args(["run", env.ws().to_str().unwrap(), "--yes", "--no-apply"])
        .output()
        .unwrap();
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(0), "{text}");
    env.server.assert_clean();
    assert!(
        !env.ws().join("made.txt").exists(),
        "the original is untouched"
    );
    let (row, events) = env.only_session();
    let work = env
        .home
        .path()
        .join("sessions")
        .join(row.id.as_str())
        .join("work");
    assert_eq!(
        std::fs::read_to_string(work.join("made.txt"))
            .unwrap()
            .trim(),
        "made-by-command"
    );
    let decisions: Vec<(String, String)> = events
        .iter()
        .filter_map(|e| match &e.event.kind {
            EventKind::CommandDecision {
                decision, reason, ..
            } => Some((decision.to_string(), reason.clone())),
            _ => None,
        })
        .collect();
    let expected = [
        ("allowed", "allowlisted"),
        ("refused", "git_push"),
        ("refused", "nobody_to_ask"),
        ("allowed", "allowlisted"),
    ];
    assert_eq!(
        decisions,
        expected
            .iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect::<Vec<_>>()
    );
    let requests = env.server.requests();
    let first = requests[1].last_tool_result().unwrap();
    assert!(
        first.contains("Exit code 0") && first.contains("made-by-command"),
        "{first}"
    );
    let push = requests[2].last_tool_result().unwrap();
    assert!(push.contains("pushes to a git remote"), "{push}");
    let make = requests[3].last_tool_result().unwrap();
    assert!(make.contains("nobody to approve"), "{make}");
    let slow = requests[4].last_tool_result().unwrap();
    assert!(slow.contains("within 1 seconds"), "{slow}");
    assert!(text.contains("command refused (git_push)"), "{text}");
}

/// `approval = "ask"` at the terminal: a person refuses one command and
/// allows the next, typed on stdin; both answers are in the trajectory and
/// only the allowed command ran.
#[test]
fn a_person_at_the_terminal_decides_commands_the_policy_leaves_open() {
    let script = vec![
        Reply::ToolCalls(vec![call(
            "run_command",
            json!({"cmd": "echo refused-by-person > refused.txt"}),
        )]),
        Reply::ToolCalls(vec![call(
            "run_command",
            json!({"cmd": "echo allowed-by-person > allowed.txt"}),
        )]),
        Reply::ToolCalls(vec![call("finish", json!({"summary": "asked twice"}))]),
    ];
    let env = Env::new(
        "pricing",
        ScriptedServer::start_blocking(Script::sequence(script)),
    );
    let mut child = env
        .quire()
        .args([
            "-c",
            r#"extensions=["protocol", "workspace_tools", "commands", "finish"]"#,
            "-c",
            r#"commands.approval="ask""#,
            "-c",
            r#"commands.allow=["echo *"]"#,
            "-c",
            "finish.require_tests_after_edit=false",
        ])
        .args(["run", env.ws().to_str().unwrap(), "--no-apply"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    // A stray answer is asked again; then no, yes, and yes to the change.
    child
        .stdin
        .as_mut()
        .unwrap()
        .write_all(b"maybe\nn\ny\ny\n")
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(0), "{text}");
    env.server.assert_clean();
    assert_eq!(
        text.matches("Run it? [y]es / [n]o:").count(),
        3,
        "asked again after a stray answer: {text}"
    );
    let (row, events) = env.only_session();
    let work = env
        .home
        .path()
        .join("sessions")
        .join(row.id.as_str())
        .join("work");
    assert!(!work.join("refused.txt").exists());
    assert!(work.join("allowed.txt").exists());
    let decisions: Vec<String> = events
        .iter()
        .filter_map(|e| match &e.event.kind {
            EventKind::CommandDecision { decision, .. } => Some(decision.to_string()),
            _ => None,
        })
        .collect();
    // Even an allowlisted command is asked about under `approval = "ask"`.
    assert_eq!(decisions, vec!["denied", "approved"]);
    let requests = env.server.requests();
    let refused = requests[1].last_tool_result().unwrap();
    assert!(refused.contains("the user declined it"), "{refused}");
}
