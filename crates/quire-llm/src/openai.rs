//! OpenAI-compatible Chat Completions (`POST {base}/chat/completions`), the
//! protocol of OpenAI itself and of Ollama, vLLM, llama.cpp and most
//! gateways. Only the widely supported subset is sent.

use async_trait::async_trait;
use quire_types::{Message, ModelRequest, ModelResponse, StopReason, ToolCall, Usage};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::error::LlmError;
use crate::http::{HttpCore, Wire, attempt, error_fields_of};
use crate::sse::cut_off;
use crate::{ClientSettings, ModelClient, Provider, RetryObserver};

pub struct OpenAiClient {
    core: HttpCore,
}

impl OpenAiClient {
    pub fn new(settings: ClientSettings) -> Result<Self, LlmError> {
        Ok(OpenAiClient {
            core: HttpCore::new(settings)?,
        })
    }

    fn auth(&self) -> Vec<(&'static str, String)> {
        match &self.core.settings.api_key {
            Some(key) => vec![("authorization", format!("Bearer {key}"))],
            None => Vec::new(),
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
        state.push(&event.data, core)
    }

    fn finish(state: StreamState, model: &str) -> Result<ModelResponse, LlmError> {
        state.finish(model)
    }

    fn usage_so_far(state: &StreamState) -> Usage {
        state.usage.unwrap_or_default()
    }
}

impl OpenAiClient {
    /// One request with retries; each retry told to `observer`.
    async fn send(
        &self,
        request: &ModelRequest,
        observer: Option<&RetryObserver<'_>>,
    ) -> Result<ModelResponse, LlmError> {
        let s = &self.core.settings;
        let body = request_body(request, &s.model, s.stream);
        let url = self.core.url("chat/completions");
        tracing::debug!(
            url,
            model = s.model,
            messages = request.messages.len(),
            tools = request.tools.len(),
            stream = s.stream,
            "openai request"
        );
        self.core
            .policy()
            .run(observer, |_| {
                attempt::<Protocol>(&self.core, &url, self.auth(), &body)
            })
            .await
    }
}

#[async_trait]
impl ModelClient for OpenAiClient {
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
        Provider::OpenAi
    }
}

/// The Chat Completions request body.
pub(crate) fn request_body(request: &ModelRequest, model: &str, stream: bool) -> Value {
    let messages: Vec<Value> = request.messages.iter().map(message_json).collect();
    let mut body = json!({ "model": model, "messages": messages });
    if !request.tools.is_empty() {
        body["tools"] = request
            .tools
            .iter()
            .map(|t| {
                json!({
                    "type": "function",
                    "function": {
                        "name": t.name,
                        "description": t.description,
                        "parameters": t.parameters,
                    }
                })
            })
            .collect();
    }
    if let Some(t) = request.temperature {
        body["temperature"] = json!(crate::http::temperature(t));
    }
    // `max_tokens`, not `max_completion_tokens`: the local servers accept only it.
    if let Some(n) = request.max_output_tokens {
        body["max_tokens"] = json!(n);
    }
    if stream {
        body["stream"] = json!(true);
        body["stream_options"] = json!({ "include_usage": true });
    }
    body
}

fn message_json(message: &Message) -> Value {
    match message {
        Message::System { content } => json!({ "role": "system", "content": content }),
        Message::User { content } => json!({ "role": "user", "content": content }),
        Message::Assistant {
            content,
            tool_calls,
        } => {
            if tool_calls.is_empty() {
                return json!({ "role": "assistant", "content": content });
            }
            let calls: Vec<Value> = tool_calls
                .iter()
                .map(|c| {
                    json!({
                        "id": c.id,
                        "type": "function",
                        "function": { "name": c.name, "arguments": c.arguments },
                    })
                })
                .collect();
            let content = if content.is_empty() {
                Value::Null
            } else {
                json!(content)
            };
            json!({ "role": "assistant", "content": content, "tool_calls": calls })
        }
        Message::Tool {
            call_id, content, ..
        } => json!({ "role": "tool", "tool_call_id": call_id, "content": content }),
    }
}

// ---- responses -------------------------------------------------------------

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct WireResponse {
    model: Option<String>,
    choices: Option<Vec<WireChoice>>,
    usage: Option<WireUsage>,
    error: Option<Value>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct WireChoice {
    message: Option<WireMessage>,
    delta: Option<WireMessage>,
    finish_reason: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct WireMessage {
    content: Option<Value>,
    tool_calls: Option<Vec<WireToolCall>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct WireToolCall {
    index: Option<usize>,
    id: Option<String>,
    function: Option<WireFunction>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct WireFunction {
    name: Option<String>,
    arguments: Option<Value>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct WireUsage {
    prompt_tokens: u64,
    completion_tokens: u64,
    prompt_tokens_details: Option<WireUsageDetails>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct WireUsageDetails {
    cached_tokens: Option<u64>,
}

impl WireUsage {
    fn to_usage(&self) -> Usage {
        Usage {
            prompt_tokens: self.prompt_tokens,
            completion_tokens: self.completion_tokens,
            cached_tokens: self
                .prompt_tokens_details
                .as_ref()
                .and_then(|d| d.cached_tokens)
                .unwrap_or(0),
        }
    }
}

/// Text of a `content` field: a string, or an array of `{type:"text",text}` parts.
fn content_text(content: &Option<Value>) -> String {
    match content {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(parts)) => parts
            .iter()
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .collect(),
        _ => String::new(),
    }
}

/// Arguments as raw JSON text; some servers send an object instead of a string.
fn arguments_text(arguments: &Option<Value>) -> String {
    match arguments {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Null) | None => String::new(),
        Some(other) => other.to_string(),
    }
}

fn stop_reason(finish_reason: Option<&str>, has_calls: bool) -> StopReason {
    match finish_reason {
        Some("tool_calls" | "function_call") => StopReason::ToolUse,
        Some("length") => StopReason::MaxTokens,
        // Some servers report "stop" even when they emitted tool calls.
        Some("stop") | None if has_calls => StopReason::ToolUse,
        Some("stop") | None => StopReason::EndTurn,
        Some(_) => StopReason::Other,
    }
}

/// Servers that omit call ids still need distinct ones for tool results.
fn call_id(id: Option<String>, position: usize) -> String {
    match id {
        Some(id) if !id.is_empty() => id,
        _ => format!("call_{position}"),
    }
}

fn in_band_error(error: &Value, core: Option<&HttpCore>) -> LlmError {
    let text = error.to_string();
    match core {
        Some(core) => {
            let wrapped = json!({ "error": error });
            let (_, code) = error_fields_of(&wrapped);
            let status = code
                .and_then(|c| c.parse::<u16>().ok())
                .filter(|s| (400..600).contains(s))
                .unwrap_or(500);
            core.classify(status, &wrapped.to_string(), "")
        }
        None => LlmError::malformed(format!("error in response: {text}")),
    }
}

/// Parses a non-streaming Chat Completions body.
pub(crate) fn parse_response(
    body: &[u8],
    fallback_model: &str,
    core: Option<&HttpCore>,
) -> Result<ModelResponse, LlmError> {
    let wire: WireResponse = serde_json::from_slice(body).map_err(|e| {
        LlmError::malformed(format!(
            "chat completion is not the expected JSON ({e}): {}",
            String::from_utf8_lossy(body)
        ))
    })?;
    if let Some(error) = &wire.error {
        return Err(in_band_error(error, core));
    }
    let choice = wire
        .choices
        .and_then(|c| c.into_iter().next())
        .ok_or_else(|| LlmError::malformed("chat completion has no choices"))?;
    let message = choice.message.unwrap_or_default();
    let tool_calls: Vec<ToolCall> = message
        .tool_calls
        .unwrap_or_default()
        .into_iter()
        .enumerate()
        .map(|(i, c)| {
            let f = c.function.unwrap_or_default();
            ToolCall::new(
                call_id(c.id, i),
                f.name.unwrap_or_default(),
                arguments_text(&f.arguments),
            )
        })
        .collect();
    Ok(ModelResponse {
        content: content_text(&message.content),
        stop_reason: stop_reason(choice.finish_reason.as_deref(), !tool_calls.is_empty()),
        tool_calls,
        usage: wire.usage.map(|u| u.to_usage()).unwrap_or_default(),
        model: wire
            .model
            .filter(|m| !m.is_empty())
            .unwrap_or_else(|| fallback_model.to_string()),
    })
}

/// Assembles a streamed completion from its chunks.
#[derive(Debug, Default)]
pub(crate) struct StreamState {
    content: String,
    /// Tool calls in stream order; fragments join by `index`.
    calls: Vec<(Option<usize>, ToolCall)>,
    finish_reason: Option<String>,
    usage: Option<Usage>,
    model: Option<String>,
    done: bool,
}

impl StreamState {
    /// Feeds one `data:` payload; returns true at `[DONE]`.
    pub fn push(&mut self, data: &str, core: &HttpCore) -> Result<bool, LlmError> {
        self.push_inner(data, Some(core))
    }

    fn push_inner(&mut self, data: &str, core: Option<&HttpCore>) -> Result<bool, LlmError> {
        let data = data.trim();
        if data == "[DONE]" {
            self.done = true;
            return Ok(true);
        }
        if data.is_empty() {
            return Ok(false);
        }
        let chunk: WireResponse = serde_json::from_str(data).map_err(|e| {
            LlmError::malformed(format!(
                "stream chunk is not the expected JSON ({e}): {data}"
            ))
        })?;
        if let Some(error) = &chunk.error {
            return Err(in_band_error(error, core));
        }
        if let Some(model) = chunk.model.filter(|m| !m.is_empty()) {
            self.model = Some(model);
        }
        if let Some(usage) = &chunk.usage {
            self.usage = Some(usage.to_usage());
        }
        for choice in chunk.choices.unwrap_or_default() {
            if let Some(reason) = choice.finish_reason {
                self.finish_reason = Some(reason);
            }
            let Some(delta) = choice.delta.or(choice.message) else {
                continue;
            };
            self.content.push_str(&content_text(&delta.content));
            for fragment in delta.tool_calls.unwrap_or_default() {
                self.add_fragment(fragment);
            }
        }
        Ok(false)
    }

    fn add_fragment(&mut self, fragment: WireToolCall) {
        let f = fragment.function.unwrap_or_default();
        let fresh_id = fragment.id.as_deref().filter(|id| !id.is_empty());
        let existing = match fragment.index {
            // Some gateways reuse index 0 for every call; a new id starts a new call.
            Some(index) => self
                .calls
                .iter()
                .rposition(|(i, _)| *i == Some(index))
                .filter(|&pos| {
                    let id = &self.calls[pos].1.id;
                    fresh_id.is_none_or(|new| id.is_empty() || id == new)
                }),
            // No index: a fragment with an id starts a call, one without continues the last.
            None if fragment.id.is_none() => self.calls.len().checked_sub(1),
            None => None,
        };
        let arguments = arguments_text(&f.arguments);
        match existing {
            Some(pos) => {
                let call = &mut self.calls[pos].1;
                if call.id.is_empty() {
                    call.id = fragment.id.unwrap_or_default();
                }
                if let Some(name) = f.name {
                    call.name.push_str(&name);
                }
                call.arguments.push_str(&arguments);
            }
            None => self.calls.push((
                fragment.index,
                ToolCall::new(
                    fragment.id.unwrap_or_default(),
                    f.name.unwrap_or_default(),
                    arguments,
                ),
            )),
        }
    }

    /// The response, or a retryable error when the stream was cut before
    /// `[DONE]` and before any finish reason.
    pub fn finish(self, fallback_model: &str) -> Result<ModelResponse, LlmError> {
        if !self.done && self.finish_reason.is_none() {
            return Err(cut_off("[DONE]"));
        }
        let tool_calls: Vec<ToolCall> = self
            .calls
            .into_iter()
            .enumerate()
            .map(|(i, (_, mut c))| {
                c.id = call_id(Some(c.id), i);
                c
            })
            .collect();
        Ok(ModelResponse {
            content: self.content,
            stop_reason: stop_reason(self.finish_reason.as_deref(), !tool_calls.is_empty()),
            tool_calls,
            usage: self.usage.unwrap_or_default(),
            model: self.model.unwrap_or_else(|| fallback_model.to_string()),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use quire_types::ToolSpec;

    #[test]
    fn body_maps_history_and_tools() {
        let request = ModelRequest {
            messages: vec![
                Message::system("sys"),
                Message::user("do it"),
                Message::assistant(
                    "",
                    vec![ToolCall::new("c1", "read_file", r#"{"path":"a"}"#)],
                ),
                Message::tool("c1", "read_file", "contents", true),
            ],
            tools: vec![ToolSpec {
                name: "read_file".into(),
                description: "Read".into(),
                parameters: json!({"type":"object"}),
            }],
            temperature: Some(0.5),
            max_output_tokens: Some(100),
        };
        let body = request_body(&request, "m", true);
        assert_eq!(body["messages"][2]["content"], Value::Null);
        assert_eq!(
            body["messages"][2]["tool_calls"][0]["function"]["arguments"],
            r#"{"path":"a"}"#
        );
        assert_eq!(body["messages"][3]["role"], "tool");
        assert_eq!(body["messages"][3]["tool_call_id"], "c1");
        assert_eq!(body["tools"][0]["function"]["name"], "read_file");
        assert_eq!(body["max_tokens"], 100);
        assert_eq!(body["stream_options"]["include_usage"], true);
        let plain = request_body(&ModelRequest::default(), "m", false);
        assert!(plain.get("tools").is_none() && plain.get("stream").is_none());
    }

    #[test]
    fn parses_non_stream_response() {
        let body = br#"{"model":"gpt-x","choices":[{"index":0,"message":{"role":"assistant","content":null,
            "tool_calls":[{"id":"call_a","type":"function","function":{"name":"ls","arguments":{"dir":"."}}}]},
            "finish_reason":"tool_calls"}],"usage":{"prompt_tokens":10,"completion_tokens":3,
            "prompt_tokens_details":{"cached_tokens":8}}}"#;
        let r = parse_response(body, "fallback", None).unwrap();
        assert_eq!(r.model, "gpt-x");
        assert_eq!(
            r.tool_calls,
            vec![ToolCall::new("call_a", "ls", r#"{"dir":"."}"#)]
        );
        assert_eq!(r.stop_reason, StopReason::ToolUse);
        assert_eq!(
            r.usage,
            Usage {
                prompt_tokens: 10,
                completion_tokens: 3,
                cached_tokens: 8
            }
        );
        assert!(matches!(
            parse_response(b"<html>", "m", None),
            Err(LlmError::Malformed { .. })
        ));
        assert!(matches!(
            parse_response(br#"{"choices":[]}"#, "m", None),
            Err(LlmError::Malformed { .. })
        ));
    }

    #[test]
    fn assembles_stream_fragments_by_index() {
        let mut s = StreamState::default();
        let chunks = [
            r#"{"model":"m1","choices":[{"index":0,"delta":{"role":"assistant","content":"Hel"}}]}"#,
            r#"{"choices":[{"index":0,"delta":{"content":"lo"}}]}"#,
            r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c1","type":"function","function":{"name":"read","arguments":""}}]}}]}"#,
            r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"id":"c2","function":{"name":"ls","arguments":"{}"}}]}}]}"#,
            r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"p\":"}}]}}]}"#,
            r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"1}"}}]}}]}"#,
            r#"{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}"#,
            r#"{"choices":[],"usage":{"prompt_tokens":5,"completion_tokens":2}}"#,
        ];
        for c in chunks {
            assert!(!s.push_inner(c, None).unwrap());
        }
        assert!(s.push_inner("[DONE]", None).unwrap());
        let r = s.finish("x").unwrap();
        assert_eq!(r.content, "Hello");
        assert_eq!(r.model, "m1");
        assert_eq!(
            r.tool_calls,
            vec![
                ToolCall::new("c1", "read", r#"{"p":1}"#),
                ToolCall::new("c2", "ls", "{}")
            ]
        );
        assert_eq!(r.usage.prompt_tokens, 5);
    }

    #[test]
    fn reused_index_with_new_id_is_a_new_call() {
        let mut s = StreamState::default();
        for c in [
            r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"id":"a","function":{"name":"x","arguments":"{}"}}]}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"id":"b","function":{"name":"y","arguments":"{"}}]}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"arguments":"}"}}]}}]}"#,
            r#"{"choices":[{"delta":{},"finish_reason":"tool_calls"}]}"#,
        ] {
            s.push_inner(c, None).unwrap();
        }
        let r = s.finish("m").unwrap();
        assert_eq!(
            r.tool_calls,
            vec![ToolCall::new("a", "x", "{}"), ToolCall::new("b", "y", "{}")]
        );
    }

    #[test]
    fn stream_without_end_is_cut() {
        let mut s = StreamState::default();
        s.push_inner(r#"{"choices":[{"delta":{"content":"par"}}]}"#, None)
            .unwrap();
        let err = s.finish("m").unwrap_err();
        assert!(err.is_retryable(), "{err}");
        let mut s = StreamState::default();
        assert!(matches!(
            s.push_inner("{not json", None),
            Err(LlmError::Malformed { .. })
        ));
    }
}
