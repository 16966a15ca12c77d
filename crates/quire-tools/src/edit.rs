//! `edit_file`: replace one unique occurrence of `old` with `new`, tolerant
//! of the mistakes models make when copying text from `read_file` output.

use quire_core::{Ctx, ToolOutput};
use quire_workspace::SessionCopy;
use serde_json::{Map, Value};

use crate::insert::{Anchor, NotInserted, insertion};
use crate::paths::{Refusal, not_applicable, resolve};
use crate::state::WorkspaceState;
use crate::util::{
    bigram_dice, bigrams, content_hash, file_diff, number_lines, split_lines, str_arg,
    strip_line_number, text, write_atomic,
};

pub(crate) const TOOL: &str = "edit_file";
/// The `[errors]` keys this tool renders (checked when a config loads).
pub(crate) const ERRORS: &[&str] = &[
    "cut",
    "edited",
    "empty_old",
    "io",
    "is_dir",
    "many_matches",
    "no_change",
    "no_match",
    "not_found",
    "not_read",
    "not_text",
    "note_line_numbers",
    "note_partial_line",
    "note_whitespace",
    "outside",
    "not_applicable",
    "splits_block",
    "splits_block_named",
    "old_and_insert",
    "empty_new",
    "insert_unsupported",
    "insert_no_imports",
    "insert_already_imported",
    "insert_no_symbol",
    "insert_many_symbols",
    "insert_loose",
    "insert_indented",
];
/// Lines of context shown around the edited region.
const CONTEXT: usize = 2;
/// Longest edited region shown in full; longer ones show head and tail.
const REGION_MAX: usize = 30;
/// Most lines shown as the nearest candidate for a failed match.
const NEAREST_MAX: usize = 10;
/// Most line numbers listed for an ambiguous match.
const MANY_MAX: usize = 20;

pub(crate) fn run(copy: &SessionCopy, ctx: &mut Ctx, args: &Map<String, Value>) -> ToolOutput {
    let config = ctx.config.clone();
    let raw = str_arg(args, "path").unwrap_or("");
    let old = str_arg(args, "old").unwrap_or("");
    let new = str_arg(args, "new").unwrap_or("");
    let file = match resolve(copy, raw) {
        Ok(file) => file,
        Err(Refusal::Outside) => {
            return ToolOutput::error(text(&config, TOOL, "outside", &[("path", raw)]));
        }
        Err(Refusal::Missing(_)) => {
            return ToolOutput::error(text(&config, TOOL, "not_found", &[("path", raw.trim())]));
        }
    };
    let path = file.rel.as_str();
    if let Some(reason) = not_applicable(copy, &file) {
        return ToolOutput::error(text(
            &config,
            TOOL,
            "not_applicable",
            &[("path", path), ("reason", &reason)],
        ));
    }
    match std::fs::metadata(&file.abs) {
        Err(_) => return ToolOutput::error(text(&config, TOOL, "not_found", &[("path", path)])),
        Ok(meta) if meta.is_dir() => {
            return ToolOutput::error(text(&config, TOOL, "is_dir", &[("path", path)]));
        }
        Ok(_) => {}
    }
    let insert_after = str_arg(args, "insert_after")
        .map(str::trim)
        .filter(|s| !s.is_empty());
    if insert_after.is_some() && !old.is_empty() {
        return ToolOutput::error(text(&config, TOOL, "old_and_insert", &[("path", path)]));
    }
    // An insertion depends on no text the model copied, so it needs no read.
    if insert_after.is_none() && !ctx.state.get_mut::<WorkspaceState>().was_read(path) {
        return ToolOutput::error(text(&config, TOOL, "not_read", &[("path", path)]));
    }
    if insert_after.is_some() && new.trim().is_empty() {
        return ToolOutput::error(text(&config, TOOL, "empty_new", &[("path", path)]));
    }
    if insert_after.is_none() && old.is_empty() {
        return ToolOutput::error(text(&config, TOOL, "empty_old", &[("path", path)]));
    }
    if old == new {
        return ToolOutput::error(text(&config, TOOL, "no_change", &[("path", path)]));
    }
    let content = match std::fs::read(&file.abs).map(String::from_utf8) {
        Ok(Ok(content)) => content,
        Ok(Err(_)) => return ToolOutput::error(text(&config, TOOL, "not_text", &[("path", path)])),
        Err(err) => {
            return ToolOutput::error(text(
                &config,
                TOOL,
                "io",
                &[("path", path), ("error", &err.to_string())],
            ));
        }
    };

    let mut extra_notes = Vec::new();
    let edit = if let Some(anchor) = insert_after {
        match insertion(path, &content, &Anchor::parse(anchor), new) {
            Ok(done) => {
                if done.indented {
                    extra_notes.push(text(
                        &config,
                        TOOL,
                        "insert_indented",
                        &[("symbol", anchor)],
                    ));
                }
                if let Some(name) = done.loose {
                    extra_notes.push(text(
                        &config,
                        TOOL,
                        "insert_loose",
                        &[("symbol", anchor), ("name", &name)],
                    ));
                }
                done.edit
            }
            Err(refusal) => {
                ctx.state
                    .get_mut::<WorkspaceState>()
                    .note_edit_failure(path);
                return ToolOutput::error(insert_refusal(&config, path, anchor, refusal));
            }
        }
    } else {
        match locate(&content, old, new) {
            Located::One(edit) => edit,
            Located::Many { count, mut lines } => {
                ctx.state
                    .get_mut::<WorkspaceState>()
                    .note_edit_failure(path);
                lines.dedup();
                let mut shown: Vec<String> = lines
                    .iter()
                    .take(MANY_MAX)
                    .map(ToString::to_string)
                    .collect();
                if lines.len() > MANY_MAX {
                    shown.push("…".to_string());
                }
                return ToolOutput::error(text(
                    &config,
                    TOOL,
                    "many_matches",
                    &[
                        ("path", path),
                        ("count", &count.to_string()),
                        ("lines", &shown.join(", ")),
                    ],
                ));
            }
            Located::None => {
                ctx.state
                    .get_mut::<WorkspaceState>()
                    .note_edit_failure(path);
                let wanted = strip_numbers(old).unwrap_or_else(|| old.to_string());
                let nearest = nearest_lines(&content, &wanted);
                return ToolOutput::error(text(
                    &config,
                    TOOL,
                    "no_match",
                    &[("path", path), ("nearest", &nearest)],
                ));
            }
        }
    };

    if let Some(split) = splits_block(path, &content, &edit) {
        ctx.state
            .get_mut::<WorkspaceState>()
            .note_edit_failure(path);
        let line = split.next_line.to_string();
        let mut vars = vec![
            ("path", path),
            ("header", split.header.as_str()),
            ("line", line.as_str()),
            ("next", split.next_text.as_str()),
        ];
        let end;
        let key = match &split.block {
            Some((name, block_end)) => {
                end = block_end.to_string();
                vars.push(("block", name.as_str()));
                vars.push(("end", end.as_str()));
                "splits_block_named"
            }
            None => "splits_block",
        };
        return ToolOutput::error(text(&config, TOOL, key, &vars));
    }

    let mut updated = String::with_capacity(content.len() + edit.replacement.len());
    updated.push_str(&content[..edit.start]);
    updated.push_str(&edit.replacement);
    updated.push_str(&content[edit.end..]);
    if updated == content {
        return ToolOutput::error(text(&config, TOOL, "no_change", &[("path", path)]));
    }
    if let Err(err) = write_atomic(&file.abs, updated.as_bytes()) {
        return ToolOutput::error(text(
            &config,
            TOOL,
            "io",
            &[("path", path), ("error", &err.to_string())],
        ));
    }
    ctx.state
        .get_mut::<WorkspaceState>()
        .mark_edited(path, content_hash(updated.as_bytes()));
    ctx.facts.touched(path);

    // A deletion at the end of the file points past its last line.
    let total = split_lines(&updated).len().max(1);
    let first = line_of(&updated, edit.start).min(total);
    let count = split_lines(&edit.replacement).len();
    let last = (first + count).saturating_sub(1).clamp(first, total);
    let mut agent = text(
        &config,
        TOOL,
        "edited",
        &[
            ("path", path),
            ("from", &first.to_string()),
            ("to", &last.to_string()),
            ("region", &region(&updated, first, last)),
        ],
    );
    for note in &edit.notes {
        let key = match note {
            Note::LineNumbers => "note_line_numbers",
            Note::Whitespace => "note_whitespace",
            Note::PartialLastLine => "note_partial_line",
        };
        agent.push('\n');
        agent.push_str(&text(&config, TOOL, key, &[("path", path)]));
    }
    for note in extra_notes {
        agent.push('\n');
        agent.push_str(&note);
    }
    ToolOutput::ok(agent, file_diff(path, Some(&content), Some(&updated)))
}

/// The message for an `insert_after` that found nowhere to insert.
fn insert_refusal(
    config: &quire_config::AgentConfig,
    path: &str,
    anchor: &str,
    refusal: NotInserted,
) -> String {
    match refusal {
        NotInserted::Unsupported => text(config, TOOL, "insert_unsupported", &[("path", path)]),
        NotInserted::NoImports => text(config, TOOL, "insert_no_imports", &[("path", path)]),
        NotInserted::AlreadyImported => {
            text(config, TOOL, "insert_already_imported", &[("path", path)])
        }
        NotInserted::NoSymbol { near } => {
            let near = if near.is_empty() {
                "none".to_string()
            } else {
                near.join(", ")
            };
            text(
                config,
                TOOL,
                "insert_no_symbol",
                &[("path", path), ("symbol", anchor), ("near", &near)],
            )
        }
        NotInserted::ManySymbols(names) => text(
            config,
            TOOL,
            "insert_many_symbols",
            &[
                ("path", path),
                ("symbol", anchor),
                ("names", &names.join(", ")),
            ],
        ),
    }
}

/// An edit that adds a Python definition in the middle of a block: the
/// first line with text after the edited span is indented deeper than the
/// `def`/`class` the edit adds, so the rest of the block `old` ended inside
/// would become the new definition's body. Players anchored a new test on
/// the last lines a search window showed, inside a method that went on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SplitBlock {
    /// The added header line, trimmed.
    pub header: String,
    /// The line (1-based, in the file as it is) that would be taken in.
    pub next_line: usize,
    pub next_text: String,
    /// The definition that line belongs to, and its last line.
    pub block: Option<(String, usize)>,
}

pub(crate) fn splits_block(path: &str, content: &str, edit: &Edit) -> Option<SplitBlock> {
    use crate::symbols::{Syntax, definitions, enclosing, indent_of, python_def};
    if Syntax::of(path) != Some(Syntax::Indent) {
        return None;
    }
    // The span must end at a line boundary: otherwise the rest of its line
    // follows the replacement, and that is the model's text to judge.
    if edit.end > 0 && edit.end < content.len() && !content[..edit.end].ends_with('\n') {
        return None;
    }
    let headers = |text: &str| -> Vec<String> {
        text.lines()
            .filter(|l| python_def().is_match(l))
            .map(str::to_string)
            .collect()
    };
    let old_text = &content[edit.start..edit.end];
    let added = headers(&edit.replacement);
    if added.len() <= headers(old_text).len() {
        return None;
    }
    // The rest of the block belongs to whichever header is open at the end
    // of the span. When `new` ends with the same header and lines as `old`
    // does (a class or stub added above another, `old` kept after it), that
    // owner is unchanged. Live sessions were refused adding a stub above
    // `def intersperse(` and a test class above `class IlenTests`.
    let from_last_header = |text: &'_ str| -> Option<String> {
        let lines: Vec<&str> = text.lines().collect();
        let at = lines.iter().rposition(|l| python_def().is_match(l))?;
        Some(lines[at..].join("\n").trim_end().to_string())
    };
    if let Some(kept) = from_last_header(old_text)
        && from_last_header(&edit.replacement).as_ref() == Some(&kept)
    {
        return None;
    }
    let header = added.last()?;
    let first_after = line_of(content, edit.end.min(content.len()));
    let (offset, next) = content[edit.end.min(content.len())..]
        .lines()
        .enumerate()
        .find(|(_, l)| !l.trim().is_empty())?;
    if indent_of(next) <= indent_of(header) {
        return None;
    }
    let next_line = first_after + offset;
    let lines = split_lines(content);
    let defs = definitions(&lines, Syntax::Indent);
    let block = enclosing(&defs, next_line).map(|d| (d.qualified.clone(), d.end));
    Some(SplitBlock {
        header: header.trim().to_string(),
        next_line,
        next_text: next.trim().to_string(),
        block,
    })
}

/// A tolerance that was needed to apply the edit; the model is told so it
/// can copy text more exactly next time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Note {
    LineNumbers,
    Whitespace,
    /// `old` and `new` ended with a line break where `old`'s last line
    /// stops inside a line of the file.
    PartialLastLine,
}

/// Replace `content[start..end]` with `replacement`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Edit {
    pub start: usize,
    pub end: usize,
    pub replacement: String,
    pub notes: Vec<Note>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Located {
    One(Edit),
    /// How many candidates, and the 1-based lines where they start (in
    /// order; overlapping candidates may share a line).
    Many {
        count: usize,
        lines: Vec<usize>,
    },
    None,
}

/// Finds where `old` applies: exactly; with the file's CRLF line endings;
/// after removing copied line-number prefixes; line by line ignoring
/// trailing whitespace and a uniform indentation shift; then with a final
/// line break dropped from both `old` and `new`.
pub(crate) fn locate(content: &str, old: &str, new: &str) -> Located {
    let found = locate_plain(content, old, new);
    if found != Located::None {
        return found;
    }
    if let Some(found) = partial_last_line(content, old, new) {
        return found;
    }
    if let Some(stripped_old) = strip_numbers(old) {
        let stripped_new = strip_numbers(new).unwrap_or_else(|| new.to_string());
        return match locate_plain(content, &stripped_old, &stripped_new) {
            Located::One(mut edit) => {
                edit.notes.insert(0, Note::LineNumbers);
                Located::One(edit)
            }
            other => other,
        };
    }
    Located::None
}

/// Models often end `old` in the middle of a line and still add a line
/// break (`…the cache grows\n` where the line goes on `as the source…`).
/// When `new` ends the same way, both without that break say what was
/// meant; taken only when it is exact and unique.
fn partial_last_line(content: &str, old: &str, new: &str) -> Option<Located> {
    let (old, new) = (old.strip_suffix('\n')?, new.strip_suffix('\n')?);
    if old.trim().is_empty() {
        return None;
    }
    match exact(content, old, new) {
        Located::One(mut edit) if !content[edit.end..].starts_with(['\n', '\r']) => {
            edit.notes.push(Note::PartialLastLine);
            Some(Located::One(edit))
        }
        _ => None,
    }
}

fn locate_plain(content: &str, old: &str, new: &str) -> Located {
    match exact(content, old, new) {
        Located::None => {}
        found => return found,
    }
    if content.contains("\r\n") && !old.contains('\r') {
        let (old_crlf, new_crlf) = (old.replace('\n', "\r\n"), new.replace('\n', "\r\n"));
        match exact(content, &old_crlf, &new_crlf) {
            Located::None => {}
            found => return found,
        }
    }
    loose(content, old, new)
}

fn exact(content: &str, old: &str, new: &str) -> Located {
    let starts = occurrences(content, old);
    match starts.len() {
        0 => Located::None,
        1 => {
            let (mut start, end) = (starts[0], starts[0] + old.len());
            // Deleting whole lines given without their indentation: take
            // the indentation too, so no blank line of spaces is left.
            if new.is_empty() && old.ends_with('\n') {
                let line_start = content[..start].rfind('\n').map_or(0, |i| i + 1);
                if content[line_start..start].trim().is_empty() {
                    start = line_start;
                }
            }
            Located::One(Edit {
                start,
                end,
                replacement: new.to_string(),
                notes: Vec::new(),
            })
        }
        count => Located::Many {
            count,
            lines: starts.iter().map(|&s| line_of(content, s)).collect(),
        },
    }
}

/// Byte offsets of every occurrence of `needle`, overlapping ones included
/// (an overlap still makes the target ambiguous).
fn occurrences(hay: &str, needle: &str) -> Vec<usize> {
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(pos) = hay[from..].find(needle) {
        let at = from + pos;
        out.push(at);
        let step = hay[at..].chars().next().map_or(1, char::len_utf8);
        from = at + step;
        if from > hay.len() {
            break;
        }
    }
    out
}

/// 1-based line number of byte offset `at`.
pub(crate) fn line_of(content: &str, at: usize) -> usize {
    content.as_bytes()[..at.min(content.len())]
        .iter()
        .filter(|&&b| b == b'\n')
        .count()
        + 1
}

/// `text` without read_file line-number prefixes, when every non-blank line
/// carries one; `None` otherwise.
pub(crate) fn strip_numbers(text: &str) -> Option<String> {
    let lines: Vec<&str> = text.split('\n').collect();
    let mut any = false;
    let mut out = Vec::with_capacity(lines.len());
    for line in &lines {
        if line.trim().is_empty() {
            out.push(*line);
            continue;
        }
        out.push(strip_line_number(line)?);
        any = true;
    }
    any.then(|| out.join("\n"))
}

/// One line of the file with its byte span (terminator excluded).
struct Line<'a> {
    text: &'a str,
    start: usize,
    end: usize,
}

fn file_lines(content: &str) -> Vec<Line<'_>> {
    let mut out = Vec::new();
    let mut start = 0;
    for piece in content.split_inclusive('\n') {
        let body = piece.strip_suffix('\n').unwrap_or(piece);
        let body = body.strip_suffix('\r').unwrap_or(body);
        out.push(Line {
            text: body,
            start,
            end: start + body.len(),
        });
        start += piece.len();
    }
    out
}

fn leading_ws(s: &str) -> &str {
    &s[..s.len() - s.trim_start().len()]
}

/// How `old`'s indentation maps onto the file's.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Shift {
    /// The file has this extra prefix on every non-blank line.
    Add(String),
    /// `old` has this extra prefix on every non-blank line.
    Remove(String),
}

impl Shift {
    fn apply<'a>(&self, line: &'a str) -> std::borrow::Cow<'a, str> {
        match self {
            Shift::Add(extra) if !line.trim().is_empty() => {
                std::borrow::Cow::Owned(format!("{extra}{line}"))
            }
            Shift::Remove(extra) => match line.strip_prefix(extra.as_str()) {
                Some(rest) => std::borrow::Cow::Borrowed(rest),
                // A new line indented less than the shift keeps what it can.
                None => std::borrow::Cow::Borrowed(line.trim_start()),
            },
            _ => std::borrow::Cow::Borrowed(line),
        }
    }
}

fn window_shift(window: &[Line<'_>], old: &[&str]) -> Option<Shift> {
    let (file_line, old_line) = window
        .iter()
        .zip(old)
        .find(|(f, o)| !f.text.trim().is_empty() || !o.trim().is_empty())?;
    let (fi, oi) = (leading_ws(file_line.text), leading_ws(old_line));
    let shift = if let Some(extra) = fi.strip_suffix(oi) {
        Shift::Add(extra.to_string())
    } else if let Some(extra) = oi.strip_suffix(fi) {
        Shift::Remove(extra.to_string())
    } else {
        return None;
    };
    for (f, o) in window.iter().zip(old) {
        if o.trim().is_empty() && f.text.trim().is_empty() {
            continue;
        }
        if shift.apply(o).trim_end() != f.text.trim_end() {
            return None;
        }
        if let Shift::Remove(extra) = &shift
            && !o.starts_with(extra.as_str())
        {
            return None;
        }
    }
    Some(shift)
}

/// Line-wise match ignoring trailing whitespace and a uniform indentation
/// shift; `new` is re-indented by the same shift.
fn loose(content: &str, old: &str, new: &str) -> Located {
    let old_had_newline = old.ends_with('\n');
    let old_body = if old_had_newline {
        &old[..old.len() - 1]
    } else {
        old
    };
    let old_lines: Vec<&str> = old_body
        .split('\n')
        .map(|l| l.strip_suffix('\r').unwrap_or(l))
        .collect();
    if old_lines.iter().all(|l| l.trim().is_empty()) {
        return Located::None;
    }
    let lines = file_lines(content);
    let k = old_lines.len();
    if k > lines.len() {
        return Located::None;
    }
    let mut found: Vec<(usize, Shift)> = Vec::new();
    for s in 0..=(lines.len() - k) {
        if let Some(shift) = window_shift(&lines[s..s + k], &old_lines) {
            found.push((s, shift));
        }
    }
    match found.len() {
        0 => Located::None,
        1 => {
            let (s, shift) = &found[0];
            let start = lines[*s].start;
            let mut end = lines[s + k - 1].end;
            let new_body = if old_had_newline {
                new.strip_suffix('\n').unwrap_or(new)
            } else {
                new
            };
            let eol = if content.contains("\r\n") {
                "\r\n"
            } else {
                "\n"
            };
            let replacement = if new_body.is_empty() && old_had_newline {
                // Deleting whole lines: take their line break too.
                end = content[end..]
                    .find('\n')
                    .map_or(content.len(), |i| end + i + 1);
                String::new()
            } else {
                new_body
                    .split('\n')
                    .map(|l| shift.apply(l.strip_suffix('\r').unwrap_or(l)).into_owned())
                    .collect::<Vec<_>>()
                    .join(eol)
            };
            Located::One(Edit {
                start,
                end,
                replacement,
                notes: vec![Note::Whitespace],
            })
        }
        count => Located::Many {
            count,
            lines: found.iter().map(|(s, _)| s + 1).collect(),
        },
    }
}

/// The lines of `content` most like `wanted`, numbered, for a failed match.
pub(crate) fn nearest_lines(content: &str, wanted: &str) -> String {
    let lines = split_lines(content);
    let wanted: Vec<&str> = split_lines(wanted)
        .into_iter()
        .skip_while(|l| l.trim().is_empty())
        .collect();
    let wanted: Vec<&str> = {
        let end = wanted
            .iter()
            .rposition(|l| !l.trim().is_empty())
            .map_or(0, |i| i + 1);
        wanted[..end].to_vec()
    };
    if lines.is_empty() || wanted.is_empty() {
        return String::new();
    }
    let (start, len) = best_window(&lines, &wanted);
    let (from, to) = if len + 2 <= NEAREST_MAX {
        (start.saturating_sub(1), (start + len + 1).min(lines.len()))
    } else {
        (start, (start + NEAREST_MAX).min(lines.len()))
    };
    number_lines(&lines[from..to], from + 1)
}

/// Above this many line comparisons only the most distinctive line of
/// `wanted` is looked for.
const WINDOW_BUDGET: usize = 2_000_000;

/// 0-based start and length of the window of `lines` most similar to
/// `wanted` (mean line similarity).
fn best_window(lines: &[&str], wanted: &[&str]) -> (usize, usize) {
    let k = wanted.len().min(lines.len());
    let file_grams: Vec<Vec<(char, char)>> = lines.iter().map(|l| bigrams(l)).collect();
    let want_grams: Vec<Vec<(char, char)>> = wanted.iter().map(|l| bigrams(l)).collect();
    if lines.len().saturating_mul(k) <= WINDOW_BUDGET {
        let mut best = (0, f64::MIN);
        for s in 0..=(lines.len() - k) {
            let score: f64 = (0..k)
                .map(|j| bigram_dice(&file_grams[s + j], &want_grams[j]))
                .sum();
            if score > best.1 {
                best = (s, score);
            }
        }
        return (best.0, k);
    }
    let anchor = (0..wanted.len())
        .max_by_key(|&j| wanted[j].trim().len())
        .unwrap_or(0);
    let mut best = (0, f64::MIN);
    for (i, grams) in file_grams.iter().enumerate() {
        let score = bigram_dice(grams, &want_grams[anchor]);
        if score > best.1 {
            best = (i, score);
        }
    }
    (best.0.saturating_sub(anchor).min(lines.len() - k), k)
}

/// Lines `first..=last` of `content` with a little context, numbered; long
/// regions keep their head and tail.
pub(crate) fn region(content: &str, first: usize, last: usize) -> String {
    let lines = split_lines(content);
    if lines.is_empty() {
        return String::new();
    }
    let from = first.saturating_sub(CONTEXT).max(1);
    let to = (last + CONTEXT).min(lines.len());
    if from > to {
        return String::new();
    }
    let shown = &lines[from - 1..to];
    if shown.len() <= REGION_MAX {
        return number_lines(shown, from);
    }
    let half = REGION_MAX / 2;
    let head = number_lines(&shown[..half], from);
    let tail_from = to - half + 1;
    let tail = number_lines(&shown[shown.len() - half..], tail_from);
    format!("{head}\n…\n{tail}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn apply(content: &str, old: &str, new: &str) -> (String, Vec<Note>) {
        match locate(content, old, new) {
            Located::One(e) => (
                format!(
                    "{}{}{}",
                    &content[..e.start],
                    e.replacement,
                    &content[e.end..]
                ),
                e.notes,
            ),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn an_old_ending_inside_a_line_with_a_break_applies_without_it() {
        let content = "    >>> e\n\n    By default, the cache grows as it goes.\n";
        let (out, notes) = apply(
            content,
            "    >>> e\n\n    By default, the cache grows\n",
            "    >>> e\n\n    Index it too.\n\n    By default, the cache grows\n",
        );
        assert_eq!(
            out,
            "    >>> e\n\n    Index it too.\n\n    By default, the cache grows as it goes.\n"
        );
        assert_eq!(notes, vec![Note::PartialLastLine]);
        // Not when `new` does not end with a break too, nor when ambiguous.
        assert_eq!(
            locate(content, "the cache grows\n", "the cache grows"),
            Located::None
        );
        assert_eq!(locate("ab x\nab y\n", "ab\n", "AB\n"), Located::None);
    }

    #[test]
    fn exact_unique_replacement() {
        let (out, notes) = apply("a\nb\nc\n", "b\n", "B\n");
        assert_eq!(out, "a\nB\nc\n");
        assert!(notes.is_empty());
    }

    #[test]
    fn deleting_an_unindented_line_takes_its_indentation() {
        let (out, _) = apply("def f():\n    a = 1\n    return a\n", "a = 1\n", "");
        assert_eq!(out, "def f():\n    return a\n");
    }

    #[test]
    fn ambiguous_lists_lines() {
        assert_eq!(
            locate("x\ny\nx\n", "x", "z"),
            Located::Many {
                count: 2,
                lines: vec![1, 3]
            }
        );
        assert_eq!(
            locate("aaa\n", "aa", "b"),
            Located::Many {
                count: 2,
                lines: vec![1, 1]
            }
        );
    }

    #[test]
    fn crlf_file_with_lf_old() {
        let (out, _) = apply("a\r\nb\r\nc\r\n", "a\nb\n", "a\nB\n");
        assert_eq!(out, "a\r\nB\r\nc\r\n");
    }

    #[test]
    fn copied_line_numbers_are_stripped() {
        let content = "def f():\n    return 1\n";
        let (out, notes) = apply(
            content,
            "1| def f():\n2|     return 1",
            "1| def f():\n2|     return 2",
        );
        assert_eq!(out, "def f():\n    return 2\n");
        assert_eq!(notes, vec![Note::LineNumbers]);
    }

    #[test]
    fn indentation_shift_is_tolerated_and_applied_to_new() {
        let content = "class A:\n    def f(self):\n        return 1\n";
        let (out, notes) = apply(
            content,
            "def f(self):\n    return 1\n",
            "def f(self):\n    return 2\n",
        );
        assert_eq!(out, "class A:\n    def f(self):\n        return 2\n");
        assert_eq!(notes, vec![Note::Whitespace]);
    }

    #[test]
    fn trailing_whitespace_is_tolerated() {
        let content = "x = 1   \ny = 2\n";
        let (out, _) = apply(content, "x = 1\ny = 2", "x = 3\ny = 2");
        assert_eq!(out, "x = 3\ny = 2\n");
    }

    #[test]
    fn deleting_lines_loosely_takes_the_break() {
        let content = "a\n  b  \nc\n";
        let (out, _) = apply(content, "  b\n", "");
        assert_eq!(out, "a\nc\n");
    }

    #[test]
    fn nearest_shows_the_similar_region() {
        let content: String = (1..=50).map(|i| format!("line {i}\n")).collect::<String>()
            + "def compute(a, b):\n    return a + b\n";
        let near = nearest_lines(&content, "def compute(a, c):\n    return a * b\n");
        assert!(near.contains("51| def compute(a, b):"), "{near}");
        assert!(near.contains("52|     return a + b"), "{near}");
    }
}
