use std::sync::Arc;

use quire_llm::{LlmError, ModelClient, Provider, RecordingClient, ReplayClient, build_client};
use quire_testkit::{Reply, Script, ScriptedServer, call};
use quire_types::{Message, ModelRequest, Redactor, ToolCall, ToolSpec};
use serde_json::json;

use crate::common::{KEY, settings};

fn tools() -> Vec<ToolSpec> {
    vec![ToolSpec {
        name: "read_file".into(),
        description: "Read a file".into(),
        parameters: json!({"type":"object"}),
    }]
}

/// Runs a two-step session against `client`; returns the requests sent.
async fn session(client: &dyn ModelClient, task: &str) -> Result<Vec<ModelRequest>, LlmError> {
    let mut request = ModelRequest {
        messages: vec![Message::system("be brief"), Message::user(task)],
        tools: tools(),
        ..Default::default()
    };
    let first = client.complete(&request).await?;
    let mut sent = vec![request.clone()];
    request
        .messages
        .push(Message::assistant(first.content, first.tool_calls.clone()));
    for c in &first.tool_calls {
        request
            .messages
            .push(Message::tool(&c.id, &c.name, "file body", false));
    }
    client.complete(&request).await?;
    sent.push(request);
    Ok(sent)
}

#[tokio::test]
async fn record_then_replay_without_the_server() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("session.jsonl");
    let server = ScriptedServer::start(Script::sequence(vec![
        Reply::ToolCalls(vec![call("read_file", json!({"path": "a.txt"}))]),
        Reply::text("The file says hello."),
    ]))
    .await
    .with_api_key(KEY)
    .with_model("served-model");
    let inner = build_client(settings(Provider::Anthropic, true, &server)).unwrap();
    let mut redactor = Redactor::new();
    redactor.add_secret(KEY);
    let recorder = RecordingClient::new(inner, &path).with_redactor(redactor);

    let task = format!("read a.txt; my key is {KEY}");
    let mut live = Vec::new();
    let mut request = ModelRequest {
        messages: vec![Message::system("be brief"), Message::user(&task)],
        tools: tools(),
        ..Default::default()
    };
    let first = recorder.complete(&request).await.unwrap();
    // Flushed per exchange: the line is on disk before the next call.
    assert_eq!(std::fs::read_to_string(&path).unwrap().lines().count(), 1);
    live.push(first.clone());
    request.messages.push(Message::assistant(
        first.content.clone(),
        first.tool_calls.clone(),
    ));
    request.messages.push(Message::tool(
        &first.tool_calls[0].id,
        "read_file",
        "hello",
        false,
    ));
    live.push(recorder.complete(&request).await.unwrap());
    drop(server);

    let text = std::fs::read_to_string(&path).unwrap();
    assert_eq!(text.lines().count(), 2);
    assert!(!text.contains(KEY), "key leaked into the recording");
    assert!(text.contains("[REDACTED]"));
    let line: serde_json::Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
    assert!(line.get("request").is_some() && line.get("response").is_some());

    let replay = ReplayClient::open(&path).unwrap();
    assert_eq!(replay.len(), 2);
    assert_eq!(replay.provider(), Provider::Anthropic);
    assert_eq!(replay.model(), "configured-model");
    // Same session again, with the live key in the text: text may differ.
    let mut request = ModelRequest {
        messages: vec![Message::system("be brief"), Message::user(&task)],
        tools: tools(),
        ..Default::default()
    };
    let r1 = replay.complete(&request).await.unwrap();
    assert_eq!(r1, live[0]);
    request.messages.push(Message::assistant(
        r1.content.clone(),
        r1.tool_calls.clone(),
    ));
    request.messages.push(Message::tool(
        &r1.tool_calls[0].id,
        "read_file",
        "hello again",
        false,
    ));
    let r2 = replay.complete(&request).await.unwrap();
    assert_eq!(r2, live[1]);
    assert_eq!(r2.content, "The file says hello.");

    let err = replay.complete(&request).await.unwrap_err();
    match err {
        LlmError::Replay { detail } => {
            assert_eq!(detail, "recording exhausted after 2 exchanges")
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn replay_detects_divergence_precisely() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("rec.jsonl");
    let server = ScriptedServer::start(Script::sequence(vec![
        Reply::ToolCalls(vec![call("read_file", json!({"path": "a.txt"}))]),
        Reply::text("done"),
    ]))
    .await;
    let inner = build_client(settings(Provider::OpenAi, false, &server)).unwrap();
    let recorder = Arc::new(RecordingClient::new(inner, &path));
    session(recorder.as_ref(), "task").await.unwrap();

    // Same structure, reworded task: fine.
    let replay = ReplayClient::open(&path).unwrap();
    session(&replay, "the task, reworded").await.unwrap();
    assert_eq!(replay.remaining(), 0);

    // A run whose second request carries different tool-call arguments.
    let replay = ReplayClient::open(&path).unwrap();
    let mut request = ModelRequest {
        messages: vec![Message::system("be brief"), Message::user("task")],
        tools: tools(),
        ..Default::default()
    };
    let first = replay.complete(&request).await.unwrap();
    let id = first.tool_calls[0].id.clone();
    request.messages.push(Message::assistant(
        "",
        vec![ToolCall::new(&id, "read_file", r#"{"path":"b.txt"}"#)],
    ));
    request
        .messages
        .push(Message::tool(&id, "read_file", "x", false));
    let err = replay.complete(&request).await.unwrap_err();
    let LlmError::Replay { detail } = err else {
        panic!("{err:?}")
    };
    assert!(detail.contains("step 2"), "{detail}");
    assert!(detail.contains("messages[2]"), "{detail}");
    assert!(
        detail.contains("a.txt") && detail.contains("b.txt"),
        "{detail}"
    );
    // The divergent request did not consume the step.
    assert_eq!(replay.remaining(), 1);

    // Offering a different tool set diverges too.
    let replay = ReplayClient::open(&path).unwrap();
    let request = ModelRequest {
        messages: vec![Message::system("be brief"), Message::user("task")],
        tools: vec![],
        ..Default::default()
    };
    let err = replay.complete(&request).await.unwrap_err();
    assert!(
        err.to_string().contains("step 1") && err.to_string().contains("tools"),
        "{err}"
    );
}

#[tokio::test]
async fn replay_rejects_a_corrupt_recording() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bad.jsonl");
    std::fs::write(&path, "{\"request\":{\"messages\":[]},\"response\":{\"content\":\"x\",\"usage\":{\"prompt_tokens\":1,\"completion_tokens\":1}}}\nnot json\n").unwrap();
    let err = ReplayClient::open(&path).err().unwrap();
    assert!(err.to_string().contains("line 2"), "{err}");
    let missing = ReplayClient::open(dir.path().join("missing.jsonl"))
        .err()
        .unwrap();
    assert!(matches!(missing, LlmError::Io { .. }), "{missing:?}");
}
