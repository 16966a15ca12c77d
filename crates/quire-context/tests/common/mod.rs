//! Scripted sessions driven in-process through `quire_session::Runner` and
//! the scripted model server; shared by the tests and the bench.
#![allow(dead_code)]

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use quire_config::{AgentConfig, AgentSource, Loader, Override};
use quire_core::Interrupt;
use quire_llm::{ClientSettings, ModelClient, Provider, build_client};
use quire_session::{AutoApprove, DataHome, RunOptions, Runner, SessionReport, WorkspaceInfo};
use quire_testkit::{RecordedRequest, Reply, Script, ScriptedCall, ScriptedServer, call};
use quire_types::{Event, EventKind};
use serde_json::{Value, json};

pub const TEST_COMMAND: &str = "echo '3 passed in 0.01s'";

/// What the scripted architect answers: every section the prompt asks for.
pub const SUMMARY: &str = "## Task and constraints\nFix the helpers.\n## Decisions made and why\nEdit in place.\n## Progress\nRead most modules.\n## Technical details\nmod_0.py holds helper_0.\n## Outstanding items\nRun the tests.";

pub fn config(overrides: &[&str]) -> Arc<AgentConfig> {
    let ovs = overrides
        .iter()
        .map(|o| Override::parse(o).unwrap())
        .collect();
    Arc::new(Loader::new(ovs).load(&AgentSource::Builtin).unwrap())
}

/// A Python module of `lines` distinct lines.
pub fn module(name: &str, lines: usize) -> String {
    (0..lines)
        .map(|i| format!("def {name}_helper_{i}(value):  # step {i} of {name}\n    return value * {i} + {}\n", i * 7 % 13))
        .collect()
}

pub fn workspace(files: &[(String, String)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for (path, text) in files {
        let abs = dir.path().join(path);
        std::fs::create_dir_all(abs.parent().unwrap()).unwrap();
        std::fs::write(abs, text).unwrap();
    }
    dir
}

/// `count` modules of `lines` lines each, `src/mod_<n>.py`.
pub fn modules(count: usize, lines: usize) -> Vec<(String, String)> {
    (0..count)
        .map(|n| {
            (
                format!("src/mod_{n}.py"),
                module(&format!("mod_{n}"), lines),
            )
        })
        .collect()
}

pub fn read(path: &str) -> ScriptedCall {
    call("read_file", json!({ "path": path }))
}

pub fn search(pattern: &str) -> ScriptedCall {
    call("search", json!({ "pattern": pattern }))
}

pub fn edit(path: &str, old: &str, new: &str) -> ScriptedCall {
    call("edit_file", json!({ "path": path, "old": old, "new": new }))
}

pub fn tests() -> ScriptedCall {
    call("run_tests", json!({}))
}

pub fn finish() -> ScriptedCall {
    call("finish", json!({ "summary": "done" }))
}

/// Whether a request is compaction's summary call (its system prompt is the
/// compaction prompt).
pub fn is_summary(request: &RecordedRequest) -> bool {
    let marker = "architect of a coding session";
    let openai = request
        .messages()
        .first()
        .and_then(|m| m.get("content"))
        .and_then(Value::as_str)
        .is_some_and(|c| c.contains(marker));
    let anthropic = request.body["system"].as_array().is_some_and(|blocks| {
        blocks
            .iter()
            .any(|b| b["text"].as_str().is_some_and(|t| t.contains(marker)))
    });
    openai || anthropic
}

/// Serves `steps` in order to the agent (one tool call each; `finish` when
/// they run out) and `summary` to every summary call.
pub fn script(steps: Vec<ScriptedCall>, summary: Reply) -> Script {
    let next = AtomicUsize::new(0);
    Script::from_fn(move |request, _| {
        if is_summary(request) {
            return summary.clone();
        }
        let i = next.fetch_add(1, Ordering::SeqCst);
        Reply::ToolCalls(vec![steps.get(i).cloned().unwrap_or_else(finish)])
    })
}

pub fn client(server: &ScriptedServer, max_attempts: u32) -> Arc<dyn ModelClient> {
    client_for(server, max_attempts, Provider::OpenAi)
}

pub fn client_for(
    server: &ScriptedServer,
    max_attempts: u32,
    provider: Provider,
) -> Arc<dyn ModelClient> {
    let base = match provider {
        Provider::OpenAi => server.openai_base_url(),
        Provider::Anthropic => server.anthropic_base_url(),
    };
    let mut settings = ClientSettings::new(provider, "scripted-model", base);
    settings.stream = false;
    settings.max_attempts = max_attempts;
    settings.retry_base_delay = Duration::from_millis(1);
    settings.retry_max_delay = Duration::from_millis(5);
    settings.request_timeout = Duration::from_secs(20);
    build_client(settings).unwrap()
}

pub fn info(ws: &Path, task: &str) -> WorkspaceInfo {
    WorkspaceInfo {
        root: ws.canonicalize().unwrap(),
        task: task.to_string(),
        guidance: None,
        test_command: Some(TEST_COMMAND.to_string()),
        project: "demo".into(),
    }
}

pub fn options(interrupt: Interrupt) -> RunOptions {
    RunOptions {
        approver: Arc::new(AutoApprove),
        apply: true,
        interrupt,
        sinks: Vec::new(),
    }
}

/// A data home, a workspace, the server and a runner over them.
pub struct Session {
    pub home: tempfile::TempDir,
    pub ws: tempfile::TempDir,
    pub server: ScriptedServer,
    pub runner: Runner,
    pub config: Arc<AgentConfig>,
}

impl Session {
    pub async fn start(
        files: &[(String, String)],
        overrides: &[&str],
        script: Script,
        max_attempts: u32,
    ) -> Session {
        Session::start_with(files, overrides, script, max_attempts, Provider::OpenAi).await
    }

    pub async fn start_with(
        files: &[(String, String)],
        overrides: &[&str],
        script: Script,
        max_attempts: u32,
        provider: Provider,
    ) -> Session {
        let server = ScriptedServer::start(script).await;
        let config = config(overrides);
        let home = tempfile::tempdir().unwrap();
        let runner = Runner::new(
            DataHome::at(home.path().to_path_buf()).unwrap(),
            config.clone(),
            client_for(&server, max_attempts, provider),
        )
        .unwrap();
        Session {
            home,
            ws: workspace(files),
            server,
            runner,
            config,
        }
    }

    pub async fn run(&self, task: &str) -> SessionReport {
        self.runner
            .run(info(self.ws.path(), task), options(Interrupt::new()))
            .await
            .unwrap()
    }

    pub fn events(&self, report: &SessionReport) -> Vec<Event> {
        let store = self.runner.store();
        let store = store.lock().unwrap();
        store
            .events(&report.id)
            .unwrap()
            .into_iter()
            .map(|e| e.event)
            .collect()
    }

    /// The agent's requests (not the summary calls), in order.
    pub fn agent_requests(&self) -> Vec<RecordedRequest> {
        self.server
            .requests()
            .into_iter()
            .filter(|r| {
                (r.path.ends_with("/chat/completions") || r.path.ends_with("/messages"))
                    && !is_summary(r)
            })
            .collect()
    }

    pub fn summary_requests(&self) -> Vec<RecordedRequest> {
        self.server
            .requests()
            .into_iter()
            .filter(is_summary)
            .collect()
    }
}

/// For each agent request (by `ModelRequest` event order), the compaction
/// stages applied just before it.
pub fn stages_before_requests(events: &[Event]) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    let mut pending = Vec::new();
    for event in events {
        match &event.kind {
            EventKind::Compaction { stage, .. } => pending.push(stage.to_string()),
            EventKind::ModelRequest { .. } => out.push(std::mem::take(&mut pending)),
            _ => {}
        }
    }
    out
}

pub fn compactions(events: &[Event]) -> Vec<(String, u64, u64)> {
    events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::Compaction {
                stage,
                tokens_before,
                tokens_after,
                ..
            } => Some((stage.to_string(), *tokens_before, *tokens_after)),
            _ => None,
        })
        .collect()
}

/// A request's messages without the trailing working-memory index (which
/// is sent with that request only).
pub fn conversation(request: &RecordedRequest, index_marker: &str) -> Vec<Value> {
    let mut messages = request.messages().to_vec();
    if messages.last().is_some_and(|m| {
        m.get("role").and_then(Value::as_str) == Some("user")
            && m.get("content")
                .and_then(Value::as_str)
                .is_some_and(|c| c.contains(index_marker))
    }) {
        messages.pop();
    }
    messages
}

/// Length of the common prefix of two requests' canonical JSON, and the
/// later one's length, in bytes: how much of a request a prompt cache could
/// serve from the previous one.
pub fn shared_prefix(previous: &RecordedRequest, next: &RecordedRequest) -> (usize, usize) {
    let a =
        serde_json::to_string(&json!([previous.body["tools"], previous.body["messages"]])).unwrap();
    let b = serde_json::to_string(&json!([next.body["tools"], next.body["messages"]])).unwrap();
    let common = a.bytes().zip(b.bytes()).take_while(|(x, y)| x == y).count();
    (common, b.len())
}
