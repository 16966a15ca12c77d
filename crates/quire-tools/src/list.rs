//! `list_files`: the layout below a folder as a compact indented tree.

use std::collections::{HashMap, VecDeque};
use std::path::Path;

use quire_config::AgentConfig;
use quire_core::ToolOutput;
use quire_workspace::SessionCopy;
use serde_json::{Map, Value};

use crate::paths::{PathProblem, resolve_dir_arg};
use crate::util::{int_arg, str_arg, text};
use crate::walk::{Found, walk};

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
    let found = walk(root, start, Some(depth), None);
    let tree = build(start, &found);
    render(&tree, max_entries)
}

#[derive(Debug, Default)]
struct Node {
    name: String,
    is_dir: bool,
    children: Vec<Node>,
    /// Child position by name, so huge folders build in linear time.
    index: HashMap<String, usize>,
}

impl Node {
    /// The index of child `name`, added if missing.
    fn child(&mut self, name: &str, is_dir: bool) -> usize {
        if let Some(&i) = self.index.get(name) {
            self.children[i].is_dir |= is_dir;
            return i;
        }
        self.children.push(Node {
            name: name.to_string(),
            is_dir,
            ..Node::default()
        });
        self.index.insert(name.to_string(), self.children.len() - 1);
        self.children.len() - 1
    }

    fn size(&self) -> usize {
        1 + self.children.iter().map(Node::size).sum::<usize>()
    }
}

fn build(start: &Path, found: &[Found]) -> Node {
    let mut root = Node {
        is_dir: true,
        ..Node::default()
    };
    for f in found {
        let Ok(rel) = f.path.strip_prefix(start) else {
            continue;
        };
        let parts: Vec<String> = rel
            .components()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect();
        let Some((last, parents)) = parts.split_last() else {
            continue;
        };
        let mut node = &mut root;
        for part in parents {
            let idx = node.child(part, true);
            node = &mut node.children[idx];
        }
        node.child(last, f.is_dir);
    }
    sort(&mut root);
    root
}

/// Folders first, then names, case-insensitively.
fn sort(node: &mut Node) {
    node.children.sort_by(|a, b| {
        b.is_dir
            .cmp(&a.is_dir)
            .then_with(|| a.name.to_lowercase().cmp(&b.name.to_lowercase()))
            .then_with(|| a.name.cmp(&b.name))
    });
    node.index.clear();
    for child in &mut node.children {
        sort(child);
    }
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
