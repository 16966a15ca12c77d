//! Notes in eval runs: `--notes off|from=<run|home>` and `--learn`. Turns
//! the flags into a [`NotesPlan`], gives each run its own notes tree, and
//! wires the note-taker in as the learn run's [`Learner`].

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{Context, Result, anyhow, bail};
use async_trait::async_trait;
use quire_config::AgentConfig;
use quire_core::Interrupt;
use quire_distill::{Distiller, JobOutcome};
use quire_evals::{LearnEnd, Learner, NotesPlan, copy_notes, run_notes_dirs};
use quire_notes::{Notes, NotesPaths};
use quire_session::{DataHome, NotesWrites, Runner};
use quire_store::{EvalRunRow, Store};
use quire_types::SessionId;

use crate::client::{live_client, redactor};

/// The plan the flags ask for. `notes` is `off`, `from=<run|home|path>`,
/// or absent.
pub fn plan(
    home: &DataHome,
    config: &AgentConfig,
    learn: bool,
    notes: Option<&str>,
) -> Result<NotesPlan> {
    let source = match notes.map(str::trim) {
        None => None,
        Some("off") if learn => {
            bail!("--learn writes notes, so it cannot run with --notes off")
        }
        Some("off") => return Ok(NotesPlan::Off),
        Some(spec) => match spec.strip_prefix("from=") {
            Some(source) => Some(resolve_source(home, config, source.trim())?),
            None => bail!("--notes takes `off` or `from=<run|home|path>`, not `{spec}`"),
        },
    };
    let source = source.map(|p| p.display().to_string());
    Ok(match (learn, source) {
        (true, from) => NotesPlan::Learn { from },
        (false, Some(source)) => NotesPlan::From { source },
        (false, None) => NotesPlan::Off,
    })
}

/// A notes tree from `home` (this data home's notes), an eval run id or
/// unique prefix (the notes that run learnt), or a path (a data home, or a
/// notes folder).
fn resolve_source(home: &DataHome, config: &AgentConfig, spec: &str) -> Result<PathBuf> {
    if spec.is_empty() {
        bail!("--notes from= needs a run id, `home` or a path");
    }
    if spec == "home" {
        return Ok(home.notes_paths(config).root);
    }
    let path = Path::new(spec);
    if path.is_dir() {
        let inner = path.join("notes");
        let source = if path.join("quire.db").is_file() && inner.is_dir() {
            inner
        } else {
            path.to_path_buf()
        };
        return source
            .canonicalize()
            .with_context(|| format!("cannot resolve {}", source.display()));
    }
    let store = Store::open(&home.db_path())?;
    let run = store.find_eval_run(spec)?.with_context(|| {
        format!("--notes from={spec}: no eval run, data home or notes folder by that name")
    })?;
    Ok(run_notes(home, &run)?.root)
}

/// A run by id, unique prefix, or `last`.
pub fn find_run(store: &Store, spec: &str) -> Result<EvalRunRow> {
    if spec == "last" || spec == "latest" {
        return store
            .list_eval_runs(None, Some(1))?
            .into_iter()
            .next()
            .map(|s| s.run)
            .ok_or_else(|| anyhow!("no eval runs yet"));
    }
    store
        .find_eval_run(spec)?
        .ok_or_else(|| anyhow!("no eval run matches `{spec}` (see `quire eval list`)"))
}

/// The notes tree an eval run learnt or started from: refused for runs
/// that have none (`--notes off`).
pub fn run_notes(home: &DataHome, run: &EvalRunRow) -> Result<NotesPaths> {
    let (root, index_dir) = run_notes_dirs(&home.root().join("evals").join(&run.id));
    if !root.is_dir() {
        bail!(
            "eval run {} has no notes of its own (only runs with --learn or --notes from= do)",
            run.id
        );
    }
    Ok(NotesPaths { root, index_dir })
}

/// Makes the run's own notes tree if it is not there yet (a copy of the
/// plan's source, or empty), so a run killed before or during the copy
/// gets it on resume. Nothing to do for `Off`.
pub fn prepare(run_dir: &Path, plan: &NotesPlan) -> Result<Option<NotesPaths>> {
    let (root, index_dir) = run_notes_dirs(run_dir);
    let source = match plan {
        NotesPlan::Off => return Ok(None),
        NotesPlan::From { source } | NotesPlan::Learn { from: Some(source) } => Some(source),
        NotesPlan::Learn { from: None } => None,
    };
    if !root.is_dir() {
        match source {
            Some(source) => {
                let copied = copy_notes(Path::new(source), &root)
                    .with_context(|| format!("copying the notes of {source}"))?;
                tracing::info!(copied, source, "eval run starts from a copy of the notes");
            }
            None => std::fs::create_dir_all(&root)
                .with_context(|| format!("creating {}", root.display()))?,
        }
    }
    Ok(Some(NotesPaths { root, index_dir }))
}

/// The session runner of a run under `plan`: notes off, the run's notes
/// read-only, or the run's notes with a job per session for the learner.
pub fn runner(runner: Runner, paths: Option<NotesPaths>, plan: &NotesPlan) -> Runner {
    match (paths, plan) {
        (Some(paths), NotesPlan::Learn { .. }) => {
            runner.with_notes(paths, NotesWrites::QueueForTree)
        }
        (Some(paths), _) => runner.with_notes(paths, NotesWrites::ReadOnly),
        (None, _) => runner,
    }
}

/// The config a run's sessions use: notes turned off for `Off` (the
/// config hash stays the agent's; the plan is recorded with the run).
pub fn session_config(mut config: AgentConfig, plan: &NotesPlan) -> AgentConfig {
    if !plan.shows_notes() {
        config.notes.enabled = false;
    }
    config
}

/// Characters of the notes tools' texts and schemas in each request.
pub fn tool_chars(config: &AgentConfig) -> u64 {
    quire_recall::RETRIEVAL_TOOLS
        .iter()
        .filter_map(|name| config.tools.get(*name))
        .map(|t| (t.description.chars().count() + t.parameters.to_string().len()) as u64)
        .sum()
}

/// The note-taker as a learn run's learner.
pub struct NoteTaker {
    distiller: Distiller,
}

impl NoteTaker {
    /// The note-taker for the run's tree, with `notes.model` if set.
    pub fn new(home: &DataHome, config: &AgentConfig, paths: &NotesPaths) -> Result<NoteTaker> {
        let mut config = config.clone();
        if !config.notes.model.trim().is_empty() {
            config.model.model = config.notes.model.trim().to_string();
        }
        let redactor = redactor(&config);
        let (notes, _) = Notes::open(paths, redactor.clone())
            .with_context(|| format!("cannot open the run's notes at {}", paths.root.display()))?;
        let client = live_client(&config)?;
        let distiller = Distiller::new(home.db_path(), notes, Arc::new(config), client, redactor)?;
        Ok(NoteTaker { distiller })
    }
}

#[async_trait]
impl Learner for NoteTaker {
    async fn distill(&self, session: &SessionId, stop: &Interrupt) -> Result<LearnEnd, String> {
        match self.distiller.take_over_session(session, stop).await {
            Ok(None) => Ok(LearnEnd::NothingToDo),
            Ok(Some(report)) => match report.outcome {
                JobOutcome::Released => Ok(LearnEnd::Interrupted),
                JobOutcome::Failed { error } => Err(error),
                _ => Ok(LearnEnd::Processed),
            },
            Err(err) => Err(err.to_string()),
        }
    }
}
