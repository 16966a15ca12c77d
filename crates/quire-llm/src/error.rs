//! Errors of the model clients.
//!
//! Each variant names one situation a person can act on (fix the key, pick
//! another model, shorten the conversation, wait), so the loop and the
//! terminal can say what went wrong without reading provider JSON.

use std::time::Duration;

use quire_types::Redactor;

/// How much of a provider's error body is kept in an error message.
const DETAIL_LIMIT: usize = 300;

#[derive(Debug, thiserror::Error)]
pub enum LlmError {
    /// 401/403. Names the variable, never the value.
    #[error(
        "the API key in ${env_var} was rejected ({status}); check that it is set and valid for this provider"
    )]
    Unauthorized { status: u16, env_var: String },

    #[error("model {model:?} was not found by the provider: {detail}")]
    ModelNotFound { model: String, detail: String },

    #[error("the conversation is longer than the model's context window: {detail}")]
    ContextLengthExceeded { detail: String },

    #[error("rate limited by the provider; gave up after {attempts} attempt(s)")]
    RateLimited { attempts: u32 },

    #[error("the model server failed with status {status} after {attempts} attempt(s): {detail}")]
    Server {
        status: u16,
        detail: String,
        attempts: u32,
    },

    #[error("the model server did not answer within {after:?} ({attempts} attempt(s))")]
    Timeout { after: Duration, attempts: u32 },

    #[error("could not talk to the model server ({attempts} attempt(s)): {detail}")]
    Connection { detail: String, attempts: u32 },

    #[error("the model server sent a response that could not be read: {detail}")]
    Malformed { detail: String },

    #[error("the model server rejected the request ({status}): {detail}")]
    BadRequest { status: u16, detail: String },

    /// Record/replay: the recording does not match this run.
    #[error("replay: {detail}")]
    Replay { detail: String },

    /// The client settings cannot work (bad URL, bad header).
    #[error("invalid model client settings: {detail}")]
    InvalidSettings { detail: String },

    #[error("{context}: {source}")]
    Io {
        context: String,
        #[source]
        source: std::io::Error,
    },
}

impl LlmError {
    /// True for failures that may go away on their own: rate limits,
    /// overloaded or failing servers, timeouts, dropped connections.
    pub fn is_retryable(&self) -> bool {
        match self {
            LlmError::RateLimited { .. }
            | LlmError::Timeout { .. }
            | LlmError::Connection { .. } => true,
            LlmError::Server { status, .. } => is_retryable_status(*status),
            _ => false,
        }
    }

    /// The number of attempts made, for the variants that carry it.
    pub fn attempts(&self) -> Option<u32> {
        match self {
            LlmError::RateLimited { attempts }
            | LlmError::Server { attempts, .. }
            | LlmError::Timeout { attempts, .. }
            | LlmError::Connection { attempts, .. } => Some(*attempts),
            _ => None,
        }
    }

    /// Sets the attempt count once the retry loop knows it.
    pub(crate) fn with_attempts(mut self, n: u32) -> Self {
        match &mut self {
            LlmError::RateLimited { attempts }
            | LlmError::Server { attempts, .. }
            | LlmError::Timeout { attempts, .. }
            | LlmError::Connection { attempts, .. } => *attempts = n,
            _ => {}
        }
        self
    }

    pub(crate) fn io(context: impl Into<String>, source: std::io::Error) -> Self {
        LlmError::Io {
            context: context.into(),
            source,
        }
    }

    pub(crate) fn malformed(detail: impl Into<String>) -> Self {
        LlmError::Malformed {
            detail: truncate(&detail.into(), DETAIL_LIMIT),
        }
    }

    pub(crate) fn connection(detail: impl Into<String>) -> Self {
        LlmError::Connection {
            detail: detail.into(),
            attempts: 1,
        }
    }
}

/// Statuses worth another try (529 is Anthropic's "overloaded").
pub(crate) fn is_retryable_status(status: u16) -> bool {
    matches!(status, 408 | 429 | 500 | 502 | 503 | 504 | 529)
}

/// Cuts `text` to at most `limit` characters (on a char boundary), marking
/// the cut.
pub(crate) fn truncate(text: &str, limit: usize) -> String {
    match text.char_indices().nth(limit) {
        None => text.to_string(),
        Some((cut, _)) => format!("{}…", &text[..cut]),
    }
}

/// Prepares provider text for an error message: redacted, then truncated.
/// Redaction comes first so a cut never leaves half a key visible.
pub(crate) fn clean_detail(redactor: &Redactor, text: &str) -> String {
    truncate(redactor.redact(text.trim()).as_str(), DETAIL_LIMIT)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unauthorized_names_the_variable() {
        let e = LlmError::Unauthorized {
            status: 401,
            env_var: "OPENAI_API_KEY".into(),
        };
        let text = e.to_string();
        assert!(text.contains("$OPENAI_API_KEY"), "{text}");
        assert!(text.contains("401"), "{text}");
        assert!(!e.is_retryable());
    }

    #[test]
    fn retryable_classes() {
        assert!(LlmError::RateLimited { attempts: 1 }.is_retryable());
        assert!(
            LlmError::Server {
                status: 503,
                detail: String::new(),
                attempts: 1
            }
            .is_retryable()
        );
        assert!(
            !LlmError::Server {
                status: 501,
                detail: String::new(),
                attempts: 1
            }
            .is_retryable()
        );
        assert!(!LlmError::malformed("x").is_retryable());
        assert!(
            !LlmError::BadRequest {
                status: 400,
                detail: String::new()
            }
            .is_retryable()
        );
    }

    #[test]
    fn truncate_respects_char_boundaries() {
        let s = "é".repeat(400);
        let t = truncate(&s, 300);
        assert_eq!(t.chars().count(), 301);
        assert_eq!(truncate("short", 300), "short");
    }

    #[test]
    fn detail_is_redacted_before_truncation() {
        let mut r = Redactor::new();
        r.add_secret("my-very-secret-key-123");
        let body = format!("{}my-very-secret-key-123", "x".repeat(290));
        let d = clean_detail(&r, &body);
        assert!(!d.contains("my-very"), "{d}");
    }

    #[test]
    fn with_attempts_sets_count() {
        let e = LlmError::connection("refused").with_attempts(3);
        assert_eq!(e.attempts(), Some(3));
    }
}
