//! Errors of workspace operations other than the path guard and applying.

use std::path::PathBuf;

/// A filesystem or format failure, always naming the path involved.
#[derive(Debug, thiserror::Error)]
pub enum WorkspaceError {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("walking {path}: {message}")]
    Walk { path: PathBuf, message: String },
    #[error("{path}: invalid JSON: {source}")]
    Json {
        path: PathBuf,
        #[source]
        source: serde_json::Error,
    },
    #[error("{path}: destination already exists and is not empty")]
    DestNotEmpty { path: PathBuf },
    #[error("{path}: not a directory")]
    NotADirectory { path: PathBuf },
    #[error("{path}: no apply backup found")]
    NoBackup { path: PathBuf },
    #[error("{path}: backup format version {version} is not supported")]
    BackupVersion { path: PathBuf, version: u32 },
    #[error("rollback incomplete: {} file(s) not restored ({}), first error: {first}", failed.len(), failed.join(", "))]
    RollbackIncomplete { failed: Vec<String>, first: String },
}

impl WorkspaceError {
    /// Wrap an I/O error with the path it concerns.
    pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        WorkspaceError::Io {
            path: path.into(),
            source,
        }
    }
}

/// Shorthand for attaching a path to I/O results.
pub(crate) trait IoContext<T> {
    fn at(self, path: &std::path::Path) -> Result<T, WorkspaceError>;
}

impl<T> IoContext<T> for std::io::Result<T> {
    fn at(self, path: &std::path::Path) -> Result<T, WorkspaceError> {
        self.map_err(|e| WorkspaceError::io(path, e))
    }
}
