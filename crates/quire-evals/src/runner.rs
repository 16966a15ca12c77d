//! `quire eval run`: each attempt of each task in a fresh copy, the agent
//! non-interactive, then the visible tests and the hidden evaluation in the
//! resulting tree. Attempts run in parallel up to `jobs`; a crash, hang or
//! model failure in one is recorded as its result and never stops the run.
//! Every result row is committed as it finishes, so a killed run resumes
//! where it was.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use chrono::Utc;
use quire_core::Interrupt;
use quire_session::{
    AutoApprove, EndReason, RunOptions, SessionReport, WorkspaceChoices, WorkspaceInfo,
};
use quire_store::{
    DistillJob, DistillStatus, EvalOutcome, EvalResultRow, EvalResultStatus, EvalRunRow,
    EvalRunStatus, SessionStatus, Store, StoreError,
};
use quire_types::SessionId;

use crate::error::EvalError;
use crate::learning::{LearnEnd, Learner, NotesPlan, NotesUse};
use crate::plan::{Category, NoProgress, Progress, SessionDriver, Settings};
use crate::suite::{Suite, Task};
use crate::tree::{TestRun, agent_view, install_evaluation, run_tests};

/// How an execution ended.
#[derive(Debug, Clone)]
pub struct RunEnd {
    pub run: EvalRunRow,
    pub results: Vec<EvalResultRow>,
    /// Stopped by the user before everything was done.
    pub interrupted: bool,
}

/// Executes runs: owns the session driver, the store, and where trees go.
pub struct EvalRunner {
    driver: Arc<dyn SessionDriver>,
    store: Arc<Mutex<Store>>,
    /// `<data home>/evals`.
    evals_dir: PathBuf,
    progress: Arc<dyn Progress>,
    stop: Interrupt,
    learner: Option<Arc<dyn Learner>>,
}

/// What the attempts of one execution share.
struct Shared {
    driver: Arc<dyn SessionDriver>,
    store: Arc<Mutex<Store>>,
    run_id: String,
    run_dir: PathBuf,
    project: String,
    evaluation_command: String,
    settings: Settings,
    stop: Interrupt,
    /// Record what notes did in each attempt (the run shows notes).
    notes_shown: bool,
}

impl Shared {
    fn with_store<T>(
        &self,
        f: impl FnOnce(&Store) -> Result<T, StoreError>,
    ) -> Result<T, EvalError> {
        with_store(&self.store, f)
    }
}

fn with_store<T>(
    store: &Mutex<Store>,
    f: impl FnOnce(&Store) -> Result<T, StoreError>,
) -> Result<T, EvalError> {
    let store = store.lock().map_err(|_| EvalError::StorePoisoned)?;
    Ok(f(&store)?)
}

/// An attempt either has a result or was stopped by the user (and stays to do).
enum AttemptEnd {
    Done(EvalOutcome),
    Interrupted,
}

/// How the session part of an attempt went.
enum SessionEnd {
    Report(SessionReport),
    /// The session could not run (`SessionError`).
    Failed(String),
    Panicked(String),
    /// It did not wind down within the grace period and was dropped.
    Abandoned,
}

impl EvalRunner {
    /// `evals_dir` is `<data home>/evals`; the store should be the one the
    /// driver's sessions are written to, so results link to them.
    pub fn new(
        driver: Arc<dyn SessionDriver>,
        store: Arc<Mutex<Store>>,
        evals_dir: PathBuf,
    ) -> EvalRunner {
        EvalRunner {
            driver,
            store,
            evals_dir,
            progress: Arc::new(NoProgress),
            stop: Interrupt::new(),
            learner: None,
        }
    }

    /// Who distills the sessions of learn runs (required for them).
    pub fn with_learner(mut self, learner: Arc<dyn Learner>) -> Self {
        self.learner = Some(learner);
        self
    }

    pub fn with_progress(mut self, progress: Arc<dyn Progress>) -> Self {
        self.progress = progress;
        self
    }

    /// The user's stop (Ctrl-C): running attempts are interrupted and go
    /// back to pending, no new ones start, the run ends `interrupted`.
    pub fn with_stop(mut self, stop: Interrupt) -> Self {
        self.stop = stop;
        self
    }

    pub fn store(&self) -> Arc<Mutex<Store>> {
        self.store.clone()
    }

    /// Where a run's trees and logs go.
    pub fn run_dir(&self, run_id: &str) -> PathBuf {
        self.evals_dir.join(run_id)
    }

    /// Runs every attempt of `run_id` that is not done yet (all of a new
    /// run; what is left of an interrupted or killed one).
    pub async fn execute(
        &self,
        run_id: &str,
        suite: &Suite,
        settings: &Settings,
    ) -> Result<RunEnd, EvalError> {
        let run_dir = self.run_dir(run_id);
        std::fs::create_dir_all(&run_dir).map_err(|e| EvalError::io(&run_dir, e))?;
        let _lock = lock_run(&run_dir, run_id)?;
        let run = with_store(&self.store, |s| s.get_eval_run(run_id))?
            .ok_or_else(|| EvalError::RunNotFound(run_id.to_string()))?;
        let results = with_store(&self.store, |s| s.eval_results(run_id))?;
        let plan = NotesPlan::of_run(&run.args);
        let learner = match (&plan, &self.learner) {
            (NotesPlan::Learn { .. }, None) => {
                return Err(EvalError::Run {
                    run: run_id.to_string(),
                    message: "a learn run needs a note-taker to distill its sessions".into(),
                });
            }
            (NotesPlan::Learn { .. }, Some(learner)) => Some(learner.clone()),
            _ => None,
        };
        let undistilled = match &learner {
            Some(_) => self.undistilled(&results)?,
            None => 0,
        };
        let todo: Vec<EvalResultRow> = results
            .iter()
            .filter(|r| r.status != EvalResultStatus::Done)
            .cloned()
            .collect();
        if todo.is_empty() && undistilled == 0 {
            // Nothing left (e.g. killed right after its last result).
            if run.status != EvalRunStatus::Completed {
                with_store(&self.store, |s| {
                    s.set_eval_run_status(run_id, EvalRunStatus::Completed)
                })?;
            }
            let run = with_store(&self.store, |s| s.get_eval_run(run_id))?
                .ok_or_else(|| EvalError::RunNotFound(run_id.to_string()))?;
            return Ok(RunEnd {
                run,
                results,
                interrupted: false,
            });
        }
        with_store(&self.store, |s| {
            s.set_eval_run_status(run_id, EvalRunStatus::Running)
        })?;
        self.progress.run_started(&run, todo.len(), results.len());
        let shared = Arc::new(Shared {
            driver: self.driver.clone(),
            store: self.store.clone(),
            run_id: run_id.to_string(),
            run_dir: run_dir.clone(),
            project: suite.name.clone(),
            evaluation_command: suite.evaluation_command.clone(),
            settings: settings.clone(),
            stop: self.stop.clone(),
            notes_shown: plan.shows_notes(),
        });
        for row in todo
            .iter()
            .filter(|r| r.status == EvalResultStatus::Running)
        {
            // Left running by a process that died: its session is orphaned.
            let tree = tree_dir(&run_dir, &row.task_id, row.attempt);
            close_orphaned_sessions(&shared, &tree);
        }
        if let Some(learner) = learner {
            return self
                .execute_learning(&shared, suite, results, learner.as_ref())
                .await;
        }
        let permits = Arc::new(tokio::sync::Semaphore::new(settings.jobs.max(1)));
        let mut set = tokio::task::JoinSet::new();
        for row in todo {
            // Take the permit before spawning, so attempts start in planned order.
            let Ok(permit) = permits.clone().acquire_owned().await else {
                break;
            };
            if self.stop.is_triggered() {
                break;
            }
            let shared = shared.clone();
            let progress = self.progress.clone();
            let task = suite.task(&row.task_id).cloned();
            set.spawn(async move {
                let _permit = permit;
                run_one(&shared, progress.as_ref(), &row.task_id, row.attempt, task).await
            });
        }
        let mut first_error = None;
        while let Some(joined) = set.join_next().await {
            let failure = match joined {
                Ok(Ok(())) => continue,
                Ok(Err(err)) => err,
                Err(err) => EvalError::Run {
                    run: run_id.to_string(),
                    message: format!("an attempt's bookkeeping crashed: {err}"),
                },
            };
            tracing::error!(run = run_id, error = %failure, "eval attempt could not be recorded");
            first_error.get_or_insert(failure);
        }
        self.close_run(run_id, true, first_error)
    }

    /// Marks the run completed (every attempt done and, when `settled`,
    /// every distillation of a learn run too) or interrupted.
    fn close_run(
        &self,
        run_id: &str,
        settled: bool,
        first_error: Option<EvalError>,
    ) -> Result<RunEnd, EvalError> {
        let results = with_store(&self.store, |s| s.eval_results(run_id))?;
        let complete = settled && results.iter().all(|r| r.status == EvalResultStatus::Done);
        let status = if complete {
            EvalRunStatus::Completed
        } else {
            EvalRunStatus::Interrupted
        };
        with_store(&self.store, |s| s.set_eval_run_status(run_id, status))?;
        if let Some(err) = first_error {
            return Err(err);
        }
        let run = with_store(&self.store, |s| s.get_eval_run(run_id))?
            .ok_or_else(|| EvalError::RunNotFound(run_id.to_string()))?;
        Ok(RunEnd {
            run,
            results,
            interrupted: !complete,
        })
    }

    /// Done attempts whose session still waits for its distillation.
    fn undistilled(&self, results: &[EvalResultRow]) -> Result<usize, EvalError> {
        let mut count = 0;
        for row in results
            .iter()
            .filter(|r| r.status == EvalResultStatus::Done)
        {
            if let Some(id) = &row.outcome.session_id
                && job_open(with_store(&self.store, |s| s.distill_job(id))?.as_ref())
            {
                count += 1;
            }
        }
        Ok(count)
    }

    /// The learning protocol: one attempt at a time in planned order, each
    /// session distilled before the next attempt starts. A killed run
    /// resumes at the first attempt or distillation not done; the store's
    /// job claim makes sure no distillation is done twice.
    async fn execute_learning(
        &self,
        shared: &Arc<Shared>,
        suite: &Suite,
        results: Vec<EvalResultRow>,
        learner: &dyn Learner,
    ) -> Result<RunEnd, EvalError> {
        let run_id = shared.run_id.clone();
        let mut settled = true;
        for row in results {
            if self.stop.is_triggered() {
                settled = false;
                break;
            }
            if row.status != EvalResultStatus::Done {
                let task = suite.task(&row.task_id).cloned();
                run_one(
                    shared,
                    self.progress.as_ref(),
                    &row.task_id,
                    row.attempt,
                    task,
                )
                .await?;
            }
            let now = with_store(&self.store, |s| s.eval_results(&run_id))?
                .into_iter()
                .find(|r| r.task_id == row.task_id && r.attempt == row.attempt);
            let Some(now) = now.filter(|r| r.status == EvalResultStatus::Done) else {
                // Stopped by the user: it stays to do.
                settled = false;
                break;
            };
            let Some(session) = now.outcome.session_id.clone() else {
                continue;
            };
            if !self
                .distill(learner, &session, &row.task_id, row.attempt)
                .await?
            {
                settled = false;
                break;
            }
        }
        self.close_run(&run_id, settled, None)
    }

    /// Distills one session until its job is closed; `false` when the user
    /// stopped it (the job is back in the queue for the resume).
    async fn distill(
        &self,
        learner: &dyn Learner,
        session: &SessionId,
        task: &str,
        attempt: u32,
    ) -> Result<bool, EvalError> {
        let job = with_store(&self.store, |s| s.distill_job(session))?;
        if !job_open(job.as_ref()) {
            return Ok(true);
        }
        self.progress.distill_started(task, attempt);
        // Each round is one claim; a failed attempt goes back to pending
        // until the store marks it failed, so this ends.
        let mut job = job;
        for _ in 0..MAX_DISTILL_ROUNDS {
            if self.stop.is_triggered() {
                return Ok(false);
            }
            match learner.distill(session, &self.stop).await {
                Ok(LearnEnd::Interrupted) => return Ok(false),
                Ok(LearnEnd::Processed | LearnEnd::NothingToDo) => {}
                Err(error) => {
                    tracing::warn!(%session, %error, "distillation failed; the run goes on");
                }
            }
            job = with_store(&self.store, |s| s.distill_job(session))?;
            if !job_open(job.as_ref()) {
                break;
            }
        }
        self.progress.distill_finished(task, attempt, job.as_ref());
        Ok(true)
    }
}

/// Claims a learn run makes on one job before it moves on regardless.
const MAX_DISTILL_ROUNDS: usize = 10;

/// A job still to be distilled (pending, or left running by a dead process).
fn job_open(job: Option<&DistillJob>) -> bool {
    job.is_some_and(|j| matches!(j.status, DistillStatus::Pending | DistillStatus::Running))
}

/// `<run dir>/<task>-<attempt>`: the attempt's tree.
pub fn tree_dir(run_dir: &Path, task: &str, attempt: u32) -> PathBuf {
    run_dir.join(format!("{task}-{attempt}"))
}

/// One attempt, bookkept: marked running, run, then recorded (or put back
/// to pending if the user stopped it).
async fn run_one(
    shared: &Shared,
    progress: &dyn Progress,
    task_id: &str,
    attempt: u32,
    task: Option<Task>,
) -> Result<(), EvalError> {
    let run_id = shared.run_id.as_str();
    shared.with_store(|s| s.start_eval_result(run_id, task_id, attempt))?;
    progress.attempt_started(task_id, attempt);
    let started_at = Utc::now();
    let end = match task {
        Some(task) => run_attempt(shared, &task, attempt).await,
        None => AttemptEnd::Done(EvalOutcome {
            category: Category::Crash.as_str().into(),
            error: Some(format!(
                "task `{task_id}` is no longer in the suite at its recorded path"
            )),
            ..EvalOutcome::default()
        }),
    };
    match end {
        AttemptEnd::Done(outcome) => {
            shared.with_store(|s| s.finish_eval_result(run_id, task_id, attempt, &outcome))?;
            progress.attempt_finished(&EvalResultRow {
                run_id: run_id.to_string(),
                task_id: task_id.to_string(),
                attempt,
                status: EvalResultStatus::Done,
                started_at: Some(started_at),
                ended_at: Some(Utc::now()),
                outcome,
            });
        }
        AttemptEnd::Interrupted => {
            shared.with_store(|s| s.reset_eval_result(run_id, task_id, attempt))?;
            progress.attempt_interrupted(task_id, attempt);
        }
    }
    Ok(())
}

/// A fresh tree, the session, then the tests in whatever the session left.
async fn run_attempt(shared: &Shared, task: &Task, attempt: u32) -> AttemptEnd {
    let started = Instant::now();
    let crash = |message: String| {
        AttemptEnd::Done(EvalOutcome {
            category: Category::Crash.as_str().into(),
            error: Some(message),
            wall_ms: started.elapsed().as_millis() as u64,
            ..EvalOutcome::default()
        })
    };
    let metadata = match &task.metadata {
        Ok(m) => m.clone(),
        Err(problem) => return crash(format!("unusable metadata: {problem}")),
    };
    let dir = tree_dir(&shared.run_dir, &task.id, attempt);
    if dir.exists()
        && let Err(err) = std::fs::remove_dir_all(&dir)
    {
        return crash(format!("cannot clear {}: {err}", dir.display()));
    }
    if let Err(err) = agent_view(&task.dir, &dir) {
        return crash(err.to_string());
    }
    let choices = WorkspaceChoices {
        task: None,
        test_command: Some(metadata.test_command.clone()),
        project: Some(shared.project.clone()),
    };
    let info = match WorkspaceInfo::discover(&dir, &choices, "") {
        Ok(info) => info,
        Err(err) => return crash(err.to_string()),
    };
    let tree = info.root.clone();

    let (end, timed_out) = run_session(shared, info).await;
    let stopped_by_user = !timed_out && shared.stop.is_triggered();
    let interrupted = match &end {
        SessionEnd::Report(r) => r.reason == EndReason::Interrupted,
        SessionEnd::Abandoned => true,
        _ => false,
    };
    if interrupted && stopped_by_user {
        close_orphaned_sessions(shared, &tree);
        return AttemptEnd::Interrupted;
    }

    let mut outcome = EvalOutcome::default();
    let mut details = serde_json::Map::new();
    details.insert("tree".into(), tree.display().to_string().into());
    match &end {
        SessionEnd::Report(report) => {
            outcome.session_id = Some(report.id.clone());
            outcome.usage = report.totals.usage;
            outcome.cost_usd = report.totals.cost_usd;
            outcome.turns = report.totals.iterations;
            outcome.tool_calls = report.totals.tool_calls;
            details.insert("end_reason".into(), serde_json::json!(report.reason));
            details.insert("session_outcome".into(), report.outcome.clone().into());
        }
        SessionEnd::Failed(_) | SessionEnd::Panicked(_) | SessionEnd::Abandoned => {
            // No report came back: take what the store saw of the session.
            if let Some(row) = close_orphaned_sessions(shared, &tree) {
                outcome.session_id = Some(row.0);
                let totals = row.1;
                outcome.usage = totals.usage;
                outcome.cost_usd = totals.cost_usd;
                outcome.turns = totals.iterations;
                outcome.tool_calls = totals.tool_calls;
            }
        }
    }

    if shared.notes_shown
        && let Some(session) = &outcome.session_id
    {
        match shared.with_store(|s| s.events(session)) {
            Ok(events) => {
                let events: Vec<_> = events.into_iter().map(|e| e.event).collect();
                let used = NotesUse::from_events(&events, shared.settings.notes_tool_chars);
                details.insert("notes".into(), serde_json::json!(used));
            }
            Err(err) => {
                tracing::warn!(%err, "cannot read the attempt's events for its notes figures")
            }
        }
    }

    // Visible tests first: the hidden evaluation is not in the tree yet.
    let settings = &shared.settings;
    let logs = shared.run_dir.join("logs");
    let visible = run_tests(
        &metadata.test_command,
        &tree,
        settings.test_timeout,
        settings.output_cap_bytes,
    )
    .await;
    let hidden = match install_evaluation(&task.evaluation_dir(), &tree) {
        Ok(()) => {
            run_tests(
                &shared.evaluation_command,
                &tree,
                settings.test_timeout,
                settings.output_cap_bytes,
            )
            .await
        }
        Err(err) => Err(err),
    };
    let mut errors = Vec::new();
    let label = format!("{}-{attempt}", task.id);
    let visible = record_tests("visible", visible, &logs, &label, &mut details, &mut errors);
    let hidden = record_tests("hidden", hidden, &logs, &label, &mut details, &mut errors);
    let visible_ok = visible.as_ref().is_some_and(|t| t.passed);
    let hidden_ok = hidden.as_ref().is_some_and(|t| t.passed);
    if let Some(t) = &visible {
        outcome.visible_passed = t.tests_passed;
        outcome.visible_failed = t.tests_failed;
    }
    if let Some(t) = &hidden {
        outcome.hidden_passed = t.tests_passed;
        outcome.hidden_failed = t.tests_failed;
    }
    outcome.resolved = visible_ok && hidden_ok;
    let category = if outcome.resolved {
        Category::Resolved
    } else {
        match &end {
            SessionEnd::Report(r) if r.reason == EndReason::Interrupted && timed_out => {
                Category::Timeout
            }
            SessionEnd::Abandoned if timed_out => Category::Timeout,
            SessionEnd::Report(r) => Category::from_end(r.reason, visible_ok),
            _ => Category::Crash,
        }
    };
    let error = match (&end, category) {
        (_, Category::Timeout) => Some(format!("timed out after {}s", settings.timeout.as_secs())),
        (SessionEnd::Failed(e), _) => Some(format!("session failed: {e}")),
        (SessionEnd::Panicked(e), _) => Some(format!("session panicked: {e}")),
        (SessionEnd::Abandoned, _) => Some("the session did not stop when interrupted".into()),
        (SessionEnd::Report(r), Category::ModelError | Category::Crash) => Some(r.outcome.clone()),
        _ => None,
    };
    errors.extend(error);
    outcome.category = category.as_str().into();
    outcome.error = (!errors.is_empty()).then(|| errors.join("; "));
    outcome.wall_ms = started.elapsed().as_millis() as u64;
    outcome.details = serde_json::Value::Object(details);
    AttemptEnd::Done(outcome)
}

/// Runs the session with its own interrupt, fired by the attempt's timer or
/// the user's stop. A panic inside is caught here; a session that ignores
/// the interrupt past the grace period is dropped.
async fn run_session(shared: &Shared, info: WorkspaceInfo) -> (SessionEnd, bool) {
    let interrupt = Interrupt::new();
    let timed_out = Arc::new(AtomicBool::new(false));
    let watcher = {
        let interrupt = interrupt.clone();
        let stop = shared.stop.clone();
        let timed_out = timed_out.clone();
        let timeout = shared.settings.timeout;
        tokio::spawn(async move {
            tokio::select! {
                _ = tokio::time::sleep(timeout) => timed_out.store(true, Ordering::SeqCst),
                _ = stop.triggered() => {}
            }
            interrupt.trigger();
        })
    };
    let options = RunOptions {
        approver: Arc::new(AutoApprove),
        apply: true,
        interrupt: interrupt.clone(),
        sinks: Vec::new(),
    };
    let driver = shared.driver.clone();
    let mut handle = tokio::spawn(async move { driver.run_session(info, options).await });
    let grace = shared.settings.grace;
    let end = tokio::select! {
        joined = &mut handle => match joined {
            Ok(Ok(report)) => SessionEnd::Report(report),
            Ok(Err(err)) => SessionEnd::Failed(err.to_string()),
            Err(err) if err.is_panic() => SessionEnd::Panicked(panic_text(err.into_panic())),
            Err(err) => SessionEnd::Failed(err.to_string()),
        },
        _ = async {
            interrupt.triggered().await;
            tokio::time::sleep(grace).await;
        } => {
            handle.abort();
            SessionEnd::Abandoned
        }
    };
    watcher.abort();
    (end, timed_out.load(Ordering::SeqCst))
}

fn panic_text(payload: Box<dyn std::any::Any + Send>) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "a panic without a message".into()
    }
}

/// Marks sessions left `running` in this tree interrupted and returns the
/// newest one's id and totals (what an attempt without a report has).
fn close_orphaned_sessions(
    shared: &Shared,
    tree: &Path,
) -> Option<(SessionId, quire_store::Totals)> {
    let tree = tree.canonicalize().ok()?;
    let sessions = shared
        .with_store(|s| {
            let rows = s.sessions_in_workspace(&tree.display().to_string())?;
            for row in rows.iter().filter(|r| r.status == SessionStatus::Running) {
                s.mark_interrupted(&row.id)?;
            }
            // Re-read: marking updates the elapsed time.
            s.sessions_in_workspace(&tree.display().to_string())
        })
        .map_err(|err| tracing::warn!(error = %err, tree = %tree.display(), "cannot look up the attempt's session"))
        .ok()?;
    sessions.into_iter().next().map(|row| (row.id, row.totals))
}

/// Saves a test run's full output next to the trees and returns it, or
/// notes why it could not run.
fn record_tests(
    which: &str,
    run: Result<TestRun, EvalError>,
    logs: &Path,
    label: &str,
    details: &mut serde_json::Map<String, serde_json::Value>,
    errors: &mut Vec<String>,
) -> Option<TestRun> {
    match run {
        Ok(run) => {
            let path = logs.join(format!("{label}.{which}.log"));
            let written =
                std::fs::create_dir_all(logs).and_then(|()| std::fs::write(&path, &run.output));
            let mut value = serde_json::to_value(&run).unwrap_or_default();
            if let (Ok(()), Some(map)) = (written, value.as_object_mut()) {
                map.insert("log".into(), path.display().to_string().into());
            }
            details.insert(which.into(), value);
            Some(run)
        }
        Err(err) => {
            errors.push(format!("{which} tests could not run: {err}"));
            None
        }
    }
}

/// One live process per eval run.
fn lock_run(dir: &Path, run: &str) -> Result<quire_workspace::PidLock, EvalError> {
    quire_workspace::PidLock::acquire(dir).map_err(|err| match err {
        quire_workspace::LockError::Held { pid, .. } => EvalError::RunLocked {
            run: run.to_string(),
            pid,
        },
        quire_workspace::LockError::Io { path, source } => EvalError::io(&path, source),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn end_reasons_map_to_categories() {
        assert_eq!(
            Category::from_end(EndReason::NoChange, true),
            Category::NoChange
        );
        assert_eq!(
            Category::from_end(EndReason::ApplyConflict, true),
            Category::PatchFailed
        );
        assert_eq!(
            Category::from_end(EndReason::PostApplyTestsFailed, false),
            Category::TestsFailed
        );
        assert_eq!(
            Category::from_end(EndReason::IterationCap, true),
            Category::IterationCap
        );
        assert_eq!(
            Category::from_end(EndReason::ModelError, true),
            Category::ModelError
        );
        assert_eq!(
            Category::from_end(EndReason::ProtocolFailure, true),
            Category::ModelError
        );
        assert_eq!(
            Category::from_end(EndReason::Applied, true),
            Category::HiddenFailed
        );
        assert_eq!(
            Category::from_end(EndReason::Applied, false),
            Category::TestsFailed
        );
        for c in Category::ALL {
            let json = serde_json::to_string(c).unwrap();
            assert_eq!(json, format!("\"{}\"", c.as_str()));
        }
    }
}
