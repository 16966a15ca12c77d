//! Producing unified diffs that this crate's parser and `git apply` accept.
//!
//! `similar` computes the edit script, but its op indices are not always
//! consistent (Myers in 2.7 can emit a `Delete` whose `new_index` lags an
//! earlier `Equal`), and its hunk headers are derived from those indices.
//! So we only trust the op *lengths*, re-index them sequentially, check every
//! `Equal` line really is equal, and count hunk lines ourselves.

use std::time::{Duration, Instant};

use similar::{Algorithm, DiffOp, capture_diff_slices_deadline};

/// Upper bound on time spent finding a minimal diff; after it the diff is
/// still correct, just possibly larger.
const DIFF_DEADLINE: Duration = Duration::from_secs(2);

#[derive(Clone, Copy, PartialEq, Eq)]
enum Tag {
    Equal,
    Delete,
    Insert,
}

/// One line of the edit script, with the old/new line counts before it.
struct Entry<'a> {
    tag: Tag,
    text: &'a str,
    old_before: usize,
    new_before: usize,
}

/// The hunks (`@@ … @@` and bodies, no file headers) turning `old` into
/// `new`, with `context` lines of context. Empty when the texts are equal.
pub fn unified_hunks(old: &str, new: &str, context: usize) -> String {
    let old_lines: Vec<&str> = old.split_inclusive('\n').collect();
    let new_lines: Vec<&str> = new.split_inclusive('\n').collect();
    let deadline = Instant::now().checked_add(DIFF_DEADLINE);
    let ops = capture_diff_slices_deadline(Algorithm::Myers, &old_lines, &new_lines, deadline);
    let entries = script(&ops, &old_lines, &new_lines);
    render(&entries, context)
}

/// A unified diff with `--- a/old` / `+++ b/new` headers (`None` for
/// `/dev/null`). Empty when the texts are equal.
pub fn unified_diff(
    old_path: Option<&str>,
    new_path: Option<&str>,
    old: &str,
    new: &str,
    context: usize,
) -> String {
    let hunks = unified_hunks(old, new, context);
    if hunks.is_empty() {
        return hunks;
    }
    let old_header = old_path.map_or_else(|| "/dev/null".to_string(), |p| format!("a/{p}"));
    let new_header = new_path.map_or_else(|| "/dev/null".to_string(), |p| format!("b/{p}"));
    format!("--- {old_header}\n+++ {new_header}\n{hunks}")
}

/// Flatten ops into per-line entries, trusting only their lengths.
fn script<'a>(ops: &[DiffOp], old: &[&'a str], new: &[&'a str]) -> Vec<Entry<'a>> {
    let mut out = Vec::with_capacity(old.len().max(new.len()));
    let (mut o, mut n) = (0usize, 0usize);
    let mut push = |tag, text, o: &mut usize, n: &mut usize| {
        out.push(Entry {
            tag,
            text,
            old_before: *o,
            new_before: *n,
        });
        match tag {
            Tag::Equal => {
                *o += 1;
                *n += 1;
            }
            Tag::Delete => *o += 1,
            Tag::Insert => *n += 1,
        }
    };
    for op in ops {
        let (_, old_range, new_range) = op.as_tag_tuple();
        let (ol, nl) = (old_range.len(), new_range.len());
        let equal = matches!(op, DiffOp::Equal { .. })
            && ol == nl
            && (0..ol).all(|i| old.get(o + i).is_some() && old.get(o + i) == new.get(n + i));
        let (o0, n0) = (o, n);
        if equal {
            for t in old.iter().skip(o0).take(ol) {
                push(Tag::Equal, *t, &mut o, &mut n);
            }
        } else {
            for t in old.iter().skip(o0).take(ol) {
                push(Tag::Delete, *t, &mut o, &mut n);
            }
            for t in new.iter().skip(n0).take(nl) {
                push(Tag::Insert, *t, &mut o, &mut n);
            }
        }
    }
    // Whatever the ops missed (they should not) becomes a change at the end.
    for t in old.iter().skip(o) {
        push(Tag::Delete, *t, &mut o, &mut n);
    }
    let n_end = n;
    for t in new.iter().skip(n_end) {
        push(Tag::Insert, *t, &mut o, &mut n);
    }
    out
}

fn render(entries: &[Entry<'_>], context: usize) -> String {
    let changes: Vec<usize> = entries
        .iter()
        .enumerate()
        .filter(|(_, e)| e.tag != Tag::Equal)
        .map(|(i, _)| i)
        .collect();
    let mut out = String::new();
    let mut k = 0;
    while k < changes.len() {
        // Extend the hunk while the next change is within 2*context lines.
        let first = changes[k];
        let mut last = first;
        while k + 1 < changes.len() && changes[k + 1] - last <= 2 * context + 1 {
            k += 1;
            last = changes[k];
        }
        k += 1;
        let start = first.saturating_sub(context);
        let end = (last + context + 1).min(entries.len());
        write_hunk(&mut out, &entries[start..end]);
    }
    out
}

fn write_hunk(out: &mut String, body: &[Entry<'_>]) {
    let Some(first) = body.first() else {
        return;
    };
    let old_count = body.iter().filter(|e| e.tag != Tag::Insert).count();
    let new_count = body.iter().filter(|e| e.tag != Tag::Delete).count();
    // git numbers an empty range by the line before it.
    let start = |before: usize, count: usize| if count == 0 { before } else { before + 1 };
    out.push_str(&format!(
        "@@ -{} +{} @@\n",
        range(start(first.old_before, old_count), old_count),
        range(start(first.new_before, new_count), new_count)
    ));
    for e in body {
        out.push(match e.tag {
            Tag::Equal => ' ',
            Tag::Delete => '-',
            Tag::Insert => '+',
        });
        match e.text.strip_suffix('\n') {
            Some(t) => {
                out.push_str(t);
                out.push('\n');
            }
            None => {
                out.push_str(e.text);
                out.push_str("\n\\ No newline at end of file\n");
            }
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

    #[test]
    fn renders_git_style() {
        let d = unified_diff(Some("f"), Some("f"), "a\nb\nc\n", "a\nB\nc\n", 3);
        assert_eq!(d, "--- a/f\n+++ b/f\n@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n");
        let d = unified_diff(None, Some("n"), "", "x\ny", 3);
        assert_eq!(
            d,
            "--- /dev/null\n+++ b/n\n@@ -0,0 +1,2 @@\n+x\n+y\n\\ No newline at end of file\n"
        );
        assert_eq!(
            unified_diff(Some("f"), Some("f"), "same\n", "same\n", 3),
            ""
        );
    }

    #[test]
    fn survives_similar_myers_index_bug() {
        // similar 2.7's Myers emits inconsistent indices for this pair.
        let old = " \n  trailing  \n  trailing  ";
        let new = " \nnew -- sql comment\n  trailing  \n  trailing  \n";
        for ctx in [0, 1, 3] {
            let d = unified_diff(Some("f"), Some("f"), old, new, ctx);
            let p = crate::parse(&d).unwrap();
            assert_eq!(crate::apply(old, &p.files[0]).unwrap().text, new);
        }
    }
}
