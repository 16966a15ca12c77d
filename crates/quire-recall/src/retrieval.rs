//! The `notes` extension: brings notes into a coding session.
//!
//! - At start, the task and project select the top active notes (project
//!   first, then shared) that reach `min_score` relevance; the project's
//!   architecture notes (its map) are always eligible and come first.
//!   They are shown once, as one user message right after the task: each
//!   note's text in full while the texts fit `inline_chars`, the rest by
//!   id, title and description within `budget_chars`. Sent once and never
//!   changed, the message stays in the cached prefix.
//! - A note flagged stale (its provenance files or symbols are gone from
//!   the session copy) is left out, unless it is an architecture note,
//!   which is shown with the flag: a map with one renamed function in it
//!   still says where the rest lives.
//! - `search_notes {query}` and `read_note {id}` let the model pull more,
//!   but only when something was listed without its full text: otherwise
//!   their schemas would ride along in every request for nothing.
//! - When a tool fails, or the tests fail, the error text is matched against
//!   hindsight notes and the best match's id and title are offered on a line
//!   under the result (with its fix inline when `read_note` is not offered).
//!
//! Every note shown or read is recorded in the trajectory, so the session's
//! distillation job can credit the notes it read by outcome.

use std::collections::{BTreeSet, HashMap};
use std::path::PathBuf;
use std::sync::{Arc, OnceLock};

use async_trait::async_trait;
use quire_config::{AgentConfig, ToolTexts, render};
use quire_core::{Action, CoreError, Ctx, Extension, ToolOutput};
use quire_types::{Message, MessageSource, NotesVia, Redactor};

use quire_notes::{Hit, Note, Notes, NotesPaths, cut_at_line, stale_reason};
use quire_tools::WorkspaceState;
use quire_types::{EventKind, ExtensionPayload};

use crate::facts::{READ_NOTE, retrieval_event, via};
use crate::prefetch::{self, CodeShown};

const SEARCH_NOTES: &str = "search_notes";
/// The `UserMessage` source of the start list, for figures read from events.
pub const START_LIST_SOURCE: MessageSource = MessageSource::Notes;
/// The retrieval tools, for config checks.
pub const RETRIEVAL_TOOLS: &[&str] = &[SEARCH_NOTES, READ_NOTE];

/// The `[errors]` keys each retrieval tool's code renders, checked against
/// an agent that lists the `notes` extension (`cut`, the marker of either
/// tool's output cut to the limit, is kept with `read_note`).
pub const RETRIEVAL_TEXTS: &[ToolTexts] = &[
    ToolTexts {
        tool: SEARCH_NOTES,
        errors: &[
            "header",
            "hit",
            "none",
            "empty_query",
            "stale",
            "unavailable",
        ],
    },
    ToolTexts {
        tool: READ_NOTE,
        errors: &["note", "stale", "not_found", "unavailable", "cut"],
    },
];
/// Hits `search_notes` returns.
const SEARCH_LIMIT: usize = 8;
/// Hindsight candidates looked at per error (one is offered).
const ERROR_CANDIDATES: usize = 3;
/// Characters of a note's fix shown next to an error when `read_note` is
/// not offered: enough for a fix, short enough to sit under a result.
const HINT_FIX_CHARS: usize = 400;

/// How much retrieval may add to a session.
#[derive(Debug, Clone, PartialEq)]
pub struct RetrievalSettings {
    /// Notes listed at start at most.
    pub max_shown: usize,
    /// Characters the start list may take (titles, descriptions, ids).
    pub budget_chars: usize,
    /// Characters of note text shown in the start list itself, over all
    /// notes, in rank order (0: titles only). Models rarely call read_note
    /// on a title alone, and a note shown in full needs no tool.
    pub inline_chars: usize,
    /// Relevance a note needs to be listed at start (see
    /// [`quire_notes::NoteIndex::relevance`]); the project's architecture notes
    /// need none.
    pub min_score: f32,
    /// Characters of the code the listed notes point to, shown after them
    /// (see [`crate::prefetch`]); 0: none.
    pub code_chars: usize,
}

/// What retrieval did in this session, in `ctx.state`.
#[derive(Debug, Clone, Default)]
pub struct NotesState {
    pub shown: BTreeSet<String>,
    pub read: BTreeSet<String>,
    /// Notes already offered next to an error; each is offered once.
    pub offered: BTreeSet<String>,
    /// Stale check results by note id (files are checked once per session).
    stale: HashMap<String, Option<String>>,
}

/// The `notes` extension of the coding agent.
pub struct NotesExtension {
    paths: NotesPaths,
    redactor: Redactor,
    project: Option<String>,
    task: String,
    /// The session copy: where stale checks look for files and symbols.
    workspace: PathBuf,
    settings: RetrievalSettings,
    notes: OnceLock<Result<Arc<Notes>, String>>,
    /// The start list, planned once: `tools` and `on_start` both decide
    /// from it.
    start: OnceLock<Vec<StartEntry>>,
}

/// One note of the start list and how it is shown.
#[derive(Debug, Clone)]
struct StartEntry {
    hit: Hit,
    /// Why the note is stale; only architecture notes are kept when stale.
    stale: Option<String>,
    /// The note's text shown under its entry, and whether it was cut.
    body: Option<(String, bool)>,
    /// The note has a text at all (an entry without one says it all).
    has_text: bool,
}

impl StartEntry {
    /// Shown without its full text: the model needs `read_note` for it.
    fn needs_read(&self) -> bool {
        match &self.body {
            Some((_, cut)) => *cut,
            None => self.has_text,
        }
    }
}

impl NotesExtension {
    /// The extension name used in agent.toml `extensions`.
    pub const NAME: &'static str = "notes";

    pub fn new(
        paths: NotesPaths,
        redactor: Redactor,
        project: &str,
        task: impl Into<String>,
        workspace: impl Into<PathBuf>,
        settings: RetrievalSettings,
    ) -> NotesExtension {
        let project = project.trim();
        NotesExtension {
            paths,
            redactor,
            project: (!project.is_empty()).then(|| project.to_string()),
            task: task.into(),
            workspace: workspace.into(),
            settings,
            notes: OnceLock::new(),
            start: OnceLock::new(),
        }
    }

    /// The start list, planned on first use from the notes relevant to the
    /// task. Deterministic for a task, project, tree and session copy;
    /// empty when the notes cannot be opened or searched (retrieval is then
    /// off for the session, which goes on).
    fn start_entries(&self) -> &[StartEntry] {
        self.start.get_or_init(|| {
            let Ok(notes) = self.notes() else {
                return Vec::new();
            };
            let hits = notes
                .index
                .search_for_start(
                    &self.task,
                    self.project.as_deref(),
                    self.settings.max_shown,
                    self.settings.min_score,
                )
                .unwrap_or_else(|e| {
                    tracing::warn!(error = %e, "note retrieval failed");
                    Vec::new()
                });
            self.plan_start(&notes, hits)
        })
    }

    /// Which hits are shown, and which with their text: stale notes other
    /// than architecture notes are dropped (they cost tokens and mislead),
    /// texts are inlined in rank order while they fit `inline_chars` (the
    /// first one that does not fit is cut at a line, the rest get titles).
    fn plan_start(&self, notes: &Notes, hits: Vec<Hit>) -> Vec<StartEntry> {
        let mut entries = Vec::with_capacity(hits.len());
        let mut inline_left = self.settings.inline_chars;
        for hit in hits {
            let note = match notes.tree.get(&hit.id) {
                Ok(Some(note)) => note,
                _ => continue,
            };
            let stale = stale_reason(&note, &self.workspace);
            if let Some(reason) = &stale {
                tracing::info!(id = %hit.id, %reason, "retrieved note is stale");
                if hit.kind != quire_notes::Kind::Architecture {
                    continue;
                }
            }
            let body = (inline_left > 0)
                .then(|| cut_at_line(&note.body, inline_left))
                .flatten();
            if let Some((text, cut)) = &body {
                inline_left = if *cut {
                    0
                } else {
                    inline_left.saturating_sub(text.chars().count())
                };
            }
            let has_text = !note.body.trim().is_empty();
            entries.push(StartEntry {
                hit,
                stale,
                body,
                has_text,
            });
        }
        entries
    }

    /// Whether the notes tools are offered in this session: only when the
    /// start list shows some note without its full text. Decided on the
    /// plan, not on the rendered list, which needs the config: a budget
    /// too small for an entry still leaves the tools offered.
    fn tools_listed(&self) -> bool {
        self.start_entries().iter().any(StartEntry::needs_read)
    }

    /// The notes, opened (and synced with hand edits) on first use. A
    /// failure disables retrieval for the session rather than failing it.
    fn notes(&self) -> Result<Arc<Notes>, String> {
        self.notes
            .get_or_init(|| {
                Notes::open(&self.paths, self.redactor.clone())
                    .map(|(notes, report)| {
                        for b in &report.broken {
                            tracing::warn!(
                                "broken note left out: {}:{}: {}",
                                notes.root().join(&b.path).display(),
                                b.line,
                                b.message
                            );
                        }
                        Arc::new(notes)
                    })
                    .map_err(|e| {
                        tracing::warn!(error = %e, "notes unavailable in this session");
                        e.to_string()
                    })
            })
            .clone()
    }

    /// Why a note is stale, checked once per note and session.
    fn stale(&self, ctx: &mut Ctx, notes: &Notes, id: &str) -> Option<String> {
        if let Some(known) = ctx.state.get_mut::<NotesState>().stale.get(id) {
            return known.clone();
        }
        let reason = match notes.tree.get(id) {
            Ok(Some(note)) => stale_reason(&note, &self.workspace),
            _ => None,
        };
        if let Some(r) = &reason {
            tracing::info!(id, reason = %r, "retrieved note is stale");
        }
        ctx.state
            .get_mut::<NotesState>()
            .stale
            .insert(id.to_string(), reason.clone());
        reason
    }

    /// The start list's message, the ids listed and the ids shown in
    /// full. Entries past `budget_chars` are left out (the text of a note
    /// shown does not count against it: `inline_chars` bounds that).
    fn start_message(&self, ctx: &mut Ctx) -> Option<(String, Vec<String>, Vec<String>)> {
        let config = ctx.config.clone();
        let mut lines = Vec::new();
        let mut ids = Vec::new();
        let mut read = Vec::new();
        let mut used = 0;
        for entry in self.start_entries() {
            let hit = &entry.hit;
            ctx.state
                .get_mut::<NotesState>()
                .stale
                .insert(hit.id.clone(), entry.stale.clone());
            let stale = entry
                .stale
                .as_ref()
                .map(|reason| render(config.message("notes_stale"), &[("reason", reason)]))
                .unwrap_or_default();
            let shown_whole = matches!(&entry.body, Some((_, false)));
            let template = if shown_whole {
                "notes_retrieved_entry_full"
            } else {
                "notes_retrieved_entry"
            };
            let mut line = render(
                config.message(template),
                &[
                    ("id", &hit.id),
                    ("kind", hit.kind.as_str()),
                    ("title", &hit.title),
                    ("description", &hit.description),
                    ("stale", &stale),
                ],
            );
            let cost = line.chars().count() + 1;
            if used + cost > self.settings.budget_chars {
                break;
            }
            used += cost;
            if let Some((body, cut)) = &entry.body {
                let more = if *cut {
                    render(config.message("notes_inline_more"), &[("id", &hit.id)])
                } else {
                    read.push(hit.id.clone());
                    String::new()
                };
                line.push('\n');
                line.push_str(&render(
                    config.message("notes_inline"),
                    &[("body", body), ("more", &more)],
                ));
            }
            lines.push(line);
            ids.push(hit.id.clone());
        }
        if lines.is_empty() {
            return None;
        }
        let header = if self.tools_listed() {
            "notes_retrieved"
        } else {
            "notes_retrieved_in_full"
        };
        let mut text = render(config.message(header), &[("notes", &lines.join("\n"))])
            .trim()
            .to_string();
        if let Some(code) = self.code_block(ctx, &ids) {
            text.push_str("\n\n");
            text.push_str(code.trim());
        }
        Some((text, ids, read))
    }

    /// The code the listed notes point to (see [`crate::prefetch`]),
    /// rendered; its files are marked seen and what was shown is recorded.
    /// `None` when nothing they point to is about the task.
    fn code_block(&self, ctx: &mut Ctx, listed: &[String]) -> Option<String> {
        let notes = self.notes().ok()?;
        let listed: Vec<Note> = listed
            .iter()
            .filter_map(|id| notes.tree.get(id).ok().flatten())
            .collect();
        let refs: Vec<&Note> = listed.iter().collect();
        let excerpts = prefetch::plan(&self.task, &refs, &self.workspace, self.settings.code_chars);
        if excerpts.is_empty() {
            return None;
        }
        let config = ctx.config.clone();
        let mut blocks = Vec::with_capacity(excerpts.len());
        for e in &excerpts {
            let lines = e.file_lines.to_string();
            let block = match &e.symbol {
                None => render(
                    config.message("notes_code_file"),
                    &[("path", &e.path), ("lines", &lines), ("text", &e.text)],
                ),
                Some(symbol) => render(
                    config.message("notes_code_definition"),
                    &[
                        ("path", &e.path),
                        ("symbol", symbol),
                        ("start", &e.start.to_string()),
                        ("end", &e.end.to_string()),
                        ("lines", &lines),
                        ("text", &e.text),
                    ],
                ),
            };
            blocks.push(block);
            if let Ok(content) = std::fs::read(self.workspace.join(&e.path)) {
                ctx.state
                    .get_mut::<WorkspaceState>()
                    .mark_shown(&e.path, &content);
            }
        }
        let chars = excerpts.iter().map(|e| e.chars).sum();
        match ExtensionPayload::new(&CodeShown { excerpts, chars }) {
            Ok(payload) => {
                if let Err(err) = ctx.emit(EventKind::Extension(payload)) {
                    tracing::warn!(%err, "could not record the code shown with the notes");
                }
            }
            Err(err) => tracing::warn!(%err, "could not record the code shown with the notes"),
        }
        Some(render(
            config.message("notes_code"),
            &[("excerpts", &blocks.join("\n\n"))],
        ))
    }

    /// After a resume: the files whose code the start list showed count as
    /// seen again (the rebuilt tool state knows only tool results).
    fn remark_shown_code(&self, ctx: &mut Ctx) {
        let Some(start) = start_list_text(&ctx.config, &ctx.messages) else {
            return;
        };
        let templates = [
            ctx.config.message("notes_code_file"),
            ctx.config.message("notes_code_definition"),
        ];
        let mut paths = BTreeSet::new();
        for line in start.lines() {
            for template in &templates {
                if let Some(path) = path_in_header(template, line) {
                    paths.insert(path.to_string());
                }
            }
        }
        for path in paths {
            if let Ok(content) = std::fs::read(self.workspace.join(&path)) {
                ctx.state
                    .get_mut::<WorkspaceState>()
                    .mark_shown(&path, &content);
            }
        }
    }

    fn search(&self, ctx: &mut Ctx, query: &str) -> ToolOutput {
        let config = ctx.config.clone();
        let notes = match self.notes() {
            Ok(n) => n,
            Err(e) => return unavailable(&config, SEARCH_NOTES, &e),
        };
        if query.trim().is_empty() {
            return ToolOutput::error(text(&config, SEARCH_NOTES, "empty_query", &[]));
        }
        let hits: Vec<Hit> = match notes.index.search_for_session(
            query,
            self.project.as_deref(),
            SEARCH_LIMIT,
            usize::MAX,
        ) {
            Ok(hits) => hits,
            Err(e) => return unavailable(&config, SEARCH_NOTES, &e.to_string()),
        };
        if hits.is_empty() {
            let t = text(&config, SEARCH_NOTES, "none", &[("query", query)]);
            return ToolOutput::ok(t.clone(), t);
        }
        let mut out = text(&config, SEARCH_NOTES, "header", &[("query", query)]);
        let mut ids = Vec::new();
        for hit in hits {
            let stale = self
                .stale(ctx, &notes, &hit.id)
                .map(|reason| text(&config, SEARCH_NOTES, "stale", &[("reason", &reason)]))
                .unwrap_or_default();
            out.push('\n');
            out.push_str(&text(
                &config,
                SEARCH_NOTES,
                "hit",
                &[
                    ("id", &hit.id),
                    ("kind", hit.kind.as_str()),
                    ("title", &hit.title),
                    ("description", &hit.description),
                    ("snippet", &hit.snippet),
                    ("stale", &stale),
                ],
            ));
            ids.push(hit.id);
        }
        record(ctx, via::SEARCH, &ids);
        capped(&config, ToolOutput::ok(out.clone(), out))
    }

    fn read(&self, ctx: &mut Ctx, id: &str) -> ToolOutput {
        let config = ctx.config.clone();
        let notes = match self.notes() {
            Ok(n) => n,
            Err(e) => return unavailable(&config, READ_NOTE, &e),
        };
        let id = id.trim();
        let note: Note = match notes.tree.get(id) {
            Ok(Some(note)) => note,
            Ok(None) => {
                return ToolOutput::error(text(&config, READ_NOTE, "not_found", &[("id", id)]));
            }
            Err(e) => return unavailable(&config, READ_NOTE, &e.to_string()),
        };
        let stale = self
            .stale(ctx, &notes, id)
            .map(|reason| text(&config, READ_NOTE, "stale", &[("reason", &reason)]))
            .unwrap_or_default();
        let m = &note.meta;
        let scope = match &m.project {
            Some(p) => format!("project {p}"),
            None => m.scope.as_str().to_string(),
        };
        let out = text(
            &config,
            READ_NOTE,
            "note",
            &[
                ("id", &m.id),
                ("title", &m.title),
                ("kind", m.kind.as_str()),
                ("scope", &scope),
                ("description", &m.description),
                ("stale", &stale),
                ("body", &note.body),
            ],
        );
        record(ctx, via::READ, std::slice::from_ref(&m.id));
        capped(&config, ToolOutput::ok(out.clone(), out))
    }

    /// After a tool ran: when it failed (or the tests failed), offers the
    /// best matching hindsight note not offered yet, on one added line.
    fn offer_hint(&self, ctx: &mut Ctx, tool: &str, output: &mut ToolOutput) {
        if RETRIEVAL_TOOLS.contains(&tool) {
            return;
        }
        let tests_failed = ctx.config.tool_roles.tests.iter().any(|t| t == tool)
            && ctx.facts.last_test.is_some_and(|t| !t.passed());
        if !output.is_error && !tests_failed {
            return;
        }
        let Ok(notes) = self.notes() else {
            return;
        };
        let hits = match notes
            .index
            .search_errors(&output.agent_view, ERROR_CANDIDATES)
        {
            Ok(hits) => hits,
            Err(e) => {
                tracing::warn!(error = %e, "hindsight search failed");
                return;
            }
        };
        let offered = &ctx.state.get_mut::<NotesState>().offered;
        let Some(hit) = hits.into_iter().find(|h| !offered.contains(&h.id)) else {
            return;
        };
        let line = if self.tools_listed() {
            render(
                ctx.config.message("notes_error_hint"),
                &[("id", &hit.id), ("title", &hit.title)],
            )
        } else {
            // Without read_note the model could not follow a pointer.
            let Some(fix) = notes
                .tree
                .get(&hit.id)
                .ok()
                .flatten()
                .and_then(|n| hint_fix(&n))
            else {
                return;
            };
            render(
                ctx.config.message("notes_error_hint_inline"),
                &[("id", &hit.id), ("title", &hit.title), ("fix", &fix)],
            )
        };
        for view in [&mut output.agent_view, &mut output.user_view] {
            if !view.is_empty() && !view.ends_with('\n') {
                view.push('\n');
            }
            view.push_str(line.trim());
        }
        ctx.state
            .get_mut::<NotesState>()
            .offered
            .insert(hit.id.clone());
        record(ctx, via::ERROR, &[hit.id]);
    }
}

/// What a hint shows of a note when it cannot point to read_note: its
/// `## Fix` section, else its body without the `## Error` section (the
/// error is right above), cut at a line within [`HINT_FIX_CHARS`].
fn hint_fix(note: &Note) -> Option<String> {
    let fix = section(&note.body, "fix").unwrap_or_else(|| without_section(&note.body, "error"));
    let (mut text, cut) = cut_at_line(&fix, HINT_FIX_CHARS)?;
    if cut {
        text.push_str("\n…");
    }
    Some(text)
}

/// The text under a `## <name>` heading (any case), up to the next one.
fn section(body: &str, name: &str) -> Option<String> {
    let mut lines = body.lines().skip_while(|l| !is_heading(l, name));
    lines.next()?;
    let text: Vec<&str> = lines.take_while(|l| !l.starts_with("## ")).collect();
    let text = text.join("\n");
    (!text.trim().is_empty()).then_some(text)
}

/// `body` without its `## <name>` section.
fn without_section(body: &str, name: &str) -> String {
    let mut out = Vec::new();
    let mut skipping = false;
    for line in body.lines() {
        if line.starts_with("## ") {
            skipping = is_heading(line, name);
        }
        if !skipping {
            out.push(line);
        }
    }
    out.join("\n")
}

fn is_heading(line: &str, name: &str) -> bool {
    line.trim()
        .strip_prefix("## ")
        .is_some_and(|h| h.trim().eq_ignore_ascii_case(name))
}

/// The texts before `{notes}` in the start list's templates: how the
/// message is recognised in a conversation.
fn start_list_heads(config: &AgentConfig) -> Vec<String> {
    ["notes_retrieved", "notes_retrieved_in_full"]
        .iter()
        .map(|key| {
            let template = config.message(key);
            template
                .split("{notes}")
                .next()
                .unwrap_or("")
                .trim()
                .to_string()
        })
        .filter(|head| !head.is_empty())
        .collect()
}

/// The start list's text in a conversation, if it has one.
fn start_list_text<'a>(config: &AgentConfig, messages: &'a [Message]) -> Option<&'a str> {
    let heads = start_list_heads(config);
    messages.iter().find_map(|m| match m {
        Message::User { content } if heads.iter().any(|h| content.starts_with(h)) => {
            Some(content.as_str())
        }
        _ => None,
    })
}

/// The path in a line rendered from a code excerpt's header template: the
/// text where `{path}` stands, between the template's text before it and
/// the character after it.
fn path_in_header<'a>(template: &str, line: &'a str) -> Option<&'a str> {
    let (before, after) = template.split_once("{path}")?;
    let before = before.trim_start();
    let end = after.chars().next()?;
    let rest = line.strip_prefix(before)?;
    let path = &rest[..rest.find(end)?];
    (!path.is_empty() && !path.contains(char::is_whitespace)).then_some(path)
}

/// Whether a conversation already used notes: a call to a notes tool, or
/// the start list (recognised by the text before `{notes}` in its template).
fn history_uses_notes(config: &AgentConfig, messages: &[Message]) -> bool {
    let heads = start_list_heads(config);
    messages.iter().any(|m| match m {
        Message::Assistant { tool_calls, .. } => tool_calls
            .iter()
            .any(|c| RETRIEVAL_TOOLS.contains(&c.name.as_str())),
        Message::Tool { name, .. } => RETRIEVAL_TOOLS.contains(&name.as_str()),
        Message::User { content } => heads.iter().any(|head| content.starts_with(head)),
        Message::System { .. } => false,
    })
}

/// Notes reached the session: kept in state and recorded as an event.
fn record(ctx: &mut Ctx, how: NotesVia, ids: &[String]) {
    if ids.is_empty() {
        return;
    }
    let state = ctx.state.get_mut::<NotesState>();
    state.shown.extend(ids.iter().cloned());
    if how == via::READ {
        state.read.extend(ids.iter().cloned());
    }
    if let Err(err) = ctx.emit(retrieval_event(how, ids)) {
        tracing::warn!(%err, "could not record retrieved notes");
    }
}

fn unavailable(config: &AgentConfig, tool: &str, error: &str) -> ToolOutput {
    ToolOutput::error(text(config, tool, "unavailable", &[("error", error)]))
}

fn capped(config: &AgentConfig, out: ToolOutput) -> ToolOutput {
    let max = config.limits.tool_output_max_chars as usize;
    ToolOutput {
        agent_view: quire_tools::cap_output(
            &out.agent_view,
            max,
            config.tool_error(READ_NOTE, "cut"),
        ),
        ..out
    }
}

#[async_trait]
impl Extension for NotesExtension {
    fn name(&self) -> &str {
        Self::NAME
    }

    /// `search_notes` and `read_note`, only when some note is relevant to
    /// the task (the start list is not empty). `Agent::new` collects tools
    /// once, before any ctx or conversation exists, for a new session and a
    /// resumed one alike, so the choice cannot look at the history: it
    /// comes from the same deterministic retrieval as the start list (task,
    /// project, tree). A resumed session thus gets the tools its first run
    /// had, unless the tree changed in between so that none of the task's
    /// notes is relevant any more; relevance does not grow with the size
    /// of the tree, so new notes on other things do not flip it, and
    /// `on_start` logs the case.
    fn tools(&self) -> Vec<&'static str> {
        if self.tools_listed() {
            RETRIEVAL_TOOLS.to_vec()
        } else {
            Vec::new()
        }
    }

    /// Lists the task's notes once, right after the task; nothing when no
    /// note is relevant. A resumed session already has the list in its
    /// conversation, so nothing is added.
    async fn on_start(&self, ctx: &mut Ctx) -> Result<(), CoreError> {
        let resumed = ctx
            .messages
            .iter()
            .any(|m| matches!(m, Message::Assistant { .. }));
        if resumed {
            if !self.tools_listed() && history_uses_notes(&ctx.config, &ctx.messages) {
                tracing::warn!(
                    "the resumed session used notes, but none is relevant to its task any more \
                     (the notes changed since): search_notes and read_note are not offered"
                );
            }
            self.remark_shown_code(ctx);
            return Ok(());
        }
        if let Some((message, ids, read)) = self.start_message(ctx) {
            ctx.push_user(START_LIST_SOURCE, message)?;
            record(ctx, via::START, &ids);
            // Shown in full: they count as read when the session is credited.
            if !read.is_empty() {
                record(ctx, via::READ, &read);
            }
        }
        Ok(())
    }

    async fn on_tool_result(&self, ctx: &mut Ctx, action: &Action, output: &mut ToolOutput) {
        self.offer_hint(ctx, &action.call.name, output);
    }

    async fn execute(&self, ctx: &mut Ctx, action: &Action) -> ToolOutput {
        match action.call.name.as_str() {
            SEARCH_NOTES => self.search(ctx, str_arg(action, "query")),
            READ_NOTE => self.read(ctx, str_arg(action, "id")),
            other => ToolOutput::error(render(
                ctx.config.message("unknown_tool"),
                &[("name", other), ("tools", &RETRIEVAL_TOOLS.join(", "))],
            )),
        }
    }
}

fn text(config: &AgentConfig, tool: &str, key: &str, vars: &[(&str, &str)]) -> String {
    render(config.tool_error(tool, key), vars)
}

fn str_arg<'a>(action: &'a Action, key: &str) -> &'a str {
    action.args.get(key).and_then(|v| v.as_str()).unwrap_or("")
}

#[cfg(test)]
mod tests;
