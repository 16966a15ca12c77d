use quire_llm::{Provider, build_client, ping};
use quire_testkit::{Protocol, Reply, Script, ScriptedServer, call};
use quire_types::{Message, ModelRequest, StopReason, ToolSpec};
use serde_json::{Value, json};

use crate::common::{KEY, MODES, mode, settings};

fn tools() -> Vec<ToolSpec> {
    vec![
        ToolSpec {
            name: "read_file".into(),
            description: "Read a file".into(),
            parameters: json!({"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}),
        },
        ToolSpec {
            name: "list_dir".into(),
            description: "List a directory".into(),
            parameters: json!({"type":"object","properties":{"dir":{"type":"string"}}}),
        },
    ]
}

fn start_request() -> ModelRequest {
    ModelRequest {
        messages: vec![
            Message::system("You are a careful coding agent."),
            Message::user("Read a.txt and list the directory."),
        ],
        tools: tools(),
        temperature: Some(0.2),
        max_output_tokens: Some(512),
    }
}

#[tokio::test]
async fn text_answer_in_every_mode_with_auth_headers() {
    for (provider, stream) in MODES {
        let m = mode(provider, stream);
        let server = ScriptedServer::start(Script::sequence(vec![Reply::text(
            "Hello from the scripted model, in pieces.",
        )]))
        .await
        .with_api_key(KEY)
        .with_model("served-model");
        let client = build_client(settings(provider, stream, &server)).unwrap();
        assert_eq!(client.provider(), provider);
        assert_eq!(client.model(), "configured-model");

        let response = client.complete(&start_request()).await.unwrap();
        assert_eq!(
            response.content, "Hello from the scripted model, in pieces.",
            "{m}"
        );
        assert!(response.tool_calls.is_empty(), "{m}");
        assert_eq!(response.stop_reason, StopReason::EndTurn, "{m}");
        assert_eq!(response.model, "served-model", "{m}");
        assert!(
            response.usage.prompt_tokens > 0 && response.usage.completion_tokens > 0,
            "{m}: {:?}",
            response.usage
        );

        let requests = server.requests();
        assert_eq!(requests.len(), 1, "{m}");
        let r = &requests[0];
        assert_eq!(r.stream, stream, "{m}");
        assert_eq!(r.body["model"], "configured-model", "{m}");
        match provider {
            Provider::OpenAi => {
                assert_eq!(r.protocol, Protocol::OpenAi);
                assert_eq!(r.path, "/v1/chat/completions");
                assert_eq!(
                    r.header("authorization"),
                    Some(format!("Bearer {KEY}").as_str())
                );
                assert_eq!(r.body["max_tokens"], 512, "{m}");
                assert_eq!(r.body["messages"][0]["role"], "system");
                if stream {
                    assert_eq!(r.body["stream_options"]["include_usage"], true);
                }
            }
            Provider::Anthropic => {
                assert_eq!(r.protocol, Protocol::Anthropic);
                assert_eq!(r.path, "/v1/messages");
                assert_eq!(r.header("x-api-key"), Some(KEY));
                assert_eq!(r.header("anthropic-version"), Some("2023-06-01"));
                assert!(r.header("authorization").is_none());
                assert_eq!(
                    r.body["system"][0]["text"],
                    "You are a careful coding agent."
                );
                assert_eq!(r.body["max_tokens"], 512);
            }
        }
        server.assert_clean();
    }
}

#[tokio::test]
async fn no_key_means_no_auth_header() {
    for (provider, stream) in [(Provider::OpenAi, true), (Provider::Anthropic, false)] {
        let server = ScriptedServer::start(Script::sequence(vec![Reply::text("ok")])).await;
        let mut s = settings(provider, stream, &server);
        s.api_key = None;
        let client = build_client(s).unwrap();
        client.complete(&start_request()).await.unwrap();
        let r = &server.requests()[0];
        assert!(r.header("authorization").is_none(), "{r:?}");
        assert!(r.header("x-api-key").is_none(), "{r:?}");
        server.assert_clean();
    }
}

#[tokio::test]
async fn extra_headers_are_sent() {
    let server = ScriptedServer::start(Script::sequence(vec![Reply::text("ok")])).await;
    let mut s = settings(Provider::OpenAi, false, &server);
    s.extra_headers = vec![("x-gateway-tenant".into(), "team-a".into())];
    build_client(s)
        .unwrap()
        .complete(&start_request())
        .await
        .unwrap();
    assert_eq!(
        server.requests()[0].header("x-gateway-tenant"),
        Some("team-a")
    );
}

/// Two turns: the model calls two tools, the results go back, it answers.
#[tokio::test]
async fn tool_calls_round_trip_with_history() {
    for (provider, stream) in MODES {
        let m = mode(provider, stream);
        let server = ScriptedServer::start(Script::sequence(vec![
            Reply::TextAndToolCalls(
                "Let me look.".into(),
                vec![
                    call("read_file", json!({"path": "a.txt"})),
                    call("list_dir", json!({"dir": "."})),
                ],
            ),
            Reply::text("All done."),
        ]))
        .await
        .with_api_key(KEY);
        let client = build_client(settings(provider, stream, &server)).unwrap();

        let mut request = start_request();
        let first = client.complete(&request).await.unwrap();
        assert_eq!(first.stop_reason, StopReason::ToolUse, "{m}");
        assert_eq!(first.content, "Let me look.", "{m}");
        assert_eq!(first.tool_calls.len(), 2, "{m}");
        let (a, b) = (&first.tool_calls[0], &first.tool_calls[1]);
        assert_eq!(
            (a.name.as_str(), b.name.as_str()),
            ("read_file", "list_dir"),
            "{m}"
        );
        let args: Value = serde_json::from_str(&a.arguments).unwrap();
        assert_eq!(args, json!({"path": "a.txt"}), "{m}");
        assert_ne!(a.id, b.id, "{m}");
        assert!(!a.id.is_empty(), "{m}");

        request.messages.push(Message::assistant(
            first.content.clone(),
            first.tool_calls.clone(),
        ));
        request
            .messages
            .push(Message::tool(&a.id, "read_file", "hello\n", false));
        request
            .messages
            .push(Message::tool(&b.id, "list_dir", "permission denied", true));
        let second = client.complete(&request).await.unwrap();
        assert_eq!(second.content, "All done.", "{m}");
        assert_eq!(second.stop_reason, StopReason::EndTurn, "{m}");

        let body = &server.requests()[1].body;
        match provider {
            Provider::OpenAi => {
                let msgs = body["messages"].as_array().unwrap();
                assert_eq!(msgs.len(), 5, "{m}");
                assert_eq!(msgs[2]["tool_calls"][0]["id"], a.id.as_str(), "{m}");
                assert_eq!(msgs[2]["tool_calls"][1]["function"]["name"], "list_dir");
                assert_eq!(msgs[3]["role"], "tool");
                assert_eq!(msgs[3]["tool_call_id"], a.id.as_str());
                assert_eq!(msgs[4]["tool_call_id"], b.id.as_str());
                assert_eq!(body["tools"][0]["type"], "function");
            }
            Provider::Anthropic => {
                let msgs = body["messages"].as_array().unwrap();
                assert_eq!(msgs.len(), 3, "{m}: {body:#}");
                assert_eq!(msgs[1]["role"], "assistant");
                assert_eq!(msgs[1]["content"][1]["type"], "tool_use");
                assert_eq!(msgs[1]["content"][1]["id"], a.id.as_str());
                assert_eq!(msgs[1]["content"][1]["input"], json!({"path": "a.txt"}));
                let results = msgs[2]["content"].as_array().unwrap();
                assert_eq!(results.len(), 2);
                assert_eq!(results[0]["type"], "tool_result");
                assert_eq!(results[0]["tool_use_id"], a.id.as_str());
                assert_eq!(results[0]["is_error"], false);
                assert_eq!(results[1]["tool_use_id"], b.id.as_str());
                assert_eq!(results[1]["is_error"], true);
                // Cache markers: last system block, last tool, last block of the last message.
                assert_eq!(body["system"][0]["cache_control"]["type"], "ephemeral");
                assert_eq!(body["tools"][1]["cache_control"]["type"], "ephemeral");
                assert!(body["tools"][0].get("cache_control").is_none());
                assert_eq!(results[1]["cache_control"]["type"], "ephemeral");
                assert!(results[0].get("cache_control").is_none());
                assert!(msgs[1]["content"][1].get("cache_control").is_none());
            }
        }
        server.assert_clean();
    }
}

/// The second request shares a prefix with the first, so the server
/// reports cached tokens; the client must carry them through.
#[tokio::test]
async fn usage_includes_cached_tokens() {
    for (provider, stream) in MODES {
        let m = mode(provider, stream);
        let server = ScriptedServer::start(Script::sequence(vec![
            Reply::text("one"),
            Reply::text("two"),
        ]))
        .await;
        let client = build_client(settings(provider, stream, &server)).unwrap();
        let mut request = start_request();
        let first = client.complete(&request).await.unwrap();
        assert_eq!(first.usage.cached_tokens, 0, "{m}");
        request.messages.push(Message::assistant("one", vec![]));
        request.messages.push(Message::user("and again"));
        let second = client.complete(&request).await.unwrap();
        let u = second.usage;
        assert!(u.cached_tokens > 0, "{m}: {u:?}");
        // prompt_tokens is the whole prompt, cached part included.
        assert!(u.prompt_tokens > u.cached_tokens, "{m}: {u:?}");
        assert!(u.prompt_tokens > first.usage.prompt_tokens, "{m}: {u:?}");
        server.assert_clean();
    }
}

#[tokio::test]
async fn ping_reports_model_and_latency() {
    let server = ScriptedServer::start(Script::sequence(vec![Reply::text("pong")]))
        .await
        .with_model("served-model");
    let client = build_client(settings(Provider::Anthropic, true, &server)).unwrap();
    let report = ping(client.as_ref()).await.unwrap();
    assert_eq!(report.reply, "pong");
    assert_eq!(report.model, "served-model");
    assert!(report.usage.prompt_tokens > 0);
    assert!(report.latency.as_secs() < 5);
    let body = &server.requests()[0].body;
    assert_eq!(body["max_tokens"], 16);
    assert!(server.requests()[0].all_text().contains("pong"));
}
