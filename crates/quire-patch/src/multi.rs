//! Applying a whole multi-file patch, all or nothing.

use std::collections::HashMap;

use crate::apply::{ApplyError, ApplyOptions, HunkPlacement, apply_with};
use crate::parse::{ParseError, parse};
use crate::repair::{Fix, repair};

/// Why a multi-file patch was not applied. Nothing was changed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PatchError {
    #[error("patch could not be parsed: {0}")]
    Parse(#[from] ParseError),
    #[error("patch could not be applied: {0}")]
    Apply(#[from] ApplyError),
}

/// What happened to one file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChangeKind {
    Created,
    Modified,
    Deleted,
}

/// The result for one file: its new content (`None` when deleted) and where
/// each of its hunks applied.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileOutcome {
    pub path: String,
    pub kind: ChangeKind,
    pub content: Option<String>,
    pub hunks: Vec<HunkPlacement>,
}

/// The result of a whole patch: files in the order first touched, and the
/// repairs that were needed to read the patch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PatchOutcome {
    pub files: Vec<FileOutcome>,
    pub fixes: Vec<Fix>,
}

struct Entry {
    original: Option<String>,
    current: Option<String>,
    hunks: Vec<HunkPlacement>,
}

/// Working state: file contents as the patch has left them so far.
struct Files<F> {
    read: F,
    entries: HashMap<String, Entry>,
    order: Vec<String>,
}

impl<F: FnMut(&str) -> Option<String>> Files<F> {
    fn entry(&mut self, path: &str) -> &mut Entry {
        let (read, order) = (&mut self.read, &mut self.order);
        self.entries.entry(path.to_string()).or_insert_with(|| {
            let original = read(path);
            order.push(path.to_string());
            Entry {
                current: original.clone(),
                original,
                hunks: Vec::new(),
            }
        })
    }

    fn current(&mut self, path: &str) -> Option<String> {
        self.entry(path).current.clone()
    }

    /// The path under which an existing file is found, also trying the
    /// path without a stray `a/` or `b/` prefix.
    fn existing(&mut self, path: &str) -> Option<String> {
        if self.current(path).is_some() {
            return Some(path.to_string());
        }
        let stripped = ["a/", "b/"]
            .iter()
            .filter_map(|prefix| path.strip_prefix(prefix))
            .filter(|s| !s.is_empty());
        for candidate in stripped {
            if self.current(candidate).is_some() {
                return Some(candidate.to_string());
            }
        }
        None
    }
}

/// Repair, parse and apply a multi-file patch against files provided by
/// `read` (which returns `None` for a file that does not exist). Returns the
/// new content of every touched file, or the first error and no result.
pub fn apply_patch<F>(
    patch_text: &str,
    read: F,
    opts: &ApplyOptions,
) -> Result<PatchOutcome, PatchError>
where
    F: FnMut(&str) -> Option<String>,
{
    let repaired = repair(patch_text);
    let patch = parse(&repaired.patch_text)?;
    let mut files = Files {
        read,
        entries: HashMap::new(),
        order: Vec::new(),
    };
    for fp in &patch.files {
        match (&fp.old_path, &fp.new_path) {
            (None, Some(new)) => {
                if files.current(new).is_some_and(|c| !c.is_empty()) {
                    return Err(ApplyError::FileExists { path: new.clone() }.into());
                }
                let applied = apply_with("", fp, opts)?;
                let e = files.entry(new);
                e.current = Some(applied.text);
                e.hunks.extend(applied.hunks);
            }
            (Some(old), new) => {
                let path = files
                    .existing(old)
                    .ok_or_else(|| ApplyError::FileMissing { path: old.clone() })?;
                let text = files.current(&path).unwrap_or_default();
                let applied = apply_with(&text, fp, opts)?;
                let target = match new {
                    None => None,
                    Some(n) if fp.is_rename() => {
                        if files.current(n).is_some() {
                            return Err(ApplyError::FileExists { path: n.clone() }.into());
                        }
                        Some(n.clone())
                    }
                    Some(_) => Some(path.clone()),
                };
                match target {
                    None => {
                        let e = files.entry(&path);
                        e.current = None;
                        e.hunks.extend(applied.hunks);
                    }
                    Some(t) => {
                        files.entry(&path).current = None;
                        let e = files.entry(&t);
                        e.current = Some(applied.text);
                        e.hunks.extend(applied.hunks);
                    }
                }
            }
            // The parser never yields a section without any path.
            (None, None) => {}
        }
    }
    let mut out = Vec::new();
    for path in files.order {
        let Some(e) = files.entries.remove(&path) else {
            continue;
        };
        let kind = match (&e.original, &e.current) {
            (None, Some(_)) => ChangeKind::Created,
            (Some(_), Some(_)) => ChangeKind::Modified,
            (Some(_), None) => ChangeKind::Deleted,
            (None, None) => continue,
        };
        if kind == ChangeKind::Modified && e.hunks.is_empty() && e.original == e.current {
            // Only read while resolving a path; not touched.
            continue;
        }
        out.push(FileOutcome {
            path,
            kind,
            content: e.current,
            hunks: e.hunks,
        });
    }
    Ok(PatchOutcome {
        files: out,
        fixes: repaired.fixes,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn fs(files: &[(&str, &str)]) -> BTreeMap<String, String> {
        files
            .iter()
            .map(|(p, c)| (p.to_string(), c.to_string()))
            .collect()
    }

    #[test]
    fn multi_file_create_modify_delete() {
        let files = fs(&[("a.txt", "1\n2\n3\n"), ("gone.txt", "bye\n")]);
        let patch = "```diff\n--- a/a.txt\n+++ b/a.txt\n@@ -1,3 +1,3 @@\n 1\n-2\n+two\n 3\n\
                     --- /dev/null\n+++ b/new.txt\n@@ -0,0 +1 @@\n+hello\n\
                     --- a/gone.txt\n+++ /dev/null\n@@ -1 +0,0 @@\n-bye\n```\n";
        let out = apply_patch(patch, |p| files.get(p).cloned(), &ApplyOptions::default()).unwrap();
        assert_eq!(out.files.len(), 3);
        assert_eq!(out.files[0].path, "a.txt");
        assert_eq!(out.files[0].kind, ChangeKind::Modified);
        assert_eq!(out.files[0].content.as_deref(), Some("1\ntwo\n3\n"));
        assert_eq!(out.files[1].kind, ChangeKind::Created);
        assert_eq!(out.files[1].content.as_deref(), Some("hello\n"));
        assert_eq!(out.files[2].kind, ChangeKind::Deleted);
        assert_eq!(out.files[2].content, None);
        assert_eq!(out.fixes, vec![Fix::StrippedCodeFences { fences: 2 }]);
    }

    #[test]
    fn all_or_nothing() {
        let files = fs(&[("a.txt", "1\n"), ("b.txt", "x\n")]);
        let patch = "--- a/a.txt\n+++ b/a.txt\n@@ -1 +1 @@\n-1\n+one\n--- a/b.txt\n+++ b/b.txt\n@@ -1 +1 @@\n-nope\n+y\n";
        let err =
            apply_patch(patch, |p| files.get(p).cloned(), &ApplyOptions::default()).unwrap_err();
        match err {
            PatchError::Apply(ApplyError::ContextNotFound { path, hunk, .. }) => {
                assert_eq!(path, "b.txt");
                assert_eq!(hunk, 1);
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn missing_and_existing_files() {
        let files = fs(&[("a.txt", "1\n")]);
        let read = |p: &str| files.get(p).cloned();
        let err = apply_patch(
            "--- a/zz\n+++ b/zz\n@@ -1 +1 @@\n-1\n+2\n",
            read,
            &ApplyOptions::default(),
        )
        .unwrap_err();
        assert_eq!(
            err,
            PatchError::Apply(ApplyError::FileMissing { path: "zz".into() })
        );
        let err = apply_patch(
            "--- /dev/null\n+++ b/a.txt\n@@ -0,0 +1 @@\n+x\n",
            read,
            &ApplyOptions::default(),
        )
        .unwrap_err();
        assert_eq!(
            err,
            PatchError::Apply(ApplyError::FileExists {
                path: "a.txt".into()
            })
        );
    }

    #[test]
    fn same_file_twice_and_rename() {
        let files = fs(&[("a.txt", "1\n2\n")]);
        let patch = "--- a/a.txt\n+++ b/a.txt\n@@ -1 +1 @@\n-1\n+one\n\
                     --- a/a.txt\n+++ b/a.txt\n@@ -2 +2 @@\n-2\n+two\n\
                     diff --git a/a.txt b/c.txt\nrename from a.txt\nrename to c.txt\n";
        let out = apply_patch(patch, |p| files.get(p).cloned(), &ApplyOptions::default()).unwrap();
        assert_eq!(out.files.len(), 2);
        assert_eq!(out.files[0].kind, ChangeKind::Deleted);
        assert_eq!(out.files[1].path, "c.txt");
        assert_eq!(out.files[1].content.as_deref(), Some("one\ntwo\n"));
    }

    #[test]
    fn stray_prefix_fallback() {
        let files = fs(&[("x.rs", "a\n")]);
        let patch = "--- a/x.rs\n+++ a/x.rs\n@@ -1 +1 @@\n-a\n+b\n";
        let out = apply_patch(patch, |p| files.get(p).cloned(), &ApplyOptions::default()).unwrap();
        assert_eq!(out.files.len(), 1);
        assert_eq!(out.files[0].path, "x.rs");
    }
}
