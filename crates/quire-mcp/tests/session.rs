//! Sessions end to end through `quire_session::Runner`, the scripted model
//! server and the test MCP server over real stdio: what the model got back
//! from each kind of call, and what the trajectory recorded.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use quire_config::{AgentConfig, AgentSource, Loader, Override};
use quire_core::Interrupt;
use quire_llm::{ClientSettings, Provider, build_client};
use quire_mcp::McpServerStatus;
use quire_session::{
    Approver, AutoApprove, DataHome, Decision, ProposedChange, RunOptions, Runner, SessionError,
    SessionReport, WorkspaceInfo,
};
use quire_store::SessionStatus;
use quire_testkit::{RecordedRequest, Reply, Script, ScriptedCall, ScriptedServer, call};
use quire_types::{Event, EventKind};
use serde_json::json;

const SERVER: &str = env!("CARGO_BIN_EXE_quire-mcp-test-server");

/// The default agent with `mcp` listed and `servers` as TOML overrides.
fn config(servers: &[&str]) -> Arc<AgentConfig> {
    let mut overrides = vec![
        Override::parse(r#"extensions=["protocol", "workspace_tools", "tests", "finish", "mcp"]"#)
            .unwrap(),
    ];
    overrides.push(Override::parse("notes.enabled=false").unwrap());
    overrides.push(Override::parse("finish.require_change=false").unwrap());
    overrides.extend(servers.iter().map(|s| Override::parse(s).unwrap()));
    Arc::new(Loader::new(overrides).load(&AgentSource::Builtin).unwrap())
}

/// `[mcp.servers.<name>]` pointing at the test server.
fn server(name: &str, extra: &[&str]) -> Vec<String> {
    let mut lines = vec![format!("mcp.servers.{name}.command={SERVER:?}")];
    lines.extend(extra.iter().map(|e| format!("mcp.servers.{name}.{e}")));
    lines
}

/// Serves `steps` in order, then `finish`.
fn script(steps: Vec<ScriptedCall>) -> Script {
    let next = AtomicUsize::new(0);
    Script::from_fn(move |_, _| {
        let i = next.fetch_add(1, Ordering::SeqCst);
        let step = steps
            .get(i)
            .cloned()
            .unwrap_or_else(|| call("finish", json!({ "summary": "done" })));
        Reply::ToolCalls(vec![step])
    })
}

struct Session {
    _home: tempfile::TempDir,
    ws: tempfile::TempDir,
    server: ScriptedServer,
    runner: Runner,
}

impl Session {
    async fn start(servers: &[String], steps: Vec<ScriptedCall>) -> Session {
        let server = ScriptedServer::start(script(steps)).await;
        let servers: Vec<&str> = servers.iter().map(String::as_str).collect();
        let mut settings =
            ClientSettings::new(Provider::OpenAi, "scripted-model", server.openai_base_url());
        settings.stream = false;
        settings.max_attempts = 1;
        settings.request_timeout = Duration::from_secs(20);
        let home = tempfile::tempdir().unwrap();
        let runner = Runner::new(
            DataHome::at(home.path().to_path_buf()).unwrap(),
            config(&servers),
            build_client(settings).unwrap(),
        )
        .unwrap();
        let ws = tempfile::tempdir().unwrap();
        std::fs::write(ws.path().join("notes.txt"), "a workspace\n").unwrap();
        Session {
            _home: home,
            ws,
            server,
            runner,
        }
    }

    async fn run(&self, approver: Arc<dyn Approver>) -> SessionReport {
        let info = WorkspaceInfo {
            root: self.ws.path().canonicalize().unwrap(),
            task: "Use the MCP tools.".into(),
            guidance: None,
            test_command: None,
            project: "demo".into(),
        };
        let options = RunOptions {
            approver,
            apply: false,
            interrupt: Interrupt::new(),
            sinks: Vec::new(),
        };
        self.runner.run(info, options).await.unwrap()
    }

    fn events(&self, report: &SessionReport) -> Vec<Event> {
        let store = self.runner.store();
        let store = store.lock().unwrap();
        store
            .events(&report.id)
            .unwrap()
            .into_iter()
            .map(|e| e.event)
            .collect()
    }

    fn requests(&self) -> Vec<RecordedRequest> {
        self.server
            .requests()
            .into_iter()
            .filter(|r| r.path.ends_with("/chat/completions"))
            .collect()
    }

    /// What the model got back from each call, in order: the last tool
    /// result of each request after the first.
    fn results_seen(&self) -> Vec<String> {
        self.requests()
            .iter()
            .skip(1)
            .map(|r| r.last_tool_result().unwrap_or_default())
            .collect()
    }
}

/// The recorded results: (tool, is_error, agent view).
fn recorded(events: &[Event]) -> Vec<(String, bool, String)> {
    events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::ToolResult {
                name,
                views,
                is_error,
                ..
            } => Some((name.clone(), *is_error, views.agent_view.clone())),
            _ => None,
        })
        .collect()
}

fn statuses(events: &[Event]) -> Vec<McpServerStatus> {
    events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::Extension(payload) => {
                payload.decode::<McpServerStatus>().and_then(Result::ok)
            }
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn the_model_gets_an_answer_an_error_and_a_timeout_and_the_trajectory_records_them() {
    let servers = server("test", &["call_timeout_secs=1", r#"approval="never""#]);
    let session = Session::start(
        &servers,
        vec![
            call("test__echo", json!({ "text": "hello" })),
            call("test__fail", json!({ "text": "x" })),
            call("test__hang", json!({})),
            // Still alive after a timeout.
            call("test__echo", json!({ "text": "again" })),
            call("test__crash", json!({})),
            // Gone: said at once, no wait.
            call("test__echo", json!({ "text": "late" })),
        ],
    )
    .await;
    let report = session.run(Arc::new(AutoApprove)).await;
    assert_eq!(
        report.status,
        SessionStatus::Completed,
        "{}",
        report.outcome
    );

    // The tools are offered with the server's words and schema.
    let first = &session.requests()[0];
    let names = first.tool_names();
    for tool in [
        "test__echo",
        "test__fail",
        "test__hang",
        "test__crash",
        "test__env",
    ] {
        assert!(names.contains(&tool.to_string()), "{names:?}");
    }
    let echo = first.body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["function"]["name"] == "test__echo")
        .unwrap();
    assert_eq!(
        echo["function"]["description"],
        "Answers with the text it is given."
    );
    assert_eq!(echo["function"]["parameters"]["required"], json!(["text"]));

    let seen = session.results_seen();
    assert_eq!(seen[0], "echo: hello");
    assert_eq!(
        seen[1],
        "`test__fail` reported an error:\nthe widget is broken (test failure)"
    );
    assert!(
        seen[2].contains("`test__hang` did not answer within 1 s"),
        "{}",
        seen[2]
    );
    assert_eq!(seen[3], "echo: again");
    assert!(
        seen[4].contains("MCP server `test` is no longer available")
            && seen[4].contains("crashing as asked"),
        "{}",
        seen[4]
    );
    assert!(
        seen[5].contains("`test__echo` was not run: the MCP server `test` is no longer available"),
        "{}",
        seen[5]
    );

    let events = session.events(&report);
    let results = recorded(&events);
    let errors: Vec<(&str, bool)> = results
        .iter()
        .map(|(name, is_error, _)| (name.as_str(), *is_error))
        .collect();
    assert_eq!(
        errors[..6],
        [
            ("test__echo", false),
            ("test__fail", true),
            ("test__hang", true),
            ("test__echo", false),
            ("test__crash", true),
            ("test__echo", true),
        ]
    );
    assert_eq!(results[0].2, "echo: hello");
    assert_eq!(
        seen[2], results[2].2,
        "the model reads the recorded agent view"
    );
    let status = statuses(&events);
    assert_eq!(status.len(), 1);
    assert_eq!(status[0].server, "test");
    assert!(status[0].error.is_none());
}

#[tokio::test]
async fn a_server_that_fails_to_start_is_told_once_and_the_session_finishes() {
    let mut servers = server("broken", &[r#"args=["--fail-start"]"#]);
    servers.push("mcp.servers.missing.command=\"/nonexistent/mcp-server\"".into());
    // Never answers the handshake.
    servers.push("mcp.servers.slow.command=\"sleep\"".into());
    servers.push(r#"mcp.servers.slow.args=["30"]"#.into());
    servers.push("mcp.servers.slow.startup_timeout_secs=1".into());
    servers.extend(server("good", &[r#"approval="never""#]));
    let session = Session::start(&servers, vec![call("good__echo", json!({ "text": "hi" }))]).await;
    let report = session.run(Arc::new(AutoApprove)).await;
    assert_eq!(
        report.status,
        SessionStatus::Completed,
        "{}",
        report.outcome
    );

    let first = &session.requests()[0];
    let text = first.all_text();
    assert!(
        text.contains("The MCP server `broken` could not be started")
            && text.contains("told to fail at start"),
        "{text}"
    );
    assert!(
        text.contains(
            "The MCP server `missing` could not be started (cannot start `/nonexistent/mcp-server`"
        ),
        "{text}"
    );
    let names = first.tool_names();
    assert!(
        names.iter().all(|n| !n.starts_with("broken__")),
        "{names:?}"
    );
    assert!(names.contains(&"good__echo".to_string()), "{names:?}");
    assert_eq!(session.results_seen()[0], "echo: hi");

    let status = statuses(&session.events(&report));
    let failed: Vec<&str> = status
        .iter()
        .filter(|s| s.error.is_some())
        .map(|s| s.server.as_str())
        .collect();
    assert_eq!(failed, ["broken", "missing", "slow"]);
    assert!(
        text.contains("The MCP server `slow` could not be started (it did not start within 1 s"),
        "{text}"
    );
}

/// Says yes to every command question and counts them.
#[derive(Default)]
struct Yes(AtomicUsize);

#[async_trait]
impl Approver for Yes {
    async fn review(&self, _change: &ProposedChange) -> Result<Decision, SessionError> {
        Ok(Decision::Approve)
    }

    async fn approve_command(&self, command: &str) -> Option<bool> {
        assert!(command.starts_with("MCP tool test__echo "), "{command}");
        self.0.fetch_add(1, Ordering::SeqCst);
        Some(true)
    }
}

#[tokio::test]
async fn approval_follows_the_server_setting_and_nobody_to_ask_refuses() {
    let steps = || {
        vec![
            call("test__echo", json!({ "text": "one" })),
            call("test__echo", json!({ "text": "two" })),
        ]
    };
    // first_use, with nobody to ask (--yes, eval runs): refused, clearly.
    let session = Session::start(&server("test", &[]), steps()).await;
    session.run(Arc::new(AutoApprove)).await;
    let seen = session.results_seen();
    assert!(
        seen[0].contains("needs the user's approval") && seen[0].contains("nobody can give it"),
        "{}",
        seen[0]
    );

    // first_use with a person: asked once, both calls run.
    let yes = Arc::new(Yes::default());
    let session = Session::start(&server("test", &[]), steps()).await;
    session.run(yes.clone()).await;
    assert_eq!(session.results_seen()[..2], ["echo: one", "echo: two"]);
    assert_eq!(yes.0.load(Ordering::SeqCst), 1);

    // always: asked before every call.
    let yes = Arc::new(Yes::default());
    let session = Session::start(&server("test", &[r#"approval="always""#]), steps()).await;
    session.run(yes.clone()).await;
    assert_eq!(yes.0.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn a_server_gets_only_the_variables_named_and_their_values_are_redacted() {
    let secret = "mcp-test-secret-4f1c9a7e2b";
    // SAFETY: set before any thread of this test reads the environment;
    // the name is used by this test only.
    unsafe { std::env::set_var("QUIRE_MCP_TEST_TOKEN", secret) };
    unsafe { std::env::set_var("QUIRE_MCP_TEST_UNLISTED", "not-for-the-server") };
    let servers = server(
        "test",
        &[r#"env=["QUIRE_MCP_TEST_TOKEN"]"#, r#"approval="never""#],
    );
    let session = Session::start(
        &servers,
        vec![
            call("test__env", json!({ "name": "QUIRE_MCP_TEST_TOKEN" })),
            call("test__env", json!({ "name": "QUIRE_MCP_TEST_UNLISTED" })),
        ],
    )
    .await;
    let report = session.run(Arc::new(AutoApprove)).await;
    let seen = session.results_seen();
    assert!(seen[0].starts_with("QUIRE_MCP_TEST_TOKEN="), "{}", seen[0]);
    assert!(!seen[0].contains(secret), "{}", seen[0]);
    assert_eq!(seen[1], "QUIRE_MCP_TEST_UNLISTED=<unset>");
    let events = serde_json::to_string(&session.events(&report)).unwrap();
    assert!(!events.contains(secret));
}

#[tokio::test]
async fn with_no_servers_the_extension_adds_no_tools_and_no_text() {
    let with = Session::start(&[], vec![]).await;
    with.run(Arc::new(AutoApprove)).await;
    let without = {
        let server = ScriptedServer::start(script(vec![])).await;
        let mut settings =
            ClientSettings::new(Provider::OpenAi, "scripted-model", server.openai_base_url());
        settings.stream = false;
        let home = tempfile::tempdir().unwrap();
        let mut overrides = vec![
            Override::parse(r#"extensions=["protocol", "workspace_tools", "tests", "finish"]"#)
                .unwrap(),
        ];
        overrides.push(Override::parse("notes.enabled=false").unwrap());
        overrides.push(Override::parse("finish.require_change=false").unwrap());
        let config = Arc::new(Loader::new(overrides).load(&AgentSource::Builtin).unwrap());
        let runner = Runner::new(
            DataHome::at(home.path().to_path_buf()).unwrap(),
            config,
            build_client(settings).unwrap(),
        )
        .unwrap();
        let session = Session {
            _home: home,
            ws: tempfile::tempdir().unwrap(),
            server,
            runner,
        };
        std::fs::write(session.ws.path().join("notes.txt"), "a workspace\n").unwrap();
        session.run(Arc::new(AutoApprove)).await;
        session
    };
    let a = &with.requests()[0];
    let b = &without.requests()[0];
    assert_eq!(a.body["tools"], b.body["tools"]);
    assert_eq!(a.messages().len(), b.messages().len());
}

#[tokio::test]
async fn probe_lists_each_servers_tools_or_why_it_could_not_be_reached() {
    let mut servers = server("test", &[r#"disabled_tools=["crash", "env"]"#]);
    servers.extend(server("broken", &[r#"args=["--fail-start"]"#]));
    let servers: Vec<&str> = servers.iter().map(String::as_str).collect();
    let mut config = (*config(&servers)).clone();
    // An agent folder's `tools/test__echo.toml` overrides the description.
    config.tools.insert(
        "test__echo".into(),
        quire_config::ToolText {
            description: "Repeat a text (agent's words).".into(),
            parameters: serde_json::Value::Null,
            errors: Default::default(),
        },
    );
    let probes = quire_mcp::probe(&config, &std::env::temp_dir()).await;
    let by_name = |name: &str| probes.iter().find(|p| p.server == name).unwrap();
    let tools: Vec<String> = by_name("test")
        .result
        .as_ref()
        .unwrap()
        .iter()
        .map(|t| t.name.clone())
        .collect();
    assert_eq!(tools, ["test__echo", "test__fail", "test__hang"]);
    let specs = by_name("test").result.as_ref().unwrap();
    assert_eq!(specs[0].description, "Repeat a text (agent's words).");
    assert_eq!(specs[1].description, "Always reports an error.");
    let why = by_name("broken").result.as_ref().unwrap_err();
    assert!(why.contains("told to fail at start"), "{why}");
}

#[tokio::test]
async fn a_long_result_is_capped_for_the_model_and_whole_for_the_user() {
    let long = "word ".repeat(400);
    let mut servers = server("test", &[r#"approval="never""#]);
    servers.push("limits.tool_output_max_chars=300".into());
    let session = Session::start(
        &servers,
        vec![call("test__echo", json!({ "text": long.clone() }))],
    )
    .await;
    let report = session.run(Arc::new(AutoApprove)).await;
    let seen = &session.results_seen()[0];
    assert!(seen.chars().count() <= 300, "{}", seen.len());
    assert!(seen.contains("characters of this result cut"), "{seen}");
    let (_, _, agent_view) = &recorded(&session.events(&report))[0];
    assert_eq!(agent_view, seen);
    let user_view = session
        .events(&report)
        .iter()
        .find_map(|e| match &e.kind {
            EventKind::ToolResult { views, .. } => Some(views.user_view.clone()),
            _ => None,
        })
        .unwrap();
    assert!(user_view.starts_with("test · echo · "), "{user_view}");
    assert!(
        user_view.contains(long.trim_end()),
        "the user view is whole"
    );
}
