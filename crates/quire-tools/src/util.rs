//! Small shared pieces: argument access, config texts, output caps, line
//! numbering, text similarity and atomic writes.

use std::io::Write as _;
use std::path::Path;

use quire_config::{AgentConfig, render};
use serde_json::{Map, Value};

/// The rendered `[errors]` text `key` of `tool`.
pub(crate) fn text(config: &AgentConfig, tool: &str, key: &str, vars: &[(&str, &str)]) -> String {
    render(config.tool_error(tool, key), vars)
}

/// A string argument; `None` when absent or null.
pub(crate) fn str_arg<'a>(args: &'a Map<String, Value>, name: &str) -> Option<&'a str> {
    args.get(name).and_then(Value::as_str)
}

/// The files a call of a file-changing tool aims at: its `path`, or the
/// files a patch's `---`/`+++` lines name (which a patch faded from the
/// context keeps), published as [`quire_core::WorkFacts::edits`].
pub(crate) fn edit_targets(args: &Map<String, Value>) -> Vec<String> {
    if let Some(path) = str_arg(args, "path") {
        return vec![path.trim().trim_start_matches("./").to_string()];
    }
    str_arg(args, "patch").map_or_else(Vec::new, quire_patch::header_paths)
}

/// An integer argument; negative values clamp to 0.
pub(crate) fn int_arg(args: &Map<String, Value>, name: &str) -> Option<u64> {
    let value = args.get(name)?;
    value
        .as_u64()
        .or_else(|| value.as_i64().map(|v| v.max(0) as u64))
}

pub(crate) fn bool_arg(args: &Map<String, Value>, name: &str) -> Option<bool> {
    args.get(name).and_then(Value::as_bool)
}

/// Keeps the head and tail of `text` within `max_chars` characters, joined
/// by the marker rendered from `marker` (placeholder `{cut}`: characters left
/// out). Cuts fall on line boundaries when one is near, so no line is split
/// needlessly.
pub fn cap_output(text: &str, max_chars: usize, marker: &str) -> String {
    let total = text.chars().count();
    if total <= max_chars || max_chars == 0 {
        return text.to_string();
    }
    // The marker itself takes room; what is left is shared 2:1 head:tail,
    // since the start of an output usually says the most.
    let marker_len = marker.chars().count() + 12;
    let budget = max_chars.saturating_sub(marker_len).max(max_chars / 2);
    let head_chars = budget * 2 / 3;
    let tail_chars = budget - head_chars;
    let head_end = snap_back(text, byte_at_char(text, head_chars));
    let tail_start = snap_forward(text, byte_at_char(text, total - tail_chars));
    let (head, tail) = if tail_start > head_end {
        (&text[..head_end], &text[tail_start..])
    } else {
        (&text[..head_end], "")
    };
    let cut = total - head.chars().count() - tail.chars().count();
    let rendered = render(marker, &[("cut", &cut.to_string())]);
    let mut out = String::with_capacity(head.len() + rendered.len() + tail.len() + 2);
    out.push_str(head);
    if !head.ends_with('\n') && !head.is_empty() {
        out.push('\n');
    }
    out.push_str(&rendered);
    if !tail.is_empty() {
        out.push('\n');
        out.push_str(tail);
    }
    out
}

fn byte_at_char(text: &str, chars: usize) -> usize {
    text.char_indices()
        .nth(chars)
        .map_or(text.len(), |(i, _)| i)
}

/// Moves a cut back to just after a newline if one is within 200 bytes.
fn snap_back(text: &str, at: usize) -> usize {
    let window_start = floor_boundary(text, at.saturating_sub(200));
    match text[window_start..at].rfind('\n') {
        Some(i) => window_start + i + 1,
        None => at,
    }
}

/// Moves a cut forward to just after a newline if one is within 200 bytes.
fn snap_forward(text: &str, at: usize) -> usize {
    let window_end = ceil_boundary(text, (at + 200).min(text.len()));
    match text[at..window_end].find('\n') {
        Some(i) => at + i + 1,
        None => at,
    }
}

fn floor_boundary(text: &str, mut at: usize) -> usize {
    while at > 0 && !text.is_char_boundary(at) {
        at -= 1;
    }
    at
}

fn ceil_boundary(text: &str, mut at: usize) -> usize {
    while at < text.len() && !text.is_char_boundary(at) {
        at += 1;
    }
    at
}

/// Splits file content into lines without their terminators (`\n`, `\r\n`).
/// A final newline does not start another line.
pub(crate) fn split_lines(content: &str) -> Vec<&str> {
    if content.is_empty() {
        return Vec::new();
    }
    let body = content.strip_suffix('\n').unwrap_or(content);
    body.split('\n')
        .map(|l| l.strip_suffix('\r').unwrap_or(l))
        .collect()
}

/// Lines `first..=last` (1-based) in the read_file format: the number
/// right-aligned to the widest number shown, then `| ` and the line.
pub(crate) fn number_lines(lines: &[&str], first: usize) -> String {
    let last = first + lines.len().saturating_sub(1);
    let width = last.to_string().len();
    let mut out = String::new();
    for (i, line) in lines.iter().enumerate() {
        out.push_str(&format!(
            "{:>width$}| {}\n",
            first + i,
            clip_line(line, MAX_LINE_CHARS)
        ));
    }
    if out.ends_with('\n') {
        out.pop();
    }
    out
}

/// Longest line shown by read_file and the edit views; minified files would
/// otherwise fill the whole output with one line.
pub(crate) const MAX_LINE_CHARS: usize = 2_000;

/// `line` cut to `max` characters with a trailing `…`.
pub(crate) fn clip_line(line: &str, max: usize) -> std::borrow::Cow<'_, str> {
    if line.len() <= max || line.chars().count() <= max {
        return std::borrow::Cow::Borrowed(line);
    }
    let end = byte_at_char(line, max);
    std::borrow::Cow::Owned(format!("{}…", &line[..end]))
}

/// Removes a read_file-style line-number prefix (`  12| `, `12:`, `12\t`,
/// `12→`) from a line; `None` when the line has none.
pub(crate) fn strip_line_number(line: &str) -> Option<&str> {
    let rest = line.trim_start_matches(' ');
    let digits = rest.len() - rest.trim_start_matches(|c: char| c.is_ascii_digit()).len();
    if digits == 0 {
        return None;
    }
    let rest = &rest[digits..];
    if let Some(r) = rest.strip_prefix('|').or_else(|| rest.strip_prefix(':')) {
        return Some(r.strip_prefix(' ').unwrap_or(r));
    }
    rest.strip_prefix('\t').or_else(|| rest.strip_prefix('→'))
}

/// Levenshtein distance over characters, for path suggestions.
pub(crate) fn edit_distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    let mut cur = vec![0; b.len() + 1];
    for (i, ca) in a.iter().enumerate() {
        cur[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let cost = usize::from(ca != cb);
            cur[j + 1] = (prev[j] + cost).min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        std::mem::swap(&mut prev, &mut cur);
    }
    prev[b.len()]
}

/// Similarity of two lines in 0..=1 (Dice coefficient over character
/// bigrams of the trimmed text), cheap enough to slide over whole files.
#[cfg(test)]
pub(crate) fn line_similarity(a: &str, b: &str) -> f64 {
    let (a, b) = (a.trim(), b.trim());
    if a == b {
        return 1.0;
    }
    let (ga, gb) = (bigrams(a), bigrams(b));
    bigram_dice(&ga, &gb)
}

/// Sorted character bigrams of a line, precomputed once per line.
pub(crate) fn bigrams(s: &str) -> Vec<(char, char)> {
    let chars: Vec<char> = s.trim().chars().collect();
    let mut grams: Vec<(char, char)> = chars.windows(2).map(|w| (w[0], w[1])).collect();
    if grams.is_empty()
        && let Some(&c) = chars.first()
    {
        grams.push((c, '\0'));
    }
    grams.sort_unstable();
    grams
}

/// Dice coefficient of two sorted bigram lists.
pub(crate) fn bigram_dice(a: &[(char, char)], b: &[(char, char)]) -> f64 {
    if a.is_empty() && b.is_empty() {
        return 1.0;
    }
    if a.is_empty() || b.is_empty() {
        return 0.0;
    }
    let (mut i, mut j, mut common) = (0, 0, 0usize);
    while i < a.len() && j < b.len() {
        match a[i].cmp(&b[j]) {
            std::cmp::Ordering::Equal => {
                common += 1;
                i += 1;
                j += 1;
            }
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
        }
    }
    2.0 * common as f64 / (a.len() + b.len()) as f64
}

/// Hex sha256 of file content, to tell later whether a file changed since
/// it was read.
pub(crate) fn content_hash(bytes: &[u8]) -> String {
    use sha2::{Digest, Sha256};
    let digest = Sha256::digest(bytes);
    let mut out = String::with_capacity(64);
    for b in digest {
        out.push_str(&format!("{b:02x}"));
    }
    out
}

/// Writes `content` to `path` through a temporary sibling and a rename, so
/// a crash never leaves a half-written file; an existing file keeps its
/// permissions, and a symlink (the guard has checked it stays inside) is
/// written through rather than replaced.
pub(crate) fn write_atomic(path: &Path, content: &[u8]) -> std::io::Result<()> {
    let is_link = std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink());
    let target = if is_link {
        std::fs::canonicalize(path)?
    } else {
        path.to_path_buf()
    };
    let dir = target.parent().unwrap_or_else(|| Path::new("."));
    let name = target
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = dir.join(format!(".{name}.quire-tmp-{}", std::process::id()));
    let result = (|| {
        let mut file = std::fs::File::create(&tmp)?;
        file.write_all(content)?;
        file.sync_all()?;
        if let Ok(meta) = std::fs::metadata(&target) {
            std::fs::set_permissions(&tmp, meta.permissions())?;
        }
        std::fs::rename(&tmp, &target)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

/// A unified diff of one file's change, for the user view. Uses
/// `quire_patch::unified_diff`, whose hunk counts are always consistent.
pub(crate) fn file_diff(path: &str, before: Option<&str>, after: Option<&str>) -> String {
    quire_patch::unified_diff(
        before.map(|_| path),
        after.map(|_| path),
        before.unwrap_or(""),
        after.unwrap_or(""),
        3,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cap_keeps_head_and_tail_with_count() {
        let text: String = (0..1000).map(|i| format!("line {i}\n")).collect();
        let out = cap_output(&text, 500, "[{cut} cut]");
        assert!(out.chars().count() <= 520, "{}", out.len());
        assert!(out.starts_with("line 0\n"));
        assert!(out.trim_end().ends_with("line 999"));
        let marker = out.lines().find(|l| l.ends_with(" cut]")).unwrap();
        let cut: usize = marker
            .trim_start_matches('[')
            .trim_end_matches(" cut]")
            .parse()
            .unwrap();
        assert_eq!(
            cut + out.chars().count() - marker.chars().count() - 1,
            text.chars().count()
        );
    }

    #[test]
    fn cap_leaves_short_text_alone() {
        assert_eq!(cap_output("abc", 10, "[{cut}]"), "abc");
    }

    #[test]
    fn cap_handles_multibyte_without_newlines() {
        let text = "é".repeat(5000);
        let out = cap_output(&text, 100, "[{cut}]");
        assert!(out.chars().count() <= 120);
    }

    #[test]
    fn numbering_aligns_to_widest() {
        assert_eq!(number_lines(&["a", "b"], 9), " 9| a\n10| b");
    }

    #[test]
    fn strips_number_prefixes() {
        assert_eq!(strip_line_number("  12| foo"), Some("foo"));
        assert_eq!(strip_line_number("12|     foo"), Some("    foo"));
        assert_eq!(strip_line_number("3\tbar"), Some("bar"));
        assert_eq!(strip_line_number("foo"), None);
        assert_eq!(strip_line_number("42"), None);
    }

    #[test]
    fn split_lines_handles_crlf_and_final_newline() {
        assert_eq!(split_lines("a\r\nb\n"), vec!["a", "b"]);
        assert_eq!(split_lines("a\n\nb"), vec!["a", "", "b"]);
        assert!(split_lines("").is_empty());
    }

    #[test]
    fn atomic_write_keeps_mode_and_writes_through_links() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::TempDir::new().unwrap();
        let real = dir.path().join("run.sh");
        std::fs::write(&real, "old").unwrap();
        std::fs::set_permissions(&real, std::fs::Permissions::from_mode(0o755)).unwrap();
        let link = dir.path().join("link.sh");
        std::os::unix::fs::symlink(&real, &link).unwrap();
        write_atomic(&link, b"new").unwrap();
        assert!(
            std::fs::symlink_metadata(&link)
                .unwrap()
                .file_type()
                .is_symlink()
        );
        assert_eq!(std::fs::read_to_string(&real).unwrap(), "new");
        assert_eq!(
            std::fs::metadata(&real).unwrap().permissions().mode() & 0o777,
            0o755
        );
        assert_eq!(
            std::fs::read_dir(dir.path()).unwrap().count(),
            2,
            "no temporary file left"
        );
    }

    #[test]
    fn distance_and_similarity() {
        assert_eq!(edit_distance("kitten", "sitting"), 3);
        assert!(line_similarity("def foo(a, b):", "def foo(a, c):") > 0.7);
        assert!(line_similarity("def foo(a, b):", "return None") < 0.3);
    }
}
