//! Reading a server-sent-events response with an idle timeout between
//! chunks and an overall deadline, so a stalled or dripping stream cannot
//! hang the caller.

use std::pin::Pin;
use std::time::Duration;

use bytes::Bytes;
use eventsource_stream::{Event, EventStreamError, Eventsource};
use futures::{Stream, StreamExt};
use tokio::time::Instant;

use crate::error::LlmError;
use crate::http::HttpCore;

/// Why the byte stream under the SSE parser stopped.
enum ChunkError {
    /// No bytes for longer than the idle timeout.
    Idle,
    Transport(reqwest::Error),
}

type Events = Pin<Box<dyn Stream<Item = Result<Event, EventStreamError<ChunkError>>> + Send>>;

pub(crate) struct SseReader {
    events: Events,
    idle: Duration,
    deadline: Instant,
    overall: Duration,
}

impl SseReader {
    /// `idle` bounds the gap between two chunks; `overall` bounds the whole
    /// stream, counted from `started`.
    pub fn new(
        response: reqwest::Response,
        idle: Duration,
        started: Instant,
        overall: Duration,
    ) -> Self {
        let chunks = futures::stream::unfold(
            Some(Box::pin(response.bytes_stream())),
            move |state| async move {
                let mut bytes = state?;
                match tokio::time::timeout(idle, bytes.next()).await {
                    Ok(Some(Ok(chunk))) => Some((Ok::<Bytes, ChunkError>(chunk), Some(bytes))),
                    // After an error the stream ends: nothing sensible follows.
                    Ok(Some(Err(e))) => Some((Err(ChunkError::Transport(e)), None)),
                    Ok(None) => None,
                    Err(_) => Some((Err(ChunkError::Idle), None)),
                }
            },
        );
        SseReader {
            events: Box::pin(chunks.eventsource()),
            idle,
            deadline: started + overall,
            overall,
        }
    }

    /// The next event, `None` at the end of the stream.
    pub async fn next(&mut self, core: &HttpCore) -> Result<Option<Event>, LlmError> {
        let next = tokio::time::timeout_at(self.deadline, self.events.next()).await;
        match next {
            Err(_) => Err(LlmError::Timeout {
                after: self.overall,
                attempts: 1,
            }),
            Ok(None) => Ok(None),
            Ok(Some(Ok(event))) => Ok(Some(event)),
            Ok(Some(Err(EventStreamError::Transport(ChunkError::Idle)))) => {
                Err(LlmError::Timeout {
                    after: self.idle,
                    attempts: 1,
                })
            }
            Ok(Some(Err(EventStreamError::Transport(ChunkError::Transport(e))))) => {
                Err(core.transport_error(&e))
            }
            Ok(Some(Err(EventStreamError::Utf8(e)))) => Err(LlmError::malformed(format!(
                "event stream is not UTF-8: {e}"
            ))),
            Ok(Some(Err(EventStreamError::Parser(e)))) => Err(LlmError::malformed(format!(
                "event stream does not parse: {e}"
            ))),
        }
    }
}

/// The error for a stream that ended before its terminator: retryable,
/// since a fresh attempt usually completes.
pub(crate) fn cut_off(expected: &str) -> LlmError {
    LlmError::connection(format!(
        "the response stream ended before {expected}; the connection was probably cut"
    ))
}

/// True when the response is an event stream rather than a plain JSON body
/// (some servers ignore `stream: true`).
pub(crate) fn is_event_stream(response: &reqwest::Response) -> bool {
    response
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_none_or(|ct| ct.contains("text/event-stream"))
}
