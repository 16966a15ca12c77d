//! Repair of the mistakes models commonly make when writing unified diffs.
//!
//! Each repair is recorded as a [`Fix`] so the caller can tell the model what
//! was assumed. Line numbers in fixes are 1-based lines of the input text.

use crate::parse::{parse_hunk_header, split_lines};

/// The repaired patch text and what was changed to get it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Repaired {
    pub patch_text: String,
    pub fixes: Vec<Fix>,
}

/// One repair applied to a patch text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fix {
    /// CRLF line endings were turned into LF.
    NormalizedLineEndings,
    /// Markdown code fences (```` ``` ````/`~~~`) were removed; `fences` lines.
    StrippedCodeFences { fences: usize },
    /// Text that is not part of any file section or hunk was dropped.
    DroppedText { first_line: usize, last_line: usize },
    /// Lines inside a hunk body had no prefix and were taken as context.
    AddedContextPrefix { hunk_line: usize, lines: Vec<usize> },
    /// A hunk header's line counts disagreed with its body and were rewritten.
    RecomputedHunkCounts {
        hunk_line: usize,
        stated_old: usize,
        stated_new: usize,
        old: usize,
        new: usize,
    },
    /// `--- x`/`+++ x` without `a/`/`b/` prefixes were given them.
    AddedPathPrefixes { line: usize },
}

impl std::fmt::Display for Fix {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Fix::NormalizedLineEndings => write!(f, "converted CRLF line endings to LF"),
            Fix::StrippedCodeFences { fences } => write!(f, "removed {fences} code fence line(s)"),
            Fix::DroppedText {
                first_line,
                last_line,
            } => write!(f, "ignored non-diff text on lines {first_line}-{last_line}"),
            Fix::AddedContextPrefix { hunk_line, lines } => write!(
                f,
                "hunk at line {hunk_line}: treated {} unprefixed line(s) as context",
                lines.len()
            ),
            Fix::RecomputedHunkCounts {
                hunk_line,
                stated_old,
                stated_new,
                old,
                new,
            } => write!(
                f,
                "hunk at line {hunk_line}: counts -{stated_old} +{stated_new} corrected to -{old} +{new}"
            ),
            Fix::AddedPathPrefixes { line } => {
                write!(f, "line {line}: added a/ and b/ path prefixes")
            }
        }
    }
}

type Line<'a> = (usize, &'a str);

/// Repair a model-written patch. Never fails: text that cannot be made sense
/// of is passed through so that [`crate::parse`] reports it precisely.
pub fn repair(text: &str) -> Repaired {
    let mut fixes = Vec::new();
    let normalized;
    let text = if text.contains("\r\n") {
        fixes.push(Fix::NormalizedLineEndings);
        normalized = text.replace("\r\n", "\n");
        normalized.as_str()
    } else {
        text
    };
    let numbered: Vec<Line<'_>> = split_lines(text)
        .into_iter()
        .enumerate()
        .map(|(i, l)| (i + 1, l))
        .collect();
    let lines = strip_fences(numbered, &mut fixes);
    let mut r = Restructurer {
        lines: &lines,
        out: Vec::new(),
        fixes,
        drop_run: None,
    };
    r.run();
    let mut patch_text = r.out.join("\n");
    if !patch_text.is_empty() {
        patch_text.push('\n');
    }
    Repaired {
        patch_text,
        fixes: r.fixes,
    }
}

/// A fence starts in column 0; an indented one could be a context line of a
/// Markdown file, which always carries a prefix.
fn is_fence(line: &str) -> bool {
    line.starts_with("```") || line.starts_with("~~~")
}

fn looks_like_header(line: &str) -> bool {
    line.starts_with("--- ")
        || line.starts_with("+++ ")
        || line.starts_with("@@")
        || line.starts_with("diff --git ")
}

/// Keep the fenced blocks that contain a diff; if none do, just remove the
/// fence lines.
fn strip_fences<'a>(lines: Vec<Line<'a>>, fixes: &mut Vec<Fix>) -> Vec<Line<'a>> {
    if !lines.iter().any(|(_, l)| is_fence(l)) {
        return lines;
    }
    let mut blocks: Vec<Vec<Line<'a>>> = Vec::new();
    let mut current: Option<Vec<Line<'a>>> = None;
    let mut fences = 0;
    for &(no, l) in &lines {
        if is_fence(l) {
            fences += 1;
            match current.take() {
                Some(b) => blocks.push(b),
                None => current = Some(Vec::new()),
            }
        } else if let Some(b) = current.as_mut() {
            b.push((no, l));
        }
    }
    if let Some(b) = current {
        blocks.push(b);
    }
    fixes.push(Fix::StrippedCodeFences { fences });
    let with_diff: Vec<Line<'a>> = blocks
        .into_iter()
        .filter(|b| b.iter().any(|(_, l)| looks_like_header(l)))
        .flatten()
        .collect();
    if with_diff.is_empty() {
        lines.into_iter().filter(|(_, l)| !is_fence(l)).collect()
    } else {
        with_diff
    }
}

struct Restructurer<'a, 'b> {
    lines: &'b [Line<'a>],
    out: Vec<String>,
    fixes: Vec<Fix>,
    /// First and last line of the run of text being dropped.
    drop_run: Option<(usize, usize)>,
}

fn is_git_extended(line: &str) -> bool {
    [
        "index ",
        "new file mode",
        "deleted file mode",
        "old mode",
        "new mode",
        "similarity index",
        "dissimilarity index",
        "rename from ",
        "rename to ",
        "copy from ",
        "copy to ",
        "Binary files ",
        "GIT binary patch",
    ]
    .iter()
    .any(|p| line.starts_with(p))
}

enum Kind {
    Context,
    Remove,
    Add,
    Marker,
    Unprefixed,
}

fn kind(line: &str) -> Kind {
    match line.as_bytes().first() {
        None | Some(b' ') => Kind::Context,
        Some(b'-') => Kind::Remove,
        Some(b'+') => Kind::Add,
        Some(b'\\') => Kind::Marker,
        Some(_) => Kind::Unprefixed,
    }
}

impl<'a> Restructurer<'a, '_> {
    fn text(&self, i: usize) -> Option<&'a str> {
        self.lines.get(i).map(|(_, l)| *l)
    }

    fn line_no(&self, i: usize) -> usize {
        self.lines.get(i).map(|(n, _)| *n).unwrap_or(0)
    }

    /// True if a new hunk or file section starts at `i`. A `---` line is a
    /// file header only when followed by `+++` and a hunk header, since a
    /// removed line can start with `-- `.
    fn section_at(&self, i: usize) -> bool {
        let Some(l) = self.text(i) else {
            return false;
        };
        l.starts_with("@@")
            || l.starts_with("diff --git ")
            || (l.starts_with("--- ")
                && self.text(i + 1).is_some_and(|n| n.starts_with("+++ "))
                && self.text(i + 2).is_some_and(|n| n.starts_with("@@")))
    }

    fn keep(&mut self, line: String) {
        self.flush_drop();
        self.out.push(line);
    }

    fn drop_line(&mut self, i: usize) {
        let Some(&(no, l)) = self.lines.get(i) else {
            return;
        };
        if l.trim().is_empty() {
            return;
        }
        self.drop_run = Some(match self.drop_run {
            Some((first, _)) => (first, no),
            None => (no, no),
        });
    }

    fn flush_drop(&mut self) {
        if let Some((first_line, last_line)) = self.drop_run.take() {
            self.fixes.push(Fix::DroppedText {
                first_line,
                last_line,
            });
        }
    }

    fn run(&mut self) {
        let mut i = 0;
        let mut in_git_header = false;
        while let Some(l) = self.text(i) {
            if l.starts_with("diff --git ") {
                in_git_header = true;
                self.keep(l.to_string());
                i += 1;
            } else if in_git_header && is_git_extended(l) {
                self.keep(l.to_string());
                i += 1;
            } else if l.starts_with("--- ")
                && self.text(i + 1).is_some_and(|n| n.starts_with("+++ "))
            {
                in_git_header = false;
                self.file_headers(i);
                i += 2;
            } else if l.starts_with("@@") {
                in_git_header = false;
                i = self.hunk(i);
            } else {
                in_git_header = false;
                self.drop_line(i);
                i += 1;
            }
        }
        self.flush_drop();
    }

    fn file_headers(&mut self, i: usize) {
        let (Some(old), Some(new)) = (self.text(i), self.text(i + 1)) else {
            return;
        };
        let path = |l: &str| -> String {
            l.get(4..)
                .unwrap_or("")
                .split('\t')
                .next()
                .unwrap_or("")
                .trim()
                .to_string()
        };
        let (po, pn) = (path(old), path(new));
        let real = |p: &str| p != "/dev/null" && !p.is_empty() && !p.starts_with('"');
        let needs = (real(&po) || real(&pn))
            && (!real(&po) || !po.starts_with("a/"))
            && (!real(&pn) || !pn.starts_with("b/"))
            && (po == "/dev/null" || real(&po))
            && (pn == "/dev/null" || real(&pn));
        if needs {
            let fix = |p: &str, prefix: &str| {
                if p == "/dev/null" {
                    p.to_string()
                } else {
                    format!("{prefix}{p}")
                }
            };
            let line = self.line_no(i);
            self.keep(format!("--- {}", fix(&po, "a/")));
            self.keep(format!("+++ {}", fix(&pn, "b/")));
            self.fixes.push(Fix::AddedPathPrefixes { line });
        } else {
            self.keep(old.to_string());
            self.keep(new.to_string());
        }
    }

    /// Repair the hunk whose header is at `i`; returns the index after it.
    fn hunk(&mut self, i: usize) -> usize {
        let Some(header_text) = self.text(i) else {
            return i + 1;
        };
        let Some(header) = parse_hunk_header(header_text) else {
            // Keep it so that the parser reports the malformed header.
            self.keep(header_text.to_string());
            return i + 1;
        };
        let hunk_line = self.line_no(i);
        let counted = if header.anchored {
            self.counted_end(i + 1, header.old_count, header.new_count)
        } else {
            None
        };
        if let Some(end) = counted {
            self.keep(header_text.to_string());
            self.emit_body(hunk_line, i + 1, end);
            return end;
        }
        // Counts are stale (or absent): the body is everything up to the
        // last prefixed line before the next section.
        let mut end = i + 1;
        let mut body_end = i + 1;
        while self.text(end).is_some() && !self.section_at(end) {
            if self
                .text(end)
                .is_some_and(|l| !l.is_empty() && !matches!(kind(l), Kind::Unprefixed))
            {
                body_end = end + 1;
            }
            end += 1;
        }
        let (old, new) = self.count(i + 1, body_end);
        if header.anchored && (old, new) != (header.old_count, header.new_count) {
            let section = if header.section.is_empty() {
                String::new()
            } else {
                format!(" {}", header.section)
            };
            self.keep(format!(
                "@@ -{} +{} @@{section}",
                range(header.old_start, old),
                range(header.new_start, new)
            ));
            self.fixes.push(Fix::RecomputedHunkCounts {
                hunk_line,
                stated_old: header.old_count,
                stated_new: header.new_count,
                old,
                new,
            });
        } else {
            self.keep(header_text.to_string());
        }
        self.emit_body(hunk_line, i + 1, body_end);
        body_end
    }

    /// Where the body ends if the header's counts are right: they are met
    /// exactly without crossing a section start, and no prefixed line
    /// follows before the next section (which would mean stale counts).
    fn counted_end(&self, start: usize, old_count: usize, new_count: usize) -> Option<usize> {
        let (mut old, mut new) = (0usize, 0usize);
        let mut k = start;
        while old < old_count || new < new_count {
            let l = self.text(k)?;
            // `--- x` may be a removal; followed by `+++ y` and `@@` it is
            // the next file's header, past a count that was too short.
            if l.starts_with("@@")
                || l.starts_with("diff --git ")
                || crate::parse::is_file_header(l, self.text(k + 1), self.text(k + 2))
            {
                return None;
            }
            match kind(l) {
                Kind::Context | Kind::Unprefixed => {
                    old += 1;
                    new += 1;
                }
                Kind::Remove => old += 1,
                Kind::Add => new += 1,
                Kind::Marker => {}
            }
            if old > old_count || new > new_count {
                return None;
            }
            k += 1;
        }
        if self.text(k).is_some_and(|l| l.starts_with('\\')) {
            k += 1;
        }
        let mut j = k;
        while let Some(l) = self.text(j) {
            if self.section_at(j) {
                break;
            }
            if !l.is_empty() && !matches!(kind(l), Kind::Unprefixed) {
                return None;
            }
            j += 1;
        }
        Some(k)
    }

    fn count(&self, start: usize, end: usize) -> (usize, usize) {
        let (mut old, mut new) = (0, 0);
        for k in start..end {
            match self.text(k).map(kind) {
                Some(Kind::Context | Kind::Unprefixed) => {
                    old += 1;
                    new += 1;
                }
                Some(Kind::Remove) => old += 1,
                Some(Kind::Add) => new += 1,
                Some(Kind::Marker) | None => {}
            }
        }
        (old, new)
    }

    fn emit_body(&mut self, hunk_line: usize, start: usize, end: usize) {
        let mut fixed = Vec::new();
        for k in start..end {
            let Some(&(no, l)) = self.lines.get(k) else {
                break;
            };
            if l.is_empty() {
                self.keep(" ".to_string());
            } else if matches!(kind(l), Kind::Unprefixed) {
                fixed.push(no);
                self.keep(format!(" {l}"));
            } else {
                self.keep(l.to_string());
            }
        }
        if !fixed.is_empty() {
            self.fixes.push(Fix::AddedContextPrefix {
                hunk_line,
                lines: fixed,
            });
        }
    }
}

fn range(start: usize, count: usize) -> String {
    if count == 1 {
        start.to_string()
    } else {
        format!("{start},{count}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::parse;

    #[test]
    fn a_short_count_does_not_swallow_the_next_file_header() {
        // Hunk 1 says 5 old lines but has 4; the next file follows.
        let text = "--- a/x\n+++ b/x\n@@ -1,5 +1,5 @@\n a\n-b\n+B\n c\n d\n--- a/y\n+++ b/y\n@@ -1,2 +1,2 @@\n p\n-q\n+Q\n";
        let r = repair(text);
        let patch = parse(&r.patch_text).unwrap();
        assert_eq!(patch.files.len(), 2, "{}", r.patch_text);
        assert_eq!(patch.files[0].hunks[0].old_lines().len(), 4);
        assert!(!r.patch_text.contains("\n-- a/y"), "{}", r.patch_text);
    }

    #[test]
    fn clean_patch_is_unchanged() {
        let text = "--- a/x\n+++ b/x\n@@ -1,2 +1,2 @@\n a\n-b\n+c\n";
        let r = repair(text);
        assert_eq!(r.patch_text, text);
        assert!(r.fixes.is_empty());
    }

    #[test]
    fn strips_fences_and_prose() {
        let text = "Here is the fix:\n\n```diff\n--- a/x\n+++ b/x\n@@ -1,2 +1,2 @@\n a\n-b\n+c\n```\n\nThis changes b to c.\n";
        let r = repair(text);
        assert_eq!(
            r.patch_text,
            "--- a/x\n+++ b/x\n@@ -1,2 +1,2 @@\n a\n-b\n+c\n"
        );
        assert_eq!(r.fixes, vec![Fix::StrippedCodeFences { fences: 2 }]);
    }

    #[test]
    fn drops_prose_without_fences() {
        let text =
            "I will change it.\n--- a/x\n+++ b/x\n@@ -1,2 +1,2 @@\n a\n-b\n+c\nDone!\nBye.\n";
        let r = repair(text);
        assert_eq!(
            r.patch_text,
            "--- a/x\n+++ b/x\n@@ -1,2 +1,2 @@\n a\n-b\n+c\n"
        );
        assert_eq!(
            r.fixes,
            vec![
                Fix::DroppedText {
                    first_line: 1,
                    last_line: 1
                },
                Fix::DroppedText {
                    first_line: 8,
                    last_line: 9
                }
            ]
        );
    }

    #[test]
    fn adds_missing_context_prefix() {
        let text = "--- a/x\n+++ b/x\n@@ -1,3 +1,3 @@\na\n-b\n+c\nd\n";
        let r = repair(text);
        assert_eq!(
            r.patch_text,
            "--- a/x\n+++ b/x\n@@ -1,3 +1,3 @@\n a\n-b\n+c\n d\n"
        );
        assert_eq!(
            r.fixes,
            vec![Fix::AddedContextPrefix {
                hunk_line: 3,
                lines: vec![4, 7]
            }]
        );
        parse(&r.patch_text).unwrap();
    }

    #[test]
    fn recomputes_stale_counts() {
        let text =
            "--- a/x\n+++ b/x\n@@ -1,7 +1,9 @@\n a\n-b\n+c\n+d\n e\n@@ -20,2 +21,2 @@\n-q\n+r\n";
        let r = repair(text);
        assert_eq!(
            r.patch_text,
            "--- a/x\n+++ b/x\n@@ -1,3 +1,4 @@\n a\n-b\n+c\n+d\n e\n@@ -20 +21 @@\n-q\n+r\n"
        );
        assert_eq!(r.fixes.len(), 2);
        assert!(matches!(
            r.fixes[0],
            Fix::RecomputedHunkCounts {
                hunk_line: 3,
                stated_old: 7,
                stated_new: 9,
                old: 3,
                new: 4
            }
        ));
        let p = parse(&r.patch_text).unwrap();
        assert_eq!(p.files[0].hunks.len(), 2);
    }

    #[test]
    fn too_small_counts_are_recomputed_not_truncated() {
        let text = "--- a/x\n+++ b/x\n@@ -1,1 +1,1 @@\n-b\n+c\n-d\n+e\n";
        let r = repair(text);
        let p = parse(&r.patch_text).unwrap();
        assert_eq!(p.files[0].hunks[0].lines.len(), 4);
    }

    #[test]
    fn adds_path_prefixes() {
        let text = "--- src/x.rs\n+++ src/x.rs\n@@ -1 +1 @@\n-a\n+b\n";
        let r = repair(text);
        assert!(r.patch_text.starts_with("--- a/src/x.rs\n+++ b/src/x.rs\n"));
        assert_eq!(r.fixes, vec![Fix::AddedPathPrefixes { line: 1 }]);
        let text = "--- /dev/null\n+++ new.rs\n@@ -0,0 +1 @@\n+a\n";
        let r = repair(text);
        assert!(r.patch_text.starts_with("--- /dev/null\n+++ b/new.rs\n"));
    }

    #[test]
    fn normalizes_crlf() {
        let text = "--- a/x\r\n+++ b/x\r\n@@ -1 +1 @@\r\n-a\r\n+b\r\n";
        let r = repair(text);
        assert_eq!(r.patch_text, "--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n");
        assert_eq!(r.fixes, vec![Fix::NormalizedLineEndings]);
    }

    #[test]
    fn removal_of_sql_comment_is_not_a_header() {
        let text =
            "--- a/q.sql\n+++ b/q.sql\n@@ -1,2 +1,2 @@\n--- old comment\n+++ new comment\n keep\n";
        let r = repair(text);
        assert_eq!(r.patch_text, text);
        let p = parse(&r.patch_text).unwrap();
        assert_eq!(p.files.len(), 1);
        assert_eq!(
            p.files[0].hunks[0].old_lines(),
            vec!["-- old comment", "keep"]
        );
        assert_eq!(
            p.files[0].hunks[0].new_lines(),
            vec!["++ new comment", "keep"]
        );
    }

    #[test]
    fn prose_between_hunks_is_dropped() {
        let text =
            "--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\nNow the second part:\n@@ -9 +9 @@\n-c\n+d\n";
        let r = repair(text);
        assert_eq!(
            r.patch_text,
            "--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n@@ -9 +9 @@\n-c\n+d\n"
        );
        assert_eq!(
            r.fixes,
            vec![Fix::DroppedText {
                first_line: 6,
                last_line: 6
            }]
        );
    }
}
