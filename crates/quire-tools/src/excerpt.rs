//! Code shown to the model by something other than `read_file`: where a
//! file's definitions are, their lines numbered exactly as `read_file`
//! numbers them, and the record that the file was seen, so `edit_file` can
//! change what was shown without a read first. The notes extension uses it
//! to show the code the notes point to before the first request.

use crate::state::WorkspaceState;
use crate::symbols::{Syntax, definitions};
use crate::util::{content_hash, number_lines, split_lines};

/// One function, class or method of a code file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CodeDefinition {
    pub name: String,
    /// `Outer.inner` for a method or nested definition.
    pub qualified: String,
    /// `class`, `def`, `fn`, … as the file spells it.
    pub kind: &'static str,
    /// 1-based inclusive line span, decorators included.
    pub start: usize,
    pub end: usize,
    /// 0 for a top-level definition.
    pub depth: usize,
}

/// The definitions of `text` (the content of `path`), or `None` when
/// `path` is not a code file the symbol lookup knows.
pub fn code_definitions(path: &str, text: &str) -> Option<Vec<CodeDefinition>> {
    let syntax = Syntax::of(path)?;
    let lines = split_lines(text);
    Some(
        definitions(&lines, syntax)
            .into_iter()
            .map(|d| CodeDefinition {
                name: d.name,
                qualified: d.qualified,
                kind: d.kind,
                start: d.start,
                end: d.end,
                depth: d.depth,
            })
            .collect(),
    )
}

/// Lines `first..=last` (1-based, clamped to the text) of `text`, numbered
/// as `read_file` shows them; empty when the range holds no line.
pub fn numbered_lines(text: &str, first: usize, last: usize) -> String {
    let lines = split_lines(text);
    let first = first.max(1);
    let last = last.min(lines.len());
    if first > last {
        return String::new();
    }
    number_lines(&lines[first - 1..last], first)
}

/// How many lines `read_file` counts in `text`.
pub fn line_count(text: &str) -> usize {
    split_lines(text).len()
}

/// The last line of the import block at the top of a Python file
/// (`import x`, `from x import (...)` over several lines), if it has one
/// before its first definition.
pub fn import_block_end(text: &str) -> Option<usize> {
    let mut last = None;
    let mut open_paren = false;
    for (i, line) in text.lines().enumerate() {
        let trimmed = line.trim_start();
        if open_paren {
            last = Some(i + 1);
            open_paren = !line.contains(')');
            continue;
        }
        if trimmed.starts_with("import ") || trimmed.starts_with("from ") {
            last = Some(i + 1);
            open_paren = line.contains('(') && !line.contains(')');
        } else if trimmed.starts_with("def ")
            || trimmed.starts_with("class ")
            || trimmed.starts_with("async def ")
            || trimmed.starts_with('@')
        {
            break;
        }
    }
    last
}

impl WorkspaceState {
    /// Records that the model was shown (part of) `path`, whose content is
    /// `content`: edits of it need no read first, as after `read_file`.
    pub fn mark_shown(&mut self, path: &str, content: &[u8]) {
        self.mark_read(path, content_hash(content));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn definitions_and_numbered_lines_match_read_file() {
        let text = "import os\n\nclass Book:\n    def get(self, code):\n        return code\n\n\ndef helper():\n    pass\n";
        let defs = code_definitions("src/book.py", text).unwrap();
        let names: Vec<(&str, usize, usize)> = defs
            .iter()
            .map(|d| (d.qualified.as_str(), d.start, d.end))
            .collect();
        assert_eq!(
            names,
            vec![("Book", 3, 5), ("Book.get", 4, 5), ("helper", 8, 9)]
        );
        assert_eq!(
            numbered_lines(text, 4, 5),
            "4|     def get(self, code):\n5|         return code"
        );
        assert_eq!(numbered_lines(text, 9, 40), "9|     pass");
        assert_eq!(numbered_lines(text, 12, 14), "");
        assert_eq!(line_count(text), 9);
        assert!(code_definitions("notes.md", text).is_none());
    }

    #[test]
    fn the_import_block_ends_at_its_last_import() {
        let text = "\"\"\"Doc.\"\"\"\nimport os\nfrom x import (\n    a,\n    b,\n)\n\nFOO = 1\n\ndef f():\n    import sys\n";
        assert_eq!(import_block_end(text), Some(6));
        assert_eq!(import_block_end("def f():\n    import os\n"), None);
        assert_eq!(import_block_end("x = 1\n"), None);
    }

    #[test]
    fn shown_files_count_as_read() {
        let mut state = WorkspaceState::default();
        assert!(!state.was_read("src/book.py"));
        state.mark_shown("src/book.py", b"x = 1\n");
        assert!(state.was_read("src/book.py"));
    }
}
