//! Read-only queries for browsing many sessions (the `quire view` list):
//! more filters than [`crate::SessionFilter`], an offset, and a total so a
//! list of thousands can be paged.

use chrono::{DateTime, Utc};
use rusqlite::{OptionalExtension, ToSql};

use crate::convert::{fmt_ts, to_i64};
use quire_types::SessionId;

use crate::sessions::{escape_like, read_session_row, session_columns};
use crate::{SessionRow, SessionStatus, Store, StoreError};

/// Which sessions a page shows; empty fields do not filter.
#[derive(Debug, Clone, Default)]
pub struct SessionQuery {
    pub project: Option<String>,
    pub status: Option<SessionStatus>,
    pub agent: Option<String>,
    /// Started at or after this instant.
    pub since: Option<DateTime<Utc>>,
    /// Started before this instant.
    pub until: Option<DateTime<Utc>>,
    /// Rows skipped (newest first) before the page starts.
    pub offset: usize,
    /// Rows on the page.
    pub limit: usize,
}

/// One page of sessions and how many match in all.
#[derive(Debug, Clone, PartialEq)]
pub struct SessionPage {
    pub rows: Vec<SessionRow>,
    pub total: u64,
}

/// The distinct values the list can be filtered by.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SessionFacets {
    pub projects: Vec<String>,
    pub agents: Vec<String>,
    pub statuses: Vec<String>,
}

impl Store {
    /// Sessions matching `query`, newest first, with the total match count.
    pub fn session_page(&self, query: &SessionQuery) -> Result<SessionPage, StoreError> {
        let since = query.since.map(fmt_ts);
        let until = query.until.map(fmt_ts);
        let status = query.status.map(SessionStatus::as_str);
        let mut clauses = String::from(" WHERE 1 = 1");
        let mut args: Vec<&dyn ToSql> = Vec::new();
        let filters: [(&str, Option<&dyn ToSql>); 5] = [
            ("project =", query.project.as_ref().map(|v| v as &dyn ToSql)),
            ("status =", status.as_ref().map(|v| v as &dyn ToSql)),
            ("agent =", query.agent.as_ref().map(|v| v as &dyn ToSql)),
            ("started_at >=", since.as_ref().map(|v| v as &dyn ToSql)),
            ("started_at <", until.as_ref().map(|v| v as &dyn ToSql)),
        ];
        for (clause, value) in filters {
            if let Some(value) = value {
                args.push(value);
                clauses.push_str(&format!(" AND {clause} ?{}", args.len()));
            }
        }
        let total: i64 = self
            .conn
            .prepare_cached(&format!("SELECT COUNT(*) FROM sessions{clauses}"))
            .and_then(|mut stmt| stmt.query_row(args.as_slice(), |row| row.get(0)))
            .map_err(|source| self.sqlite("counting sessions", source))?;
        let limit = to_i64(query.limit as u64);
        let offset = to_i64(query.offset as u64);
        let mut page_args = args.clone();
        page_args.push(&limit);
        page_args.push(&offset);
        let sql = format!(
            "SELECT {} FROM sessions{clauses} ORDER BY started_at DESC, id DESC LIMIT ?{} OFFSET ?{}",
            session_columns(),
            args.len() + 1,
            args.len() + 2
        );
        let rows = self
            .conn
            .prepare_cached(&sql)
            .and_then(|mut stmt| {
                stmt.query_map(page_args.as_slice(), read_session_row)?
                    .collect::<rusqlite::Result<Vec<_>>>()
            })
            .map_err(|source| self.sqlite("listing a page of sessions", source))?;
        Ok(SessionPage {
            rows,
            total: u64::try_from(total).unwrap_or(0),
        })
    }

    /// Sessions (oldest first) with a `notes_retrieved` event naming the
    /// note `note_id`: the sessions that were shown or read the note.
    pub fn sessions_retrieving_note(&self, note_id: &str) -> Result<Vec<SessionId>, StoreError> {
        let pattern = format!("%\"{}\"%", escape_like(note_id));
        self.conn
            .prepare_cached(
                "SELECT session_id FROM events WHERE kind = 'notes_retrieved' \
                 AND payload LIKE ?1 ESCAPE '\\' GROUP BY session_id ORDER BY MIN(id)",
            )
            .and_then(|mut stmt| {
                stmt.query_map([pattern], |row| row.get(0).map(SessionId))?
                    .collect::<rusqlite::Result<Vec<_>>>()
            })
            .map_err(|source| {
                self.sqlite(format!("finding sessions that read note {note_id}"), source)
            })
    }

    /// The eval run and task a session was an attempt of: (run id, task id).
    pub fn session_eval_run(&self, id: &SessionId) -> Result<Option<(String, String)>, StoreError> {
        self.conn
            .prepare_cached(
                "SELECT run_id, task_id FROM eval_results WHERE session_id = ?1 LIMIT 1",
            )
            .and_then(|mut stmt| {
                stmt.query_row([id.as_str()], |row| Ok((row.get(0)?, row.get(1)?)))
                    .optional()
            })
            .map_err(|source| self.sqlite(format!("finding the eval run of session {id}"), source))
    }

    /// Distinct projects, agents and statuses of all sessions, sorted.
    pub fn session_facets(&self) -> Result<SessionFacets, StoreError> {
        let distinct = |column: &str| -> Result<Vec<String>, StoreError> {
            self.conn
                .prepare_cached(&format!(
                    "SELECT DISTINCT {column} FROM sessions ORDER BY {column}"
                ))
                .and_then(|mut stmt| {
                    stmt.query_map([], |row| row.get(0))?
                        .collect::<rusqlite::Result<Vec<String>>>()
                })
                .map_err(|source| self.sqlite(format!("listing session {column}s"), source))
        };
        Ok(SessionFacets {
            projects: distinct("project")?,
            agents: distinct("agent")?,
            statuses: distinct("status")?,
        })
    }
}
