//! What the agent changed in the copy, and its unified diff.

use std::collections::BTreeSet;
use std::fs;
use std::io;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::copy::SessionCopy;
use crate::error::WorkspaceError;
use crate::fsutil::{is_binary, mode_of, read_link_string, sha256_hex};
use crate::manifest::ManifestEntry;
use crate::walk::walk;

/// Lines of context in [`unified_diff`], as git's default.
const CONTEXT_LINES: usize = 3;

/// Whether a file was added, modified or deleted in the copy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ChangeKind {
    Added,
    Modified,
    Deleted,
}

/// A file's content: text, raw bytes (binary), or a symlink's target.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Content {
    Text(String),
    Binary(Vec<u8>),
    Symlink(String),
}

impl Content {
    /// Classify file bytes as text or binary.
    pub fn from_bytes(bytes: Vec<u8>) -> Content {
        if is_binary(&bytes) {
            return Content::Binary(bytes);
        }
        match String::from_utf8(bytes) {
            Ok(s) => Content::Text(s),
            Err(e) => Content::Binary(e.into_bytes()),
        }
    }

    /// The bytes to write (a symlink's target text for a symlink).
    pub fn bytes(&self) -> &[u8] {
        match self {
            Content::Text(s) | Content::Symlink(s) => s.as_bytes(),
            Content::Binary(b) => b,
        }
    }

    /// True for content shown as "Binary files … differ".
    pub fn is_binary(&self) -> bool {
        matches!(self, Content::Binary(_))
    }

    /// True for a symlink's target.
    pub fn is_symlink(&self) -> bool {
        matches!(self, Content::Symlink(_))
    }

    /// Text for a text diff: the text, or a symlink's target.
    fn diff_text(&self) -> Option<&str> {
        match self {
            Content::Text(s) | Content::Symlink(s) => Some(s),
            Content::Binary(_) => None,
        }
    }
}

/// One changed file of the copy relative to the original at copy time.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileChange {
    /// `/`-separated path relative to the workspace root.
    pub path: String,
    pub kind: ChangeKind,
    /// The original's content (`None` for an added file, or when the
    /// original file has since disappeared).
    pub old: Option<Content>,
    /// The copy's content (`None` for a deleted file).
    pub new: Option<Content>,
    /// Permission bits of the original at copy time.
    pub old_mode: Option<u32>,
    /// Permission bits in the copy.
    pub new_mode: Option<u32>,
    /// The original no longer matches what was copied (or, for an added
    /// file, now exists): applying will be refused as a conflict.
    pub original_changed: bool,
}

/// A file's state on disk, if it is a file or symlink.
pub(crate) struct DiskState {
    pub content: Content,
    pub mode: u32,
}

pub(crate) fn read_state(path: &Path) -> io::Result<Option<DiskState>> {
    let meta = match fs::symlink_metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) if e.raw_os_error() == Some(libc::ENOTDIR) => return Ok(None),
        Err(e) => return Err(e),
    };
    let ft = meta.file_type();
    if ft.is_symlink() {
        Ok(Some(DiskState {
            content: Content::Symlink(read_link_string(path)?),
            mode: 0o777,
        }))
    } else if ft.is_file() {
        Ok(Some(DiskState {
            content: Content::from_bytes(fs::read(path)?),
            mode: mode_of(&meta),
        }))
    } else {
        Ok(None)
    }
}

/// True when `state` of the original still is what the manifest recorded.
pub(crate) fn original_matches(entry: &ManifestEntry, state: Option<&DiskState>) -> bool {
    match (state, &entry.symlink) {
        (
            Some(DiskState {
                content: Content::Symlink(t),
                ..
            }),
            Some(expected),
        ) => t == expected,
        (Some(s), None) if !s.content.is_symlink() => sha256_hex(s.content.bytes()) == entry.sha256,
        _ => false,
    }
}

/// True when the copy's `state` differs from what was copied.
fn copy_differs(entry: &ManifestEntry, state: &DiskState) -> bool {
    let content_differs = match (&state.content, entry.expected_copy_target()) {
        (Content::Symlink(t), Some(expected)) => t != expected,
        (Content::Symlink(_), None) => true,
        (_, Some(_)) => true,
        (c, None) => c.bytes().len() as u64 != entry.size || sha256_hex(c.bytes()) != entry.sha256,
    };
    let exec = |m: u32| m & 0o111 != 0;
    content_differs || (!state.content.is_symlink() && exec(state.mode) != exec(entry.mode))
}

impl SessionCopy {
    /// Every file that differs between the copy and the original as it was
    /// when copied, sorted by path. Ignored files of the copy (build output,
    /// caches) are not reported unless they were copied.
    pub fn changes(&self) -> Result<Vec<FileChange>, WorkspaceError> {
        let exclude = self.original().join(".git").join("info").join("exclude");
        let (walked, problems) = walk(self.root(), Some(&exclude), None);
        for p in problems {
            tracing::warn!(path = ?p.rel, message = %p.message, "walk problem in session copy");
        }
        let mut paths: BTreeSet<String> = walked
            .into_iter()
            .filter(|w| w.file_type.is_file() || w.file_type.is_symlink())
            .map(|w| w.rel)
            .collect();
        paths.extend(self.manifest().files.keys().cloned());
        let mut out = Vec::new();
        for path in paths {
            let copy_path = self.root().join(&path);
            let copy_state =
                read_state(&copy_path).map_err(|e| WorkspaceError::io(&copy_path, e))?;
            let entry = self.manifest().files.get(&path);
            let orig_path = self.original().join(&path);
            let orig_state =
                || read_state(&orig_path).map_err(|e| WorkspaceError::io(&orig_path, e));
            let change = match (entry, copy_state) {
                (None, None) => continue,
                (None, Some(new)) => FileChange {
                    path,
                    kind: ChangeKind::Added,
                    old: None,
                    new_mode: Some(new.mode),
                    new: Some(new.content),
                    old_mode: None,
                    original_changed: fs::symlink_metadata(&orig_path).is_ok(),
                },
                (Some(entry), None) => {
                    let orig = orig_state()?;
                    FileChange {
                        path,
                        kind: ChangeKind::Deleted,
                        original_changed: !original_matches(entry, orig.as_ref()),
                        old: orig.map(|s| s.content),
                        new: None,
                        old_mode: Some(entry.mode),
                        new_mode: None,
                    }
                }
                (Some(entry), Some(new)) => {
                    if !copy_differs(entry, &new) {
                        continue;
                    }
                    let orig = orig_state()?;
                    FileChange {
                        path,
                        kind: ChangeKind::Modified,
                        original_changed: !original_matches(entry, orig.as_ref()),
                        old: orig.map(|s| s.content),
                        new_mode: Some(new.mode),
                        new: Some(new.content),
                        old_mode: Some(entry.mode),
                    }
                }
            };
            out.push(change);
        }
        Ok(out)
    }
}

/// git's mode for a file: symlink, executable or regular.
fn git_mode(content: Option<&Content>, mode: Option<u32>) -> &'static str {
    if content.is_some_and(Content::is_symlink) {
        "120000"
    } else if mode.is_some_and(|m| m & 0o111 != 0) {
        "100755"
    } else {
        "100644"
    }
}

/// A git-style unified diff of the changes (`diff --git` headers, 3 lines
/// of context, `/dev/null` for additions and deletions, mode lines, and
/// "Binary files … differ" for binary content), readable by `git apply`
/// and by `quire_patch`.
pub fn unified_diff(changes: &[FileChange]) -> String {
    let mut out = String::new();
    for c in changes {
        let p = &c.path;
        let old_mode = git_mode(c.old.as_ref(), c.old_mode);
        let new_mode = git_mode(c.new.as_ref(), c.new_mode);
        out.push_str(&format!("diff --git a/{p} b/{p}\n"));
        match c.kind {
            ChangeKind::Added => out.push_str(&format!("new file mode {new_mode}\n")),
            ChangeKind::Deleted => out.push_str(&format!("deleted file mode {old_mode}\n")),
            ChangeKind::Modified if old_mode != new_mode => {
                out.push_str(&format!("old mode {old_mode}\nnew mode {new_mode}\n"));
            }
            ChangeKind::Modified => {}
        }
        let a = if c.kind == ChangeKind::Added {
            "/dev/null".to_string()
        } else {
            format!("a/{p}")
        };
        let b = if c.kind == ChangeKind::Deleted {
            "/dev/null".to_string()
        } else {
            format!("b/{p}")
        };
        let old_text = c.old.as_ref().map_or(Some(""), Content::diff_text);
        let new_text = c.new.as_ref().map_or(Some(""), Content::diff_text);
        match (old_text, new_text) {
            (Some(old), Some(new)) => {
                let hunks = quire_patch::unified_hunks(old, new, CONTEXT_LINES);
                if !hunks.is_empty() {
                    out.push_str(&format!("--- {a}\n+++ {b}\n{hunks}"));
                }
            }
            _ => {
                if c.old != c.new {
                    out.push_str(&format!("Binary files {a} and {b} differ\n"));
                }
            }
        }
    }
    out
}
