//! Distillation jobs: turning a finished session into notes.
//!
//! A job is claimed from the store (once, atomically), the notes the
//! session read are credited by its outcome (deterministically, and never
//! twice for one session), then the note-taker — an agent of its own with
//! the note tools — reads the session's digest and writes, updates,
//! supersedes or writes nothing. Progress is saved after every write and a
//! heartbeat keeps the job's lease, so a worker killed mid-job leaves the
//! tree and index consistent and the job claimable again.

use std::path::PathBuf;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::Duration;

use quire_config::{AgentConfig, render};
use quire_core::extensions::ProtocolExtension;
use quire_core::{Agent, CoreError, Ctx, EventSink, Extension, Interrupt, LoopOutcome, SinkError};
use quire_llm::ModelClient;
use quire_store::{DistillJob, Store, StoreError};
use quire_types::{Event, EventKind, MessageSource, Redactor, SessionId, Usage};
use serde::Serialize;

use quire_notes::{Notes, cut_at_line};
use quire_recall::{SessionFacts, Verdict};

use crate::digest::{DigestOptions, digest};
use crate::note_tools::{NoteTakerState, NoteTools, WrittenNote};

/// How jobs run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DistillSettings {
    /// The note-taker's model calls per job.
    pub max_iterations: u32,
    /// A job without a heartbeat this long may be taken over.
    pub lease: Duration,
    /// Attempts at one job before it is marked failed.
    pub max_attempts: u32,
}

impl DistillSettings {
    /// From the agent config's `[notes]`.
    pub fn from_config(config: &AgentConfig) -> DistillSettings {
        DistillSettings {
            max_iterations: config.notes.distill_max_iterations.max(1),
            lease: Duration::from_secs(config.notes.job_lease_secs.max(1)),
            max_attempts: config.notes.job_max_attempts.max(1),
        }
    }
}

/// Why a job could not be processed.
#[derive(Debug, thiserror::Error)]
pub enum DistillError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Notes(#[from] quire_notes::Error),
    #[error("note-taker: {0}")]
    Agent(#[from] CoreError),
    #[error("the store lock is poisoned")]
    Poisoned,
}

/// How one job ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum JobOutcome {
    /// The note-taker finished (or hit its cap); `summary` says what it did.
    Done { summary: String },
    /// Nothing to distill (the session has not ended, or made no tool call).
    Skipped { reason: String },
    /// This attempt failed; the job is retried until `max_attempts`.
    Failed { error: String },
    /// Interrupted (Ctrl-C): the job went back to the queue.
    Released,
    /// Another worker took the job over (this one missed its lease).
    LostLease,
}

/// What one job did.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct JobReport {
    pub session_id: SessionId,
    pub attempt: u32,
    #[serde(flatten)]
    pub outcome: JobOutcome,
    pub written: Vec<WrittenNote>,
    /// Notes credited by this job, with the verdict.
    pub credited: Vec<(String, &'static str)>,
    /// The note-taker's token usage.
    pub usage: Usage,
    /// The note-taker's model calls.
    pub calls: u32,
}

/// Processes distillation jobs against one store, notes folder and model.
pub struct Distiller {
    store_path: PathBuf,
    store: Arc<Mutex<Store>>,
    notes: Notes,
    config: Arc<AgentConfig>,
    client: Arc<dyn ModelClient>,
    redactor: Redactor,
    worker: String,
    settings: DistillSettings,
}

impl Distiller {
    /// `config` supplies the note-taker's prompt, tool texts and messages;
    /// `redactor` everything written (pass the one the notes were opened with).
    pub fn new(
        store_path: impl Into<PathBuf>,
        notes: Notes,
        config: Arc<AgentConfig>,
        client: Arc<dyn ModelClient>,
        redactor: Redactor,
    ) -> Result<Distiller, DistillError> {
        let store_path = store_path.into();
        let store = Store::open(&store_path)?.with_redactor(redactor.clone());
        let settings = DistillSettings::from_config(&config);
        Ok(Distiller {
            store_path,
            store: Arc::new(Mutex::new(store)),
            notes,
            config,
            client,
            redactor,
            worker: format!("{}-{}", std::process::id(), ulid::Ulid::new()),
            settings,
        })
    }

    /// Overrides the settings taken from the config.
    pub fn with_settings(mut self, settings: DistillSettings) -> Distiller {
        self.settings = settings;
        self
    }

    /// This worker's id, as recorded on the jobs it holds.
    pub fn worker(&self) -> &str {
        &self.worker
    }

    fn store(&self) -> Result<MutexGuard<'_, Store>, DistillError> {
        self.store.lock().map_err(|_| DistillError::Poisoned)
    }

    /// Processes the job of one session, if it is claimable; `None` when it
    /// is not queued, done already, or held by a live worker.
    pub async fn run_session(
        &self,
        id: &SessionId,
        interrupt: &Interrupt,
    ) -> Result<Option<JobReport>, DistillError> {
        self.claim_and_process(id, self.settings.lease, interrupt)
            .await
    }

    /// [`Distiller::run_session`] that also takes the job over from a
    /// worker that still holds its lease. For a caller that knows that
    /// worker is dead: an eval learn run holds its run's lock, and its jobs
    /// are claimed by nobody else, so a running job there was left by a
    /// killed process and need not wait out the lease.
    pub async fn take_over_session(
        &self,
        id: &SessionId,
        interrupt: &Interrupt,
    ) -> Result<Option<JobReport>, DistillError> {
        self.claim_and_process(id, Duration::ZERO, interrupt).await
    }

    async fn claim_and_process(
        &self,
        id: &SessionId,
        lease: Duration,
        interrupt: &Interrupt,
    ) -> Result<Option<JobReport>, DistillError> {
        let job = self.store()?.claim_distill_job(
            Some(id),
            &self.worker,
            lease,
            self.settings.max_attempts,
        )?;
        match job {
            Some(job) => Ok(Some(self.process(job, interrupt).await?)),
            None => Ok(None),
        }
    }

    /// Processes claimable jobs until none is left or `interrupt` fires.
    /// `each` sees every report as it is made.
    pub async fn run_pending(
        &self,
        interrupt: &Interrupt,
        mut each: impl FnMut(&JobReport),
    ) -> Result<Vec<JobReport>, DistillError> {
        let mut reports = Vec::new();
        while !interrupt.is_triggered() {
            let job = self.store()?.claim_distill_job(
                None,
                &self.worker,
                self.settings.lease,
                self.settings.max_attempts,
            )?;
            let Some(job) = job else {
                break;
            };
            let report = self.process(job, interrupt).await?;
            each(&report);
            reports.push(report);
        }
        Ok(reports)
    }

    /// A long-running worker: processes the queue, then polls it every
    /// `poll`, until `interrupt` fires.
    pub async fn watch(
        &self,
        poll: Duration,
        interrupt: &Interrupt,
        mut each: impl FnMut(&JobReport),
    ) -> Result<(), DistillError> {
        while !interrupt.is_triggered() {
            self.run_pending(interrupt, &mut each).await?;
            tokio::select! {
                _ = tokio::time::sleep(poll) => {}
                _ = interrupt.triggered() => break,
            }
        }
        Ok(())
    }

    async fn process(
        &self,
        job: DistillJob,
        interrupt: &Interrupt,
    ) -> Result<JobReport, DistillError> {
        let id = job.session_id.clone();
        tracing::info!(session = %id, attempt = job.attempts, worker = %self.worker, "distilling");
        let _heartbeat = Heartbeat::start(
            self.store_path.clone(),
            id.clone(),
            self.worker.clone(),
            self.settings.lease / 3,
        );
        let mut report = JobReport {
            session_id: id.clone(),
            attempt: job.attempts,
            outcome: JobOutcome::Released,
            written: Vec::new(),
            credited: Vec::new(),
            usage: Usage::default(),
            calls: 0,
        };
        let events: Vec<Event> = self
            .store()?
            .events(&id)?
            .into_iter()
            .map(|e| e.event)
            .collect();
        let facts = SessionFacts::from_events(&events);
        // A worker killed between a file write and its index update leaves
        // the index behind the files; hand edits too. Sync first.
        if let Err(err) = self.notes.index.sync() {
            tracing::warn!(%err, "cannot sync the note index before distilling");
        }
        let mut earlier: Vec<WrittenNote> =
            serde_json::from_value(job.notes_written.clone()).unwrap_or_default();
        report.credited = self.credit(&job, &facts, &earlier)?;

        let skip = if !facts.ended() {
            Some("the session has not ended".to_string())
        } else if facts.tool_calls == 0 {
            Some("the session made no tool call".to_string())
        } else {
            self.triage(&facts, &events)
        };
        if let Some(reason) = skip {
            let finished =
                self.store()?
                    .finish_distill_job(&id, &self.worker, &job.notes_written, &reason)?;
            report.outcome = if finished {
                JobOutcome::Skipped { reason }
            } else {
                JobOutcome::LostLease
            };
            return Ok(report);
        }

        let run = self
            .take_notes(&id, &facts, &events, &earlier, interrupt)
            .await;
        let store = self.store()?;
        let (outcome, written, usage, calls) = match run {
            Ok(run) => run,
            Err(err) => {
                let error = err.to_string();
                tracing::warn!(session = %id, %error, "distillation failed");
                store.fail_distill_job(&id, &self.worker, &error, self.settings.max_attempts)?;
                report.outcome = JobOutcome::Failed { error };
                return Ok(report);
            }
        };
        report.usage = usage;
        report.calls = calls;
        store.add_distill_usage(&id, &usage, calls)?;
        earlier.extend(written.iter().cloned());
        let all = serde_json::to_value(&earlier).unwrap_or_default();
        report.written = written;
        let owned = match outcome {
            LoopOutcome::Interrupted => {
                report.outcome = JobOutcome::Released;
                store.record_distill_progress(
                    &id,
                    &self.worker,
                    &all,
                    &credited_ids(&job, &report),
                )?;
                store.release_distill_job(&id, &self.worker)?
            }
            LoopOutcome::Failed { reason } => {
                report.outcome = JobOutcome::Failed {
                    error: reason.clone(),
                };
                store.record_distill_progress(
                    &id,
                    &self.worker,
                    &all,
                    &credited_ids(&job, &report),
                )?;
                store.fail_distill_job(&id, &self.worker, &reason, self.settings.max_attempts)?
            }
            other => {
                let summary = match other {
                    LoopOutcome::Finished { summary } => summary,
                    LoopOutcome::Stopped { reason } => reason,
                    _ => format!(
                        "stopped at the note-taker's cap of {} model calls",
                        self.settings.max_iterations
                    ),
                };
                report.outcome = JobOutcome::Done {
                    summary: summary.clone(),
                };
                store.finish_distill_job(&id, &self.worker, &all, &summary)?
            }
        };
        if !owned {
            tracing::warn!(session = %id, "another worker took this job over");
            report.outcome = JobOutcome::LostLease;
        }
        Ok(report)
    }

    /// Credits the notes the session read by its outcome, each once per
    /// session (what was credited is saved on the job after each note).
    fn credit(
        &self,
        job: &DistillJob,
        facts: &SessionFacts,
        written: &[WrittenNote],
    ) -> Result<Vec<(String, &'static str)>, DistillError> {
        let Some(verdict) = facts.verdict() else {
            return Ok(Vec::new());
        };
        let mut done = job.credited.clone();
        let mut credited = Vec::new();
        let notes_json = serde_json::to_value(written).unwrap_or_default();
        for id in &facts.read {
            if done.contains(id) {
                continue;
            }
            let helpful = verdict == Verdict::Helpful;
            match self.notes.tree.credit(id, helpful) {
                Ok(note) => {
                    if let Err(err) = self.notes.index.upsert(&note) {
                        tracing::warn!(%err, id, "credited note not re-indexed");
                    }
                    credited.push((id.clone(), if helpful { "helpful" } else { "harmful" }));
                }
                Err(quire_notes::Error::NotFound(_)) => {
                    tracing::info!(id, "a note the session read no longer exists");
                }
                Err(err) => return Err(err.into()),
            }
            done.push(id.clone());
            self.store()?.record_distill_progress(
                &job.session_id,
                &self.worker,
                &notes_json,
                &done,
            )?;
        }
        Ok(credited)
    }

    /// Runs the note-taker on the session's digest.
    async fn take_notes(
        &self,
        id: &SessionId,
        facts: &SessionFacts,
        events: &[Event],
        earlier: &[WrittenNote],
        interrupt: &Interrupt,
    ) -> Result<(LoopOutcome, Vec<WrittenNote>, Usage, u32), DistillError> {
        let mut config = (*self.config).clone();
        config.limits.max_iterations = self.settings.max_iterations;
        // The coding agent's repair text points at `finish`; this agent ends
        // with note_done.
        if let Some(text) = config.messages.get("notes_no_tool_call").cloned() {
            config.messages.insert("no_tool_call".into(), text);
        }
        let config = Arc::new(config);

        let store = self.store.clone();
        let (session, worker) = (id.clone(), self.worker.clone());
        let already: Vec<WrittenNote> = earlier.to_vec();
        let progress = Arc::new(move |written: &[WrittenNote]| {
            let mut all = already.clone();
            all.extend(written.iter().cloned());
            let value = serde_json::to_value(&all).unwrap_or_default();
            let saved = store
                .lock()
                .map_err(|_| "poisoned".to_string())
                .and_then(|s| {
                    let credited = s
                        .distill_job(&session)
                        .map_err(|e| e.to_string())?
                        .map(|j| j.credited)
                        .unwrap_or_default();
                    s.record_distill_progress(&session, &worker, &value, &credited)
                        .map_err(|e| e.to_string())
                });
            if let Err(err) = saved {
                tracing::warn!(%err, "cannot save distillation progress");
            }
        });
        let tools = NoteTools::new(
            self.notes.tree.clone(),
            self.notes.index.clone(),
            &facts.project,
            id.as_str(),
        )
        .with_progress(progress);
        let extensions: Vec<Arc<dyn Extension>> =
            vec![Arc::new(ProtocolExtension::new()), Arc::new(tools)];
        let agent = Agent::new(self.client.clone(), extensions, &config)?;

        let mut ctx = Ctx::new(config.clone(), Arc::new(LogSink));
        ctx.system_prompt = config.prompts.note_taker.trim().to_string();
        let options = DigestOptions::from_config(&config, self.redactor.clone());
        let mut first = digest(events, &options);
        let names = self.names_elsewhere(id, events);
        if !names.is_empty() {
            first.push_str("\n\n");
            first.push_str(&options.redactor.redact(&render(
                config.message("notes_digest_names"),
                &[("names", &names)],
            )));
        }
        if !earlier.is_empty() {
            let list: Vec<String> = earlier
                .iter()
                .map(|w| format!("- {} ({:?}): {}", w.id, w.action, w.title))
                .collect();
            first.push_str("\n\n");
            first.push_str(&render(
                config.message("notes_digest_resumed"),
                &[("notes", &list.join("\n"))],
            ));
        }
        let existing = self.existing_notes(&config, &facts.task, &facts.project);
        if !existing.is_empty() {
            first.push_str("\n\n");
            first.push_str(&render(
                config.message("notes_digest_existing"),
                &[("notes", &existing)],
            ));
        }
        ctx.push_user(MessageSource::Digest, first)
            .map_err(CoreError::from)?;
        agent.start(&mut ctx).await?;
        let outcome = agent.run(&mut ctx, interrupt).await?;
        let written = ctx.state.get_mut::<NoteTakerState>().written.clone();
        Ok((outcome, written, ctx.usage, ctx.iteration))
    }
}

impl Distiller {
    /// Where the definitions the session's change touched are named in the
    /// project (stubs, export lists, docs, tests), one line each, read from
    /// the session's edited copy (or its workspace when the copy is gone);
    /// empty when there is no change or no tree to read.
    fn names_elsewhere(&self, id: &SessionId, events: &[Event]) -> String {
        let Some(diff) = events.iter().rev().find_map(|e| match &e.kind {
            EventKind::Patch { diff, .. } if !diff.trim().is_empty() => Some(diff.as_str()),
            _ => None,
        }) else {
            return String::new();
        };
        let session = match self.store().map(|s| s.get_session(id)) {
            Ok(Ok(Some(session))) => session,
            _ => return String::new(),
        };
        let root = [&session.work_dir, &session.workspace]
            .into_iter()
            .map(PathBuf::from)
            .find(|p| p.is_dir());
        let Some(root) = root else {
            return String::new();
        };
        quire_tools::changed_definitions_named_elsewhere(&root, diff)
            .iter()
            .map(names_line)
            .collect::<Vec<_>>()
            .join("\n")
    }
}

/// `- name (defined in f.py; quoted there: `'name',`): f.pyi (2, first:
/// `def name() -> int: ...`), docs/api.rst (1: `.. autofunction:: name`)`.
fn names_line(m: &quire_tools::Mentions) -> String {
    let mut line = format!("- {} (defined in {}", m.name, m.defined_in);
    if let Some(quoted) = &m.quoted_in_own_file {
        line.push_str(&format!("; quoted there: `{}`", quoted.first_line));
        if quoted.times > 1 {
            line.push_str(&format!(" and {} more", quoted.times - 1));
        }
    }
    line.push_str("): ");
    if m.elsewhere.is_empty() {
        line.push_str("named in no other file");
    } else {
        let files: Vec<String> = m
            .elsewhere
            .iter()
            .map(|p| match p.times {
                1 => format!("{} (1: `{}`)", p.file, p.first_line),
                n => format!("{} ({n}, first: `{}`)", p.file, p.first_line),
            })
            .collect();
        line.push_str(&files.join(", "));
        if m.more_files > 0 {
            line.push_str(&format!(", and {} more files", m.more_files));
        }
    }
    line
}

/// Notes of the project listed in the digest at most.
const EXISTING_NOTES: usize = 6;
/// Characters of a project map's body shown in the digest: far more than
/// a map should hold, since the note-taker edits it with `note_update` and
/// must see its last lines (one spent a call reading a map cut here at 2k).
const MAP_BODY_CHARS: usize = 6_000;

impl Distiller {
    /// A session with nothing new to teach is skipped without a model call
    /// (see [`crate::triage`]).
    fn triage(&self, facts: &SessionFacts, events: &[Event]) -> Option<String> {
        let project = facts.project.trim();
        if project.is_empty() {
            return None;
        }
        let filter = quire_notes::NoteFilter {
            project: Some(project.to_string()),
            status: Some(quire_notes::Status::Active),
            ..quire_notes::NoteFilter::default()
        };
        let notes = self
            .notes
            .tree
            .list(&filter)
            .map_err(|err| tracing::warn!(%err, "cannot list the project's notes for triage"))
            .ok()?;
        crate::triage::nothing_to_learn(facts, events, &notes, self.config.notes.triage_max_calls)
    }

    /// The notes the note-taker would otherwise search for first: the best
    /// matches for the task, a project map (`architecture`) with its text,
    /// so that it can update instead of duplicate without a search or a
    /// read (each call resends the digest).
    fn existing_notes(&self, config: &AgentConfig, task: &str, project: &str) -> String {
        let project = project.trim();
        let hits = self
            .notes
            .index
            // Threshold 0: the note-taker should see every note the task
            // touches (the map first), not only those a session is shown.
            .search_for_start(
                task,
                (!project.is_empty()).then_some(project),
                EXISTING_NOTES,
                0.0,
            )
            .map_err(|err| tracing::warn!(%err, "cannot list existing notes for the digest"))
            .unwrap_or_default();
        let mut lines = Vec::new();
        for hit in hits {
            lines.push(render(
                config.message("notes_retrieved_entry"),
                &[
                    ("id", &hit.id),
                    ("kind", hit.kind.as_str()),
                    ("title", &hit.title),
                    ("description", &hit.description),
                    ("stale", ""),
                ],
            ));
            if hit.kind == quire_notes::Kind::Architecture
                && let Ok(Some(note)) = self.notes.tree.get(&hit.id)
                && let Some((body, cut)) = cut_at_line(&note.body, MAP_BODY_CHARS)
            {
                // Unindented between fences, as sessions see it: the
                // note-taker copies these lines into note_update's `old`,
                // which matches the stored body exactly (one copied an
                // indent this added, and its update could not apply).
                lines.push("----".to_string());
                lines.extend(body.lines().map(str::to_string));
                if cut {
                    lines.push("…".to_string());
                }
                lines.push("----".to_string());
            }
        }
        lines.join("\n")
    }
}

fn credited_ids(job: &DistillJob, report: &JobReport) -> Vec<String> {
    let mut ids = job.credited.clone();
    ids.extend(report.credited.iter().map(|(id, _)| id.clone()));
    ids
}

/// The note-taker's events are not a session of their own; they go to the
/// log (debug level) so a run can be followed with `-vv`.
struct LogSink;

impl EventSink for LogSink {
    fn emit(&self, event: &Event) -> Result<(), SinkError> {
        match &event.kind {
            EventKind::ToolCallStarted {
                name, arguments, ..
            } => tracing::debug!(tool = %name, %arguments, "note-taker call"),
            EventKind::ToolResult {
                name,
                views,
                is_error,
                ..
            } => {
                tracing::debug!(tool = %name, is_error, result = %views.agent_view, "note-taker result")
            }
            EventKind::ModelResponse { content, .. } if !content.trim().is_empty() => {
                tracing::debug!(%content, "note-taker says")
            }
            _ => {}
        }
        Ok(())
    }
}

/// Renews a job's lease from a thread of its own (with its own
/// connection), so a slow model call does not let the lease lapse.
struct Heartbeat {
    stop: Option<mpsc::Sender<()>>,
    handle: Option<JoinHandle<()>>,
}

impl Heartbeat {
    fn start(path: PathBuf, id: SessionId, worker: String, every: Duration) -> Heartbeat {
        let (tx, rx) = mpsc::channel::<()>();
        let every = every.max(Duration::from_millis(200));
        let handle = std::thread::spawn(move || {
            let store = match Store::open(&path) {
                Ok(s) => s,
                Err(err) => {
                    tracing::warn!(%err, "no heartbeat for the distillation job");
                    return;
                }
            };
            loop {
                match rx.recv_timeout(every) {
                    Err(RecvTimeoutError::Timeout) => {
                        match store.heartbeat_distill_job(&id, &worker) {
                            Ok(true) => {}
                            Ok(false) => {
                                tracing::warn!(session = %id, "lost the distillation job's lease");
                                return;
                            }
                            Err(err) => tracing::warn!(%err, "heartbeat failed"),
                        }
                    }
                    Ok(()) | Err(RecvTimeoutError::Disconnected) => return,
                }
            }
        });
        Heartbeat {
            stop: Some(tx),
            handle: Some(handle),
        }
    }
}

impl Drop for Heartbeat {
    fn drop(&mut self) {
        drop(self.stop.take());
        if let Some(handle) = self.handle.take() {
            let _ = handle.join();
        }
    }
}
