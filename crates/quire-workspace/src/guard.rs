//! The path guard: every path a tool touches goes through here so that the
//! agent cannot reach outside its session copy.

use std::ffi::OsStr;
use std::io;
use std::path::{Component, Path, PathBuf};

/// Why a tool path was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PathError {
    #[error("{path}: absolute paths are not allowed")]
    Absolute { path: String },
    #[error("{path}: leads outside the workspace")]
    Outside { path: String },
    #[error("{path}: does not exist")]
    NotFound { path: String },
    #[error("{path}: goes through a symlink whose target does not exist")]
    DanglingSymlink { path: String },
    #[error("{path}: reserved path (.git, evaluation/ or solution.patch)")]
    Reserved { path: String },
    #[error("invalid path {path:?}: {reason}")]
    Invalid { path: String, reason: String },
    #[error("{path}: {message}")]
    Io { path: String, message: String },
}

/// The normal components of `rel` after removing `.` and resolving `..`
/// lexically; refuses absolute paths and `..` above the root.
pub(crate) fn normalize(rel: &str) -> Result<Vec<&OsStr>, PathError> {
    if rel.contains('\0') {
        return Err(PathError::Invalid {
            path: rel.to_string(),
            reason: "contains a NUL byte".to_string(),
        });
    }
    let mut parts: Vec<&OsStr> = Vec::new();
    for c in Path::new(rel).components() {
        match c {
            Component::Normal(p) => parts.push(p),
            Component::CurDir => {}
            Component::ParentDir => {
                if parts.pop().is_none() {
                    return Err(PathError::Outside {
                        path: rel.to_string(),
                    });
                }
            }
            Component::RootDir | Component::Prefix(_) => {
                return Err(PathError::Absolute {
                    path: rel.to_string(),
                });
            }
        }
    }
    Ok(parts)
}

/// Resolve `rel` under `root` (whose canonical form is `canonical_root`).
/// Every existing component that is a symlink must resolve inside the root;
/// components that do not exist yet are fine (for files to be created).
/// Returns `root` joined with the normalized path, not a canonical path, so
/// callers can strip `root` from it.
pub(crate) fn resolve_under(
    root: &Path,
    canonical_root: &Path,
    rel: &str,
) -> Result<PathBuf, PathError> {
    let parts = normalize(rel)?;
    let mut cur = root.to_path_buf();
    let mut exists = true;
    for part in &parts {
        cur.push(part);
        if !exists {
            continue;
        }
        match std::fs::symlink_metadata(&cur) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => exists = false,
            Err(e) => {
                return Err(PathError::Io {
                    path: rel.to_string(),
                    message: e.to_string(),
                });
            }
            Ok(meta) if meta.file_type().is_symlink() => match std::fs::canonicalize(&cur) {
                Ok(target) if target.starts_with(canonical_root) => {}
                Ok(_) => {
                    return Err(PathError::Outside {
                        path: rel.to_string(),
                    });
                }
                Err(e) if e.kind() == io::ErrorKind::NotFound => {
                    return Err(PathError::DanglingSymlink {
                        path: rel.to_string(),
                    });
                }
                Err(e) => {
                    return Err(PathError::Io {
                        path: rel.to_string(),
                        message: e.to_string(),
                    });
                }
            },
            Ok(_) => {}
        }
    }
    Ok(cur)
}

/// `/`-separated form of `path` relative to `root` (`.` for the root
/// itself); a path outside `root` is returned whole.
pub(crate) fn relative_to(root: &Path, canonical_root: &Path, path: &Path) -> String {
    let rel = path
        .strip_prefix(root)
        .or_else(|_| path.strip_prefix(canonical_root));
    match rel {
        Ok(rel) => {
            let parts: Vec<String> = rel
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect();
            if parts.is_empty() {
                ".".to_string()
            } else {
                parts.join("/")
            }
        }
        Err(_) => path.to_string_lossy().replace('\\', "/"),
    }
}
