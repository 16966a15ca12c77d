//! OpenAI Chat Completions wire format: response bodies, stream chunks and
//! error bodies.

use bytes::Bytes;
use serde_json::{Value, json};

use crate::server::{ARG_PIECE, Answer, TEXT_PIECE, pieces};

/// Fixed `created` timestamp so recorded responses are reproducible.
const CREATED: u64 = 1_700_000_000;

/// A body that starts like a completion and then breaks off: not JSON.
pub(crate) const MALFORMED_BODY: &str = "{\"id\": \"chatcmpl-broken\", \"object\": \"chat.completion\", \"choices\": [{\"index\": 0, \"message\": {\"role\": \"assis";

/// An SSE stream whose data payload is not JSON, properly terminated.
pub(crate) const MALFORMED_STREAM: &str = "data: {\"id\": \"chatcmpl-broken\", \"choices\": [{\"delta\": {\"content\": \"hel\n\ndata: [DONE]\n\n";

fn finish_reason(a: &Answer) -> &'static str {
    if a.calls.is_empty() {
        "stop"
    } else {
        "tool_calls"
    }
}

fn usage_json(a: &Answer) -> Value {
    json!({
        "prompt_tokens": a.usage.prompt,
        "completion_tokens": a.usage.completion,
        "total_tokens": a.usage.prompt + a.usage.completion,
        "prompt_tokens_details": {"cached_tokens": a.usage.cached},
    })
}

/// The non-stream `chat.completion` object.
pub(crate) fn response_body(a: &Answer) -> Value {
    let mut message = json!({"role": "assistant", "content": a.text});
    if !a.calls.is_empty() {
        let calls: Vec<Value> = a
            .calls
            .iter()
            .map(|c| {
                json!({
                    "id": c.id,
                    "type": "function",
                    "function": {"name": c.name, "arguments": c.arguments},
                })
            })
            .collect();
        message["tool_calls"] = Value::Array(calls);
    }
    json!({
        "id": a.message_id,
        "object": "chat.completion",
        "created": CREATED,
        "model": a.model,
        "choices": [{
            "index": 0,
            "message": message,
            "logprobs": null,
            "finish_reason": finish_reason(a),
        }],
        "usage": usage_json(a),
    })
}

/// SSE events for a streamed answer, ending with `data: [DONE]`. Text comes
/// in small pieces; each tool call starts with a delta carrying its id and
/// name, and its arguments follow in fragments split mid-token.
pub(crate) fn stream_events(a: &Answer, include_usage: bool) -> Vec<Bytes> {
    let chunk = |delta: Value, finish: Option<&str>| {
        let mut c = json!({
            "id": a.message_id,
            "object": "chat.completion.chunk",
            "created": CREATED,
            "model": a.model,
            "choices": [{"index": 0, "delta": delta, "logprobs": null, "finish_reason": finish}],
        });
        if include_usage {
            c["usage"] = Value::Null;
        }
        sse(&c)
    };

    let mut events = Vec::new();
    let opening_content = if a.text.is_some() {
        json!("")
    } else {
        Value::Null
    };
    events.push(chunk(
        json!({"role": "assistant", "content": opening_content}),
        None,
    ));
    if let Some(text) = &a.text {
        for piece in pieces(text, TEXT_PIECE) {
            events.push(chunk(json!({"content": piece}), None));
        }
    }
    for (index, c) in a.calls.iter().enumerate() {
        events.push(chunk(
            json!({"tool_calls": [{
                "index": index,
                "id": c.id,
                "type": "function",
                "function": {"name": c.name, "arguments": ""},
            }]}),
            None,
        ));
        for frag in pieces(&c.arguments, ARG_PIECE) {
            events.push(chunk(
                json!({"tool_calls": [{"index": index, "function": {"arguments": frag}}]}),
                None,
            ));
        }
    }
    events.push(chunk(json!({}), Some(finish_reason(a))));
    if include_usage {
        let usage = json!({
            "id": a.message_id,
            "object": "chat.completion.chunk",
            "created": CREATED,
            "model": a.model,
            "choices": [],
            "usage": usage_json(a),
        });
        events.push(sse(&usage));
    }
    events.push(Bytes::from_static(b"data: [DONE]\n\n"));
    events
}

fn sse(v: &Value) -> Bytes {
    Bytes::from(format!("data: {v}\n\n"))
}

/// OpenAI's error envelope.
pub(crate) fn error_body(message: &str, kind: &str, code: Option<&str>) -> Value {
    json!({"error": {"message": message, "type": kind, "param": null, "code": code}})
}

/// `GET /v1/models` listing the one configured model.
pub(crate) fn models_body(model: &str) -> Value {
    json!({
        "object": "list",
        "data": [{"id": model, "object": "model", "created": CREATED, "owned_by": "quire-testkit"}],
    })
}
