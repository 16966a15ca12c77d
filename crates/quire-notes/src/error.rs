//! Errors of the note tree and index; each names the file or folder involved.

use std::path::PathBuf;
use std::time::Duration;

/// Everything that can go wrong with notes.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("cannot read {}: {source}", path.display())]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },

    #[error("cannot write {}: {source}", path.display())]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },

    #[error("{}:{line}: {message}", path.display())]
    Parse {
        path: PathBuf,
        line: usize,
        message: String,
    },

    #[error("invalid note: {0}")]
    Invalid(String),

    #[error("no note with id {0}")]
    NotFound(String),

    #[error("{} is not inside the notes folder {}", path.display(), root.display())]
    OutsideTree { path: PathBuf, root: PathBuf },

    #[error("note index at {}: {source}", dir.display())]
    Index {
        dir: PathBuf,
        source: tantivy::TantivyError,
    },

    #[error(
        "note index at {} is locked by another writer (another Quire process?); gave up after {waited:?}",
        dir.display()
    )]
    Locked { dir: PathBuf, waited: Duration },

    #[error("refusing to use {} as the note index folder: {reason}", dir.display())]
    BadIndexDir { dir: PathBuf, reason: String },
}

/// Result of every fallible call in this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

pub(crate) fn read_err(path: impl Into<PathBuf>) -> impl FnOnce(std::io::Error) -> Error {
    let path = path.into();
    move |source| Error::Read { path, source }
}

pub(crate) fn write_err(path: impl Into<PathBuf>) -> impl FnOnce(std::io::Error) -> Error {
    let path = path.into();
    move |source| Error::Write { path, source }
}
