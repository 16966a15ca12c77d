//! Walking the session copy the way git sees it: `.gitignore` (and
//! `.ignore`) honoured at every level even without a `.git` folder, `.git`
//! skipped, hidden files kept, and the paths the session copy reserves
//! (top-level `evaluation/` and `solution.patch`) never shown. The same
//! rules as quire-workspace's copy, so the tools show what the diff sees.

use std::path::{Path, PathBuf};

use ignore::overrides::Override;
use ignore::{DirEntry, WalkBuilder};

/// One file or folder found by a walk.
#[derive(Debug, Clone)]
pub(crate) struct Found {
    pub path: PathBuf,
    pub is_dir: bool,
}

/// Whether `entry` is left out whatever the ignore files say.
fn always_skipped(root: &Path, entry: &DirEntry) -> bool {
    if entry.file_name() == ".git" {
        return true;
    }
    let Ok(rel) = entry.path().strip_prefix(root) else {
        return false;
    };
    let mut parts = rel.components();
    let first = parts.next().map(|c| c.as_os_str());
    let top_level = parts.next().is_none();
    let is_dir = entry.file_type().is_some_and(|t| t.is_dir());
    (first.is_some_and(|f| f == "evaluation") && (is_dir || !top_level))
        || (top_level && !is_dir && first.is_some_and(|f| f == "solution.patch"))
}

/// A builder for `walk_root` with the shared rules; `within` restricts the
/// walk to one subtree (its ancestors are entered, nothing else).
fn builder(walk_root: &Path, root: &Path, within: Option<PathBuf>) -> WalkBuilder {
    let mut b = WalkBuilder::new(walk_root);
    b.hidden(false)
        // The session copy has no .git; its .gitignore files still say
        // what is noise.
        .require_git(false)
        // Ignore files above the workspace and the user's global excludes
        // would make results depend on where the copy lives.
        .parents(false)
        .git_global(false)
        .follow_links(false)
        .sort_by_file_name(|a, b| a.cmp(b));
    let root = root.to_path_buf();
    b.filter_entry(move |e| {
        if always_skipped(&root, e) {
            return false;
        }
        match &within {
            Some(target) => e.path().starts_with(target) || target.starts_with(e.path()),
            None => true,
        }
    });
    b
}

fn found(entry: DirEntry) -> Found {
    Found {
        is_dir: entry.file_type().is_some_and(|t| t.is_dir()),
        path: entry.into_path(),
    }
}

/// Files and folders strictly below `start` (a folder inside `root`), down
/// to `max_depth` levels, in sorted walk order. Ignore files between `root`
/// and `start` apply; a `start` that is itself ignored is walked anyway,
/// since the model asked for it by name.
pub(crate) fn walk(
    root: &Path,
    start: &Path,
    max_depth: Option<usize>,
    overrides: Option<Override>,
) -> Vec<Found> {
    if start != root
        && let Ok(rel) = start.strip_prefix(root)
    {
        let base = rel.components().count();
        let mut b = builder(root, root, Some(start.to_path_buf()));
        b.max_depth(max_depth.map(|d| d + base));
        if let Some(o) = overrides.clone() {
            b.overrides(o);
        }
        let mut saw_start = false;
        let mut out = Vec::new();
        for entry in b.build().flatten() {
            if entry.path() == start {
                saw_start = true;
            } else if entry.depth() > base && entry.path().starts_with(start) {
                out.push(found(entry));
            }
        }
        if saw_start {
            return out;
        }
    }
    let mut b = builder(start, root, None);
    b.max_depth(max_depth);
    if let Some(o) = overrides {
        b.overrides(o);
    }
    b.build()
        .flatten()
        .filter(|e| e.depth() > 0)
        .map(found)
        .collect()
}

/// `path` relative to `root`, `/`-separated; `.` for the root itself.
pub(crate) fn rel_string(root: &Path, path: &Path) -> String {
    quire_workspace::relative_path(root, path)
}
