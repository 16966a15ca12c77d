//! The loop against a real HTTP model (the scripted server), with a fake
//! extension standing in for the tools.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use quire_config::{AgentConfig, AgentSource, Loader, Override};
use quire_core::extensions::ProtocolExtension;
use quire_core::{
    Action, Agent, Control, Ctx, Extension, Interrupt, LoopOutcome, MemorySink, ToolOutput,
};
use quire_llm::{ClientSettings, Provider, build_client};
use quire_testkit::{Fault, Reply, Script, ScriptedServer, call};
use quire_types::{EventKind, MessageSource};
use serde_json::json;

/// Owns `read_file` (echoes the path) and `finish`.
struct FakeTools;

#[async_trait]
impl Extension for FakeTools {
    fn name(&self) -> &str {
        "fake"
    }
    fn tools(&self) -> Vec<&'static str> {
        vec!["read_file", "finish"]
    }
    async fn execute(&self, _ctx: &mut Ctx, action: &Action) -> ToolOutput {
        match action.call.name.as_str() {
            "read_file" => {
                let path = action.args["path"].as_str().unwrap_or_default();
                ToolOutput::ok(
                    format!("1| contents of {path}"),
                    format!("full view of {path}"),
                )
            }
            _ => {
                let summary = action.args["summary"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string();
                ToolOutput::ok("done", "done").with_control(Control::Finish { summary })
            }
        }
    }
}

fn config(overrides: &[&str]) -> Arc<AgentConfig> {
    let ovs = overrides
        .iter()
        .map(|o| Override::parse(o).unwrap())
        .collect();
    Arc::new(Loader::new(ovs).load(&AgentSource::Builtin).unwrap())
}

fn agent(server: &ScriptedServer, config: &AgentConfig, provider: Provider, stream: bool) -> Agent {
    let base = match provider {
        Provider::OpenAi => server.openai_base_url(),
        Provider::Anthropic => server.anthropic_base_url(),
    };
    let mut settings = ClientSettings::new(provider, "scripted-model", base);
    settings.stream = stream;
    settings.max_attempts = 2;
    settings.retry_base_delay = Duration::from_millis(5);
    settings.request_timeout = Duration::from_secs(5);
    let client = build_client(settings).unwrap();
    let exts: Vec<Arc<dyn Extension>> =
        vec![Arc::new(ProtocolExtension::new()), Arc::new(FakeTools)];
    Agent::new(client, exts, config).unwrap()
}

fn ctx(config: Arc<AgentConfig>, sink: Arc<MemorySink>) -> Ctx {
    let mut ctx = Ctx::new(config, sink);
    ctx.push_user(MessageSource::Task, "Fix the bug.").unwrap();
    ctx
}

#[tokio::test]
async fn reads_then_finishes_over_both_protocols_streaming_and_not() {
    for (provider, stream) in [
        (Provider::OpenAi, false),
        (Provider::OpenAi, true),
        (Provider::Anthropic, false),
        (Provider::Anthropic, true),
    ] {
        let server = ScriptedServer::start(Script::sequence(vec![
            Reply::TextAndToolCalls(
                "Let me look.".into(),
                vec![call("read_file", json!({"path": "src/a.py"}))],
            ),
            Reply::ToolCalls(vec![call("finish", json!({"summary": "fixed it"}))]),
        ]))
        .await;
        let config = config(&[]);
        let sink = Arc::new(MemorySink::default());
        let mut ctx = ctx(config.clone(), sink.clone());
        let outcome = agent(&server, &config, provider, stream)
            .run(&mut ctx, &Interrupt::new())
            .await
            .unwrap();
        assert_eq!(
            outcome,
            LoopOutcome::Finished {
                summary: "fixed it".into()
            },
            "{provider:?} stream={stream}"
        );
        server.assert_clean();
        let requests = server.requests();
        assert_eq!(requests.len(), 2);
        assert_eq!(
            requests[1].last_tool_result().as_deref(),
            Some("1| contents of src/a.py")
        );
        assert!(requests[0].tool_names().contains(&"read_file".to_string()));
        let events = sink.events();
        let results: Vec<_> = events
            .iter()
            .filter(|e| matches!(e.kind, EventKind::ToolResult { .. }))
            .collect();
        assert_eq!(results.len(), 2);
        assert!(
            matches!(&results[0].kind, EventKind::ToolResult { views, .. } if views.user_view == "full view of src/a.py")
        );
        assert_eq!(ctx.iteration, 2);
        assert!(ctx.usage.prompt_tokens > 0);
    }
}

#[tokio::test]
async fn protocol_breaks_get_config_repair_texts_and_stay_paired() {
    let server = ScriptedServer::start(Script::sequence(vec![
        Reply::ToolCalls(vec![ScriptedCallExt::raw("read_file", "{\"path\": ")]),
        Reply::ToolCalls(vec![call("grep_everything", json!({}))]),
        Reply::ToolCalls(vec![call("read_file", json!({"offset": 3}))]),
        Reply::Text("I think I am done.".into()),
        Reply::ToolCalls(vec![call("finish", json!({"summary": "ok"}))]),
    ]))
    .await;
    let config = config(&["limits.max_protocol_repairs=5"]);
    let sink = Arc::new(MemorySink::default());
    let mut ctx = ctx(config.clone(), sink.clone());
    let outcome = agent(&server, &config, Provider::OpenAi, false)
        .run(&mut ctx, &Interrupt::new())
        .await
        .unwrap();
    assert_eq!(
        outcome,
        LoopOutcome::Finished {
            summary: "ok".into()
        }
    );
    server.assert_clean();
    let r = server.requests();
    let bad_json = r[1].last_tool_result().unwrap();
    assert!(bad_json.contains("not a valid JSON object"), "{bad_json}");
    let unknown = r[2].last_tool_result().unwrap();
    assert!(
        unknown.contains("no tool named `grep_everything`")
            && unknown.contains("read_file, finish"),
        "{unknown}"
    );
    let missing = r[3].last_tool_result().unwrap();
    assert!(missing.contains("needs the argument `path`"), "{missing}");
    let no_call = r[4].last_user_text().unwrap();
    assert!(no_call.contains("without calling a tool"), "{no_call}");
    let repairs = sink
        .events()
        .iter()
        .filter(|e| matches!(e.kind, EventKind::ProtocolRepair { .. }))
        .count();
    assert_eq!(repairs, 4);
}

/// Helper for deliberately invalid JSON arguments.
struct ScriptedCallExt;
impl ScriptedCallExt {
    fn raw(name: &str, arguments: &str) -> quire_testkit::ScriptedCall {
        quire_testkit::ScriptedCall {
            name: name.into(),
            arguments: arguments.into(),
        }
    }
}

#[tokio::test]
async fn a_model_that_never_calls_tools_fails_past_the_repair_limit() {
    let server = ScriptedServer::start(Script::from_fn(|_, _| {
        Reply::Text("Sure, here is my plan.".into())
    }))
    .await;
    let config = config(&["limits.max_protocol_repairs=2"]);
    let sink = Arc::new(MemorySink::default());
    let mut ctx = ctx(config.clone(), sink);
    let outcome = agent(&server, &config, Provider::OpenAi, false)
        .run(&mut ctx, &Interrupt::new())
        .await
        .unwrap();
    match outcome {
        LoopOutcome::Failed { reason } => assert!(reason.contains("3 times"), "{reason}"),
        other => panic!("expected failure, got {other:?}"),
    }
    assert_eq!(server.requests().len(), 3);
}

#[tokio::test]
async fn the_iteration_cap_stops_the_loop() {
    let server = ScriptedServer::start(Script::from_fn(|_, i| {
        Reply::ToolCalls(vec![call("read_file", json!({"path": format!("f{i}.py")}))])
    }))
    .await;
    let config = config(&["limits.max_iterations=4"]);
    let mut ctx = ctx(config.clone(), Arc::new(MemorySink::default()));
    let outcome = agent(&server, &config, Provider::Anthropic, true)
        .run(&mut ctx, &Interrupt::new())
        .await
        .unwrap();
    assert_eq!(outcome, LoopOutcome::IterationCap);
    assert_eq!(server.requests().len(), 4);
    server.assert_clean();
}

#[tokio::test]
async fn text_protocol_mode_sends_no_native_tools_and_parses_blocks() {
    let server = ScriptedServer::start(Script::sequence(vec![
        Reply::Text(
            "Reading.\n<tool_call name=\"read_file\">\n{\"path\": \"b.py\"}\n</tool_call>".into(),
        ),
        Reply::Text("<tool_call name=\"read_file\">\n{\"path\": \n</tool_call>".into()),
        Reply::Text(
            "<tool_call name=\"finish\">{\"summary\": \"text mode works\"}</tool_call>".into(),
        ),
    ]))
    .await;
    let config = config(&["model.tool_calling=text"]);
    let mut ctx = ctx(config.clone(), Arc::new(MemorySink::default()));
    let outcome = agent(&server, &config, Provider::OpenAi, true)
        .run(&mut ctx, &Interrupt::new())
        .await
        .unwrap();
    assert_eq!(
        outcome,
        LoopOutcome::Finished {
            summary: "text mode works".into()
        }
    );
    let r = server.requests();
    assert!(
        r[0].body
            .get("tools")
            .is_none_or(|t| t.as_array().is_some_and(|a| a.is_empty())),
        "no native tools in text mode"
    );
    assert!(
        r[0].all_text().contains("<tool_call name=\"TOOL_NAME\">"),
        "instructions rendered into the system prompt"
    );
    assert!(
        r[0].all_text().contains("read_file"),
        "catalog lists the tools"
    );
    let second = r[1].last_user_text().unwrap();
    assert!(
        second.contains("<tool_result") && second.contains("contents of b.py"),
        "{second}"
    );
    let repair = r[2].last_user_text().unwrap();
    assert!(repair.contains("could not be read"), "{repair}");
    // History stays canonical (native) inside the loop.
    assert!(
        ctx.messages
            .iter()
            .any(|m| matches!(m, quire_types::Message::Tool { .. }))
    );
}

#[tokio::test]
async fn interrupt_stops_a_slow_model_call_promptly() {
    let server = ScriptedServer::start(Script::sequence(vec![Reply::Fault(Fault::Delay(
        Duration::from_secs(30),
        Box::new(Reply::Text("late".into())),
    ))]))
    .await;
    let config = config(&[]);
    let mut ctx = ctx(config.clone(), Arc::new(MemorySink::default()));
    let agent = agent(&server, &config, Provider::OpenAi, false);
    let interrupt = Interrupt::new();
    let trigger = interrupt.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(200)).await;
        trigger.trigger();
    });
    let started = std::time::Instant::now();
    let outcome = agent.run(&mut ctx, &interrupt).await.unwrap();
    assert_eq!(outcome, LoopOutcome::Interrupted);
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "took {:?}",
        started.elapsed()
    );
}

#[tokio::test]
async fn a_tool_without_config_text_is_rejected_at_construction() {
    struct Nameless;
    #[async_trait]
    impl Extension for Nameless {
        fn name(&self) -> &str {
            "nameless"
        }
        fn tools(&self) -> Vec<&'static str> {
            vec!["teleport"]
        }
    }
    let server = ScriptedServer::start(Script::sequence(vec![])).await;
    let client = build_client(ClientSettings::new(
        Provider::OpenAi,
        "m",
        server.openai_base_url(),
    ))
    .unwrap();
    let err = Agent::new(client, vec![Arc::new(Nameless)], &config(&[]))
        .err()
        .unwrap()
        .to_string();
    assert!(
        err.contains("teleport") && err.contains("tools/teleport.toml"),
        "{err}"
    );
}

/// Refuses the first finish with a reminder; records what the estimator saw.
struct HoldFinishOnce {
    refused: std::sync::atomic::AtomicBool,
}

#[async_trait]
impl Extension for HoldFinishOnce {
    fn name(&self) -> &str {
        "hold"
    }
    async fn check_finish(&self, _ctx: &mut Ctx) -> Option<String> {
        (!self.refused.swap(true, std::sync::atomic::Ordering::SeqCst))
            .then(|| "Not yet: check the docs.".to_string())
    }
}

/// Counts 7 tokens a request and remembers what the provider said.
#[derive(Default)]
struct Seven {
    observed: std::sync::Mutex<Vec<(u64, u64)>>,
}

impl quire_core::TokenEstimator for Seven {
    fn estimate(&self, _request: &quire_types::ModelRequest) -> u64 {
        7
    }
    fn observe(&self, estimated: u64, reported: u64) {
        self.observed.lock().unwrap().push((estimated, reported));
    }
}

#[tokio::test]
async fn check_finish_turns_finish_into_a_reminder_result_and_the_loop_goes_on() {
    let server = ScriptedServer::start(Script::sequence(vec![
        Reply::ToolCalls(vec![call("finish", json!({"summary": "early"}))]),
        Reply::ToolCalls(vec![call("finish", json!({"summary": "done"}))]),
    ]))
    .await;
    let config = config(&[]);
    let sink = Arc::new(MemorySink::default());
    let mut ctx = ctx(config.clone(), sink.clone());
    let estimator = Arc::new(Seven::default());
    ctx.estimator = estimator.clone();
    let client = {
        let mut settings =
            ClientSettings::new(Provider::OpenAi, "scripted-model", server.openai_base_url());
        settings.stream = false;
        build_client(settings).unwrap()
    };
    let exts: Vec<Arc<dyn Extension>> = vec![
        Arc::new(FakeTools),
        Arc::new(HoldFinishOnce {
            refused: Default::default(),
        }),
    ];
    let outcome = Agent::new(client, exts, &config)
        .unwrap()
        .run(&mut ctx, &Interrupt::new())
        .await
        .unwrap();
    assert_eq!(
        outcome,
        LoopOutcome::Finished {
            summary: "done".into()
        }
    );
    server.assert_clean();
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(
        requests[1].last_tool_result().as_deref(),
        Some("Not yet: check the docs.")
    );
    let events = sink.events();
    assert!(events.iter().any(|e| matches!(
        &e.kind,
        EventKind::ToolResult { is_error: true, views, .. } if views.agent_view == "Not yet: check the docs."
    )));
    assert!(events.iter().all(|e| !matches!(
        &e.kind,
        EventKind::ModelRequest { estimated_tokens, .. } if *estimated_tokens != 7
    )));
    let observed = estimator.observed.lock().unwrap().clone();
    assert_eq!(observed.len(), 2);
    assert!(observed.iter().all(|(e, r)| *e == 7 && *r > 0));
}

/// Appends a line under every `read_file` result.
struct Annotate;

#[async_trait]
impl Extension for Annotate {
    fn name(&self) -> &str {
        "annotate"
    }
    async fn on_tool_result(&self, _ctx: &mut Ctx, action: &Action, output: &mut ToolOutput) {
        if action.call.name == "read_file" {
            output.agent_view.push_str("\n(annotated)");
        }
    }
}

#[tokio::test]
async fn on_tool_result_can_add_to_a_result_before_it_is_recorded_and_sent() {
    let server = ScriptedServer::start(Script::sequence(vec![
        Reply::ToolCalls(vec![call("read_file", json!({"path": "a.py"}))]),
        Reply::ToolCalls(vec![call("finish", json!({"summary": "done"}))]),
    ]))
    .await;
    let config = config(&[]);
    let sink = Arc::new(MemorySink::default());
    let mut ctx = ctx(config.clone(), sink.clone());
    let client = {
        let mut settings =
            ClientSettings::new(Provider::OpenAi, "scripted-model", server.openai_base_url());
        settings.stream = false;
        build_client(settings).unwrap()
    };
    let exts: Vec<Arc<dyn Extension>> = vec![Arc::new(FakeTools), Arc::new(Annotate)];
    Agent::new(client, exts, &config)
        .unwrap()
        .run(&mut ctx, &Interrupt::new())
        .await
        .unwrap();
    server.assert_clean();
    assert_eq!(
        server.requests()[1].last_tool_result().as_deref(),
        Some("1| contents of a.py\n(annotated)")
    );
    assert!(sink.events().iter().any(|e| matches!(
        &e.kind,
        EventKind::ToolResult { views, .. } if views.agent_view.ends_with("(annotated)")
    )));
}
