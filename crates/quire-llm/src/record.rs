//! Record and replay of model exchanges.
//!
//! A recording is JSON lines, one `{"request", "response"}` exchange per
//! line (plus the provider and model it came from). Replaying serves the
//! responses in order without a network, and checks that the run asks the
//! same questions: a refactor that changes what the loop sends shows up as
//! a precise divergence instead of a confusing later failure.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use quire_types::{Message, ModelRequest, ModelResponse, Redactor, ToolCall};
use serde::{Deserialize, Serialize};
use tokio::io::AsyncWriteExt;

use crate::error::{LlmError, truncate};
use crate::{ModelClient, Provider, RetryObserver};

/// How much of an expected/got value a divergence message shows.
const SHOW_LIMIT: usize = 160;

/// One line of a recording.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Exchange {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<Provider>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    pub request: ModelRequest,
    pub response: ModelResponse,
}

/// Wraps a client and appends every successful exchange to a file.
pub struct RecordingClient {
    inner: Arc<dyn ModelClient>,
    path: PathBuf,
    file: tokio::sync::Mutex<Option<tokio::fs::File>>,
    redactor: Redactor,
}

impl RecordingClient {
    /// The file is created (or appended to) at the first exchange.
    pub fn new(inner: Arc<dyn ModelClient>, path: impl Into<PathBuf>) -> Self {
        RecordingClient {
            inner,
            path: path.into(),
            file: tokio::sync::Mutex::new(None),
            redactor: Redactor::new(),
        }
    }

    /// Masks these secrets (API keys) in addition to key-shaped strings.
    pub fn with_redactor(mut self, redactor: Redactor) -> Self {
        self.redactor = redactor;
        self
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    async fn append(
        &self,
        request: &ModelRequest,
        response: &ModelResponse,
    ) -> Result<(), LlmError> {
        let exchange = Exchange {
            provider: Some(self.inner.provider()),
            model: Some(self.inner.model().to_string()),
            request: request.clone(),
            response: response.clone(),
        };
        let mut value = serde_json::to_value(&exchange).map_err(|e| LlmError::Replay {
            detail: format!("cannot serialize an exchange: {e}"),
        })?;
        self.redactor.redact_json(&mut value);
        let mut line = value.to_string();
        line.push('\n');

        let context = || format!("cannot write the recording {}", self.path.display());
        let mut guard = self.file.lock().await;
        if guard.is_none() {
            let file = tokio::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(&self.path)
                .await
                .map_err(|e| LlmError::io(context(), e))?;
            *guard = Some(file);
        }
        if let Some(file) = guard.as_mut() {
            file.write_all(line.as_bytes())
                .await
                .map_err(|e| LlmError::io(context(), e))?;
            // Flushed per line so a crash keeps every finished exchange.
            file.flush().await.map_err(|e| LlmError::io(context(), e))?;
        }
        Ok(())
    }
}

#[async_trait]
impl ModelClient for RecordingClient {
    async fn complete(&self, request: &ModelRequest) -> Result<ModelResponse, LlmError> {
        let response = self.inner.complete(request).await?;
        self.append(request, &response).await?;
        Ok(response)
    }

    async fn complete_observed(
        &self,
        request: &ModelRequest,
        on_retry: &RetryObserver<'_>,
    ) -> Result<ModelResponse, LlmError> {
        let response = self.inner.complete_observed(request, on_retry).await?;
        self.append(request, &response).await?;
        Ok(response)
    }

    fn model(&self) -> &str {
        self.inner.model()
    }

    fn provider(&self) -> Provider {
        self.inner.provider()
    }
}

/// Serves a recording's responses in order, checking each request against
/// the recorded one.
pub struct ReplayClient {
    exchanges: Vec<Exchange>,
    next: Mutex<usize>,
    provider: Provider,
    model: String,
}

impl ReplayClient {
    pub fn open(path: impl AsRef<Path>) -> Result<ReplayClient, LlmError> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path).map_err(|e| {
            LlmError::io(format!("cannot read the recording {}", path.display()), e)
        })?;
        let mut exchanges = Vec::new();
        for (n, line) in text.lines().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            let exchange: Exchange = serde_json::from_str(line).map_err(|e| LlmError::Replay {
                detail: format!(
                    "line {} of {} is not a recorded exchange: {e}",
                    n + 1,
                    path.display()
                ),
            })?;
            exchanges.push(exchange);
        }
        Ok(ReplayClient::from_exchanges(exchanges))
    }

    pub fn from_exchanges(exchanges: Vec<Exchange>) -> ReplayClient {
        let first = exchanges.first();
        let provider = first.and_then(|e| e.provider).unwrap_or(Provider::OpenAi);
        let model = first
            .and_then(|e| e.model.clone().or_else(|| Some(e.response.model.clone())))
            .filter(|m| !m.is_empty())
            .unwrap_or_else(|| "replay".to_string());
        ReplayClient {
            exchanges,
            next: Mutex::new(0),
            provider,
            model,
        }
    }

    /// Number of exchanges in the recording.
    pub fn len(&self) -> usize {
        self.exchanges.len()
    }

    pub fn is_empty(&self) -> bool {
        self.exchanges.is_empty()
    }

    /// Exchanges not yet served.
    pub fn remaining(&self) -> usize {
        let next = *self.next.lock().unwrap_or_else(|p| p.into_inner());
        self.exchanges.len().saturating_sub(next)
    }
}

#[async_trait]
impl ModelClient for ReplayClient {
    async fn complete(&self, request: &ModelRequest) -> Result<ModelResponse, LlmError> {
        // A poisoned lock only means another caller panicked; the index is still valid.
        let mut next = self.next.lock().unwrap_or_else(|p| p.into_inner());
        let step = *next;
        let Some(exchange) = self.exchanges.get(step) else {
            return Err(LlmError::Replay {
                detail: format!(
                    "recording exhausted after {} exchanges",
                    self.exchanges.len()
                ),
            });
        };
        if let Err(what) = compare(&exchange.request, request) {
            return Err(LlmError::Replay {
                detail: format!("diverged from the recording at step {}{what}", step + 1),
            });
        }
        *next += 1;
        Ok(exchange.response.clone())
    }

    fn model(&self) -> &str {
        &self.model
    }

    fn provider(&self) -> Provider {
        self.provider
    }
}

/// Structural comparison; the error text continues "…at step N".
fn compare(expected: &ModelRequest, got: &ModelRequest) -> Result<(), String> {
    for (i, (e, g)) in expected.messages.iter().zip(&got.messages).enumerate() {
        compare_message(e, g).map_err(|what| format!(", messages[{i}] ({}): {what}", e.role()))?;
    }
    if expected.messages.len() != got.messages.len() {
        let extra = |m: Option<&Message>| match m {
            Some(m) => format!(" (first extra: {} {})", m.role(), show(m.text())),
            None => String::new(),
        };
        let (longer, at) = if got.messages.len() > expected.messages.len() {
            (&got.messages, expected.messages.len())
        } else {
            (&expected.messages, got.messages.len())
        };
        return Err(format!(
            ": expected {} messages, got {}{}",
            expected.messages.len(),
            got.messages.len(),
            extra(longer.get(at))
        ));
    }
    let names = |r: &ModelRequest| {
        let mut n: Vec<String> = r.tools.iter().map(|t| t.name.clone()).collect();
        n.sort();
        n.dedup();
        n
    };
    let (e_tools, g_tools) = (names(expected), names(got));
    if e_tools != g_tools {
        return Err(format!(
            ": offered tools differ: expected [{}], got [{}]",
            e_tools.join(", "),
            g_tools.join(", ")
        ));
    }
    Ok(())
}

fn compare_message(expected: &Message, got: &Message) -> Result<(), String> {
    if expected.role() != got.role() {
        return Err(format!(
            "expected role {}, got role {} {}",
            expected.role(),
            got.role(),
            show(got.text())
        ));
    }
    match (expected, got) {
        (
            Message::Assistant {
                content: ec,
                tool_calls: et,
            },
            Message::Assistant {
                content: gc,
                tool_calls: gt,
            },
        ) => {
            if ec.trim() != gc.trim() {
                return Err(format!("expected text {}, got {}", show(ec), show(gc)));
            }
            if et.len() != gt.len() {
                return Err(format!(
                    "expected {} tool calls [{}], got {} [{}]",
                    et.len(),
                    call_names(et),
                    gt.len(),
                    call_names(gt)
                ));
            }
            for (k, (e, g)) in et.iter().zip(gt).enumerate() {
                if e.name != g.name || !same_arguments(&e.arguments, &g.arguments) {
                    return Err(format!(
                        "tool call {k}: expected {}({}), got {}({})",
                        e.name,
                        show(&e.arguments),
                        g.name,
                        show(&g.arguments)
                    ));
                }
            }
        }
        (Message::Tool { call_id: e, .. }, Message::Tool { call_id: g, .. }) if e != g => {
            return Err(format!("expected result for call {e:?}, got {g:?}"));
        }
        _ => {
            if expected.text() != got.text() {
                tracing::debug!(
                    role = expected.role(),
                    expected = show(expected.text()),
                    got = show(got.text()),
                    "replay: message text differs from the recording (allowed)"
                );
            }
        }
    }
    Ok(())
}

fn call_names(calls: &[ToolCall]) -> String {
    calls
        .iter()
        .map(|c| c.name.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

/// Equal as JSON when both parse (key order and spacing do not matter),
/// else as text. The live side is masked like the recording was, so a
/// key-shaped string in arguments does not count as a divergence.
fn same_arguments(recorded: &str, live: &str) -> bool {
    let live = Redactor::new().redact(live);
    match (
        serde_json::from_str::<serde_json::Value>(recorded),
        serde_json::from_str::<serde_json::Value>(&live),
    ) {
        (Ok(a), Ok(b)) => a == b,
        _ => recorded.trim() == live.trim(),
    }
}

fn show(text: &str) -> String {
    format!("{:?}", truncate(text, SHOW_LIMIT))
}

#[cfg(test)]
mod tests {
    use super::*;
    use quire_types::ToolSpec;

    fn req(messages: Vec<Message>, tools: &[&str]) -> ModelRequest {
        ModelRequest {
            messages,
            tools: tools
                .iter()
                .map(|n| ToolSpec {
                    name: n.to_string(),
                    description: String::new(),
                    parameters: serde_json::json!({}),
                })
                .collect(),
            ..Default::default()
        }
    }

    fn history(args: &str) -> Vec<Message> {
        vec![
            Message::system("sys"),
            Message::user("task"),
            Message::assistant("", vec![ToolCall::new("c1", "read", args)]),
            Message::tool("c1", "read", "contents", false),
        ]
    }

    #[test]
    fn text_changes_are_allowed_but_structure_is_not() {
        let base = req(history(r#"{"p":"a","n":1}"#), &["read", "ls"]);
        let mut reworded = base.clone();
        reworded.messages[0] = Message::system("a different prompt");
        reworded.messages[3] = Message::tool("c1", "read", "other contents", false);
        reworded.tools.reverse();
        assert!(compare(&base, &reworded).is_ok());

        let reordered_keys = req(history(r#"{ "n": 1, "p": "a" }"#), &["read", "ls"]);
        assert!(compare(&base, &reordered_keys).is_ok());

        let other_args = req(history(r#"{"p":"b"}"#), &["read", "ls"]);
        let err = compare(&base, &other_args).unwrap_err();
        assert!(
            err.contains("messages[2]") && err.contains(r#"\"p\":\"b\""#),
            "{err}"
        );

        let fewer_tools = req(history(r#"{"p":"a","n":1}"#), &["read"]);
        assert!(
            compare(&base, &fewer_tools)
                .unwrap_err()
                .contains("offered tools")
        );

        let mut longer = base.clone();
        longer.messages.push(Message::user("more"));
        let err = compare(&base, &longer).unwrap_err();
        assert!(err.contains("expected 4 messages, got 5"), "{err}");

        let mut other_id = base.clone();
        other_id.messages[3] = Message::tool("c9", "read", "contents", false);
        assert!(compare(&base, &other_id).unwrap_err().contains("c9"));

        let mut other_role = base.clone();
        other_role.messages[1] = Message::assistant("task", vec![]);
        assert!(
            compare(&base, &other_role)
                .unwrap_err()
                .contains("expected role user")
        );
    }
}
