//! MCP tool servers through the real binary: the user's lines (one warning
//! for a server that could not start, one trace line per server that did),
//! a call answered and one timed out, and `config check` listing servers.
//! The test server is `quire-mcp`'s binary, built beside `quire` by
//! `cargo test --workspace` (or `cargo build -p quire-mcp`).

use std::path::PathBuf;

use quire_testkit::{Reply, Script, ScriptedServer, call};
use serde_json::json;

use crate::harness::{Env, stderr, stdout};

fn test_server() -> PathBuf {
    let path =
        std::path::Path::new(env!("CARGO_BIN_EXE_quire")).with_file_name("quire-mcp-test-server");
    assert!(
        path.is_file(),
        "{} is missing: build it with `cargo build -p quire-mcp` (cargo test --workspace does)",
        path.display()
    );
    path
}

/// `-c` overrides: `mcp` listed, a working server `test` and one that
/// exits at start, `broken`.
fn mcp_overrides() -> Vec<String> {
    let server = test_server();
    [
        r#"extensions=["protocol", "workspace_tools", "finish", "mcp"]"#.to_string(),
        format!("mcp.servers.test.command={server:?}"),
        r#"mcp.servers.test.approval="never""#.to_string(),
        "mcp.servers.test.call_timeout_secs=1".to_string(),
        format!("mcp.servers.broken.command={server:?}"),
        r#"mcp.servers.broken.args=["--fail-start"]"#.to_string(),
        "finish.require_change=false".to_string(),
    ]
    .into_iter()
    .flat_map(|o| ["-c".to_string(), o])
    .collect()
}

#[test]
fn a_session_calls_mcp_tools_and_a_server_that_cannot_start_is_one_line() {
    let script = vec![
        Reply::ToolCalls(vec![call("test__echo", json!({"text": "hi"}))]),
        Reply::ToolCalls(vec![call("test__hang", json!({}))]),
        Reply::ToolCalls(vec![call("finish", json!({"summary": "used the tools"}))]),
    ];
    let env = Env::new(
        "pricing",
        ScriptedServer::start_blocking(Script::sequence(script)),
    );
    let out = env
        .quire()
        .args(mcp_overrides())
        .args(["run", env.ws().to_str().unwrap(), "--yes", "--no-apply"])
        .output()
        .unwrap();
    let (text, err) = (stdout(&out), stderr(&out));
    assert_eq!(out.status.code(), Some(0), "{text}\n{err}");
    env.server.assert_clean();
    let warnings: Vec<&str> = err
        .lines()
        .filter(|l| l.contains("MCP server `broken` could not be started"))
        .collect();
    assert_eq!(warnings.len(), 1, "{err}");
    assert!(warnings[0].contains("told to fail at start"), "{err}");
    assert!(text.contains("mcp server test: 5 tool(s)"), "{text}");

    let requests = env.server.requests();
    assert!(
        requests[0]
            .all_text()
            .contains("The MCP server `broken` could not be started"),
        "the model is told too"
    );
    assert_eq!(requests[1].last_tool_result().unwrap(), "echo: hi");
    let hang = requests[2].last_tool_result().unwrap();
    assert!(hang.contains("did not answer within 1 s"), "{hang}");
    let (row, events) = env.only_session();
    assert_eq!(row.status.to_string(), "completed");
    let results = events.iter().filter(|e| e.kind == "tool_result").count();
    assert_eq!(results, 3);
}

#[test]
fn config_check_lists_each_server_and_its_tools_or_why_not() {
    let env = Env::new(
        "pricing",
        ScriptedServer::start_blocking(Script::sequence(Vec::new())),
    );
    let out = env
        .quire()
        .args(mcp_overrides())
        .args(["config", "check"])
        .output()
        .unwrap();
    let text = stdout(&out);
    assert!(
        text.contains(
            "mcp server test: 5 tool(s): test__echo, test__fail, test__hang, test__crash, test__env"
        ),
        "{text}"
    );
    assert!(
        text.contains("mcp server broken: could not be reached:")
            && text.contains("told to fail at start"),
        "{text}"
    );
    // `mcp` is listed, so an unreachable server is a problem.
    assert_eq!(out.status.code(), Some(1), "{text}");
}
