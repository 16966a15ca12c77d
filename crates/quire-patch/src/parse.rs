//! Strict-but-tolerant parser for unified diffs.
//!
//! Tolerated: `diff --git` and other git extended headers, prose between
//! file sections, timestamps after paths, missing `a/`/`b/` prefixes, bare
//! `@@` headers without line numbers, CRLF. Not tolerated (that is `repair`'s
//! job): hunk bodies whose counts disagree with their header, body lines
//! without a valid prefix.

use crate::model::{FilePatch, Hunk, HunkLine, Patch};

/// Why a patch text could not be parsed. Lines are 1-based in the input.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ParseError {
    #[error("no file header (`--- a/path` / `+++ b/path`) found in the patch")]
    NoFiles,
    #[error("line {line}: `---` header not followed by a `+++` header")]
    MissingNewHeader { line: usize },
    #[error("line {line}: malformed hunk header `{text}`")]
    BadHunkHeader { line: usize, text: String },
    #[error("line {line}: hunk header before any file header")]
    HunkOutsideFile { line: usize },
    #[error("line {line}: bad file path in header `{text}`")]
    BadPath { line: usize, text: String },
    #[error(
        "line {line}: hunk {hunk} of {path} has a body that does not match its header \
         (header says -{stated_old} +{stated_new} lines, body has -{found_old} +{found_new})"
    )]
    HunkCountMismatch {
        line: usize,
        path: String,
        hunk: usize,
        stated_old: usize,
        stated_new: usize,
        found_old: usize,
        found_new: usize,
    },
    #[error("line {line}: hunk {hunk} of {path}: line without ` `, `+` or `-` prefix: `{text}`")]
    UnexpectedLine {
        line: usize,
        path: String,
        hunk: usize,
        text: String,
    },
    #[error("binary patch for {path} cannot be applied as text")]
    BinaryPatch { path: String },
}

/// Parse a unified diff into its file sections.
pub fn parse(text: &str) -> Result<Patch, ParseError> {
    let lines: Vec<&str> = split_lines(text);
    let mut p = Parser {
        lines,
        i: 0,
        files: Vec::new(),
        git: None,
    };
    p.run()?;
    if p.files.is_empty() {
        return Err(ParseError::NoFiles);
    }
    Ok(Patch { files: p.files })
}

/// Split into lines without terminators, dropping one `\r` before each `\n`.
pub(crate) fn split_lines(text: &str) -> Vec<&str> {
    let mut out: Vec<&str> = text
        .split('\n')
        .map(|l| l.strip_suffix('\r').unwrap_or(l))
        .collect();
    if out.last() == Some(&"") {
        out.pop();
    }
    out
}

/// What a `diff --git` header and its extended lines said.
#[derive(Debug, Default)]
struct GitHeader {
    old: Option<String>,
    new: Option<String>,
    new_file: bool,
    deleted_file: bool,
    rename_from: Option<String>,
    rename_to: Option<String>,
}

struct Parser<'a> {
    lines: Vec<&'a str>,
    i: usize,
    files: Vec<FilePatch>,
    git: Option<GitHeader>,
}

impl<'a> Parser<'a> {
    fn run(&mut self) -> Result<(), ParseError> {
        while let Some(&line) = self.lines.get(self.i) {
            let next = self.lines.get(self.i + 1).copied();
            if let Some(rest) = line.strip_prefix("diff --git ") {
                self.flush_git();
                self.git = Some(parse_git_header(rest));
                self.i += 1;
            } else if self.git.is_some() && self.git_extended_line(line) {
                self.i += 1;
            } else if line.starts_with("Binary files ") || line == "GIT binary patch" {
                let path = self
                    .git
                    .as_ref()
                    .and_then(|g| g.new.clone().or_else(|| g.old.clone()))
                    .unwrap_or_default();
                return Err(ParseError::BinaryPatch { path });
            } else if line.starts_with("--- ") && next.is_some_and(|n| n.starts_with("+++ ")) {
                self.file_section()?;
            } else if line.starts_with("--- ") && next.is_some_and(|n| n.starts_with("@@")) {
                return Err(ParseError::MissingNewHeader { line: self.i + 1 });
            } else if line.starts_with("@@") {
                return Err(ParseError::HunkOutsideFile { line: self.i + 1 });
            } else {
                // Prose or unknown header lines between sections: skip.
                self.i += 1;
            }
        }
        self.flush_git();
        Ok(())
    }

    /// Record a git extended header line; false if `line` is not one.
    fn git_extended_line(&mut self, line: &str) -> bool {
        let Some(g) = self.git.as_mut() else {
            return false;
        };
        if line.starts_with("new file mode") {
            g.new_file = true;
        } else if line.starts_with("deleted file mode") {
            g.deleted_file = true;
        } else if let Some(p) = line.strip_prefix("rename from ") {
            g.rename_from = Some(p.to_string());
        } else if let Some(p) = line.strip_prefix("rename to ") {
            g.rename_to = Some(p.to_string());
        } else if line.starts_with("index ")
            || line.starts_with("old mode")
            || line.starts_with("new mode")
            || line.starts_with("similarity index")
            || line.starts_with("dissimilarity index")
            || line.starts_with("copy from")
            || line.starts_with("copy to")
        {
        } else {
            return false;
        }
        true
    }

    /// A `diff --git` section without `---`/`+++` lines still means
    /// something for creations, deletions and renames of whole files.
    fn flush_git(&mut self) {
        let Some(g) = self.git.take() else {
            return;
        };
        if g.new_file {
            self.files.push(FilePatch {
                old_path: None,
                new_path: g.new.or(g.old),
                hunks: Vec::new(),
            });
        } else if g.deleted_file {
            self.files.push(FilePatch {
                old_path: g.old.or(g.new),
                new_path: None,
                hunks: Vec::new(),
            });
        } else if g.rename_from.is_some() || g.rename_to.is_some() {
            self.files.push(FilePatch {
                old_path: g.rename_from.or(g.old),
                new_path: g.rename_to.or(g.new),
                hunks: Vec::new(),
            });
        }
    }

    fn file_section(&mut self) -> Result<(), ParseError> {
        self.git = None;
        let old_line_no = self.i + 1;
        let old_raw = header_path(self.lines[self.i], "--- ", old_line_no)?;
        let new_raw = header_path(self.lines[self.i + 1], "+++ ", old_line_no + 1)?;
        if old_raw.is_none() && new_raw.is_none() {
            return Err(ParseError::BadPath {
                line: old_line_no,
                text: self.lines[self.i].to_string(),
            });
        }
        let (old_path, new_path) = strip_prefixes(old_raw, new_raw);
        self.i += 2;
        let mut fp = FilePatch {
            old_path,
            new_path,
            hunks: Vec::new(),
        };
        while let Some(&line) = self.lines.get(self.i) {
            if !line.starts_with("@@") {
                break;
            }
            let number = fp.hunks.len() + 1;
            let hunk = self.hunk(fp.path(), number)?;
            fp.hunks.push(hunk);
        }
        self.files.push(fp);
        Ok(())
    }

    fn hunk(&mut self, path: &str, number: usize) -> Result<Hunk, ParseError> {
        let header_line = self.i + 1;
        let header =
            parse_hunk_header(self.lines[self.i]).ok_or_else(|| ParseError::BadHunkHeader {
                line: header_line,
                text: self.lines[self.i].to_string(),
            })?;
        self.i += 1;
        let mut hunk = Hunk {
            old_start: header.old_start,
            old_count: header.old_count,
            new_start: header.new_start,
            new_count: header.new_count,
            anchored: header.anchored,
            section: header.section,
            lines: Vec::new(),
            old_missing_newline: false,
            new_missing_newline: false,
        };
        if hunk.anchored {
            self.counted_body(&mut hunk, path, number, header_line)?;
        } else {
            self.open_body(&mut hunk);
        }
        Ok(hunk)
    }

    /// Body delimited by the header's counts.
    fn counted_body(
        &mut self,
        hunk: &mut Hunk,
        path: &str,
        number: usize,
        header_line: usize,
    ) -> Result<(), ParseError> {
        let (mut old, mut new) = (0usize, 0usize);
        let (stated_old, stated_new) = (hunk.old_count, hunk.new_count);
        let mismatch = |old, new| ParseError::HunkCountMismatch {
            line: header_line,
            path: path.to_string(),
            hunk: number,
            stated_old,
            stated_new,
            found_old: old,
            found_new: new,
        };
        while old < stated_old || new < stated_new {
            let Some(&line) = self.lines.get(self.i) else {
                return Err(mismatch(old, new));
            };
            // A short count must not swallow the next file's `--- a/…`
            // header as a removed line.
            if is_file_header(
                line,
                self.lines.get(self.i + 1).copied(),
                self.lines.get(self.i + 2).copied(),
            ) {
                return Err(mismatch(old, new));
            }
            match classify(line) {
                Some(Body::Line(l)) => {
                    match &l {
                        HunkLine::Context(_) => {
                            old += 1;
                            new += 1;
                        }
                        HunkLine::Remove(_) => old += 1,
                        HunkLine::Add(_) => new += 1,
                    }
                    if old > stated_old || new > stated_new {
                        return Err(mismatch(old, new));
                    }
                    hunk.lines.push(l);
                }
                Some(Body::NoNewline) => mark_no_newline(hunk),
                None => {
                    if line.starts_with("@@") || line.starts_with("diff --git ") {
                        return Err(mismatch(old, new));
                    }
                    return Err(ParseError::UnexpectedLine {
                        line: self.i + 1,
                        path: path.to_string(),
                        hunk: number,
                        text: line.to_string(),
                    });
                }
            }
            self.i += 1;
        }
        if self.lines.get(self.i).is_some_and(|l| l.starts_with('\\')) {
            mark_no_newline(hunk);
            self.i += 1;
        }
        Ok(())
    }

    /// Body of a bare `@@` hunk: every prefixed line up to the next header.
    fn open_body(&mut self, hunk: &mut Hunk) {
        let start = self.i;
        let mut end = start;
        while let Some(&line) = self.lines.get(end) {
            let next = self.lines.get(end + 1).copied();
            if is_section_start(line, next) {
                break;
            }
            if classify(line).is_none() {
                break;
            }
            end += 1;
        }
        // Trailing blank lines are more likely spacing than empty context.
        let mut body_end = end;
        while body_end > start && self.lines[body_end - 1].is_empty() {
            body_end -= 1;
        }
        for &line in &self.lines[start..body_end] {
            match classify(line) {
                Some(Body::Line(l)) => hunk.lines.push(l),
                Some(Body::NoNewline) => mark_no_newline(hunk),
                None => {}
            }
        }
        hunk.old_count = hunk.old_lines().len();
        hunk.new_count = hunk.new_lines().len();
        self.i = end;
    }
}

/// True for a line that starts a new hunk or file section.
pub(crate) fn is_section_start(line: &str, next: Option<&str>) -> bool {
    line.starts_with("@@")
        || line.starts_with("diff --git ")
        || (line.starts_with("--- ") && next.is_some_and(|n| n.starts_with("+++ ")))
}

/// True for `--- x` / `+++ y` / `@@`: a file section for sure, even inside
/// a hunk whose count is not met (a removed `-- x` followed by an added
/// `++ y` is not followed by a hunk header).
pub(crate) fn is_file_header(line: &str, next: Option<&str>, after: Option<&str>) -> bool {
    line.starts_with("--- ")
        && next.is_some_and(|n| n.starts_with("+++ "))
        && after.is_some_and(|a| a.starts_with("@@"))
}

enum Body {
    Line(HunkLine),
    NoNewline,
}

/// Classify a hunk body line; `None` if it has no valid prefix. An empty line
/// is empty context, as `git apply` accepts.
fn classify(line: &str) -> Option<Body> {
    if line.is_empty() {
        return Some(Body::Line(HunkLine::Context(String::new())));
    }
    if let Some(t) = line.strip_prefix(' ') {
        Some(Body::Line(HunkLine::Context(t.to_string())))
    } else if let Some(t) = line.strip_prefix('-') {
        Some(Body::Line(HunkLine::Remove(t.to_string())))
    } else if let Some(t) = line.strip_prefix('+') {
        Some(Body::Line(HunkLine::Add(t.to_string())))
    } else if line.starts_with('\\') {
        Some(Body::NoNewline)
    } else {
        None
    }
}

fn mark_no_newline(hunk: &mut Hunk) {
    match hunk.lines.last() {
        Some(HunkLine::Context(_)) => {
            hunk.old_missing_newline = true;
            hunk.new_missing_newline = true;
        }
        Some(HunkLine::Remove(_)) => hunk.old_missing_newline = true,
        Some(HunkLine::Add(_)) => hunk.new_missing_newline = true,
        None => {}
    }
}

/// The path of a `--- `/`+++ ` line; `None` for `/dev/null`.
fn header_path(line: &str, prefix: &str, line_no: usize) -> Result<Option<String>, ParseError> {
    let bad = || ParseError::BadPath {
        line: line_no,
        text: line.to_string(),
    };
    let rest = line.strip_prefix(prefix).ok_or_else(bad)?;
    // A tab separates an optional timestamp.
    let raw = rest.split('\t').next().unwrap_or("").trim();
    let path = unquote(raw);
    if path == "/dev/null" {
        return Ok(None);
    }
    if path.is_empty() {
        return Err(bad());
    }
    Ok(Some(path))
}

/// Undo git's C-style quoting of paths with unusual characters.
fn unquote(raw: &str) -> String {
    let Some(inner) = raw.strip_prefix('"').and_then(|r| r.strip_suffix('"')) else {
        return raw.to_string();
    };
    let mut out = String::new();
    let mut chars = inner.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('n') => out.push('\n'),
            Some('t') => out.push('\t'),
            Some(other) => out.push(other),
            None => {}
        }
    }
    out
}

/// The files a diff names in its `---`/`+++` lines, in order and once
/// each (`a/`/`b/` and `./` dropped, `/dev/null` skipped), without parsing
/// hunks: it also reads a patch whose body was faded from the context.
pub fn header_paths(text: &str) -> Vec<String> {
    let mut paths: Vec<String> = Vec::new();
    for line in text.lines() {
        let Some(rest) = line
            .strip_prefix("+++ ")
            .or_else(|| line.strip_prefix("--- "))
        else {
            continue;
        };
        let name = rest.split('\t').next().unwrap_or("").trim();
        if name == "/dev/null" || name.is_empty() {
            continue;
        }
        let name = name
            .strip_prefix("a/")
            .or_else(|| name.strip_prefix("b/"))
            .unwrap_or(name);
        let name = name.trim().trim_start_matches("./").to_string();
        if !paths.contains(&name) {
            paths.push(name);
        }
    }
    paths
}

/// Remove git's `a/` and `b/` prefixes when they are used consistently;
/// paths without them are taken as they are.
pub(crate) fn strip_prefixes(
    old: Option<String>,
    new: Option<String>,
) -> (Option<String>, Option<String>) {
    match (old, new) {
        (Some(o), Some(n)) => {
            let so = o.strip_prefix("a/");
            let sn = n.strip_prefix("b/");
            match (so, sn) {
                (Some(so), Some(sn)) if !so.is_empty() && !sn.is_empty() => {
                    (Some(so.to_string()), Some(sn.to_string()))
                }
                (Some(so), _) if so == n => (Some(n.clone()), Some(n)),
                (_, Some(sn)) if sn == o => (Some(o.clone()), Some(o)),
                _ => (Some(o), Some(n)),
            }
        }
        (None, Some(n)) => {
            let p = match n.strip_prefix("b/") {
                Some(s) if !s.is_empty() => s.to_string(),
                _ => n,
            };
            (None, Some(p))
        }
        (Some(o), None) => {
            let p = match o.strip_prefix("a/") {
                Some(s) if !s.is_empty() => s.to_string(),
                _ => o,
            };
            (Some(p), None)
        }
        (None, None) => (None, None),
    }
}

fn parse_git_header(rest: &str) -> GitHeader {
    let mut g = GitHeader::default();
    // Prefer the split where both sides name the same path.
    let splits: Vec<usize> = rest.match_indices(" b/").map(|(i, _)| i).collect();
    let pick = splits
        .iter()
        .copied()
        .find(|&i| {
            let (o, n) = (&rest[..i], &rest[i + 1..]);
            o.strip_prefix("a/") == n.strip_prefix("b/")
        })
        .or_else(|| splits.first().copied());
    if let Some(i) = pick {
        let (o, n) = (&rest[..i], &rest[i + 1..]);
        let (o, n) = strip_prefixes(Some(o.to_string()), Some(n.to_string()));
        g.old = o;
        g.new = n;
    } else if let Some((o, n)) = rest.split_once(' ') {
        g.old = Some(o.to_string());
        g.new = Some(n.to_string());
    }
    g
}

pub(crate) struct HunkHeader {
    pub old_start: usize,
    pub old_count: usize,
    pub new_start: usize,
    pub new_count: usize,
    pub anchored: bool,
    pub section: String,
}

/// Parse `@@ -l[,c] +l[,c] @@ section`, or a bare `@@ [section]`.
pub(crate) fn parse_hunk_header(line: &str) -> Option<HunkHeader> {
    let rest = line.strip_prefix("@@")?;
    let trimmed = rest.trim_start();
    if !trimmed.starts_with('-') {
        let section = trimmed.strip_prefix("@@").unwrap_or(trimmed).trim();
        return Some(HunkHeader {
            old_start: 0,
            old_count: 0,
            new_start: 0,
            new_count: 0,
            anchored: false,
            section: section.to_string(),
        });
    }
    let (old, rest) = split_token(trimmed);
    let (new, tail) = split_token(rest);
    let old = old.strip_prefix('-')?;
    let new = new.strip_prefix('+')?;
    let (old_start, old_count) = parse_range(old)?;
    let (new_start, new_count) = parse_range(new)?;
    let section = tail
        .trim_start()
        .strip_prefix("@@")
        .unwrap_or(tail)
        .trim()
        .to_string();
    Some(HunkHeader {
        old_start,
        old_count,
        new_start,
        new_count,
        anchored: true,
        section,
    })
}

/// First whitespace-separated token and the rest after it.
fn split_token(s: &str) -> (&str, &str) {
    let s = s.trim_start();
    match s.find(char::is_whitespace) {
        Some(i) => (&s[..i], s[i..].trim_start()),
        None => (s, ""),
    }
}

fn parse_range(s: &str) -> Option<(usize, usize)> {
    let s = s.trim_end_matches("@@");
    match s.split_once(',') {
        Some((a, b)) => Some((a.parse().ok()?, b.parse().ok()?)),
        None => Some((s.parse().ok()?, 1)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_basic_modify() {
        let text = "--- a/src/x.rs\n+++ b/src/x.rs\n@@ -1,3 +1,3 @@ fn main\n a\n-b\n+c\n d\n";
        let p = parse(text).unwrap();
        assert_eq!(p.files.len(), 1);
        let f = &p.files[0];
        assert_eq!(f.old_path.as_deref(), Some("src/x.rs"));
        assert_eq!(f.new_path.as_deref(), Some("src/x.rs"));
        assert_eq!(f.hunks[0].section, "fn main");
        assert_eq!(f.hunks[0].old_lines(), vec!["a", "b", "d"]);
        assert_eq!(f.hunks[0].new_lines(), vec!["a", "c", "d"]);
        assert_eq!(f.hunks[0].header(), "@@ -1,3 +1,3 @@ fn main");
    }

    #[test]
    fn parses_create_delete_and_git_headers() {
        let text = "diff --git a/new.txt b/new.txt\nnew file mode 100644\nindex 0000000..e69de29\n\
                    --- /dev/null\n+++ b/new.txt\n@@ -0,0 +1,2 @@\n+one\n+two\n\\ No newline at end of file\n\
                    diff --git a/old.txt b/old.txt\ndeleted file mode 100644\n--- a/old.txt\n+++ /dev/null\n\
                    @@ -1 +0,0 @@\n-gone\n";
        let p = parse(text).unwrap();
        assert_eq!(p.files.len(), 2);
        assert!(p.files[0].is_creation());
        assert_eq!(p.files[0].path(), "new.txt");
        assert!(p.files[0].hunks[0].new_missing_newline);
        assert!(p.files[1].is_deletion());
        assert_eq!(p.files[1].path(), "old.txt");
    }

    #[test]
    fn git_header_only_sections() {
        let text = "diff --git a/e b/e\nnew file mode 100644\ndiff --git a/x y b/x y\nrename from x y\nrename to z\n";
        let p = parse(text).unwrap();
        assert_eq!(p.files.len(), 2);
        assert!(p.files[0].is_creation());
        assert_eq!(p.files[1].old_path.as_deref(), Some("x y"));
        assert_eq!(p.files[1].new_path.as_deref(), Some("z"));
    }

    #[test]
    fn paths_without_prefixes_and_timestamps() {
        let text = "--- src/a.rs\t2020-01-01\n+++ src/a.rs\t2020-01-02\n@@ -1 +1 @@\n-x\n+y\n";
        let p = parse(text).unwrap();
        assert_eq!(p.files[0].old_path.as_deref(), Some("src/a.rs"));
        // A literal `a/` directory is kept when the other side agrees.
        let text = "--- a/b.txt\n+++ a/b.txt\n@@ -1 +1 @@\n-x\n+y\n";
        let p = parse(text).unwrap();
        assert_eq!(p.files[0].new_path.as_deref(), Some("a/b.txt"));
    }

    #[test]
    fn errors() {
        assert_eq!(parse("hello\n"), Err(ParseError::NoFiles));
        assert!(matches!(
            parse("@@ -1 +1 @@\n-a\n+b\n"),
            Err(ParseError::HunkOutsideFile { line: 1 })
        ));
        assert!(matches!(
            parse("--- a/x\n+++ b/x\n@@ -1,2 +1,2 @@\n-a\n+b\n"),
            Err(ParseError::HunkCountMismatch { found_old: 1, .. })
        ));
        assert!(matches!(
            parse("--- a/x\n+++ b/x\n@@ -1,2 +1,2 @@\n-a\nctx\n+b\n"),
            Err(ParseError::UnexpectedLine { line: 5, .. })
        ));
        assert!(matches!(
            parse("--- a/x\n+++ b/x\n@@ -x +1 @@\n"),
            Err(ParseError::BadHunkHeader { line: 3, .. })
        ));
        assert!(matches!(
            parse("--- /dev/null\n+++ /dev/null\n"),
            Err(ParseError::BadPath { line: 1, .. })
        ));
        assert!(matches!(
            parse("diff --git a/x b/x\nBinary files a/x and b/x differ\n"),
            Err(ParseError::BinaryPatch { .. })
        ));
    }

    #[test]
    fn bare_hunk_header() {
        let text = "--- a/x\n+++ b/x\n@@\n a\n-b\n+c\n\n@@ fn y\n-q\n";
        let p = parse(text).unwrap();
        let h = &p.files[0].hunks;
        assert_eq!(h.len(), 2);
        assert!(!h[0].anchored);
        assert_eq!(h[0].old_count, 2);
        assert_eq!(h[1].section, "fn y");
    }
}
