//! Retries with exponential backoff and full jitter.
//!
//! Providers shed load with 429/529 and drop connections under pressure; a
//! coding session should ride that out rather than fail, but must give up
//! after a bounded number of attempts so the caller never hangs.

use std::future::Future;
use std::time::Duration;

use quire_types::Usage;
use reqwest::header::HeaderMap;

use crate::error::LlmError;
use crate::{RetryNotice, RetryObserver};

/// One failed attempt: the error, the server's own wait hint, if any, and
/// the tokens it reported before failing.
#[derive(Debug)]
pub(crate) struct Failure {
    pub error: LlmError,
    pub retry_after: Option<Duration>,
    pub usage: Usage,
}

impl From<LlmError> for Failure {
    fn from(error: LlmError) -> Self {
        Failure {
            error,
            retry_after: None,
            usage: Usage::default(),
        }
    }
}

#[derive(Debug, Clone, Copy)]
pub(crate) struct RetryPolicy {
    pub max_attempts: u32,
    pub base_delay: Duration,
    pub max_delay: Duration,
}

impl RetryPolicy {
    /// The wait before attempt `failed_attempt + 1`.
    ///
    /// A server hint wins (capped at 4× the max delay so a bogus hint cannot
    /// stall a session for an hour); otherwise a uniformly random wait in
    /// `[0, min(max, base·2^(n-1))]` ("full jitter"), which spreads clients
    /// that failed together.
    pub fn delay(&self, failed_attempt: u32, retry_after: Option<Duration>) -> Duration {
        if let Some(hint) = retry_after {
            return hint.min(self.max_delay.saturating_mul(4));
        }
        let exp = 2u32.saturating_pow(failed_attempt.saturating_sub(1));
        let ceiling = self.base_delay.saturating_mul(exp).min(self.max_delay);
        ceiling.mul_f64(rand::random::<f64>())
    }

    /// Runs `op(attempt)` (attempt counts from 1) until it succeeds, fails
    /// with a non-retryable error, or the attempts are used up. The error
    /// returned carries the number of attempts made. Each retry is told to
    /// `observer` (which then owns telling the user), else logged.
    pub async fn run<T, F, Fut>(
        &self,
        observer: Option<&RetryObserver<'_>>,
        mut op: F,
    ) -> Result<T, LlmError>
    where
        F: FnMut(u32) -> Fut,
        Fut: Future<Output = Result<T, Failure>>,
    {
        let max = self.max_attempts.max(1);
        let mut attempt = 1;
        loop {
            let started = tokio::time::Instant::now();
            match op(attempt).await {
                Ok(value) => return Ok(value),
                Err(failure) => {
                    if attempt >= max || !failure.error.is_retryable() {
                        return Err(failure.error.with_attempts(attempt));
                    }
                    let delay = self.delay(attempt, failure.retry_after);
                    match observer {
                        Some(observe) => observe(&RetryNotice {
                            attempt,
                            max_attempts: max,
                            reason: failure.error.to_string(),
                            timed_out_after: match failure.error {
                                LlmError::Timeout { after, .. } => Some(after),
                                _ => None,
                            },
                            usage: failure.usage,
                            elapsed: started.elapsed(),
                            delay,
                        }),
                        None => tracing::warn!(
                            attempt,
                            max_attempts = max,
                            delay_ms = delay.as_millis() as u64,
                            reason = %failure.error,
                            "model request failed; retrying"
                        ),
                    }
                    tokio::time::sleep(delay).await;
                    attempt += 1;
                }
            }
        }
    }
}

/// Reads the server's wait hint: `retry-after-ms` (OpenAI), then
/// `Retry-After` as seconds or as an HTTP date.
pub(crate) fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    if let Some(ms) = header_str(headers, "retry-after-ms").and_then(|v| v.parse::<f64>().ok()) {
        return secs_f64(ms / 1000.0);
    }
    let value = header_str(headers, "retry-after")?;
    parse_retry_after(value)
}

fn header_str<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers.get(name)?.to_str().ok().map(str::trim)
}

/// `Retry-After: 120` or `Retry-After: Wed, 21 Oct 2015 07:28:00 GMT`.
pub(crate) fn parse_retry_after(value: &str) -> Option<Duration> {
    let value = value.trim();
    if let Ok(secs) = value.parse::<f64>() {
        return secs_f64(secs);
    }
    let date = chrono::DateTime::parse_from_rfc2822(value).ok()?;
    let wait = date.with_timezone(&chrono::Utc) - chrono::Utc::now();
    // A date in the past means "now".
    Some(wait.to_std().unwrap_or(Duration::ZERO))
}

fn secs_f64(secs: f64) -> Option<Duration> {
    // Rejects NaN, negatives and absurd values instead of panicking.
    Duration::try_from_secs_f64(secs).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU32, Ordering};

    fn policy(max_attempts: u32) -> RetryPolicy {
        RetryPolicy {
            max_attempts,
            base_delay: Duration::from_millis(1),
            max_delay: Duration::from_millis(5),
        }
    }

    #[test]
    fn retry_after_seconds_and_dates() {
        assert_eq!(parse_retry_after("2"), Some(Duration::from_secs(2)));
        assert_eq!(parse_retry_after(" 0.5 "), Some(Duration::from_millis(500)));
        assert_eq!(parse_retry_after("-1"), None);
        assert_eq!(parse_retry_after("soon"), None);
        assert_eq!(
            parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT"),
            Some(Duration::ZERO)
        );
        let future = chrono::Utc::now() + chrono::Duration::seconds(30);
        let header = future.format("%a, %d %b %Y %H:%M:%S GMT").to_string();
        let wait = parse_retry_after(&header).unwrap();
        assert!(
            wait > Duration::from_secs(25) && wait <= Duration::from_secs(30),
            "{wait:?}"
        );
    }

    #[test]
    fn retry_after_header_prefers_milliseconds() {
        let mut h = HeaderMap::new();
        h.insert("retry-after", "7".parse().unwrap());
        assert_eq!(retry_after(&h), Some(Duration::from_secs(7)));
        h.insert("retry-after-ms", "250".parse().unwrap());
        assert_eq!(retry_after(&h), Some(Duration::from_millis(250)));
    }

    #[test]
    fn delay_is_capped_and_jittered() {
        let p = RetryPolicy {
            max_attempts: 5,
            base_delay: Duration::from_millis(100),
            max_delay: Duration::from_millis(300),
        };
        for attempt in 1..10 {
            let d = p.delay(attempt, None);
            assert!(d <= Duration::from_millis(300), "{d:?}");
        }
        assert!(p.delay(1, None) <= Duration::from_millis(100));
        assert_eq!(
            p.delay(1, Some(Duration::from_secs(60))),
            Duration::from_millis(1200)
        );
    }

    #[tokio::test]
    async fn stops_at_max_attempts_and_reports_them() {
        let calls = AtomicU32::new(0);
        let result: Result<(), _> = policy(3)
            .run(None, |_| async {
                calls.fetch_add(1, Ordering::SeqCst);
                Err(Failure::from(LlmError::connection("refused")))
            })
            .await;
        assert_eq!(calls.load(Ordering::SeqCst), 3);
        assert_eq!(result.unwrap_err().attempts(), Some(3));
    }

    #[tokio::test]
    async fn non_retryable_errors_return_at_once() {
        let calls = AtomicU32::new(0);
        let result: Result<(), _> = policy(5)
            .run(None, |_| async {
                calls.fetch_add(1, Ordering::SeqCst);
                Err(Failure::from(LlmError::malformed("bad")))
            })
            .await;
        assert_eq!(calls.load(Ordering::SeqCst), 1);
        assert!(matches!(result, Err(LlmError::Malformed { .. })));
    }

    #[tokio::test]
    async fn succeeds_after_transient_failures() {
        let result = policy(4)
            .run(None, |attempt| async move {
                if attempt < 3 {
                    Err(Failure::from(LlmError::RateLimited { attempts: 1 }))
                } else {
                    Ok(attempt)
                }
            })
            .await;
        assert_eq!(result.unwrap(), 3);
    }
}
