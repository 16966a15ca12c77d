//! Session rows: creation, lookup, listing and end-of-life updates.

use chrono::{DateTime, Utc};
use quire_types::{SessionId, Usage};
use rusqlite::types::Type;
use rusqlite::{OptionalExtension, Row, ToSql, Transaction, TransactionBehavior, params};
use serde::{Deserialize, Serialize};

use crate::convert::{fmt_ts, parse_ts, to_i64, to_u32, to_u64, word};
use crate::{Store, StoreError};

/// Where a session stands: the event protocol's word set, stored as text.
pub use quire_types::SessionStatus;

/// What is known when a session starts.
#[derive(Debug, Clone, Default)]
pub struct NewSession {
    /// Chosen by the caller so the session copy can be named after it before
    /// the row exists; a fresh ULID by default.
    pub id: SessionId,
    pub project: String,
    /// The original workspace path.
    pub workspace: String,
    /// The session copy the agent works in.
    pub work_dir: String,
    pub task: String,
    pub agent: String,
    pub config_hash: String,
    pub model: String,
    /// `None` means now.
    pub started_at: Option<DateTime<Utc>>,
    /// The session this one resumes, if any.
    pub parent_id: Option<SessionId>,
    /// Free-form JSON; `null` is stored as `{}`.
    pub metadata: serde_json::Value,
}

/// Cumulative cost of a session: kept up to date by `append_event`, and
/// overwritten with the loop's own figures by `finish_session`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Totals {
    pub usage: Usage,
    pub cost_usd: f64,
    /// Model responses received.
    pub iterations: u32,
    /// Tool results received.
    pub tool_calls: u32,
    pub elapsed_ms: u64,
}

/// One session as stored (serializable for `--json` export).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionRow {
    pub id: SessionId,
    pub project: String,
    pub workspace: String,
    pub work_dir: String,
    pub task: String,
    pub agent: String,
    pub config_hash: String,
    pub model: String,
    pub started_at: DateTime<Utc>,
    pub ended_at: Option<DateTime<Utc>>,
    pub status: SessionStatus,
    pub outcome: Option<String>,
    #[serde(flatten)]
    pub totals: Totals,
    pub parent_id: Option<SessionId>,
    pub metadata: serde_json::Value,
}

/// Which sessions `list_sessions` returns; empty fields do not filter.
#[derive(Debug, Clone, Default)]
pub struct SessionFilter {
    pub project: Option<String>,
    pub status: Option<SessionStatus>,
    pub limit: Option<usize>,
}

const COLUMNS: &str = "id, project, workspace, work_dir, task, agent, config_hash, model, \
     started_at, ended_at, status, outcome, prompt_tokens, completion_tokens, cached_tokens, \
     cost_usd, iterations, tool_calls, elapsed_ms, parent_id, metadata";

/// Most ids an ambiguity error lists.
const AMBIGUOUS_SHOWN: usize = 10;

impl Store {
    /// Inserts a `running` session; its text fields are redacted first.
    pub fn create_session(&self, new: &NewSession) -> Result<SessionId, StoreError> {
        let red = |text: &str| self.redactor.redact(text);
        let mut metadata = if new.metadata.is_null() {
            serde_json::json!({})
        } else {
            new.metadata.clone()
        };
        self.redactor.redact_json(&mut metadata);
        let metadata = serde_json::to_string(&metadata).map_err(|source| StoreError::Encode {
            db: self.db.clone(),
            what: format!("metadata of session {}", new.id),
            source,
        })?;
        let started_at = fmt_ts(new.started_at.unwrap_or_else(Utc::now));
        let result = self.conn.execute(
            "INSERT INTO sessions (id, project, workspace, work_dir, task, agent, config_hash, \
             model, started_at, status, parent_id, metadata) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)",
            params![
                new.id.as_str(),
                red(&new.project),
                red(&new.workspace),
                red(&new.work_dir),
                red(&new.task),
                red(&new.agent),
                red(&new.config_hash),
                red(&new.model),
                started_at,
                SessionStatus::Running.as_str(),
                new.parent_id.as_ref().map(SessionId::as_str),
                metadata,
            ],
        );
        match result {
            Ok(_) => {
                tracing::debug!(db = %self.db, session = %new.id, "created session");
                Ok(new.id.clone())
            }
            Err(err) => Err(self.insert_error(new, err)),
        }
    }

    fn insert_error(&self, new: &NewSession, err: rusqlite::Error) -> StoreError {
        use rusqlite::ffi::{SQLITE_CONSTRAINT_FOREIGNKEY, SQLITE_CONSTRAINT_PRIMARYKEY};
        let code = match &err {
            rusqlite::Error::SqliteFailure(e, _) => e.extended_code,
            _ => 0,
        };
        match (code, &new.parent_id) {
            (SQLITE_CONSTRAINT_PRIMARYKEY, _) => StoreError::SessionExists {
                db: self.db.clone(),
                id: new.id.clone(),
            },
            (SQLITE_CONSTRAINT_FOREIGNKEY, Some(parent)) => self.not_found(parent),
            _ => self.sqlite(format!("creating session {}", new.id), err),
        }
    }

    /// The session with exactly this id.
    pub fn get_session(&self, id: &SessionId) -> Result<Option<SessionRow>, StoreError> {
        self.conn
            .prepare_cached(&format!("SELECT {COLUMNS} FROM sessions WHERE id = ?1"))
            .and_then(|mut stmt| stmt.query_row([id.as_str()], read_session).optional())
            .map_err(|source| self.sqlite(format!("reading session {id}"), source))
    }

    /// Resolves a (case-insensitive) id prefix as typed by a user: an exact
    /// id wins, a unique prefix resolves, several matches are an error.
    /// An empty prefix matches nothing.
    pub fn find_session(&self, prefix: &str) -> Result<Option<SessionRow>, StoreError> {
        if prefix.is_empty() {
            return Ok(None);
        }
        if let Some(row) = self.get_session(&SessionId(prefix.to_string()))? {
            return Ok(Some(row));
        }
        let pattern = format!("{}%", escape_like(prefix));
        let mut rows = self
            .conn
            .prepare_cached(&format!(
                "SELECT {COLUMNS} FROM sessions WHERE id LIKE ?1 ESCAPE '\\' ORDER BY id LIMIT ?2"
            ))
            .and_then(|mut stmt| {
                stmt.query_map(
                    params![pattern, to_i64(AMBIGUOUS_SHOWN as u64 + 1)],
                    read_session,
                )?
                .collect::<rusqlite::Result<Vec<_>>>()
            })
            .map_err(|source| {
                self.sqlite(format!("finding session by prefix `{prefix}`"), source)
            })?;
        if rows.len() > 1 {
            return Err(StoreError::AmbiguousPrefix {
                db: self.db.clone(),
                prefix: prefix.to_string(),
                matches: rows
                    .iter()
                    .take(AMBIGUOUS_SHOWN)
                    .map(|r| r.id.0.clone())
                    .collect(),
            });
        }
        Ok(rows.pop())
    }

    /// Sessions matching `filter`, newest first.
    pub fn list_sessions(&self, filter: &SessionFilter) -> Result<Vec<SessionRow>, StoreError> {
        let mut sql = format!("SELECT {COLUMNS} FROM sessions WHERE 1 = 1");
        let mut args: Vec<&dyn ToSql> = Vec::new();
        if let Some(project) = &filter.project {
            args.push(project);
            sql.push_str(&format!(" AND project = ?{}", args.len()));
        }
        let status = filter.status.map(SessionStatus::as_str);
        if let Some(status) = &status {
            args.push(status);
            sql.push_str(&format!(" AND status = ?{}", args.len()));
        }
        // SQLite treats a negative LIMIT as "no limit".
        let limit = filter.limit.map_or(-1, |n| to_i64(n as u64));
        args.push(&limit);
        sql.push_str(&format!(
            " ORDER BY started_at DESC, id DESC LIMIT ?{}",
            args.len()
        ));
        self.conn
            .prepare_cached(&sql)
            .and_then(|mut stmt| {
                stmt.query_map(args.as_slice(), read_session)?
                    .collect::<rusqlite::Result<Vec<_>>>()
            })
            .map_err(|source| self.sqlite("listing sessions", source))
    }

    /// Records how a session ended: status, outcome (redacted), end time and
    /// the loop's final totals, which replace the running ones.
    pub fn finish_session(
        &self,
        id: &SessionId,
        status: SessionStatus,
        outcome: Option<&str>,
        totals: &Totals,
    ) -> Result<(), StoreError> {
        let outcome = outcome.map(|text| self.redactor.redact(text));
        let changed = self
            .conn
            .execute(
                "UPDATE sessions SET status = ?2, outcome = ?3, ended_at = ?4, \
                 prompt_tokens = ?5, completion_tokens = ?6, cached_tokens = ?7, cost_usd = ?8, \
                 iterations = ?9, tool_calls = ?10, elapsed_ms = ?11 WHERE id = ?1",
                params![
                    id.as_str(),
                    status.as_str(),
                    outcome,
                    fmt_ts(Utc::now()),
                    to_i64(totals.usage.prompt_tokens),
                    to_i64(totals.usage.completion_tokens),
                    to_i64(totals.usage.cached_tokens),
                    totals.cost_usd,
                    totals.iterations,
                    totals.tool_calls,
                    to_i64(totals.elapsed_ms),
                ],
            )
            .map_err(|source| self.sqlite(format!("finishing session {id}"), source))?;
        if changed == 0 {
            return Err(self.not_found(id));
        }
        tracing::debug!(db = %self.db, session = %id, %status, "finished session");
        Ok(())
    }

    /// Changes only the status (e.g. `rejected` after review, `running`
    /// again on resume); end time and totals are left as they are.
    pub fn set_session_status(
        &self,
        id: &SessionId,
        status: SessionStatus,
    ) -> Result<(), StoreError> {
        let changed = self
            .conn
            .execute(
                "UPDATE sessions SET status = ?2 WHERE id = ?1",
                params![id.as_str(), status.as_str()],
            )
            .map_err(|source| self.sqlite(format!("setting status of session {id}"), source))?;
        if changed == 0 {
            return Err(self.not_found(id));
        }
        Ok(())
    }

    /// Marks one `running` session `interrupted`, ending it at its last
    /// event. The caller must know its process is gone. Returns whether the
    /// session was running.
    pub fn mark_interrupted(&self, id: &SessionId) -> Result<bool, StoreError> {
        let action = || format!("marking session {id} interrupted");
        let tx = Transaction::new_unchecked(&self.conn, TransactionBehavior::Immediate)
            .map_err(|source| self.sqlite(action(), source))?;
        let status: Option<String> = tx
            .query_row(
                "SELECT status FROM sessions WHERE id = ?1",
                [id.as_str()],
                |row| row.get(0),
            )
            .optional()
            .map_err(|source| self.sqlite(action(), source))?;
        match status {
            None => return Err(self.not_found(id)),
            Some(status) if status != SessionStatus::Running.as_str() => {
                return Ok(false);
            }
            Some(_) => {}
        }
        self.interrupt_in(&tx, id)?;
        tx.commit()
            .map_err(|source| self.sqlite(action(), source))?;
        Ok(true)
    }

    /// Marks every `running` session `interrupted` (after a crash, when the
    /// caller knows no other process is using the store). Returns their ids.
    pub fn mark_interrupted_sessions(&self) -> Result<Vec<SessionId>, StoreError> {
        let action = "marking running sessions interrupted";
        let tx = Transaction::new_unchecked(&self.conn, TransactionBehavior::Immediate)
            .map_err(|source| self.sqlite(action, source))?;
        let ids = tx
            .prepare("SELECT id FROM sessions WHERE status = ?1 ORDER BY id")
            .and_then(|mut stmt| {
                stmt.query_map([SessionStatus::Running.as_str()], |row| {
                    row.get(0).map(SessionId)
                })?
                .collect::<rusqlite::Result<Vec<_>>>()
            })
            .map_err(|source| self.sqlite(action, source))?;
        for id in &ids {
            self.interrupt_in(&tx, id)?;
        }
        tx.commit().map_err(|source| self.sqlite(action, source))?;
        if !ids.is_empty() {
            tracing::info!(db = %self.db, count = ids.len(), "marked sessions interrupted");
        }
        Ok(ids)
    }

    /// Sets `interrupted`, `ended_at` = the last event (or the start) and
    /// the elapsed time up to it.
    fn interrupt_in(&self, tx: &Transaction<'_>, id: &SessionId) -> Result<(), StoreError> {
        let action = || format!("marking session {id} interrupted");
        let (started, last): (String, Option<String>) = tx
            .query_row(
                "SELECT started_at, (SELECT at FROM events WHERE session_id = ?1 \
                 ORDER BY seq DESC LIMIT 1) FROM sessions WHERE id = ?1",
                [id.as_str()],
                |row| Ok((row.get(0)?, row.get(1)?)),
            )
            .map_err(|source| self.sqlite(action(), source))?;
        let ended = last.unwrap_or_else(|| started.clone());
        let elapsed_ms = match (parse_ts(&started), parse_ts(&ended)) {
            (Ok(start), Ok(end)) => (end - start).num_milliseconds().max(0),
            _ => 0,
        };
        tx.execute(
            "UPDATE sessions SET status = ?2, ended_at = ?3, elapsed_ms = ?4 WHERE id = ?1",
            params![
                id.as_str(),
                SessionStatus::Interrupted.as_str(),
                ended,
                elapsed_ms
            ],
        )
        .map_err(|source| self.sqlite(action(), source))?;
        Ok(())
    }
}

/// Escapes LIKE wildcards so a prefix matches literally (escape char `\`).
pub(crate) fn escape_like(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if matches!(c, '%' | '_' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// The session columns `read_session_row` expects, in order.
pub(crate) fn session_columns() -> &'static str {
    COLUMNS
}

/// Maps a row selected with [`COLUMNS`] (for queries in other modules).
pub(crate) fn read_session_row(row: &Row<'_>) -> rusqlite::Result<SessionRow> {
    read_session(row)
}

/// Maps a row selected with [`COLUMNS`].
fn read_session(row: &Row<'_>) -> rusqlite::Result<SessionRow> {
    let ended_at: Option<String> = row.get(9)?;
    let metadata: String = row.get(20)?;
    Ok(SessionRow {
        id: SessionId(row.get(0)?),
        project: row.get(1)?,
        workspace: row.get(2)?,
        work_dir: row.get(3)?,
        task: row.get(4)?,
        agent: row.get(5)?,
        config_hash: row.get(6)?,
        model: row.get(7)?,
        started_at: timestamp(8, &row.get::<_, String>(8)?)?,
        ended_at: ended_at.map(|text| timestamp(9, &text)).transpose()?,
        status: word(row, 10)?,
        outcome: row.get(11)?,
        totals: Totals {
            usage: Usage {
                prompt_tokens: to_u64(row.get(12)?),
                completion_tokens: to_u64(row.get(13)?),
                cached_tokens: to_u64(row.get(14)?),
            },
            cost_usd: row.get(15)?,
            iterations: to_u32(row.get(16)?),
            tool_calls: to_u32(row.get(17)?),
            elapsed_ms: to_u64(row.get(18)?),
        },
        parent_id: row.get::<_, Option<String>>(19)?.map(SessionId),
        metadata: serde_json::from_str(&metadata).map_err(|err| {
            rusqlite::Error::FromSqlConversionFailure(20, Type::Text, Box::new(err))
        })?,
    })
}

fn timestamp(column: usize, text: &str) -> rusqlite::Result<DateTime<Utc>> {
    parse_ts(text)
        .map_err(|err| rusqlite::Error::FromSqlConversionFailure(column, Type::Text, Box::new(err)))
}
