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

use quire_patch::HunkLine;
use regex::Regex;

use crate::search::is_task_file;
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
    // The task's own files name the task's words, not the project's
    // conventions.
    for (entry, rel) in files
        .iter()
        .filter(|e| !e.is_dir && !is_task_file(root, &e.path))
        .map(|e| (e, rel_string(root, &e.path)))
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

/// Per file of a unified diff, the new-side line numbers it adds, and for a
/// pure deletion the line it happened at (deleted files left out). A diff
/// that does not parse yields nothing: the section is a hint, not a check.
fn changed_lines(diff: &str) -> Vec<(String, Vec<usize>)> {
    let Ok(patch) = quire_patch::parse(diff) else {
        return Vec::new();
    };
    patch
        .files
        .iter()
        .filter(|file| !file.is_deletion())
        .map(|file| {
            let mut lines = Vec::new();
            for hunk in &file.hunks {
                let mut line = hunk.new_start;
                for hunk_line in &hunk.lines {
                    match hunk_line {
                        HunkLine::Add(_) => {
                            lines.push(line);
                            line += 1;
                        }
                        HunkLine::Remove(_) => lines.push(line),
                        HunkLine::Context(_) => line += 1,
                    }
                }
            }
            (file.path().to_string(), lines)
        })
        .filter(|(_, lines)| !lines.is_empty())
        .collect()
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
