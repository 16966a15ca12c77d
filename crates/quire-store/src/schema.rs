//! Versioned schema migrations.
//!
//! `MIGRATIONS[i]` brings the schema to version `i + 1`. Each one runs in its
//! own immediate (write-locked) transaction together with its
//! `schema_migrations` row, so a crash mid-migration leaves the previous
//! version intact and two processes opening a fresh store at once do not both
//! apply it. Append new migrations at the end; never edit a released one.

use rusqlite::{Connection, OptionalExtension, Transaction, TransactionBehavior};

use crate::StoreError;
use crate::convert::{fmt_ts, to_u32};

/// Ordered schema migrations; append new ones at the end.
const MIGRATIONS: &[&str] = &[
    // 1: sessions and their events.
    r#"
    CREATE TABLE sessions (
        id                TEXT PRIMARY KEY NOT NULL,
        project           TEXT NOT NULL,
        workspace         TEXT NOT NULL,
        work_dir          TEXT NOT NULL,
        task              TEXT NOT NULL,
        agent             TEXT NOT NULL,
        config_hash       TEXT NOT NULL,
        model             TEXT NOT NULL,
        started_at        TEXT NOT NULL,
        ended_at          TEXT,
        status            TEXT NOT NULL DEFAULT 'running',
        outcome           TEXT,
        prompt_tokens     INTEGER NOT NULL DEFAULT 0,
        completion_tokens INTEGER NOT NULL DEFAULT 0,
        cached_tokens     INTEGER NOT NULL DEFAULT 0,
        cost_usd          REAL NOT NULL DEFAULT 0,
        iterations        INTEGER NOT NULL DEFAULT 0,
        tool_calls        INTEGER NOT NULL DEFAULT 0,
        elapsed_ms        INTEGER NOT NULL DEFAULT 0,
        parent_id         TEXT REFERENCES sessions(id) ON DELETE SET NULL,
        metadata          TEXT NOT NULL DEFAULT '{}'
    );
    CREATE INDEX idx_sessions_started_at ON sessions(started_at);
    CREATE INDEX idx_sessions_project_started_at ON sessions(project, started_at);
    CREATE INDEX idx_sessions_status ON sessions(status);
    CREATE INDEX idx_sessions_parent_id ON sessions(parent_id);

    CREATE TABLE events (
        id          INTEGER PRIMARY KEY,
        session_id  TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
        seq         INTEGER NOT NULL,
        at          TEXT NOT NULL,
        kind        TEXT NOT NULL,
        payload     TEXT NOT NULL,
        tokens_in   INTEGER NOT NULL DEFAULT 0,
        tokens_out  INTEGER NOT NULL DEFAULT 0,
        duration_ms INTEGER
    );
    CREATE UNIQUE INDEX idx_events_session_seq ON events(session_id, seq);
    "#,
    // 2: eval runs and their per-attempt results (`quire eval`).
    r#"
    CREATE TABLE eval_runs (
        id           TEXT PRIMARY KEY NOT NULL,
        suite        TEXT NOT NULL,
        suite_path   TEXT NOT NULL,
        split        TEXT NOT NULL,
        agent        TEXT NOT NULL,
        config_hash  TEXT NOT NULL,
        model        TEXT NOT NULL,
        started_at   TEXT NOT NULL,
        ended_at     TEXT,
        status       TEXT NOT NULL DEFAULT 'running',
        repeat       INTEGER NOT NULL DEFAULT 1,
        jobs         INTEGER NOT NULL DEFAULT 1,
        timeout_secs INTEGER NOT NULL DEFAULT 0,
        args         TEXT NOT NULL DEFAULT '{}'
    );
    CREATE INDEX idx_eval_runs_started_at ON eval_runs(started_at);

    CREATE TABLE eval_results (
        run_id            TEXT NOT NULL REFERENCES eval_runs(id) ON DELETE CASCADE,
        task_id           TEXT NOT NULL,
        attempt           INTEGER NOT NULL,
        session_id        TEXT REFERENCES sessions(id) ON DELETE SET NULL,
        status            TEXT NOT NULL DEFAULT 'pending',
        resolved          INTEGER NOT NULL DEFAULT 0,
        category          TEXT,
        visible_passed    INTEGER,
        visible_failed    INTEGER,
        hidden_passed     INTEGER,
        hidden_failed     INTEGER,
        prompt_tokens     INTEGER NOT NULL DEFAULT 0,
        completion_tokens INTEGER NOT NULL DEFAULT 0,
        cached_tokens     INTEGER NOT NULL DEFAULT 0,
        cost_usd          REAL NOT NULL DEFAULT 0,
        turns             INTEGER NOT NULL DEFAULT 0,
        tool_calls        INTEGER NOT NULL DEFAULT 0,
        wall_ms           INTEGER NOT NULL DEFAULT 0,
        started_at        TEXT,
        ended_at          TEXT,
        error             TEXT,
        details           TEXT NOT NULL DEFAULT '{}',
        PRIMARY KEY (run_id, task_id, attempt)
    );
    CREATE INDEX idx_eval_results_session_id ON eval_results(session_id);
    "#,
    // 3: note distillation jobs, one per finished session (`quire notes distill`).
    r#"
    CREATE TABLE distill_jobs (
        session_id    TEXT PRIMARY KEY NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
        status        TEXT NOT NULL DEFAULT 'pending',
        attempts      INTEGER NOT NULL DEFAULT 0,
        worker        TEXT,
        queued_at     TEXT NOT NULL,
        claimed_at    TEXT,
        heartbeat_at  TEXT,
        finished_at   TEXT,
        error         TEXT,
        notes_written TEXT NOT NULL DEFAULT '[]',
        credited      TEXT NOT NULL DEFAULT '[]',
        summary       TEXT
    );
    CREATE INDEX idx_distill_jobs_status ON distill_jobs(status, queued_at);
    "#,
    // 4: where a job's notes go (NULL: the notes of whoever distills it; an
    // eval learn run's own tree otherwise, claimed only by that run), and
    // what the note-taker spent on it, summed over its attempts.
    r#"
    ALTER TABLE distill_jobs ADD COLUMN notes_root TEXT;
    ALTER TABLE distill_jobs ADD COLUMN prompt_tokens INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE distill_jobs ADD COLUMN completion_tokens INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE distill_jobs ADD COLUMN cached_tokens INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE distill_jobs ADD COLUMN calls INTEGER NOT NULL DEFAULT 0;
    "#,
];

/// The schema version this build writes and understands.
pub const SCHEMA_VERSION: u32 = MIGRATIONS.len() as u32;

/// Brings the schema up to [`SCHEMA_VERSION`], refusing a newer one.
pub(crate) fn migrate(conn: &Connection, db: &str) -> Result<(), StoreError> {
    conn.execute_batch(
        "CREATE TABLE IF NOT EXISTS schema_migrations (
             version    INTEGER PRIMARY KEY NOT NULL,
             applied_at TEXT NOT NULL
         );",
    )
    .map_err(|source| sqlite(db, "creating schema_migrations", source))?;

    let found = current_version(conn, db)?;
    if found > SCHEMA_VERSION {
        return Err(StoreError::SchemaTooNew {
            db: db.to_string(),
            found,
            known: SCHEMA_VERSION,
        });
    }

    for (index, sql) in MIGRATIONS.iter().enumerate().skip(found as usize) {
        let version = index as u32 + 1;
        let err = |source: rusqlite::Error| StoreError::Migration {
            db: db.to_string(),
            version,
            source,
        };
        let tx = Transaction::new_unchecked(conn, TransactionBehavior::Immediate).map_err(err)?;
        // Another process may have applied it while we waited for the lock.
        let applied = tx
            .query_row(
                "SELECT 1 FROM schema_migrations WHERE version = ?1",
                [version],
                |_| Ok(()),
            )
            .optional()
            .map_err(err)?
            .is_some();
        if applied {
            continue;
        }
        tx.execute_batch(sql).map_err(err)?;
        tx.execute(
            "INSERT INTO schema_migrations (version, applied_at) VALUES (?1, ?2)",
            rusqlite::params![version, fmt_ts(chrono::Utc::now())],
        )
        .map_err(err)?;
        tx.commit().map_err(err)?;
        tracing::info!(db, version, "applied store migration");
    }
    Ok(())
}

/// The highest applied migration, 0 for a fresh database.
pub(crate) fn current_version(conn: &Connection, db: &str) -> Result<u32, StoreError> {
    let version: i64 = conn
        .query_row(
            "SELECT COALESCE(MAX(version), 0) FROM schema_migrations",
            [],
            |row| row.get(0),
        )
        .map_err(|source| sqlite(db, "reading schema version", source))?;
    Ok(to_u32(version))
}

fn sqlite(db: &str, action: &str, source: rusqlite::Error) -> StoreError {
    StoreError::Sqlite {
        db: db.to_string(),
        action: action.to_string(),
        source,
    }
}
