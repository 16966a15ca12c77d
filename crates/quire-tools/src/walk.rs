//! Walking the session copy the way git sees it: `.gitignore` (and
//! `.ignore`) honoured at every level even without a `.git` folder, `.git`
//! skipped, hidden files kept, and the paths the session copy reserves
//! (top-level `evaluation/` and `solution.patch`) never shown. The same
//! rules as quire-workspace's copy, so the tools show what the diff sees.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, PoisonError};

use ignore::overrides::Override;
use ignore::{DirEntry, ParallelVisitor, ParallelVisitorBuilder, WalkBuilder, WalkState};

/// One file or folder found by a walk.
#[derive(Debug, Clone)]
pub(crate) struct Found {
    pub path: PathBuf,
    pub is_dir: bool,
}

/// Whether `entry` is left out whatever the ignore files say.
/// `in_evaluation`: the walk starts inside the top-level `evaluation/`, so
/// any entry may be in it; otherwise only one named `evaluation` or
/// `solution.patch` can be reserved, and the rest skip the path work (this
/// runs for every entry of the walk).
fn always_skipped(root: &Path, entry: &DirEntry, in_evaluation: bool) -> bool {
    let name = entry.file_name();
    if name == ".git" {
        return true;
    }
    if !in_evaluation && name != "evaluation" && name != "solution.patch" {
        return false;
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
    let in_evaluation = walk_root
        .strip_prefix(root)
        .ok()
        .and_then(|rel| rel.components().next())
        .is_some_and(|first| first.as_os_str() == "evaluation");
    let root = root.to_path_buf();
    b.filter_entry(move |e| {
        if always_skipped(&root, e, in_evaluation) {
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
    if let Some((b, base)) = scoped_builder(root, start, max_depth, overrides.as_ref()) {
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
    plain_builder(root, start, max_depth, overrides)
        .build()
        .flatten()
        .filter(|e| e.depth() > 0)
        .map(found)
        .collect()
}

/// The entries [`walk`] would yield, on every core and in no particular
/// order, each handed to `visit` with its thread's state (made by `make`);
/// returns the states. On a 100k-file tree the walk (and what `visit` does
/// per file, e.g. a search) is most of a tool call, and one core of several
/// left the call at twice ripgrep's time. Callers that show entries in walk
/// order sort what they keep: `Path`'s order (by components) is the sorted
/// walk's order.
pub(crate) fn walk_each<S, M, V>(
    root: &Path,
    start: &Path,
    max_depth: Option<usize>,
    overrides: Option<Override>,
    make: M,
    visit: V,
) -> Vec<S>
where
    S: Send,
    M: Fn() -> S + Sync,
    V: Fn(&mut S, DirEntry) + Sync,
{
    let states = Mutex::new(Vec::new());
    if let Some((b, base)) = scoped_builder(root, start, max_depth, overrides.as_ref()) {
        let saw_start = AtomicBool::new(false);
        let keep = |state: &mut S, entry: DirEntry| {
            if entry.path() == start {
                saw_start.store(true, Ordering::Relaxed);
            } else if entry.depth() > base && entry.path().starts_with(start) {
                visit(state, entry);
            }
        };
        b.build_parallel().visit(&mut Visitors {
            make: &make,
            visit: &keep,
            states: &states,
        });
        if saw_start.load(Ordering::Relaxed) {
            return states.into_inner().unwrap_or_else(PoisonError::into_inner);
        }
    }
    let keep = |state: &mut S, entry: DirEntry| {
        if entry.depth() > 0 {
            visit(state, entry);
        }
    };
    plain_builder(root, start, max_depth, overrides)
        .build_parallel()
        .visit(&mut Visitors {
            make: &make,
            visit: &keep,
            states: &states,
        });
    states.into_inner().unwrap_or_else(PoisonError::into_inner)
}

/// For a `start` below `root`: a walk from `root` limited to `start` (so
/// the ignore files between them apply), with the depth of `start`, which
/// the walks use to drop `start` itself and count `max_depth` from it.
/// `None` when `start` is `root` or not under it.
fn scoped_builder(
    root: &Path,
    start: &Path,
    max_depth: Option<usize>,
    overrides: Option<&Override>,
) -> Option<(WalkBuilder, usize)> {
    if start == root {
        return None;
    }
    let base = start.strip_prefix(root).ok()?.components().count();
    let mut b = builder(root, root, Some(start.to_path_buf()));
    b.max_depth(max_depth.map(|d| d + base));
    if let Some(o) = overrides {
        b.overrides(o.clone());
    }
    Some((b, base))
}

/// A walk from `start` itself, `max_depth` levels deep.
fn plain_builder(
    root: &Path,
    start: &Path,
    max_depth: Option<usize>,
    overrides: Option<Override>,
) -> WalkBuilder {
    let mut b = builder(start, root, None);
    b.max_depth(max_depth);
    if let Some(o) = overrides {
        b.overrides(o);
    }
    b
}

/// Makes one [`Visitor`] per walking thread.
struct Visitors<'a, S, M, V> {
    make: &'a M,
    visit: &'a V,
    states: &'a Mutex<Vec<S>>,
}

impl<'a, S, M, V> ParallelVisitorBuilder<'a> for Visitors<'a, S, M, V>
where
    S: Send + 'a,
    M: Fn() -> S + Sync,
    V: Fn(&mut S, DirEntry) + Sync,
{
    fn build(&mut self) -> Box<dyn ParallelVisitor + 'a> {
        Box::new(Visitor {
            state: Some((self.make)()),
            visit: self.visit,
            states: self.states,
        })
    }
}

/// One walking thread's state; handed back when the walk drops it.
struct Visitor<'a, S: Send, V> {
    state: Option<S>,
    visit: &'a V,
    states: &'a Mutex<Vec<S>>,
}

impl<S, V> ParallelVisitor for Visitor<'_, S, V>
where
    S: Send,
    V: Fn(&mut S, DirEntry) + Sync,
{
    fn visit(&mut self, entry: Result<DirEntry, ignore::Error>) -> WalkState {
        // Unreadable entries are skipped, as the serial walk's `flatten` does.
        if let (Ok(entry), Some(state)) = (entry, self.state.as_mut()) {
            (self.visit)(state, entry);
        }
        WalkState::Continue
    }
}

impl<S: Send, V> Drop for Visitor<'_, S, V> {
    fn drop(&mut self) {
        if let Some(state) = self.state.take() {
            self.states
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push(state);
        }
    }
}

/// `path` relative to `root`, `/`-separated; `.` for the root itself.
pub(crate) fn rel_string(root: &Path, path: &Path) -> String {
    quire_workspace::relative_path(root, path)
}
