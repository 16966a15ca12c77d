//! Applying one file's hunks to its text, tolerating small drift.
//!
//! Each hunk's old lines (context and removals) are looked for at the line
//! the header states (shifted by the offset the previous hunk needed), then
//! nearby, then anywhere in the file where the match must be unique. A second
//! pass ignores trailing whitespace if allowed. Hunks never overlap.

use crate::model::{FilePatch, Hunk, HunkLine};
use crate::similarity::closest_region;

/// How tolerant application is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApplyOptions {
    /// Also match lines that differ only in trailing whitespace.
    pub ignore_trailing_whitespace: bool,
    /// Matches within this many lines of the expected position are taken
    /// (nearest wins); farther away a match must be unique in the file.
    pub nearby_lines: usize,
}

impl Default for ApplyOptions {
    fn default() -> Self {
        ApplyOptions {
            ignore_trailing_whitespace: true,
            nearby_lines: 100,
        }
    }
}

/// How a hunk's old lines were compared with the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MatchMode {
    Exact,
    IgnoringTrailingWhitespace,
}

/// Where a hunk was found relative to where its header said.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SearchKind {
    /// Exactly at the stated line.
    AtStatedLine,
    /// Within [`ApplyOptions::nearby_lines`] of the expected position.
    Nearby,
    /// Elsewhere in the file (the only match there).
    Anywhere,
}

/// Where one hunk was applied, for notes like "hunk 2 applied at line 40
/// (offset +3)".
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HunkPlacement {
    /// 1-based hunk number within the file patch.
    pub hunk: usize,
    pub header: String,
    /// 1-based line the header stated (0 for a bare `@@` header).
    pub stated_line: usize,
    /// 1-based line of the original text where the hunk's old lines start.
    pub applied_line: usize,
    /// `applied_line - stated_line` (0 when the header had no line number).
    pub offset: i64,
    pub search: SearchKind,
    pub mode: MatchMode,
}

/// The patched text and where each hunk went.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Applied {
    pub text: String,
    pub hunks: Vec<HunkPlacement>,
}

impl Applied {
    /// True when every hunk applied exactly where stated, without fuzz.
    pub fn is_clean(&self) -> bool {
        self.hunks
            .iter()
            .all(|h| h.search == SearchKind::AtStatedLine && h.mode == MatchMode::Exact)
    }
}

/// A region of the file shown when a hunk does not match.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Region {
    /// 1-based first line of the region.
    pub line: usize,
    pub lines: Vec<String>,
    /// Mean line similarity with the expected lines, 0-100.
    pub similarity: u8,
}

/// Why a file patch could not be applied.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ApplyError {
    #[error("{path}: hunk {hunk} ({header}): the lines it expects were not found")]
    ContextNotFound {
        path: String,
        hunk: usize,
        header: String,
        expected: Vec<String>,
        closest: Option<Region>,
    },
    #[error("{path}: hunk {hunk} ({header}): the lines it expects occur at {} places", places.len())]
    Ambiguous {
        path: String,
        hunk: usize,
        header: String,
        expected: Vec<String>,
        /// 1-based lines where the expected lines start.
        places: Vec<usize>,
    },
    #[error("{path}: file does not exist")]
    FileMissing { path: String },
    #[error("{path}: file already exists, but the patch creates it")]
    FileExists { path: String },
}

impl ApplyError {
    /// The file the error is about.
    pub fn path(&self) -> &str {
        match self {
            ApplyError::ContextNotFound { path, .. }
            | ApplyError::Ambiguous { path, .. }
            | ApplyError::FileMissing { path }
            | ApplyError::FileExists { path } => path,
        }
    }

    /// The 1-based hunk number, for hunk-level errors.
    pub fn hunk(&self) -> Option<usize> {
        match self {
            ApplyError::ContextNotFound { hunk, .. } | ApplyError::Ambiguous { hunk, .. } => {
                Some(*hunk)
            }
            _ => None,
        }
    }
}

/// Apply `file_patch` to `file_text` with default options.
pub fn apply(file_text: &str, file_patch: &FilePatch) -> Result<Applied, ApplyError> {
    apply_with(file_text, file_patch, &ApplyOptions::default())
}

/// A hunk placed on the original lines: `[start, start + len)`.
struct Placed<'h> {
    start: usize,
    len: usize,
    hunk: &'h Hunk,
}

fn strip_cr(s: &str) -> &str {
    s.strip_suffix('\r').unwrap_or(s)
}

/// Apply `file_patch` to `file_text`. A creation patch applies to empty text
/// only. The text's line endings (LF or CRLF) are kept for added lines.
pub fn apply_with(
    file_text: &str,
    file_patch: &FilePatch,
    opts: &ApplyOptions,
) -> Result<Applied, ApplyError> {
    let path = file_patch.path().to_string();
    if file_patch.is_creation() && !file_text.is_empty() {
        return Err(ApplyError::FileExists { path });
    }
    let mut lines: Vec<&str> = file_text.split('\n').collect();
    let eof_newline = lines.last() == Some(&"");
    if eof_newline {
        lines.pop();
    }
    let terminated = if eof_newline {
        lines.len()
    } else {
        lines.len().saturating_sub(1)
    };
    let crlf_count = lines[..terminated]
        .iter()
        .filter(|l| l.ends_with('\r'))
        .count();
    let crlf = crlf_count > 0 && crlf_count * 2 >= terminated;
    let keys: Vec<&str> = lines.iter().map(|l| strip_cr(l)).collect();

    let mut placed: Vec<Placed<'_>> = Vec::new();
    let mut placements = Vec::new();
    let mut offset: i64 = 0;
    for (idx, hunk) in file_patch.hunks.iter().enumerate() {
        let number = idx + 1;
        let old: Vec<&str> = hunk.old_lines().into_iter().map(strip_cr).collect();
        let stated_idx = if old.is_empty() {
            hunk.old_start
        } else {
            hunk.old_start.saturating_sub(1)
        };
        let n = keys.len();
        let expected_idx = clamp_index(to_i64(stated_idx).saturating_add(offset), n);
        let found = locate(&keys, &old, hunk, expected_idx, &placed, opts);
        let (start, mode) = match found {
            Located::At(start, mode) => (start, mode),
            Located::Ambiguous(places) => {
                return Err(ApplyError::Ambiguous {
                    path,
                    hunk: number,
                    header: hunk.header(),
                    expected: old.iter().map(|s| s.to_string()).collect(),
                    places: places.iter().map(|p| p + 1).collect(),
                });
            }
            Located::NotFound => {
                let closest = closest_region(&keys, &old).map(|c| Region {
                    line: c.start + 1,
                    lines: keys[c.start..c.start + c.len]
                        .iter()
                        .map(|s| s.to_string())
                        .collect(),
                    similarity: c.percent,
                });
                return Err(ApplyError::ContextNotFound {
                    path,
                    hunk: number,
                    header: hunk.header(),
                    expected: old.iter().map(|s| s.to_string()).collect(),
                    closest,
                });
            }
        };
        let distance = start.abs_diff(stated_idx);
        let search = if !hunk.anchored {
            SearchKind::Anywhere
        } else if distance == 0 {
            SearchKind::AtStatedLine
        } else if start.abs_diff(expected_idx) <= opts.nearby_lines {
            SearchKind::Nearby
        } else {
            SearchKind::Anywhere
        };
        if hunk.anchored {
            offset = to_i64(start).saturating_sub(to_i64(stated_idx));
        }
        let stated_line = if hunk.anchored {
            stated_idx.saturating_add(1)
        } else {
            0
        };
        placements.push(HunkPlacement {
            hunk: number,
            header: hunk.header(),
            stated_line,
            applied_line: start + 1,
            offset: if hunk.anchored { offset } else { 0 },
            search,
            mode,
        });
        placed.push(Placed {
            start,
            len: old.len(),
            hunk,
        });
    }

    let text = build(&lines, eof_newline, crlf, &mut placed);
    Ok(Applied {
        text,
        hunks: placements,
    })
}

fn to_i64(n: usize) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

fn clamp_index(i: i64, n: usize) -> usize {
    if i <= 0 {
        0
    } else {
        usize::try_from(i).unwrap_or(usize::MAX).min(n)
    }
}

enum Located {
    At(usize, MatchMode),
    Ambiguous(Vec<usize>),
    NotFound,
}

fn overlaps(placed: &[Placed<'_>], start: usize, len: usize) -> bool {
    placed.iter().any(|p| {
        if len == 0 {
            p.start < start && start < p.start + p.len
        } else if p.len == 0 {
            start < p.start && p.start < start + len
        } else {
            start < p.start + p.len && p.start < start + len
        }
    })
}

fn lines_match(file: &[&str], old: &[&str], mode: MatchMode) -> bool {
    file.len() == old.len()
        && file.iter().zip(old).all(|(a, b)| match mode {
            MatchMode::Exact => a == b,
            MatchMode::IgnoringTrailingWhitespace => a.trim_end() == b.trim_end(),
        })
}

fn locate(
    keys: &[&str],
    old: &[&str],
    hunk: &Hunk,
    expected_idx: usize,
    placed: &[Placed<'_>],
    opts: &ApplyOptions,
) -> Located {
    let n = keys.len();
    if old.is_empty() {
        // A pure insertion carries no context to check.
        if !hunk.anchored && n > 0 {
            return Located::NotFound;
        }
        let pos = if hunk.anchored { expected_idx } else { 0 };
        if overlaps(placed, pos, 0) {
            return Located::NotFound;
        }
        return Located::At(pos, MatchMode::Exact);
    }
    let mut modes = vec![MatchMode::Exact];
    if opts.ignore_trailing_whitespace {
        modes.push(MatchMode::IgnoringTrailingWhitespace);
    }
    let k = old.len();
    let all: Vec<Vec<usize>> = modes
        .iter()
        .map(|&mode| {
            if k > n {
                return Vec::new();
            }
            (0..=n - k)
                .filter(|&p| lines_match(&keys[p..p + k], old, mode) && !overlaps(placed, p, k))
                .collect()
        })
        .collect();
    if hunk.anchored {
        for (matches, &mode) in all.iter().zip(&modes) {
            let near: Vec<usize> = matches
                .iter()
                .copied()
                .filter(|p| p.abs_diff(expected_idx) <= opts.nearby_lines)
                .collect();
            let Some(best) = near.iter().map(|p| p.abs_diff(expected_idx)).min() else {
                continue;
            };
            let nearest: Vec<usize> = near
                .into_iter()
                .filter(|p| p.abs_diff(expected_idx) == best)
                .collect();
            return match nearest.as_slice() {
                [only] => Located::At(*only, mode),
                _ => Located::Ambiguous(nearest),
            };
        }
    }
    for (matches, &mode) in all.iter().zip(&modes) {
        match matches.as_slice() {
            [] => continue,
            [only] => return Located::At(*only, mode),
            _ => return Located::Ambiguous(matches.clone()),
        }
    }
    Located::NotFound
}

/// Splice the placed hunks into the original lines.
fn build(lines: &[&str], eof_newline: bool, crlf: bool, placed: &mut [Placed<'_>]) -> String {
    placed.sort_by_key(|p| (p.start, p.len != 0));
    let n = lines.len();
    let mut out: Vec<String> = Vec::with_capacity(n);
    let mut cursor = 0;
    let mut eof = if n == 0 { true } else { eof_newline };
    for p in placed.iter() {
        let start = p.start.min(n);
        out.extend(
            lines[cursor.min(start)..start]
                .iter()
                .map(|s| s.to_string()),
        );
        let mut at = start;
        for line in &p.hunk.lines {
            match line {
                HunkLine::Context(t) => {
                    // The context was matched against these very lines, so
                    // keep the file's own version (whitespace, CR).
                    out.push(lines.get(at).map_or_else(|| t.clone(), |s| s.to_string()));
                    at += 1;
                }
                HunkLine::Remove(_) => at += 1,
                HunkLine::Add(t) => {
                    let t = strip_cr(t);
                    out.push(if crlf {
                        format!("{t}\r")
                    } else {
                        t.to_string()
                    });
                }
            }
        }
        cursor = start + p.len;
        if cursor >= n {
            if p.hunk.new_missing_newline {
                eof = false;
            } else if p.hunk.old_missing_newline {
                eof = true;
            }
        }
    }
    if cursor < n {
        out.extend(lines[cursor..].iter().map(|s| s.to_string()));
    }
    if out.is_empty() {
        return String::new();
    }
    let mut text = out.join("\n");
    if eof {
        text.push('\n');
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::parse;

    fn fp(patch: &str) -> FilePatch {
        parse(patch).unwrap().files.remove(0)
    }

    #[test]
    fn applies_at_stated_line() {
        let p = fp("--- a/x\n+++ b/x\n@@ -2,3 +2,3 @@\n b\n-c\n+C\n d\n");
        let a = apply("a\nb\nc\nd\ne\n", &p).unwrap();
        assert_eq!(a.text, "a\nb\nC\nd\ne\n");
        assert!(a.is_clean());
        assert_eq!(a.hunks[0].applied_line, 2);
    }

    #[test]
    fn applies_with_drift_and_reports_offset() {
        let p =
            fp("--- a/x\n+++ b/x\n@@ -2,3 +2,3 @@\n b\n-c\n+C\n d\n@@ -6,2 +6,2 @@\n f\n-g\n+G\n");
        let a = apply("new1\nnew2\nnew3\na\nb\nc\nd\ne\nf\ng\n", &p).unwrap();
        assert_eq!(a.text, "new1\nnew2\nnew3\na\nb\nC\nd\ne\nf\nG\n");
        assert_eq!(a.hunks[0].offset, 3);
        assert_eq!(a.hunks[0].search, SearchKind::Nearby);
        assert_eq!(a.hunks[1].applied_line, 9);
        assert_eq!(a.hunks[1].offset, 3);
    }

    #[test]
    fn applies_far_away_when_unique() {
        let p = fp("--- a/x\n+++ b/x\n@@ -1,2 +1,2 @@\n-target\n+changed\n end\n");
        let mut text: String = (0..500).map(|i| format!("line {i}\n")).collect();
        text.push_str("target\nend\n");
        let opts = ApplyOptions {
            nearby_lines: 10,
            ..ApplyOptions::default()
        };
        let a = apply_with(&text, &p, &opts).unwrap();
        assert!(a.text.ends_with("changed\nend\n"));
        assert_eq!(a.hunks[0].search, SearchKind::Anywhere);
        assert_eq!(a.hunks[0].applied_line, 501);
    }

    #[test]
    fn ignores_trailing_whitespace_but_keeps_file_version() {
        let p = fp("--- a/x\n+++ b/x\n@@ -1,2 +1,2 @@\n a\n-b\n+B\n");
        let a = apply("a  \nb\t\n", &p).unwrap();
        assert_eq!(a.text, "a  \nB\n");
        assert_eq!(a.hunks[0].mode, MatchMode::IgnoringTrailingWhitespace);
        let strict = ApplyOptions {
            ignore_trailing_whitespace: false,
            ..ApplyOptions::default()
        };
        assert!(matches!(
            apply_with("a  \nb\t\n", &p, &strict),
            Err(ApplyError::ContextNotFound { .. })
        ));
    }

    #[test]
    fn context_not_found_reports_closest_region() {
        let p = fp(
            "--- a/x\n+++ b/x\n@@ -1,3 +1,3 @@\n fn b() {\n-    let y = 3;\n+    let y = 4;\n }\n",
        );
        let err = apply(
            "fn a() {\n    let x = 1;\n}\nfn b() {\n    let y = 2;\n}\n",
            &p,
        )
        .unwrap_err();
        match err {
            ApplyError::ContextNotFound {
                path,
                hunk,
                header,
                expected,
                closest: Some(region),
            } => {
                assert_eq!(path, "x");
                assert_eq!(hunk, 1);
                assert_eq!(header, "@@ -1,3 +1,3 @@");
                assert_eq!(expected, vec!["fn b() {", "    let y = 3;", "}"]);
                assert_eq!(region.line, 4);
                assert_eq!(region.lines, vec!["fn b() {", "    let y = 2;", "}"]);
            }
            other => panic!("unexpected {other:?}"),
        }
    }

    #[test]
    fn ambiguous_far_matches() {
        let p = fp("--- a/x\n+++ b/x\n@@ -1 +1 @@\n-dup\n+X\n");
        let mut text: String = (0..300).map(|i| format!("l{i}\n")).collect();
        text.push_str("dup\n");
        text.push_str(&(0..300).map(|i| format!("m{i}\n")).collect::<String>());
        text.push_str("dup\n");
        let err = apply(&text, &p).unwrap_err();
        assert_eq!(
            err,
            ApplyError::Ambiguous {
                path: "x".into(),
                hunk: 1,
                header: "@@ -1 +1 @@".into(),
                expected: vec!["dup".into()],
                places: vec![301, 602],
            }
        );
        assert_eq!(err.hunk(), Some(1));
    }

    #[test]
    fn nearest_of_several_nearby_wins() {
        let p = fp("--- a/x\n+++ b/x\n@@ -2 +2 @@\n-dup\n+X\n");
        let a = apply("dup\nq\nr\ns\ndup\n", &p).unwrap();
        assert_eq!(a.text, "X\nq\nr\ns\ndup\n");
        // Equally near on both sides is ambiguous.
        let p = fp("--- a/x\n+++ b/x\n@@ -3 +3 @@\n-dup\n+X\n");
        assert!(matches!(
            apply("dup\nq\nr\ns\ndup\n", &p),
            Err(ApplyError::Ambiguous { .. })
        ));
    }

    #[test]
    fn creation_and_file_exists() {
        let p = fp("--- /dev/null\n+++ b/n\n@@ -0,0 +1,2 @@\n+a\n+b\n");
        assert_eq!(apply("", &p).unwrap().text, "a\nb\n");
        assert_eq!(
            apply("x\n", &p).unwrap_err(),
            ApplyError::FileExists { path: "n".into() }
        );
    }

    #[test]
    fn no_newline_markers() {
        let p = fp("--- a/x\n+++ b/x\n@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+c\n");
        assert_eq!(apply("a\nb", &p).unwrap().text, "a\nc\n");
        let p = fp("--- a/x\n+++ b/x\n@@ -1,2 +1,2 @@\n a\n-b\n+c\n\\ No newline at end of file\n");
        assert_eq!(apply("a\nb\n", &p).unwrap().text, "a\nc");
        // Without markers the file's own ending is kept.
        let p = fp("--- a/x\n+++ b/x\n@@ -1,2 +1,2 @@\n a\n-b\n+c\n");
        assert_eq!(apply("a\nb", &p).unwrap().text, "a\nc");
    }

    #[test]
    fn crlf_files_keep_crlf() {
        let p = fp("--- a/x\n+++ b/x\n@@ -1,2 +1,3 @@\n a\n-b\n+c\n+d\n");
        assert_eq!(apply("a\r\nb\r\n", &p).unwrap().text, "a\r\nc\r\nd\r\n");
    }

    #[test]
    fn deletion_empties_text() {
        let p = fp("--- a/x\n+++ /dev/null\n@@ -1,2 +0,0 @@\n-a\n-b\n");
        assert_eq!(apply("a\nb\n", &p).unwrap().text, "");
    }

    #[test]
    fn pure_insertion() {
        let p = fp("--- a/x\n+++ b/x\n@@ -1,0 +2 @@\n+new\n");
        assert_eq!(apply("a\nb\n", &p).unwrap().text, "a\nnew\nb\n");
    }

    #[test]
    fn bare_header_requires_unique_match() {
        let p = fp("--- a/x\n+++ b/x\n@@\n-b\n+B\n");
        assert_eq!(apply("a\nb\nc\n", &p).unwrap().text, "a\nB\nc\n");
        assert!(matches!(
            apply("b\nb\n", &p),
            Err(ApplyError::Ambiguous { .. })
        ));
    }

    #[test]
    fn absurd_line_numbers_do_not_overflow() {
        for start in [
            "18446744073709551615",
            "9223372036854775808",
            "9223372036854775807",
            "0",
        ] {
            let p = fp(&format!(
                "--- a/x\n+++ b/x\n@@ -{start},0 +{start},1 @@\n+n\n@@ -{start} +{start} @@\n-a\n+b\n"
            ));
            let _ = apply("a\nb\n", &p);
        }
    }

    #[test]
    fn hunks_do_not_overlap() {
        // Both hunks expect `x`; the second must take the other occurrence.
        let p = fp("--- a/x\n+++ b/x\n@@ -1 +1 @@\n-x\n+A\n@@ -1 +1 @@\n-x\n+B\n");
        assert_eq!(apply("x\ny\nx\n", &p).unwrap().text, "A\ny\nB\n");
    }
}
