//! Walking a workspace the way git sees it.
//!
//! `.gitignore` and `.ignore` files inside the workspace are honoured at
//! every level even without a `.git` directory (the copy has none); ignore
//! files above the root and the user's global excludes are not, so results
//! do not depend on where a copy lives. Hidden files are kept. Always
//! skipped: `.git` at any depth, a top-level `evaluation/` folder and a
//! top-level `solution.patch`.

use std::fs::FileType;
use std::path::{Path, PathBuf};

use ignore::WalkBuilder;

/// One entry found by a walk (never the root itself).
pub(crate) struct Walked {
    /// `/`-separated path relative to the root.
    pub rel: String,
    pub path: PathBuf,
    pub file_type: FileType,
}

/// A walk problem: the path if known, and the message.
pub(crate) struct WalkProblem {
    pub rel: Option<String>,
    pub message: String,
}

/// Whether a root-relative entry is excluded regardless of ignore files.
pub(crate) fn always_skipped(rel: &str, is_dir: bool) -> bool {
    // Anything named `evaluation` at the top (folder, or a link to one).
    let first = rel.split('/').next().unwrap_or("");
    rel.split('/').any(|c| c == ".git")
        || rel == "evaluation"
        || (first == "evaluation" && rel.contains('/'))
        || (!is_dir && rel == "solution.patch")
}

/// `/`-separated relative form of `path` under `root`, if it is valid UTF-8.
pub(crate) fn rel_of(root: &Path, path: &Path) -> Option<String> {
    let rel = path.strip_prefix(root).ok()?;
    let mut parts = Vec::new();
    for c in rel.components() {
        parts.push(c.as_os_str().to_str()?.to_string());
    }
    Some(parts.join("/"))
}

/// Walk `root`. `extra_ignore` is an additional gitignore-style file (the
/// original's `.git/info/exclude` when walking the copy); `exclude` is a
/// directory never to enter (the copy's destination, should it lie inside
/// the original).
pub(crate) fn walk(
    root: &Path,
    extra_ignore: Option<&Path>,
    exclude: Option<&Path>,
) -> (Vec<Walked>, Vec<WalkProblem>) {
    let mut b = WalkBuilder::new(root);
    b.hidden(false)
        .git_ignore(true)
        .git_exclude(true)
        .git_global(false)
        .ignore(true)
        .parents(false)
        .require_git(false)
        .follow_links(false)
        .sort_by_file_name(|a, b| a.cmp(b));
    if let Some(err) = extra_ignore
        .filter(|p| p.is_file())
        .and_then(|extra| b.add_ignore(extra))
    {
        tracing::warn!(%err, "could not read extra ignore file");
    }
    let root_owned = root.to_path_buf();
    let exclude_owned = exclude.map(Path::to_path_buf);
    b.filter_entry(move |e| {
        if exclude_owned.as_deref() == Some(e.path()) {
            return false;
        }
        let is_dir = e.file_type().is_some_and(|t| t.is_dir());
        match rel_of(&root_owned, e.path()) {
            Some(rel) if !rel.is_empty() => !always_skipped(&rel, is_dir),
            _ => e.file_name() != ".git",
        }
    });
    let mut found = Vec::new();
    let mut problems = Vec::new();
    for item in b.build() {
        match item {
            Ok(entry) => {
                if entry.depth() == 0 {
                    continue;
                }
                let Some(file_type) = entry.file_type() else {
                    continue;
                };
                match rel_of(root, entry.path()) {
                    Some(rel) => found.push(Walked {
                        rel,
                        path: entry.path().to_path_buf(),
                        file_type,
                    }),
                    None => problems.push(WalkProblem {
                        rel: Some(entry.path().to_string_lossy().into_owned()),
                        message: "path is not valid UTF-8".to_string(),
                    }),
                }
            }
            Err(err) => {
                let rel = match &err {
                    ignore::Error::WithPath { path, .. } => rel_of(root, path),
                    _ => None,
                };
                problems.push(WalkProblem {
                    rel,
                    message: err.to_string(),
                });
            }
        }
    }
    (found, problems)
}
