//! Model clients for Quire: OpenAI-compatible Chat Completions and the
//! Anthropic Messages API over HTTP, with retries, timeouts, record and
//! replay, and a text protocol for models without native tool calling.
//!
//! The agent loop sees only [`ModelClient`]; everything provider-specific
//! stays in this crate.

mod anthropic;
mod error;
mod http;
mod openai;
mod record;
mod retry;
mod sse;
pub mod text_protocol;

use std::fmt;
use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use quire_types::{Message, ModelRequest, ModelResponse, Usage};
use serde::{Deserialize, Serialize};

pub use anthropic::AnthropicClient;
pub use error::LlmError;
pub use openai::OpenAiClient;
pub use record::{Exchange, RecordingClient, ReplayClient};

/// One model behind one protocol.
#[async_trait]
pub trait ModelClient: Send + Sync {
    /// Sends the conversation and returns the whole answer (streamed
    /// responses are assembled before returning).
    async fn complete(&self, request: &ModelRequest) -> Result<ModelResponse, LlmError>;
    /// Like [`ModelClient::complete`], telling `on_retry` about each failed
    /// attempt that is about to be retried (so a session can show and record
    /// it). Clients without retries of their own just complete.
    async fn complete_observed(
        &self,
        request: &ModelRequest,
        on_retry: &RetryObserver<'_>,
    ) -> Result<ModelResponse, LlmError> {
        let _ = on_retry;
        self.complete(request).await
    }
    /// The configured model name.
    fn model(&self) -> &str;
    fn provider(&self) -> Provider;
}

/// Told about each failed attempt before it is retried.
pub type RetryObserver<'a> = dyn Fn(&RetryNotice) + Send + Sync + 'a;

/// A model request attempt that failed and is about to be retried.
#[derive(Debug, Clone, PartialEq)]
pub struct RetryNotice {
    /// The attempt that failed (from 1).
    pub attempt: u32,
    pub max_attempts: u32,
    /// Why, in the error's words (redacted).
    pub reason: String,
    /// The limit that expired, when the attempt timed out (idle or overall).
    pub timed_out_after: Option<Duration>,
    /// Tokens the provider reported before the attempt failed (a stream
    /// may report its prompt tokens first); zero when it reported none.
    pub usage: Usage,
    /// How long the failed attempt ran.
    pub elapsed: Duration,
    /// The wait before the next attempt.
    pub delay: Duration,
}

/// The wire protocol a client speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Provider {
    /// OpenAI Chat Completions and compatible servers (Ollama, vLLM, llama.cpp).
    OpenAi,
    Anthropic,
}

impl Provider {
    pub fn as_str(self) -> &'static str {
        match self {
            Provider::OpenAi => "openai",
            Provider::Anthropic => "anthropic",
        }
    }

    /// The usual environment variable holding this provider's key.
    pub fn default_api_key_env(self) -> &'static str {
        match self {
            Provider::OpenAi => "OPENAI_API_KEY",
            Provider::Anthropic => "ANTHROPIC_API_KEY",
        }
    }

    pub fn default_base_url(self) -> &'static str {
        match self {
            Provider::OpenAi => "https://api.openai.com/v1",
            Provider::Anthropic => "https://api.anthropic.com",
        }
    }
}

impl fmt::Display for Provider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The overall limit of one attempt by default (30 minutes).
pub const DEFAULT_REQUEST_TIMEOUT_SECS: u64 = 1800;
/// The idle limit of a stream by default (as Codex: 300 s).
pub const DEFAULT_IDLE_TIMEOUT_SECS: u64 = 300;

/// Everything needed to build a client. `Debug` never shows the key.
#[derive(Clone)]
pub struct ClientSettings {
    pub provider: Provider,
    pub model: String,
    pub base_url: String,
    /// Name of the environment variable the key came from (for messages).
    pub api_key_env: String,
    /// The key itself; `None` for local servers that need none.
    pub api_key: Option<String>,
    /// The overall limit of one attempt: the whole request, or the whole
    /// stream. Generous, since reasoning models may think for minutes.
    pub request_timeout: Duration,
    /// For streams: the longest wait for the response to start and between
    /// two chunks (capped by `request_timeout`). A slow first token within
    /// it is waited for; a stalled stream is cut and retried.
    pub idle_timeout: Duration,
    pub stream: bool,
    /// Total attempts, the first included.
    pub max_attempts: u32,
    pub retry_base_delay: Duration,
    pub retry_max_delay: Duration,
    pub extra_headers: Vec<(String, String)>,
}

impl ClientSettings {
    /// Settings with common defaults: the provider's key variable (value
    /// not read), streaming with a 300 s idle timeout and a 30 min overall
    /// limit, 4 attempts, backoff 1 s..30 s.
    pub fn new(provider: Provider, model: impl Into<String>, base_url: impl Into<String>) -> Self {
        ClientSettings {
            provider,
            model: model.into(),
            base_url: base_url.into(),
            api_key_env: provider.default_api_key_env().to_string(),
            api_key: None,
            request_timeout: Duration::from_secs(DEFAULT_REQUEST_TIMEOUT_SECS),
            idle_timeout: Duration::from_secs(DEFAULT_IDLE_TIMEOUT_SECS),
            stream: true,
            max_attempts: 4,
            retry_base_delay: Duration::from_secs(1),
            retry_max_delay: Duration::from_secs(30),
            extra_headers: Vec::new(),
        }
    }
}

impl fmt::Debug for ClientSettings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClientSettings")
            .field("provider", &self.provider)
            .field("model", &self.model)
            .field("base_url", &self.base_url)
            .field("api_key_env", &self.api_key_env)
            .field("api_key", &self.api_key.as_ref().map(|_| "[REDACTED]"))
            .field("request_timeout", &self.request_timeout)
            .field("idle_timeout", &self.idle_timeout)
            .field("stream", &self.stream)
            .field("max_attempts", &self.max_attempts)
            .field("retry_base_delay", &self.retry_base_delay)
            .field("retry_max_delay", &self.retry_max_delay)
            .field(
                "extra_headers",
                &self
                    .extra_headers
                    .iter()
                    .map(|(k, _)| k)
                    .collect::<Vec<_>>(),
            )
            .finish()
    }
}

/// Builds the client for `settings.provider`.
pub fn build_client(settings: ClientSettings) -> Result<Arc<dyn ModelClient>, LlmError> {
    Ok(match settings.provider {
        Provider::OpenAi => Arc::new(OpenAiClient::new(settings)?),
        Provider::Anthropic => Arc::new(AnthropicClient::new(settings)?),
    })
}

/// Result of [`ping`].
#[derive(Debug, Clone, PartialEq)]
pub struct PingReport {
    pub latency: Duration,
    /// The model name the provider reported (the configured one if none).
    pub model: String,
    pub usage: Usage,
    /// What the model answered (expected: "pong").
    pub reply: String,
}

/// Checks that the model answers: one tiny request, timed.
pub async fn ping(client: &dyn ModelClient) -> Result<PingReport, LlmError> {
    let request = ModelRequest {
        messages: vec![Message::user("Reply with the single word: pong")],
        tools: Vec::new(),
        temperature: None,
        max_output_tokens: Some(16),
    };
    let started = Instant::now();
    let response = client.complete(&request).await?;
    let model = if response.model.is_empty() {
        client.model().to_string()
    } else {
        response.model
    };
    Ok(PingReport {
        latency: started.elapsed(),
        model,
        usage: response.usage,
        reply: response.content.trim().to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn provider_serde_names() {
        assert_eq!(
            serde_json::to_string(&Provider::OpenAi).unwrap(),
            "\"openai\""
        );
        assert_eq!(
            serde_json::from_str::<Provider>("\"anthropic\"").unwrap(),
            Provider::Anthropic
        );
        assert_eq!(Provider::OpenAi.to_string(), "openai");
    }

    #[test]
    fn settings_debug_hides_the_key() {
        let mut s = ClientSettings::new(Provider::OpenAi, "m", "http://localhost");
        s.api_key = Some("sk-very-secret-0123456789".into());
        s.extra_headers = vec![("x-token".into(), "hidden-value".into())];
        let text = format!("{s:?}");
        assert!(!text.contains("very-secret"), "{text}");
        assert!(!text.contains("hidden-value"), "{text}");
    }
}
