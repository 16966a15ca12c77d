//! The parsed form of a unified diff.

use std::fmt::Write as _;

/// A whole patch: one entry per file section, in the order they appeared.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Patch {
    pub files: Vec<FilePatch>,
}

/// The changes to one file. `None` paths stand for `/dev/null`, so a
/// creation has no `old_path` and a deletion has no `new_path`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FilePatch {
    /// Path before the change, with any `a/` prefix removed.
    pub old_path: Option<String>,
    /// Path after the change, with any `b/` prefix removed.
    pub new_path: Option<String>,
    pub hunks: Vec<Hunk>,
}

impl FilePatch {
    /// True when the patch creates the file (`--- /dev/null`).
    pub fn is_creation(&self) -> bool {
        self.old_path.is_none()
    }

    /// True when the patch deletes the file (`+++ /dev/null`).
    pub fn is_deletion(&self) -> bool {
        self.new_path.is_none()
    }

    /// True when both sides name a file and the names differ.
    pub fn is_rename(&self) -> bool {
        matches!((&self.old_path, &self.new_path), (Some(a), Some(b)) if a != b)
    }

    /// The path to name in messages: the new path, or the old one for a
    /// deletion.
    pub fn path(&self) -> &str {
        self.new_path
            .as_deref()
            .or(self.old_path.as_deref())
            .unwrap_or("")
    }
}

/// One line of a hunk body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HunkLine {
    /// ` line`: present before and after.
    Context(String),
    /// `-line`: present only before.
    Remove(String),
    /// `+line`: present only after.
    Add(String),
}

impl HunkLine {
    /// The line's text without its prefix.
    pub fn text(&self) -> &str {
        match self {
            HunkLine::Context(t) | HunkLine::Remove(t) | HunkLine::Add(t) => t,
        }
    }
}

/// One `@@ -l,c +l,c @@` hunk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hunk {
    /// 1-based first old line as stated by the header (0 for an empty side).
    pub old_start: usize,
    pub old_count: usize,
    pub new_start: usize,
    pub new_count: usize,
    /// False when the header carried no line numbers (a bare `@@`), so the
    /// hunk must be located by its content alone.
    pub anchored: bool,
    /// Text after the closing `@@` (often a function name), without the
    /// separating space.
    pub section: String,
    pub lines: Vec<HunkLine>,
    /// The last old-side line has no newline (`\ No newline at end of file`).
    pub old_missing_newline: bool,
    /// The last new-side line has no newline.
    pub new_missing_newline: bool,
}

impl Hunk {
    /// The header as it would be printed, e.g. `@@ -3,4 +3,5 @@ fn main`.
    pub fn header(&self) -> String {
        let mut s = String::new();
        if self.anchored {
            // Writing to a String cannot fail.
            let _ = write!(
                s,
                "@@ -{} +{} @@",
                range(self.old_start, self.old_count),
                range(self.new_start, self.new_count)
            );
        } else {
            s.push_str("@@");
        }
        if !self.section.is_empty() {
            s.push(' ');
            s.push_str(&self.section);
        }
        s
    }

    /// Lines the file must contain before the change (context and removals).
    pub fn old_lines(&self) -> Vec<&str> {
        self.lines
            .iter()
            .filter_map(|l| match l {
                HunkLine::Context(t) | HunkLine::Remove(t) => Some(t.as_str()),
                HunkLine::Add(_) => None,
            })
            .collect()
    }

    /// Lines the file contains after the change (context and additions).
    pub fn new_lines(&self) -> Vec<&str> {
        self.lines
            .iter()
            .filter_map(|l| match l {
                HunkLine::Context(t) | HunkLine::Add(t) => Some(t.as_str()),
                HunkLine::Remove(_) => None,
            })
            .collect()
    }
}

fn range(start: usize, count: usize) -> String {
    if count == 1 {
        start.to_string()
    } else {
        format!("{start},{count}")
    }
}
