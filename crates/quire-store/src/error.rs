use std::path::PathBuf;

use quire_types::SessionId;

/// A store failure, naming the database (`db`: its path, or `:memory:`) and,
/// where one is involved, the session, so a message alone is actionable.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("{}: cannot create the trajectory store directory: {source}", path.display())]
    CreateDir {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{}: cannot open the trajectory store: {source}", path.display())]
    Open {
        path: PathBuf,
        #[source]
        source: rusqlite::Error,
    },
    #[error(
        "{}: not a readable trajectory store (corrupt, or not an SQLite database): {source}",
        path.display()
    )]
    Corrupt {
        path: PathBuf,
        #[source]
        source: rusqlite::Error,
    },
    #[error(
        "{db}: schema version {found} is newer than this build of quire knows ({known}); \
         upgrade quire to use this store"
    )]
    SchemaTooNew { db: String, found: u32, known: u32 },
    #[error("{db}: schema migration {version} failed: {source}")]
    Migration {
        db: String,
        version: u32,
        #[source]
        source: rusqlite::Error,
    },
    #[error("{db}: no session {id}")]
    SessionNotFound { db: String, id: SessionId },
    #[error("{db}: session {id} already exists")]
    SessionExists { db: String, id: SessionId },
    #[error("{db}: no eval run {id}")]
    EvalRunNotFound { db: String, id: String },
    #[error("{db}: eval run {id} already exists")]
    EvalRunExists { db: String, id: String },
    #[error("{db}: eval run {run} has no attempt {attempt} of task {task}")]
    EvalResultNotFound {
        db: String,
        run: String,
        task: String,
        attempt: u32,
    },
    #[error("{db}: id prefix `{prefix}` is ambiguous (matches {})", matches.join(", "))]
    AmbiguousPrefix {
        db: String,
        prefix: String,
        matches: Vec<String>,
    },
    #[error("{db}: cannot encode {what}: {source}")]
    Encode {
        db: String,
        what: String,
        #[source]
        source: serde_json::Error,
    },
    #[error("{db}: unreadable {what}: {detail}")]
    Decode {
        db: String,
        what: String,
        detail: String,
    },
    #[error("{db}: {action} failed: {source}")]
    Sqlite {
        db: String,
        action: String,
        #[source]
        source: rusqlite::Error,
    },
}
