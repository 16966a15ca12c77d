//! Making (and reattaching to) the session copy.

use std::collections::BTreeMap;
use std::fs::{self, File};
use std::io::{Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::{Component, Path, PathBuf};

use sha2::{Digest, Sha256};

use crate::error::{IoContext, WorkspaceError};
use crate::fsutil::{hex, mode_of, sha256_hex};
use crate::guard::{PathError, relative_to, resolve_under};
use crate::manifest::{MANIFEST_VERSION, Manifest, ManifestEntry, SkipReason, Skipped};
use crate::walk::walk;

/// An isolated copy of a workspace that the agent works in, with the
/// manifest of what it was copied from.
#[derive(Debug, Clone)]
pub struct SessionCopy {
    original: PathBuf,
    canonical_original: PathBuf,
    root: PathBuf,
    canonical_root: PathBuf,
    manifest: Manifest,
}

fn absolute(path: &Path) -> Result<PathBuf, WorkspaceError> {
    std::path::absolute(path).at(path)
}

fn canonical(path: &Path) -> Result<PathBuf, WorkspaceError> {
    fs::canonicalize(path).at(path)
}

impl SessionCopy {
    /// Copy `original` into `dest` (which must not exist or be empty),
    /// respecting ignore files, skipping `.git`, a top-level `evaluation/`
    /// and `solution.patch`, keeping modes, and copying symlinks only when
    /// they resolve inside the workspace.
    pub fn create(original: &Path, dest: &Path) -> Result<SessionCopy, WorkspaceError> {
        let original = absolute(original)?;
        if !fs::metadata(&original).at(&original)?.is_dir() {
            return Err(WorkspaceError::NotADirectory { path: original });
        }
        let root = absolute(dest)?;
        match fs::read_dir(&root) {
            Ok(mut entries) => {
                if entries.next().is_some() {
                    return Err(WorkspaceError::DestNotEmpty { path: root });
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                fs::create_dir_all(&root).at(&root)?;
            }
            Err(e) => return Err(WorkspaceError::io(&root, e)),
        }
        let canonical_original = canonical(&original)?;
        let canonical_root = canonical(&root)?;
        let started = std::time::Instant::now();
        let (walked, problems) = walk(&original, None, Some(&root));
        let mut files = BTreeMap::new();
        let mut skipped = Vec::new();
        let mut dir_modes = Vec::new();
        for w in walked {
            let target = root.join(&w.rel);
            if w.file_type.is_dir() {
                fs::create_dir_all(&target).at(&target)?;
                if let Ok(meta) = fs::metadata(&w.path) {
                    dir_modes.push((target, mode_of(&meta)));
                }
            } else if w.file_type.is_symlink() {
                match copy_symlink(&canonical_original, &w.path, &w.rel, &target)? {
                    Ok(entry) => {
                        files.insert(w.rel, entry);
                    }
                    Err(reason) => skipped.push(Skipped {
                        path: w.rel,
                        reason,
                    }),
                }
            } else if w.file_type.is_file() {
                match copy_file(&w.path, &target) {
                    Ok(entry) => {
                        files.insert(w.rel, entry);
                    }
                    Err(CopyFailure::Source(e)) => {
                        tracing::warn!(path = %w.rel, %e, "not copied: unreadable");
                        skipped.push(Skipped {
                            path: w.rel,
                            reason: SkipReason::Unreadable {
                                error: e.to_string(),
                            },
                        });
                    }
                    Err(CopyFailure::Dest(e)) => return Err(WorkspaceError::io(&target, e)),
                }
            } else {
                skipped.push(Skipped {
                    path: w.rel,
                    reason: SkipReason::SpecialFile,
                });
            }
        }
        for p in problems {
            tracing::warn!(path = ?p.rel, message = %p.message, "walk problem while copying");
            skipped.push(Skipped {
                path: p.rel.unwrap_or_default(),
                reason: SkipReason::Unreadable { error: p.message },
            });
        }
        // Directory modes last, deepest first, so read-only folders do not
        // stop their contents from being copied.
        for (dir, mode) in dir_modes.into_iter().rev() {
            fs::set_permissions(&dir, fs::Permissions::from_mode(mode)).at(&dir)?;
        }
        tracing::info!(
            files = files.len(),
            skipped = skipped.len(),
            ms = started.elapsed().as_millis() as u64,
            "session copy created"
        );
        let manifest = Manifest {
            version: MANIFEST_VERSION,
            original: original.clone(),
            files,
            skipped,
        };
        Ok(SessionCopy {
            original,
            canonical_original,
            root,
            canonical_root,
            manifest,
        })
    }

    /// Reattach to an existing copy (on resume) with the manifest saved by
    /// [`SessionCopy::save_manifest`].
    pub fn open(
        original: &Path,
        dest: &Path,
        manifest_path: &Path,
    ) -> Result<SessionCopy, WorkspaceError> {
        let manifest = Manifest::load(manifest_path)?;
        SessionCopy::with_manifest(original, dest, manifest)
    }

    /// Reattach to an existing copy with a manifest already in memory.
    pub fn with_manifest(
        original: &Path,
        dest: &Path,
        manifest: Manifest,
    ) -> Result<SessionCopy, WorkspaceError> {
        let original = absolute(original)?;
        let root = absolute(dest)?;
        if !fs::metadata(&root).at(&root)?.is_dir() {
            return Err(WorkspaceError::NotADirectory { path: root });
        }
        if manifest.original != original {
            tracing::warn!(
                manifest = %manifest.original.display(),
                given = %original.display(),
                "manifest was made from a different original path"
            );
        }
        Ok(SessionCopy {
            canonical_original: canonical(&original)?,
            canonical_root: canonical(&root)?,
            original,
            root,
            manifest,
        })
    }

    /// Persist the manifest as JSON (atomically).
    pub fn save_manifest(&self, path: &Path) -> Result<(), WorkspaceError> {
        self.manifest.save(path)
    }

    /// The session copy's root (absolute, as given, not canonicalized).
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The original workspace's root (absolute).
    pub fn original(&self) -> &Path {
        &self.original
    }

    pub(crate) fn canonical_original(&self) -> &Path {
        &self.canonical_original
    }

    /// The state of the original at copy time.
    pub fn manifest(&self) -> &Manifest {
        &self.manifest
    }

    /// What was not copied, and why.
    pub fn skipped(&self) -> &[Skipped] {
        &self.manifest.skipped
    }

    /// Resolve a tool path (relative to the workspace root) to a path inside
    /// the copy. Refuses absolute paths, `..` above the root and symlinks
    /// leading outside; the path itself need not exist.
    pub fn resolve(&self, rel: &str) -> Result<PathBuf, PathError> {
        resolve_under(&self.root, &self.canonical_root, rel)
    }

    /// Like [`SessionCopy::resolve`], but the path must exist.
    pub fn resolve_existing(&self, rel: &str) -> Result<PathBuf, PathError> {
        let path = self.resolve(rel)?;
        match fs::symlink_metadata(&path) {
            Ok(_) => Ok(path),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(PathError::NotFound {
                path: rel.to_string(),
            }),
            Err(e) => Err(PathError::Io {
                path: rel.to_string(),
                message: e.to_string(),
            }),
        }
    }

    /// The `/`-separated path of `path` relative to the copy's root (`.` for
    /// the root); a path outside the copy is returned whole.
    pub fn relative(&self, path: &Path) -> String {
        relative_to(&self.root, &self.canonical_root, path)
    }
}

enum CopyFailure {
    Source(std::io::Error),
    Dest(std::io::Error),
}

/// Copy one regular file, hashing it on the way, and keep its mode.
fn copy_file(src: &Path, dest: &Path) -> Result<ManifestEntry, CopyFailure> {
    let mut input = File::open(src).map_err(CopyFailure::Source)?;
    let mode = input
        .metadata()
        .map(|m| mode_of(&m))
        .map_err(CopyFailure::Source)?;
    let mut output = File::create(dest).map_err(CopyFailure::Dest)?;
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 64 * 1024];
    let mut size = 0u64;
    loop {
        let n = input.read(&mut buf).map_err(CopyFailure::Source)?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
        output.write_all(&buf[..n]).map_err(CopyFailure::Dest)?;
        size += n as u64;
    }
    output
        .set_permissions(fs::Permissions::from_mode(mode))
        .map_err(CopyFailure::Dest)?;
    let sha256 = hex(&hasher.finalize());
    Ok(ManifestEntry {
        sha256,
        size,
        mode,
        symlink: None,
        copy_target: None,
    })
}

/// Copy a symlink if it resolves inside the workspace. The outer error is a
/// failure to write the copy; the inner one a reason to skip.
fn copy_symlink(
    canonical_original: &Path,
    src: &Path,
    rel: &str,
    dest: &Path,
) -> Result<Result<ManifestEntry, SkipReason>, WorkspaceError> {
    let target = match fs::read_link(src) {
        Ok(t) => t,
        Err(e) => {
            return Ok(Err(SkipReason::Unreadable {
                error: e.to_string(),
            }));
        }
    };
    let target_text = target.to_string_lossy().into_owned();
    let resolved = match fs::canonicalize(src) {
        Ok(r) => r,
        Err(_) => {
            return Ok(Err(SkipReason::SymlinkDangling {
                target: target_text,
            }));
        }
    };
    let Ok(inside) = resolved.strip_prefix(canonical_original) else {
        return Ok(Err(SkipReason::SymlinkOutside {
            target: target_text,
        }));
    };
    let link_dir: Vec<&str> = rel.split('/').collect();
    let link_dir = &link_dir[..link_dir.len().saturating_sub(1)];
    let copy_target = if target.is_relative() && stays_inside(link_dir, &target) {
        None
    } else {
        Some(relative_link(link_dir, inside))
    };
    let written = copy_target.as_deref().unwrap_or(&target_text);
    std::os::unix::fs::symlink(written, dest).at(dest)?;
    Ok(Ok(ManifestEntry {
        sha256: sha256_hex(target_text.as_bytes()),
        size: target_text.len() as u64,
        mode: 0o777,
        symlink: Some(target_text),
        copy_target,
    }))
}

/// True if following the relative `target` from `link_dir` never climbs
/// above the root.
fn stays_inside(link_dir: &[&str], target: &Path) -> bool {
    let mut depth = link_dir.len();
    for c in target.components() {
        match c {
            Component::Normal(_) => depth += 1,
            Component::CurDir => {}
            Component::ParentDir => {
                if depth == 0 {
                    return false;
                }
                depth -= 1;
            }
            Component::RootDir | Component::Prefix(_) => return false,
        }
    }
    true
}

/// A relative link from `link_dir` to `target` (both relative to the root).
fn relative_link(link_dir: &[&str], target: &Path) -> String {
    let target: Vec<String> = target
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    let common = link_dir
        .iter()
        .zip(&target)
        .take_while(|(a, b)| **a == b.as_str())
        .count();
    let mut parts: Vec<String> = vec!["..".to_string(); link_dir.len() - common];
    parts.extend(target[common..].iter().cloned());
    if parts.is_empty() {
        ".".to_string()
    } else {
        parts.join("/")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_links() {
        assert_eq!(relative_link(&["a", "b"], Path::new("a/c/f")), "../c/f");
        assert_eq!(relative_link(&[], Path::new("x")), "x");
        assert_eq!(relative_link(&["a"], Path::new("")), "..");
        assert!(stays_inside(&["a"], Path::new("../b")));
        assert!(!stays_inside(&["a"], Path::new("../../b")));
    }
}
