use serde::{Deserialize, Serialize};

/// One entry of the conversation the model sees (the agent view).
///
/// Kept provider-neutral: the clients translate to OpenAI or Anthropic wire
/// formats, so the loop and the store never depend on a provider.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "role", rename_all = "snake_case")]
pub enum Message {
    System {
        content: String,
    },
    User {
        content: String,
    },
    Assistant {
        #[serde(default, skip_serializing_if = "String::is_empty")]
        content: String,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        tool_calls: Vec<ToolCall>,
    },
    /// The result of one tool call; `call_id` answers `ToolCall::id`.
    Tool {
        call_id: String,
        name: String,
        content: String,
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        is_error: bool,
    },
}

impl Message {
    pub fn system(content: impl Into<String>) -> Self {
        Message::System {
            content: content.into(),
        }
    }

    pub fn user(content: impl Into<String>) -> Self {
        Message::User {
            content: content.into(),
        }
    }

    pub fn assistant(content: impl Into<String>, tool_calls: Vec<ToolCall>) -> Self {
        Message::Assistant {
            content: content.into(),
            tool_calls,
        }
    }

    pub fn tool(
        call_id: impl Into<String>,
        name: impl Into<String>,
        content: impl Into<String>,
        is_error: bool,
    ) -> Self {
        Message::Tool {
            call_id: call_id.into(),
            name: name.into(),
            content: content.into(),
            is_error,
        }
    }

    /// The textual body, whatever the role (tool calls not included).
    pub fn text(&self) -> &str {
        match self {
            Message::System { content }
            | Message::User { content }
            | Message::Assistant { content, .. }
            | Message::Tool { content, .. } => content,
        }
    }

    pub fn role(&self) -> &'static str {
        match self {
            Message::System { .. } => "system",
            Message::User { .. } => "user",
            Message::Assistant { .. } => "assistant",
            Message::Tool { .. } => "tool",
        }
    }
}

/// A tool call as the model wrote it.
///
/// `arguments` is the raw JSON text: a model may write invalid JSON, and the
/// loop must be able to answer with a precise repair message rather than
/// failing inside a client.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    pub id: String,
    pub name: String,
    pub arguments: String,
}

impl ToolCall {
    pub fn new(
        id: impl Into<String>,
        name: impl Into<String>,
        arguments: impl Into<String>,
    ) -> Self {
        ToolCall {
            id: id.into(),
            name: name.into(),
            arguments: arguments.into(),
        }
    }
}

/// A tool offered to the model: name, description and a JSON schema of its
/// arguments. The words come from the agent configuration.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    pub name: String,
    pub description: String,
    /// JSON schema (`{"type":"object","properties":{…},"required":[…]}`).
    pub parameters: serde_json::Value,
}

/// Everything a client needs to make one model call.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ModelRequest {
    pub messages: Vec<Message>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<ToolSpec>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_output_tokens: Option<u32>,
}

/// Why the model stopped producing output.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    #[default]
    EndTurn,
    ToolUse,
    MaxTokens,
    Other,
}

/// Token counts for one call as reported by the provider.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    /// Prompt tokens served from the provider's prompt cache.
    #[serde(default)]
    pub cached_tokens: u64,
}

impl Usage {
    pub fn add(&mut self, other: Usage) {
        self.prompt_tokens += other.prompt_tokens;
        self.completion_tokens += other.completion_tokens;
        self.cached_tokens += other.cached_tokens;
    }
}

/// What the model answered.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ModelResponse {
    /// Free text (reasoning, or a text-protocol answer).
    pub content: String,
    /// Native tool calls, in order.
    #[serde(default)]
    pub tool_calls: Vec<ToolCall>,
    pub usage: Usage,
    #[serde(default)]
    pub stop_reason: StopReason,
    /// The model name the provider reports.
    #[serde(default)]
    pub model: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn message_round_trips_through_json_with_role_tag() {
        let msg = Message::assistant(
            "thinking",
            vec![ToolCall::new("c1", "read_file", "{\"path\":\"a\"}")],
        );
        let json = serde_json::to_value(&msg).unwrap();
        assert_eq!(json["role"], "assistant");
        assert_eq!(json["tool_calls"][0]["name"], "read_file");
        let back: Message = serde_json::from_value(json).unwrap();
        assert_eq!(back, msg);
    }

    #[test]
    fn tool_message_omits_false_error_flag() {
        let msg = Message::tool("c1", "read_file", "ok", false);
        let json = serde_json::to_string(&msg).unwrap();
        assert!(!json.contains("is_error"), "{json}");
        let err = Message::tool("c1", "read_file", "bad", true);
        assert!(
            serde_json::to_string(&err)
                .unwrap()
                .contains("\"is_error\":true")
        );
    }

    #[test]
    fn usage_adds_up() {
        let mut total = Usage::default();
        total.add(Usage {
            prompt_tokens: 10,
            completion_tokens: 2,
            cached_tokens: 4,
        });
        total.add(Usage {
            prompt_tokens: 5,
            completion_tokens: 1,
            cached_tokens: 0,
        });
        assert_eq!(
            total,
            Usage {
                prompt_tokens: 15,
                completion_tokens: 3,
                cached_tokens: 4
            }
        );
    }
}
