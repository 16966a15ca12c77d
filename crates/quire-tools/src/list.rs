//! `list_files`: the layout below a folder as a compact indented tree.

use std::borrow::Cow;
use std::collections::{HashMap, VecDeque};
use std::path::Path;

use quire_config::AgentConfig;
use quire_core::ToolOutput;
use quire_workspace::SessionCopy;
use serde_json::{Map, Value};

use crate::paths::{PathProblem, resolve_dir_arg};
use crate::util::{int_arg, str_arg, text};
use crate::walk::{Found, walk_each};

pub(crate) const TOOL: &str = "list_files";
/// The `[errors]` keys this tool renders (checked when a config loads).
pub(crate) const ERRORS: &[&str] = &[
    "cut",
    "empty",
    "not_a_dir",
    "not_found",
    "outside",
    "truncated",
];
const DEFAULT_DEPTH: usize = 3;
/// Deeper listings only cost tokens; search finds deep files better.
const MAX_DEPTH: usize = 12;

pub(crate) fn run(
    copy: &SessionCopy,
    config: &AgentConfig,
    args: &Map<String, Value>,
) -> ToolOutput {
    let raw = str_arg(args, "path").unwrap_or("");
    let depth = int_arg(args, "depth").map_or(DEFAULT_DEPTH, |d| (d as usize).clamp(1, MAX_DEPTH));
    let dir = match resolve_dir_arg(copy, raw) {
        Ok(dir) => dir,
        Err(problem) => {
            let key = match problem {
                PathProblem::Outside => "outside",
                PathProblem::NotFound => "not_found",
                PathProblem::NotADir => "not_a_dir",
            };
            return ToolOutput::error(text(config, TOOL, key, &[("path", raw)]));
        }
    };
    let max = config.limits.list_max_entries as usize;
    let (tree, cut) = tree_below(copy.root(), &dir.abs, depth, max);
    let mut out = if tree.is_empty() {
        text(config, TOOL, "empty", &[("path", &dir.rel)])
    } else {
        tree
    };
    if cut > 0 {
        out.push('\n');
        out.push_str(&text(
            config,
            TOOL,
            "truncated",
            &[("cut", &cut.to_string())],
        ));
    }
    ToolOutput::ok(out.clone(), out)
}

/// The layout of the whole session copy in the `list_files` format, for
/// the first message of a session. Beyond `max_entries` the deepest entries
/// are left out first, so every top-level entry stays visible; a folder
/// with entries left out shows `(+N)`. No truncation note: the caller's
/// message template frames the tree.
pub fn render_tree(copy: &SessionCopy, depth: usize, max_entries: usize) -> String {
    let root = copy.root();
    tree_below(root, root, depth.max(1), max_entries).0
}

/// The tree text and how many entries were cut.
pub(crate) fn tree_below(
    root: &Path,
    start: &Path,
    depth: usize,
    max_entries: usize,
) -> (String, usize) {
    // The walk's order does not matter: `build` sorts every folder.
    let found: Vec<Vec<Found>> =
        walk_each(root, start, Some(depth), None, Vec::new, |found, entry| {
            found.push(Found {
                is_dir: entry.file_type().is_some_and(|t| t.is_dir()),
                path: entry.into_path(),
            });
        });
    let tree = build(start, &found);
    render(&tree, max_entries)
}

#[derive(Debug, Default)]
struct Node<'a> {
    /// Borrowed from the walk's paths: no allocation per entry.
    name: Cow<'a, str>,
    is_dir: bool,
    children: Vec<Node<'a>>,
}

impl Node<'_> {
    fn size(&self) -> usize {
        1 + self.children.iter().map(Node::size).sum::<usize>()
    }
}

/// A node while the tree is built: children by index, since entries come
/// in any order (the walk is parallel).
struct Flat<'a> {
    name: Cow<'a, str>,
    is_dir: bool,
    children: Vec<usize>,
}

/// The tree of `found` below `start`, each folder sorted. One hash lookup
/// of the parent per entry: splitting every path into components and
/// looking each level up took as long as the walk on a 100k-file tree.
fn build<'a>(start: &Path, found: &'a [Vec<Found>]) -> Node<'a> {
    let count: usize = found.iter().map(Vec::len).sum();
    let mut nodes = Vec::with_capacity(count + 1);
    nodes.push(Flat {
        name: Cow::Borrowed(""),
        is_dir: true,
        children: Vec::new(),
    });
    let mut dirs = Dirs {
        start,
        by_path: HashMap::new(),
    };
    // Every entry is below `start` (the walk's guarantee); one that is not
    // finds no folder to hang from and is left out.
    for f in found.iter().flatten() {
        if f.is_dir {
            dirs.index(&f.path, &mut nodes);
            continue;
        }
        let (Some(parent), Some(name)) = (f.path.parent(), f.path.file_name()) else {
            continue;
        };
        let Some(parent) = dirs.index(parent, &mut nodes) else {
            continue;
        };
        nodes.push(Flat {
            name: name.to_string_lossy(),
            is_dir: false,
            children: Vec::new(),
        });
        let child = nodes.len() - 1;
        nodes[parent].children.push(child);
    }
    let mut slots: Vec<Option<Flat<'a>>> = nodes.into_iter().map(Some).collect();
    nested(&mut slots, 0)
}

/// The folders met so far, by the bytes of their path: the walk spells a
/// folder's path and its entries' parents alike, and bytes hash faster
/// than `Path`'s component-aware hash.
struct Dirs<'s, 'a> {
    start: &'s Path,
    by_path: HashMap<&'a [u8], usize>,
}

impl<'a> Dirs<'_, 'a> {
    /// The node of folder `dir` (below or at `start`), made with its
    /// ancestors when missing; `None` for a path outside `start`.
    fn index(&mut self, dir: &'a Path, nodes: &mut Vec<Flat<'a>>) -> Option<usize> {
        let key = dir.as_os_str().as_encoded_bytes();
        if let Some(&i) = self.by_path.get(key) {
            return Some(i);
        }
        // Only a path no longer than `start` can be it (`start` may be
        // spelt with a trailing `/`); the rest skip the component compare.
        if key.len() <= self.start.as_os_str().len() && dir == self.start {
            return Some(0);
        }
        let parent = self.index(dir.parent()?, nodes)?;
        nodes.push(Flat {
            name: dir.file_name()?.to_string_lossy(),
            is_dir: true,
            children: Vec::new(),
        });
        let i = nodes.len() - 1;
        nodes[parent].children.push(i);
        self.by_path.insert(key, i);
        Some(i)
    }
}

/// The built node `i` with its subtree, each folder sorted.
fn nested<'a>(slots: &mut [Option<Flat<'a>>], i: usize) -> Node<'a> {
    let Some(flat) = slots.get_mut(i).and_then(Option::take) else {
        return Node::default();
    };
    let mut children: Vec<Node<'a>> = flat.children.iter().map(|&c| nested(slots, c)).collect();
    children.sort_unstable_by(order);
    Node {
        name: flat.name,
        is_dir: flat.is_dir,
        children,
    }
}

/// Folders first, then names case-insensitively, then as written. ASCII
/// names (nearly all) compare without lowering a copy of each.
fn order(a: &Node, b: &Node) -> std::cmp::Ordering {
    b.is_dir
        .cmp(&a.is_dir)
        .then_with(|| {
            if a.name.is_ascii() && b.name.is_ascii() {
                a.name
                    .bytes()
                    .map(|c| c.to_ascii_lowercase())
                    .cmp(b.name.bytes().map(|c| c.to_ascii_lowercase()))
            } else {
                a.name.to_lowercase().cmp(&b.name.to_lowercase())
            }
        })
        .then_with(|| a.name.cmp(&b.name))
}

fn render(tree: &Node, max_entries: usize) -> (String, usize) {
    let mut tree_marks = Marks::default();
    mark(tree, max_entries, &mut tree_marks);
    let mut out = String::new();
    let mut shown = 0;
    write_children(tree, &[], 0, &tree_marks, &mut out, &mut shown);
    if out.ends_with('\n') {
        out.pop();
    }
    (out, tree.size() - 1 - shown)
}

/// Which nodes are shown, by their index path from the root.
#[derive(Default)]
struct Marks(std::collections::HashSet<Vec<usize>>);

/// Chooses up to `max` entries level by level, so a cap keeps the overview
/// (every top-level entry) rather than the first folder in full.
fn mark(root: &Node, max: usize, marks: &mut Marks) {
    let mut budget = max;
    let mut frontier: VecDeque<(Vec<usize>, &Node)> = VecDeque::new();
    frontier.push_back((Vec::new(), root));
    while let Some((path, node)) = frontier.pop_front() {
        for (i, child) in node.children.iter().enumerate() {
            if budget == 0 {
                return;
            }
            budget -= 1;
            let mut child_path = path.clone();
            child_path.push(i);
            marks.0.insert(child_path.clone());
            if !child.children.is_empty() {
                frontier.push_back((child_path, child));
            }
        }
    }
}

fn write_children(
    node: &Node,
    path: &[usize],
    indent: usize,
    marks: &Marks,
    out: &mut String,
    shown: &mut usize,
) {
    for (i, child) in node.children.iter().enumerate() {
        let mut child_path = path.to_vec();
        child_path.push(i);
        if !marks.0.contains(&child_path) {
            continue;
        }
        *shown += 1;
        for _ in 0..indent {
            out.push_str("  ");
        }
        out.push_str(&child.name);
        if child.is_dir {
            out.push('/');
            let hidden: usize = child
                .children
                .iter()
                .enumerate()
                .filter(|(j, _)| {
                    let mut p = child_path.clone();
                    p.push(*j);
                    !marks.0.contains(&p)
                })
                .map(|(_, c)| c.size())
                .sum();
            if hidden > 0 {
                out.push_str(&format!(" (+{hidden})"));
            }
        }
        out.push('\n');
        write_children(child, &child_path, indent + 1, marks, out, shown);
    }
}
