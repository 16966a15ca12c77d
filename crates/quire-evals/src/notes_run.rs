//! The notes side of an eval run, shared by `quire eval run` and the
//! meta-agent (which evaluates generations with learn runs): the run's own
//! notes tree, the session runner and config wired to it, the note-taker
//! as the run's [`Learner`], and what each distillation cost.

use std::path::Path;
use std::sync::Arc;

use async_trait::async_trait;
use quire_config::AgentConfig;
use quire_core::Interrupt;
use quire_distill::{Distiller, JobOutcome};
use quire_llm::ModelClient;
use quire_notes::{Notes, NotesPaths};
use quire_recall::RETRIEVAL_TOOLS;
use quire_session::{NotesWrites, Runner};
use quire_store::{DistillStatus, Store};
use quire_types::{Redactor, SessionId};

use crate::error::EvalError;
use crate::learning::{
    DistillCost, DistillState, LearnEnd, Learner, NotesPlan, copy_notes, run_notes_dirs,
};

/// Makes the run's own notes tree if it is not there yet (a copy of the
/// plan's source, or empty), so a run killed before or during the copy
/// gets it on resume. `None` for [`NotesPlan::Off`].
pub fn prepare_run_notes(
    run_dir: &Path,
    plan: &NotesPlan,
) -> Result<Option<NotesPaths>, EvalError> {
    let (root, index_dir) = run_notes_dirs(run_dir);
    let source = match plan {
        NotesPlan::Off => return Ok(None),
        NotesPlan::From { source } | NotesPlan::Learn { from: Some(source) } => Some(source),
        NotesPlan::Learn { from: None } => None,
    };
    if !root.is_dir() {
        match source {
            Some(source) => {
                let copied = copy_notes(Path::new(source), &root)?;
                tracing::info!(copied, source, "eval run starts from a copy of the notes");
            }
            None => std::fs::create_dir_all(&root).map_err(|e| EvalError::io(&root, e))?,
        }
    }
    Ok(Some(NotesPaths { root, index_dir }))
}

/// The session runner of a run under `plan`: notes off, the run's notes
/// read-only, or the run's notes with a job per session for the learner.
pub fn notes_runner(runner: Runner, paths: Option<NotesPaths>, plan: &NotesPlan) -> Runner {
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
pub fn notes_session_config(mut config: AgentConfig, plan: &NotesPlan) -> AgentConfig {
    if !plan.shows_notes() {
        config.notes.enabled = false;
    }
    config
}

/// Characters of the notes tools' texts and schemas in each request that
/// lists them (what [`crate::NotesUse::prompt_tokens`] charges for them).
pub fn notes_tool_chars(config: &AgentConfig) -> u64 {
    RETRIEVAL_TOOLS
        .iter()
        .filter_map(|name| config.tools.get(*name))
        .map(|t| (t.description.chars().count() + t.parameters.to_string().len()) as u64)
        .sum()
}

/// The config the note-taker runs with: the session's, with `notes.model`
/// as the model when one is set.
pub fn note_taker_config(config: &AgentConfig) -> AgentConfig {
    let mut config = config.clone();
    if !config.notes.model.trim().is_empty() {
        config.model.model = config.notes.model.trim().to_string();
    }
    config
}

/// The note-taker as a learn run's learner: distills one session at a time
/// into the run's own tree, synchronously.
pub struct NoteTaker {
    distiller: Distiller,
}

impl NoteTaker {
    /// `config` is the note-taker's (see [`note_taker_config`]), `client`
    /// its model; `store_path` the data home's database.
    pub fn new(
        store_path: &Path,
        config: AgentConfig,
        paths: &NotesPaths,
        client: Arc<dyn ModelClient>,
        redactor: Redactor,
    ) -> Result<NoteTaker, EvalError> {
        let (notes, _) = Notes::open(paths, redactor.clone()).map_err(|e| EvalError::Notes {
            path: paths.root.clone(),
            message: e.to_string(),
        })?;
        let distiller = Distiller::new(store_path, notes, Arc::new(config), client, redactor)
            .map_err(|e| EvalError::Notes {
                path: paths.root.clone(),
                message: e.to_string(),
            })?;
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

impl DistillCost {
    /// What distilling `session` cost, from its job (`state` is
    /// [`DistillState::None`] when it had none).
    pub fn of_session(store: &Store, session: &SessionId) -> Result<DistillCost, EvalError> {
        let Some(job) = store.distill_job(session)? else {
            return Ok(DistillCost {
                state: DistillState::None,
                prompt_tokens: 0,
                completion_tokens: 0,
                cached_tokens: 0,
                calls: 0,
                notes_written: 0,
            });
        };
        let state = match job.status {
            DistillStatus::Done => DistillState::Done,
            DistillStatus::Failed => DistillState::Failed,
            _ => DistillState::Pending,
        };
        Ok(DistillCost {
            state,
            prompt_tokens: job.usage.prompt_tokens,
            completion_tokens: job.usage.completion_tokens,
            cached_tokens: job.usage.cached_tokens,
            calls: job.calls,
            notes_written: job.notes_written.as_array().map_or(0, |a| a.len() as u32),
        })
    }

    /// Prompt and completion tokens together: what learning added to a run.
    pub fn tokens(&self) -> u64 {
        self.prompt_tokens + self.completion_tokens
    }
}

impl crate::ArmRun {
    /// A stored run with its results and what distilling each of its
    /// sessions cost, as a learning curve's arm reads it.
    pub fn load(store: &Store, run: quire_store::EvalRunRow) -> Result<crate::ArmRun, EvalError> {
        let results = store.eval_results(&run.id)?;
        let mut distill = std::collections::HashMap::new();
        for r in &results {
            if let Some(id) = &r.outcome.session_id {
                distill.insert(id.as_str().to_string(), DistillCost::of_session(store, id)?);
            }
        }
        Ok(crate::ArmRun {
            run,
            results,
            distill,
        })
    }
}
