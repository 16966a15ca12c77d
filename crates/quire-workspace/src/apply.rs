//! Applying the copy's changes to the original, with a backup on disk that
//! can restore it byte for byte, even after the process was killed.
//!
//! Backup layout in the caller's directory: `journal.json` (what each
//! touched path was before) and `blobs/N` (the bytes of each touched file).
//! The journal is written, fsynced, before the original is touched. Only
//! these entries are ever removed from the directory.

use std::collections::BTreeSet;
use std::fs;
use std::io;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::copy::SessionCopy;
use crate::diff::{ChangeKind, Content, DiskState, FileChange, original_matches, read_state};
use crate::error::{IoContext, WorkspaceError};
use crate::fsutil::{atomic_symlink, atomic_write, hash_file, mode_of, sha256_hex, sync_dir};
use crate::guard::{PathError, resolve_under};
use crate::walk::always_skipped;

const JOURNAL: &str = "journal.json";
const BLOBS: &str = "blobs";
const JOURNAL_VERSION: u32 = 1;

/// Why applying to the original was refused or failed.
#[derive(Debug, thiserror::Error)]
pub enum ApplyError {
    #[error("the original changed since the session copy was made: {}", conflict_list(.0))]
    Conflicts(Vec<Conflict>),
    #[error("refusing to write {path}: {source}")]
    UnsafePath {
        path: String,
        #[source]
        source: PathError,
    },
    #[error("{path}: change has no new content")]
    MissingContent { path: String },
    #[error("{path}: an earlier apply's backup is still there; roll it back or commit it first")]
    BackupPending { path: PathBuf },
    #[error("could not back up the original: {0}")]
    Backup(#[source] WorkspaceError),
    #[error("writing {path} failed ({source}); the original was restored")]
    Write {
        path: String,
        #[source]
        source: io::Error,
    },
    #[error("writing {path} failed ({source}), and restoring the original failed too: {rollback}")]
    WriteAndRollback {
        path: String,
        source: io::Error,
        rollback: WorkspaceError,
    },
}

fn conflict_list(conflicts: &[Conflict]) -> String {
    conflicts
        .iter()
        .map(|c| format!("{} ({})", c.path, c.reason))
        .collect::<Vec<_>>()
        .join(", ")
}

/// A file of the original that is not as the change expects.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Conflict {
    pub path: String,
    pub reason: ConflictReason,
}

/// How the original differs from what the change expects.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConflictReason {
    /// Modified since the copy was made.
    Modified,
    /// Deleted since the copy was made.
    Deleted,
    /// Created since the copy was made (the change adds it too).
    Created,
    /// The change modifies or deletes a file that was never copied.
    NotInManifest,
}

impl std::fmt::Display for ConflictReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            ConflictReason::Modified => "modified since the copy was made",
            ConflictReason::Deleted => "deleted since the copy was made",
            ConflictReason::Created => "created since the copy was made",
            ConflictReason::NotInManifest => "not part of the session copy",
        })
    }
}

/// True when the original's `state` is already what `change` makes it.
fn already_applied(change: &FileChange, state: Option<&DiskState>) -> bool {
    match (change.kind, &change.new, state) {
        (ChangeKind::Deleted, _, None) => true,
        (ChangeKind::Deleted, _, Some(_)) | (_, None, _) | (_, _, None) => false,
        (_, Some(new), Some(now)) => {
            now.content.is_symlink() == new.is_symlink()
                && now.content.bytes() == new.bytes()
                && (new.is_symlink() || change.new_mode.is_none_or(|mode| mode == now.mode))
        }
    }
}

/// What a touched path was before the apply.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
enum Before {
    Absent,
    File {
        blob: String,
        mode: u32,
        sha256: String,
    },
    Symlink {
        target: String,
    },
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct JournalEntry {
    path: String,
    before: Before,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct Journal {
    version: u32,
    original: PathBuf,
    entries: Vec<JournalEntry>,
    /// Folders the apply created (to remove on rollback when empty).
    created_dirs: Vec<String>,
    /// Folders the apply removed because they became empty, with modes.
    #[serde(default)]
    removed_dirs: Vec<(String, u32)>,
}

/// An applied change that can still be undone exactly. Dropping it keeps
/// the backup on disk (so a crash can be recovered with
/// [`AppliedChange::load`]); call [`AppliedChange::commit`] or
/// [`AppliedChange::rollback`] to finish.
#[derive(Debug)]
pub struct AppliedChange {
    dir: PathBuf,
    journal: Journal,
}

/// One planned write.
struct Planned<'a> {
    change: &'a FileChange,
    target: PathBuf,
}

impl SessionCopy {
    /// Whether a change at `rel` could be applied to the original, checked
    /// when a tool writes it rather than at the end: the path must not be
    /// reserved and must not go, in the original, through a symlink that
    /// leads outside or nowhere (such links were left out of the copy, so
    /// the copy alone cannot tell). The same rules as
    /// [`SessionCopy::apply_to_original`].
    pub fn check_applicable(&self, rel: &str) -> Result<(), PathError> {
        let normalized = crate::guard::normalize(rel)?
            .iter()
            .map(|p| p.to_string_lossy())
            .collect::<Vec<_>>()
            .join("/");
        if always_skipped(&normalized, false) {
            return Err(PathError::Reserved { path: normalized });
        }
        resolve_under(self.original(), self.canonical_original(), &normalized).map(|_| ())
    }

    /// Apply `changes` to the original, all or nothing. First checks that
    /// every touched file of the original is unchanged since the copy was
    /// made (a file added in the copy must still not exist); if not, writes
    /// nothing and names the files. Backs up what it will touch into
    /// `backup_dir`, then writes each file atomically.
    pub fn apply_to_original(
        &self,
        changes: &[FileChange],
        backup_dir: &Path,
    ) -> Result<AppliedChange, ApplyError> {
        let original = self.original();
        if backup_dir.join(JOURNAL).exists() {
            return Err(ApplyError::BackupPending {
                path: backup_dir.to_path_buf(),
            });
        }
        // Plan: safe paths, no conflicts, and the bytes to back up.
        let mut planned = Vec::new();
        let mut conflicts = Vec::new();
        let mut befores = Vec::new();
        for change in changes {
            if always_skipped(&change.path, false) {
                return Err(ApplyError::UnsafePath {
                    path: change.path.clone(),
                    source: PathError::Reserved {
                        path: change.path.clone(),
                    },
                });
            }
            let target = resolve_under(original, self.canonical_original(), &change.path).map_err(
                |source| ApplyError::UnsafePath {
                    path: change.path.clone(),
                    source,
                },
            )?;
            if change.kind != ChangeKind::Deleted && change.new.is_none() {
                return Err(ApplyError::MissingContent {
                    path: change.path.clone(),
                });
            }
            let state = read_state(&target)
                .map_err(|e| ApplyError::Backup(WorkspaceError::io(&target, e)))?;
            if already_applied(change, state.as_ref()) {
                // The original already reads as the change wants: a resumed
                // session whose apply finished before a crash, or the same
                // edit made by hand. Nothing to write, nothing to undo.
                continue;
            }
            let exists = fs::symlink_metadata(&target).is_ok();
            let conflict = match (change.kind, self.manifest().files.get(&change.path)) {
                (ChangeKind::Added, _) if exists => Some(ConflictReason::Created),
                (ChangeKind::Added, _) => None,
                (_, None) => Some(ConflictReason::NotInManifest),
                (_, Some(_)) if state.is_none() => Some(ConflictReason::Deleted),
                (_, Some(entry)) if !original_matches(entry, state.as_ref()) => {
                    Some(ConflictReason::Modified)
                }
                _ => None,
            };
            if let Some(reason) = conflict {
                conflicts.push(Conflict {
                    path: change.path.clone(),
                    reason,
                });
                continue;
            }
            befores.push((change.path.clone(), state));
            planned.push(Planned { change, target });
        }
        if !conflicts.is_empty() {
            tracing::warn!(count = conflicts.len(), "apply refused: original changed");
            return Err(ApplyError::Conflicts(conflicts));
        }
        let created_dirs = dirs_to_create(original, &planned);
        let journal = write_backup(backup_dir, original, befores, created_dirs)
            .map_err(ApplyError::Backup)?;
        let mut applied = AppliedChange {
            dir: backup_dir.to_path_buf(),
            journal,
        };

        for (i, p) in planned.iter().enumerate() {
            if let Err(source) = fault::check(i).and_then(|_| write_change(p)) {
                let path = p.change.path.clone();
                tracing::warn!(%path, %source, "apply failed midway; rolling back");
                return Err(match applied.restore() {
                    Ok(()) => {
                        let _ = applied.remove_backup();
                        ApplyError::Write { path, source }
                    }
                    Err(rollback) => ApplyError::WriteAndRollback {
                        path,
                        source,
                        rollback,
                    },
                });
            }
        }
        if let Err(e) = applied.remove_emptied_dirs(self.root()) {
            tracing::warn!(%e, "could not remove emptied folders");
        }
        tracing::info!(files = planned.len(), "applied to original");
        Ok(applied)
    }
}

/// Fault injection for tests: fail the write with the given index.
mod fault {
    #[cfg(test)]
    thread_local! {
        pub static FAIL_AT: std::cell::Cell<Option<usize>> = const { std::cell::Cell::new(None) };
    }

    #[cfg(test)]
    pub fn check(i: usize) -> std::io::Result<()> {
        if FAIL_AT.with(|f| f.get()) == Some(i) {
            return Err(std::io::Error::other("injected failure"));
        }
        Ok(())
    }

    #[cfg(not(test))]
    pub fn check(_: usize) -> std::io::Result<()> {
        Ok(())
    }
}

/// Missing ancestor folders of added files, parents first.
fn dirs_to_create(original: &Path, planned: &[Planned<'_>]) -> Vec<String> {
    let mut dirs = BTreeSet::new();
    for p in planned {
        let mut parts: Vec<&str> = p.change.path.split('/').collect();
        parts.pop();
        for i in 1..=parts.len() {
            let rel = parts[..i].join("/");
            if fs::symlink_metadata(original.join(&rel)).is_err() {
                dirs.insert(rel);
            }
        }
    }
    let mut dirs: Vec<String> = dirs.into_iter().collect();
    dirs.sort_by_key(|d| d.matches('/').count());
    dirs
}

fn write_backup(
    dir: &Path,
    original: &Path,
    befores: Vec<(String, Option<crate::diff::DiskState>)>,
    created_dirs: Vec<String>,
) -> Result<Journal, WorkspaceError> {
    let blobs = dir.join(BLOBS);
    // Leftovers of a backup that crashed before its journal was written.
    if blobs.exists() {
        fs::remove_dir_all(&blobs).at(&blobs)?;
    }
    fs::create_dir_all(&blobs).at(&blobs)?;
    let mut entries = Vec::new();
    for (i, (path, state)) in befores.into_iter().enumerate() {
        let before = match state {
            None => Before::Absent,
            Some(s) => match s.content {
                Content::Symlink(target) => Before::Symlink { target },
                content => {
                    let blob = format!("{BLOBS}/{i}");
                    let blob_path = dir.join(&blob);
                    atomic_write(&blob_path, content.bytes(), 0o600).at(&blob_path)?;
                    Before::File {
                        blob,
                        mode: s.mode,
                        sha256: sha256_hex(content.bytes()),
                    }
                }
            },
        };
        entries.push(JournalEntry { path, before });
    }
    sync_dir(&blobs);
    let journal = Journal {
        version: JOURNAL_VERSION,
        original: original.to_path_buf(),
        entries,
        created_dirs,
        removed_dirs: Vec::new(),
    };
    save_journal(dir, &journal)?;
    Ok(journal)
}

fn save_journal(dir: &Path, journal: &Journal) -> Result<(), WorkspaceError> {
    let path = dir.join(JOURNAL);
    let json = serde_json::to_vec_pretty(journal).map_err(|source| WorkspaceError::Json {
        path: path.clone(),
        source,
    })?;
    atomic_write(&path, &json, 0o600).at(&path)
}

/// Write one change to the original.
fn write_change(p: &Planned<'_>) -> io::Result<()> {
    let target = &p.target;
    match (&p.change.kind, &p.change.new) {
        (ChangeKind::Deleted, _) => match fs::remove_file(target) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
            _ => Ok(()),
        },
        (_, Some(Content::Symlink(link))) => {
            create_parent(target)?;
            atomic_symlink(target, link)
        }
        (_, Some(content)) => {
            create_parent(target)?;
            let mode = match (p.change.new_mode, fs::metadata(target)) {
                (Some(m), _) => m,
                (None, Ok(meta)) => mode_of(&meta),
                (None, Err(_)) => 0o644,
            };
            atomic_write(target, content.bytes(), mode)
        }
        (_, None) => Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "change has no new content",
        )),
    }
}

fn create_parent(path: &Path) -> io::Result<()> {
    match path.parent() {
        Some(parent) => fs::create_dir_all(parent),
        None => Ok(()),
    }
}

impl AppliedChange {
    /// Reload a backup left by [`SessionCopy::apply_to_original`], e.g.
    /// after the process was killed, to roll back or commit it.
    pub fn load(dir: &Path) -> Result<AppliedChange, WorkspaceError> {
        let path = dir.join(JOURNAL);
        let bytes = match fs::read(&path) {
            Ok(b) => b,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                return Err(WorkspaceError::NoBackup {
                    path: dir.to_path_buf(),
                });
            }
            Err(e) => return Err(WorkspaceError::io(&path, e)),
        };
        let journal: Journal =
            serde_json::from_slice(&bytes).map_err(|source| WorkspaceError::Json {
                path: path.clone(),
                source,
            })?;
        if journal.version != JOURNAL_VERSION {
            return Err(WorkspaceError::BackupVersion {
                path,
                version: journal.version,
            });
        }
        Ok(AppliedChange {
            dir: dir.to_path_buf(),
            journal,
        })
    }

    /// True if `dir` holds a backup that was neither committed nor rolled
    /// back.
    pub fn pending(dir: &Path) -> bool {
        dir.join(JOURNAL).is_file()
    }

    /// Paths (relative, `/`-separated) the change touched.
    pub fn files(&self) -> Vec<String> {
        self.journal
            .entries
            .iter()
            .map(|e| e.path.clone())
            .collect()
    }

    /// The original workspace the change was applied to.
    pub fn original(&self) -> &Path {
        &self.journal.original
    }

    /// Where the backup lives.
    pub fn backup_dir(&self) -> &Path {
        &self.dir
    }

    /// Restore the original exactly as it was before the apply (contents,
    /// modes, symlinks; added files removed, deleted ones restored), then
    /// drop the backup. On failure the backup is kept for another try.
    pub fn rollback(self) -> Result<(), WorkspaceError> {
        self.restore()?;
        self.remove_backup()?;
        tracing::info!(files = self.journal.entries.len(), "rolled back");
        Ok(())
    }

    /// Keep the change: drop the backup.
    pub fn commit(self) -> Result<(), WorkspaceError> {
        self.remove_backup()
    }

    /// Put every touched path back; idempotent, skipping files already
    /// equal to their backup.
    fn restore(&self) -> Result<(), WorkspaceError> {
        let root = &self.journal.original;
        let mut failed = Vec::new();
        let mut first = None;
        let mut removed: Vec<&(String, u32)> = self.journal.removed_dirs.iter().collect();
        removed.sort_by_key(|(d, _)| d.matches('/').count());
        for (dir, mode) in removed {
            let path = root.join(dir);
            let result = fs::create_dir_all(&path)
                .and_then(|_| fs::set_permissions(&path, fs::Permissions::from_mode(*mode)));
            if let Err(e) = result {
                failed.push(dir.clone());
                first.get_or_insert_with(|| format!("{}: {e}", path.display()));
            }
        }
        for entry in self.journal.entries.iter().rev() {
            let path = root.join(&entry.path);
            if let Err(e) = self.restore_one(&path, &entry.before) {
                tracing::warn!(path = %entry.path, %e, "could not restore");
                failed.push(entry.path.clone());
                first.get_or_insert_with(|| format!("{}: {e}", path.display()));
            }
        }
        for dir in self.journal.created_dirs.iter().rev() {
            // Only if empty: whatever else appeared there is not ours.
            let _ = fs::remove_dir(root.join(dir));
        }
        match first {
            None => Ok(()),
            Some(first) => Err(WorkspaceError::RollbackIncomplete { failed, first }),
        }
    }

    fn restore_one(&self, path: &Path, before: &Before) -> io::Result<()> {
        match before {
            Before::Absent => match fs::symlink_metadata(path) {
                Ok(meta) if meta.is_dir() => Ok(()),
                Ok(_) => fs::remove_file(path),
                Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
                Err(e) => Err(e),
            },
            Before::Symlink { target } => {
                if crate::fsutil::read_link_string(path).ok().as_deref() == Some(target) {
                    return Ok(());
                }
                create_parent(path)?;
                atomic_symlink(path, target)
            }
            Before::File { blob, mode, sha256 } => {
                let unchanged = fs::symlink_metadata(path)
                    .is_ok_and(|m| m.is_file() && mode_of(&m) == *mode)
                    && hash_file(path).is_ok_and(|(h, _)| h == *sha256);
                if unchanged {
                    return Ok(());
                }
                let bytes = fs::read(self.dir.join(blob))?;
                if sha256_hex(&bytes) != *sha256 {
                    return Err(io::Error::new(
                        io::ErrorKind::InvalidData,
                        format!("backup blob {blob} is corrupt"),
                    ));
                }
                create_parent(path)?;
                atomic_write(path, &bytes, *mode)
            }
        }
    }

    /// Remove folders of the original left empty by deletions, when the
    /// copy no longer has them either; recorded first so rollback can
    /// recreate them.
    fn remove_emptied_dirs(&mut self, copy_root: &Path) -> Result<(), WorkspaceError> {
        let root = self.journal.original.clone();
        let mut candidates = BTreeSet::new();
        for e in &self.journal.entries {
            let mut parts: Vec<&str> = e.path.split('/').collect();
            parts.pop();
            for i in 1..=parts.len() {
                candidates.insert(parts[..i].join("/"));
            }
        }
        // Deepest first, so a parent sees its emptied children gone.
        let mut candidates: Vec<String> = candidates.into_iter().collect();
        candidates.sort_by_key(|d| std::cmp::Reverse(d.matches('/').count()));
        let mut removable = Vec::new();
        let mut gone: BTreeSet<String> = BTreeSet::new();
        for dir in candidates {
            if copy_root.join(&dir).exists() {
                continue;
            }
            let path = root.join(&dir);
            let Ok(meta) = fs::symlink_metadata(&path) else {
                continue;
            };
            if !meta.is_dir() {
                continue;
            }
            let Ok(mut entries) = fs::read_dir(&path) else {
                continue;
            };
            let empty = entries.all(|e| {
                e.ok().is_some_and(|e| {
                    let child = format!("{dir}/{}", e.file_name().to_string_lossy());
                    gone.contains(&child)
                })
            });
            if empty {
                gone.insert(dir.clone());
                removable.push((dir, mode_of(&meta)));
            }
        }
        if removable.is_empty() {
            return Ok(());
        }
        self.journal.removed_dirs = removable.clone();
        save_journal(&self.dir, &self.journal)?;
        for (dir, _) in removable {
            let path = root.join(&dir);
            fs::remove_dir(&path).at(&path)?;
        }
        Ok(())
    }

    /// Delete the journal and blobs (and the folder, if then empty).
    fn remove_backup(&self) -> Result<(), WorkspaceError> {
        let journal = self.dir.join(JOURNAL);
        match fs::remove_file(&journal) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => {
                return Err(WorkspaceError::io(&journal, e));
            }
            _ => {}
        }
        sync_dir(&self.dir);
        let blobs = self.dir.join(BLOBS);
        if blobs.exists() {
            fs::remove_dir_all(&blobs).at(&blobs)?;
        }
        let _ = fs::remove_dir(&self.dir);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::copy::SessionCopy;

    fn write(root: &Path, rel: &str, content: &[u8]) {
        let p = root.join(rel);
        fs::create_dir_all(p.parent().unwrap()).unwrap();
        fs::write(p, content).unwrap();
    }

    fn snapshot(root: &Path) -> Vec<(String, Vec<u8>)> {
        let mut out = Vec::new();
        let mut stack = vec![root.to_path_buf()];
        while let Some(dir) = stack.pop() {
            for e in fs::read_dir(&dir).unwrap() {
                let p = e.unwrap().path();
                let rel = p.strip_prefix(root).unwrap().to_string_lossy().into_owned();
                if p.is_dir() {
                    out.push((format!("{rel}/"), Vec::new()));
                    stack.push(p);
                } else {
                    out.push((rel, fs::read(&p).unwrap()));
                }
            }
        }
        out.sort();
        out
    }

    #[test]
    fn write_failure_midway_rolls_back() {
        let ws = tempfile::tempdir().unwrap();
        let state = tempfile::tempdir().unwrap();
        write(ws.path(), "a.txt", b"a\n");
        write(ws.path(), "b.txt", b"b\n");
        write(ws.path(), "c.txt", b"c\n");
        let copy = SessionCopy::create(ws.path(), &state.path().join("w")).unwrap();
        let w = copy.root();
        write(w, "a.txt", b"A\n");
        fs::remove_file(w.join("b.txt")).unwrap();
        write(w, "new/deep/d.txt", b"d\n");
        write(w, "z.txt", b"z\n");
        let changes = copy.changes().unwrap();
        assert_eq!(changes.len(), 4);
        let before = snapshot(ws.path());
        let backup = state.path().join("backup");
        fault::FAIL_AT.with(|f| f.set(Some(3)));
        let err = copy.apply_to_original(&changes, &backup).unwrap_err();
        fault::FAIL_AT.with(|f| f.set(None));
        assert!(
            matches!(err, ApplyError::Write { ref path, .. } if path == "z.txt"),
            "{err}"
        );
        assert_eq!(snapshot(ws.path()), before);
        assert!(!AppliedChange::pending(&backup));
        // And a clean apply works afterwards.
        copy.apply_to_original(&changes, &backup)
            .unwrap()
            .commit()
            .unwrap();
        assert_eq!(fs::read(ws.path().join("new/deep/d.txt")).unwrap(), b"d\n");
    }

    #[test]
    fn an_apply_already_in_place_is_a_no_op_and_other_edits_still_conflict() {
        let ws = tempfile::tempdir().unwrap();
        let state = tempfile::tempdir().unwrap();
        write(ws.path(), "a.txt", b"a\n");
        write(ws.path(), "b.txt", b"b\n");
        let copy = SessionCopy::create(ws.path(), &state.path().join("w")).unwrap();
        write(copy.root(), "a.txt", b"A\n");
        fs::remove_file(copy.root().join("b.txt")).unwrap();
        write(copy.root(), "n.txt", b"new\n");
        let changes = copy.changes().unwrap();
        let backup = state.path().join("backup");
        // Applied and committed, then the process died before it said so.
        copy.apply_to_original(&changes, &backup)
            .unwrap()
            .commit()
            .unwrap();
        let patched = snapshot(ws.path());
        // Applying the same change again (a resume) writes nothing and succeeds.
        copy.apply_to_original(&changes, &backup)
            .unwrap()
            .commit()
            .unwrap();
        assert_eq!(snapshot(ws.path()), patched);
        // A different edit of a touched file is still a conflict.
        write(ws.path(), "a.txt", b"someone else\n");
        let err = copy.apply_to_original(&changes, &backup).unwrap_err();
        assert!(
            matches!(&err, ApplyError::Conflicts(c) if c.len() == 1 && c[0].path == "a.txt"),
            "{err}"
        );
    }
}
