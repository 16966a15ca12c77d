//! The `notes` extension: brings notes into a coding session.
//!
//! - At start, the task and project select the top active notes (project
//!   first, then shared) within a character budget; they are listed once,
//!   as one user message right after the task, by id, title and
//!   description. Sent once and never changed, it stays in the cached prefix.
//! - `search_notes {query}` and `read_note {id}` let the model pull more.
//! - When a tool fails, or the tests fail, the error text is matched against
//!   hindsight notes and the best match's id and title are offered on a line
//!   under the result.
//! - Notes whose provenance files or symbols are gone from the session copy
//!   are flagged stale wherever they are shown.
//!
//! Every note shown or read is recorded in the trajectory, so the session's
//! distillation job can credit the notes it read by outcome.

use std::collections::{BTreeSet, HashMap};
use std::path::PathBuf;
use std::sync::{Arc, OnceLock};

use async_trait::async_trait;
use quire_config::{AgentConfig, render};
use quire_core::{Action, CoreError, Ctx, Extension, ToolOutput};
use quire_types::{Message, Redactor};

use crate::facts::{READ_NOTE, retrieval_event, via};
use crate::handle::{Notes, NotesPaths};
use crate::note::Note;
use crate::note_tools::{str_arg, text};
use crate::search::Hit;
use crate::stale::stale_reason;

const SEARCH_NOTES: &str = "search_notes";
/// The retrieval tools, for config checks.
pub const RETRIEVAL_TOOLS: &[&str] = &[SEARCH_NOTES, READ_NOTE];
/// Hits `search_notes` returns.
const SEARCH_LIMIT: usize = 8;
/// Hindsight candidates looked at per error (one is offered).
const ERROR_CANDIDATES: usize = 3;

/// How much retrieval may add to a session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RetrievalSettings {
    /// Notes listed at start at most.
    pub max_shown: usize,
    /// Characters the start list may take (titles, descriptions, ids).
    pub budget_chars: usize,
    /// Characters of the best fresh note's text shown in the list itself
    /// (0: titles only). Models rarely call read_note on a title alone.
    pub inline_chars: usize,
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
        }
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

    /// The start list: the best notes for the task that fit the budget,
    /// the first fresh one with its text inline. Returns the message, the
    /// ids listed and the id inlined.
    fn start_message(
        &self,
        ctx: &mut Ctx,
        notes: &Notes,
    ) -> Option<(String, Vec<String>, Option<String>)> {
        let hits = notes
            .index
            .search_for_session(
                &self.task,
                self.project.as_deref(),
                self.settings.max_shown,
                usize::MAX,
            )
            .map_err(|e| tracing::warn!(error = %e, "note retrieval failed"))
            .ok()?;
        let config = ctx.config.clone();
        let mut lines = Vec::new();
        let mut ids = Vec::new();
        let mut used = 0;
        let mut inlined = None;
        for hit in hits {
            let stale_reason = self.stale(ctx, notes, &hit.id);
            let stale = stale_reason
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
            if inlined.is_none()
                && stale_reason.is_none()
                && let Some(body) = self.inline_body(notes, &hit.id)
            {
                let more = if body.1 {
                    render(config.message("notes_inline_more"), &[("id", &hit.id)])
                } else {
                    String::new()
                };
                line.push('\n');
                line.push_str(&render(
                    config.message("notes_inline"),
                    &[("body", &body.0), ("more", &more)],
                ));
                inlined = Some(hit.id.clone());
            }
            lines.push(line);
            ids.push(hit.id);
        }
        if lines.is_empty() {
            return None;
        }
        let text = render(
            config.message("notes_retrieved"),
            &[("notes", &lines.join("\n"))],
        );
        Some((text.trim().to_string(), ids, inlined))
    }

    /// A note's text for the start list, cut at a line within
    /// `inline_chars`, and whether it was cut.
    fn inline_body(&self, notes: &Notes, id: &str) -> Option<(String, bool)> {
        let budget = self.settings.inline_chars;
        if budget == 0 {
            return None;
        }
        let note = notes.tree.get(id).ok()??;
        let body = note.body.trim();
        if body.is_empty() {
            return None;
        }
        if body.chars().count() <= budget {
            return Some((body.to_string(), false));
        }
        let mut kept = String::new();
        for line in body.lines() {
            if kept.chars().count() + line.chars().count() + 1 > budget {
                break;
            }
            kept.push_str(line);
            kept.push('\n');
        }
        let kept = kept.trim_end().to_string();
        (!kept.is_empty()).then_some((kept, true))
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
            && ctx
                .state
                .get::<quire_tools::WorkspaceState>()
                .and_then(|s| s.last_test.as_ref())
                .is_some_and(|t| t.exit_code != Some(0) || t.timed_out);
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
        let line = render(
            ctx.config.message("notes_error_hint"),
            &[("id", &hit.id), ("title", &hit.title)],
        );
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

/// Notes reached the session: kept in state and recorded as an event.
fn record(ctx: &mut Ctx, how: &str, ids: &[String]) {
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

    fn tools(&self) -> Vec<&'static str> {
        RETRIEVAL_TOOLS.to_vec()
    }

    /// Lists the task's notes once, right after the task. A resumed session
    /// already has the list in its conversation, so nothing is added.
    async fn on_start(&self, ctx: &mut Ctx) -> Result<(), CoreError> {
        let resumed = ctx
            .messages
            .iter()
            .any(|m| matches!(m, Message::Assistant { .. }));
        if resumed {
            return Ok(());
        }
        let Ok(notes) = self.notes() else {
            return Ok(());
        };
        if let Some((message, ids, inlined)) = self.start_message(ctx, &notes) {
            ctx.push_user("notes", message)?;
            record(ctx, via::START, &ids);
            // Shown in full: it counts as read when the session is credited.
            if let Some(id) = inlined {
                record(ctx, via::READ, &[id]);
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::{action, config, ctx};
    use crate::{Kind, NewNote, NoteTree, Provenance};
    use quire_tools::{TestSummary, WorkspaceState};

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
            },
        )
    }

    #[tokio::test]
    async fn the_best_fresh_note_is_shown_inline_and_counts_as_read() {
        let f = fixture();
        let mut ext = extension(&f, 2_000);
        ext.settings.inline_chars = 1_000;
        let mut ctx = ctx(config());
        ctx.messages.push(Message::user("the task"));
        ext.on_start(&mut ctx).await.unwrap();
        let list = ctx.messages[1].text().to_string();
        assert!(list.contains("Parse prices as Decimal."), "{list}");
        assert!(!list.contains("read_note {id}"), "{list}");
        let state = ctx.state.get_mut::<NotesState>();
        assert_eq!(state.read.iter().collect::<Vec<_>>(), vec![&f.hindsight]);

        // Cut at a line within the budget, with a pointer to the rest.
        ext.settings.inline_chars = 20;
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

        // Off: titles only, nothing counts as read.
        ext.settings.inline_chars = 0;
        let mut ctx = crate::testutil::ctx(config());
        ctx.messages.push(Message::user("the task"));
        ext.on_start(&mut ctx).await.unwrap();
        assert!(!ctx.messages[1].text().contains("Parse prices"));
        assert!(ctx.state.get_mut::<NotesState>().read.is_empty());
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
        assert!(list.contains(&f.stale), "{list}");
        assert!(!list.contains("other project"), "{list}");
        let stale_line = list.lines().find(|l| l.contains(&f.stale)).unwrap();
        assert!(
            stale_line.contains("src/money.py no longer exist"),
            "{stale_line}"
        );
        let fresh_line = list.lines().find(|l| l.contains(&f.hindsight)).unwrap();
        assert!(!fresh_line.contains("stale"), "{fresh_line}");
        assert_eq!(ctx.state.get_mut::<NotesState>().shown.len(), 3);

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
                quire_types::EventKind::NotesRetrieved { via, .. } => Some(via.clone()),
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
        fresh.state.get_mut::<WorkspaceState>().last_test = Some(TestSummary {
            exit_code: Some(1),
            ..TestSummary::default()
        });
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
}
