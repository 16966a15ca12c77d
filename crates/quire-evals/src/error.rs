use std::path::PathBuf;

/// Why a suite could not be loaded or a run could not start or go on.
/// Failures *inside* one attempt are results (a category), not errors.
#[derive(Debug, thiserror::Error)]
pub enum EvalError {
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// A problem in `suite.toml`, already worded as `file:line:column: what`.
    #[error("{0}")]
    SuiteFile(String),
    #[error("{}: {message}", path.display())]
    Suite { path: PathBuf, message: String },
    #[error("{0}")]
    Selection(String),
    #[error("task {task}: {message}")]
    Task { task: String, message: String },
    #[error(transparent)]
    Store(#[from] quire_store::StoreError),
    #[error("no eval run matches `{0}`")]
    RunNotFound(String),
    #[error("eval run {run} is being run by process {pid}; wait for it or stop it first")]
    RunLocked { run: String, pid: u32 },
    #[error("eval run {run}: {message}")]
    Run { run: String, message: String },
    /// A run's notes tree or its note-taker could not be opened.
    #[error("notes at {}: {message}", path.display())]
    Notes { path: PathBuf, message: String },
    #[error("the store lock is poisoned (a thread panicked while writing)")]
    StorePoisoned,
}

impl EvalError {
    pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> EvalError {
        EvalError::Io {
            path: path.into(),
            source,
        }
    }
}
