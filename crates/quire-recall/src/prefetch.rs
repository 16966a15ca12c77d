//! The code the notes point to, shown with them before the first request.
//!
//! A session that knows where to look still spends a model call reading
//! it: with the change's reply carrying `run_tests` and `finish`, that read
//! is most of what a task located in one batch costs. Notes name files and
//! definitions; when the task is about some of them, their current text is
//! read from the session copy and shown right after the notes, numbered as
//! `read_file` numbers it, and the files count as seen, so the first reply
//! can already be the change.
//!
//! What is shown comes from the notes, never from the whole tree: only
//! files the relevant notes cite (their provenance or a path in their
//! text) are looked at, and a definition in them is shown when
//! - the task names it in code (`sliced(`, `InvalidCouponError`, a name
//!   in a code example) or in words (`CouponBook` as "coupon book"), or
//! - a note names it on a line that shares words with the task (the map's
//!   "checkout: `OrderService.place_order`" for a task about checkout).
//!
//! Small files are shown whole; a test class named after a shown function
//! (`SlicedTests` for `sliced`) is shown up to the end of its first method,
//! for its style and fixtures. Everything stays within a character budget,
//! best first. The text is read now, so it cannot be stale: a name a note
//! gives that the copy no longer defines is simply not shown.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::Path;

use quire_notes::Note;
use quire_tools::{CodeDefinition, code_definitions, import_block_end, line_count, numbered_lines};
use quire_types::ExtensionEvent;
use serde::{Deserialize, Serialize};

/// A file at most this long is shown whole rather than by definition: a
/// small module is cheaper to show once than to piece together.
const SMALL_FILE_CHARS: usize = 2_400;
/// Files next to the cited ones looked at, at most: a big folder's
/// modules are not all worth parsing for one task.
const MAX_NEIGHBOURS: usize = 60;
/// Files larger than this are not looked at (generated or vendored code).
const MAX_FILE_BYTES: u64 = 1_000_000;
/// A note line must share this many of the task's words for the names on
/// it to be shown.
const MIN_LINE_OVERLAP: usize = 2;
/// A bare method name in a note matches definitions of that name only when
/// the cited files define it at most this often (else it says too little).
const MAX_BARE_NAME_DEFS: usize = 2;

/// Why an excerpt was shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Why {
    /// The task names the definition (in code or in words).
    TaskNamesIt,
    /// A note names it on a line about the task.
    NoteNamesIt,
    /// The test class of a function shown.
    ItsTests,
    /// Where a function shown is listed (an export list, an API docs
    /// entry), for a task that adds one like it.
    WhereListed,
}

/// One piece of code shown: a whole file or one definition.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Excerpt {
    pub path: String,
    /// The definition shown; `None` for the whole file.
    pub symbol: Option<String>,
    pub start: usize,
    pub end: usize,
    /// Lines in the file.
    pub file_lines: usize,
    pub why: Why,
    /// Characters of numbered code shown.
    pub chars: usize,
    /// The lines as the model sees them (numbered); not recorded, the
    /// conversation has them.
    #[serde(skip)]
    pub text: String,
}

/// The record of what was shown, for the trajectory and eval figures.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CodeShown {
    pub excerpts: Vec<Excerpt>,
    /// Characters of numbered code shown in all.
    pub chars: usize,
}

impl ExtensionEvent for CodeShown {
    const EXTENSION: &'static str = "notes";
    const EVENT: &'static str = "code_shown";
}

/// The excerpts to show for `task`, from the files and names in `notes`,
/// read from the session copy at `root`, within `budget` characters of
/// numbered text, in file order. Empty when nothing the notes point to is
/// about the task.
pub fn plan(task: &str, notes: &[&Note], root: &Path, budget: usize) -> Vec<Excerpt> {
    if budget == 0 || notes.is_empty() {
        return Vec::new();
    }
    let task = TaskTerms::of(task);
    let mut cited = cited_files(notes, root);
    cited.extend(neighbours(&cited, root));
    let files = load_files(&cited, root);
    if files.is_empty() {
        return Vec::new();
    }
    let named = NotesNames::of(notes, &task, &files);
    let content = ContentScores::of(&files, &task);
    // The best content score among the definitions notes name on lines
    // about the task: what the others are measured against.
    let best_named = files
        .iter()
        .enumerate()
        .flat_map(|(f, file)| {
            file.defs
                .iter()
                .enumerate()
                .filter(|(_, def)| named.overlap(def).is_some())
                .map(move |(d, _)| (f, d))
        })
        .map(|(f, d)| content.score(f, d))
        .fold(0.0f32, f32::max);
    let mut candidates = Vec::new();
    for (f, file) in files.iter().enumerate() {
        for (d, def) in file.defs.iter().enumerate() {
            let relative = if best_named > 0.0 {
                content.score(f, d) / best_named
            } else {
                0.0
            };
            let (score, why) = if let Some(weight) = task.names(def, &file.defs) {
                (weight, Why::TaskNamesIt)
            } else if named.overlap(def).is_some() && relative >= MIN_CONTENT {
                // A note names it on a line about the task, and its code is
                // about the task too (of `place_order`, `pay`, `ship` on a
                // line about orders, the one that handles coupons).
                (4 + (relative * 4.0).round() as usize, Why::NoteNamesIt)
            } else {
                continue;
            };
            candidates.push(Candidate {
                file,
                def,
                score,
                why,
            });
        }
    }
    candidates.sort_by(|a, b| {
        b.score
            .cmp(&a.score)
            .then((a.def.end - a.def.start).cmp(&(b.def.end - b.def.start)))
            .then(a.file.path.cmp(&b.file.path))
            .then(a.def.start.cmp(&b.def.start))
    });
    let test_dirs: BTreeSet<&str> = files
        .iter()
        .filter(|f| is_test_path(&f.path))
        .map(|f| f.path.rsplit_once('/').map_or("", |(dir, _)| dir))
        .collect();
    let mut chosen = Chosen::new(budget);
    for candidate in &candidates {
        let added = chosen.offer(
            candidate.file,
            candidate.def,
            candidate.why,
            candidate.score,
        );
        // What the task names brings its tests right after it, for their
        // style, fixtures and where new ones go: a function's test class
        // (up to its first method), a small module's test file.
        if added.is_some() && candidate.why == Why::TaskNamesIt && candidate.score >= STRONG {
            offer_tests(&mut chosen, &files, &test_dirs, root, candidate);
        }
    }
    // A task that adds a definition (it calls a name nothing defines) next
    // to ones it names: where those are listed, so the new one can be
    // listed beside them without a search.
    let new_names = task.new_names(&files);
    if !new_names.is_empty() {
        let listed: Vec<String> = chosen
            .units
            .iter()
            .filter(|u| u.why == Why::TaskNamesIt && !u.path.ends_with(".pyi"))
            .filter_map(|u| u.span.symbol.clone())
            .filter(|s| !s.contains('.'))
            .collect();
        let docs = load_text_files(&cited_docs(notes, root), root);
        for name in listed {
            for file in files
                .iter()
                .chain(docs.iter())
                .filter(|f| !is_test_path(&f.path))
            {
                let lines = listing_lines(&file.text, &name);
                for &(start, end) in &lines {
                    chosen.add(
                        file,
                        Span {
                            start,
                            end,
                            symbol: Some(format!("{name} listed")),
                        },
                        Why::WhereListed,
                        0,
                    );
                }
                // In a sorted list, where the new name goes too: two players
                // guessed the entry it sorts before to edit against.
                if lines.is_empty() {
                    continue;
                }
                for new in &new_names {
                    if let Some((start, end)) = sorted_place(&file.text, lines[0].0 + 1, new) {
                        chosen.add(
                            file,
                            Span {
                                start,
                                end,
                                symbol: Some(format!("where {new} sorts")),
                            },
                            Why::WhereListed,
                            0,
                        );
                    }
                }
            }
        }
    }
    // Last, while room is left: the import lines of the long source files
    // (not stubs) strong matches were shown from.
    let strong: Vec<(String, Why, usize)> = chosen
        .units
        .iter()
        .filter(|u| u.why != Why::ItsTests && u.score >= STRONG && u.span.symbol.is_some())
        .filter(|u| !u.path.ends_with(".pyi"))
        .map(|u| (u.path.clone(), u.why, u.score))
        .collect();
    for (path, why, score) in strong {
        if let Some(file) = files.iter().find(|f| f.path == path) {
            chosen.offer_imports(file, why, score);
        }
    }
    chosen.into_excerpts()
}

/// Offers the tests of `candidate`, just shown: the test class named after
/// a top-level definition, or, for a small module shown whole, its
/// `test_<module>.py` next to the cited tests.
fn offer_tests(
    chosen: &mut Chosen,
    files: &[CodeFile],
    test_dirs: &BTreeSet<&str>,
    root: &Path,
    candidate: &Candidate<'_>,
) {
    if candidate.file.chars > SMALL_FILE_CHARS {
        if candidate.def.depth == 0 {
            for file in files.iter().filter(|f| is_test_path(&f.path)) {
                if let Some(class) = test_class_of(&file.defs, &candidate.def.name) {
                    chosen.offer_first_method(file, class);
                }
            }
        }
        return;
    }
    let path = &candidate.file.path;
    let stem = path
        .rsplit('/')
        .next()
        .and_then(|name| name.rsplit_once('.'))
        .map_or("", |(stem, _)| stem);
    for dir in test_dirs {
        let test_path = match *dir {
            "" => format!("test_{stem}.py"),
            dir => format!("{dir}/test_{stem}.py"),
        };
        if is_inside_file(root, &test_path)
            && let Some(file) = load_files(std::slice::from_ref(&test_path), root).pop()
            && file.chars <= SMALL_FILE_CHARS
            && chosen.add(&file, Span::whole(&file), Why::ItsTests, 0)
        {
            offer_fixtures(chosen, root, dir);
        }
    }
}

/// The small `conftest.py` next to tests just shown: the fixtures and test
/// data they use (two players spent a call reading it to write their
/// tests).
fn offer_fixtures(chosen: &mut Chosen, root: &Path, dir: &str) {
    let path = if dir.is_empty() {
        "conftest.py".to_string()
    } else {
        format!("{dir}/conftest.py")
    };
    if is_inside_file(root, &path)
        && let Some(file) = load_files(std::slice::from_ref(&path), root).pop()
        && file.chars <= SMALL_FILE_CHARS
    {
        chosen.add(&file, Span::whole(&file), Why::ItsTests, 0);
    }
}

/// How much of the best content score among the definitions notes name
/// on lines about the task one of them needs: enough to tell the method
/// of a line that does what the task is about from its neighbours.
const MIN_CONTENT: f32 = 0.5;

/// BM25 of each definition's code against the task's words, over the
/// definitions of the cited files: rare words (`coupon`) count, words every
/// definition has (`order` in an orders module) barely.
struct ContentScores {
    /// By file, then definition.
    scores: Vec<Vec<f32>>,
}

impl ContentScores {
    fn of(files: &[CodeFile], task: &TaskTerms) -> ContentScores {
        const K1: f32 = 1.2;
        const B: f32 = 0.75;
        // Each line's task words, once per file.
        let docs: Vec<Vec<BTreeMap<&str, usize>>> = files
            .iter()
            .map(|file| {
                let lines: Vec<BTreeSet<String>> = file
                    .text
                    .lines()
                    .map(|line| line_words(line).into_iter().collect())
                    .collect();
                let line_len: Vec<usize> = lines.iter().map(BTreeSet::len).collect();
                file.defs
                    .iter()
                    .map(|def| {
                        let mut tf: BTreeMap<&str, usize> = BTreeMap::new();
                        let range = def.start.saturating_sub(1)..def.end.min(lines.len());
                        let mut len = 0;
                        for i in range {
                            len += line_len[i];
                            for w in &lines[i] {
                                if let Some(word) = task.words.get(w) {
                                    *tf.entry(word.as_str()).or_insert(0) += 1;
                                }
                            }
                        }
                        tf.insert("", len);
                        tf
                    })
                    .collect()
            })
            .collect();
        let n = docs.iter().map(Vec::len).sum::<usize>().max(1) as f32;
        let avg_len = docs
            .iter()
            .flatten()
            .map(|d| d.get("").copied().unwrap_or(0) as f32)
            .sum::<f32>()
            / n;
        let mut df: BTreeMap<&str, f32> = BTreeMap::new();
        for doc in docs.iter().flatten() {
            for w in doc.keys().filter(|w| !w.is_empty()) {
                *df.entry(w).or_insert(0.0) += 1.0;
            }
        }
        let scores = docs
            .iter()
            .map(|file| {
                file.iter()
                    .map(|doc| {
                        let len = doc.get("").copied().unwrap_or(0) as f32;
                        let norm = K1 * (1.0 - B + B * len / avg_len.max(1.0));
                        let score: f32 = doc
                            .iter()
                            .filter(|(w, _)| !w.is_empty())
                            .map(|(w, &tf)| {
                                let d = df.get(w).copied().unwrap_or(1.0);
                                let idf = (1.0 + (n - d + 0.5) / (d + 0.5)).ln();
                                let tf = tf as f32;
                                idf * tf * (K1 + 1.0) / (tf + norm)
                            })
                            .sum();
                        score
                    })
                    .collect()
            })
            .collect();
        ContentScores { scores }
    }

    /// Definition `d` of file `f`'s score.
    fn score(&self, f: usize, d: usize) -> f32 {
        self.scores[f][d]
    }
}

/// A definition worth showing, with its score.
struct Candidate<'a> {
    file: &'a CodeFile,
    def: &'a CodeDefinition,
    score: usize,
    why: Why,
}

/// A cited code file as read now.
struct CodeFile {
    path: String,
    text: String,
    chars: usize,
    lines: usize,
    defs: Vec<CodeDefinition>,
}

/// Lines of a file to show, and what they are.
struct Span {
    start: usize,
    end: usize,
    /// The definition (or `imports`); `None` for the whole file.
    symbol: Option<String>,
}

impl Span {
    fn whole(file: &CodeFile) -> Span {
        Span {
            start: 1,
            end: file.lines,
            symbol: None,
        }
    }
}

/// One unit chosen so far: a line span of a file.
struct Unit {
    path: String,
    span: Span,
    file_lines: usize,
    why: Why,
    score: usize,
    text: String,
}

/// The units chosen, within the budget.
struct Chosen {
    budget: usize,
    used: usize,
    units: Vec<Unit>,
}

/// A candidate this strong (named by the task, or the best of a note's
/// line) also brings its tests and its file's imports.
const STRONG: usize = 8;
/// The weight of a one-word class the task's title names in prose: below
/// what the task names in code, strong enough to bring its tests.
const TITLE_CLASS: usize = 9;
/// The import lines at the top of a file are shown with a strong match in
/// it, last, when there are at most this many: an edit that changes an
/// import, or a change that uses one, then needs no read of the file's top.
const MAX_IMPORT_LINES: usize = 40;

impl Chosen {
    fn new(budget: usize) -> Chosen {
        Chosen {
            budget,
            used: 0,
            units: Vec::new(),
        }
    }

    /// Adds `def` of `file` (or the whole file when it is small) unless it
    /// is shown already or does not fit; units it contains are replaced.
    /// `Some` when it was added.
    fn offer(
        &mut self,
        file: &CodeFile,
        def: &CodeDefinition,
        why: Why,
        score: usize,
    ) -> Option<()> {
        let span = if file.chars <= SMALL_FILE_CHARS {
            Span::whole(file)
        } else {
            Span {
                start: def.start,
                end: def.end,
                symbol: Some(def.qualified.clone()),
            }
        };
        self.add(file, span, why, score).then_some(())
    }

    /// Adds the import lines of `file` (a long one, shown by definition),
    /// when there are at most [`MAX_IMPORT_LINES`].
    fn offer_imports(&mut self, file: &CodeFile, why: Why, score: usize) {
        if file.chars > SMALL_FILE_CHARS
            && let Some(end) = import_block_end(&file.text)
            && end <= MAX_IMPORT_LINES
        {
            let imports = Span {
                start: 1,
                end,
                symbol: Some("imports".to_string()),
            };
            self.add(file, imports, why, score);
        }
    }

    /// Adds a test class from its header to the end of its first method.
    fn offer_first_method(&mut self, file: &CodeFile, class: &CodeDefinition) {
        if file.chars <= SMALL_FILE_CHARS {
            self.add(file, Span::whole(file), Why::ItsTests, 0);
            return;
        }
        let first_method_end = file
            .defs
            .iter()
            .filter(|d| d.depth == class.depth + 1 && d.start > class.start && d.end <= class.end)
            .map(|d| d.end)
            .min()
            .unwrap_or(class.end);
        let span = Span {
            start: class.start,
            end: first_method_end,
            symbol: Some(class.qualified.clone()),
        };
        self.add(file, span, Why::ItsTests, 0);
    }

    /// Adds `span` of `file` unless it is shown already or does not fit;
    /// units it contains are replaced. Whether it was added.
    fn add(&mut self, file: &CodeFile, span: Span, why: Why, score: usize) -> bool {
        let (start, end) = (span.start, span.end);
        let covered = |u: &Unit| u.path == file.path && u.span.start <= start && end <= u.span.end;
        if self.units.iter().any(covered) {
            return false;
        }
        let inside = |u: &Unit| u.path == file.path && start <= u.span.start && u.span.end <= end;
        let text = numbered_lines(&file.text, start, end);
        let freed: usize = self
            .units
            .iter()
            .filter(|u| inside(u))
            .map(|u| u.text.chars().count())
            .sum();
        let cost = text.chars().count();
        if self.used + cost > self.budget + freed {
            return false;
        }
        self.units.retain(|u| !inside(u));
        self.used = self.used + cost - freed;
        self.units.push(Unit {
            path: file.path.clone(),
            span,
            file_lines: file.lines,
            why,
            score,
            text,
        });
        true
    }

    /// The units by file, then by line.
    fn into_excerpts(mut self) -> Vec<Excerpt> {
        self.units
            .sort_by(|a, b| a.path.cmp(&b.path).then(a.span.start.cmp(&b.span.start)));
        self.units
            .into_iter()
            .map(|u| Excerpt {
                path: u.path,
                symbol: u.span.symbol,
                start: u.span.start,
                end: u.span.end,
                file_lines: u.file_lines,
                why: u.why,
                chars: u.text.chars().count(),
                text: u.text,
            })
            .collect()
    }
}

/// The test class of function `symbol`: named after it with `Test` or
/// `Tests` (any case, underscores ignored), e.g. `SlicedTests` for `sliced`.
fn test_class_of<'a>(defs: &'a [CodeDefinition], symbol: &str) -> Option<&'a CodeDefinition> {
    let base: String = symbol
        .rsplit('.')
        .next()
        .unwrap_or(symbol)
        .chars()
        .filter(|c| *c != '_')
        .collect::<String>()
        .to_lowercase();
    defs.iter().find(|d| {
        let name = d.name.replace('_', "").to_lowercase();
        d.depth == 0
            && (name == format!("{base}test")
                || name == format!("{base}tests")
                || name == format!("test{base}"))
    })
}

fn is_test_path(path: &str) -> bool {
    path.split('/')
        .any(|part| part == "tests" || part == "test" || part.starts_with("test_"))
        || path.ends_with("_test.py")
}

/// The code files the notes cite, in the order they cite them: provenance
/// files first, then paths written in their text.
fn cited_files(notes: &[&Note], root: &Path) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut push = |path: &str| {
        let path = path.trim().trim_start_matches("./");
        if !path.is_empty()
            && !out.iter().any(|p| p == path)
            && code_definitions(path, "").is_some()
            && is_inside_file(root, path)
        {
            out.push(path.to_string());
        }
    };
    for note in notes {
        for file in &note.meta.provenance.files {
            push(file);
        }
    }
    for note in notes {
        for token in path_tokens(&note.body) {
            push(token);
        }
    }
    out
}

/// The documentation files the notes cite (`docs/api.rst`): where a
/// project lists its API.
fn cited_docs(notes: &[&Note], root: &Path) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for note in notes {
        let files = note.meta.provenance.files.iter().map(String::as_str);
        for path in files.chain(path_tokens(&note.body)) {
            let path = path.trim().trim_start_matches("./");
            let doc = [".rst", ".md", ".txt"]
                .iter()
                .any(|ext| path.ends_with(ext));
            if doc && !out.iter().any(|p| p == path) && is_inside_file(root, path) {
                out.push(path.to_string());
            }
        }
    }
    out
}

/// Text files read whole, with no definitions (documentation).
fn load_text_files(paths: &[String], root: &Path) -> Vec<CodeFile> {
    paths
        .iter()
        .filter_map(|path| {
            let text = std::fs::read_to_string(root.join(path)).ok()?;
            Some(CodeFile {
                path: path.clone(),
                chars: text.chars().count(),
                lines: line_count(&text),
                defs: Vec::new(),
                text,
            })
        })
        .collect()
}

/// Where `name` is listed in `text`: a line holding it as a quoted string
/// (`'sliced',` in `__all__`) or as a docs directive's argument
/// (`.. autofunction:: sliced`), with the line before and after; at most
/// two places.
fn listing_lines(text: &str, name: &str) -> Vec<(usize, usize)> {
    let quoted = [format!("'{name}'"), format!("\"{name}\"")];
    let total = line_count(text);
    text.lines()
        .enumerate()
        .filter(|(_, line)| {
            let trimmed = line.trim();
            quoted.iter().any(|q| trimmed.starts_with(q.as_str()))
                || trimmed
                    .strip_prefix(".. auto")
                    .and_then(|rest| rest.split_once(":: "))
                    .is_some_and(|(_, arg)| {
                        arg.split(|c: char| c == '(' || c.is_whitespace()).next() == Some(name)
                    })
        })
        .take(2)
        .map(|(i, _)| (i.max(1), (i + 2).min(total)))
        .collect()
}

/// In the list of quoted entries around line `at` (1-based), when it is
/// (nearly) sorted, the two entries `name` would go between (or the one it would
/// follow or precede at an end).
fn sorted_place(text: &str, at: usize, name: &str) -> Option<(usize, usize)> {
    let lines: Vec<&str> = text.lines().collect();
    let entry = |line: &str| -> Option<String> {
        let t = line.trim().trim_end_matches(',');
        let inner = t
            .strip_prefix('\'')
            .and_then(|r| r.strip_suffix('\''))
            .or_else(|| t.strip_prefix('"').and_then(|r| r.strip_suffix('"')))?;
        inner
            .chars()
            .all(|c| c.is_alphanumeric() || c == '_')
            .then(|| inner.to_lowercase())
    };
    let at = at.checked_sub(1)?;
    entry(lines.get(at)?)?;
    let mut first = at;
    while first > 0 && entry(lines[first - 1]).is_some() {
        first -= 1;
    }
    let mut last = at;
    while last + 1 < lines.len() && entry(lines[last + 1]).is_some() {
        last += 1;
    }
    let entries: Vec<String> = (first..=last).filter_map(|i| entry(lines[i])).collect();
    // Sorted, up to a few entries out of place (more-itertools' `__all__`
    // has five among 118).
    let out_of_order = entries.windows(2).filter(|w| w[0] > w[1]).count();
    if entries.len() < 3 || out_of_order * 10 > entries.len() {
        return None;
    }
    // After the last entry that sorts before it: an entry out of place
    // earlier in the list does not move it.
    let name = name.to_lowercase();
    let (start, end) = match entries.iter().rposition(|e| *e < name) {
        Some(i) => (first + i, (first + i + 1).min(last)),
        None => (first, first),
    };
    Some((start + 1, end + 1))
}

/// Code files next to the source files the notes cite (not their tests):
/// a note that places checkout in `src/orders.py` also says the
/// application's code is in `src/`, so a definition the task names there
/// (`CouponBook` in `src/coupons.py`) is found though no note cites its
/// file. At most [`MAX_NEIGHBOURS`] files, in name order.
fn neighbours(cited: &[String], root: &Path) -> Vec<String> {
    let dirs: BTreeSet<&str> = cited
        .iter()
        .filter(|p| !is_test_path(p))
        .map(|p| p.rsplit_once('/').map_or("", |(dir, _)| dir))
        .collect();
    let mut out = Vec::new();
    for dir in dirs {
        let Ok(entries) = std::fs::read_dir(root.join(dir)) else {
            continue;
        };
        let mut names: Vec<String> = entries
            .filter_map(Result::ok)
            .filter_map(|e| e.file_name().into_string().ok())
            .collect();
        names.sort();
        for name in names {
            let rel = if dir.is_empty() {
                name
            } else {
                format!("{dir}/{name}")
            };
            if out.len() >= MAX_NEIGHBOURS {
                return out;
            }
            if !cited.contains(&rel)
                && !is_test_path(&rel)
                && code_definitions(&rel, "").is_some()
                && is_inside_file(root, &rel)
            {
                out.push(rel);
            }
        }
    }
    out
}

/// Whether `rel` is a plain relative path to a file inside `root`.
fn is_inside_file(root: &Path, rel: &str) -> bool {
    let path = Path::new(rel);
    let plain = path
        .components()
        .all(|c| matches!(c, std::path::Component::Normal(_)));
    plain
        && std::fs::symlink_metadata(root.join(path))
            .is_ok_and(|m| m.is_file() && m.len() <= MAX_FILE_BYTES)
}

/// Words of a text that look like file paths (`src/orders.py`, `more.pyi`).
fn path_tokens(text: &str) -> impl Iterator<Item = &str> {
    text.split(|c: char| c.is_whitespace() || matches!(c, '`' | '(' | ')' | ',' | ';' | '[' | ']'))
        .map(|t| t.trim_end_matches([':', '.', '\'', '"']))
        .filter(|t| t.contains('.') && t.chars().any(|c| c.is_ascii_alphabetic()))
}

fn load_files(paths: &[String], root: &Path) -> Vec<CodeFile> {
    paths
        .iter()
        .filter_map(|path| {
            let bytes = std::fs::read(root.join(path)).ok()?;
            if bytes.contains(&0) {
                return None;
            }
            let text = String::from_utf8(bytes).ok()?;
            let defs = code_definitions(path, &text)?;
            Some(CodeFile {
                path: path.clone(),
                chars: text.chars().count(),
                lines: line_count(&text),
                defs,
                text,
            })
        })
        .collect()
}

/// What a task says, for matching: its words and the names it writes as code.
struct TaskTerms {
    /// Stems of its content words (identifiers split into words too).
    words: BTreeSet<String>,
    /// Names written as code (`snake_case`, `CamelCase`, `name(`, `.name`,
    /// in backticks or on a code line: `>>>`, indented), with how often the
    /// task uses them at all.
    code_names: BTreeMap<String, usize>,
    /// Identifiers in the first line (the title), which says what the task
    /// is about.
    title: BTreeSet<String>,
    /// Names written in a shape prose never has: `snake_case`, `CamelCase`,
    /// called, in backticks or after a dot.
    shaped: BTreeSet<String>,
    /// Names called as functions (`name(`, not `obj.name(`).
    called: BTreeSet<String>,
    /// The title as `phrase_text` has it.
    title_phrase: String,
    /// Stems of the title's words.
    title_words: BTreeSet<String>,
    /// How often each identifier occurs, code or prose.
    uses: BTreeMap<String, usize>,
    /// The text lower-cased, every run of other characters one space, with
    /// a space at each end: for finding a name's words as a phrase.
    phrase_text: String,
}

impl TaskTerms {
    fn of(task: &str) -> TaskTerms {
        let mut words = BTreeSet::new();
        let mut code = BTreeSet::new();
        let mut shaped_names = BTreeSet::new();
        let mut called_names = BTreeSet::new();
        let mut uses: BTreeMap<String, usize> = BTreeMap::new();
        let title: BTreeSet<String> = task
            .lines()
            .find(|l| !l.trim().is_empty())
            .map(|l| {
                identifiers(l)
                    .into_iter()
                    .map(|(n, _, _)| n.to_string())
                    .collect()
            })
            .unwrap_or_default();
        for line in task.lines() {
            let trimmed = line.trim_start();
            let code_line = trimmed.starts_with(">>>")
                || trimmed.starts_with("...")
                || line.starts_with("    ")
                || line.starts_with('\t');
            for (name, before, after) in identifiers(line) {
                *uses.entry(name.to_string()).or_insert(0) += 1;
                for w in name_words(name) {
                    if is_content_word(&w) {
                        words.insert(stem(&w));
                    }
                }
                let shaped = name.contains('_') && name.trim_matches('_').len() > 1
                    || name.chars().skip(1).any(|c| c.is_ascii_uppercase());
                let called = matches!(after, Some('(') | Some('['));
                let marked = before == Some('`') || before == Some('.') || after == Some('`');
                if shaped || called || marked {
                    shaped_names.insert(name.to_string());
                }
                if called && before != Some('.') {
                    called_names.insert(name.to_string());
                }
                // `nr[::-1]` in code: indexing, so the `__getitem__` of a
                // class the task names (the special-method rule below).
                if after == Some('[') && code_line {
                    code.insert("getitem".to_string());
                }
                if shaped || called || marked || code_line {
                    code.insert(name.to_string());
                }
            }
        }
        let phrase_text = phrase_text(task);
        let title_phrase = phrase_text_of_title(task);
        let title_words = title_phrase
            .split(' ')
            .filter(|w| is_content_word(w))
            .map(stem)
            .collect();
        let code_names = code
            .into_iter()
            .map(|name| {
                let n = uses.get(&name).copied().unwrap_or(1);
                (name, n)
            })
            .collect();
        TaskTerms {
            words,
            code_names,
            shaped: shaped_names,
            called: called_names,
            title,
            title_phrase,
            title_words,
            uses,
            phrase_text,
        }
    }

    /// How strongly the task names `def`, if it does: in code (its name,
    /// or its qualified name), or, for a name of two words or more, those
    /// words in a row. A method is named only with its class, unless its
    /// name is one no prose has (`discount_for`, `elements()`); a special
    /// method by the builtin that calls it (`reversed(` for
    /// `__reversed__`). A name the task uses often, or in its title, is
    /// what the task is about, more than one it mentions in passing.
    fn names(&self, def: &CodeDefinition, defs: &[CodeDefinition]) -> Option<usize> {
        let trimmed = def.name.trim_matches('_');
        let dunder = def.name.starts_with("__") && def.name.ends_with("__");
        let parent_named = def.depth > 0
            && def.qualified.rsplit_once('.').is_some_and(|(parent, _)| {
                let parent_name = parent.rsplit('.').next().unwrap_or(parent);
                self.code_names.contains_key(parent_name)
                    && defs.iter().any(|d| d.qualified == parent)
            });
        let distinctive = !dunder
            && (trimmed.contains('_') || def.name.chars().skip(1).any(|c| c.is_ascii_uppercase()));
        let by_name = if trimmed.len() < 3 {
            false
        } else if dunder {
            parent_named && self.code_names.contains_key(trimmed)
        } else if def.depth > 0 {
            self.code_names.contains_key(&def.name)
                && (parent_named || (distinctive && self.shaped.contains(&def.name)))
        } else {
            trimmed.len() >= 3 && self.code_names.contains_key(&def.name)
        };
        let in_code = self.code_names.contains_key(&def.qualified) || by_name;
        let words = name_words(&def.name);
        let phrase = format!(" {} ", words.join(" "));
        let in_words = words.len() >= 2 && self.phrase_text.contains(&phrase);
        if !in_code && !in_words {
            // A one-word class the title is about ("Coupon codes are
            // ignored" and `class Coupon`): what the task's things are.
            let title_class = def.depth == 0
                && def.kind == "class"
                && words.len() == 1
                && self.title_words.contains(&stem(&words[0]));
            return title_class.then_some(TITLE_CLASS);
        }
        let uses = if in_code {
            self.uses
                .get(def.name.as_str())
                .or(self.uses.get(trimmed))
                .copied()
                .unwrap_or(1)
        } else {
            self.phrase_text.matches(&phrase).count()
        };
        let in_title =
            self.title.contains(&def.name) || (in_words && self.title_phrase.contains(&phrase));
        Some(10 + uses.saturating_sub(1).min(4) + if in_title { 3 } else { 0 })
    }
}

impl TaskTerms {
    /// Whether the task calls a name no file looked at defines and Python
    /// does not provide (`subfactorial(`): it asks for a new definition.
    /// The names the task's title has and its text calls, that no file
    /// looked at defines and Python does not provide: the definitions it
    /// asks for ("Add subfactorial() to count derangements"; a call in an
    /// example of something else, `combinations(`, is not one).
    fn new_names<'a>(&'a self, files: &[CodeFile]) -> Vec<&'a str> {
        self.called
            .iter()
            .filter(|name| {
                self.title.contains(*name)
                    && name.len() >= 3
                    && !PYTHON_BUILTINS.contains(&name.as_str())
                    && !files
                        .iter()
                        .any(|f| f.defs.iter().any(|d| &d.name == *name))
            })
            .map(String::as_str)
            .collect()
    }
}

/// Python's builtin functions and types, which a task's examples call.
const PYTHON_BUILTINS: &[&str] = &[
    "abs",
    "all",
    "any",
    "ascii",
    "bin",
    "bool",
    "bytearray",
    "bytes",
    "callable",
    "chr",
    "classmethod",
    "compile",
    "complex",
    "delattr",
    "dict",
    "dir",
    "divmod",
    "enumerate",
    "eval",
    "exec",
    "filter",
    "float",
    "format",
    "frozenset",
    "getattr",
    "globals",
    "hasattr",
    "hash",
    "help",
    "hex",
    "input",
    "int",
    "isinstance",
    "issubclass",
    "iter",
    "len",
    "list",
    "locals",
    "map",
    "max",
    "memoryview",
    "min",
    "next",
    "object",
    "oct",
    "open",
    "ord",
    "pow",
    "print",
    "property",
    "range",
    "repr",
    "reversed",
    "round",
    "set",
    "setattr",
    "slice",
    "sorted",
    "staticmethod",
    "str",
    "sum",
    "super",
    "tuple",
    "type",
    "vars",
    "zip",
];

/// `text` lower-cased, every run of other characters one space, with a
/// space at each end: a name's words are found in it as ` w1 w2 `.
fn phrase_text(text: &str) -> String {
    let mut out = String::from(" ");
    let mut last_space = true;
    for c in text.chars() {
        if c.is_alphanumeric() {
            out.extend(c.to_lowercase());
            last_space = false;
        } else if !last_space {
            out.push(' ');
            last_space = true;
        }
    }
    if !last_space {
        out.push(' ');
    }
    out
}

/// [`phrase_text`] of the task's first non-blank line.
fn phrase_text_of_title(task: &str) -> String {
    phrase_text(task.lines().find(|l| !l.trim().is_empty()).unwrap_or(""))
}

/// The names the notes give, with the most words of the task found on a
/// line that gives each.
struct NotesNames {
    /// By qualified name (`OrderService.place_order`) or top-level name.
    overlap: HashMap<String, usize>,
}

impl NotesNames {
    fn of(notes: &[&Note], task: &TaskTerms, files: &[CodeFile]) -> NotesNames {
        let mut by_name: HashMap<&str, usize> = HashMap::new();
        for file in files {
            for def in &file.defs {
                *by_name.entry(def.name.as_str()).or_insert(0) += 1;
            }
        }
        let mut overlap: HashMap<String, usize> = HashMap::new();
        let mut note_line = |line: &str, extra: &[String]| {
            let shared = line_words(line)
                .iter()
                .filter(|w| task.words.contains(*w))
                .count();
            if shared < MIN_LINE_OVERLAP {
                return;
            }
            let names = dotted_names(line)
                .into_iter()
                .filter(|(_, code)| *code)
                .map(|(name, _)| name)
                .chain(extra.iter().cloned());
            for name in names {
                let bare = name.rsplit('.').next().unwrap_or(&name).to_string();
                let mut keys = vec![name.clone()];
                if name.contains('.')
                    || by_name.get(bare.as_str()).copied().unwrap_or(0) <= MAX_BARE_NAME_DEFS
                {
                    keys.push(bare);
                }
                for key in keys {
                    let entry = overlap.entry(key).or_insert(0);
                    *entry = (*entry).max(shared);
                }
            }
        };
        for note in notes {
            let about = format!("{} {}", note.meta.title, note.meta.description);
            note_line(&about, &note.meta.provenance.symbols);
            for line in note.body.lines() {
                note_line(line, &[]);
            }
        }
        NotesNames { overlap }
    }

    /// The task words on the best note line naming `def`, if one does.
    fn overlap(&self, def: &CodeDefinition) -> Option<usize> {
        let qualified = self.overlap.get(&def.qualified).copied();
        let bare = self.overlap.get(&def.name).copied();
        qualified.max(bare)
    }
}

/// Stems of a note line's content words, each once.
fn line_words(line: &str) -> BTreeSet<String> {
    identifiers(line)
        .into_iter()
        .flat_map(|(name, _, _)| name_words(name))
        .filter(|w| is_content_word(w))
        .map(|w| stem(&w))
        .collect()
}

/// Identifiers in a line with the characters right before and after them.
fn identifiers(line: &str) -> Vec<(&str, Option<char>, Option<char>)> {
    let mut out = Vec::new();
    let mut start: Option<usize> = None;
    let mut prev: Option<char> = None;
    let mut before: Option<char> = None;
    for (i, c) in line.char_indices() {
        let ident = c.is_ascii_alphanumeric() || c == '_';
        match (start, ident) {
            (None, true) => {
                start = Some(i);
                before = prev;
            }
            (Some(s), false) => {
                push_identifier(&mut out, &line[s..i], before, Some(c));
                start = None;
            }
            _ => {}
        }
        prev = Some(c);
    }
    if let Some(s) = start {
        push_identifier(&mut out, &line[s..], before, None);
    }
    out
}

fn push_identifier<'a>(
    out: &mut Vec<(&'a str, Option<char>, Option<char>)>,
    token: &'a str,
    before: Option<char>,
    after: Option<char>,
) {
    if token.starts_with(|c: char| c.is_ascii_digit()) {
        return;
    }
    out.push((token, before, after));
}

/// `Name`, `name` and `Outer.inner` names written in a note line, each
/// with whether it is written as code (dotted, `snake_case`, `CamelCase`,
/// called or in backticks) rather than as a word of the prose.
fn dotted_names(line: &str) -> Vec<(String, bool)> {
    let mut out = Vec::new();
    let idents = identifiers(line);
    let mut i = 0;
    while i < idents.len() {
        let (first, before, mut after) = idents[i];
        let mut name = first.to_string();
        let mut j = i;
        // `Outer.inner`: the next identifier starts right after the dot.
        while after == Some('.') && j + 1 < idents.len() && idents[j + 1].1 == Some('.') {
            let (next, _, next_after) = idents[j + 1];
            if !line.contains(&format!("{name}.{next}")) {
                break;
            }
            name.push('.');
            name.push_str(next);
            after = next_after;
            j += 1;
        }
        let code = name.contains('.')
            || (name.contains('_') && name.trim_matches('_').len() > 1)
            || name.chars().skip(1).any(|c| c.is_ascii_uppercase())
            || before == Some('`')
            || matches!(after, Some('`') | Some('('));
        out.push((name, code));
        i = j + 1;
    }
    out
}

/// The lower-case words of an identifier: `place_order` → place, order;
/// `CouponBook` → coupon, book; `HTTPServer` → http, server.
fn name_words(name: &str) -> Vec<String> {
    let mut words = Vec::new();
    for part in name.split('_').filter(|p| !p.is_empty()) {
        let chars: Vec<char> = part.chars().collect();
        let mut word = String::new();
        for (i, &c) in chars.iter().enumerate() {
            let next_lower = chars.get(i + 1).is_some_and(|n| n.is_ascii_lowercase());
            let prev_lower = i > 0 && chars[i - 1].is_ascii_lowercase();
            let prev_upper = i > 0 && chars[i - 1].is_ascii_uppercase();
            if c.is_ascii_uppercase()
                && !word.is_empty()
                && (prev_lower || (prev_upper && next_lower))
            {
                words.push(std::mem::take(&mut word));
            }
            word.extend(c.to_lowercase());
        }
        if !word.is_empty() {
            words.push(word);
        }
    }
    words
}

/// A word that says what a text is about: three letters or more, not a
/// common English or code word.
fn is_content_word(word: &str) -> bool {
    word.len() >= 3 && word.chars().all(|c| c.is_ascii_alphabetic()) && !STOP_WORDS.contains(&word)
}

/// A crude stem, enough to match "coupons" with "coupon" and "reserves"
/// with "reserve".
fn stem(word: &str) -> String {
    let w = word.to_lowercase();
    if let Some(base) = w.strip_suffix("ies")
        && base.len() >= 2
    {
        return format!("{base}y");
    }
    // "es" is a plural ending only after s, x, z, ch and sh (classes,
    // boxes, matches); "invoices" and "codes" just add an s.
    if let Some(base) = w.strip_suffix("es")
        && base.len() >= 3
        && ["s", "x", "z", "ch", "sh"]
            .iter()
            .any(|e| base.ends_with(e))
    {
        return base.to_string();
    }
    match w.strip_suffix('s') {
        Some(base) if base.len() >= 3 && !base.ends_with('s') => base.to_string(),
        _ => w,
    }
}

const STOP_WORDS: &[&str] = &[
    "the",
    "and",
    "for",
    "are",
    "but",
    "not",
    "you",
    "all",
    "any",
    "can",
    "her",
    "was",
    "one",
    "our",
    "out",
    "has",
    "have",
    "had",
    "him",
    "his",
    "how",
    "its",
    "may",
    "new",
    "now",
    "old",
    "see",
    "two",
    "way",
    "who",
    "did",
    "get",
    "got",
    "let",
    "say",
    "she",
    "too",
    "use",
    "used",
    "uses",
    "using",
    "with",
    "that",
    "this",
    "from",
    "they",
    "will",
    "would",
    "there",
    "their",
    "what",
    "when",
    "where",
    "which",
    "while",
    "were",
    "been",
    "being",
    "into",
    "than",
    "then",
    "them",
    "these",
    "those",
    "also",
    "only",
    "just",
    "some",
    "such",
    "each",
    "every",
    "other",
    "more",
    "most",
    "much",
    "many",
    "should",
    "could",
    "must",
    "does",
    "doesn",
    "don",
    "isn",
    "aren",
    "wasn",
    "like",
    "make",
    "made",
    "keep",
    "kept",
    "same",
    "very",
    "still",
    "even",
    "about",
    "after",
    "before",
    "over",
    "under",
    "again",
    "here",
    "why",
    "way",
    "want",
    "wanted",
    "need",
    "needs",
    "today",
    "yet",
    "both",
    "either",
    "neither",
    "without",
    "within",
    "instead",
    "expected",
    "expect",
    "behaviour",
    "behavior",
    "work",
    "works",
    "working",
    "should",
    "return",
    "returns",
    "true",
    "false",
    "none",
    "self",
    "def",
    "class",
    "import",
    "print",
    "list",
    "str",
    "int",
    "test",
    "tests",
    "file",
    "files",
    "code",
    "line",
    "lines",
    "name",
    "names",
    "value",
    "values",
    "call",
    "calls",
    "see",
    "read",
    "reads",
    "item",
    "items",
    "thing",
    "things",
    "first",
    "last",
    "next",
    "one",
    "way",
    "via",
    "per",
    "etc",
    "e.g",
    "i.e",
    "currently",
    "already",
    "always",
    "never",
    "must",
    "please",
    "example",
    "examples",
];

#[cfg(test)]
mod tests;
