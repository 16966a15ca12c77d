//! Where the definitions a change touched are named elsewhere in the
//! project: the stubs, export lists, docs and tests that go with them.
//!
//! The note-taker reads a session as a digest of events, so it only knows
//! the places the session happened to visit. A map that says "a new public
//! function also needs its `__all__` entry, its stub and its docs line"
//! saves later sessions a call, and the places its neighbours are named in
//! are where that rule comes from, even after a fix that touched only one
//! function body.

use std::collections::BTreeMap;
use std::path::Path;

use regex::Regex;

use crate::symbols::{Syntax, definitions};
use crate::walk::{rel_string, walk};

/// One top-level definition the change touched, and where it is named.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mentions {
    pub name: String,
    /// The file the definition is in.
    pub defined_in: String,
    /// Where it is named as a quoted string in its own file (an export
    /// list such as `__all__`, a registry).
    pub quoted_in_own_file: Option<Place>,
    /// Other files naming it, in path order.
    pub elsewhere: Vec<Place>,
    /// Files naming it past [`MAX_FILES`].
    pub more_files: usize,
}

/// A file that names a definition: how often, and the first line that
/// does (trimmed, capped), so a reader sees which construct it is (a stub,
/// a docs directive, an export list) without opening the file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Place {
    pub file: String,
    pub times: usize,
    pub first_line: String,
}

/// Characters of a place's first line kept.
const LINE_CHARS: usize = 70;

/// Definitions looked up at most (the first the diff touches).
const MAX_NAMES: usize = 4;
/// Files listed per definition at most.
const MAX_FILES: usize = 8;
/// Files above this size are not read.
const MAX_FILE_BYTES: u64 = 1024 * 1024;
/// Files read at most: the digest is not worth a walk of a huge tree.
const MAX_FILES_READ: usize = 5_000;

/// The top-level definitions `diff` (unified, paths relative to `root`)
/// adds or changes in code files under `root` (the tree as edited), each
/// with where else the project names it. Empty when nothing applies.
pub fn changed_definitions_named_elsewhere(root: &Path, diff: &str) -> Vec<Mentions> {
    let mut names: Vec<(String, String)> = Vec::new();
    for (path, lines) in changed_lines(diff) {
        let Some(syntax) = Syntax::of(&path) else {
            continue;
        };
        let Ok(content) = std::fs::read_to_string(root.join(&path)) else {
            continue;
        };
        let file_lines = crate::util::split_lines(&content);
        let defs = definitions(&file_lines, syntax);
        for line in lines {
            let top = defs
                .iter()
                .filter(|d| d.depth == 0 && d.start <= line && line <= d.end)
                .min_by_key(|d| d.start);
            if let Some(def) = top
                && !names.iter().any(|(n, _)| n == &def.name)
                && names.len() < MAX_NAMES
            {
                names.push((def.name.clone(), path.clone()));
            }
        }
    }
    if names.is_empty() {
        return Vec::new();
    }
    let patterns: Vec<(Regex, Regex)> = names
        .iter()
        .filter_map(|(name, _)| {
            let word = Regex::new(&format!(r"\b{}\b", regex::escape(name))).ok()?;
            let quoted = Regex::new(&format!(r#"['"]{}['"]"#, regex::escape(name))).ok()?;
            Some((word, quoted))
        })
        .collect();
    if patterns.len() != names.len() {
        return Vec::new();
    }
    let mut found: Vec<Mentions> = names
        .iter()
        .map(|(name, path)| Mentions {
            name: name.clone(),
            defined_in: path.clone(),
            quoted_in_own_file: None,
            elsewhere: Vec::new(),
            more_files: 0,
        })
        .collect();
    let mut per_file: Vec<BTreeMap<String, Place>> = vec![BTreeMap::new(); names.len()];
    let files = walk(root, root, None, None);
    for (entry, rel) in files
        .iter()
        .filter(|e| !e.is_dir)
        .map(|e| (e, rel_string(root, &e.path)))
        .filter(|(_, rel)| !is_task_file(rel))
        .take(MAX_FILES_READ)
    {
        if std::fs::metadata(&entry.path).map_or(true, |m| m.len() > MAX_FILE_BYTES) {
            continue;
        }
        let Ok(text) = std::fs::read_to_string(&entry.path) else {
            continue;
        };
        for (i, (word, quoted)) in patterns.iter().enumerate() {
            let pattern = if rel == found[i].defined_in {
                quoted
            } else {
                word
            };
            let Some(place) = place(&rel, pattern, &text) else {
                continue;
            };
            if rel == found[i].defined_in {
                found[i].quoted_in_own_file = Some(place);
            } else {
                per_file[i].insert(rel.clone(), place);
            }
        }
    }
    for (mentions, files) in found.iter_mut().zip(per_file) {
        mentions.more_files = files.len().saturating_sub(MAX_FILES);
        mentions.elsewhere = files.into_values().take(MAX_FILES).collect();
    }
    // A definition named nowhere else (a new test class) teaches nothing
    // about what goes with a change.
    found.retain(|m| m.quoted_in_own_file.is_some() || !m.elsewhere.is_empty());
    found
}

/// How often `pattern` occurs in `text`, with the first line it is on.
fn place(rel: &str, pattern: &Regex, text: &str) -> Option<Place> {
    let first = pattern.find(text)?;
    let line_start = text[..first.start()].rfind('\n').map_or(0, |i| i + 1);
    let line_end = text[first.start()..]
        .find('\n')
        .map_or(text.len(), |i| first.start() + i);
    let line = text[line_start..line_end].trim();
    let mut first_line: String = line.chars().take(LINE_CHARS).collect();
    if line.chars().count() > LINE_CHARS {
        first_line.push('…');
    }
    Some(Place {
        file: rel.to_string(),
        times: pattern.find_iter(text).count(),
        first_line,
    })
}

/// The task's own files (`prompt.txt`, `metadata.json`) name the task's
/// words, not the project's conventions.
fn is_task_file(rel: &str) -> bool {
    rel == "prompt.txt" || rel == "metadata.json"
}

/// Per file of a unified diff, the new-side line numbers it adds, and for a
/// pure deletion the line it happened at. Hunk lengths are counted, so a
/// removed line that begins `-- ` is not taken for a file header.
fn changed_lines(diff: &str) -> Vec<(String, Vec<usize>)> {
    let mut out: Vec<(String, Vec<usize>)> = Vec::new();
    let mut line = 0usize;
    let mut current: Option<usize> = None;
    // Old-side and new-side lines left in the current hunk.
    let (mut old_left, mut new_left) = (0usize, 0usize);
    for text in diff.lines() {
        if old_left == 0 && new_left == 0 {
            if let Some(path) = text.strip_prefix("+++ ") {
                let path = path.trim().trim_start_matches("b/").to_string();
                current = (path != "/dev/null").then(|| {
                    out.push((path, Vec::new()));
                    out.len() - 1
                });
            } else if let Some(header) = text.strip_prefix("@@ ") {
                // `@@ -a,b +c,d @@`: new-side lines start at c.
                let range = |sign: char| -> (usize, usize) {
                    let part = header
                        .split_whitespace()
                        .find_map(|p| p.strip_prefix(sign))
                        .unwrap_or("0");
                    let mut it = part.split(',');
                    let start = it.next().and_then(|n| n.parse().ok()).unwrap_or(0);
                    let len = it.next().map_or(Some(1), |n| n.parse().ok()).unwrap_or(0);
                    (start, len)
                };
                let (_, old_len) = range('-');
                let (new_start, new_len) = range('+');
                (line, old_left, new_left) = (new_start, old_len, new_len);
            }
            continue;
        }
        let changed = if text.starts_with('+') {
            new_left = new_left.saturating_sub(1);
            true
        } else if text.starts_with('-') {
            old_left = old_left.saturating_sub(1);
            true
        } else {
            if !text.starts_with('\\') {
                old_left = old_left.saturating_sub(1);
                new_left = new_left.saturating_sub(1);
            }
            false
        };
        if changed && let Some(index) = current {
            out[index].1.push(line);
        }
        // Added and context lines move the new side on; removed ones do not.
        if !text.starts_with('-') && !text.starts_with('\\') {
            line += 1;
        }
    }
    out.retain(|(_, lines)| !lines.is_empty());
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_diff_yields_the_new_side_lines_it_changes() {
        let diff = "--- a/m.py\n+++ b/m.py\n@@ -3,3 +3,4 @@\n ctx\n-old\n+new\n+more\n ctx\n\
                    --- a/gone.py\n+++ /dev/null\n@@ -1 +0,0 @@\n-x\n\
                    --- a/q.sql\n+++ b/q.sql\n@@ -1,2 +1,1 @@\n--- a comment\n keep\n";
        assert_eq!(
            changed_lines(diff),
            vec![
                ("m.py".to_string(), vec![4, 4, 5]),
                ("q.sql".to_string(), vec![1])
            ]
        );
    }

    #[test]
    fn a_changed_definition_is_listed_with_the_places_that_name_it() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        for (path, text) in [
            (
                "m.py",
                "__all__ = ['old']\n\n\ndef old():\n    pass\n\n\ndef fresh():\n    return 1\n",
            ),
            ("prompt.txt", "add fresh()\n"),
            ("evaluation/test_m.py", "fresh()\n"),
            ("docs/api.rst", "old\n"),
        ] {
            let path = root.join(path);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        }
        let diff = "--- a/m.py\n+++ b/m.py\n@@ -5,0 +6,4 @@\n+\n+\n+def fresh():\n+    return 1\n";
        let found = changed_definitions_named_elsewhere(root, diff);
        assert!(
            found.is_empty(),
            "prompt.txt and evaluation/ are not the project's, and a name found nowhere else is left out: {found:?}"
        );
        // Once exported and documented, it is listed with those places.
        std::fs::write(root.join("m.py"), "__all__ = ['old', 'fresh']\n\n\ndef old():\n    pass\n\n\ndef fresh():\n    return 1\n").unwrap();
        std::fs::write(root.join("docs/api.rst"), "old\nfresh\n").unwrap();
        let found = changed_definitions_named_elsewhere(root, diff);
        assert_eq!(
            found,
            vec![Mentions {
                name: "fresh".into(),
                defined_in: "m.py".into(),
                quoted_in_own_file: Some(Place {
                    file: "m.py".into(),
                    times: 1,
                    first_line: "__all__ = ['old', 'fresh']".into(),
                }),
                elsewhere: vec![Place {
                    file: "docs/api.rst".into(),
                    times: 1,
                    first_line: "fresh".into(),
                }],
                more_files: 0,
            }],
            "blank lines before it belong to no definition"
        );
        assert!(changed_definitions_named_elsewhere(root, "").is_empty());
    }
}
