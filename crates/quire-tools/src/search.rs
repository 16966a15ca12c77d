//! `search`: `path:line:text` hits for a literal or a regex, honouring
//! `.gitignore`; a hit inside a function or class names it
//! (`path:line (in Class.method):text`), so the model knows which
//! definition to read or which test class to extend without reading the
//! file around the hit.

use std::collections::HashMap;
use std::fs::File;
use std::path::{Path, PathBuf};

use grep_matcher::Matcher;
use grep_regex::{RegexMatcher, RegexMatcherBuilder};
use grep_searcher::sinks::Lossy;
use grep_searcher::{BinaryDetection, Searcher, SearcherBuilder, Sink, SinkMatch};
use ignore::overrides::OverrideBuilder;
use quire_config::AgentConfig;
use quire_core::ToolOutput;
use serde_json::{Map, Value};

use crate::paths::{Refusal, Resolved};
use crate::symbols::{self, Definition, Syntax, definitions};
use crate::util::{bool_arg, str_arg, text};
use crate::walk::{rel_string, walk_each};

pub const TOOL: &str = "search";
/// The `[errors]` keys this tool renders (checked when a config loads).
pub(crate) const ERRORS: &[&str] = &[
    "bad_glob",
    "bad_regex",
    "continues",
    "cut",
    "empty_pattern",
    "no_hits",
    "no_hits_glob",
    "no_hits_plain",
    "as_regex",
    "not_found",
    "outside",
    "truncated",
];
/// A searcher as both passes use it: binary files (a NUL byte) left at the
/// first one; line numbers only where hits are shown (counting the lines
/// of every file is work the counting pass does not need).
fn searcher(line_numbers: bool) -> Searcher {
    SearcherBuilder::new()
        .line_number(line_numbers)
        .binary_detection(BinaryDetection::quit(0))
        .build()
}

/// `path` opened for a search, unless it is over [`MAX_FILE_BYTES`] (one
/// `fstat` on the open file rather than a `stat` of the path, then the open).
fn open_small(path: &Path) -> std::io::Result<File> {
    let file = File::open(path)?;
    if file.metadata()?.len() > MAX_FILE_BYTES {
        return Err(std::io::Error::other("over the size limit"));
    }
    Ok(file)
}

/// How many lines of `path` match (0 for a file that cannot be searched).
/// No hit text is made here: most files have none, and a common pattern's
/// hundreds of thousands would only be dropped past the cap.
fn count_hits(searcher: &mut Searcher, matcher: &RegexMatcher, path: &Path) -> usize {
    let mut count = CountLines(0);
    let result = open_small(path).and_then(|f| searcher.search_file(matcher, &f, &mut count));
    if let Err(err) = result {
        tracing::debug!(file = %path.display(), %err, "search skipped a file");
    }
    count.0
}

/// A sink that counts matching lines, as the hit pass's `Lossy` sink sees
/// them (one call per matching line).
struct CountLines(usize);

impl Sink for CountLines {
    type Error = std::io::Error;

    fn matched(&mut self, _: &Searcher, _: &SinkMatch<'_>) -> Result<bool, std::io::Error> {
        self.0 += 1;
        Ok(true)
    }
}

/// Longest hit text shown; longer lines are cut around the match.
const HIT_CHARS: usize = 200;
/// The task's own files at the workspace root (Ark layout): `prompt.txt`,
/// and `metadata.json` beside it. The model already has the task, so hits
/// in them are noise.
pub(crate) fn is_task_file(root: &Path, path: &Path) -> bool {
    // The name first: this runs for every file of the walk.
    let name = path.file_name();
    if name != Some("prompt.txt".as_ref()) && name != Some("metadata.json".as_ref()) {
        return false;
    }
    let rel = rel_string(root, path);
    rel == "prompt.txt" || (rel == "metadata.json" && root.join("prompt.txt").is_file())
}
/// Most lines `after` may ask for per hit: a long function, not a file.
const MAX_AFTER: usize = 80;
/// Hits shown with their following lines at most (each is a small read).
const MAX_CONTEXT_HITS: usize = 8;
/// Files above this size (data dumps, bundles) are not searched.
const MAX_FILE_BYTES: u64 = 4 * 1024 * 1024;

/// Everything a search needs, owned, so it can run off the async thread.
pub(crate) struct Request {
    pub root: PathBuf,
    pub target: Result<Resolved, Refusal>,
    pub raw_path: String,
    pub pattern: String,
    pub regex: bool,
    pub ignore_case: bool,
    pub glob: Option<String>,
    /// Lines shown after each hit, in the read_file format (0: hit lines only).
    pub after: usize,
}

/// A glob as the model meant it: models often copy the quotes of an
/// example (`"*.py"`), and no file name starts and ends with them.
fn unquoted(glob: &str) -> &str {
    let glob = glob.trim();
    ['"', '\'', '`']
        .iter()
        .find_map(|q| glob.strip_prefix(*q).and_then(|g| g.strip_suffix(*q)))
        .map_or(glob, str::trim)
}

impl Request {
    pub(crate) fn from_args(
        root: &Path,
        target: Result<Resolved, Refusal>,
        args: &Map<String, Value>,
    ) -> Request {
        Request {
            root: root.to_path_buf(),
            target,
            raw_path: str_arg(args, "path").unwrap_or("").to_string(),
            pattern: str_arg(args, "pattern").unwrap_or("").to_string(),
            regex: bool_arg(args, "regex").unwrap_or(false),
            ignore_case: bool_arg(args, "ignore_case").unwrap_or(false),
            glob: str_arg(args, "glob")
                .map(unquoted)
                .filter(|g| !g.is_empty())
                .map(str::to_string),
            after: crate::util::int_arg(args, "after").map_or(0, |n| {
                usize::try_from(n).unwrap_or(MAX_AFTER).min(MAX_AFTER)
            }),
        }
    }
}

/// Runs the search; also returns the files whose hits were shown, with
/// their content hashes: the model has seen those lines, so they count as
/// read for `edit_file` (a rename after a search needs no extra reads).
///
/// A plain-text search that finds nothing for a pattern written as a
/// regular expression (`^from itertools import`) is run again as one, and
/// says so: a player spent a call learning that `^` was taken literally.
pub(crate) fn run(config: &AgentConfig, req: &Request) -> (ToolOutput, Vec<(String, String)>) {
    let mut seen = Vec::new();
    let mut total = 0;
    let out = search(config, req, &mut seen, &mut total);
    if total == 0 && !req.regex && looks_like_regex(&req.pattern) {
        let as_regex = Request {
            regex: true,
            target: req.target.clone(),
            root: req.root.clone(),
            raw_path: req.raw_path.clone(),
            pattern: req.pattern.clone(),
            glob: req.glob.clone(),
            ..*req
        };
        let mut seen_regex = Vec::new();
        let mut total_regex = 0;
        let again = search(config, &as_regex, &mut seen_regex, &mut total_regex);
        if total_regex > 0 && !again.is_error {
            let note = text(config, TOOL, "as_regex", &[("pattern", &req.pattern)]);
            let agent = format!("{note}\n{}", again.agent_view);
            return (ToolOutput::ok(agent.clone(), agent), seen_regex);
        }
    }
    (out, seen)
}

fn search(
    config: &AgentConfig,
    req: &Request,
    seen: &mut Vec<(String, String)>,
    hits_found: &mut usize,
) -> ToolOutput {
    let target = match &req.target {
        Ok(target) => target,
        Err(Refusal::Outside) => {
            return ToolOutput::error(text(config, TOOL, "outside", &[("path", &req.raw_path)]));
        }
        Err(Refusal::Missing(_)) => {
            return ToolOutput::error(text(config, TOOL, "not_found", &[("path", &req.raw_path)]));
        }
    };
    let meta = match std::fs::metadata(&target.abs) {
        Ok(meta) => meta,
        Err(_) => {
            return ToolOutput::error(text(config, TOOL, "not_found", &[("path", &req.raw_path)]));
        }
    };
    if req.pattern.is_empty() {
        return ToolOutput::error(text(config, TOOL, "empty_pattern", &[]));
    }
    let matcher = match RegexMatcherBuilder::new()
        .fixed_strings(!req.regex)
        .case_insensitive(req.ignore_case)
        .line_terminator(Some(b'\n'))
        .build(&req.pattern)
    {
        Ok(m) => m,
        Err(err) => {
            return ToolOutput::error(text(
                config,
                TOOL,
                "bad_regex",
                &[("error", &err.to_string())],
            ));
        }
    };
    let overrides = match (&req.glob, meta.is_dir()) {
        (Some(glob), true) => {
            let built = OverrideBuilder::new(&req.root)
                .add(glob)
                .and_then(|b| b.build());
            match built {
                Ok(o) => Some(o),
                Err(err) => {
                    return ToolOutput::error(text(
                        config,
                        TOOL,
                        "bad_glob",
                        &[("glob", glob), ("error", &err.to_string())],
                    ));
                }
            }
        }
        _ => None,
    };
    // First, on every core: which files have hits and how many, in path
    // order (the sorted walk's order), so the output does not depend on
    // which thread got there first.
    let with_hits: Vec<(PathBuf, usize)> = if meta.is_dir() {
        let root = req.root.as_path();
        let mut found: Vec<(PathBuf, usize)> = walk_each(
            root,
            &target.abs,
            None,
            overrides,
            || (searcher(false), Vec::new()),
            |(searcher, found): &mut (Searcher, Vec<(PathBuf, usize)>), entry| {
                if entry.file_type().is_some_and(|t| t.is_dir()) || is_task_file(root, entry.path())
                {
                    return;
                }
                let n = count_hits(searcher, &matcher, entry.path());
                if n > 0 {
                    found.push((entry.into_path(), n));
                }
            },
        )
        .into_iter()
        .flat_map(|(_, found)| found)
        .collect();
        found.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        found
    } else if is_task_file(&req.root, &target.abs) {
        Vec::new()
    } else {
        let n = count_hits(&mut searcher(false), &matcher, &target.abs);
        vec![(target.abs.clone(), n)]
    };

    let mut max_hits = config.limits.search_max_hits as usize;
    if req.after > 0 {
        max_hits = max_hits.min(MAX_CONTEXT_HITS);
    }
    // Hits are gathered up to a quarter past the cap: a search that
    // overshoots by a few shows them all (players spent a call on the one
    // hit of 41 left out), one that overshoots by more is cut at the cap.
    let gather = if req.after > 0 {
        max_hits
    } else {
        max_hits + max_hits / 4
    };
    // Per file with hits: its path, hits gathered, hits found.
    let mut per_file: Vec<(String, usize, usize)> = Vec::new();
    // Shown hits: path, line number, line text.
    let mut hits: Vec<(String, u64, String)> = Vec::new();
    // With `after`: per file with shown hits, its hit line numbers.
    let mut hit_lines: Vec<(PathBuf, String, Vec<u64>)> = Vec::new();
    let mut total = 0usize;
    let mut files_hit = 0usize;
    // Files with hits past the cap, and how many: the model can aim a
    // second search at them instead of guessing.
    let mut cut: Vec<(String, usize)> = Vec::new();
    let mut searcher = searcher(true);
    // Then the hit lines, from the first files in order until enough are
    // gathered (a handful of files searched again); the rest only count.
    for (file, counted) in &with_hits {
        let rel = rel_string(&req.root, file);
        let shown_before = hits.len();
        let mut found = *counted;
        if hits.len() < gather {
            found = 0;
            let mut numbers = Vec::new();
            let result = open_small(file).and_then(|f| {
                searcher.search_file(
                    &matcher,
                    &f,
                    Lossy(|line_number, line| {
                        found += 1;
                        if hits.len() < gather {
                            hits.push((rel.clone(), line_number, hit_text(&matcher, line)));
                            numbers.push(line_number);
                        }
                        Ok(true)
                    }),
                )
            });
            if let Err(err) = result {
                tracing::debug!(file = %file.display(), %err, "search skipped a file");
            }
            if req.after > 0 && !numbers.is_empty() {
                hit_lines.push((file.clone(), rel.clone(), numbers));
            }
        }
        if found > 0 {
            total += found;
            files_hit += 1;
            per_file.push((rel, hits.len() - shown_before, found));
        }
    }
    if total > gather {
        hits.truncate(max_hits);
    }
    let mut budget = hits.len();
    // Per shown file in a known language, its definitions: each hit names
    // the function or class it is in.
    let mut scopes: HashMap<String, Vec<Definition>> = HashMap::new();
    for (rel, gathered, found) in per_file {
        let shown_here = gathered.min(budget);
        budget -= shown_here;
        if found > shown_here {
            cut.push((rel.clone(), found - shown_here));
        }
        if shown_here > 0
            && let Ok(bytes) = std::fs::read(req.root.join(&rel))
        {
            seen.push((rel.clone(), crate::util::content_hash(&bytes)));
            if let Some(syntax) = Syntax::of(&rel) {
                let content = String::from_utf8_lossy(&bytes);
                let lines = crate::util::split_lines(&content);
                scopes.insert(rel, definitions(&lines, syntax));
            }
        }
    }

    let where_ = target.rel.as_str();
    *hits_found = total;
    if total == 0 {
        let out = match &req.glob {
            _ if !req.regex && looks_like_regex(&req.pattern) => text(
                config,
                TOOL,
                "no_hits_plain",
                &[("pattern", &req.pattern), ("path", where_)],
            ),
            Some(glob) => text(
                config,
                TOOL,
                "no_hits_glob",
                &[("pattern", &req.pattern), ("path", where_), ("glob", glob)],
            ),
            None => text(
                config,
                TOOL,
                "no_hits",
                &[("pattern", &req.pattern), ("path", where_)],
            ),
        };
        return ToolOutput::ok(out.clone(), out);
    }
    let mut out = if req.after > 0 {
        with_following_lines(config, &hit_lines, req.after)
    } else {
        hits.iter()
            .map(|(rel, number, line)| {
                let scope = scopes.get(rel).and_then(|defs| {
                    symbols::enclosing(defs, usize::try_from(*number).unwrap_or(usize::MAX))
                });
                match scope {
                    Some(def) => format!("{rel}:{number} (in {}):{line}", def.qualified),
                    None => format!("{rel}:{number}:{line}"),
                }
            })
            .collect::<Vec<_>>()
            .join("\n")
    };
    if total > hits.len() {
        out.push('\n');
        out.push_str(&text(
            config,
            TOOL,
            "truncated",
            &[
                ("cut", &(total - hits.len()).to_string()),
                ("shown", &hits.len().to_string()),
                ("rest", &cut_files(&cut)),
                ("total", &total.to_string()),
                ("files", &files_hit.to_string()),
            ],
        ));
    }
    ToolOutput::ok(out.clone(), out)
}

/// Each hit with the `after` lines that follow it, as `path:first-last`
/// and the lines in the read_file format; ranges that touch are merged, so
/// a line is shown once. A range that ends inside the hit's block (the
/// next line with text is indented deeper than the hit) says so: a model
/// that took the window for the whole function anchored edits in the
/// middle of one.
fn with_following_lines(
    config: &AgentConfig,
    hit_lines: &[(PathBuf, String, Vec<u64>)],
    after: usize,
) -> String {
    let mut blocks = Vec::new();
    for (file, rel, numbers) in hit_lines {
        let Ok(bytes) = std::fs::read(file) else {
            continue;
        };
        let content = String::from_utf8_lossy(&bytes);
        let lines = crate::util::split_lines(&content);
        let defs = Syntax::of(rel).map_or_else(Vec::new, |syntax| definitions(&lines, syntax));
        let mut ranges: Vec<(usize, usize)> = Vec::new();
        for &n in numbers {
            let first = usize::try_from(n).unwrap_or(usize::MAX).max(1);
            let last = first.saturating_add(after).min(lines.len());
            match ranges.last_mut() {
                Some(range) if first <= range.1 + 1 => range.1 = range.1.max(last),
                _ => ranges.push((first, last)),
            }
        }
        for (first, last) in ranges {
            if first > lines.len() {
                continue;
            }
            let continues = block_continues(&lines, first, last);
            let last = if continues {
                complete_items_end(&lines, first, last)
            } else {
                last
            };
            let scope = symbols::enclosing(&defs, first)
                .map(|def| format!(" (in {})", def.qualified))
                .unwrap_or_default();
            let mut block = format!(
                "{rel}:{first}-{last}{scope}\n{}",
                crate::util::number_lines(&lines[first - 1..last], first)
            );
            if continues {
                block.push('\n');
                block.push_str(&text(
                    config,
                    TOOL,
                    "continues",
                    &[
                        ("path", rel.as_str()),
                        ("line", &last.to_string()),
                        ("next", &(last + 1).to_string()),
                    ],
                ));
            }
            blocks.push(block);
        }
    }
    blocks.join("\n")
}

/// Whether the block opened at line `first` (1-based) goes on past line
/// `last`: the next line with text is indented deeper than line `first`.
fn block_continues(lines: &[&str], first: usize, last: usize) -> bool {
    let indent = |l: &str| l.len() - l.trim_start().len();
    let Some(head) = lines.get(first.saturating_sub(1)) else {
        return false;
    };
    lines
        .iter()
        .skip(last)
        .find(|l| !l.trim().is_empty())
        .is_some_and(|next| indent(next) > indent(head))
}

/// Where a window that ends inside the hit's block should end so that it
/// shows only whole inner definitions: before the last method (with its
/// decorators) that the window would cut, when the hit is a class header,
/// one starts after the hit and at most half the window goes. Players took
/// a window ending mid-method for the method's end and put new tests
/// inside it. A function's nested definitions are its body, not items:
/// cutting before one left a player a call short of `chunked`'s end.
fn complete_items_end(lines: &[&str], first: usize, last: usize) -> usize {
    let indent = |l: &str| l.len() - l.trim_start().len();
    let Some(head) = lines.get(first.saturating_sub(1)) else {
        return last;
    };
    if !head.trim_start().starts_with("class ") {
        return last;
    }
    let head_indent = indent(head);
    let Some(mut cut) = (first + 1..=last).rev().find(|&n| {
        let line = lines[n - 1];
        !line.trim().is_empty() && indent(line) > head_indent && starts_definition(line)
    }) else {
        return last;
    };
    while cut - 1 > first && lines[cut - 2].trim_start().starts_with('@') {
        cut -= 1;
    }
    let mut end = cut - 1;
    while end > first && lines[end - 1].trim().is_empty() {
        end -= 1;
    }
    // A short window keeps its partial method: cut back to the hit line
    // and little else, it would show less than the model asked to see.
    let shown = last + 1 - first;
    if end > first && (last - end) * 2 <= shown {
        end
    } else {
        last
    }
}

/// Whether a line opens a definition (Python, Rust, JavaScript, Go).
fn starts_definition(line: &str) -> bool {
    let text = line.trim_start();
    let text = text
        .strip_prefix("pub(crate) ")
        .or_else(|| text.strip_prefix("pub "))
        .or_else(|| text.strip_prefix("async "))
        .unwrap_or(text);
    ["def ", "class ", "fn ", "function ", "func ", "@"]
        .iter()
        .any(|k| text.starts_with(k))
}

/// The hit line as it is in the file (indentation kept, so a hit can be
/// copied into an edit), without its line ending, cut to [`HIT_CHARS`]
/// characters around the first match when it is longer.
fn hit_text(matcher: &RegexMatcher, line: &str) -> String {
    let line = line.trim_end();
    let count = line.chars().count();
    if count <= HIT_CHARS {
        return line.to_string();
    }
    let match_start = matcher
        .find(line.as_bytes())
        .ok()
        .flatten()
        .map_or(0, |m| m.start());
    let match_char = line.get(..match_start).map_or(0, |s| s.chars().count());
    let start = match_char
        .saturating_sub(HIT_CHARS / 4)
        .min(count - HIT_CHARS);
    let body: String = line.chars().skip(start).take(HIT_CHARS).collect();
    let mut out = String::with_capacity(body.len() + 6);
    if start > 0 {
        out.push('…');
    }
    out.push_str(&body);
    if start + HIT_CHARS < count {
        out.push('…');
    }
    out
}

/// The file and first line a search hit or window names: `path:12:text`,
/// `path:12 (in Scope):text` for a hit inside a function or class, and
/// `path:12-20` or `path:12-20 (in Scope)` heading an `after` window.
/// `None` for any other line of a search result (a window's numbered
/// lines, a cap notice).
pub fn hit_location(line: &str) -> Option<(&str, u64)> {
    let (path, rest) = line.split_once(':')?;
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    let mut tail = &rest[digits..];
    if let Some(range_end) = tail.strip_prefix('-') {
        let end_digits = range_end.bytes().take_while(u8::is_ascii_digit).count();
        tail = &range_end[end_digits..];
        if end_digits == 0 || !(tail.is_empty() || tail.starts_with(" (in ")) {
            return None;
        }
    } else if !(tail.starts_with(':') || tail.starts_with(" (in ")) {
        return None;
    }
    if path.is_empty() || digits == 0 {
        return None;
    }
    Some((path, rest[..digits].parse().ok()?))
}

/// `a.py (3), b.py (1)`: where the hits past the cap are, at most ten files.
fn cut_files(cut: &[(String, usize)]) -> String {
    const MAX_FILES: usize = 10;
    let mut list: Vec<String> = cut
        .iter()
        .take(MAX_FILES)
        .map(|(file, n)| format!("{file} ({n})"))
        .collect();
    if cut.len() > MAX_FILES {
        list.push(format!("and {} more files", cut.len() - MAX_FILES));
    }
    list.join(", ")
}

/// A plain-text pattern that was probably meant as a regex (alternation,
/// wildcards, escapes): a miss says how to search for it.
fn looks_like_regex(pattern: &str) -> bool {
    ["|", ".*", ".+", "\\b", "\\s", "\\w", "\\d", "\\(", "[^"]
        .iter()
        .any(|m| pattern.contains(m))
        || pattern.starts_with('^')
        || (pattern.ends_with('$') && !pattern.ends_with("\\$"))
}
