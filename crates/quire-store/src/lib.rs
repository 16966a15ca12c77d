//! The SQLite trajectory store: sessions and the events of each, committed
//! one by one as they happen so that a killed process still leaves a
//! readable, resumable trajectory; eval runs with their per-attempt
//! results (`quire eval`); and note distillation jobs (`quire notes`).
//!
//! One [`Store`] wraps one connection and is used from one thread at a time;
//! several processes may open the same file (WAL mode, busy timeout, and
//! write-locked transactions for every append keep sequence numbers dense).
//! Every text that reaches the database goes through the store's
//! [`Redactor`] first.

mod browse;
mod convert;
mod distill;
mod error;
mod evals;
mod events;
mod schema;
mod sessions;

use std::path::{Path, PathBuf};
use std::time::Duration;

use quire_types::Redactor;
use rusqlite::{Connection, ErrorCode};

pub use browse::{SessionFacets, SessionPage, SessionQuery};
pub use distill::{DistillJob, DistillStatus};
pub use error::StoreError;
pub use evals::{
    EvalOutcome, EvalResultRow, EvalResultStatus, EvalRunRow, EvalRunStatus, EvalRunSummary,
    NewEvalRun,
};
pub use events::StoredEvent;
pub use schema::SCHEMA_VERSION;
pub use sessions::{NewSession, SessionFilter, SessionRow, SessionStatus, Totals};

/// How long a writer waits for another process's lock before failing.
const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// Label used in errors for an in-memory database.
const MEMORY_LABEL: &str = ":memory:";

/// An open trajectory store: one SQLite connection plus the redactor applied
/// to everything written through it.
#[derive(Debug)]
pub struct Store {
    conn: Connection,
    redactor: Redactor,
    /// Where the database lives, for error messages and logs.
    db: String,
    path: Option<PathBuf>,
}

impl Store {
    /// Opens (creating if needed, with parent directories) the store at
    /// `path`, configures it for multi-process use and migrates its schema.
    pub fn open(path: &Path) -> Result<Store, StoreError> {
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent).map_err(|source| StoreError::CreateDir {
                path: parent.to_path_buf(),
                source,
            })?;
        }
        let conn = Connection::open(path).map_err(|source| StoreError::Open {
            path: path.to_path_buf(),
            source,
        })?;
        let store = Store {
            conn,
            redactor: Redactor::new(),
            db: path.display().to_string(),
            path: Some(path.to_path_buf()),
        };
        store.init().map_err(|err| store.corrupt_or(err))?;
        tracing::debug!(db = %store.db, "opened trajectory store");
        Ok(store)
    }

    /// A private, throwaway store (tests, dry runs).
    pub fn open_in_memory() -> Result<Store, StoreError> {
        let conn = Connection::open_in_memory().map_err(|source| StoreError::Open {
            path: PathBuf::from(MEMORY_LABEL),
            source,
        })?;
        let store = Store {
            conn,
            redactor: Redactor::new(),
            db: MEMORY_LABEL.to_string(),
            path: None,
        };
        store.init()?;
        Ok(store)
    }

    /// Replaces the redactor (builder form), e.g. with one that knows the
    /// configured API keys.
    pub fn with_redactor(mut self, redactor: Redactor) -> Self {
        self.redactor = redactor;
        self
    }

    /// Replaces the redactor applied to everything written from now on.
    pub fn set_redactor(&mut self, redactor: Redactor) {
        self.redactor = redactor;
    }

    /// The redactor applied before every write.
    pub fn redactor(&self) -> &Redactor {
        &self.redactor
    }

    /// The database file, `None` for an in-memory store.
    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    /// The applied schema version (equals [`SCHEMA_VERSION`] once open).
    pub fn schema_version(&self) -> Result<u32, StoreError> {
        schema::current_version(&self.conn, &self.db)
    }

    /// The journal mode SQLite reports (`wal` for a file store).
    pub fn journal_mode(&self) -> Result<String, StoreError> {
        self.conn
            .query_row("PRAGMA journal_mode", [], |row| row.get(0))
            .map_err(|source| self.sqlite("reading journal mode", source))
    }

    fn init(&self) -> Result<(), StoreError> {
        self.conn
            .busy_timeout(BUSY_TIMEOUT)
            .map_err(|source| self.sqlite("setting busy timeout", source))?;
        let mode = self.enable_wal()?;
        if self.path.is_some() && !mode.eq_ignore_ascii_case("wal") {
            tracing::warn!(db = %self.db, mode, "WAL journal mode unavailable; concurrent use will be slower");
        }
        self.conn
            .pragma_update(None, "synchronous", "NORMAL")
            .map_err(|source| self.sqlite("setting synchronous=NORMAL", source))?;
        self.conn
            .pragma_update(None, "foreign_keys", "ON")
            .map_err(|source| self.sqlite("enabling foreign keys", source))?;
        schema::migrate(&self.conn, &self.db)
    }

    /// Puts the file in WAL mode. WAL is a property of the file, so a store
    /// opened before leaves nothing to do; switching needs a moment of
    /// exclusive access, for which SQLite does not wait on its own, so two
    /// processes creating the same data home at once retry here.
    fn enable_wal(&self) -> Result<String, StoreError> {
        // The first statement that reads the file: a corrupt one fails here.
        let current: String = self
            .conn
            .query_row("PRAGMA journal_mode", [], |row| row.get(0))
            .map_err(|source| self.sqlite("reading journal mode", source))?;
        if current.eq_ignore_ascii_case("wal") || self.path.is_none() {
            return Ok(current);
        }
        let deadline = std::time::Instant::now() + BUSY_TIMEOUT;
        loop {
            match self.conn.query_row("PRAGMA journal_mode = WAL", [], |row| {
                row.get::<_, String>(0)
            }) {
                Ok(mode) => return Ok(mode),
                Err(rusqlite::Error::SqliteFailure(err, _))
                    if err.code == rusqlite::ErrorCode::DatabaseBusy
                        && std::time::Instant::now() < deadline =>
                {
                    std::thread::sleep(std::time::Duration::from_millis(20));
                }
                Err(source) => return Err(self.sqlite("enabling WAL journal mode", source)),
            }
        }
    }

    /// Turns "file is not a database"-style failures at open into
    /// [`StoreError::Corrupt`] naming the path; other errors pass through.
    fn corrupt_or(&self, err: StoreError) -> StoreError {
        match (err, &self.path) {
            (
                StoreError::Sqlite { source, .. } | StoreError::Migration { source, .. },
                Some(path),
            ) if matches!(
                source.sqlite_error_code(),
                Some(ErrorCode::NotADatabase | ErrorCode::DatabaseCorrupt)
            ) =>
            {
                StoreError::Corrupt {
                    path: path.clone(),
                    source,
                }
            }
            (err, _) => err,
        }
    }

    pub(crate) fn sqlite(&self, action: impl Into<String>, source: rusqlite::Error) -> StoreError {
        StoreError::Sqlite {
            db: self.db.clone(),
            action: action.into(),
            source,
        }
    }

    pub(crate) fn not_found(&self, id: &quire_types::SessionId) -> StoreError {
        StoreError::SessionNotFound {
            db: self.db.clone(),
            id: id.clone(),
        }
    }
}
