//! HTTP plumbing shared by both protocols: the reqwest client, sending one
//! POST, and turning failures into [`LlmError`]s.

use std::time::Duration;

use quire_types::{ModelResponse, Redactor};
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use serde_json::Value;

use crate::ClientSettings;
use crate::error::{LlmError, clean_detail};
use crate::retry::{Failure, RetryPolicy, retry_after};

/// A configured HTTP client plus what is needed to explain its failures.
pub(crate) struct HttpCore {
    http: reqwest::Client,
    pub settings: ClientSettings,
    pub redactor: Redactor,
}

impl HttpCore {
    pub fn new(settings: ClientSettings) -> Result<Self, LlmError> {
        reqwest::Url::parse(&settings.base_url).map_err(|e| LlmError::InvalidSettings {
            detail: format!("base URL {:?} is not a URL: {e}", settings.base_url),
        })?;
        let mut headers = HeaderMap::new();
        for (name, value) in &settings.extra_headers {
            let header_name =
                HeaderName::from_bytes(name.as_bytes()).map_err(|_| LlmError::InvalidSettings {
                    detail: format!("extra header name {name:?} is not a valid header name"),
                })?;
            // The value is not echoed: extra headers often carry tokens.
            let mut header_value =
                HeaderValue::from_str(value).map_err(|_| LlmError::InvalidSettings {
                    detail: format!(
                        "the value of extra header {name:?} is not a valid header value"
                    ),
                })?;
            header_value.set_sensitive(true);
            headers.insert(header_name, header_value);
        }
        let http = reqwest::Client::builder()
            .connect_timeout(settings.request_timeout)
            .default_headers(headers)
            .user_agent(concat!("quire/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| LlmError::InvalidSettings {
                detail: format!("cannot build the HTTP client: {e}"),
            })?;
        let mut redactor = Redactor::new();
        if let Some(key) = &settings.api_key {
            redactor.add_secret(key.clone());
        }
        Ok(HttpCore {
            http,
            settings,
            redactor,
        })
    }

    pub fn policy(&self) -> RetryPolicy {
        RetryPolicy {
            max_attempts: self.settings.max_attempts,
            base_delay: self.settings.retry_base_delay,
            max_delay: self.settings.retry_max_delay,
        }
    }

    /// `{base_url}/{path}` without doubled slashes.
    pub fn url(&self, path: &str) -> String {
        format!(
            "{}/{}",
            self.settings.base_url.trim_end_matches('/'),
            path.trim_start_matches('/')
        )
    }

    /// Sends one POST; returns the response on a 2xx status, otherwise the
    /// classified error with the server's wait hint.
    pub async fn post(
        &self,
        url: &str,
        auth: Vec<(&'static str, String)>,
        body: &Value,
    ) -> Result<reqwest::Response, Failure> {
        let mut request = self.http.post(url).json(body);
        for (name, value) in auth {
            let mut value =
                HeaderValue::from_str(&value).map_err(|_| LlmError::InvalidSettings {
                    detail: format!(
                        "the {name} header built from the API key is not a valid header value"
                    ),
                })?;
            value.set_sensitive(true);
            request = request.header(name, value);
        }
        let response = request.send().await.map_err(|e| self.transport_error(&e))?;
        let status = response.status();
        if status.is_success() {
            return Ok(response);
        }
        let hint = retry_after(response.headers());
        // The error body is small; reading it is bounded by the caller's timeout.
        let text = response.text().await.unwrap_or_default();
        Err(Failure {
            error: self.classify(status.as_u16(), &text, url),
            retry_after: hint,
            usage: Default::default(),
        })
    }

    /// Maps a reqwest failure (no HTTP status) to an error.
    pub fn transport_error(&self, e: &reqwest::Error) -> LlmError {
        if e.is_timeout() {
            return LlmError::Timeout {
                after: self.settings.request_timeout,
                attempts: 1,
            };
        }
        // Bodies are parsed by this crate, not reqwest, so a "decode" error
        // here is a body that broke off (reqwest reports a cut chunked body
        // as one): retryable like any broken connection.
        let what = if e.is_connect() {
            "could not connect"
        } else if e.is_body() || e.is_decode() {
            "the connection broke while reading the response"
        } else {
            "the request failed"
        };
        LlmError::connection(clean_detail(
            &self.redactor,
            &format!("{what}: {}", error_chain(e)),
        ))
    }

    /// Turns an HTTP error status and body into the variant a person can act on.
    pub fn classify(&self, status: u16, body: &str, url: &str) -> LlmError {
        let (message, code) = error_fields(body);
        let source = match &message {
            Some(m) if !m.trim().is_empty() => m.as_str(),
            _ if body.trim().is_empty() => "(empty response body)",
            _ => body,
        };
        let detail = clean_detail(&self.redactor, source);
        let code = code.unwrap_or_default();
        let lower = body.to_lowercase();

        match status {
            401 | 403 => LlmError::Unauthorized {
                status,
                env_var: self.settings.api_key_env.clone(),
            },
            _ if status == 404 || code == "model_not_found" => {
                let detail = if detail.to_lowercase().contains("model") {
                    detail
                } else {
                    format!("{detail} (is the base URL right? POST {url})")
                };
                LlmError::ModelNotFound {
                    model: self.settings.model.clone(),
                    detail,
                }
            }
            429 if code == "insufficient_quota" => LlmError::BadRequest { status, detail },
            429 => LlmError::RateLimited { attempts: 1 },
            // Any status: some local servers report an overflow as a 500.
            _ if is_context_overflow(&lower, &code) => LlmError::ContextLengthExceeded { detail },
            408 => LlmError::Timeout {
                after: self.settings.request_timeout,
                attempts: 1,
            },
            500..=599 => LlmError::Server {
                status,
                detail,
                attempts: 1,
            },
            _ => LlmError::BadRequest { status, detail },
        }
    }
}

/// Bounds a future by `limit`, mapping expiry to [`LlmError::Timeout`].
pub(crate) async fn within<T>(
    limit: Duration,
    fut: impl std::future::Future<Output = Result<T, Failure>>,
) -> Result<T, Failure> {
    match tokio::time::timeout(limit, fut).await {
        Ok(result) => result,
        Err(_) => Err(LlmError::Timeout {
            after: limit,
            attempts: 1,
        }
        .into()),
    }
}

/// The temperature as the decimal the user wrote (0.2, not
/// 0.20000000298023224 from widening the f32).
pub(crate) fn temperature(t: f32) -> f64 {
    t.to_string().parse().unwrap_or(f64::from(t))
}

/// Phrases providers and local servers use for "prompt too long".
fn is_context_overflow(lower_body: &str, code: &str) -> bool {
    const PHRASES: &[&str] = &[
        "context_length_exceeded",
        "prompt is too long",
        "maximum context length",
        "context length",
        "context window",
        "context size",
        "exceed_context_size",
    ];
    code == "context_length_exceeded" || PHRASES.iter().any(|p| lower_body.contains(p))
}

/// Pulls `message` and `code` (or `type`) out of the error shapes of
/// OpenAI (`{"error":{"message","code","type"}}`), Anthropic
/// (`{"type":"error","error":{"type","message"}}`) and simpler servers
/// (`{"error":"text"}`, `{"message":"text"}`).
pub(crate) fn error_fields(body: &str) -> (Option<String>, Option<String>) {
    let Ok(value) = serde_json::from_str::<Value>(body) else {
        return (None, None);
    };
    error_fields_of(&value)
}

pub(crate) fn error_fields_of(value: &Value) -> (Option<String>, Option<String>) {
    let err = value.get("error").unwrap_or(value);
    let message = match err {
        Value::String(s) => Some(s.clone()),
        _ => err
            .get("message")
            .and_then(Value::as_str)
            .map(str::to_string),
    };
    let code = ["code", "type"].iter().find_map(|k| match err.get(*k) {
        Some(Value::String(s)) => Some(s.clone()),
        Some(Value::Number(n)) => Some(n.to_string()),
        _ => None,
    });
    (message, code)
}

/// The error and its sources on one line (reqwest's own message is terse).
fn error_chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        let s_text = s.to_string();
        if !text.contains(&s_text) {
            text.push_str(": ");
            text.push_str(&s_text);
        }
        source = s.source();
    }
    text
}

/// What differs between the two wire protocols when reading an answer:
/// the whole-body parser and the stream assembler. Everything else about an
/// attempt (timeouts, the plain-JSON fallback, the stream deadline) is shared.
pub(crate) trait Wire {
    type Stream: Default;
    fn parse_body(bytes: &[u8], model: &str, core: &HttpCore) -> Result<ModelResponse, LlmError>;
    /// Feeds one event; `true` when the stream is complete.
    fn push(
        state: &mut Self::Stream,
        event: &eventsource_stream::Event,
        core: &HttpCore,
    ) -> Result<bool, LlmError>;
    fn finish(state: Self::Stream, model: &str) -> Result<ModelResponse, LlmError>;
    /// The tokens a stream reported so far (kept when it breaks off).
    fn usage_so_far(state: &Self::Stream) -> quire_types::Usage;
}

/// One attempt of a request: POST, then read the body or the event stream.
/// A plain request is bounded by the overall timeout; a stream by the idle
/// timeout until it starts and between chunks, and by the overall timeout
/// as a whole, so a slow first token is waited for and a stall is not.
pub(crate) async fn attempt<W: Wire>(
    core: &HttpCore,
    url: &str,
    headers: Vec<(&'static str, String)>,
    body: &Value,
) -> Result<ModelResponse, Failure> {
    let s = &core.settings;
    let started = tokio::time::Instant::now();
    let read_body = |response: reqwest::Response| async move {
        let bytes = response
            .bytes()
            .await
            .map_err(|e| core.transport_error(&e))?;
        W::parse_body(&bytes, &s.model, core).map_err(Failure::from)
    };
    if !s.stream {
        return within(s.request_timeout, async {
            read_body(core.post(url, headers, body).await?).await
        })
        .await;
    }
    let idle = s.idle_timeout.min(s.request_timeout);
    let response = within(idle, core.post(url, headers, body)).await?;
    if !crate::sse::is_event_stream(&response) {
        let left = s.request_timeout.saturating_sub(started.elapsed());
        return within(left, read_body(response)).await;
    }
    let mut reader = crate::sse::SseReader::new(response, idle, started, s.request_timeout);
    let mut state = W::Stream::default();
    let broken = |state: &W::Stream, error: LlmError| Failure {
        error,
        retry_after: None,
        usage: W::usage_so_far(state),
    };
    loop {
        let event = match reader.next(core).await {
            Ok(Some(event)) => event,
            Ok(None) => break,
            Err(error) => return Err(broken(&state, error)),
        };
        match W::push(&mut state, &event, core) {
            Ok(true) => break,
            Ok(false) => {}
            Err(error) => return Err(broken(&state, error)),
        }
    }
    W::finish(state, &s.model).map_err(Failure::from)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Provider;

    fn core() -> HttpCore {
        let mut s = ClientSettings::new(Provider::OpenAi, "gpt-test", "http://127.0.0.1:1/v1");
        s.api_key = Some("sk-secret-value-1234567890".into());
        HttpCore::new(s).unwrap()
    }

    #[test]
    fn classifies_statuses() {
        let c = core();
        let url = "http://x/v1/chat/completions";
        assert!(matches!(
            c.classify(401, "{}", url),
            LlmError::Unauthorized { status: 401, .. }
        ));
        assert!(matches!(
            c.classify(404, r#"{"error":{"message":"The model `gpt-test` does not exist","code":"model_not_found"}}"#, url),
            LlmError::ModelNotFound { .. }
        ));
        assert!(matches!(
            c.classify(400, r#"{"error":{"message":"This model's maximum context length is 8192 tokens","code":"context_length_exceeded"}}"#, url),
            LlmError::ContextLengthExceeded { .. }
        ));
        assert!(matches!(
            c.classify(400, r#"{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 210000 tokens > 200000 maximum"}}"#, url),
            LlmError::ContextLengthExceeded { .. }
        ));
        assert!(matches!(
            c.classify(429, "", url),
            LlmError::RateLimited { .. }
        ));
        assert!(matches!(
            c.classify(
                429,
                r#"{"error":{"message":"quota","code":"insufficient_quota"}}"#,
                url
            ),
            LlmError::BadRequest { status: 429, .. }
        ));
        assert!(matches!(
            c.classify(529, "overloaded", url),
            LlmError::Server { status: 529, .. }
        ));
        assert!(matches!(
            c.classify(422, "nope", url),
            LlmError::BadRequest { status: 422, .. }
        ));
    }

    #[test]
    fn details_never_carry_the_key() {
        let c = core();
        let e = c.classify(
            400,
            r#"{"error":{"message":"bad key sk-secret-value-1234567890 given"}}"#,
            "u",
        );
        assert!(!e.to_string().contains("sk-secret-value"), "{e}");
    }

    #[test]
    fn not_found_without_model_mention_hints_at_url() {
        let e = core().classify(404, "404 page not found", "http://x/v1/chat/completions");
        assert!(e.to_string().contains("base URL"), "{e}");
    }

    #[test]
    fn rejects_bad_settings() {
        let mut s = ClientSettings::new(Provider::OpenAi, "m", "not a url");
        assert!(matches!(
            HttpCore::new(s.clone()),
            Err(LlmError::InvalidSettings { .. })
        ));
        s.base_url = "http://127.0.0.1:1".into();
        s.extra_headers = vec![("bad header".into(), "v".into())];
        assert!(matches!(
            HttpCore::new(s),
            Err(LlmError::InvalidSettings { .. })
        ));
    }

    #[test]
    fn temperature_keeps_its_decimal() {
        assert_eq!(temperature(0.2), 0.2);
        assert_eq!(serde_json::json!(temperature(0.7)).to_string(), "0.7");
    }

    #[test]
    fn url_joins_cleanly() {
        assert_eq!(
            core().url("/chat/completions"),
            "http://127.0.0.1:1/v1/chat/completions"
        );
    }
}
