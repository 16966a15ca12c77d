//! Path arguments through the session copy's guard.

use std::path::PathBuf;

use quire_workspace::{PathError, SessionCopy};

/// A path argument that passed the guard.
#[derive(Debug, Clone)]
pub(crate) struct Resolved {
    pub abs: PathBuf,
    /// Workspace-relative, `/`-separated (`.` for the root): the key in
    /// [`crate::WorkspaceState`] and the form shown to the model.
    pub rel: String,
}

/// Why the guard refused a path, in the two ways the tools word it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// Absolute, `..` above the root, a symlink out, reserved or malformed.
    Outside,
    /// Goes through a dangling symlink or an unreadable folder: for the
    /// model, there is no such file. The guard's words, for logs and io texts.
    Missing(String),
}

/// Why a folder argument was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PathProblem {
    Outside,
    NotFound,
    NotADir,
}

/// Runs `raw` through the guard. Empty and `.` mean the root.
pub(crate) fn resolve(copy: &SessionCopy, raw: &str) -> Result<Resolved, Refusal> {
    let trimmed = raw.trim();
    let abs = if trimmed.is_empty() || trimmed == "." || trimmed == "./" {
        copy.root().to_path_buf()
    } else {
        copy.resolve(trimmed).map_err(|err| {
            tracing::debug!(path = raw, %err, "path refused by the guard");
            match err {
                PathError::NotFound { .. }
                | PathError::DanglingSymlink { .. }
                | PathError::Io { .. } => Refusal::Missing(err.to_string()),
                _ => Refusal::Outside,
            }
        })?
    };
    let rel = copy.relative(&abs);
    Ok(Resolved { abs, rel })
}

/// Why a write to `file` would be refused when the change is applied to
/// the original (a reserved path, or one through a symlink the copy left
/// out), in the guard's words; `None` when it would apply. Checked at
/// write time so the agent can go another way instead of losing the
/// whole change at the end.
pub(crate) fn not_applicable(copy: &SessionCopy, file: &Resolved) -> Option<String> {
    let err = copy.check_applicable(&file.rel).err()?;
    tracing::debug!(path = %file.rel, %err, "write refused: the apply would refuse it");
    Some(err.to_string())
}

/// A folder argument (default the root) that exists and is a folder.
pub(crate) fn resolve_dir_arg(copy: &SessionCopy, raw: &str) -> Result<Resolved, PathProblem> {
    let resolved = resolve(copy, raw).map_err(|r| match r {
        Refusal::Outside => PathProblem::Outside,
        Refusal::Missing(_) => PathProblem::NotFound,
    })?;
    match std::fs::metadata(&resolved.abs) {
        Err(_) => Err(PathProblem::NotFound),
        Ok(meta) if !meta.is_dir() => Err(PathProblem::NotADir),
        Ok(_) => Ok(resolved),
    }
}
