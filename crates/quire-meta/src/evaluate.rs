//! How a generation is measured: [`Evaluate`] runs a generation folder
//! over tasks of a suite and returns the run's record; [`SuiteEvaluator`]
//! does it with the real session and eval runners, as a plain run or a
//! learn run (the run's own notes, the note-taker as learner, its tokens
//! in the record).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use quire_config::{AgentConfig, AgentSource, Loader, Override};
use quire_core::Interrupt;
use quire_evals::{
    DistillCost, EvalRunner, NoteTaker, NotesPlan, RunPlan, Settings, Suite, create_run,
    note_taker_config, notes_runner, notes_session_config, notes_tool_chars, prepare_run_notes,
    run_notes_dirs,
};
use quire_llm::ModelClient;
use quire_session::{DataHome, Runner};
use quire_store::{EvalResultRow, Store};

use crate::error::MetaError;
use crate::generation::{GenerationMeta, RunRecord};

/// An evaluation of one generation on some tasks.
#[derive(Debug, Clone)]
pub struct Evaluation {
    pub run: RunRecord,
    pub results: Vec<EvalResultRow>,
}

/// Runs a generation folder over tasks of the suite. [`SuiteEvaluator`] in
/// real use; tests may stand in.
#[async_trait]
pub trait Evaluate: Send + Sync {
    /// `notes` says whether the sessions see notes and learn (a learn
    /// run's record counts its distillations).
    async fn evaluate(
        &self,
        generation: &Path,
        label: &str,
        split: &str,
        tasks: &[String],
        repeat: u32,
        notes: &NotesPlan,
    ) -> Result<Evaluation, MetaError>;

    /// The store the runs are written to (for digests and reused runs).
    fn store(&self) -> Result<Store, MetaError>;

    /// The notes tree a learn run of this evaluator learnt into.
    fn run_notes(&self, run_id: &str) -> PathBuf;

    fn suite(&self) -> &Suite;
}

/// Builds the agent model's client for a generation's config.
pub type ClientFactory =
    Arc<dyn Fn(&AgentConfig) -> Result<Arc<dyn ModelClient>, String> + Send + Sync>;

/// Evaluates with the real session runner and eval runner.
pub struct SuiteEvaluator {
    pub suite: Suite,
    pub home: DataHome,
    /// Applied to every generation (`-c`, `--base-url`, …; not saved in it).
    pub overrides: Vec<Override>,
    pub clients: ClientFactory,
    pub jobs: usize,
    pub timeout: Duration,
    pub stop: Interrupt,
}

#[async_trait]
impl Evaluate for SuiteEvaluator {
    async fn evaluate(
        &self,
        generation: &Path,
        label: &str,
        split: &str,
        tasks: &[String],
        repeat: u32,
        notes: &NotesPlan,
    ) -> Result<Evaluation, MetaError> {
        let dir = generation
            .canonicalize()
            .map_err(|e| MetaError::io(generation, e))?;
        let config = Loader::new(self.overrides.clone()).load(&AgentSource::Dir(dir.clone()))?;
        let client = (self.clients)(&config).map_err(MetaError::Model)?;
        let selection = self.suite.select(split, tasks)?;
        // A learn run is sequential: each task sees the notes of the ones before.
        let jobs = if notes.learns() { 1 } else { self.jobs.max(1) };
        let mut settings = Settings::new(jobs, self.timeout);
        settings.test_timeout = Duration::from_secs(config.tests.timeout_secs.max(1));
        settings.output_cap_bytes = config.tests.output_cap_bytes as usize;
        settings.notes_tool_chars = notes_tool_chars(&config);
        let plan = RunPlan {
            selection: selection.clone(),
            repeat: repeat.max(1),
            jobs: jobs as u32,
            timeout: self.timeout,
            agent: label.to_string(),
            config_hash: config.hash.clone(),
            model: config.model.model.clone(),
            args: serde_json::json!({ "agent": dir, "meta": label }),
            notes: notes.clone(),
        };
        let learner = notes.learns().then(|| note_taker_config(&config));
        let session_config = notes_session_config(config, notes);
        let runner = Runner::new(self.home.clone(), Arc::new(session_config), client)?;
        let store = runner.store();
        let run = {
            let store = lock_store(&store)?;
            create_run(&store, &self.suite, &plan)?
        };
        let evals_dir = self.home.root().join("evals");
        let paths = prepare_run_notes(&evals_dir.join(&run.id), notes)?;
        let learner = match (learner, &paths) {
            (Some(config), Some(paths)) => {
                let client = (self.clients)(&config).map_err(MetaError::Model)?;
                let redactor = config.secret_redactor();
                let taker = NoteTaker::new(&self.home.db_path(), config, paths, client, redactor)?;
                Some(Arc::new(taker))
            }
            _ => None,
        };
        let runner = Arc::new(notes_runner(runner, paths, notes));
        tracing::info!(run = %run.id, label, split, notes = %notes.describe(), "meta: evaluating");
        let mut evals =
            EvalRunner::new(runner, store.clone(), evals_dir).with_stop(self.stop.clone());
        if let Some(learner) = learner {
            evals = evals.with_learner(learner);
        }
        let end = evals.execute(&run.id, &self.suite, &settings).await?;
        if end.interrupted {
            return Err(MetaError::Invalid(format!(
                "eval run {} was interrupted (finish it with `quire eval resume {}`)",
                run.id, run.id
            )));
        }
        let mut record =
            RunRecord::from_results(split, &run.id, &selection.tasks, repeat, &end.results);
        if notes.learns() {
            let store = lock_store(&store)?;
            let mut distill_tokens = 0;
            for id in end
                .results
                .iter()
                .filter_map(|r| r.outcome.session_id.as_ref())
            {
                distill_tokens += DistillCost::of_session(&store, id)?.tokens();
            }
            record = record.with_learning(distill_tokens);
        }
        Ok(Evaluation {
            run: record,
            results: end.results,
        })
    }

    fn store(&self) -> Result<Store, MetaError> {
        Ok(Store::open(&self.home.db_path())?)
    }

    fn run_notes(&self, run_id: &str) -> PathBuf {
        run_notes_dirs(&self.home.root().join("evals").join(run_id)).0
    }

    fn suite(&self) -> &Suite {
        &self.suite
    }
}

/// How a generation's sessions on `split` see notes: none, or (learning)
/// a learn run starting from what the generation learnt on the split
/// before (train for val, val for test), else from no notes.
pub(crate) fn notes_plan(
    evaluator: &dyn Evaluate,
    meta: &GenerationMeta,
    split: &str,
    learn: bool,
) -> NotesPlan {
    if !learn {
        return NotesPlan::Off;
    }
    let before = match split {
        "val" => Some("train"),
        "test" => Some("val"),
        _ => None,
    };
    let from = before
        .and_then(|b| meta.latest_learn_run(b))
        .map(|r| evaluator.run_notes(&r.run_id).display().to_string());
    NotesPlan::Learn { from }
}

/// The runner's shared store; a poisoned lock (a thread panicked while
/// writing) is reported, not unwrapped.
fn lock_store(
    store: &std::sync::Mutex<Store>,
) -> Result<std::sync::MutexGuard<'_, Store>, MetaError> {
    store
        .lock()
        .map_err(|_| MetaError::Invalid("the store lock is poisoned".into()))
}
