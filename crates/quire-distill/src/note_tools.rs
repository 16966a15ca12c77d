//! The note-taker's tools, as an extension of its own agent loop:
//! `note_search`, `note_read`, `note_create`, `note_update` (a small edit
//! in place), `note_supersede` and `note_done`.
//!
//! Every write goes through the tree (redacted, atomic) and is indexed
//! right after, so a later tool call — or a session starting meanwhile —
//! finds it. If indexing fails the file still stands: the next sync picks
//! it up.

use std::sync::Arc;

use async_trait::async_trait;
use quire_config::{AgentConfig, ToolTexts, render};
use quire_core::{Action, Control, Ctx, Extension, ToolOutput};
use serde::{Deserialize, Serialize};

use quire_notes::{
    Error, Hit, Kind, NewNote, Note, NoteIndex, NoteTree, Provenance, Scope, SearchQuery, slugify,
};

const SEARCH: &str = "note_search";
const READ: &str = "note_read";
const CREATE: &str = "note_create";
const UPDATE: &str = "note_update";
const SUPERSEDE: &str = "note_supersede";
const DONE: &str = "note_done";

/// The note-taker's tools, for config checks.
pub const NOTE_TAKER_TOOLS: &[&str] = &[SEARCH, READ, CREATE, UPDATE, SUPERSEDE, DONE];

/// The `[errors]` keys each note-taker tool's code renders: a config is
/// checked against them when notes are on (`cut` is the marker of any
/// note-taker output cut to the limit, kept with `note_read`).
pub const NOTE_TAKER_TEXTS: &[ToolTexts] = &[
    ToolTexts {
        tool: SEARCH,
        errors: &["header", "hit", "none", "empty_query"],
    },
    ToolTexts {
        tool: READ,
        errors: &["not_found", "cut"],
    },
    ToolTexts {
        tool: CREATE,
        errors: &[
            "created",
            "bad_value",
            "needs_signature",
            "duplicate",
            "no_project",
            "invalid",
        ],
    },
    ToolTexts {
        tool: UPDATE,
        errors: &[
            "updated",
            "not_found",
            "bad_field",
            "old_missing",
            "old_ambiguous",
            "entry_missing",
            "too_large",
            "no_change",
            "invalid",
        ],
    },
    ToolTexts {
        tool: SUPERSEDE,
        errors: &["superseded", "not_found", "invalid"],
    },
    ToolTexts {
        tool: DONE,
        errors: &["done"],
    },
];

/// Hits `note_search` returns.
const SEARCH_LIMIT: usize = 8;
/// "A small edit": the most characters `note_update` writes at once.
pub const MAX_EDIT_CHARS: usize = 1_500;

/// What the note-taker did to a note.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NoteAction {
    Created,
    Updated,
    Superseded,
}

/// One note the note-taker wrote, as recorded on the job.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WrittenNote {
    pub id: String,
    pub action: NoteAction,
    pub title: String,
    /// Relative to the notes root.
    pub path: String,
}

/// The note-taker's record of its run, kept in `ctx.state`.
#[derive(Debug, Clone, Default)]
pub struct NoteTakerState {
    pub written: Vec<WrittenNote>,
    /// What `note_done` said.
    pub summary: Option<String>,
}

/// Called with everything written so far after each write, so a job can
/// persist its progress before the next step (a crash then loses nothing).
pub type Progress = Arc<dyn Fn(&[WrittenNote]) + Send + Sync>;

/// The note tools for one distillation job.
pub struct NoteTools {
    tree: NoteTree,
    index: Arc<NoteIndex>,
    /// Slug of the session's project; `None` allows shared notes only.
    project: Option<String>,
    session_id: String,
    progress: Option<Progress>,
}

impl NoteTools {
    /// The extension name (the note-taker's agent is assembled in code).
    pub const NAME: &'static str = "note_tools";

    pub fn new(
        tree: NoteTree,
        index: Arc<NoteIndex>,
        project: &str,
        session_id: impl Into<String>,
    ) -> NoteTools {
        let project = slugify(project);
        NoteTools {
            tree,
            index,
            project: (!project.is_empty()).then_some(project),
            session_id: session_id.into(),
            progress: None,
        }
    }

    /// Reports every write to `progress`.
    pub fn with_progress(mut self, progress: Progress) -> NoteTools {
        self.progress = Some(progress);
        self
    }

    fn wrote(&self, ctx: &mut Ctx, note: &Note, action: NoteAction) {
        let state = ctx.state.get_mut::<NoteTakerState>();
        state.written.push(WrittenNote {
            id: note.meta.id.clone(),
            action,
            title: note.meta.title.clone(),
            path: note.path_str(),
        });
        if let Some(progress) = &self.progress {
            progress(&state.written);
        }
    }

    /// Indexes a written note; a failure is logged, as the file is the truth.
    fn index(&self, note: &Note) {
        if let Err(err) = self.index.upsert(note) {
            tracing::warn!(%err, id = note.id(), "note written but not indexed; the next sync will index it");
        }
    }

    fn search(&self, config: &AgentConfig, query: &str) -> ToolOutput {
        if query.trim().is_empty() {
            return ToolOutput::error(text(config, SEARCH, "empty_query", &[]));
        }
        let hits = match self.index.search_for_session(
            query,
            self.project.as_deref(),
            SEARCH_LIMIT,
            usize::MAX,
        ) {
            Ok(hits) => hits,
            Err(err) => return ToolOutput::error(err.to_string()),
        };
        if hits.is_empty() {
            let t = text(config, SEARCH, "none", &[("query", query)]);
            return ToolOutput::ok(t.clone(), t);
        }
        let mut out = text(config, SEARCH, "header", &[("query", query)]);
        for hit in &hits {
            out.push('\n');
            out.push_str(&render(
                config.tool_error(SEARCH, "hit"),
                &[
                    ("id", &hit.id),
                    ("kind", hit.kind.as_str()),
                    ("place", &place(hit)),
                    ("title", &hit.title),
                    ("description", &hit.description),
                    ("snippet", &hit.snippet),
                ],
            ));
        }
        ToolOutput::ok(out.clone(), out)
    }

    fn read(&self, config: &AgentConfig, id: &str) -> ToolOutput {
        match self.tree.get(id.trim()) {
            Ok(Some(note)) => {
                let t = note.render();
                ToolOutput::ok(t.clone(), t)
            }
            Ok(None) => ToolOutput::error(text(config, READ, "not_found", &[("id", id)])),
            Err(err) => ToolOutput::error(err.to_string()),
        }
    }

    fn create(&self, ctx: &mut Ctx, action: &Action) -> ToolOutput {
        let config = ctx.config.clone();
        let bad = |argument: &str, error: &str| {
            ToolOutput::error(text(
                &config,
                CREATE,
                "bad_value",
                &[("argument", argument), ("error", error)],
            ))
        };
        let kind: Kind = match str_arg(action, "kind").parse() {
            Ok(k) => k,
            Err(e) => return bad("kind", &e.to_string()),
        };
        let scope: Scope = match str_arg(action, "scope").parse() {
            Ok(s) => s,
            Err(e) => return bad("scope", &e.to_string()),
        };
        let title = str_arg(action, "title").trim();
        let topic = str_arg(action, "topic");
        let signatures = list_arg(action, "error_signatures");
        if kind == Kind::Hindsight && signatures.is_empty() {
            return ToolOutput::error(text(&config, CREATE, "needs_signature", &[]));
        }
        let new = match (scope, &self.project) {
            (Scope::Project, None) => {
                return ToolOutput::error(text(&config, CREATE, "no_project", &[]));
            }
            (Scope::Project, Some(p)) => NewNote::project(p.as_str(), topic, kind, title),
            (Scope::Shared, _) => NewNote::shared(topic, kind, title),
        };
        if let Some(existing) = self.duplicate_of(&new) {
            return ToolOutput::error(text(
                &config,
                CREATE,
                "duplicate",
                &[("id", &existing.id), ("path", &existing.path)],
            ));
        }
        let body = str_arg(action, "body");
        let mut new = new
            .description(str_arg(action, "description"))
            .keywords(list_arg(action, "keywords"))
            .error_signatures(signatures)
            .provenance(Provenance {
                sessions: vec![self.session_id.clone()],
                commit: None,
                files: list_arg(action, "files"),
                symbols: list_arg(action, "symbols"),
            });
        if !body.trim().is_empty() {
            new = new.body(body);
        }
        match self.tree.create(new) {
            Ok(note) => {
                self.index(&note);
                self.wrote(ctx, &note, NoteAction::Created);
                let t = text(
                    &config,
                    CREATE,
                    "created",
                    &[
                        ("id", note.id()),
                        ("path", &note.path_str()),
                        ("chars", &note.body.trim().chars().count().to_string()),
                    ],
                );
                ToolOutput::ok(t.clone(), format!("{t}\n{}", note.render()))
            }
            Err(err) => ToolOutput::error(text(
                &config,
                CREATE,
                "invalid",
                &[("error", &err.to_string())],
            )),
        }
    }

    /// An active note with the same title slug in the same place.
    fn duplicate_of(&self, new: &NewNote) -> Option<Hit> {
        let slug = slugify(&new.title);
        let query = SearchQuery {
            text: new.title.clone(),
            project: new.project.clone(),
            scope: Some(new.scope),
            kind: None,
            status_active_only: true,
            limit: 10,
        };
        self.index
            .search(&query)
            .ok()?
            .into_iter()
            .find(|h| slugify(&h.title) == slug)
    }

    fn update(&self, ctx: &mut Ctx, action: &Action) -> ToolOutput {
        let config = ctx.config.clone();
        let id = str_arg(action, "id").trim();
        let field = match str_arg(action, "field").trim() {
            "" => "body",
            f => f,
        };
        let (old, new) = (str_arg(action, "old"), str_arg(action, "new"));
        let msg = |key: &str, vars: &[(&str, &str)]| {
            let mut all = vec![("id", id), ("field", field)];
            all.extend_from_slice(vars);
            ToolOutput::error(text(&config, UPDATE, key, &all))
        };
        if !matches!(
            field,
            "body" | "description" | "keywords" | "error_signatures" | "files" | "symbols"
        ) {
            return msg("bad_field", &[]);
        }
        let size = new.chars().count();
        if size > MAX_EDIT_CHARS {
            return msg(
                "too_large",
                &[
                    ("chars", &size.to_string()),
                    ("max", &MAX_EDIT_CHARS.to_string()),
                ],
            );
        }
        if old == new {
            return msg("no_change", &[]);
        }
        let note = match self.tree.get(id) {
            Ok(Some(note)) => note,
            Ok(None) => return msg("not_found", &[]),
            Err(err) => return ToolOutput::error(err.to_string()),
        };
        let mut changed = note.clone();
        let edited = match field {
            "body" => replace_once(&note.body, old, new, true).map(|b| changed.body = b),
            "description" => replace_once(&note.meta.description, old, new, false)
                .map(|d| changed.meta.description = d),
            "keywords" => {
                edit_entries(&mut changed.meta.keywords, old, new).map_err(|_| Edit::EntryMissing)
            }
            // A note whose files or symbols moved is corrected, not left stale.
            "files" => edit_entries(&mut changed.meta.provenance.files, old, new)
                .map_err(|_| Edit::EntryMissing),
            "symbols" => edit_entries(&mut changed.meta.provenance.symbols, old, new)
                .map_err(|_| Edit::EntryMissing),
            _ => edit_entries(&mut changed.meta.error_signatures, old, new)
                .map_err(|_| Edit::EntryMissing),
        };
        match edited {
            Ok(()) => {}
            Err(Edit::Missing) => return msg("old_missing", &[]),
            Err(Edit::Ambiguous(n)) => return msg("old_ambiguous", &[("count", &n.to_string())]),
            Err(Edit::EntryMissing) => {
                let entries = match field {
                    "keywords" => &note.meta.keywords,
                    "files" => &note.meta.provenance.files,
                    "symbols" => &note.meta.provenance.symbols,
                    _ => &note.meta.error_signatures,
                };
                let listed = if entries.is_empty() {
                    "none".to_string()
                } else {
                    entries.join("; ")
                };
                return msg("entry_missing", &[("old", old), ("entries", &listed)]);
            }
        }
        let session = self.session_id.clone();
        let result = self.tree.update(id, move |n| {
            n.body = changed.body;
            n.meta.description = changed.meta.description;
            n.meta.keywords = changed.meta.keywords;
            n.meta.error_signatures = changed.meta.error_signatures;
            n.meta.provenance.files = changed.meta.provenance.files;
            n.meta.provenance.symbols = changed.meta.provenance.symbols;
            if !n.meta.provenance.sessions.contains(&session) {
                n.meta.provenance.sessions.push(session);
            }
        });
        match result {
            Ok(note) => {
                self.index(&note);
                self.wrote(ctx, &note, NoteAction::Updated);
                // The body's size, so a map can be kept within its limit
                // without counting by hand (note-takers did, in a shell).
                let chars = note.body.trim().chars().count().to_string();
                let t = text(
                    &config,
                    UPDATE,
                    "updated",
                    &[("id", id), ("field", field), ("chars", &chars)],
                );
                ToolOutput::ok(t.clone(), format!("{t}\n{}", note.render()))
            }
            Err(Error::NotFound(_)) => msg("not_found", &[]),
            Err(err) => msg("invalid", &[("error", &err.to_string())]),
        }
    }

    fn supersede(&self, ctx: &mut Ctx, action: &Action) -> ToolOutput {
        let config = ctx.config.clone();
        let old_id = str_arg(action, "old_id").trim();
        let new_id = str_arg(action, "new_id").trim();
        match self.tree.supersede(old_id, new_id) {
            Ok(note) => {
                self.index(&note);
                self.wrote(ctx, &note, NoteAction::Superseded);
                let t = text(
                    &config,
                    SUPERSEDE,
                    "superseded",
                    &[("old_id", old_id), ("new_id", new_id)],
                );
                ToolOutput::ok(t.clone(), t)
            }
            Err(Error::NotFound(id)) => {
                ToolOutput::error(text(&config, SUPERSEDE, "not_found", &[("id", &id)]))
            }
            Err(err) => ToolOutput::error(text(
                &config,
                SUPERSEDE,
                "invalid",
                &[("error", &err.to_string())],
            )),
        }
    }
}

#[async_trait]
impl Extension for NoteTools {
    fn name(&self) -> &str {
        Self::NAME
    }

    fn tools(&self) -> Vec<&'static str> {
        NOTE_TAKER_TOOLS.to_vec()
    }

    async fn execute(&self, ctx: &mut Ctx, action: &Action) -> ToolOutput {
        let config = ctx.config.clone();
        let out = match action.call.name.as_str() {
            SEARCH => self.search(&config, str_arg(action, "query")),
            READ => self.read(&config, str_arg(action, "id")),
            CREATE => self.create(ctx, action),
            UPDATE => self.update(ctx, action),
            SUPERSEDE => self.supersede(ctx, action),
            DONE => {
                let summary = str_arg(action, "summary").trim().to_string();
                ctx.state.get_mut::<NoteTakerState>().summary = Some(summary.clone());
                let t = text(&config, DONE, "done", &[]);
                ToolOutput::ok(t.clone(), t).with_control(Control::Finish { summary })
            }
            other => ToolOutput::error(render(
                config.message("unknown_tool"),
                &[("name", other), ("tools", &NOTE_TAKER_TOOLS.join(", "))],
            )),
        };
        let max = config.limits.tool_output_max_chars as usize;
        let marker = config.tool_error(READ, "cut");
        ToolOutput {
            agent_view: quire_tools::cap_output(&out.agent_view, max, marker),
            ..out
        }
    }
}

enum Edit {
    Missing,
    Ambiguous(usize),
    EntryMissing,
}

/// `text` with the one occurrence of `old` replaced by `new`. An empty
/// `old` appends (`append`: as a new paragraph) or replaces everything.
fn replace_once(text: &str, old: &str, new: &str, append: bool) -> Result<String, Edit> {
    if old.is_empty() {
        return Ok(if append && !text.trim().is_empty() {
            format!("{}\n\n{}", text.trim_end(), new.trim())
        } else {
            new.to_string()
        });
    }
    match text.matches(old).count() {
        // A copied `old` often ends with a line break the stored text does
        // not (a body's last line): one note-taker spent two calls on it.
        0 if old.trim_end() != old && !old.trim().is_empty() => {
            match text.matches(old.trim_end()).count() {
                0 => Err(Edit::Missing),
                1 => Ok(text.replacen(old.trim_end(), new.trim_end(), 1)),
                n => Err(Edit::Ambiguous(n)),
            }
        }
        0 => Err(Edit::Missing),
        1 => Ok(text.replacen(old, new, 1)),
        n => Err(Edit::Ambiguous(n)),
    }
}

/// Adds (`old` empty), removes (`new` empty) or replaces one entry.
fn edit_entries(entries: &mut Vec<String>, old: &str, new: &str) -> Result<(), ()> {
    let (old, new) = (old.trim(), new.trim());
    if old.is_empty() {
        if !new.is_empty() && !entries.iter().any(|e| e == new) {
            entries.push(new.to_string());
        }
        return Ok(());
    }
    let at = entries.iter().position(|e| e.trim() == old).ok_or(())?;
    if new.is_empty() {
        entries.remove(at);
    } else {
        entries[at] = new.to_string();
    }
    Ok(())
}

fn place(hit: &Hit) -> String {
    match &hit.project {
        Some(p) if hit.scope == Scope::Project => format!("project {p}"),
        _ => hit.scope.as_str().to_string(),
    }
}

fn text(config: &AgentConfig, tool: &str, key: &str, vars: &[(&str, &str)]) -> String {
    render(config.tool_error(tool, key), vars)
}

fn str_arg<'a>(action: &'a Action, key: &str) -> &'a str {
    action.args.get(key).and_then(|v| v.as_str()).unwrap_or("")
}

/// A list of strings; a single string counts as a list of one.
fn list_arg(action: &Action, key: &str) -> Vec<String> {
    match action.args.get(key) {
        Some(serde_json::Value::Array(items)) => items
            .iter()
            .filter_map(|v| v.as_str())
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_string)
            .collect(),
        Some(serde_json::Value::String(s)) if !s.trim().is_empty() => vec![s.trim().to_string()],
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests;
