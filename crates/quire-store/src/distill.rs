//! Distillation jobs: one per finished session, queued when it ends and
//! processed once by a note-taker worker (`quire notes distill`, `watch`,
//! or the background child of `quire run`).
//!
//! A job moves `pending → running → done` (or `failed` after too many
//! attempts). Claiming is one write-locked transaction, so two workers
//! never both get a job. A running worker heartbeats; a job whose heartbeat
//! is older than the lease (its process died) may be claimed again. Every
//! change after the claim names the worker, so a worker that lost its lease
//! cannot overwrite the new owner's result.

use std::time::Duration;

use chrono::{DateTime, Utc};
use quire_types::{SessionId, Usage};
use rusqlite::types::Type;
use rusqlite::{OptionalExtension, Row, Transaction, TransactionBehavior, params};
use serde::{Deserialize, Serialize};

use crate::convert::{fmt_ts, parse_ts, to_u32, to_u64, word};
use crate::{Store, StoreError};

quire_types::text_enum! {
    /// Where a job stands.
    pub enum DistillStatus ("distill job status") {
        Pending = "pending",
        Running = "running",
        Done = "done",
        /// Gave up after `max_attempts`; `error` says why.
        Failed = "failed",
    }
}

/// One job as stored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DistillJob {
    pub session_id: SessionId,
    pub status: DistillStatus,
    /// Claims so far, this one included.
    pub attempts: u32,
    /// Who holds (or last held) the job.
    pub worker: Option<String>,
    pub queued_at: DateTime<Utc>,
    pub claimed_at: Option<DateTime<Utc>>,
    pub heartbeat_at: Option<DateTime<Utc>>,
    pub finished_at: Option<DateTime<Utc>>,
    pub error: Option<String>,
    /// What the note-taker wrote (JSON list), saved after every write.
    pub notes_written: serde_json::Value,
    /// Notes already credited for this session, so a retried job never
    /// counts a note twice.
    pub credited: Vec<String>,
    /// The note-taker's closing line.
    pub summary: Option<String>,
    /// The notes tree this job writes to; `None`: the distilling worker's
    /// own (its config's). Set for eval learn runs, whose jobs only they claim.
    pub notes_root: Option<String>,
    /// What the note-taker spent on this job, over all its attempts.
    pub usage: Usage,
    /// The note-taker's model calls, over all attempts.
    pub calls: u32,
}

const COLUMNS: &str = "session_id, status, attempts, worker, queued_at, claimed_at, \
    heartbeat_at, finished_at, error, notes_written, credited, summary, notes_root, \
    prompt_tokens, completion_tokens, cached_tokens, calls";

impl Store {
    /// Queues distillation of a session that ended. A session already
    /// queued keeps its job; one distilled before (it was resumed and ended
    /// again) is queued again. Returns whether a job is now pending.
    pub fn queue_distill_job(&self, id: &SessionId) -> Result<bool, StoreError> {
        self.queue_distill_job_into(id, None)
    }

    /// [`Store::queue_distill_job`] for a given notes tree (`None`: the
    /// distilling worker's own). A job with a tree is claimed only by
    /// session ([`Store::claim_distill_job`] with `only`), never from the
    /// general queue, so `quire notes distill --pending` cannot write an
    /// eval run's lessons into the user's notes.
    pub fn queue_distill_job_into(
        &self,
        id: &SessionId,
        notes_root: Option<&str>,
    ) -> Result<bool, StoreError> {
        let now = fmt_ts(Utc::now());
        let changed = self
            .conn
            .execute(
                "INSERT INTO distill_jobs (session_id, status, queued_at, notes_root) \
                 VALUES (?1, 'pending', ?2, ?3) \
                 ON CONFLICT(session_id) DO UPDATE SET status = 'pending', attempts = 0, \
                 queued_at = ?2, error = NULL, finished_at = NULL, notes_root = ?3 \
                 WHERE status IN ('done', 'failed')",
                params![id.as_str(), now, notes_root],
            )
            .map_err(|source| {
                self.sqlite(format!("queueing distillation of session {id}"), source)
            })?;
        if changed == 0 {
            return Ok(self
                .distill_job(id)?
                .is_some_and(|j| j.status == DistillStatus::Pending));
        }
        Ok(true)
    }

    /// Takes the oldest claimable job (of `only` that session, if given):
    /// pending, or running with a heartbeat older than `lease`. Jobs that
    /// used up `max_attempts` are marked failed instead. One immediate
    /// transaction, so concurrent workers never get the same job.
    pub fn claim_distill_job(
        &self,
        only: Option<&SessionId>,
        worker: &str,
        lease: Duration,
        max_attempts: u32,
    ) -> Result<Option<DistillJob>, StoreError> {
        let err = |source| self.sqlite("claiming a distillation job", source);
        let now = Utc::now();
        let cutoff = fmt_ts(now - chrono::Duration::from_std(lease).unwrap_or_default());
        let now = fmt_ts(now);
        let tx =
            Transaction::new_unchecked(&self.conn, TransactionBehavior::Immediate).map_err(err)?;
        let claimed = loop {
            let candidate: Option<(String, u32)> = tx
                .query_row(
                    "SELECT session_id, attempts FROM distill_jobs \
                     WHERE (status = 'pending' OR (status = 'running' AND heartbeat_at < ?1)) \
                     AND (?2 IS NULL OR session_id = ?2) \
                     AND (?2 IS NOT NULL OR notes_root IS NULL) \
                     ORDER BY queued_at, session_id LIMIT 1",
                    params![cutoff, only.map(SessionId::as_str)],
                    |row| Ok((row.get(0)?, to_u32(row.get(1)?))),
                )
                .optional()
                .map_err(err)?;
            let Some((session, attempts)) = candidate else {
                break None;
            };
            if attempts >= max_attempts.max(1) {
                let error = format!(
                    "gave up after {attempts} attempt(s): each worker failed or died before finishing"
                );
                tx.execute(
                    "UPDATE distill_jobs SET status = 'failed', finished_at = ?2, \
                     error = COALESCE(error || '; ', '') || ?3 WHERE session_id = ?1",
                    params![session, now, error],
                )
                .map_err(err)?;
                tracing::warn!(session, "{error}");
                continue;
            }
            tx.execute(
                "UPDATE distill_jobs SET status = 'running', attempts = attempts + 1, worker = ?2, \
                 claimed_at = ?3, heartbeat_at = ?3 WHERE session_id = ?1",
                params![session, worker, now],
            )
            .map_err(err)?;
            break Some(session);
        };
        tx.commit().map_err(err)?;
        match claimed {
            Some(session) => self.distill_job(&SessionId(session)),
            None => Ok(None),
        }
    }

    /// Keeps `worker`'s lease on a job alive. `false`: the job is no longer
    /// this worker's (taken over after a missed lease, or finished).
    pub fn heartbeat_distill_job(&self, id: &SessionId, worker: &str) -> Result<bool, StoreError> {
        self.owned_update(
            id,
            worker,
            "heartbeat",
            "UPDATE distill_jobs SET heartbeat_at = ?3 \
             WHERE session_id = ?1 AND worker = ?2 AND status = 'running'",
            &[],
        )
    }

    /// Saves a running job's progress: notes written and notes credited so far.
    pub fn record_distill_progress(
        &self,
        id: &SessionId,
        worker: &str,
        notes_written: &serde_json::Value,
        credited: &[String],
    ) -> Result<bool, StoreError> {
        let notes = self.json(id, notes_written)?;
        let credited = self.json(id, &serde_json::json!(credited))?;
        self.owned_update(
            id,
            worker,
            "progress",
            "UPDATE distill_jobs SET heartbeat_at = ?3, notes_written = ?4, credited = ?5 \
             WHERE session_id = ?1 AND worker = ?2 AND status = 'running'",
            &[&notes, &credited],
        )
    }

    /// Marks a job done with what was written and the closing summary.
    pub fn finish_distill_job(
        &self,
        id: &SessionId,
        worker: &str,
        notes_written: &serde_json::Value,
        summary: &str,
    ) -> Result<bool, StoreError> {
        let notes = self.json(id, notes_written)?;
        let summary = self.redactor.redact(summary);
        self.owned_update(
            id,
            worker,
            "finish",
            "UPDATE distill_jobs SET status = 'done', heartbeat_at = ?3, finished_at = ?3, \
             notes_written = ?4, summary = ?5, error = NULL \
             WHERE session_id = ?1 AND worker = ?2 AND status = 'running'",
            &[&notes, &summary],
        )
    }

    /// Records a failed attempt: back to pending while attempts remain, so
    /// the next worker retries; failed after `max_attempts`.
    pub fn fail_distill_job(
        &self,
        id: &SessionId,
        worker: &str,
        error: &str,
        max_attempts: u32,
    ) -> Result<bool, StoreError> {
        let error = self.redactor.redact(error);
        let max = i64::from(max_attempts.max(1));
        self.owned_update(
            id,
            worker,
            "failure",
            "UPDATE distill_jobs SET status = CASE WHEN attempts >= ?5 THEN 'failed' ELSE 'pending' END, \
             finished_at = CASE WHEN attempts >= ?5 THEN ?3 ELSE NULL END, heartbeat_at = ?3, error = ?4 \
             WHERE session_id = ?1 AND worker = ?2 AND status = 'running'",
            &[&error, &max],
        )
    }

    /// Adds what one attempt of the note-taker spent (recorded whether the
    /// attempt succeeded or not: failed attempts are part of the cost).
    pub fn add_distill_usage(
        &self,
        id: &SessionId,
        usage: &Usage,
        calls: u32,
    ) -> Result<(), StoreError> {
        let to_i64 = |n: u64| i64::try_from(n).unwrap_or(i64::MAX);
        self.conn
            .execute(
                "UPDATE distill_jobs SET prompt_tokens = prompt_tokens + ?2, \
                 completion_tokens = completion_tokens + ?3, cached_tokens = cached_tokens + ?4, \
                 calls = calls + ?5 WHERE session_id = ?1",
                params![
                    id.as_str(),
                    to_i64(usage.prompt_tokens),
                    to_i64(usage.completion_tokens),
                    to_i64(usage.cached_tokens),
                    i64::from(calls)
                ],
            )
            .map_err(|source| {
                self.sqlite(format!("recording distillation cost of {id}"), source)
            })?;
        Ok(())
    }

    /// Gives a job back untouched (the worker was interrupted): pending
    /// again, and the attempt does not count.
    pub fn release_distill_job(&self, id: &SessionId, worker: &str) -> Result<bool, StoreError> {
        self.owned_update(
            id,
            worker,
            "release",
            "UPDATE distill_jobs SET status = 'pending', attempts = MAX(attempts - 1, 0), \
             heartbeat_at = ?3 WHERE session_id = ?1 AND worker = ?2 AND status = 'running'",
            &[],
        )
    }

    /// The job of one session, if it was ever queued.
    pub fn distill_job(&self, id: &SessionId) -> Result<Option<DistillJob>, StoreError> {
        let err = |source| self.sqlite(format!("reading the distillation job of {id}"), source);
        self.conn
            .query_row(
                &format!("SELECT {COLUMNS} FROM distill_jobs WHERE session_id = ?1"),
                [id.as_str()],
                read_job,
            )
            .optional()
            .map_err(err)
    }

    /// Jobs, oldest first, optionally of one status.
    pub fn distill_jobs(
        &self,
        status: Option<DistillStatus>,
        limit: usize,
    ) -> Result<Vec<DistillJob>, StoreError> {
        let err = |source| self.sqlite("listing distillation jobs", source);
        let mut stmt = self
            .conn
            .prepare(&format!(
                "SELECT {COLUMNS} FROM distill_jobs WHERE (?1 IS NULL OR status = ?1) \
                 ORDER BY queued_at, session_id LIMIT ?2"
            ))
            .map_err(err)?;
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let rows = stmt
            .query_map(params![status.map(DistillStatus::as_str), limit], read_job)
            .map_err(err)?;
        rows.collect::<Result<Vec<_>, _>>().map_err(err)
    }

    /// Count of jobs per status.
    pub fn distill_job_counts(&self) -> Result<Vec<(DistillStatus, u64)>, StoreError> {
        let err = |source| self.sqlite("counting distillation jobs", source);
        let mut stmt = self
            .conn
            .prepare("SELECT status, COUNT(*) FROM distill_jobs GROUP BY status ORDER BY status")
            .map_err(err)?;
        let rows = stmt
            .query_map([], |row| {
                let count: i64 = row.get(1)?;
                Ok((word(row, 0)?, u64::try_from(count).unwrap_or(0)))
            })
            .map_err(err)?;
        rows.collect::<Result<Vec<_>, _>>().map_err(err)
    }

    /// One update of a job owned by `worker`: `?1` session, `?2` worker,
    /// `?3` now, then `extra` from `?4`.
    fn owned_update(
        &self,
        id: &SessionId,
        worker: &str,
        what: &str,
        sql: &str,
        extra: &[&dyn rusqlite::ToSql],
    ) -> Result<bool, StoreError> {
        let now = fmt_ts(Utc::now());
        let mut values: Vec<&dyn rusqlite::ToSql> = vec![&id.0, &worker, &now];
        values.extend_from_slice(extra);
        let changed = self
            .conn
            .execute(sql, values.as_slice())
            .map_err(|source| {
                self.sqlite(
                    format!("recording distillation {what} of session {id}"),
                    source,
                )
            })?;
        Ok(changed > 0)
    }

    fn json(&self, id: &SessionId, value: &serde_json::Value) -> Result<String, StoreError> {
        let mut value = value.clone();
        self.redactor.redact_json(&mut value);
        serde_json::to_string(&value).map_err(|source| StoreError::Encode {
            db: self.db.clone(),
            what: format!("the distillation job of {id}"),
            source,
        })
    }
}

fn read_job(row: &Row<'_>) -> rusqlite::Result<DistillJob> {
    let ts = |i: usize| -> rusqlite::Result<Option<DateTime<Utc>>> {
        match row.get::<_, Option<String>>(i)? {
            None => Ok(None),
            Some(text) => parse_ts(&text)
                .map(Some)
                .map_err(|e| rusqlite::Error::FromSqlConversionFailure(i, Type::Text, Box::new(e))),
        }
    };
    let json = |i: usize| -> rusqlite::Result<serde_json::Value> {
        let text: String = row.get(i)?;
        serde_json::from_str(&text)
            .map_err(|e| rusqlite::Error::FromSqlConversionFailure(i, Type::Text, Box::new(e)))
    };
    let credited = match json(10)? {
        serde_json::Value::Array(items) => items
            .into_iter()
            .filter_map(|v| v.as_str().map(str::to_string))
            .collect(),
        _ => Vec::new(),
    };
    Ok(DistillJob {
        session_id: SessionId(row.get(0)?),
        status: word(row, 1)?,
        attempts: to_u32(row.get(2)?),
        worker: row.get(3)?,
        queued_at: ts(4)?.unwrap_or_default(),
        claimed_at: ts(5)?,
        heartbeat_at: ts(6)?,
        finished_at: ts(7)?,
        error: row.get(8)?,
        notes_written: json(9)?,
        credited,
        summary: row.get(11)?,
        notes_root: row.get(12)?,
        usage: Usage {
            prompt_tokens: to_u64(row.get(13)?),
            completion_tokens: to_u64(row.get(14)?),
            cached_tokens: to_u64(row.get(15)?),
        },
        calls: to_u32(row.get(16)?),
    })
}
