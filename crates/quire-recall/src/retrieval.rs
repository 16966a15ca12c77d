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

use crate::facts::{READ_NOTE, retrieval_event, via};

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
            let mut line = render(
                config.message("notes_retrieved_entry"),
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
        let text = render(config.message(header), &[("notes", &lines.join("\n"))]);
        Some((text.trim().to_string(), ids, read))
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

/// Whether a conversation already used notes: a call to a notes tool, or
/// the start list (recognised by the text before `{notes}` in its template).
fn history_uses_notes(config: &AgentConfig, messages: &[Message]) -> bool {
    let heads: Vec<String> = ["notes_retrieved", "notes_retrieved_in_full"]
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
        .collect();
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
mod tests {
    use super::*;
    use crate::testutil::{action, config, ctx};
    use quire_notes::{Kind, NewNote, NoteTree, Provenance};

    struct Fixture {
        dir: tempfile::TempDir,
        paths: NotesPaths,
        hindsight: String,
        stale: String,
        shared: String,
    }

    fn fixture() -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path().join("ws");
        std::fs::create_dir_all(ws.join("src")).unwrap();
        std::fs::write(ws.join("src/cart.py"), "def total(items): pass\n").unwrap();
        let paths = NotesPaths {
            root: dir.path().join("notes"),
            index_dir: dir.path().join("index"),
        };
        let tree = NoteTree::open(&paths.root).unwrap();
        let hindsight = tree
            .create(
                NewNote::project(
                    "shop",
                    "testing",
                    Kind::Hindsight,
                    "Cart totals crash with Decimal and float",
                )
                .description("adding a float price to a Decimal total")
                .error_signatures([
                    "TypeError: unsupported operand type(s) for +: 'Decimal' and 'float'",
                ])
                .provenance(Provenance {
                    files: vec!["src/cart.py".into()],
                    ..Provenance::default()
                })
                .body("## Error\n\nTypeError\n\n## Fix\n\nParse prices as Decimal."),
            )
            .unwrap();
        let stale = tree
            .create(
                NewNote::project(
                    "shop",
                    "money",
                    Kind::Insight,
                    "Cart totals are rounded in money.py",
                )
                .description("where rounding of cart totals happens")
                .provenance(Provenance {
                    files: vec!["src/money.py".into()],
                    ..Provenance::default()
                }),
            )
            .unwrap();
        let shared = tree
            .create(
                NewNote::shared(
                    "python",
                    Kind::Insight,
                    "Never mix Decimal and float for money totals",
                )
                .description("Decimal arithmetic with floats raises TypeError"),
            )
            .unwrap();
        tree.create(NewNote::project(
            "other",
            "x",
            Kind::Insight,
            "Cart totals in the other project",
        ))
        .unwrap();
        Fixture {
            hindsight: hindsight.meta.id,
            stale: stale.meta.id,
            shared: shared.meta.id,
            paths,
            dir,
        }
    }

    fn extension(f: &Fixture, budget: usize) -> NotesExtension {
        NotesExtension::new(
            f.paths.clone(),
            Redactor::new(),
            "shop",
            "Cart totals crash when a coupon adds a float",
            f.dir.path().join("ws"),
            RetrievalSettings {
                max_shown: 5,
                budget_chars: budget,
                inline_chars: 0,
                min_score: 0.0,
            },
        )
    }

    #[tokio::test]
    async fn note_texts_are_shown_in_full_while_they_fit_and_count_as_read() {
        let f = fixture();
        let with_inline = |chars: usize| {
            let mut ext = extension(&f, 2_000);
            ext.settings.inline_chars = chars;
            ext
        };
        let ext = with_inline(1_000);
        let mut ctx = ctx(config());
        ctx.messages.push(Message::user("the task"));
        ext.on_start(&mut ctx).await.unwrap();
        let list = ctx.messages[1].text().to_string();
        assert!(list.contains("Parse prices as Decimal."), "{list}");
        assert!(!list.contains("read_note"), "{list}");
        // Everything listed is shown whole: no tool is needed to read it.
        assert!(ext.tools().is_empty());
        let state = ctx.state.get_mut::<NotesState>();
        assert!(state.read.contains(&f.hindsight), "{:?}", state.read);

        // Cut at a line within the budget, with a pointer to the rest, and
        // then the tools are offered.
        let ext = with_inline(20);
        let mut ctx = crate::testutil::ctx(config());
        ctx.messages.push(Message::user("the task"));
        ext.on_start(&mut ctx).await.unwrap();
        let list = ctx.messages[1].text().to_string();
        assert!(list.contains("## Error\n\nTypeError"), "{list}");
        assert!(!list.contains("Parse prices"), "{list}");
        assert!(
            list.contains(&format!("read_note {} for the rest", f.hindsight)),
            "{list}"
        );
        assert_eq!(ext.tools(), RETRIEVAL_TOOLS.to_vec());
        assert!(
            !ctx.state
                .get_mut::<NotesState>()
                .read
                .contains(&f.hindsight)
        );

        // Off: titles only, nothing counts as read, the tools are offered.
        let ext = with_inline(0);
        let mut ctx = crate::testutil::ctx(config());
        ctx.messages.push(Message::user("the task"));
        ext.on_start(&mut ctx).await.unwrap();
        assert!(!ctx.messages[1].text().contains("Parse prices"));
        assert!(ctx.state.get_mut::<NotesState>().read.is_empty());
        assert_eq!(ext.tools(), RETRIEVAL_TOOLS.to_vec());
    }

    #[tokio::test]
    async fn the_start_list_comes_once_after_the_task_within_budget() {
        let f = fixture();
        let ext = extension(&f, 2_000);
        let mut ctx = ctx(config());
        ctx.messages.push(Message::user("the task"));
        ext.on_start(&mut ctx).await.unwrap();
        assert_eq!(ctx.messages.len(), 2);
        let list = ctx.messages[1].text().to_string();
        let at = |id: &str| {
            list.find(id)
                .unwrap_or_else(|| panic!("{id} missing: {list}"))
        };
        assert!(at(&f.hindsight) < at(&f.shared), "project first: {list}");
        // A stale note (its file is gone) is left out: it would mislead.
        assert!(!list.contains(&f.stale), "{list}");
        assert!(!list.contains("other project"), "{list}");
        let fresh_line = list.lines().find(|l| l.contains(&f.hindsight)).unwrap();
        assert!(!fresh_line.contains("stale"), "{fresh_line}");
        assert_eq!(ctx.state.get_mut::<NotesState>().shown.len(), 2);

        // A tight budget keeps only what fits.
        let small = extension(&f, 160);
        let mut ctx2 = crate::testutil::ctx(config());
        ctx2.messages.push(Message::user("the task"));
        small.on_start(&mut ctx2).await.unwrap();
        let shown = ctx2.state.get_mut::<NotesState>().shown.len();
        assert_eq!(shown, 1, "{:?}", ctx2.messages);

        // A resumed session already has its list.
        let mut resumed = crate::testutil::ctx(config());
        resumed.messages.push(Message::user("the task"));
        resumed.messages.push(Message::assistant("", vec![]));
        ext.on_start(&mut resumed).await.unwrap();
        assert_eq!(resumed.messages.len(), 2);
    }

    #[tokio::test]
    async fn search_and_read_pull_more_and_are_recorded() {
        let f = fixture();
        let ext = extension(&f, 2_000);
        let sink = std::sync::Arc::new(quire_core::MemorySink::default());
        let mut ctx = crate::testutil::ctx_with_sink(config(), sink.clone());
        let out = ext
            .execute(
                &mut ctx,
                &action(SEARCH_NOTES, serde_json::json!({"query": "Decimal float"})),
            )
            .await;
        assert!(
            !out.is_error && out.agent_view.contains(&f.shared),
            "{}",
            out.agent_view
        );
        let out = ext
            .execute(
                &mut ctx,
                &action(READ_NOTE, serde_json::json!({"id": f.hindsight})),
            )
            .await;
        assert!(
            out.agent_view.contains("Parse prices as Decimal."),
            "{}",
            out.agent_view
        );
        let stale = ext
            .execute(
                &mut ctx,
                &action(READ_NOTE, serde_json::json!({"id": f.stale})),
            )
            .await;
        assert!(
            stale.agent_view.contains("Stale: src/money.py"),
            "{}",
            stale.agent_view
        );
        let missing = ext
            .execute(
                &mut ctx,
                &action(READ_NOTE, serde_json::json!({"id": "NOPE"})),
            )
            .await;
        assert!(missing.is_error);
        let state = ctx.state.get_mut::<NotesState>();
        assert!(state.read.contains(&f.hindsight) && state.read.contains(&f.stale));
        assert_eq!(state.read.len(), 2);

        // What reached the session is in the trajectory, for crediting.
        let events: Vec<quire_types::Event> = sink.events();
        let facts = crate::SessionFacts::from_events(&events);
        assert_eq!(facts.read, vec![f.hindsight.clone(), f.stale.clone()]);
        assert!(facts.shown.contains(&f.shared));
        let vias: Vec<String> = events
            .iter()
            .filter_map(|e| match &e.kind {
                quire_types::EventKind::NotesRetrieved { via, .. } => Some(via.to_string()),
                _ => None,
            })
            .collect();
        assert_eq!(vias, vec!["search", "read", "read"]);
    }

    #[tokio::test]
    async fn errors_and_failing_tests_get_one_hint_per_note() {
        let f = fixture();
        let ext = extension(&f, 2_000);
        let mut ctx = ctx(config());
        let error = "Traceback:\n  File \"/tmp/x/src/cart.py\", line 3\nTypeError: unsupported operand type(s) for +: 'Decimal' and 'float'";
        let mut out = ToolOutput::error(error);
        ext.offer_hint(&mut ctx, "edit_file", &mut out);
        assert!(out.agent_view.starts_with(error));
        assert!(out.agent_view.contains(&f.hindsight), "{}", out.agent_view);
        assert!(out.user_view.contains(&f.hindsight));

        // The same note is not offered twice.
        let mut again = ToolOutput::error(error);
        ext.offer_hint(&mut ctx, "edit_file", &mut again);
        assert_eq!(again.agent_view, error);

        // Failing tests are not tool errors, but get a hint too.
        let mut fresh = crate::testutil::ctx(config());
        fresh.facts.tested(quire_core::TestOutcome::Failed);
        let mut tests = ToolOutput::ok(format!("Tests failed.\n{error}"), "");
        ext.offer_hint(&mut fresh, "run_tests", &mut tests);
        assert!(
            tests.agent_view.contains(&f.hindsight),
            "{}",
            tests.agent_view
        );

        // Passing tests and unrelated errors get nothing.
        let mut other = crate::testutil::ctx(config());
        let mut ok = ToolOutput::ok(error, "");
        ext.offer_hint(&mut other, "read_file", &mut ok);
        assert_eq!(ok.agent_view, error);
        let mut unrelated = ToolOutput::error("No file `src/nothing.py`.");
        ext.offer_hint(&mut other, "read_file", &mut unrelated);
        assert_eq!(unrelated.agent_view, "No file `src/nothing.py`.");
    }

    /// The extension as sessions get it: the default threshold.
    fn session(f: &Fixture, project: &str, task: &str) -> NotesExtension {
        session_with(f.paths.clone(), project, task, default_min_score(), &f.dir)
    }

    fn session_with(
        paths: NotesPaths,
        project: &str,
        task: &str,
        min_score: f32,
        dir: &tempfile::TempDir,
    ) -> NotesExtension {
        NotesExtension::new(
            paths,
            Redactor::new(),
            project,
            task,
            dir.path().join("ws"),
            RetrievalSettings {
                max_shown: 5,
                budget_chars: 2_000,
                inline_chars: 1_500,
                min_score,
            },
        )
    }

    /// A session whose start list shows titles only, so the tools are offered.
    fn titles_only(f: &Fixture, project: &str, task: &str) -> NotesExtension {
        let mut ext = session(f, project, task);
        ext.settings.inline_chars = 0;
        ext
    }

    fn default_min_score() -> f32 {
        quire_config::NotesConfig::default().min_score as f32
    }

    /// Runs `on_start` on a fresh conversation; the messages it added.
    async fn started(ext: &NotesExtension) -> (Vec<Message>, Ctx) {
        let mut ctx = ctx(config());
        ctx.messages.push(Message::user("the task"));
        ext.on_start(&mut ctx).await.unwrap();
        (ctx.messages[1..].to_vec(), ctx)
    }

    const RELATED_TASK: &str = "Cart totals crash with a TypeError when a coupon adds a float \
        discount to the Decimal total. Make cart totals work with coupons.";
    const UNRELATED_TASK: &str = "Show the order history page with the newest orders first, \
        twenty per page.";

    #[tokio::test]
    async fn nothing_for_the_project_gives_no_tools_and_no_message() {
        let f = fixture();
        let ext = session(&f, "blog", "Add an RSS feed of the latest blog posts");
        assert!(ext.tools().is_empty());
        let (added, mut ctx) = started(&ext).await;
        assert!(added.is_empty(), "{added:?}");
        assert!(ctx.state.get_mut::<NotesState>().shown.is_empty());
        // A shared note that matches still counts for any project.
        let jinja = NoteTree::open(&f.paths.root)
            .unwrap()
            .create(
                NewNote::shared("web", Kind::Insight, "Jinja autoescapes HTML in templates")
                    .description("mark trusted HTML with the safe filter instead of escaping twice")
                    .keywords(["jinja", "autoescape", "safe filter"]),
            )
            .unwrap()
            .meta
            .id;
        let ext = session(
            &f,
            "blog",
            "Post titles show escaped HTML: the Jinja templates escape it twice",
        );
        // Listed, and shown whole (it has no text beyond its entry).
        assert!(ext.tools().is_empty());
        let (added, _) = started(&ext).await;
        assert!(added[0].text().contains(&jinja), "{added:?}");
    }

    #[tokio::test]
    async fn an_unrelated_note_under_the_threshold_gives_no_tools_and_no_message() {
        let f = fixture();
        // The task matches the shop's cart notes a little ("order", "total").
        let task = "Show the order history with totals, the newest orders first";
        let everything = session_with(f.paths.clone(), "shop", task, 0.0, &f.dir);
        assert!(!everything.start_entries().is_empty(), "it does match");
        let (added, _) = started(&everything).await;
        assert_eq!(added.len(), 1);

        let ext = session(&f, "shop", task);
        assert!(ext.tools().is_empty());
        let (added, mut ctx) = started(&ext).await;
        assert!(added.is_empty(), "{added:?}");
        assert!(ctx.state.get_mut::<NotesState>().shown.is_empty());
    }

    #[tokio::test]
    async fn a_related_note_is_listed_and_the_tools_come_when_a_text_is_not_shown() {
        let f = fixture();
        let ext = session(&f, "shop", RELATED_TASK);
        // Shown in full: nothing left to read.
        assert!(ext.tools().is_empty());
        let (added, mut ctx) = started(&ext).await;
        assert_eq!(added.len(), 1);
        let list = added[0].text();
        assert!(list.contains(&f.hindsight), "{list}");
        assert!(list.contains("Parse prices as Decimal."), "inline: {list}");
        assert!(!list.contains("read_note"), "no tool to name: {list}");
        assert!(
            ctx.state
                .get_mut::<NotesState>()
                .shown
                .contains(&f.hindsight)
        );
        // The same session again decides the same: what a resume relies on.
        assert_eq!(session(&f, "shop", RELATED_TASK).tools(), ext.tools());

        // Titles only: both tools, and the list says how to use them.
        let titles = titles_only(&f, "shop", RELATED_TASK);
        assert_eq!(titles.tools(), vec![SEARCH_NOTES, READ_NOTE]);
        let (added, _) = started(&titles).await;
        assert!(added[0].text().contains("read_note"), "{added:?}");
    }

    #[tokio::test]
    async fn an_architecture_note_is_listed_for_any_task_of_its_project() {
        let f = fixture();
        let map = NoteTree::open(&f.paths.root)
            .unwrap()
            .create(
                NewNote::project(
                    "shop",
                    "layout",
                    Kind::Architecture,
                    "How the shop is laid out",
                )
                .description("src/cart.py and src/money.py; tests in tests/, run with pytest")
                .body("## Overview\n\nA small Python package."),
            )
            .unwrap()
            .meta
            .id;
        let ext = session(&f, "shop", UNRELATED_TASK);
        assert_eq!(ext.start_entries().len(), 1);
        let (added, _) = started(&ext).await;
        let list = added[0].text();
        assert!(list.contains(&map), "{list}");
        assert!(list.contains("A small Python package."), "{list}");
        assert!(!list.contains(&f.hindsight), "{list}");
        // First among the project notes for a related task too.
        let (added, _) = started(&session(&f, "shop", RELATED_TASK)).await;
        let list = added[0].text();
        let at = |id: &str| list.find(id).unwrap_or_else(|| panic!("{id}: {list}"));
        assert!(at(&map) < at(&f.hindsight), "{list}");
        // Not for another project.
        assert!(
            session(&f, "blog", UNRELATED_TASK)
                .start_entries()
                .is_empty()
        );
    }

    #[tokio::test]
    async fn the_hint_inlines_the_fix_when_the_tools_are_not_listed() {
        let f = fixture();
        let long_fix = (1..=40)
            .map(|i| format!("Step {i}: convert the price field number {i} to Decimal."))
            .collect::<Vec<_>>()
            .join("\n");
        let long = NoteTree::open(&f.paths.root)
            .unwrap()
            .create(
                NewNote::project("shop", "money", Kind::Hindsight, "Refunds crash on float prices")
                    .error_signatures(["KeyError: 'refund_total'"])
                    .body(format!("## Error\n\nKeyError: 'refund_total'\n\n## Cause\n\nold field\n\n## Fix\n\n{long_fix}")),
            )
            .unwrap()
            .meta
            .id;
        let error = "TypeError: unsupported operand type(s) for +: 'Decimal' and 'float'";
        let ext = session(&f, "shop", UNRELATED_TASK);
        assert!(ext.tools().is_empty());
        let sink = std::sync::Arc::new(quire_core::MemorySink::default());
        let mut ctx = crate::testutil::ctx_with_sink(config(), sink.clone());
        let mut out = ToolOutput::error(error);
        ext.offer_hint(&mut ctx, "edit_file", &mut out);
        let hint = &out.agent_view[error.len()..];
        assert!(hint.contains(&f.hindsight), "{hint}");
        assert!(hint.contains("Parse prices as Decimal."), "{hint}");
        assert!(!hint.contains("read_note"), "{hint}");
        assert!(
            !hint.contains("## Error"),
            "the error is right above: {hint}"
        );
        assert!(!hint.contains("[missing"), "{hint}");
        assert!(out.user_view.contains("Parse prices as Decimal."));
        let facts = crate::SessionFacts::from_events(&sink.events());
        assert!(facts.shown.contains(&f.hindsight), "{facts:?}");
        let vias: Vec<String> = sink
            .events()
            .iter()
            .filter_map(|e| match &e.kind {
                quire_types::EventKind::NotesRetrieved { via, .. } => Some(via.to_string()),
                _ => None,
            })
            .collect();
        assert_eq!(vias, vec!["error"]);

        // A long fix is cut at a line within a few hundred characters.
        let mut out = ToolOutput::error("KeyError: 'refund_total'");
        ext.offer_hint(&mut ctx, "edit_file", &mut out);
        assert!(out.agent_view.contains(&long), "{}", out.agent_view);
        assert!(
            out.agent_view.contains("Step 1: convert"),
            "{}",
            out.agent_view
        );
        assert!(!out.agent_view.contains("Step 40:"), "{}", out.agent_view);
        assert!(
            out.agent_view
                .lines()
                .all(|l| !l.starts_with("Step") || l.ends_with("Decimal."))
        );
        assert!(out.agent_view.chars().count() < 600, "{}", out.agent_view);

        // With the tools listed, the hint points to read_note instead.
        let listed = titles_only(&f, "shop", RELATED_TASK);
        let mut out = ToolOutput::error(error);
        listed.offer_hint(&mut crate::testutil::ctx(config()), "edit_file", &mut out);
        assert!(out.agent_view.contains("read_note"), "{}", out.agent_view);
        assert!(
            !out.agent_view.contains("Parse prices"),
            "{}",
            out.agent_view
        );
    }

    #[tokio::test]
    async fn notes_that_cannot_be_opened_disable_notes_without_failing() {
        let f = fixture();
        let file = f.dir.path().join("not-a-folder");
        std::fs::write(&file, "x").unwrap();
        let paths = NotesPaths {
            root: file.clone(),
            index_dir: f.dir.path().join("index2"),
        };
        let ext = session_with(paths, "shop", RELATED_TASK, 0.0, &f.dir);
        assert!(ext.tools().is_empty());
        let (added, _) = started(&ext).await;
        assert!(added.is_empty());
        let mut out = ToolOutput::error(
            "TypeError: unsupported operand type(s) for +: 'Decimal' and 'float'",
        );
        let before = out.agent_view.clone();
        ext.offer_hint(&mut crate::testutil::ctx(config()), "edit_file", &mut out);
        assert_eq!(out.agent_view, before);
    }

    #[tokio::test]
    async fn a_resumed_session_gets_no_new_list_and_its_history_is_recognised() {
        let f = fixture();
        let ext = session(&f, "shop", RELATED_TASK);
        let mut resumed = crate::testutil::ctx(config());
        resumed.messages.push(Message::user("the task"));
        resumed.messages.push(Message::assistant("", vec![]));
        ext.on_start(&mut resumed).await.unwrap();
        assert_eq!(resumed.messages.len(), 2);
        assert!(!history_uses_notes(&resumed.config, &resumed.messages));

        // The start list, or a call to a notes tool, is recognised.
        let (added, ctx) = started(&ext).await;
        assert!(history_uses_notes(&ctx.config, &added));
        let call = quire_types::ToolCall::new("c1", READ_NOTE, "{}");
        let calls = vec![Message::assistant("", vec![call])];
        assert!(history_uses_notes(&ctx.config, &calls));
        let other = vec![Message::assistant(
            "",
            vec![quire_types::ToolCall::new("c2", "read_file", "{}")],
        )];
        assert!(!history_uses_notes(&ctx.config, &other));
    }

    #[test]
    fn fixes_come_from_the_fix_section_else_the_body_without_the_error() {
        let body = "## Error\n\nKeyError\n\n## Cause\n\nold\n\n## fix\n\nUse the new key.\n";
        assert_eq!(section(body, "fix").unwrap().trim(), "Use the new key.");
        assert_eq!(section("## Cause\n\nx", "fix"), None);
        let rest = without_section(
            "## Error\n\nKeyError\n\n## Why abandoned\n\nToo big.",
            "error",
        );
        assert_eq!(rest.trim(), "## Why abandoned\n\nToo big.");
        assert_eq!(
            cut_at_line("one\ntwo\nthree", 8),
            Some(("one\ntwo".to_string(), true))
        );
        assert_eq!(cut_at_line("  \n", 8), None);
    }
}
