//! A tiny MCP server over stdio for Quire's tests, written against the wire
//! format (newline-delimited JSON-RPC 2.0) instead of the SDK, so the client
//! is tested against a peer that is not itself.
//!
//! Tools: `echo` (answers with its `text`), `fail` (a tool error), `hang`
//! (never answers), `crash` (the process exits mid-call) and `env` (the
//! value of an environment variable, to test what a server is given).
//! `--fail-start` exits at once with a message on stderr.

use std::io::{BufRead, Write};

use serde_json::{Value, json};

/// Versions this server speaks; it answers a client with the client's own
/// version when it knows it, else with the oldest it knows.
const VERSIONS: &[&str] = &["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"];

fn main() {
    if std::env::args().any(|a| a == "--fail-start") {
        eprintln!("test server: told to fail at start");
        std::process::exit(2);
    }
    let stdin = std::io::stdin();
    let mut stdout = std::io::stdout();
    for line in stdin.lock().lines() {
        let Ok(line) = line else { break };
        if line.trim().is_empty() {
            continue;
        }
        let Ok(message) = serde_json::from_str::<Value>(&line) else {
            eprintln!("test server: not JSON: {line}");
            continue;
        };
        // Notifications (no id) need no answer.
        let Some(id) = message.get("id").cloned() else {
            continue;
        };
        let method = message.get("method").and_then(Value::as_str).unwrap_or("");
        let params = message.get("params").cloned().unwrap_or(Value::Null);
        let reply = match method {
            "initialize" => Some(Ok(initialize(&params))),
            "ping" => Some(Ok(json!({}))),
            "tools/list" => Some(Ok(json!({ "tools": tools() }))),
            "tools/call" => call(&params),
            _ => Some(Err(
                json!({ "code": -32601, "message": format!("no method {method}") }),
            )),
        };
        let Some(reply) = reply else { continue };
        let response = match reply {
            Ok(result) => json!({ "jsonrpc": "2.0", "id": id, "result": result }),
            Err(error) => json!({ "jsonrpc": "2.0", "id": id, "error": error }),
        };
        if writeln!(stdout, "{response}")
            .and_then(|()| stdout.flush())
            .is_err()
        {
            break;
        }
    }
}

fn initialize(params: &Value) -> Value {
    let asked = params
        .get("protocolVersion")
        .and_then(Value::as_str)
        .unwrap_or("");
    let version = VERSIONS
        .iter()
        .find(|v| **v == asked)
        .or(VERSIONS.last())
        .copied()
        .unwrap_or("2024-11-05");
    json!({
        "protocolVersion": version,
        "capabilities": { "tools": {} },
        "serverInfo": { "name": "quire-mcp-test-server", "version": "0.1.0" }
    })
}

fn tools() -> Value {
    let text_arg = |what: &str| {
        json!({
            "type": "object",
            "properties": { "text": { "type": "string", "description": what } },
            "required": ["text"]
        })
    };
    json!([
        { "name": "echo", "description": "Answers with the text it is given.", "inputSchema": text_arg("what to echo") },
        { "name": "fail", "description": "Always reports an error.", "inputSchema": text_arg("ignored") },
        { "name": "hang", "description": "Never answers.", "inputSchema": { "type": "object", "properties": {} } },
        { "name": "crash", "description": "Exits in the middle of the call.", "inputSchema": { "type": "object", "properties": {} } },
        { "name": "env", "description": "The value of an environment variable.", "inputSchema": {
            "type": "object",
            "properties": { "name": { "type": "string" } },
            "required": ["name"]
        } }
    ])
}

/// `None`: no answer at all (`hang`).
fn call(params: &Value) -> Option<Result<Value, Value>> {
    let name = params.get("name").and_then(Value::as_str).unwrap_or("");
    let args = params.get("arguments").cloned().unwrap_or(Value::Null);
    let text = |s: String| json!({ "content": [{ "type": "text", "text": s }], "isError": false });
    match name {
        "echo" => {
            let said = args.get("text").and_then(Value::as_str).unwrap_or("");
            Some(Ok(text(format!("echo: {said}"))))
        }
        "fail" => Some(Ok(json!({
            "content": [{ "type": "text", "text": "the widget is broken (test failure)" }],
            "isError": true
        }))),
        "hang" => None,
        "crash" => {
            eprintln!("test server: crashing as asked");
            std::process::exit(3);
        }
        "env" => {
            let var = args.get("name").and_then(Value::as_str).unwrap_or("");
            let value = std::env::var(var).unwrap_or_else(|_| "<unset>".into());
            Some(Ok(text(format!("{var}={value}"))))
        }
        other => Some(Err(
            json!({ "code": -32602, "message": format!("unknown tool {other}") }),
        )),
    }
}
