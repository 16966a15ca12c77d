//! Anthropic Messages wire format: response bodies, stream events and error
//! bodies.

use bytes::Bytes;
use serde_json::{Value, json};

use crate::server::{ARG_PIECE, Answer, TEXT_PIECE, pieces};

/// A body that starts like a message and then breaks off: not JSON.
pub(crate) const MALFORMED_BODY: &str =
    "{\"id\": \"msg_broken\", \"type\": \"message\", \"content\": [{\"type\": \"text\", \"te";

/// SSE framing intact, payload not JSON.
pub(crate) const MALFORMED_STREAM: &str =
    "event: message_start\ndata: {\"type\": \"message_start\", \"message\": {\"id\": \n\n";

fn stop_reason(a: &Answer) -> &'static str {
    if a.calls.is_empty() {
        "end_turn"
    } else {
        "tool_use"
    }
}

/// Usage as Anthropic reports it: `input_tokens` excludes the cached part,
/// which is reported separately in `cache_read_input_tokens`.
fn usage_json(a: &Answer, output_tokens: u64) -> Value {
    json!({
        "input_tokens": a.usage.prompt.saturating_sub(a.usage.cached),
        "output_tokens": output_tokens,
        "cache_read_input_tokens": a.usage.cached,
        "cache_creation_input_tokens": 0,
    })
}

/// The tool input as a JSON value; deliberately invalid argument text is
/// passed through as a JSON string since `input` cannot hold invalid JSON.
fn input_value(arguments: &str) -> Value {
    serde_json::from_str(arguments).unwrap_or_else(|_| Value::String(arguments.to_string()))
}

/// Whether the answer gets a text block: always when there is text, except
/// an empty text next to tool calls (the API rejects empty text blocks when
/// the client replays them).
fn text_block(a: &Answer) -> Option<&str> {
    match &a.text {
        Some(t) if !t.is_empty() || a.calls.is_empty() => Some(t),
        _ => None,
    }
}

/// The non-stream `message` object.
pub(crate) fn response_body(a: &Answer) -> Value {
    let mut content = Vec::new();
    if let Some(t) = text_block(a) {
        content.push(json!({"type": "text", "text": t}));
    }
    for c in &a.calls {
        content.push(json!({
            "type": "tool_use",
            "id": c.id,
            "name": c.name,
            "input": input_value(&c.arguments),
        }));
    }
    json!({
        "id": a.message_id,
        "type": "message",
        "role": "assistant",
        "model": a.model,
        "content": content,
        "stop_reason": stop_reason(a),
        "stop_sequence": null,
        "usage": usage_json(a, a.usage.completion),
    })
}

/// SSE events for a streamed answer, in the order the API sends them
/// (including a `ping` after `message_start`).
pub(crate) fn stream_events(a: &Answer) -> Vec<Bytes> {
    let mut events = Vec::new();
    events.push(sse(
        "message_start",
        &json!({"type": "message_start", "message": {
            "id": a.message_id,
            "type": "message",
            "role": "assistant",
            "model": a.model,
            "content": [],
            "stop_reason": null,
            "stop_sequence": null,
            // Like the API: a provisional output count, replaced by message_delta.
            "usage": usage_json(a, 1),
        }}),
    ));
    events.push(sse("ping", &json!({"type": "ping"})));

    let mut index = 0usize;
    if let Some(text) = text_block(a) {
        events.push(sse(
            "content_block_start",
            &json!({"type": "content_block_start", "index": index,
                    "content_block": {"type": "text", "text": ""}}),
        ));
        for piece in pieces(text, TEXT_PIECE) {
            events.push(sse(
                "content_block_delta",
                &json!({"type": "content_block_delta", "index": index,
                        "delta": {"type": "text_delta", "text": piece}}),
            ));
        }
        events.push(block_stop(index));
        index += 1;
    }
    for c in &a.calls {
        events.push(sse(
            "content_block_start",
            &json!({"type": "content_block_start", "index": index,
                    "content_block": {"type": "tool_use", "id": c.id, "name": c.name, "input": {}}}),
        ));
        for frag in pieces(&c.arguments, ARG_PIECE) {
            events.push(sse(
                "content_block_delta",
                &json!({"type": "content_block_delta", "index": index,
                        "delta": {"type": "input_json_delta", "partial_json": frag}}),
            ));
        }
        events.push(block_stop(index));
        index += 1;
    }
    events.push(sse(
        "message_delta",
        &json!({"type": "message_delta",
                "delta": {"stop_reason": stop_reason(a), "stop_sequence": null},
                "usage": {"output_tokens": a.usage.completion}}),
    ));
    events.push(sse("message_stop", &json!({"type": "message_stop"})));
    events
}

fn block_stop(index: usize) -> Bytes {
    sse(
        "content_block_stop",
        &json!({"type": "content_block_stop", "index": index}),
    )
}

fn sse(event: &str, data: &Value) -> Bytes {
    Bytes::from(format!("event: {event}\ndata: {data}\n\n"))
}

/// Anthropic's error envelope.
pub(crate) fn error_body(kind: &str, message: &str) -> Value {
    json!({"type": "error", "error": {"type": kind, "message": message}})
}

/// `GET /v1/models` in Anthropic's shape (chosen when the request carries
/// `x-api-key` or `anthropic-version`).
pub(crate) fn models_body(model: &str) -> Value {
    json!({
        "data": [{"type": "model", "id": model, "display_name": model,
                  "created_at": "2024-01-01T00:00:00Z"}],
        "has_more": false,
        "first_id": model,
        "last_id": model,
    })
}
