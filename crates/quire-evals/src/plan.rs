//! What a run is before it runs: its plan (`create_run`), its settings,
//! how an attempt's end is categorised, and the hooks a caller plugs in
//! (the session driver, progress lines). The runner in `runner.rs` carries
//! them out.

use std::time::Duration;

use async_trait::async_trait;
use quire_session::{EndReason, RunOptions, SessionError, SessionReport, WorkspaceInfo};
use quire_store::{DistillJob, EvalResultRow, EvalRunRow, NewEvalRun, Store};
use serde::{Deserialize, Serialize};

use crate::error::EvalError;
use crate::learning::NotesPlan;
use crate::suite::{Selection, Suite};
/// How an attempt ended. `Resolved` when the hidden evaluation and the
/// visible tests pass in the resulting tree; otherwise why not.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Category {
    Resolved,
    /// The agent finished without changing anything.
    NoChange,
    /// The change could not be applied to the attempt's tree.
    PatchFailed,
    /// The visible tests failed (after apply, or in the resulting tree).
    TestsFailed,
    /// Applied with the visible tests green, but the hidden evaluation failed.
    HiddenFailed,
    /// The attempt ran past `--timeout`.
    Timeout,
    /// The model failed (HTTP errors past retries) or kept breaking the protocol.
    ModelError,
    IterationCap,
    /// An extension stopped the session (loop detection, …).
    Stopped,
    /// The harness failed: a panic, or the session could not run at all.
    Crash,
}

impl Category {
    pub const ALL: &'static [Category] = &[
        Category::Resolved,
        Category::NoChange,
        Category::PatchFailed,
        Category::TestsFailed,
        Category::HiddenFailed,
        Category::Timeout,
        Category::ModelError,
        Category::IterationCap,
        Category::Stopped,
        Category::Crash,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Category::Resolved => "resolved",
            Category::NoChange => "no_change",
            Category::PatchFailed => "patch_failed",
            Category::TestsFailed => "tests_failed",
            Category::HiddenFailed => "hidden_failed",
            Category::Timeout => "timeout",
            Category::ModelError => "model_error",
            Category::IterationCap => "iteration_cap",
            Category::Stopped => "stopped",
            Category::Crash => "crash",
        }
    }

    /// The category a session's end reason implies when the result is not
    /// resolved. `Applied` splits on whether the visible tests pass.
    pub fn from_end(reason: EndReason, visible_passed: bool) -> Category {
        match reason {
            EndReason::Applied if !visible_passed => Category::TestsFailed,
            EndReason::Applied => Category::HiddenFailed,
            EndReason::NoChange => Category::NoChange,
            EndReason::ApplyConflict => Category::PatchFailed,
            EndReason::PostApplyTestsFailed => Category::TestsFailed,
            EndReason::IterationCap => Category::IterationCap,
            EndReason::ModelError | EndReason::ProtocolFailure => Category::ModelError,
            EndReason::Stopped | EndReason::Rejected | EndReason::Saved => Category::Stopped,
            EndReason::Interrupted => Category::Crash,
        }
    }
}

impl std::fmt::Display for Category {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What runs one session. `quire_session::Runner` in real runs; tests can
/// put anything here (one that panics, one that hangs).
#[async_trait]
pub trait SessionDriver: Send + Sync + 'static {
    async fn run_session(
        &self,
        info: WorkspaceInfo,
        options: RunOptions,
    ) -> Result<SessionReport, SessionError>;
}

#[async_trait]
impl SessionDriver for quire_session::Runner {
    async fn run_session(
        &self,
        info: WorkspaceInfo,
        options: RunOptions,
    ) -> Result<SessionReport, SessionError> {
        self.run(info, options).await
    }
}

/// Watches a run as it goes (the CLI prints progress lines from it).
pub trait Progress: Send + Sync {
    fn run_started(&self, _run: &EvalRunRow, _todo: usize, _total: usize) {}
    fn attempt_started(&self, _task: &str, _attempt: u32) {}
    fn attempt_finished(&self, _result: &EvalResultRow) {}
    /// The user stopped it; it stays to do.
    fn attempt_interrupted(&self, _task: &str, _attempt: u32) {}
    /// A learn run distills the attempt's session before the next task.
    fn distill_started(&self, _task: &str, _attempt: u32) {}
    /// `job` as it stands afterwards (its cost, its notes).
    fn distill_finished(&self, _task: &str, _attempt: u32, _job: Option<&DistillJob>) {}
}

/// Watches nothing.
pub struct NoProgress;

impl Progress for NoProgress {}

/// A run to create.
#[derive(Debug, Clone)]
pub struct RunPlan {
    pub selection: Selection,
    pub repeat: u32,
    pub jobs: u32,
    pub timeout: Duration,
    /// The agent's name, its config hash and the model, for comparisons.
    pub agent: String,
    pub config_hash: String,
    pub model: String,
    /// How the run was asked for (kept for `resume`).
    pub args: serde_json::Value,
    /// Where sessions get notes; kept in `args.notes`.
    pub notes: NotesPlan,
}

/// Creates a run with one pending result per (task, attempt), attempt-major
/// (every task once, then every task again, …) so a cut-short run still has
/// a whole first pass. Tasks with unusable metadata are refused up front.
pub fn create_run(store: &Store, suite: &Suite, plan: &RunPlan) -> Result<EvalRunRow, EvalError> {
    if plan.notes.learns() && (plan.repeat > 1 || plan.jobs > 1) {
        return Err(EvalError::Selection(
            "a learn run runs each task once, one at a time (--repeat 1 --jobs 1); \
             repeat the protocol with separate runs"
                .into(),
        ));
    }
    let mut args = plan.args.clone();
    if let Some(map) = args.as_object_mut() {
        map.insert("notes".into(), serde_json::json!(plan.notes));
    } else {
        args = serde_json::json!({ "notes": plan.notes });
    }
    for id in &plan.selection.tasks {
        let task = suite.task(id).ok_or_else(|| EvalError::Task {
            task: id.clone(),
            message: "not in the suite".into(),
        })?;
        if let Err(problem) = &task.metadata {
            return Err(EvalError::Task {
                task: id.clone(),
                message: format!("{problem} (see `quire eval check`)"),
            });
        }
    }
    let id = quire_types::new_id();
    let repeat = plan.repeat.max(1);
    let attempts: Vec<(String, u32)> = (1..=repeat)
        .flat_map(|attempt| {
            plan.selection
                .tasks
                .iter()
                .map(move |task| (task.clone(), attempt))
        })
        .collect();
    store.create_eval_run(
        &NewEvalRun {
            id: id.clone(),
            suite: suite.name.clone(),
            suite_path: suite.root.display().to_string(),
            split: plan.selection.split.clone(),
            agent: plan.agent.clone(),
            config_hash: plan.config_hash.clone(),
            model: plan.model.clone(),
            repeat,
            jobs: plan.jobs.max(1),
            timeout_secs: plan.timeout.as_secs(),
            args,
        },
        &attempts,
    )?;
    store
        .get_eval_run(&id)?
        .ok_or_else(|| EvalError::RunNotFound(id.clone()))
}

/// Settings for executing a run's attempts.
#[derive(Debug, Clone)]
pub struct Settings {
    pub jobs: usize,
    /// Per attempt: the agent's session is interrupted after it.
    pub timeout: Duration,
    /// Per test command (visible tests, hidden evaluation).
    pub test_timeout: Duration,
    pub output_cap_bytes: usize,
    /// After an interrupt, how long a session may take to wind down before
    /// it is abandoned (a tool call that does not notice the interrupt).
    pub grace: Duration,
    /// Characters of the notes tools' descriptions and schemas, for the
    /// notes' share of each prompt ([`NotesUse::prompt_tokens`]).
    pub notes_tool_chars: u64,
}

impl Settings {
    pub fn new(jobs: usize, timeout: Duration) -> Settings {
        Settings {
            jobs: jobs.max(1),
            timeout,
            test_timeout: Duration::from_secs(300),
            output_cap_bytes: 200_000,
            grace: Duration::from_secs(20),
            notes_tool_chars: 0,
        }
    }
}
