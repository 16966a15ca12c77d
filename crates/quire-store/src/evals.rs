//! Eval runs (`quire eval`) and their per-attempt results.
//!
//! A run is created with one `pending` row per (task, attempt) it plans, so a
//! killed process leaves behind exactly what is still to do. Each row moves
//! `pending → running → done`, one committed statement per step; resuming a
//! run reruns every row that is not `done`.

use chrono::{DateTime, Utc};
use quire_types::{SessionId, Usage};
use rusqlite::types::Type;
use rusqlite::{OptionalExtension, Row, ToSql, Transaction, TransactionBehavior, params};
use serde::{Deserialize, Serialize};

use crate::convert::{fmt_ts, parse_ts, to_i64, to_u32, to_u64, word};
use crate::sessions::{SessionRow, read_session_row, session_columns};
use crate::{Store, StoreError};

quire_types::text_enum! {
    /// Where a run stands.
    pub enum EvalRunStatus ("eval run status") {
        Running = "running",
        Completed = "completed",
        /// Stopped by the user (or found `running` with its process gone).
        Interrupted = "interrupted",
    }
}

quire_types::text_enum! {
    /// Where one attempt stands.
    pub enum EvalResultStatus ("eval result status") {
        Pending = "pending",
        /// Started; a row left `running` by a killed process is rerun on resume.
        Running = "running",
        Done = "done",
    }
}

/// What is known when a run starts.
#[derive(Debug, Clone, Default)]
pub struct NewEvalRun {
    /// Chosen by the caller (the run folder is named after it).
    pub id: String,
    pub suite: String,
    pub suite_path: String,
    pub split: String,
    pub agent: String,
    pub config_hash: String,
    pub model: String,
    pub repeat: u32,
    pub jobs: u32,
    pub timeout_secs: u64,
    /// How the run was asked for (task filter, agent spec, …), for resume.
    pub args: serde_json::Value,
}

/// One run as stored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EvalRunRow {
    pub id: String,
    pub suite: String,
    pub suite_path: String,
    pub split: String,
    pub agent: String,
    pub config_hash: String,
    pub model: String,
    pub started_at: DateTime<Utc>,
    pub ended_at: Option<DateTime<Utc>>,
    pub status: EvalRunStatus,
    pub repeat: u32,
    pub jobs: u32,
    pub timeout_secs: u64,
    pub args: serde_json::Value,
}

/// A run with its headline figures, for `quire eval list`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EvalRunSummary {
    #[serde(flatten)]
    pub run: EvalRunRow,
    /// Planned attempts (tasks × repeat).
    pub attempts: u32,
    pub done: u32,
    pub resolved: u32,
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    pub cost_usd: f64,
}

/// How an attempt ended, as recorded by `finish_eval_result`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct EvalOutcome {
    /// Linked only when the session exists in this store.
    pub session_id: Option<SessionId>,
    pub resolved: bool,
    /// `resolved`, or the failure category (`no_change`, `timeout`, …).
    pub category: String,
    pub visible_passed: Option<u32>,
    pub visible_failed: Option<u32>,
    pub hidden_passed: Option<u32>,
    pub hidden_failed: Option<u32>,
    pub usage: Usage,
    pub cost_usd: f64,
    /// Model calls answered.
    pub turns: u32,
    pub tool_calls: u32,
    pub wall_ms: u64,
    pub error: Option<String>,
    /// Free-form JSON (failing test names, log paths, end reason).
    pub details: serde_json::Value,
}

/// One attempt as stored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EvalResultRow {
    pub run_id: String,
    pub task_id: String,
    /// 1-based repeat number.
    pub attempt: u32,
    pub status: EvalResultStatus,
    pub started_at: Option<DateTime<Utc>>,
    pub ended_at: Option<DateTime<Utc>>,
    #[serde(flatten)]
    pub outcome: EvalOutcome,
}

const RUN_COLUMNS: &str = "id, suite, suite_path, split, agent, config_hash, model, started_at, \
     ended_at, status, repeat, jobs, timeout_secs, args";

const RESULT_COLUMNS: &str = "run_id, task_id, attempt, session_id, status, resolved, category, \
     visible_passed, visible_failed, hidden_passed, hidden_failed, prompt_tokens, \
     completion_tokens, cached_tokens, cost_usd, turns, tool_calls, wall_ms, started_at, \
     ended_at, error, details";

/// Most ids an ambiguity error lists.
const AMBIGUOUS_SHOWN: usize = 10;

impl Store {
    /// Inserts a `running` run and one `pending` result per planned
    /// `(task, attempt)`, all in one transaction.
    pub fn create_eval_run(
        &self,
        new: &NewEvalRun,
        attempts: &[(String, u32)],
    ) -> Result<(), StoreError> {
        let action = || format!("creating eval run {}", new.id);
        let red = |text: &str| self.redactor.redact(text);
        let mut args = if new.args.is_null() {
            serde_json::json!({})
        } else {
            new.args.clone()
        };
        self.redactor.redact_json(&mut args);
        let args = serde_json::to_string(&args).map_err(|source| StoreError::Encode {
            db: self.db.clone(),
            what: format!("arguments of eval run {}", new.id),
            source,
        })?;
        let tx = Transaction::new_unchecked(&self.conn, TransactionBehavior::Immediate)
            .map_err(|source| self.sqlite(action(), source))?;
        let inserted = tx.execute(
            "INSERT INTO eval_runs (id, suite, suite_path, split, agent, config_hash, model, \
             started_at, status, repeat, jobs, timeout_secs, args) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)",
            params![
                new.id,
                red(&new.suite),
                red(&new.suite_path),
                new.split,
                red(&new.agent),
                new.config_hash,
                red(&new.model),
                fmt_ts(Utc::now()),
                EvalRunStatus::Running.as_str(),
                new.repeat,
                new.jobs,
                to_i64(new.timeout_secs),
                args,
            ],
        );
        if let Err(err) = inserted {
            let exists = matches!(&err, rusqlite::Error::SqliteFailure(e, _)
                if e.extended_code == rusqlite::ffi::SQLITE_CONSTRAINT_PRIMARYKEY);
            return Err(if exists {
                StoreError::EvalRunExists {
                    db: self.db.clone(),
                    id: new.id.clone(),
                }
            } else {
                self.sqlite(action(), err)
            });
        }
        {
            let mut stmt = tx
                .prepare(
                    "INSERT INTO eval_results (run_id, task_id, attempt, status) \
                     VALUES (?1, ?2, ?3, ?4)",
                )
                .map_err(|source| self.sqlite(action(), source))?;
            for (task, attempt) in attempts {
                stmt.execute(params![
                    new.id,
                    task,
                    attempt,
                    EvalResultStatus::Pending.as_str()
                ])
                .map_err(|source| self.sqlite(action(), source))?;
            }
        }
        tx.commit()
            .map_err(|source| self.sqlite(action(), source))?;
        tracing::debug!(db = %self.db, run = %new.id, attempts = attempts.len(), "created eval run");
        Ok(())
    }

    /// The run with exactly this id.
    pub fn get_eval_run(&self, id: &str) -> Result<Option<EvalRunRow>, StoreError> {
        self.conn
            .prepare_cached(&format!(
                "SELECT {RUN_COLUMNS} FROM eval_runs WHERE id = ?1"
            ))
            .and_then(|mut stmt| stmt.query_row([id], read_run).optional())
            .map_err(|source| self.sqlite(format!("reading eval run {id}"), source))
    }

    /// Resolves a (case-insensitive) run id prefix: an exact id wins, a
    /// unique prefix resolves, several matches are an error.
    pub fn find_eval_run(&self, prefix: &str) -> Result<Option<EvalRunRow>, StoreError> {
        if prefix.is_empty() {
            return Ok(None);
        }
        if let Some(row) = self.get_eval_run(prefix)? {
            return Ok(Some(row));
        }
        let pattern = format!("{}%", crate::sessions::escape_like(prefix));
        let mut rows = self
            .conn
            .prepare_cached(&format!(
                "SELECT {RUN_COLUMNS} FROM eval_runs WHERE id LIKE ?1 ESCAPE '\\' \
                 ORDER BY id LIMIT ?2"
            ))
            .and_then(|mut stmt| {
                stmt.query_map(
                    params![pattern, to_i64(AMBIGUOUS_SHOWN as u64 + 1)],
                    read_run,
                )?
                .collect::<rusqlite::Result<Vec<_>>>()
            })
            .map_err(|source| self.sqlite(format!("finding eval run `{prefix}`"), source))?;
        if rows.len() > 1 {
            return Err(StoreError::AmbiguousPrefix {
                db: self.db.clone(),
                prefix: prefix.to_string(),
                matches: rows
                    .iter()
                    .take(AMBIGUOUS_SHOWN)
                    .map(|r| r.id.clone())
                    .collect(),
            });
        }
        Ok(rows.pop())
    }

    /// Runs newest first with their headline figures; `suite` filters by
    /// suite name, `limit` caps the count.
    pub fn list_eval_runs(
        &self,
        suite: Option<&str>,
        limit: Option<usize>,
    ) -> Result<Vec<EvalRunSummary>, StoreError> {
        let columns = RUN_COLUMNS
            .split(", ")
            .map(|c| format!("r.{c}"))
            .collect::<Vec<_>>()
            .join(", ");
        let mut sql = format!(
            "SELECT {columns}, COUNT(e.task_id), \
             COALESCE(SUM(e.status = 'done'), 0), COALESCE(SUM(e.resolved), 0), \
             COALESCE(SUM(e.prompt_tokens), 0), COALESCE(SUM(e.completion_tokens), 0), \
             COALESCE(SUM(e.cost_usd), 0) \
             FROM eval_runs r LEFT JOIN eval_results e ON e.run_id = r.id WHERE 1 = 1"
        );
        let mut args: Vec<&dyn ToSql> = Vec::new();
        if let Some(suite) = &suite {
            args.push(suite);
            sql.push_str(&format!(" AND r.suite = ?{}", args.len()));
        }
        // SQLite treats a negative LIMIT as "no limit".
        let limit = limit.map_or(-1, |n| to_i64(n as u64));
        args.push(&limit);
        sql.push_str(&format!(
            " GROUP BY r.id ORDER BY r.started_at DESC, r.id DESC LIMIT ?{}",
            args.len()
        ));
        self.conn
            .prepare_cached(&sql)
            .and_then(|mut stmt| {
                stmt.query_map(args.as_slice(), |row| {
                    Ok(EvalRunSummary {
                        run: read_run(row)?,
                        attempts: to_u32(row.get(14)?),
                        done: to_u32(row.get(15)?),
                        resolved: to_u32(row.get(16)?),
                        prompt_tokens: to_u64(row.get(17)?),
                        completion_tokens: to_u64(row.get(18)?),
                        cost_usd: row.get(19)?,
                    })
                })?
                .collect::<rusqlite::Result<Vec<_>>>()
            })
            .map_err(|source| self.sqlite("listing eval runs", source))
    }

    /// Sets a run's status; `completed` and `interrupted` stamp the end
    /// time, `running` (a resume) clears it.
    pub fn set_eval_run_status(&self, id: &str, status: EvalRunStatus) -> Result<(), StoreError> {
        let ended = match status {
            EvalRunStatus::Running => None,
            _ => Some(fmt_ts(Utc::now())),
        };
        let changed = self
            .conn
            .execute(
                "UPDATE eval_runs SET status = ?2, ended_at = ?3 WHERE id = ?1",
                params![id, status.as_str(), ended],
            )
            .map_err(|source| self.sqlite(format!("setting status of eval run {id}"), source))?;
        if changed == 0 {
            return Err(self.run_not_found(id));
        }
        Ok(())
    }

    /// Replaces a run's `jobs` (a resume may use another degree of parallelism).
    pub fn set_eval_run_jobs(&self, id: &str, jobs: u32) -> Result<(), StoreError> {
        self.conn
            .execute(
                "UPDATE eval_runs SET jobs = ?2 WHERE id = ?1",
                params![id, jobs],
            )
            .map_err(|source| self.sqlite(format!("setting jobs of eval run {id}"), source))?;
        Ok(())
    }

    /// A run's results in planned order.
    pub fn eval_results(&self, run_id: &str) -> Result<Vec<EvalResultRow>, StoreError> {
        self.conn
            .prepare_cached(&format!(
                "SELECT {RESULT_COLUMNS} FROM eval_results WHERE run_id = ?1 ORDER BY rowid"
            ))
            .and_then(|mut stmt| {
                stmt.query_map([run_id], read_result)?
                    .collect::<rusqlite::Result<Vec<_>>>()
            })
            .map_err(|source| self.sqlite(format!("reading results of eval run {run_id}"), source))
    }

    /// Marks an attempt `running` (clearing anything an earlier try left).
    pub fn start_eval_result(
        &self,
        run_id: &str,
        task_id: &str,
        attempt: u32,
    ) -> Result<(), StoreError> {
        let changed = self
            .conn
            .execute(
                "UPDATE eval_results SET status = 'running', started_at = ?4, ended_at = NULL, \
                 session_id = NULL, resolved = 0, category = NULL, error = NULL \
                 WHERE run_id = ?1 AND task_id = ?2 AND attempt = ?3",
                params![run_id, task_id, attempt, fmt_ts(Utc::now())],
            )
            .map_err(|source| {
                self.sqlite(format!("starting {task_id}#{attempt} of {run_id}"), source)
            })?;
        self.require_result(changed, run_id, task_id, attempt)
    }

    /// Puts an attempt back to `pending` (the user stopped it: not a result).
    pub fn reset_eval_result(
        &self,
        run_id: &str,
        task_id: &str,
        attempt: u32,
    ) -> Result<(), StoreError> {
        let changed = self
            .conn
            .execute(
                "UPDATE eval_results SET status = 'pending', ended_at = NULL \
                 WHERE run_id = ?1 AND task_id = ?2 AND attempt = ?3",
                params![run_id, task_id, attempt],
            )
            .map_err(|source| {
                self.sqlite(format!("resetting {task_id}#{attempt} of {run_id}"), source)
            })?;
        self.require_result(changed, run_id, task_id, attempt)
    }

    /// Records how an attempt ended and marks it `done`, in one statement.
    /// The session is linked only when it exists in this store; texts are
    /// redacted.
    pub fn finish_eval_result(
        &self,
        run_id: &str,
        task_id: &str,
        attempt: u32,
        outcome: &EvalOutcome,
    ) -> Result<(), StoreError> {
        let mut details = if outcome.details.is_null() {
            serde_json::json!({})
        } else {
            outcome.details.clone()
        };
        self.redactor.redact_json(&mut details);
        let details = serde_json::to_string(&details).map_err(|source| StoreError::Encode {
            db: self.db.clone(),
            what: format!("details of {task_id}#{attempt} in eval run {run_id}"),
            source,
        })?;
        let error = outcome.error.as_deref().map(|e| self.redactor.redact(e));
        let opt = |v: Option<u32>| v.map(i64::from);
        let changed = self
            .conn
            .execute(
                "UPDATE eval_results SET status = 'done', \
                 session_id = (SELECT id FROM sessions WHERE id = ?4), \
                 resolved = ?5, category = ?6, visible_passed = ?7, visible_failed = ?8, \
                 hidden_passed = ?9, hidden_failed = ?10, prompt_tokens = ?11, \
                 completion_tokens = ?12, cached_tokens = ?13, cost_usd = ?14, turns = ?15, \
                 tool_calls = ?16, wall_ms = ?17, ended_at = ?18, error = ?19, details = ?20 \
                 WHERE run_id = ?1 AND task_id = ?2 AND attempt = ?3",
                params![
                    run_id,
                    task_id,
                    attempt,
                    outcome.session_id.as_ref().map(SessionId::as_str),
                    outcome.resolved,
                    outcome.category,
                    opt(outcome.visible_passed),
                    opt(outcome.visible_failed),
                    opt(outcome.hidden_passed),
                    opt(outcome.hidden_failed),
                    to_i64(outcome.usage.prompt_tokens),
                    to_i64(outcome.usage.completion_tokens),
                    to_i64(outcome.usage.cached_tokens),
                    outcome.cost_usd,
                    outcome.turns,
                    outcome.tool_calls,
                    to_i64(outcome.wall_ms),
                    fmt_ts(Utc::now()),
                    error,
                    details,
                ],
            )
            .map_err(|source| {
                self.sqlite(format!("recording {task_id}#{attempt} of {run_id}"), source)
            })?;
        self.require_result(changed, run_id, task_id, attempt)
    }

    /// Sessions started on this workspace path, newest first (an eval
    /// attempt's folder is unique, so this finds its session even when the
    /// attempt never got a report back).
    pub fn sessions_in_workspace(&self, workspace: &str) -> Result<Vec<SessionRow>, StoreError> {
        let workspace = self.redactor.redact(workspace);
        self.conn
            .prepare_cached(&format!(
                "SELECT {} FROM sessions WHERE workspace = ?1 ORDER BY started_at DESC, id DESC",
                session_columns()
            ))
            .and_then(|mut stmt| {
                stmt.query_map([workspace.as_str()], read_session_row)?
                    .collect::<rusqlite::Result<Vec<_>>>()
            })
            .map_err(|source| self.sqlite(format!("finding sessions in {workspace}"), source))
    }

    fn require_result(
        &self,
        changed: usize,
        run_id: &str,
        task_id: &str,
        attempt: u32,
    ) -> Result<(), StoreError> {
        if changed == 0 {
            return Err(StoreError::EvalResultNotFound {
                db: self.db.clone(),
                run: run_id.to_string(),
                task: task_id.to_string(),
                attempt,
            });
        }
        Ok(())
    }

    fn run_not_found(&self, id: &str) -> StoreError {
        StoreError::EvalRunNotFound {
            db: self.db.clone(),
            id: id.to_string(),
        }
    }
}

fn read_run(row: &Row<'_>) -> rusqlite::Result<EvalRunRow> {
    let ended_at: Option<String> = row.get(8)?;
    let args: String = row.get(13)?;
    Ok(EvalRunRow {
        id: row.get(0)?,
        suite: row.get(1)?,
        suite_path: row.get(2)?,
        split: row.get(3)?,
        agent: row.get(4)?,
        config_hash: row.get(5)?,
        model: row.get(6)?,
        started_at: timestamp(7, &row.get::<_, String>(7)?)?,
        ended_at: ended_at.map(|t| timestamp(8, &t)).transpose()?,
        status: word(row, 9)?,
        repeat: to_u32(row.get(10)?),
        jobs: to_u32(row.get(11)?),
        timeout_secs: to_u64(row.get(12)?),
        args: json(13, &args)?,
    })
}

fn read_result(row: &Row<'_>) -> rusqlite::Result<EvalResultRow> {
    let opt = |i: usize| -> rusqlite::Result<Option<u32>> {
        Ok(row.get::<_, Option<i64>>(i)?.map(to_u32))
    };
    let started: Option<String> = row.get(18)?;
    let ended: Option<String> = row.get(19)?;
    let details: String = row.get(21)?;
    Ok(EvalResultRow {
        run_id: row.get(0)?,
        task_id: row.get(1)?,
        attempt: to_u32(row.get(2)?),
        status: word(row, 4)?,
        started_at: started.map(|t| timestamp(18, &t)).transpose()?,
        ended_at: ended.map(|t| timestamp(19, &t)).transpose()?,
        outcome: EvalOutcome {
            session_id: row.get::<_, Option<String>>(3)?.map(SessionId),
            resolved: row.get(5)?,
            category: row.get::<_, Option<String>>(6)?.unwrap_or_default(),
            visible_passed: opt(7)?,
            visible_failed: opt(8)?,
            hidden_passed: opt(9)?,
            hidden_failed: opt(10)?,
            usage: Usage {
                prompt_tokens: to_u64(row.get(11)?),
                completion_tokens: to_u64(row.get(12)?),
                cached_tokens: to_u64(row.get(13)?),
            },
            cost_usd: row.get(14)?,
            turns: to_u32(row.get(15)?),
            tool_calls: to_u32(row.get(16)?),
            wall_ms: to_u64(row.get(17)?),
            error: row.get(20)?,
            details: json(21, &details)?,
        },
    })
}

fn timestamp(column: usize, text: &str) -> rusqlite::Result<DateTime<Utc>> {
    parse_ts(text)
        .map_err(|err| rusqlite::Error::FromSqlConversionFailure(column, Type::Text, Box::new(err)))
}

fn json(column: usize, text: &str) -> rusqlite::Result<serde_json::Value> {
    serde_json::from_str(text)
        .map_err(|err| rusqlite::Error::FromSqlConversionFailure(column, Type::Text, Box::new(err)))
}
