//! Searching the index: BM25 with field boosts, filters, snippets, the
//! project-first retrieval helper and error-signature matching.
//!
//! Queries are built from analyzed terms, never parsed, so no user text
//! (quotes, colons, brackets, `AND`) can make a search fail.

use std::cell::RefCell;
use std::collections::{HashMap, HashSet};

use tantivy::collector::TopDocs;
use tantivy::query::{BooleanQuery, BoostQuery, ConstScoreQuery, Occur, Query, TermQuery};
use tantivy::schema::{Field, IndexRecordOption, Value};
use tantivy::snippet::SnippetGenerator;
use tantivy::{DocAddress, Score, Searcher, TantivyDocument, Term};

use crate::error::Result;
use crate::index::NoteIndex;
use crate::note::{Kind, Scope, Status, slugify};

/// At most this many distinct terms of a query are used; long task texts
/// would otherwise build huge queries.
const MAX_QUERY_TERMS: usize = 48;
/// Error texts (tracebacks) are longer; their error lines come first.
const MAX_ERROR_TERMS: usize = 64;
/// Share (IDF-weighted) of a note's error signature that must occur in
/// the error text.
const MIN_SIGNATURE_COVERAGE: f32 = 0.6;
/// BM25 candidates re-ranked by signature match in `search_errors`.
const ERROR_CANDIDATES: usize = 64;
const SNIPPET_CHARS: usize = 200;
/// Session retrieval drops hits scoring below this share of the best one.
const MIN_RELATIVE_SESSION_SCORE: f32 = 0.2;
/// How relevance scales with task length, see `relevance_unit`.
const TASK_LENGTH_EXPONENT: f32 = 0.2;

/// A search over notes. Empty or stop-word-only text finds nothing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SearchQuery {
    pub text: String,
    pub project: Option<String>,
    pub scope: Option<Scope>,
    pub kind: Option<Kind>,
    /// Leave out superseded notes.
    pub status_active_only: bool,
    pub limit: usize,
}

impl SearchQuery {
    /// Active notes only, 10 hits.
    pub fn new(text: impl Into<String>) -> SearchQuery {
        SearchQuery {
            text: text.into(),
            project: None,
            scope: None,
            kind: None,
            status_active_only: true,
            limit: 10,
        }
    }
}

/// One search result.
#[derive(Debug, Clone, PartialEq)]
pub struct Hit {
    pub id: String,
    pub title: String,
    pub description: String,
    /// Relative to the tree root, `/`-separated.
    pub path: String,
    pub score: f32,
    /// A short plain-text passage of the body around the matched words.
    pub snippet: String,
    pub kind: Kind,
    pub scope: Scope,
    pub project: Option<String>,
}

impl Hit {
    /// Characters this hit costs in a prompt, for budgeting.
    pub fn prompt_chars(&self) -> usize {
        self.title.chars().count()
            + self.description.chars().count()
            + self.snippet.chars().count()
            + self.path.chars().count()
    }
}

impl NoteIndex {
    /// BM25 search with field boosts (title 3, error signatures 3,
    /// keywords 2.5, description 2, body 1) and exact filters.
    pub fn search(&self, q: &SearchQuery) -> Result<Vec<Hit>> {
        let f = self.fields;
        let Some(text_query) = self.text_query(&q.text) else {
            return Ok(Vec::new());
        };
        let mut filters = Vec::new();
        if let Some(p) = &q.project {
            filters.push(term_query(f.project, &slugify(p)));
        }
        if let Some(s) = q.scope {
            filters.push(term_query(f.scope, s.as_str()));
        }
        if let Some(k) = q.kind {
            filters.push(term_query(f.kind, k.as_str()));
        }
        if q.status_active_only {
            filters.push(term_query(f.status, Status::Active.as_str()));
        }
        let query = filtered(text_query, filters);
        let searcher = self.searcher();
        let top = self.top(&searcher, &query, q.limit)?;
        self.hits(&searcher, &query, &top, &q.text)
    }

    /// Notes for a session's prompt: active project notes first, then
    /// shared ones, at most `limit` hits whose text fits in
    /// `token_budget_chars` characters (snippets are dropped before hits).
    /// Hits scoring under a fifth of the best hit are left out, so weak
    /// project matches do not crowd out a strong shared note. Without a
    /// project only shared notes are considered.
    pub fn search_for_session(
        &self,
        task_text: &str,
        project: Option<&str>,
        limit: usize,
        token_budget_chars: usize,
    ) -> Result<Vec<Hit>> {
        let Some(text_query) = self.text_query(task_text) else {
            return Ok(Vec::new());
        };
        let query = self.session_query(text_query, project);
        let searcher = self.searcher();
        let mut top = self.top(&searcher, &query, limit.saturating_mul(2))?;
        let best = top.first().map_or(0.0, |t| t.0);
        top.retain(|t| t.0 >= best * MIN_RELATIVE_SESSION_SCORE);
        let (mut hits, shared): (Vec<Hit>, Vec<Hit>) = self
            .hits(&searcher, &query, &top, task_text)?
            .into_iter()
            .partition(|h| h.scope == Scope::Project);
        hits.extend(shared);
        hits.truncate(limit);
        let mut used = 0;
        let mut out = Vec::with_capacity(hits.len());
        for mut hit in hits {
            if used + hit.prompt_chars() > token_budget_chars {
                hit.snippet.clear();
                if used + hit.prompt_chars() > token_budget_chars {
                    break;
                }
            }
            used += hit.prompt_chars();
            out.push(hit);
        }
        Ok(out)
    }

    /// The notes a session starts with. Ranked like `search_for_session`
    /// (project first, then shared; the relative cut-off too), but a hit
    /// must also reach `min_score` relevance ([`NoteIndex::relevance`]), so
    /// a task nothing in the tree is about gets no notes at all. The
    /// project's architecture notes are the exception: a project map
    /// (layout, entry points, how to run the tests) helps every task on it,
    /// so they are always eligible and come first.
    pub fn search_for_start(
        &self,
        task_text: &str,
        project: Option<&str>,
        limit: usize,
        min_score: f32,
    ) -> Result<Vec<Hit>> {
        if limit == 0 {
            return Ok(Vec::new());
        }
        let searcher = self.searcher();
        let mut out = match project {
            Some(p) => self.architecture_notes(&searcher, task_text, p, limit)?,
            None => Vec::new(),
        };
        if let Some(text_query) = self.text_query(task_text) {
            let query = self.session_query(text_query, project);
            let mut top = self.top(&searcher, &query, limit.saturating_mul(2))?;
            let best = top.first().map_or(0.0, |t| t.0);
            let unit = relevance_unit(&searcher, self.terms(task_text, MAX_QUERY_TERMS).len());
            let floor = (best * MIN_RELATIVE_SESSION_SCORE).max(min_score * unit);
            top.retain(|t| t.0 >= floor);
            let listed: HashSet<String> = out.iter().map(|h| h.id.clone()).collect();
            let (project_hits, shared): (Vec<Hit>, Vec<Hit>) = self
                .hits(&searcher, &query, &top, task_text)?
                .into_iter()
                .filter(|h| !listed.contains(&h.id))
                .partition(|h| h.scope == Scope::Project);
            out.extend(project_hits);
            out.extend(shared);
        }
        out.truncate(limit);
        Ok(out)
    }

    /// A hit's relevance to `task_text`: its BM25 score in the unit
    /// `min_score` is given in, the weight of a word found in one note
    /// only, times a length factor. Raw BM25 grows with the number of notes
    /// (through IDF), so a fixed threshold on it would mean one thing in a
    /// tree of five notes and another in one of five hundred; in this unit
    /// a match of one rare task word counts about its field boost (title 3,
    /// keywords 2.5, description 2, body 1) whatever the tree's size. A
    /// short task matches fewer words of even a related note, so its scores
    /// are scaled up by (48 / terms)^0.2 (1.5 for a task of four words).
    pub fn relevance(&self, score: f32, task_text: &str) -> f32 {
        let terms = self.terms(task_text, MAX_QUERY_TERMS).len();
        score / relevance_unit(&self.searcher(), terms)
    }

    /// The project's active architecture notes, those matching the task
    /// best first.
    fn architecture_notes(
        &self,
        searcher: &Searcher,
        task_text: &str,
        project: &str,
        limit: usize,
    ) -> Result<Vec<Hit>> {
        let f = self.fields;
        let mut clauses: Vec<(Occur, Box<dyn Query>)> = Vec::new();
        // Optional: ranks them by the task without requiring a match.
        if let Some(text_query) = self.text_query(task_text) {
            clauses.push((Occur::Should, text_query));
        }
        for filter in [
            term_query(f.project, &slugify(project)),
            term_query(f.kind, Kind::Architecture.as_str()),
            term_query(f.status, Status::Active.as_str()),
        ] {
            clauses.push((Occur::Must, Box::new(ConstScoreQuery::new(filter, 0.0))));
        }
        let query = BooleanQuery::new(clauses);
        let top = self.top(searcher, &query, limit)?;
        self.hits(searcher, &query, &top, task_text)
    }

    /// The task's text query restricted to active notes of the project and
    /// shared ones: one query over both groups (half the cost of two),
    /// ranked together so the relative cut-off compares like with like.
    fn session_query(&self, text_query: Box<dyn Query>, project: Option<&str>) -> BooleanQuery {
        let f = self.fields;
        let shared = term_query(f.scope, Scope::Shared.as_str());
        let scope: Box<dyn Query> = match project {
            Some(p) => Box::new(BooleanQuery::new(vec![
                (Occur::Should, term_query(f.project, &slugify(p))),
                (Occur::Should, shared),
            ])),
            None => shared,
        };
        filtered(
            text_query,
            vec![scope, term_query(f.status, Status::Active.as_str())],
        )
    }

    /// The boosted text part of `search` and `search_for_session`.
    fn text_query(&self, text: &str) -> Option<Box<dyn Query>> {
        let f = self.fields;
        let boosts = [
            (f.title, 3.0),
            (f.error_signatures, 3.0),
            (f.keywords, 2.5),
            (f.description, 2.0),
            (f.body, 1.0),
        ];
        boosted_union(&self.terms(text, MAX_QUERY_TERMS), &boosts)
    }

    /// Active hindsight notes about this error. The text is normalised
    /// first (paths, line numbers, hex addresses dropped), and a note only
    /// matches when most of one of its error signatures (or of its
    /// `## Error` section) occurs in the error, so the same error raised
    /// from another file still matches and unrelated errors do not.
    pub fn search_errors(&self, error_text: &str, limit: usize) -> Result<Vec<Hit>> {
        let f = self.fields;
        let normalized = normalize_error(error_text);
        let error_terms: HashSet<String> =
            self.terms(&normalized, usize::MAX).into_iter().collect();
        let query_terms = self.terms(&error_lines_first(&normalized), MAX_ERROR_TERMS);
        let boosts = [(f.error_signatures, 3.0), (f.title, 1.0), (f.body, 0.5)];
        let Some(text_query) = boosted_union(&query_terms, &boosts) else {
            return Ok(Vec::new());
        };
        let query = filtered(
            text_query,
            vec![
                term_query(f.kind, Kind::Hindsight.as_str()),
                term_query(f.status, Status::Active.as_str()),
            ],
        );
        let searcher = self.searcher();
        let pool = limit.saturating_mul(5).max(ERROR_CANDIDATES);
        let candidates = self.top(&searcher, &query, pool)?;
        let idf = Idf::new(&searcher, f.error_signatures);
        let mut scored = Vec::new();
        for (bm25, addr) in candidates {
            let doc: TantivyDocument = searcher.doc(addr).map_err(|e| self.err(e))?;
            let mut signatures: Vec<String> = doc
                .get_all(f.error_signatures)
                .filter_map(|v| v.as_str().map(str::to_string))
                .collect();
            if let Some(section) = stored(&doc, f.body).as_deref().and_then(error_section) {
                signatures.push(section);
            }
            let best = signatures
                .iter()
                .map(|s| self.signature_match(s, &error_terms, &idf))
                .max_by(|a, b| a.score().total_cmp(&b.score()));
            if let Some(m) = best.filter(|m| m.precision >= MIN_SIGNATURE_COVERAGE) {
                // BM25 only breaks ties between equally good signatures.
                scored.push((m.score() + bm25 * 1e-4, addr));
            }
        }
        scored.sort_by(|a, b| b.0.total_cmp(&a.0));
        scored.truncate(limit);
        self.hits(&searcher, &query, &scored, &normalized)
    }

    /// How well one signature matches the error's terms, weighting rare
    /// terms (the module name, the key) above common ones (`error`).
    fn signature_match(
        &self,
        signature: &str,
        error_terms: &HashSet<String>,
        idf: &Idf,
    ) -> SignatureMatch {
        let terms = self.terms(&normalize_error(signature), usize::MAX);
        let (mut total, mut matched) = (0.0_f32, 0.0_f32);
        for t in &terms {
            let w = idf.weight(t);
            total += w;
            if error_terms.contains(t) {
                matched += w;
            }
        }
        let precision = if total > 0.0 { matched / total } else { 0.0 };
        SignatureMatch { precision, matched }
    }

    /// Distinct analyzed terms of `text`, in order of first occurrence.
    pub(crate) fn terms(&self, text: &str, max: usize) -> Vec<String> {
        let mut analyzer = self.analyzer.clone();
        let mut stream = analyzer.token_stream(text);
        let mut seen = HashSet::new();
        let mut out = Vec::new();
        while out.len() < max && stream.advance() {
            let t = &stream.token().text;
            if seen.insert(t.clone()) {
                out.push(t.clone());
            }
        }
        out
    }

    fn top(
        &self,
        searcher: &Searcher,
        query: &dyn Query,
        limit: usize,
    ) -> Result<Vec<(Score, DocAddress)>> {
        if limit == 0 {
            return Ok(Vec::new());
        }
        searcher
            .search(query, &TopDocs::with_limit(limit).order_by_score())
            .map_err(|e| self.err(e))
    }

    fn hits(
        &self,
        searcher: &Searcher,
        query: &dyn Query,
        top: &[(Score, DocAddress)],
        query_text: &str,
    ) -> Result<Vec<Hit>> {
        if top.is_empty() {
            return Ok(Vec::new());
        }
        let f = self.fields;
        let mut snippets =
            SnippetGenerator::create(searcher, query, f.body).map_err(|e| self.err(e))?;
        snippets.set_max_num_chars(SNIPPET_CHARS);
        let mut hits = Vec::with_capacity(top.len());
        for &(score, addr) in top {
            let doc: TantivyDocument = searcher.doc(addr).map_err(|e| self.err(e))?;
            let text = |field| stored(&doc, field).unwrap_or_default();
            let snippet = snippets.snippet_from_doc(&doc);
            let mut snippet = flatten(snippet.fragment());
            if snippet.is_empty() {
                snippet = fallback_snippet(&text(f.body), query_text);
            }
            hits.push(Hit {
                id: text(f.id),
                title: text(f.title),
                description: text(f.description),
                path: text(f.path),
                score,
                snippet,
                kind: text(f.kind).parse().unwrap_or(Kind::Insight),
                scope: text(f.scope).parse().unwrap_or(Scope::Shared),
                project: stored(&doc, f.project),
            });
        }
        Ok(hits)
    }
}

/// IDF-weighted match of a signature against an error.
struct SignatureMatch {
    /// Share of the signature's weight found in the error.
    precision: f32,
    /// Weight of the signature terms found in the error.
    matched: f32,
}

impl SignatureMatch {
    /// Exact signatures first, then those explaining more of the error.
    fn score(&self) -> f32 {
        self.precision * self.precision * self.matched
    }
}

/// BM25-style inverse document frequency of terms in one field.
/// Cached, as candidates share most of their terms.
struct Idf<'a> {
    searcher: &'a Searcher,
    field: Field,
    docs: f32,
    cache: RefCell<HashMap<String, f32>>,
}

impl<'a> Idf<'a> {
    fn new(searcher: &'a Searcher, field: Field) -> Self {
        let docs = searcher.num_docs() as f32;
        Idf {
            searcher,
            field,
            docs,
            cache: RefCell::default(),
        }
    }

    fn weight(&self, term: &str) -> f32 {
        if let Some(w) = self.cache.borrow().get(term) {
            return *w;
        }
        let df = self
            .searcher
            .doc_freq(&Term::from_field_text(self.field, term))
            .unwrap_or(0) as f32;
        let w = (1.0 + (self.docs - df + 0.5) / (df + 0.5)).ln();
        self.cache.borrow_mut().insert(term.to_string(), w);
        w
    }
}

/// The BM25 score of one relevance point for a task of `terms` query
/// terms (see [`NoteIndex::relevance`]): the IDF of a word found in one
/// document, with tantivy's document count (deleted documents included,
/// as in its scores), times (terms / 48)^0.2. The exponent fits measured
/// scores: related notes of one-line tasks score about 0.65 of what they
/// score for full task texts, unrelated ones drop alike.
fn relevance_unit(searcher: &Searcher, terms: usize) -> f32 {
    let docs: u64 = searcher
        .segment_readers()
        .iter()
        .map(|s| u64::from(s.max_doc()))
        .sum();
    let docs = docs.max(1) as f32;
    let rare_word = (1.0 + (docs - 0.5) / 1.5).ln();
    let length = (terms.clamp(1, MAX_QUERY_TERMS) as f32 / MAX_QUERY_TERMS as f32)
        .powf(TASK_LENGTH_EXPONENT);
    rare_word * length
}

fn stored(doc: &TantivyDocument, field: Field) -> Option<String> {
    doc.get_first(field)
        .and_then(|v| v.as_str().map(str::to_string))
}

/// Sum over terms and fields of boosted BM25 term scores; `None` when
/// there is no term.
fn boosted_union(terms: &[String], fields: &[(Field, f32)]) -> Option<Box<dyn Query>> {
    if terms.is_empty() {
        return None;
    }
    let mut clauses: Vec<(Occur, Box<dyn Query>)> = Vec::with_capacity(terms.len() * fields.len());
    for term in terms {
        for &(field, boost) in fields {
            let q = TermQuery::new(
                Term::from_field_text(field, term),
                IndexRecordOption::WithFreqs,
            );
            clauses.push((Occur::Should, Box::new(BoostQuery::new(Box::new(q), boost))));
        }
    }
    Some(Box::new(BooleanQuery::new(clauses)))
}

/// Exact match on a raw (STRING) field.
fn term_query(field: Field, value: &str) -> Box<dyn Query> {
    Box::new(TermQuery::new(
        Term::from_field_text(field, value),
        IndexRecordOption::Basic,
    ))
}

/// `text_query` restricted to documents matching every filter; filters
/// add nothing to the score.
fn filtered(text_query: Box<dyn Query>, filters: Vec<Box<dyn Query>>) -> BooleanQuery {
    let mut clauses: Vec<(Occur, Box<dyn Query>)> = vec![(Occur::Must, text_query)];
    for filter in filters {
        clauses.push((Occur::Must, Box::new(ConstScoreQuery::new(filter, 0.0))));
    }
    BooleanQuery::new(clauses)
}

fn flatten(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// First body line containing a query word, else the first text line.
fn fallback_snippet(body: &str, query_text: &str) -> String {
    let words: Vec<String> = query_text
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| w.chars().count() > 2)
        .map(str::to_lowercase)
        .collect();
    let lines = || {
        body.lines()
            .map(str::trim)
            .filter(|l| !l.is_empty() && !l.starts_with('#'))
    };
    let line = lines()
        .find(|l| {
            let l = l.to_lowercase();
            words.iter().any(|w| l.contains(w.as_str()))
        })
        .or_else(|| lines().next())
        .unwrap_or("");
    truncate_chars(line, SNIPPET_CHARS)
}

fn truncate_chars(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((i, _)) => format!("{}…", &text[..i]),
        None => text.to_string(),
    }
}

/// The text of a `## Error` section, if the body has one.
fn error_section(body: &str) -> Option<String> {
    let mut lines = body
        .lines()
        .skip_while(|l| !l.trim().eq_ignore_ascii_case("## error"));
    lines.next()?;
    let text: Vec<&str> = lines
        .take_while(|l| !l.starts_with("## "))
        .filter(|l| !l.trim_start().starts_with("```"))
        .collect();
    let text = text.join("\n");
    (!text.trim().is_empty()).then_some(text)
}

/// Error text with what varies between occurrences removed: file paths,
/// `file.py:12`-style locations, numbers and hex addresses; pytest's `E`
/// line prefixes are dropped too. One output line per non-empty input line.
pub fn normalize_error(text: &str) -> String {
    let mut out: Vec<String> = Vec::new();
    for raw in text.lines() {
        let mut line = raw.trim();
        if let Some(rest) = line.strip_prefix("E ") {
            line = rest.trim_start();
        }
        if is_frame_line(line) {
            continue;
        }
        let words: Vec<&str> = line.split_whitespace().filter(|w| keep_word(w)).collect();
        if words.is_empty() {
            continue;
        }
        let line = words.join(" ");
        if out.last() != Some(&line) {
            out.push(line);
        }
    }
    out.join("\n")
}

/// Stack frame lines name where an error passed, which differs between
/// occurrences: Python's `File "…", line N, in f`, its `Traceback` header,
/// and pytest's `path.py:N: in f`.
fn is_frame_line(line: &str) -> bool {
    if line.starts_with("File \"") || line.starts_with("Traceback (most recent call last)") {
        return true;
    }
    let mut words = line.split_whitespace();
    match (words.next(), words.next()) {
        (Some(location), Some("in")) => {
            location.ends_with(':')
                && location
                    .trim_end_matches(':')
                    .rsplit_once(':')
                    .is_some_and(|(file, n)| {
                        file.contains('.') && !n.is_empty() && n.chars().all(|c| c.is_ascii_digit())
                    })
        }
        _ => false,
    }
}

fn keep_word(word: &str) -> bool {
    let core = word.trim_matches(|c: char| {
        matches!(
            c,
            '"' | '\'' | '`' | ',' | ';' | '(' | ')' | '[' | ']' | '<' | '>' | '{' | '}'
        )
    });
    let core = core.trim_end_matches([':', '.']);
    if core.is_empty() {
        return !word.chars().all(|c| c == '^' || c == '~');
    }
    if core.contains('/') || core.contains('\\') {
        return false; // a path
    }
    if let Some((name, rest)) = core.split_once(':') {
        // file.py:12 or main.rs:3:5
        if name.contains('.')
            && !rest.is_empty()
            && rest.chars().all(|c| c.is_ascii_digit() || c == ':')
        {
            return false;
        }
    }
    if let Some(hex) = core.strip_prefix("0x").or_else(|| core.strip_prefix("0X"))
        && !hex.is_empty()
        && hex.chars().all(|c| c.is_ascii_hexdigit())
    {
        return false;
    }
    if core.chars().any(|c| c.is_ascii_digit())
        && core
            .chars()
            .all(|c| c.is_ascii_digit() || matches!(c, '.' | ':' | '-' | '+'))
    {
        return false; // numbers, line numbers, times
    }
    let long_hex = core.len() >= 8
        && core.chars().all(|c| c.is_ascii_hexdigit())
        && core.chars().any(|c| c.is_ascii_digit());
    !long_hex // object ids, commit hashes
}

/// Lines that look like the error itself first, so capped queries keep them.
fn error_lines_first(normalized: &str) -> String {
    let looks_like_error = |l: &&str| {
        l.contains("Error")
            || l.contains("Exception")
            || l.contains("error")
            || l.contains("FAILED")
            || l.contains("panicked")
    };
    let (errors, rest): (Vec<&str>, Vec<&str>) = normalized.lines().partition(looks_like_error);
    errors
        .into_iter()
        .chain(rest)
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
mod tests;
