//! Events: appended one committed transaction at a time, read back in order.

use chrono::{DateTime, Utc};
use quire_types::{Event, EventKind, SessionId};
use rusqlite::{Transaction, TransactionBehavior, params};
use serde::Serialize;

use crate::convert::{fmt_ts, parse_ts, to_i64, to_u64};
use crate::{Store, StoreError};

/// One stored event (serializable for `--json` export).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StoredEvent {
    /// Position in the session, dense from 1.
    pub seq: u64,
    pub at: DateTime<Utc>,
    /// `EventKind::name()` of the event.
    pub kind: String,
    pub event: Event,
}

impl Store {
    /// Appends `event` to a session in its own committed transaction and
    /// returns its sequence number, so a process killed at any point leaves
    /// a readable trajectory. The payload is redacted before it is written.
    /// `ModelResponse` and `ToolResult` events also advance the session's
    /// running totals in the same transaction.
    pub fn append_event(&self, id: &SessionId, event: &Event) -> Result<u64, StoreError> {
        let kind = event.kind.name();
        let mut payload =
            serde_json::to_value(&event.kind).map_err(|source| self.encode(id, kind, source))?;
        self.redactor.redact_json(&mut payload);
        let payload =
            serde_json::to_string(&payload).map_err(|source| self.encode(id, kind, source))?;
        let action = || format!("appending {kind} event to session {id}");
        let sql_err = |source: rusqlite::Error| self.sqlite(action(), source);

        // Immediate: take the write lock before reading MAX(seq), so two
        // processes appending to one session cannot pick the same seq (and a
        // busy wait happens up front, where the busy timeout applies).
        let tx = Transaction::new_unchecked(&self.conn, TransactionBehavior::Immediate)
            .map_err(sql_err)?;
        let (exists, last): (bool, i64) = tx
            .prepare_cached(
                "SELECT EXISTS (SELECT 1 FROM sessions WHERE id = ?1), \
                 COALESCE((SELECT MAX(seq) FROM events WHERE session_id = ?1), 0)",
            )
            .and_then(|mut stmt| {
                stmt.query_row([id.as_str()], |row| Ok((row.get(0)?, row.get(1)?)))
            })
            .map_err(sql_err)?;
        if !exists {
            return Err(self.not_found(id));
        }
        let seq = last + 1;
        let (tokens_in, tokens_out, duration_ms) = metrics(&event.kind);
        tx.prepare_cached(
            "INSERT INTO events (session_id, seq, at, kind, payload, tokens_in, tokens_out, \
             duration_ms) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
        )
        .and_then(|mut stmt| {
            stmt.execute(params![
                id.as_str(),
                seq,
                fmt_ts(event.at),
                kind,
                payload,
                to_i64(tokens_in),
                to_i64(tokens_out),
                duration_ms.map(to_i64),
            ])
        })
        .map_err(sql_err)?;
        match &event.kind {
            EventKind::ModelResponse { usage, .. } => tx
                .prepare_cached(
                    "UPDATE sessions SET prompt_tokens = prompt_tokens + ?2, \
                     completion_tokens = completion_tokens + ?3, \
                     cached_tokens = cached_tokens + ?4, iterations = iterations + 1 \
                     WHERE id = ?1",
                )
                .and_then(|mut stmt| {
                    stmt.execute(params![
                        id.as_str(),
                        to_i64(usage.prompt_tokens),
                        to_i64(usage.completion_tokens),
                        to_i64(usage.cached_tokens),
                    ])
                })
                .map_err(sql_err)?,
            // A failed attempt's tokens count too (a provider bills them).
            EventKind::ModelRetry { usage, .. } => tx
                .prepare_cached(
                    "UPDATE sessions SET prompt_tokens = prompt_tokens + ?2, \
                     completion_tokens = completion_tokens + ?3, \
                     cached_tokens = cached_tokens + ?4 WHERE id = ?1",
                )
                .and_then(|mut stmt| {
                    stmt.execute(params![
                        id.as_str(),
                        to_i64(usage.prompt_tokens),
                        to_i64(usage.completion_tokens),
                        to_i64(usage.cached_tokens),
                    ])
                })
                .map_err(sql_err)?,
            EventKind::ToolResult { .. } => tx
                .prepare_cached("UPDATE sessions SET tool_calls = tool_calls + 1 WHERE id = ?1")
                .and_then(|mut stmt| stmt.execute([id.as_str()]))
                .map_err(sql_err)?,
            _ => 0,
        };
        tx.commit().map_err(sql_err)?;
        tracing::trace!(session = %id, seq, kind, "appended event");
        Ok(to_u64(seq))
    }

    /// All events of a session in sequence order.
    pub fn events(&self, id: &SessionId) -> Result<Vec<StoredEvent>, StoreError> {
        self.events_after(id, 0)
    }

    /// The events with `seq > after`, in order (for following a live session).
    pub fn events_after(&self, id: &SessionId, after: u64) -> Result<Vec<StoredEvent>, StoreError> {
        let raw: Vec<(i64, String, String, String)> = self
            .conn
            .prepare_cached(
                "SELECT seq, at, kind, payload FROM events \
                 WHERE session_id = ?1 AND seq > ?2 ORDER BY seq",
            )
            .and_then(|mut stmt| {
                stmt.query_map(params![id.as_str(), to_i64(after)], |row| {
                    Ok((row.get(0)?, row.get(1)?, row.get(2)?, row.get(3)?))
                })?
                .collect()
            })
            .map_err(|source| self.sqlite(format!("reading events of session {id}"), source))?;
        if raw.is_empty() {
            self.require_session(id)?;
        }
        raw.into_iter()
            .map(|(seq, at, kind, payload)| self.decode_event(id, seq, &at, kind, &payload))
            .collect()
    }

    /// How many events a session has.
    pub fn event_count(&self, id: &SessionId) -> Result<u64, StoreError> {
        let count: i64 = self
            .conn
            .prepare_cached("SELECT COUNT(*) FROM events WHERE session_id = ?1")
            .and_then(|mut stmt| stmt.query_row([id.as_str()], |row| row.get(0)))
            .map_err(|source| self.sqlite(format!("counting events of session {id}"), source))?;
        if count == 0 {
            self.require_session(id)?;
        }
        Ok(to_u64(count))
    }

    fn require_session(&self, id: &SessionId) -> Result<(), StoreError> {
        let exists: bool = self
            .conn
            .prepare_cached("SELECT EXISTS (SELECT 1 FROM sessions WHERE id = ?1)")
            .and_then(|mut stmt| stmt.query_row([id.as_str()], |row| row.get(0)))
            .map_err(|source| self.sqlite(format!("reading session {id}"), source))?;
        if exists {
            Ok(())
        } else {
            Err(self.not_found(id))
        }
    }

    fn decode_event(
        &self,
        id: &SessionId,
        seq: i64,
        at: &str,
        kind: String,
        payload: &str,
    ) -> Result<StoredEvent, StoreError> {
        let bad = |detail: String| StoreError::Decode {
            db: self.db.clone(),
            what: format!("event {seq} ({kind}) of session {id}"),
            detail,
        };
        let at = parse_ts(at).map_err(|err| bad(format!("timestamp `{at}`: {err}")))?;
        let event_kind: EventKind =
            serde_json::from_str(payload).map_err(|err| bad(format!("payload: {err}")))?;
        Ok(StoredEvent {
            seq: to_u64(seq),
            at,
            kind,
            event: Event {
                at,
                kind: event_kind,
            },
        })
    }

    fn encode(&self, id: &SessionId, kind: &str, source: serde_json::Error) -> StoreError {
        StoreError::Encode {
            db: self.db.clone(),
            what: format!("{kind} event of session {id}"),
            source,
        }
    }
}

/// Token and duration columns derived from the event, for SQL aggregates.
fn metrics(kind: &EventKind) -> (u64, u64, Option<u64>) {
    match kind {
        EventKind::ModelResponse {
            usage, duration_ms, ..
        } => (
            usage.prompt_tokens,
            usage.completion_tokens,
            Some(*duration_ms),
        ),
        EventKind::ModelRetry {
            usage, elapsed_ms, ..
        } => (
            usage.prompt_tokens,
            usage.completion_tokens,
            Some(*elapsed_ms),
        ),
        EventKind::ToolResult { duration_ms, .. } | EventKind::TestRun { duration_ms, .. } => {
            (0, 0, Some(*duration_ms))
        }
        _ => (0, 0, None),
    }
}
