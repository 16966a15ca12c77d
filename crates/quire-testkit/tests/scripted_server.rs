//! Drives the scripted server over real HTTP with reqwest, the way the model
//! clients will.

use std::io::{Read, Write};
use std::time::{Duration, Instant};

use futures::StreamExt;
use quire_testkit::{
    FAULT_STREAM_TEXT, Fault, Protocol, Reply, Script, ScriptedCall, ScriptedServer, call,
};
use serde_json::{Value, json};

const KEY: &str = "sk-test";

fn http() -> reqwest::Client {
    reqwest::Client::new()
}

async fn post_openai(server: &ScriptedServer, body: Value) -> reqwest::Response {
    http()
        .post(format!("{}/chat/completions", server.openai_base_url()))
        .bearer_auth(KEY)
        .json(&body)
        .send()
        .await
        .expect("request sent")
}

async fn post_anthropic(server: &ScriptedServer, body: Value) -> reqwest::Response {
    http()
        .post(format!("{}/v1/messages", server.anthropic_base_url()))
        .header("x-api-key", KEY)
        .header("anthropic-version", "2023-06-01")
        .json(&body)
        .send()
        .await
        .expect("request sent")
}

fn openai_body(messages: Value) -> Value {
    json!({"model": "gpt-x", "messages": messages})
}

fn anthropic_body(messages: Value) -> Value {
    json!({"model": "claude-x", "max_tokens": 256, "messages": messages})
}

/// (event name, data) for each SSE event.
fn parse_sse(raw: &str) -> Vec<(Option<String>, String)> {
    raw.split("\n\n")
        .filter(|block| !block.trim().is_empty())
        .map(|block| {
            let mut event = None;
            let mut data = String::new();
            for line in block.lines() {
                if let Some(e) = line.strip_prefix("event: ") {
                    event = Some(e.to_string());
                } else if let Some(d) = line.strip_prefix("data: ") {
                    data.push_str(d);
                }
            }
            (event, data)
        })
        .collect()
}

fn json_of(data: &str) -> Value {
    serde_json::from_str(data).unwrap_or_else(|e| panic!("not JSON ({e}): {data}"))
}

fn one_user(text: &str) -> Value {
    json!([{"role": "user", "content": text}])
}

// ---------------------------------------------------------------- OpenAI

#[tokio::test]
async fn openai_non_stream_text_has_completion_shape_and_usage() {
    let server =
        ScriptedServer::start(Script::sequence(vec![Reply::text("Hello there, friend")])).await;
    let resp = post_openai(&server, openai_body(one_user("hi"))).await;
    assert_eq!(resp.status(), 200);
    let body: Value = resp.json().await.unwrap();
    assert_eq!(body["object"], "chat.completion");
    assert_eq!(body["model"], "scripted-model");
    let choice = &body["choices"][0];
    assert_eq!(choice["index"], 0);
    assert_eq!(choice["message"]["role"], "assistant");
    assert_eq!(choice["message"]["content"], "Hello there, friend");
    assert!(choice["message"].get("tool_calls").is_none());
    assert_eq!(choice["finish_reason"], "stop");

    let canonical = r#"[{"content":"hi","role":"user"}]"#;
    let prompt = (canonical.len() / 4) as u64;
    let usage = &body["usage"];
    assert_eq!(usage["prompt_tokens"], prompt);
    assert_eq!(usage["completion_tokens"], 19 / 4);
    assert_eq!(usage["total_tokens"], prompt + 19 / 4);
    assert_eq!(usage["prompt_tokens_details"]["cached_tokens"], 0);

    let reqs = server.requests();
    assert_eq!(reqs.len(), 1);
    assert_eq!(reqs[0].protocol, Protocol::OpenAi);
    assert_eq!(reqs[0].path, "/v1/chat/completions");
    assert!(!reqs[0].stream);
    assert_eq!(reqs[0].header("authorization"), Some("Bearer sk-test"));
    assert_eq!(reqs[0].last_user_text().as_deref(), Some("hi"));
    assert_eq!(server.remaining(), 0);
    server.assert_clean();
}

#[tokio::test]
async fn openai_non_stream_tool_calls_get_unique_ids_and_raw_arguments() {
    let server = ScriptedServer::start(Script::sequence(vec![Reply::ToolCalls(vec![
        call("read_file", json!({"path": "a.txt"})),
        ScriptedCall {
            name: "bad".into(),
            arguments: "{not json".into(),
        },
    ])]))
    .await
    .with_model("gpt-test");
    let resp = post_openai(&server, openai_body(one_user("read a.txt"))).await;
    let body: Value = resp.json().await.unwrap();
    assert_eq!(body["model"], "gpt-test");
    let msg = &body["choices"][0]["message"];
    assert!(msg["content"].is_null());
    let calls = msg["tool_calls"].as_array().unwrap();
    assert_eq!(calls.len(), 2);
    assert_eq!(calls[0]["id"], "call_1");
    assert_eq!(calls[1]["id"], "call_2");
    assert_eq!(calls[0]["type"], "function");
    assert_eq!(calls[0]["function"]["name"], "read_file");
    let args: Value =
        serde_json::from_str(calls[0]["function"]["arguments"].as_str().unwrap()).unwrap();
    assert_eq!(args, json!({"path": "a.txt"}));
    assert_eq!(calls[1]["function"]["arguments"], "{not json");
    assert_eq!(body["choices"][0]["finish_reason"], "tool_calls");
    let completion = ("read_file".len() + r#"{"path":"a.txt"}"#.len() + "bad".len() + 9) / 4;
    assert_eq!(body["usage"]["completion_tokens"], completion as u64);
}

#[tokio::test]
async fn openai_stream_fragments_reassemble_into_text_and_valid_arguments() {
    let args0 = json!({"path": "src/main.rs", "limit": 200, "note": "ünïcode"});
    let args1 = json!({"pattern": "fn main"});
    let text = "Let me check that file for you.";
    let server = ScriptedServer::start(Script::sequence(vec![Reply::TextAndToolCalls(
        text.into(),
        vec![
            call("read_file", args0.clone()),
            call("grep", args1.clone()),
        ],
    )]))
    .await;
    let mut body = openai_body(one_user("look"));
    body["stream"] = json!(true);
    body["stream_options"] = json!({"include_usage": true});
    let resp = post_openai(&server, body).await;
    assert_eq!(resp.status(), 200);
    assert_eq!(resp.headers()["content-type"], "text/event-stream");
    let events = parse_sse(&resp.text().await.unwrap());
    assert_eq!(events.last().unwrap().1, "[DONE]");
    let chunks: Vec<Value> = events[..events.len() - 1]
        .iter()
        .map(|(_, d)| json_of(d))
        .collect();

    let mut content = String::new();
    let mut calls: Vec<(String, String, String, usize)> = Vec::new(); // id, name, args, fragments
    let mut finish = None;
    let mut usage = None;
    for c in &chunks {
        assert_eq!(c["object"], "chat.completion.chunk");
        let choices = c["choices"].as_array().unwrap();
        if choices.is_empty() {
            usage = Some(c["usage"].clone());
            continue;
        }
        assert!(usage.is_none(), "usage chunk must come last");
        assert!(c["usage"].is_null());
        let delta = &choices[0]["delta"];
        if let Some(t) = delta["content"].as_str() {
            content.push_str(t);
        }
        for tc in delta["tool_calls"].as_array().into_iter().flatten() {
            let i = tc["index"].as_u64().unwrap() as usize;
            if let Some(id) = tc["id"].as_str() {
                assert_eq!(i, calls.len(), "a new call starts at the next index");
                calls.push((
                    id.into(),
                    tc["function"]["name"].as_str().unwrap().into(),
                    String::new(),
                    0,
                ));
            }
            let frag = tc["function"]["arguments"].as_str().unwrap_or("");
            if !frag.is_empty() {
                calls[i].2.push_str(frag);
                calls[i].3 += 1;
            }
        }
        if let Some(f) = choices[0]["finish_reason"].as_str() {
            finish = Some(f.to_string());
        }
    }
    assert_eq!(content, text);
    assert_eq!(finish.as_deref(), Some("tool_calls"));
    assert_eq!(calls.len(), 2);
    assert_eq!(
        (calls[0].0.as_str(), calls[0].1.as_str()),
        ("call_1", "read_file")
    );
    assert_eq!(
        (calls[1].0.as_str(), calls[1].1.as_str()),
        ("call_2", "grep")
    );
    assert!(
        calls[0].3 > 3,
        "arguments should arrive in several fragments"
    );
    assert_eq!(serde_json::from_str::<Value>(&calls[0].2).unwrap(), args0);
    assert_eq!(serde_json::from_str::<Value>(&calls[1].2).unwrap(), args1);
    let usage = usage.expect("include_usage asks for a usage chunk");
    assert!(usage["prompt_tokens"].as_u64().unwrap() >= 1);
    assert_eq!(usage["prompt_tokens_details"]["cached_tokens"], 0);
    assert!(server.requests()[0].stream);
}

#[tokio::test]
async fn openai_stream_without_include_usage_has_no_usage_chunk() {
    let server = ScriptedServer::start(Script::sequence(vec![Reply::text("short")])).await;
    let mut body = openai_body(one_user("hi"));
    body["stream"] = json!(true);
    let raw = post_openai(&server, body).await.text().await.unwrap();
    let events = parse_sse(&raw);
    assert_eq!(events.last().unwrap().1, "[DONE]");
    for (_, data) in &events[..events.len() - 1] {
        let c = json_of(data);
        assert!(c.get("usage").is_none(), "unexpected usage in {c}");
        assert_eq!(c["choices"].as_array().unwrap().len(), 1);
    }
    let last = json_of(&events[events.len() - 2].1);
    assert_eq!(last["choices"][0]["finish_reason"], "stop");
}

#[tokio::test]
async fn models_endpoint_lists_the_configured_model_in_each_shape() {
    let server = ScriptedServer::start(Script::sequence(vec![]))
        .await
        .with_model("m-1");
    let oa: Value = http()
        .get(format!("{}/models", server.openai_base_url()))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(oa["object"], "list");
    assert_eq!(oa["data"][0]["id"], "m-1");
    let an: Value = http()
        .get(format!("{}/v1/models", server.anthropic_base_url()))
        .header("anthropic-version", "2023-06-01")
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(an["data"][0]["type"], "model");
    assert_eq!(an["data"][0]["id"], "m-1");
    let reqs = server.requests();
    assert_eq!(reqs.len(), 2);
    assert_eq!(reqs[1].protocol, Protocol::Anthropic);
    server.assert_clean();
}

// ------------------------------------------------------------- Anthropic

#[tokio::test]
async fn anthropic_non_stream_text_and_tool_use_blocks() {
    let server = ScriptedServer::start(Script::sequence(vec![Reply::TextAndToolCalls(
        "I'll read it.".into(),
        vec![
            call("read_file", json!({"path": "x"})),
            ScriptedCall {
                name: "broken".into(),
                arguments: "{oops".into(),
            },
        ],
    )]))
    .await;
    let mut body = anthropic_body(one_user("read x"));
    body["system"] = json!("You are terse.");
    body["tools"] =
        json!([{"name": "read_file", "description": "Read", "input_schema": {"type": "object"}}]);
    let resp = post_anthropic(&server, body).await;
    assert_eq!(resp.status(), 200);
    let msg: Value = resp.json().await.unwrap();
    assert_eq!(msg["type"], "message");
    assert_eq!(msg["role"], "assistant");
    assert!(msg["id"].as_str().unwrap().starts_with("msg_"));
    assert_eq!(msg["stop_reason"], "tool_use");
    let content = msg["content"].as_array().unwrap();
    assert_eq!(content.len(), 3);
    assert_eq!(content[0], json!({"type": "text", "text": "I'll read it."}));
    assert_eq!(content[1]["type"], "tool_use");
    assert_eq!(content[1]["id"], "toolu_1");
    assert_eq!(content[1]["name"], "read_file");
    assert_eq!(content[1]["input"], json!({"path": "x"}));
    assert_eq!(content[2]["id"], "toolu_2");
    assert_eq!(
        content[2]["input"], "{oops",
        "invalid arguments pass through as a string"
    );
    let usage = &msg["usage"];
    let completion = ("I'll read it.".len() + "read_file".len() + 12 + "broken".len() + 5) / 4;
    assert_eq!(usage["output_tokens"], completion as u64);
    assert!(usage["input_tokens"].as_u64().unwrap() >= 1);
    assert_eq!(usage["cache_read_input_tokens"], 0);
    assert_eq!(usage["cache_creation_input_tokens"], 0);
    let req = &server.requests()[0];
    assert_eq!(req.protocol, Protocol::Anthropic);
    assert_eq!(req.tool_names(), vec!["read_file".to_string()]);
    server.assert_clean();
}

#[tokio::test]
async fn anthropic_stream_events_reassemble_text_and_input_json() {
    let args = json!({"command": "cargo test --workspace", "timeout_secs": 120});
    let text = "Running the test suite now.";
    let server = ScriptedServer::start(Script::sequence(vec![Reply::TextAndToolCalls(
        text.into(),
        vec![call("bash", args.clone())],
    )]))
    .await;
    let mut body = anthropic_body(one_user("run tests"));
    body["stream"] = json!(true);
    let resp = post_anthropic(&server, body).await;
    assert_eq!(resp.status(), 200);
    let events = parse_sse(&resp.text().await.unwrap());
    let names: Vec<&str> = events.iter().map(|(e, _)| e.as_deref().unwrap()).collect();
    assert_eq!(names[..3], ["message_start", "ping", "content_block_start"]);
    assert_eq!(names[names.len() - 2..], ["message_delta", "message_stop"]);

    let mut blocks: Vec<(Value, String, usize)> = Vec::new(); // start block, accumulated, deltas
    let mut stops = 0;
    let mut stop_reason = None;
    let mut output_tokens = None;
    let mut input_tokens = None;
    for (event, data) in &events {
        let v = json_of(data);
        assert_eq!(
            v["type"],
            event.as_deref().unwrap(),
            "event name matches data type"
        );
        match event.as_deref().unwrap() {
            "message_start" => input_tokens = v["message"]["usage"]["input_tokens"].as_u64(),
            "content_block_start" => {
                assert_eq!(v["index"], blocks.len() as u64);
                blocks.push((v["content_block"].clone(), String::new(), 0));
            }
            "content_block_delta" => {
                let b = &mut blocks[v["index"].as_u64().unwrap() as usize];
                let piece = match v["delta"]["type"].as_str().unwrap() {
                    "text_delta" => v["delta"]["text"].as_str().unwrap(),
                    "input_json_delta" => v["delta"]["partial_json"].as_str().unwrap(),
                    other => panic!("unexpected delta {other}"),
                };
                b.1.push_str(piece);
                b.2 += 1;
            }
            "content_block_stop" => stops += 1,
            "message_delta" => {
                stop_reason = v["delta"]["stop_reason"].as_str().map(str::to_string);
                output_tokens = v["usage"]["output_tokens"].as_u64();
            }
            _ => {}
        }
    }
    assert_eq!(blocks.len(), 2);
    assert_eq!(stops, 2);
    assert_eq!(blocks[0].0["type"], "text");
    assert_eq!(blocks[0].1, text);
    assert_eq!(blocks[1].0["type"], "tool_use");
    assert_eq!(blocks[1].0["id"], "toolu_1");
    assert_eq!(blocks[1].0["name"], "bash");
    assert!(
        blocks[1].2 > 3,
        "input JSON should arrive in several fragments"
    );
    assert_eq!(serde_json::from_str::<Value>(&blocks[1].1).unwrap(), args);
    assert_eq!(stop_reason.as_deref(), Some("tool_use"));
    let expected_out = (text.len() + "bash".len() + args.to_string().len()) / 4;
    assert_eq!(output_tokens, Some(expected_out as u64));
    assert!(input_tokens.unwrap() >= 1);
}

// ------------------------------------------------------------------ auth

#[tokio::test]
async fn wrong_or_missing_key_gets_provider_shaped_401_without_consuming_script() {
    let server = ScriptedServer::start(Script::sequence(vec![
        Reply::text("ok1"),
        Reply::text("ok2"),
    ]))
    .await
    .with_api_key("sk-right");
    let url = format!("{}/chat/completions", server.openai_base_url());
    let body = openai_body(one_user("hi"));
    let missing = http().post(&url).json(&body).send().await.unwrap();
    assert_eq!(missing.status(), 401);
    let err: Value = missing.json().await.unwrap();
    assert_eq!(err["error"]["code"], "invalid_api_key");
    let wrong = http()
        .post(&url)
        .bearer_auth("sk-wrong")
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(wrong.status(), 401);
    let right = http()
        .post(&url)
        .bearer_auth("sk-right")
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(right.status(), 200);
    let ok: Value = right.json().await.unwrap();
    assert_eq!(ok["choices"][0]["message"]["content"], "ok1");

    let url = format!("{}/v1/messages", server.anthropic_base_url());
    let body = anthropic_body(one_user("hi"));
    let bearer_only = http()
        .post(&url)
        .bearer_auth("sk-right")
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(
        bearer_only.status(),
        401,
        "Anthropic wants x-api-key, not a bearer token"
    );
    let err: Value = bearer_only.json().await.unwrap();
    assert_eq!(err["type"], "error");
    assert_eq!(err["error"]["type"], "authentication_error");
    let wrong = http()
        .post(&url)
        .header("x-api-key", "nope")
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(wrong.status(), 401);
    let right = http()
        .post(&url)
        .header("x-api-key", "sk-right")
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(right.status(), 200);
    let ok: Value = right.json().await.unwrap();
    assert_eq!(ok["content"][0]["text"], "ok2");

    assert_eq!(server.requests().len(), 6);
    assert_eq!(server.remaining(), 0);
    server.assert_clean();
}

// ---------------------------------------------------------------- faults

#[tokio::test]
async fn rate_limit_fault_consumes_one_step_so_a_retry_succeeds() {
    let server = ScriptedServer::start(Script::sequence(vec![
        Reply::Fault(Fault::RateLimited {
            retry_after_secs: 7,
        }),
        Reply::text("after retry"),
        Reply::Fault(Fault::RateLimited {
            retry_after_secs: 2,
        }),
        Reply::text("anthropic after retry"),
    ]))
    .await;
    let first = post_openai(&server, openai_body(one_user("hi"))).await;
    assert_eq!(first.status(), 429);
    assert_eq!(first.headers()["retry-after"], "7");
    let err: Value = first.json().await.unwrap();
    assert_eq!(err["error"]["code"], "rate_limit_exceeded");
    assert_eq!(server.remaining(), 3);
    let second: Value = post_openai(&server, openai_body(one_user("hi")))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(second["choices"][0]["message"]["content"], "after retry");

    let first = post_anthropic(&server, anthropic_body(one_user("hi"))).await;
    assert_eq!(first.status(), 429);
    assert_eq!(first.headers()["retry-after"], "2");
    let err: Value = first.json().await.unwrap();
    assert_eq!(err["error"]["type"], "rate_limit_error");
    let second: Value = post_anthropic(&server, anthropic_body(one_user("hi")))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(second["content"][0]["text"], "anthropic after retry");
    assert_eq!(server.remaining(), 0);
    server.assert_clean();
}

#[tokio::test]
async fn server_error_and_custom_status_faults() {
    let not_found =
        r#"{"error":{"message":"The model `nope` does not exist","code":"model_not_found"}}"#;
    let server = ScriptedServer::start(Script::sequence(vec![
        Reply::Fault(Fault::ServerError),
        Reply::Fault(Fault::ServerError),
        Reply::Fault(Fault::Status(404, not_found.into())),
        Reply::Fault(Fault::Status(400, "context_length_exceeded".into())),
    ]))
    .await;
    let r = post_openai(&server, openai_body(one_user("hi"))).await;
    assert_eq!(r.status(), 500);
    assert_eq!(
        r.json::<Value>().await.unwrap()["error"]["type"],
        "server_error"
    );
    let r = post_anthropic(&server, anthropic_body(one_user("hi"))).await;
    assert_eq!(r.status(), 500);
    assert_eq!(
        r.json::<Value>().await.unwrap()["error"]["type"],
        "api_error"
    );
    let r = post_openai(&server, openai_body(one_user("hi"))).await;
    assert_eq!(r.status(), 404);
    assert_eq!(r.headers()["content-type"], "application/json");
    assert_eq!(r.text().await.unwrap(), not_found);
    let r = post_openai(&server, openai_body(one_user("hi"))).await;
    assert_eq!(r.status(), 400);
    assert_eq!(r.headers()["content-type"], "text/plain");
    assert_eq!(r.text().await.unwrap(), "context_length_exceeded");
    server.assert_clean();
}

#[tokio::test]
async fn delay_serves_the_inner_reply_late_and_can_trip_a_client_timeout() {
    let server = ScriptedServer::start(Script::sequence(vec![
        Reply::Fault(Fault::Delay(
            Duration::from_millis(300),
            Box::new(Reply::text("late")),
        )),
        Reply::Fault(Fault::Delay(
            Duration::from_secs(3),
            Box::new(Reply::text("never")),
        )),
    ]))
    .await;
    let started = Instant::now();
    let body: Value = post_openai(&server, openai_body(one_user("hi")))
        .await
        .json()
        .await
        .unwrap();
    assert!(started.elapsed() >= Duration::from_millis(300));
    assert_eq!(body["choices"][0]["message"]["content"], "late");

    let client = reqwest::Client::builder()
        .timeout(Duration::from_millis(200))
        .build()
        .unwrap();
    let started = Instant::now();
    let err = client
        .post(format!("{}/chat/completions", server.openai_base_url()))
        .json(&openai_body(one_user("hi")))
        .send()
        .await
        .expect_err("the delay exceeds the client timeout");
    assert!(err.is_timeout(), "{err}");
    assert!(started.elapsed() < Duration::from_secs(2));
}

#[tokio::test]
async fn malformed_json_fault_breaks_bodies_and_stream_payloads() {
    let server = ScriptedServer::start(Script::sequence(vec![
        Reply::Fault(Fault::MalformedJson),
        Reply::Fault(Fault::MalformedJson),
        Reply::Fault(Fault::MalformedJson),
    ]))
    .await;
    let r = post_openai(&server, openai_body(one_user("hi"))).await;
    assert_eq!(r.status(), 200);
    assert!(serde_json::from_str::<Value>(&r.text().await.unwrap()).is_err());

    let mut body = openai_body(one_user("hi"));
    body["stream"] = json!(true);
    let r = post_openai(&server, body).await;
    assert_eq!(r.status(), 200);
    let events = parse_sse(&r.text().await.unwrap());
    assert!(serde_json::from_str::<Value>(&events[0].1).is_err());
    assert_eq!(events.last().unwrap().1, "[DONE]");

    let r = post_anthropic(&server, anthropic_body(one_user("hi"))).await;
    assert_eq!(r.status(), 200);
    assert!(serde_json::from_str::<Value>(&r.text().await.unwrap()).is_err());
}

/// Reads a streamed body chunk by chunk: (bytes received, whether it ended in an error).
async fn read_stream(resp: reqwest::Response) -> (String, bool) {
    let mut stream = resp.bytes_stream();
    let mut got = Vec::new();
    while let Some(item) = stream.next().await {
        match item {
            Ok(b) => got.extend_from_slice(&b),
            Err(_) => return (String::from_utf8_lossy(&got).into_owned(), true),
        }
    }
    (String::from_utf8_lossy(&got).into_owned(), false)
}

#[tokio::test]
async fn cut_stream_drops_the_connection_without_a_terminator() {
    let server = ScriptedServer::start(Script::sequence(vec![
        Reply::Fault(Fault::CutStream),
        Reply::Fault(Fault::CutStream),
        Reply::Fault(Fault::CutStream),
    ]))
    .await;
    let mut body = openai_body(one_user("hi"));
    body["stream"] = json!(true);
    let (raw, errored) = read_stream(post_openai(&server, body).await).await;
    assert!(errored, "the client must see the connection drop");
    let events = parse_sse(&raw);
    assert!(
        events.len() >= 2,
        "some chunks arrive before the cut: {raw}"
    );
    assert!(!raw.contains("[DONE]"));
    assert!(!raw.contains("finish_reason\":\"stop"));

    let mut body = anthropic_body(one_user("hi"));
    body["stream"] = json!(true);
    let (raw, errored) = read_stream(post_anthropic(&server, body).await).await;
    assert!(errored);
    assert!(raw.contains("event: content_block_delta"), "{raw}");
    assert!(!raw.contains("message_stop"));

    let resp = post_openai(&server, openai_body(one_user("hi"))).await;
    assert_eq!(resp.status(), 200);
    assert!(
        resp.bytes().await.is_err(),
        "a short non-stream body is an error"
    );
}

#[tokio::test]
async fn drip_stream_spaces_chunks_and_trips_an_idle_timeout() {
    let interval = Duration::from_millis(60);
    let server = ScriptedServer::start(Script::sequence(vec![
        Reply::Fault(Fault::DripStream(interval)),
        Reply::Fault(Fault::DripStream(Duration::from_millis(400))),
        Reply::Fault(Fault::DripStream(interval)),
    ]))
    .await;
    let mut body = openai_body(one_user("hi"));
    body["stream"] = json!(true);
    let started = Instant::now();
    let (raw, errored) = read_stream(post_openai(&server, body.clone()).await).await;
    assert!(!errored);
    let events = parse_sse(&raw);
    assert!(started.elapsed() >= interval * (events.len() as u32 - 1));
    let text: String = events[..events.len() - 1]
        .iter()
        .filter_map(|(_, d)| {
            json_of(d)["choices"][0]["delta"]["content"]
                .as_str()
                .map(str::to_string)
        })
        .collect();
    assert_eq!(text, FAULT_STREAM_TEXT);

    let slow_reader = reqwest::Client::builder()
        .read_timeout(Duration::from_millis(150))
        .build()
        .unwrap();
    let resp = slow_reader
        .post(format!("{}/chat/completions", server.openai_base_url()))
        .bearer_auth(KEY)
        .json(&body)
        .send()
        .await
        .unwrap();
    let (raw, errored) = read_stream(resp).await;
    assert!(
        errored,
        "an idle gap longer than the read timeout must fail the read"
    );
    assert!(
        raw.starts_with("data: "),
        "the first chunk arrives before the gap"
    );

    let started = Instant::now();
    let resp = post_anthropic(&server, anthropic_body(one_user("hi"))).await;
    let msg: Value = resp.json().await.unwrap();
    assert!(
        started.elapsed() >= interval * 3,
        "non-stream body is dripped too"
    );
    assert_eq!(msg["content"][0]["text"], FAULT_STREAM_TEXT);
}

#[tokio::test]
async fn exhausted_script_answers_500_and_fails_assert_clean() {
    let server = ScriptedServer::start(Script::sequence(vec![Reply::text("only")])).await;
    assert_eq!(
        post_openai(&server, openai_body(one_user("one")))
            .await
            .status(),
        200
    );
    let r = post_openai(&server, openai_body(one_user("two"))).await;
    assert_eq!(r.status(), 500);
    assert_eq!(r.text().await.unwrap(), "script exhausted");
    let v = server.violations();
    assert_eq!(v.len(), 1);
    assert!(
        v[0].contains("script exhausted") && v[0].contains("two"),
        "{}",
        v[0]
    );
    let panic = std::panic::catch_unwind(|| server.assert_clean()).expect_err("must panic");
    let msg = panic.downcast_ref::<String>().unwrap();
    assert!(
        msg.contains("1 violation") && msg.contains("script exhausted"),
        "{msg}"
    );
}

// ------------------------------------------------------------ invariants

#[tokio::test]
async fn openai_orphan_and_missing_tool_results_are_rejected_and_recorded() {
    let server = ScriptedServer::start(Script::sequence(vec![Reply::text("unused")])).await;
    let orphan = openai_body(json!([
        {"role": "user", "content": "hi"},
        {"role": "tool", "tool_call_id": "call_99", "content": "result"},
    ]));
    let r = post_openai(&server, orphan).await;
    assert_eq!(r.status(), 400);
    let err: Value = r.json().await.unwrap();
    let msg = err["error"]["message"].as_str().unwrap();
    assert!(msg.contains("orphan") && msg.contains("call_99"), "{msg}");

    let missing = openai_body(json!([
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": null, "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "ls", "arguments": "{}"}},
            {"id": "call_2", "type": "function", "function": {"name": "ls", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": "a"},
        {"role": "user", "content": "and?"},
    ]));
    let r = post_openai(&server, missing).await;
    assert_eq!(r.status(), 400);
    let msg = r.json::<Value>().await.unwrap()["error"]["message"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        msg.contains("`call_2`") && msg.contains("no tool result"),
        "{msg}"
    );

    let v = server.violations();
    assert_eq!(v.len(), 2, "{v:#?}");
    assert!(v[0].starts_with("request #0 (POST /v1/chat/completions)"));
    assert!(v[1].contains("call_2"));
    assert_eq!(
        server.remaining(),
        1,
        "rejected requests do not consume the script"
    );
    assert!(std::panic::catch_unwind(|| server.assert_clean()).is_err());
}

#[tokio::test]
async fn anthropic_orphan_missing_and_alternation_are_rejected() {
    let server = ScriptedServer::start(Script::sequence(vec![])).await;
    let orphan = anthropic_body(json!([
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_9", "content": "x"}]},
    ]));
    let r = post_anthropic(&server, orphan).await;
    assert_eq!(r.status(), 400);
    let err: Value = r.json().await.unwrap();
    assert_eq!(err["type"], "error");
    assert_eq!(err["error"]["type"], "invalid_request_error");
    assert!(
        err["error"]["message"]
            .as_str()
            .unwrap()
            .contains("toolu_9")
    );

    let missing = anthropic_body(json!([
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "ls", "input": {}}]},
        {"role": "user", "content": "I ignored the tool"},
    ]));
    let r = post_anthropic(&server, missing).await;
    assert_eq!(r.status(), 400);

    let not_alternating = anthropic_body(json!([
        {"role": "user", "content": "a"},
        {"role": "user", "content": "b"},
    ]));
    assert_eq!(post_anthropic(&server, not_alternating).await.status(), 400);

    let v = server.violations();
    assert_eq!(v.len(), 3, "{v:#?}");
    assert!(v[0].contains("orphan"));
    assert!(v[1].contains("toolu_1") && v[1].contains("no tool_result"));
    assert!(v[2].contains("alternate"));
}

#[tokio::test]
async fn a_correct_tool_round_trip_using_server_ids_stays_clean() {
    let server = ScriptedServer::start(Script::sequence(vec![
        Reply::ToolCalls(vec![call("ls", json!({"dir": "."}))]),
        Reply::text("There are 2 files."),
        Reply::ToolCalls(vec![call("ls", json!({"dir": "src"}))]),
        Reply::text("src has lib.rs."),
    ]))
    .await;

    // OpenAI round trip.
    let mut messages = vec![json!({"role": "user", "content": "list files"})];
    let first: Value = post_openai(&server, openai_body(json!(messages)))
        .await
        .json()
        .await
        .unwrap();
    let assistant = first["choices"][0]["message"].clone();
    let id = assistant["tool_calls"][0]["id"]
        .as_str()
        .unwrap()
        .to_string();
    messages.push(assistant);
    messages.push(json!({"role": "tool", "tool_call_id": id, "content": "a.txt\nb.txt"}));
    let second: Value = post_openai(&server, openai_body(json!(messages)))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(
        second["choices"][0]["message"]["content"],
        "There are 2 files."
    );

    // Anthropic round trip.
    let mut messages = vec![json!({"role": "user", "content": "list src"})];
    let first: Value = post_anthropic(&server, anthropic_body(json!(messages)))
        .await
        .json()
        .await
        .unwrap();
    let id = first["content"][0]["id"].as_str().unwrap().to_string();
    messages.push(json!({"role": "assistant", "content": first["content"]}));
    messages.push(json!({"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": id, "content": [{"type": "text", "text": "lib.rs"}]}
    ]}));
    let second: Value = post_anthropic(&server, anthropic_body(json!(messages)))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(second["content"][0]["text"], "src has lib.rs.");

    let reqs = server.requests();
    assert_eq!(reqs[1].last_tool_result().as_deref(), Some("a.txt\nb.txt"));
    assert_eq!(reqs[3].last_tool_result().as_deref(), Some("lib.rs"));
    assert_eq!(reqs[3].last_user_text().as_deref(), Some("list src"));
    server.assert_clean();
}

#[tokio::test]
async fn malformed_request_body_and_unknown_endpoint_are_violations() {
    let server = ScriptedServer::start(Script::sequence(vec![])).await;
    let r = http()
        .post(format!("{}/chat/completions", server.openai_base_url()))
        .header("content-type", "application/json")
        .body("{\"model\": ")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 400);
    let r = http()
        .post(format!("{}/v1/chat/completions", server.openai_base_url()))
        .json(&openai_body(one_user("hi")))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 404);
    let v = server.violations();
    assert_eq!(v.len(), 2);
    assert!(v[0].contains("not valid JSON"));
    assert!(v[1].contains("/v1/v1/chat/completions") && v[1].contains("base URL"));
    assert_eq!(server.requests().len(), 2);
}

// ----------------------------------------------------------------- rules

#[tokio::test]
async fn from_fn_rules_see_the_request_and_index() {
    let server = ScriptedServer::start(Script::from_fn(|req, i| {
        if let Some(result) = req.last_tool_result() {
            return Reply::Text(format!("#{i} tool said: {result}"));
        }
        match req.last_user_text().as_deref() {
            Some(t) if t.contains("weather") => {
                Reply::ToolCalls(vec![call("weather", json!({"city": "Oslo"}))])
            }
            Some(t) if t.contains("boom") => panic!("rule refused: {t}"),
            Some(t) => Reply::Text(format!("#{i} echo: {t}")),
            None => Reply::Fault(Fault::ServerError),
        }
    }))
    .await;
    let r: Value = post_openai(&server, openai_body(one_user("hello")))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(r["choices"][0]["message"]["content"], "#0 echo: hello");
    let r: Value = post_anthropic(&server, anthropic_body(one_user("weather?")))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(r["content"][0]["name"], "weather");
    let id = r["content"][0]["id"].clone();
    let messages = json!([
        {"role": "user", "content": "weather?"},
        {"role": "assistant", "content": r["content"]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": id, "content": "sunny"}]},
    ]);
    let r: Value = post_anthropic(&server, anthropic_body(messages))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(r["content"][0]["text"], "#2 tool said: sunny");
    assert_eq!(server.remaining(), 0);
    server.assert_clean();

    let r = post_openai(&server, openai_body(one_user("boom"))).await;
    assert_eq!(r.status(), 500);
    let v = server.violations();
    assert_eq!(v.len(), 1);
    assert!(
        v[0].contains("rule panicked") && v[0].contains("rule refused: boom"),
        "{}",
        v[0]
    );
}

// ----------------------------------------------------------------- usage

#[tokio::test]
async fn cached_tokens_are_the_common_prefix_with_the_previous_request_of_that_protocol() {
    let server = ScriptedServer::start(Script::sequence(vec![
        Reply::text("first answer"),
        Reply::text("second answer"),
        Reply::text("third answer"),
        Reply::text("fourth answer"),
    ]))
    .await;
    let turn1 = json!([
        {"role": "system", "content": "You are terse."},
        {"role": "user", "content": "first question"},
    ]);
    let turn2 = json!([
        {"role": "system", "content": "You are terse."},
        {"role": "user", "content": "first question"},
        {"role": "assistant", "content": "first answer"},
        {"role": "user", "content": "second question"},
    ]);
    let c1 = r#"[{"content":"You are terse.","role":"system"},{"content":"first question","role":"user"}]"#;
    let c2 = r#"[{"content":"You are terse.","role":"system"},{"content":"first question","role":"user"},{"content":"first answer","role":"assistant"},{"content":"second question","role":"user"}]"#;
    let common = c1.len() - 1; // everything but the closing bracket
    assert_eq!(c1[..common], c2[..common]);

    let r1: Value = post_openai(&server, openai_body(turn1))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(r1["usage"]["prompt_tokens"], (c1.len() / 4) as u64);
    assert_eq!(r1["usage"]["prompt_tokens_details"]["cached_tokens"], 0);
    let r2: Value = post_openai(&server, openai_body(turn2))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(r2["usage"]["prompt_tokens"], (c2.len() / 4) as u64);
    assert_eq!(
        r2["usage"]["prompt_tokens_details"]["cached_tokens"],
        (common / 4) as u64
    );

    // Anthropic keeps its own history: its first request has nothing cached.
    // The prompt text is canonical `system` then `messages`; input_tokens
    // excludes the cached part, as the real API reports it.
    let sys =
        json!([{"type": "text", "text": "Be brief.", "cache_control": {"type": "ephemeral"}}]);
    let s = r#"[{"cache_control":{"type":"ephemeral"},"text":"Be brief.","type":"text"}]"#;
    let m1 = r#"[{"content":"q1","role":"user"}]"#;
    let m2 = r#"[{"content":"q1","role":"user"},{"content":"a1","role":"assistant"},{"content":"q2","role":"user"}]"#;
    let mut b1 = anthropic_body(json!([{"role": "user", "content": "q1"}]));
    b1["system"] = sys.clone();
    let mut b2 = anthropic_body(json!([
        {"role": "user", "content": "q1"},
        {"role": "assistant", "content": "a1"},
        {"role": "user", "content": "q2"},
    ]));
    b2["system"] = sys;
    let a1: Value = post_anthropic(&server, b1).await.json().await.unwrap();
    let p1 = ((s.len() + m1.len()) / 4) as u64;
    assert_eq!(a1["usage"]["input_tokens"], p1);
    assert_eq!(a1["usage"]["cache_read_input_tokens"], 0);
    let a2: Value = post_anthropic(&server, b2).await.json().await.unwrap();
    let p2 = ((s.len() + m2.len()) / 4) as u64;
    let cached = ((s.len() + m1.len() - 1) / 4) as u64;
    assert_eq!(a2["usage"]["cache_read_input_tokens"], cached);
    assert_eq!(a2["usage"]["input_tokens"], p2 - cached);
    server.assert_clean();
}

// -------------------------------------------------------- helpers + misc

#[tokio::test]
async fn recorded_request_helpers_are_protocol_neutral() {
    let server =
        ScriptedServer::start(Script::sequence(vec![Reply::text("a"), Reply::text("b")])).await;
    let mut body = anthropic_body(json!([
        {"role": "user", "content": [{"type": "text", "text": "please grep"}]},
        {"role": "assistant", "content": [
            {"type": "text", "text": "grepping"},
            {"type": "tool_use", "id": "toolu_7", "name": "grep", "input": {"pattern": "needle"}}]},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_7", "content": [{"type": "text", "text": "found needle"}]},
            {"type": "text", "text": "thanks"}]},
    ]));
    body["system"] =
        json!([{"type": "text", "text": "SYSTEM-PROMPT", "cache_control": {"type": "ephemeral"}}]);
    body["tools"] = json!([
        {"name": "grep", "input_schema": {"type": "object"}},
        {"name": "bash", "input_schema": {"type": "object"}},
    ]);
    assert_eq!(post_anthropic(&server, body).await.status(), 200);

    let mut body = openai_body(json!([
        {"role": "system", "content": "OA-SYSTEM"},
        {"role": "user", "content": [{"type": "text", "text": "multi"}, {"type": "text", "text": "part"}]},
    ]));
    body["tools"] = json!([{"type": "function", "function": {"name": "edit", "parameters": {}}}]);
    assert_eq!(post_openai(&server, body).await.status(), 200);

    let reqs = server.requests();
    let an = &reqs[0];
    assert_eq!(an.last_user_text().as_deref(), Some("thanks"));
    assert_eq!(an.last_tool_result().as_deref(), Some("found needle"));
    assert_eq!(
        an.tool_names(),
        vec!["grep".to_string(), "bash".to_string()]
    );
    let all = an.all_text();
    for needle in [
        "SYSTEM-PROMPT",
        "please grep",
        "grepping",
        "needle",
        "found needle",
        "thanks",
    ] {
        assert!(all.contains(needle), "{needle} missing from {all}");
    }
    assert_eq!(an.header("X-API-KEY"), Some(KEY));
    let oa = &reqs[1];
    assert_eq!(oa.last_user_text().as_deref(), Some("multi\npart"));
    assert_eq!(oa.last_tool_result(), None);
    assert_eq!(oa.tool_names(), vec!["edit".to_string()]);
    assert!(oa.all_text().starts_with("OA-SYSTEM\nmulti"));
    server.assert_clean();
}

#[test]
fn start_blocking_serves_plain_threads_without_a_runtime() {
    let server = ScriptedServer::start_blocking(Script::sequence(vec![Reply::text("blocking ok")]));
    let body = openai_body(one_user("hi")).to_string();
    let mut stream = std::net::TcpStream::connect(server.addr()).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    write!(
        stream,
        "POST /v1/chat/completions HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        server.addr(),
        body.len()
    )
    .unwrap();
    let mut raw = String::new();
    stream.read_to_string(&mut raw).unwrap();
    assert!(raw.starts_with("HTTP/1.1 200"), "{raw}");
    assert!(raw.contains("\"content\":\"blocking ok\""), "{raw}");
    assert_eq!(server.requests().len(), 1);
    assert_eq!(server.remaining(), 0);
    assert!(server.openai_base_url().starts_with("http://127.0.0.1:"));
    server.assert_clean();
}

#[tokio::test]
async fn start_blocking_also_works_from_inside_a_runtime() {
    let server = ScriptedServer::start_blocking(Script::sequence(vec![Reply::text("from thread")]));
    let body: Value = post_anthropic(&server, anthropic_body(one_user("hi")))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(body["content"][0]["text"], "from thread");
    let addr = server.addr();
    drop(server); // must not panic inside the async context
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert!(
        tokio::net::TcpStream::connect(addr).await.is_err(),
        "listener closed on drop"
    );
}
