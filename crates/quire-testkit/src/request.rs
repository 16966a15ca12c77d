//! Requests as the server saw them, with protocol-neutral accessors so tests
//! can assert on what the client sent without caring which wire format it used.

use serde_json::Value;

/// Which wire protocol a request used.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Protocol {
    /// OpenAI-compatible Chat Completions (`/v1/chat/completions`, `/v1/models`).
    OpenAi,
    /// Anthropic Messages (`/v1/messages`).
    Anthropic,
}

/// One HTTP request received by the server, recorded before any checks so
/// rejected requests are visible too.
#[derive(Debug, Clone, PartialEq)]
pub struct RecordedRequest {
    /// Protocol implied by the path (and headers for ambiguous paths).
    pub protocol: Protocol,
    /// Request path, e.g. `/v1/messages`.
    pub path: String,
    /// Headers with lower-case names, in the order received.
    pub headers: Vec<(String, String)>,
    /// Parsed JSON body; `Null` for empty bodies, a JSON string holding the
    /// raw text if the body was not JSON.
    pub body: Value,
    /// Whether the body asked for a streamed answer (`"stream": true`).
    pub stream: bool,
}

impl RecordedRequest {
    /// Value of the first header with this name (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// The `messages` array, empty if absent.
    pub fn messages(&self) -> &[Value] {
        self.body
            .get("messages")
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or(&[])
    }

    /// Text of the last user-role message that carries text. Anthropic user
    /// messages holding only `tool_result` blocks are skipped, so the answer
    /// is the same for both protocols.
    pub fn last_user_text(&self) -> Option<String> {
        self.messages()
            .iter()
            .rev()
            .filter(|m| m.get("role").and_then(Value::as_str) == Some("user"))
            .find_map(|m| {
                let content = m.get("content")?;
                if let Value::Array(blocks) = content {
                    let has_text = blocks.iter().any(is_text_block);
                    if !has_text {
                        return None;
                    }
                }
                Some(content_text(content))
            })
    }

    /// Content of the last tool result: an OpenAI `tool` message or an
    /// Anthropic `tool_result` block (its string or text blocks).
    pub fn last_tool_result(&self) -> Option<String> {
        for m in self.messages().iter().rev() {
            match m.get("role").and_then(Value::as_str) {
                Some("tool") => {
                    return Some(m.get("content").map(content_text).unwrap_or_default());
                }
                Some("user") => {
                    let Some(Value::Array(blocks)) = m.get("content") else {
                        continue;
                    };
                    let last = blocks
                        .iter()
                        .rev()
                        .find(|b| b.get("type").and_then(Value::as_str) == Some("tool_result"));
                    if let Some(block) = last {
                        return Some(block.get("content").map(content_text).unwrap_or_default());
                    }
                }
                _ => {}
            }
        }
        None
    }

    /// Every text in the request joined by newlines: system prompt, message
    /// texts, tool results, and tool call names and arguments. Meant for
    /// "the prompt contains X" assertions.
    pub fn all_text(&self) -> String {
        let mut parts = Vec::new();
        if let Some(system) = self.body.get("system") {
            parts.push(content_text(system));
        }
        for m in self.messages() {
            if let Some(content) = m.get("content") {
                collect_texts(content, &mut parts);
            }
            if let Some(calls) = m.get("tool_calls").and_then(Value::as_array) {
                for c in calls {
                    let f = c.get("function");
                    if let Some(name) = f.and_then(|f| f.get("name")).and_then(Value::as_str) {
                        parts.push(name.to_string());
                    }
                    if let Some(args) = f.and_then(|f| f.get("arguments")).and_then(Value::as_str) {
                        parts.push(args.to_string());
                    }
                }
            }
        }
        parts.retain(|p| !p.is_empty());
        parts.join("\n")
    }

    /// Names of the tools offered in `tools` (either protocol's shape).
    pub fn tool_names(&self) -> Vec<String> {
        self.body
            .get("tools")
            .and_then(Value::as_array)
            .map(|tools| {
                tools
                    .iter()
                    .filter_map(|t| {
                        t.get("function")
                            .and_then(|f| f.get("name"))
                            .or_else(|| t.get("name"))
                            .and_then(Value::as_str)
                            .map(str::to_string)
                    })
                    .collect()
            })
            .unwrap_or_default()
    }
}

fn is_text_block(block: &Value) -> bool {
    block.get("type").and_then(Value::as_str) == Some("text")
}

/// Text of a content value: the string itself, or the `text` blocks/parts of
/// an array joined with newlines.
pub(crate) fn content_text(content: &Value) -> String {
    match content {
        Value::String(s) => s.clone(),
        Value::Array(blocks) => blocks
            .iter()
            .filter(|b| is_text_block(b))
            .filter_map(|b| b.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

/// Pushes every human-readable piece of a message content: text, tool
/// results (recursively) and Anthropic `tool_use` names and inputs.
fn collect_texts(content: &Value, out: &mut Vec<String>) {
    match content {
        Value::String(s) => out.push(s.clone()),
        Value::Array(blocks) => {
            for b in blocks {
                match b.get("type").and_then(Value::as_str) {
                    Some("text") => {
                        if let Some(t) = b.get("text").and_then(Value::as_str) {
                            out.push(t.to_string());
                        }
                    }
                    Some("tool_result") => {
                        if let Some(c) = b.get("content") {
                            collect_texts(c, out);
                        }
                    }
                    Some("tool_use") => {
                        if let Some(name) = b.get("name").and_then(Value::as_str) {
                            out.push(name.to_string());
                        }
                        if let Some(input) = b.get("input") {
                            out.push(input.to_string());
                        }
                    }
                    _ => {}
                }
            }
        }
        _ => {}
    }
}
