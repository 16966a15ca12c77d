//! What notes did in an eval attempt, and what learning from it cost.
//!
//! An attempt's result keeps [`NotesUse`] under `details.notes` (from its
//! session's events). A learn run distills each attempt's session before
//! the next task starts; what the note-taker spent is kept on the session's
//! distillation job and read back as [`DistillCost`].

use std::path::{Path, PathBuf};

use async_trait::async_trait;
use quire_core::Interrupt;
use quire_recall::{CodeShown, RETRIEVAL_TOOLS, START_LIST_SOURCE, via};
use quire_types::{Event, EventKind, SessionId};
use serde::{Deserialize, Serialize};

use crate::error::EvalError;

/// Notes that reached one session and what they weighed in its prompts.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct NotesUse {
    /// Notes listed after the task, searched or offered next to an error.
    pub shown: Vec<String>,
    /// Notes whose text was inlined in the start list.
    pub inlined: Vec<String>,
    /// Notes read with `read_note` (the inlined one included).
    pub read: Vec<String>,
    /// Prompt tokens the notes took over the session: the start list, the
    /// notes tools' results and (when listed) their schemas, counted once
    /// per request that carried them (chars / 4).
    pub prompt_tokens: u64,
    /// The code shown with the notes (`path` or `path::symbol`), and its
    /// characters: part of the start list, so of `prompt_tokens` too.
    #[serde(default)]
    pub code: Vec<String>,
    #[serde(default)]
    pub code_chars: u64,
}

impl NotesUse {
    /// `details.notes` of a stored result, if it has one.
    pub fn from_details(details: &serde_json::Value) -> Option<NotesUse> {
        details
            .get("notes")
            .and_then(|v| serde_json::from_value(v.clone()).ok())
    }
}

/// Where a session's distillation stands in a learn run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DistillState {
    /// Not distilled yet (a killed run resumes here).
    Pending,
    Done,
    /// The note-taker gave up (its error is on the job).
    Failed,
    /// The session had no distillation job (notes off, or it did not end).
    None,
}

/// What distilling one session cost: the note-taker's tokens and calls.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DistillCost {
    pub state: DistillState,
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    pub cached_tokens: u64,
    /// The note-taker's model calls.
    pub calls: u32,
    /// Notes written, updated or superseded.
    pub notes_written: u32,
}

/// Where a run's sessions get their notes and whether they learn.
/// Stored in the run's `args.notes`, so `resume` runs it the same way.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "mode", rename_all = "snake_case")]
pub enum NotesPlan {
    /// No notes shown, none written: an eval's figures do not depend on
    /// whatever a data home has learnt.
    Off,
    /// A copy of the notes `source` held when the run was created, shown
    /// read-only (no distillation).
    From { source: String },
    /// The learning protocol: tasks one after another in the suite's
    /// order; each session is distilled into the run's own notes before
    /// the next task starts. Starts empty, or from a copy of `from`.
    Learn { from: Option<String> },
}

impl NotesPlan {
    /// The plan a stored run was created with (`Off` for runs made before
    /// plans existed, which is what their sessions amounted to for learning).
    pub fn of_run(args: &serde_json::Value) -> NotesPlan {
        args.get("notes")
            .and_then(|v| serde_json::from_value(v.clone()).ok())
            .unwrap_or(NotesPlan::Off)
    }

    pub fn learns(&self) -> bool {
        matches!(self, NotesPlan::Learn { .. })
    }

    /// Whether sessions see notes at all.
    pub fn shows_notes(&self) -> bool {
        !matches!(self, NotesPlan::Off)
    }

    /// One line for run headers and reports.
    pub fn describe(&self) -> String {
        match self {
            NotesPlan::Off => "notes off".into(),
            NotesPlan::From { source } => format!("notes from {source} (read-only)"),
            NotesPlan::Learn { from: None } => "learning (notes start empty)".into(),
            NotesPlan::Learn { from: Some(source) } => {
                format!("learning (notes start from {source})")
            }
        }
    }
}

/// The notes tree and index of an eval run: `<run dir>/notes` and
/// `<run dir>/notes-index`.
pub fn run_notes_dirs(run_dir: &Path) -> (PathBuf, PathBuf) {
    (run_dir.join("notes"), run_dir.join("notes-index"))
}

/// Copies the Markdown notes of `source` (a notes tree) into `dest`, which
/// must not exist yet: a run starts from what the source held at that
/// moment, and never writes to it. Generated folder READMEs and anything
/// that is not a `.md` note are left out (the index is rebuilt from the
/// files). Copied into a temporary folder and renamed, so a killed copy
/// leaves nothing half-made behind.
pub fn copy_notes(source: &Path, dest: &Path) -> Result<usize, EvalError> {
    if !source.is_dir() {
        return Err(EvalError::Selection(format!(
            "no notes folder at {}",
            source.display()
        )));
    }
    let parent = dest.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(parent).map_err(|e| EvalError::io(parent, e))?;
    let staging = tempfile::Builder::new()
        .prefix(".notes-copy-")
        .tempdir_in(parent)
        .map_err(|e| EvalError::io(parent, e))?;
    let mut copied = 0;
    let mut stack = vec![source.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let entries = std::fs::read_dir(&dir).map_err(|e| EvalError::io(&dir, e))?;
        for entry in entries {
            let entry = entry.map_err(|e| EvalError::io(&dir, e))?;
            let path = entry.path();
            let kind = entry.file_type().map_err(|e| EvalError::io(&path, e))?;
            if kind.is_dir() {
                stack.push(path);
                continue;
            }
            let is_note = kind.is_file()
                && path.extension().is_some_and(|e| e == "md")
                && path.file_name().is_some_and(|n| n != "README.md");
            if !is_note {
                continue;
            }
            let Ok(relative) = path.strip_prefix(source) else {
                continue;
            };
            let target = staging.path().join(relative);
            if let Some(folder) = target.parent() {
                std::fs::create_dir_all(folder).map_err(|e| EvalError::io(folder, e))?;
            }
            std::fs::copy(&path, &target).map_err(|e| EvalError::io(&path, e))?;
            copied += 1;
        }
    }
    let staged = staging.keep();
    std::fs::rename(&staged, dest).map_err(|e| EvalError::io(dest, e))?;
    Ok(copied)
}

impl NotesUse {
    /// What notes did in a session, from its events. `tool_schema_chars`
    /// is the size of the notes tools' descriptions and schemas, which ride
    /// along in every request once the tools are listed.
    pub fn from_events(events: &[Event], tool_schema_chars: u64) -> NotesUse {
        let mut out = NotesUse::default();
        let mut block_chars = 0u64;
        let mut result_chars = 0u64;
        let mut tools_used = false;
        let mut requests = 0u32;
        let mut total_chars = 0u64;
        for event in events {
            match &event.kind {
                EventKind::UserMessage { source, content } if *source == START_LIST_SOURCE => {
                    block_chars += content.chars().count() as u64;
                }
                EventKind::ToolCallStarted { name, .. }
                    if RETRIEVAL_TOOLS.contains(&name.as_str()) =>
                {
                    tools_used = true;
                }
                EventKind::ToolResult { name, views, .. }
                    if RETRIEVAL_TOOLS.contains(&name.as_str()) =>
                {
                    result_chars += views.agent_view.chars().count() as u64;
                }
                EventKind::NotesRetrieved { via: how, ids } => {
                    for id in ids {
                        push_unique(&mut out.shown, id);
                        if *how == via::READ {
                            push_unique(&mut out.read, id);
                            // Read before the first request: inlined in the start list.
                            if requests == 0 {
                                push_unique(&mut out.inlined, id);
                            }
                        }
                    }
                }
                EventKind::Extension(payload) => {
                    if let Some(Ok(shown)) = payload.decode::<CodeShown>() {
                        out.code_chars += shown.chars as u64;
                        out.code
                            .extend(shown.excerpts.iter().map(|e| match &e.symbol {
                                Some(symbol) => format!("{}::{symbol}", e.path),
                                None => e.path.clone(),
                            }));
                    }
                }
                EventKind::ModelRequest { .. } => {
                    requests += 1;
                    let listed = block_chars > 0 || tools_used;
                    total_chars +=
                        block_chars + result_chars + if listed { tool_schema_chars } else { 0 };
                }
                _ => {}
            }
        }
        out.prompt_tokens = total_chars.div_ceil(4);
        out
    }
}

fn push_unique(list: &mut Vec<String>, id: &str) {
    if !list.iter().any(|x| x == id) {
        list.push(id.to_string());
    }
}

/// Where a learn run's distillation of one session ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LearnEnd {
    /// The job was processed (done, skipped, or failed this attempt).
    Processed,
    /// Not claimable: done, failed for good, or not queued.
    NothingToDo,
    /// The user stopped it; the job went back to the queue.
    Interrupted,
}

/// Distills a learn run's sessions into the run's notes, synchronously.
/// The CLI implements it with the note-taker; tests with anything.
#[async_trait]
pub trait Learner: Send + Sync + 'static {
    async fn distill(&self, session: &SessionId, stop: &Interrupt) -> Result<LearnEnd, String>;
}
