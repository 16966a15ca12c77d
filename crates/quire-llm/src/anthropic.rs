//! Anthropic Messages API (`POST {base}/v1/messages`), with prompt-cache
//! markers so the stable prefix of a session is billed once.

use async_trait::async_trait;
use quire_types::{Message, ModelRequest, ModelResponse, StopReason, ToolCall, Usage};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::error::LlmError;
use crate::http::{HttpCore, Wire, attempt, error_fields_of};
use crate::sse::cut_off;
use crate::{ClientSettings, ModelClient, Provider, RetryObserver};

const API_VERSION: &str = "2023-06-01";
/// Anthropic requires `max_tokens`; used when the request leaves it open.
const DEFAULT_MAX_TOKENS: u32 = 4096;

pub struct AnthropicClient {
    core: HttpCore,
}

impl AnthropicClient {
    pub fn new(settings: ClientSettings) -> Result<Self, LlmError> {
        Ok(AnthropicClient {
            core: HttpCore::new(settings)?,
        })
    }

    fn headers(&self) -> Vec<(&'static str, String)> {
        let mut headers = vec![("anthropic-version", API_VERSION.to_string())];
        if let Some(key) = &self.core.settings.api_key {
            headers.push(("x-api-key", key.clone()));
        }
        headers
    }

    /// Accepts base URLs with or without the trailing `/v1`.
    fn endpoint(&self) -> String {
        if self
            .core
            .settings
            .base_url
            .trim_end_matches('/')
            .ends_with("/v1")
        {
            self.core.url("messages")
        } else {
            self.core.url("v1/messages")
        }
    }
}

/// The wire-format parts of an attempt; the rest is [`crate::http::attempt`].
pub(crate) struct Protocol;

impl Wire for Protocol {
    type Stream = StreamState;

    fn parse_body(bytes: &[u8], model: &str, core: &HttpCore) -> Result<ModelResponse, LlmError> {
        parse_response(bytes, model, Some(core))
    }

    fn push(
        state: &mut StreamState,
        event: &eventsource_stream::Event,
        core: &HttpCore,
    ) -> Result<bool, LlmError> {
        state.push(&event.event, &event.data, Some(core))
    }

    fn finish(state: StreamState, model: &str) -> Result<ModelResponse, LlmError> {
        state.finish(model)
    }

    fn usage_so_far(state: &StreamState) -> Usage {
        state.usage.to_usage()
    }
}

impl AnthropicClient {
    /// One request with retries; each retry told to `observer`.
    async fn send(
        &self,
        request: &ModelRequest,
        observer: Option<&RetryObserver<'_>>,
    ) -> Result<ModelResponse, LlmError> {
        let s = &self.core.settings;
        let body = request_body(request, &s.model, s.stream);
        let url = self.endpoint();
        tracing::debug!(
            url,
            model = s.model,
            messages = request.messages.len(),
            tools = request.tools.len(),
            stream = s.stream,
            "anthropic request"
        );
        self.core
            .policy()
            .run(observer, |_| {
                attempt::<Protocol>(&self.core, &url, self.headers(), &body)
            })
            .await
    }
}

#[async_trait]
impl ModelClient for AnthropicClient {
    async fn complete(&self, request: &ModelRequest) -> Result<ModelResponse, LlmError> {
        self.send(request, None).await
    }

    async fn complete_observed(
        &self,
        request: &ModelRequest,
        on_retry: &RetryObserver<'_>,
    ) -> Result<ModelResponse, LlmError> {
        self.send(request, Some(on_retry)).await
    }

    fn model(&self) -> &str {
        &self.core.settings.model
    }

    fn provider(&self) -> Provider {
        Provider::Anthropic
    }
}

// ---- requests --------------------------------------------------------------

fn text_block(text: &str) -> Value {
    json!({ "type": "text", "text": text })
}

fn cache_marker() -> Value {
    json!({ "type": "ephemeral" })
}

/// Tool-call arguments as the object Anthropic wants. Invalid JSON (the
/// model's own earlier mistake) becomes `{}` so the history stays sendable.
fn tool_input(call: &ToolCall) -> Value {
    if call.arguments.trim().is_empty() {
        return json!({});
    }
    match serde_json::from_str::<Value>(&call.arguments) {
        Ok(v @ Value::Object(_)) => v,
        _ => {
            tracing::warn!(
                call_id = call.id,
                tool = call.name,
                "tool call arguments are not a JSON object; sending {{}} to Anthropic"
            );
            json!({})
        }
    }
}

/// Appends blocks to the last turn when it has the same role, so roles
/// alternate as the API requires.
fn push_blocks(
    turns: &mut Vec<(&'static str, Vec<Value>)>,
    role: &'static str,
    blocks: Vec<Value>,
) {
    match turns.last_mut() {
        Some((last_role, last_blocks)) if *last_role == role => last_blocks.extend(blocks),
        _ => turns.push((role, blocks)),
    }
}

/// The Messages request body.
///
/// Leading system messages become the top-level `system`; a system message
/// later in the conversation becomes user text in place (moving it up would
/// change the cached prefix and its meaning).
pub(crate) fn request_body(request: &ModelRequest, model: &str, stream: bool) -> Value {
    let mut system: Vec<Value> = Vec::new();
    let mut turns: Vec<(&'static str, Vec<Value>)> = Vec::new();
    for message in &request.messages {
        match message {
            Message::System { content } if turns.is_empty() => {
                if !content.is_empty() {
                    system.push(text_block(content));
                }
            }
            Message::System { content } | Message::User { content } => {
                // Empty text blocks are rejected by the API.
                let text = if content.trim().is_empty() {
                    "(empty message)"
                } else {
                    content
                };
                push_blocks(&mut turns, "user", vec![text_block(text)]);
            }
            Message::Assistant {
                content,
                tool_calls,
            } => {
                let mut blocks = Vec::new();
                if !content.trim().is_empty() {
                    blocks.push(text_block(content));
                }
                for call in tool_calls {
                    blocks.push(json!({
                        "type": "tool_use",
                        "id": call.id,
                        "name": call.name,
                        "input": tool_input(call),
                    }));
                }
                if blocks.is_empty() {
                    blocks.push(text_block("(no content)"));
                }
                push_blocks(&mut turns, "assistant", blocks);
            }
            Message::Tool {
                call_id,
                content,
                is_error,
                ..
            } => push_blocks(
                &mut turns,
                "user",
                vec![json!({
                    "type": "tool_result",
                    "tool_use_id": call_id,
                    "content": content,
                    "is_error": is_error,
                })],
            ),
        }
    }
    // Tool results must open a user turn; stable sort keeps their order.
    for (_, blocks) in &mut turns {
        blocks.sort_by_key(|b| b["type"] != "tool_result");
    }
    if let Some(last) = system.last_mut() {
        last["cache_control"] = cache_marker();
    }
    if let Some((role, blocks)) = turns.last_mut() {
        let n = blocks.len();
        // Text after other blocks in the final user turn may be sent with
        // this request only (the working-memory index): a breakpoint before
        // it too lets the next request hit the cache written here. That
        // makes at most four breakpoints, the API's limit.
        if *role == "user" && n >= 2 && blocks[n - 1]["type"] == "text" {
            blocks[n - 2]["cache_control"] = cache_marker();
        }
        if let Some(last) = blocks.last_mut() {
            last["cache_control"] = cache_marker();
        }
    }
    let messages: Vec<Value> = turns
        .into_iter()
        .map(|(role, content)| json!({ "role": role, "content": content }))
        .collect();

    let mut body = json!({
        "model": model,
        "max_tokens": request.max_output_tokens.unwrap_or(DEFAULT_MAX_TOKENS),
        "messages": messages,
    });
    if !system.is_empty() {
        body["system"] = Value::Array(system);
    }
    if !request.tools.is_empty() {
        let mut tools: Vec<Value> = request
            .tools
            .iter()
            .map(|t| {
                json!({
                    "name": t.name,
                    "description": t.description,
                    "input_schema": t.parameters,
                })
            })
            .collect();
        if let Some(last) = tools.last_mut() {
            last["cache_control"] = cache_marker();
        }
        body["tools"] = Value::Array(tools);
    }
    if let Some(t) = request.temperature {
        body["temperature"] = json!(crate::http::temperature(t));
    }
    if stream {
        body["stream"] = json!(true);
    }
    body
}

// ---- responses -------------------------------------------------------------

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct WireMessage {
    model: Option<String>,
    content: Option<Vec<WireBlock>>,
    stop_reason: Option<String>,
    usage: Option<WireUsage>,
    error: Option<Value>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct WireBlock {
    #[serde(rename = "type")]
    kind: String,
    text: Option<String>,
    id: Option<String>,
    name: Option<String>,
    input: Option<Value>,
}

#[derive(Debug, Default, Clone, Copy, Deserialize)]
#[serde(default)]
struct WireUsage {
    input_tokens: Option<u64>,
    output_tokens: Option<u64>,
    cache_creation_input_tokens: Option<u64>,
    cache_read_input_tokens: Option<u64>,
}

impl WireUsage {
    /// Later reports (message_delta) refine earlier ones (message_start).
    fn merge(&mut self, newer: WireUsage) {
        let pick = |old: &mut Option<u64>, new: Option<u64>| {
            if new.is_some() {
                *old = new;
            }
        };
        pick(&mut self.input_tokens, newer.input_tokens);
        pick(&mut self.output_tokens, newer.output_tokens);
        pick(
            &mut self.cache_creation_input_tokens,
            newer.cache_creation_input_tokens,
        );
        pick(
            &mut self.cache_read_input_tokens,
            newer.cache_read_input_tokens,
        );
    }

    /// `input_tokens` excludes cached tokens; the total prompt is the sum.
    fn to_usage(self) -> Usage {
        let read = self.cache_read_input_tokens.unwrap_or(0);
        Usage {
            prompt_tokens: self.input_tokens.unwrap_or(0)
                + read
                + self.cache_creation_input_tokens.unwrap_or(0),
            completion_tokens: self.output_tokens.unwrap_or(0),
            cached_tokens: read,
        }
    }
}

fn stop_reason(reason: Option<&str>, has_calls: bool) -> StopReason {
    match reason {
        Some("end_turn" | "stop_sequence") => StopReason::EndTurn,
        Some("tool_use") => StopReason::ToolUse,
        Some("max_tokens") => StopReason::MaxTokens,
        None if has_calls => StopReason::ToolUse,
        None => StopReason::EndTurn,
        Some(_) => StopReason::Other,
    }
}

fn join_text(parts: impl IntoIterator<Item = String>) -> String {
    parts
        .into_iter()
        .filter(|p| !p.is_empty())
        .collect::<Vec<_>>()
        .join("\n")
}

/// Maps an in-band error object (`{"type":"overloaded_error","message":..}`)
/// to the same variants an HTTP status would give.
fn in_band_error(error: &Value, core: Option<&HttpCore>) -> LlmError {
    let wrapped = json!({ "type": "error", "error": error });
    let (_, kind) = error_fields_of(&wrapped);
    let status = match kind.as_deref() {
        Some("invalid_request_error") => 400,
        Some("authentication_error") => 401,
        Some("permission_error") => 403,
        Some("not_found_error") => 404,
        Some("request_too_large") => 413,
        Some("rate_limit_error") => 429,
        Some("overloaded_error") => 529,
        _ => 500,
    };
    match core {
        Some(core) => core.classify(status, &wrapped.to_string(), ""),
        None => LlmError::malformed(format!("error in response: {error}")),
    }
}

/// Parses a non-streaming Messages body.
pub(crate) fn parse_response(
    body: &[u8],
    fallback_model: &str,
    core: Option<&HttpCore>,
) -> Result<ModelResponse, LlmError> {
    let wire: WireMessage = serde_json::from_slice(body).map_err(|e| {
        LlmError::malformed(format!(
            "message is not the expected JSON ({e}): {}",
            String::from_utf8_lossy(body)
        ))
    })?;
    if let Some(error) = &wire.error {
        return Err(in_band_error(error, core));
    }
    let blocks = wire
        .content
        .ok_or_else(|| LlmError::malformed("message has no content"))?;
    let mut texts = Vec::new();
    let mut tool_calls = Vec::new();
    for block in blocks {
        match block.kind.as_str() {
            "text" => texts.push(block.text.unwrap_or_default()),
            "tool_use" => tool_calls.push(ToolCall::new(
                block.id.unwrap_or_default(),
                block.name.unwrap_or_default(),
                match block.input {
                    // Not an object: pass the text on so the loop can report it.
                    Some(Value::String(raw)) => raw,
                    Some(input) => input.to_string(),
                    None => "{}".to_string(),
                },
            )),
            _ => {}
        }
    }
    Ok(ModelResponse {
        content: join_text(texts),
        stop_reason: stop_reason(wire.stop_reason.as_deref(), !tool_calls.is_empty()),
        tool_calls,
        usage: wire.usage.unwrap_or_default().to_usage(),
        model: wire
            .model
            .filter(|m| !m.is_empty())
            .unwrap_or_else(|| fallback_model.to_string()),
    })
}

#[derive(Debug)]
enum Block {
    Text(String),
    ToolUse {
        id: String,
        name: String,
        json: String,
    },
    Other,
}

/// Assembles a streamed message from its events.
#[derive(Debug, Default)]
pub(crate) struct StreamState {
    model: Option<String>,
    /// Content blocks by their stream `index`.
    blocks: Vec<(u64, Block)>,
    stop_reason: Option<String>,
    usage: WireUsage,
    stopped: bool,
}

impl StreamState {
    /// Feeds one event; returns true at `message_stop`.
    pub fn push(
        &mut self,
        event: &str,
        data: &str,
        core: Option<&HttpCore>,
    ) -> Result<bool, LlmError> {
        if data.trim().is_empty() {
            return Ok(false);
        }
        let value: Value = serde_json::from_str(data).map_err(|e| {
            LlmError::malformed(format!("stream event {event:?} is not JSON ({e}): {data}"))
        })?;
        let kind = value
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or(event)
            .to_string();
        match kind.as_str() {
            "message_start" => {
                let message = &value["message"];
                if let Some(model) = message["model"].as_str().filter(|m| !m.is_empty()) {
                    self.model = Some(model.to_string());
                }
                self.merge_usage(&message["usage"]);
            }
            "content_block_start" => {
                let index = value["index"].as_u64().unwrap_or(self.blocks.len() as u64);
                let block = &value["content_block"];
                let block = match block["type"].as_str() {
                    Some("text") => Block::Text(block["text"].as_str().unwrap_or("").to_string()),
                    Some("tool_use") => Block::ToolUse {
                        id: block["id"].as_str().unwrap_or("").to_string(),
                        name: block["name"].as_str().unwrap_or("").to_string(),
                        // Normally `{}` with the real input streamed as deltas.
                        json: match &block["input"] {
                            Value::Object(map) if !map.is_empty() => block["input"].to_string(),
                            _ => String::new(),
                        },
                    },
                    _ => Block::Other,
                };
                self.blocks.push((index, block));
            }
            "content_block_delta" => {
                let index = value["index"].as_u64();
                let delta = &value["delta"];
                let block = self
                    .blocks
                    .iter_mut()
                    .rev()
                    .find(|(i, _)| index.is_none_or(|x| x == *i))
                    .map(|(_, b)| b);
                match (block, delta["type"].as_str()) {
                    (Some(Block::Text(text)), Some("text_delta")) => {
                        text.push_str(delta["text"].as_str().unwrap_or(""));
                    }
                    (Some(Block::ToolUse { json, .. }), Some("input_json_delta")) => {
                        json.push_str(delta["partial_json"].as_str().unwrap_or(""));
                    }
                    (None, _) => {
                        return Err(LlmError::malformed(format!(
                            "content_block_delta for a block that never started: {data}"
                        )));
                    }
                    _ => {}
                }
            }
            "message_delta" => {
                if let Some(reason) = value["delta"]["stop_reason"].as_str() {
                    self.stop_reason = Some(reason.to_string());
                }
                self.merge_usage(&value["usage"]);
            }
            "message_stop" => {
                self.stopped = true;
                return Ok(true);
            }
            "error" => return Err(in_band_error(&value["error"], core)),
            // ping, content_block_stop and future event types.
            _ => {}
        }
        Ok(false)
    }

    fn merge_usage(&mut self, usage: &Value) {
        if let Ok(u) = serde_json::from_value::<WireUsage>(usage.clone()) {
            self.usage.merge(u);
        }
    }

    /// The message, or a retryable error when the stream was cut before
    /// `message_stop` and before any stop reason.
    pub fn finish(self, fallback_model: &str) -> Result<ModelResponse, LlmError> {
        if !self.stopped && self.stop_reason.is_none() {
            return Err(cut_off("message_stop"));
        }
        let mut texts = Vec::new();
        let mut tool_calls = Vec::new();
        for (_, block) in self.blocks {
            match block {
                Block::Text(t) => texts.push(t),
                Block::ToolUse { id, name, json } => {
                    let json = if json.trim().is_empty() {
                        "{}".to_string()
                    } else {
                        json
                    };
                    tool_calls.push(ToolCall::new(id, name, json));
                }
                Block::Other => {}
            }
        }
        Ok(ModelResponse {
            content: join_text(texts),
            stop_reason: stop_reason(self.stop_reason.as_deref(), !tool_calls.is_empty()),
            tool_calls,
            usage: self.usage.to_usage(),
            model: self.model.unwrap_or_else(|| fallback_model.to_string()),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use quire_types::ToolSpec;

    fn spec(name: &str) -> ToolSpec {
        ToolSpec {
            name: name.into(),
            description: "d".into(),
            parameters: json!({"type":"object"}),
        }
    }

    #[test]
    fn body_groups_tool_results_and_marks_cache() {
        let request = ModelRequest {
            messages: vec![
                Message::system("sys one"),
                Message::system("sys two"),
                Message::user("task"),
                Message::assistant(
                    "looking",
                    vec![
                        ToolCall::new("t1", "read", r#"{"p":"a"}"#),
                        ToolCall::new("t2", "read", "not json"),
                    ],
                ),
                Message::tool("t1", "read", "A", false),
                Message::tool("t2", "read", "bad args", true),
                Message::user("also this"),
            ],
            tools: vec![spec("read"), spec("write")],
            temperature: None,
            max_output_tokens: None,
        };
        let body = request_body(&request, "claude", false);
        assert_eq!(body["max_tokens"], 4096);
        assert_eq!(body["system"].as_array().unwrap().len(), 2);
        assert!(body["system"][0].get("cache_control").is_none());
        assert_eq!(body["system"][1]["cache_control"]["type"], "ephemeral");
        assert!(body["tools"][0].get("cache_control").is_none());
        assert_eq!(body["tools"][1]["cache_control"]["type"], "ephemeral");
        assert_eq!(body["tools"][1]["input_schema"]["type"], "object");
        let msgs = body["messages"].as_array().unwrap();
        assert_eq!(msgs.len(), 3, "{body:#}");
        assert_eq!(msgs[1]["content"][1]["input"], json!({"p":"a"}));
        assert_eq!(msgs[1]["content"][2]["input"], json!({}));
        let last = msgs[2]["content"].as_array().unwrap();
        assert_eq!(last[0]["type"], "tool_result");
        assert_eq!(last[1]["is_error"], true);
        assert_eq!(last[2]["text"], "also this");
        assert_eq!(last[2]["cache_control"]["type"], "ephemeral");
        // The block before trailing text is a breakpoint too (at most four).
        assert_eq!(last[1]["cache_control"]["type"], "ephemeral");
        assert!(last[0].get("cache_control").is_none());
    }

    #[test]
    fn late_system_message_becomes_user_text() {
        let request = ModelRequest {
            messages: vec![Message::user("a"), Message::system("reminder")],
            ..Default::default()
        };
        let body = request_body(&request, "m", true);
        assert!(body.get("system").is_none());
        assert_eq!(body["messages"][0]["content"][1]["text"], "reminder");
        assert_eq!(body["stream"], true);
    }

    #[test]
    fn parses_message_with_cache_usage() {
        let body = br#"{"id":"m","type":"message","role":"assistant","model":"claude-x",
          "content":[{"type":"text","text":"hi"},{"type":"tool_use","id":"tu1","name":"ls","input":{"d":"."}}],
          "stop_reason":"tool_use",
          "usage":{"input_tokens":10,"output_tokens":4,"cache_creation_input_tokens":5,"cache_read_input_tokens":100}}"#;
        let r = parse_response(body, "f", None).unwrap();
        assert_eq!(r.content, "hi");
        assert_eq!(
            r.tool_calls,
            vec![ToolCall::new("tu1", "ls", r#"{"d":"."}"#)]
        );
        assert_eq!(
            r.usage,
            Usage {
                prompt_tokens: 115,
                completion_tokens: 4,
                cached_tokens: 100
            }
        );
        assert_eq!(r.stop_reason, StopReason::ToolUse);
    }

    #[test]
    fn assembles_stream() {
        let events = [
            (
                "message_start",
                r#"{"type":"message_start","message":{"model":"claude-s","usage":{"input_tokens":7,"output_tokens":1,"cache_read_input_tokens":3}}}"#,
            ),
            (
                "content_block_start",
                r#"{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}"#,
            ),
            ("ping", r#"{"type":"ping"}"#),
            (
                "content_block_delta",
                r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hi "}}"#,
            ),
            (
                "content_block_delta",
                r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"there"}}"#,
            ),
            (
                "content_block_stop",
                r#"{"type":"content_block_stop","index":0}"#,
            ),
            (
                "content_block_start",
                r#"{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"tu","name":"read","input":{}}}"#,
            ),
            (
                "content_block_delta",
                r#"{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"p\":"}}"#,
            ),
            (
                "content_block_delta",
                r#"{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"\"x\"}"}}"#,
            ),
            (
                "content_block_start",
                r#"{"type":"content_block_start","index":2,"content_block":{"type":"tool_use","id":"tv","name":"ls","input":{}}}"#,
            ),
            (
                "message_delta",
                r#"{"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{"output_tokens":9}}"#,
            ),
        ];
        let mut s = StreamState::default();
        for (e, d) in events {
            assert!(!s.push(e, d, None).unwrap());
        }
        assert!(
            s.push("message_stop", r#"{"type":"message_stop"}"#, None)
                .unwrap()
        );
        let r = s.finish("f").unwrap();
        assert_eq!(r.content, "Hi there");
        assert_eq!(r.model, "claude-s");
        assert_eq!(
            r.tool_calls,
            vec![
                ToolCall::new("tu", "read", r#"{"p":"x"}"#),
                ToolCall::new("tv", "ls", "{}")
            ]
        );
        assert_eq!(
            r.usage,
            Usage {
                prompt_tokens: 10,
                completion_tokens: 9,
                cached_tokens: 3
            }
        );
    }

    #[test]
    fn stream_errors_and_cuts() {
        let mut s = StreamState::default();
        s.push(
            "message_start",
            r#"{"type":"message_start","message":{}}"#,
            None,
        )
        .unwrap();
        assert!(s.finish("m").unwrap_err().is_retryable());
        let mut s = StreamState::default();
        let err = s
            .push(
                "error",
                r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
                None,
            )
            .unwrap_err();
        assert!(err.to_string().contains("Overloaded"), "{err}");
    }
}
