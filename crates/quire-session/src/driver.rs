use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use quire_config::{AgentConfig, render};
use quire_core::{Agent, Ctx, EventSink, Interrupt, LoopOutcome, pair_tool_calls, rebuild_history};
use quire_llm::ModelClient;
use quire_notes::NotesPaths;
use quire_store::{NewSession, SessionRow, SessionStatus, Store, Totals};
use quire_test_digest::digest_test_output;
use quire_types::{ApprovalDecision, EventKind, MessageSource, Redactor, SessionId, TestPhase};
use quire_workspace::{SessionCopy, run_command, unified_diff};

use crate::approval::{Approver, Decision, ProposedChange};
use crate::error::SessionError;
use crate::home::DataHome;
use crate::registry::{SessionParts, build_extensions, start_mcp};
use crate::sink::StoreSink;
use crate::workspace_info::WorkspaceInfo;

/// How a session is driven: who approves, whether approved changes are
/// applied, the stop signal, and who else watches the events.
pub struct RunOptions {
    pub approver: Arc<dyn Approver>,
    /// `false` (`--no-apply`): save the approved patch instead of applying it.
    pub apply: bool,
    pub interrupt: Interrupt,
    /// Extra event consumers, e.g. the terminal renderer.
    pub sinks: Vec<Arc<dyn EventSink>>,
}

/// How a session ended, for the terminal and the eval runner.
#[derive(Debug, Clone)]
pub struct SessionReport {
    pub id: SessionId,
    pub status: SessionStatus,
    /// Why it ended, typed (the eval runner's failure categories come from it).
    pub reason: EndReason,
    pub outcome: String,
    pub totals: Totals,
    /// The final change as a unified diff, when the agent finished with one.
    pub diff: Option<String>,
    pub patch_path: Option<PathBuf>,
    pub applied: bool,
    pub work_dir: PathBuf,
}

/// What a session leaves for the note-taker when it ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NotesWrites {
    /// A job for whoever distills with this config (`quire notes distill`).
    Queue,
    /// A job bound to this runner's notes tree, claimed only by session
    /// (an eval learn run distills its own sessions into its own tree).
    QueueForTree,
    /// Nothing: the notes are read-only for these sessions.
    ReadOnly,
}

/// Creates and resumes sessions for one agent configuration.
pub struct Runner {
    home: DataHome,
    config: Arc<AgentConfig>,
    client: Arc<dyn ModelClient>,
    /// Answers compaction's summary call; see [`Runner::with_summary_client`].
    summary_client: Option<Arc<dyn ModelClient>>,
    store: Arc<Mutex<Store>>,
    /// Secrets (the model key, `notes.secret_env`) kept out of the store and notes.
    redactor: Redactor,
    /// The notes sessions see: the config's, unless [`Runner::with_notes`].
    notes: NotesPaths,
    notes_writes: NotesWrites,
}

/// A session in progress: everything the drive loop needs.
struct Live {
    id: SessionId,
    info: WorkspaceInfo,
    copy: Arc<SessionCopy>,
    agent: Agent,
    ctx: Ctx,
    started: Instant,
    elapsed_before: u64,
}

impl Runner {
    pub fn new(
        home: DataHome,
        config: Arc<AgentConfig>,
        client: Arc<dyn ModelClient>,
    ) -> Result<Runner, SessionError> {
        crate::registry::check_texts(&config)?;
        let redactor = config.secret_redactor();
        let store = Store::open(&home.db_path())?.with_redactor(redactor.clone());
        let notes = home.notes_paths(&config);
        Ok(Runner {
            home,
            config,
            client,
            summary_client: None,
            store: Arc::new(Mutex::new(store)),
            redactor,
            notes,
            notes_writes: NotesWrites::Queue,
        })
    }

    /// Sessions read (and, per `writes`, leave jobs for) this notes tree
    /// instead of the config's: an eval run's own notes.
    pub fn with_notes(mut self, paths: NotesPaths, writes: NotesWrites) -> Runner {
        self.notes = paths;
        self.notes_writes = writes;
        self
    }

    /// Uses `client` for compaction's summary call instead of the default
    /// (the session's client, or one built for `context.summary_model`).
    pub fn with_summary_client(mut self, client: Arc<dyn ModelClient>) -> Runner {
        self.summary_client = Some(client);
        self
    }

    /// The summary client: the one given, else the session's own unless
    /// `context.summary_model` names another model, then a client for that
    /// model with the same provider, endpoint and key.
    fn summary_client(&self) -> Arc<dyn ModelClient> {
        if let Some(client) = &self.summary_client {
            return client.clone();
        }
        let model = self.config.context.summary_model.trim();
        if model.is_empty() || model == self.client.model() {
            return self.client.clone();
        }
        let m = &self.config.model;
        let provider = match m.provider {
            quire_config::Provider::OpenAi => quire_llm::Provider::OpenAi,
            quire_config::Provider::Anthropic => quire_llm::Provider::Anthropic,
        };
        let mut settings = quire_llm::ClientSettings::new(provider, model, m.base_url.clone());
        settings.api_key_env = m.api_key_env.clone();
        settings.api_key = (!m.api_key_env.is_empty())
            .then(|| std::env::var(&m.api_key_env).ok())
            .flatten()
            .filter(|k| !k.is_empty());
        settings.request_timeout = Duration::from_secs(m.request_timeout_secs);
        settings.idle_timeout = Duration::from_secs(m.stream_idle_timeout_secs);
        settings.stream = m.stream;
        settings.max_attempts = m.max_attempts.max(1);
        settings.retry_base_delay = Duration::from_millis(m.retry_base_delay_ms);
        settings.retry_max_delay = Duration::from_millis(m.retry_max_delay_ms);
        match quire_llm::build_client(settings) {
            Ok(client) => client,
            Err(err) => {
                tracing::warn!(%err, model, "cannot build the summary client; using the session's model");
                self.client.clone()
            }
        }
    }

    pub fn store(&self) -> Arc<Mutex<Store>> {
        self.store.clone()
    }

    fn with_store<T>(
        &self,
        f: impl FnOnce(&Store) -> Result<T, quire_store::StoreError>,
    ) -> Result<T, SessionError> {
        let store = self.store.lock().map_err(|_| SessionError::StorePoisoned)?;
        Ok(f(&store)?)
    }

    fn sink(&self, id: &SessionId, extra: &[Arc<dyn EventSink>]) -> Arc<dyn EventSink> {
        let mut sinks: Vec<Arc<dyn EventSink>> =
            vec![Arc::new(StoreSink::new(self.store.clone(), id.clone()))];
        sinks.extend(extra.iter().cloned());
        Arc::new(sinks)
    }

    /// Starts a new session on a workspace and drives it to its end.
    pub async fn run(
        &self,
        info: WorkspaceInfo,
        options: RunOptions,
    ) -> Result<SessionReport, SessionError> {
        let id = SessionId::new();
        let dir = self.home.session_dir(id.as_str());
        let work = dir.join("work");
        let copy = SessionCopy::create(&info.root, &work)?;
        copy.save_manifest(&dir.join("manifest.json"))?;
        let copy = Arc::new(copy);
        self.with_store(|s| {
            s.create_session(&NewSession {
                id: id.clone(),
                project: info.project.clone(),
                workspace: info.root.display().to_string(),
                work_dir: work.display().to_string(),
                task: info.task.clone(),
                agent: self.config.name.clone(),
                config_hash: self.config.hash.clone(),
                model: self.client.model().to_string(),
                started_at: None,
                parent_id: None,
                metadata: serde_json::json!({ "test_command": info.test_command }),
            })
        })?;
        let _lock = lock_session(&dir)?;
        let mut ctx = Ctx::new(self.config.clone(), self.sink(&id, &options.sinks));
        ctx.emit(EventKind::SessionStarted {
            task: info.task.clone(),
            workspace: info.root.display().to_string(),
            project: info.project.clone(),
            agent: self.config.name.clone(),
            config_hash: self.config.hash.clone(),
            model: self.client.model().to_string(),
        })?;
        ctx.emit(EventKind::SystemPrompt {
            content: ctx.system_prompt.clone(),
        })?;
        let (enforced, detail) = quire_tools::sandbox_note(&self.config);
        ctx.emit(EventKind::Sandbox { enforced, detail })?;
        let first = self.first_message(&info, &copy);
        ctx.push_user(MessageSource::Task, first)?;
        let agent = self.agent(&id, &copy, &info, &options.approver).await?;
        agent.start(&mut ctx).await?;
        let mut live = Live {
            id,
            info,
            copy,
            agent,
            ctx,
            started: Instant::now(),
            elapsed_before: 0,
        };
        self.drive(&mut live, &options).await
    }

    /// Continues a session that was interrupted or killed, from its trajectory.
    pub async fn resume(
        &self,
        id_prefix: &str,
        options: RunOptions,
    ) -> Result<SessionReport, SessionError> {
        let row = self
            .with_store(|s| s.find_session(id_prefix))?
            .ok_or_else(|| SessionError::SessionNotFound(id_prefix.to_string()))?;
        check_resumable(&row)?;
        let dir = self.home.session_dir(row.id.as_str());
        let _lock = lock_session(&dir)?;
        restore_unverified_apply(&dir.join("apply-backup"))?;
        let events = self.with_store(|s| s.events(&row.id))?;
        let events: Vec<_> = events.into_iter().map(|e| e.event).collect();
        let copy = SessionCopy::open(
            Path::new(&row.workspace),
            Path::new(&row.work_dir),
            &dir.join("manifest.json"),
        )?;
        let copy = Arc::new(copy);
        let test_command = row
            .metadata
            .get("test_command")
            .and_then(|v| v.as_str())
            .map(str::to_string);
        let info = WorkspaceInfo {
            root: PathBuf::from(&row.workspace),
            task: row.task.clone(),
            guidance: None,
            test_command,
            project: row.project.clone(),
        };
        self.with_store(|s| s.set_session_status(&row.id, SessionStatus::Running))?;
        let mut ctx = Ctx::new(self.config.clone(), self.sink(&row.id, &options.sinks));
        ctx.messages = rebuild_history(&events);
        let repaired = pair_tool_calls(&mut ctx.messages, self.config.message("call_interrupted"));
        if !repaired.is_empty() {
            ctx.emit(EventKind::HistoryReplaced {
                reason: format!("resume: closed {} unanswered tool call(s)", repaired.len()),
                messages: ctx.messages.clone(),
            })?;
        }
        ctx.iteration = row.totals.iterations;
        ctx.usage = row.totals.usage;
        ctx.tool_calls = row.totals.tool_calls;
        let agent = self.agent(&row.id, &copy, &info, &options.approver).await?;
        agent.start(&mut ctx).await?;
        let mut live = Live {
            id: row.id.clone(),
            info,
            copy,
            agent,
            ctx,
            started: Instant::now(),
            elapsed_before: row.totals.elapsed_ms,
        };
        self.drive(&mut live, &options).await
    }

    async fn agent(
        &self,
        id: &SessionId,
        copy: &Arc<SessionCopy>,
        info: &WorkspaceInfo,
        approver: &Arc<dyn Approver>,
    ) -> Result<Agent, SessionError> {
        let command_approver: Arc<dyn quire_tools::CommandApprover> =
            Arc::new(crate::approval::CommandApproval(approver.clone()));
        let parts = SessionParts {
            copy: copy.clone(),
            test_command: info.test_command.clone(),
            session_dir: self.home.session_dir(id.as_str()),
            summary_client: self.summary_client(),
            task: info.task.clone(),
            project: info.project.clone(),
            notes: self.notes.clone(),
            redactor: self.redactor.clone(),
            command_approver: command_approver.clone(),
            mcp: start_mcp(&self.config, copy, command_approver, self.redactor.clone()).await,
        };
        let extensions = build_extensions(&self.config, &parts)?;
        Ok(Agent::new(self.client.clone(), extensions, &self.config)?)
    }

    fn first_message(&self, info: &WorkspaceInfo, copy: &SessionCopy) -> String {
        let guidance = info
            .guidance
            .as_deref()
            .map(|g| render(self.config.message("guidance"), &[("content", g.trim())]))
            .unwrap_or_default();
        let tree = quire_tools::render_tree(copy, 3, self.config.limits.list_max_entries as usize);
        let test_command = info.test_command.clone().unwrap_or_else(|| "none".into());
        render(
            &self.config.prompts.task,
            &[
                ("task", &info.task),
                ("guidance", &guidance),
                ("project", &info.project),
                ("test_command", &test_command),
                ("tree", tree.trim_end()),
            ],
        )
    }

    /// The loop around the loop: run the agent, review its change, apply and
    /// verify, and go back to the agent with feedback or failures.
    async fn drive(
        &self,
        live: &mut Live,
        options: &RunOptions,
    ) -> Result<SessionReport, SessionError> {
        let mut post_apply_failures = 0;
        loop {
            let outcome = match live.agent.run(&mut live.ctx, &options.interrupt).await {
                Ok(outcome) => outcome,
                Err(quire_core::CoreError::Model(err)) => {
                    let message = format!("model error: {err}");
                    live.ctx.emit(EventKind::Error {
                        message: message.clone(),
                    })?;
                    return self.end(live, EndReason::ModelError, message, None);
                }
                Err(err) => return Err(err.into()),
            };
            let summary = match outcome {
                LoopOutcome::Finished { summary } => summary,
                LoopOutcome::IterationCap => {
                    let message =
                        format!("iteration cap reached ({} model calls)", live.ctx.iteration);
                    return self.end(live, EndReason::IterationCap, message, None);
                }
                LoopOutcome::Stopped { reason } => {
                    return self.end(live, EndReason::Stopped, reason, None);
                }
                LoopOutcome::Failed { reason } => {
                    return self.end(live, EndReason::ProtocolFailure, reason, None);
                }
                LoopOutcome::Interrupted => {
                    let message = format!(
                        "interrupted; continue with `quire sessions resume {}`",
                        live.id
                    );
                    return self.end(live, EndReason::Interrupted, message, None);
                }
            };
            let changes = live.copy.changes()?;
            let diff = unified_diff(&changes);
            let files: Vec<String> = changes.iter().map(|c| c.path.clone()).collect();
            live.ctx.emit(EventKind::Patch {
                diff: diff.clone(),
                files: files.clone(),
            })?;
            if changes.is_empty() {
                return self.end(
                    live,
                    EndReason::NoChange,
                    format!("finished without changes: {summary}"),
                    None,
                );
            }
            let proposal = ProposedChange {
                session_id: live.id.to_string(),
                summary: summary.clone(),
                diff: diff.clone(),
                files,
            };
            let decision = tokio::select! {
                d = options.approver.review(&proposal) => d?,
                _ = options.interrupt.triggered() => {
                    return self.end(live, EndReason::Interrupted, "interrupted during review".into(), Some(diff));
                }
            };
            let (name, feedback) = match &decision {
                Decision::Approve => (ApprovalDecision::Approved, None),
                Decision::Reject => (ApprovalDecision::Rejected, None),
                Decision::Feedback(text) => (ApprovalDecision::Feedback, Some(text.clone())),
            };
            live.ctx.emit(EventKind::Approval {
                decision: name,
                feedback: feedback.clone(),
            })?;
            match decision {
                Decision::Reject => {
                    return self.end(
                        live,
                        EndReason::Rejected,
                        "change rejected by the user".into(),
                        Some(diff),
                    );
                }
                Decision::Feedback(text) => {
                    let message = render(
                        live.ctx.config.message("user_feedback"),
                        &[("feedback", &text)],
                    );
                    live.ctx.push_user(MessageSource::Feedback, message)?;
                    continue;
                }
                Decision::Approve if !options.apply => {
                    let path = self.home.session_dir(live.id.as_str()).join("change.patch");
                    write_atomic(&path, diff.as_bytes())?;
                    let mut report = self.end(
                        live,
                        EndReason::Saved,
                        format!("approved; patch saved to {}", path.display()),
                        Some(diff),
                    )?;
                    report.patch_path = Some(path);
                    return Ok(report);
                }
                Decision::Approve => {}
            }
            match self.apply_and_verify(live, &changes).await? {
                Verified::Applied => {
                    return self.end(
                        live,
                        EndReason::Applied,
                        format!("applied {} file(s): {summary}", changes.len()),
                        Some(diff),
                    );
                }
                Verified::Conflict(message) => {
                    return self.end(live, EndReason::ApplyConflict, message, Some(diff));
                }
                Verified::TestsFailed(digest) => {
                    post_apply_failures += 1;
                    if post_apply_failures > live.ctx.config.limits.max_post_apply_attempts {
                        let message = format!(
                            "post-apply tests failed {post_apply_failures} time(s); the original was restored"
                        );
                        return self.end(
                            live,
                            EndReason::PostApplyTestsFailed,
                            message,
                            Some(diff),
                        );
                    }
                    let message = render(
                        live.ctx.config.message("post_apply_failed"),
                        &[("digest", &digest)],
                    );
                    live.ctx
                        .push_user(MessageSource::PostApplyFailure, message)?;
                }
            }
        }
    }

    /// Applies the change to the original, runs the tests there, and rolls
    /// back exactly when they fail.
    async fn apply_and_verify(
        &self,
        live: &mut Live,
        changes: &[quire_workspace::FileChange],
    ) -> Result<Verified, SessionError> {
        let backup = self.home.session_dir(live.id.as_str()).join("apply-backup");
        let applied = match live.copy.apply_to_original(changes, &backup) {
            Ok(applied) => applied,
            Err(err) => return Ok(Verified::Conflict(format!("not applied: {err}"))),
        };
        let files: Vec<String> = changes.iter().map(|c| c.path.clone()).collect();
        live.ctx.emit(EventKind::Applied {
            files: files.clone(),
        })?;
        let Some(command) = live.info.test_command.clone() else {
            applied.commit()?;
            return Ok(Verified::Applied);
        };
        let tests = &live.ctx.config.tests;
        let opts = quire_workspace::RunOptions {
            timeout: Duration::from_secs(tests.timeout_secs),
            output_cap_bytes: tests.output_cap_bytes as usize,
            env: vec![("PYTHONDONTWRITEBYTECODE".into(), "1".into())],
            // Post-apply tests run in the original: confine writes to it.
            sandbox: quire_tools::process_sandbox(&live.ctx.config, &live.info.root),
        };
        let started = Instant::now();
        let output = run_command(&command, &live.info.root, &opts).await?;
        let digest = digest_test_output(&output.output, output.exit_code);
        let passed = output.exit_code == Some(0) && !output.timed_out;
        live.ctx.emit(EventKind::TestRun {
            phase: TestPhase::PostApply,
            command,
            exit_code: output.exit_code,
            passed: digest.passed,
            failed: digest.failed,
            timed_out: output.timed_out,
            digest: digest.render(),
            output: output.output.clone(),
            duration_ms: started.elapsed().as_millis() as u64,
        })?;
        if passed {
            applied.commit()?;
            return Ok(Verified::Applied);
        }
        applied.rollback()?;
        live.ctx.emit(EventKind::RolledBack {
            files,
            reason: "post-apply tests failed".into(),
        })?;
        Ok(Verified::TestsFailed(digest.render()))
    }

    fn end(
        &self,
        live: &mut Live,
        reason: EndReason,
        outcome: String,
        diff: Option<String>,
    ) -> Result<SessionReport, SessionError> {
        let status = reason.status();
        let applied = reason == EndReason::Applied;
        let ctx = &live.ctx;
        let totals = Totals {
            usage: ctx.usage,
            cost_usd: ctx.cost_usd(),
            iterations: ctx.iteration,
            tool_calls: ctx.tool_calls,
            elapsed_ms: live.elapsed_before + live.started.elapsed().as_millis() as u64,
        };
        ctx.emit(EventKind::SessionEnded {
            status,
            outcome: outcome.clone(),
            usage: totals.usage,
            iterations: totals.iterations,
            tool_calls: totals.tool_calls,
            elapsed_ms: totals.elapsed_ms,
            cost_usd: totals.cost_usd,
        })?;
        self.with_store(|s| s.finish_session(&live.id, status, Some(&outcome), &totals))?;
        // What the session learnt is distilled into notes later, by a worker
        // (`quire notes distill`); an interrupted session has not ended yet.
        let tree = self.notes.root.display().to_string();
        let job_tree = match self.notes_writes {
            NotesWrites::Queue => Some(None),
            NotesWrites::QueueForTree => Some(Some(tree.as_str())),
            NotesWrites::ReadOnly => None,
        };
        if live.ctx.config.notes.enabled
            && reason != EndReason::Interrupted
            && let Some(job_tree) = job_tree
            && let Err(err) = self.with_store(|s| s.queue_distill_job_into(&live.id, job_tree))
        {
            tracing::warn!(%err, "could not queue note distillation");
        }
        Ok(SessionReport {
            id: live.id.clone(),
            status,
            reason,
            outcome,
            totals,
            diff,
            patch_path: None,
            applied,
            work_dir: live.copy.root().to_path_buf(),
        })
    }
}

/// Why a session ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EndReason {
    /// Approved, applied, and the tests passed in the original.
    Applied,
    /// Approved with `--no-apply`: the patch was saved.
    Saved,
    /// The agent finished without changing anything.
    NoChange,
    Rejected,
    /// The original changed under a touched file: nothing applied.
    ApplyConflict,
    /// Post-apply tests failed past the attempts allowed; original restored.
    PostApplyTestsFailed,
    IterationCap,
    /// An extension stopped the run (loop detected, …).
    Stopped,
    /// The model kept breaking the tool protocol.
    ProtocolFailure,
    ModelError,
    Interrupted,
}

impl EndReason {
    pub fn status(self) -> SessionStatus {
        match self {
            EndReason::Applied | EndReason::Saved | EndReason::NoChange => SessionStatus::Completed,
            EndReason::Rejected => SessionStatus::Rejected,
            EndReason::Interrupted => SessionStatus::Interrupted,
            _ => SessionStatus::Failed,
        }
    }
}

enum Verified {
    Applied,
    Conflict(String),
    TestsFailed(String),
}

/// A process killed between applying a change and verifying it leaves a
/// backup behind: the original goes back to how it was, so the resumed
/// session starts from a known state and can apply again.
fn restore_unverified_apply(backup: &Path) -> Result<(), SessionError> {
    if !quire_workspace::AppliedChange::pending(backup) {
        return Ok(());
    }
    tracing::warn!(backup = %backup.display(), "rolling back a change applied by a process that died before verifying it");
    let applied = quire_workspace::AppliedChange::load(backup)?;
    Ok(applied.rollback()?)
}

fn check_resumable(row: &SessionRow) -> Result<(), SessionError> {
    match row.status {
        SessionStatus::Running | SessionStatus::Interrupted | SessionStatus::Failed => Ok(()),
        ref other => Err(SessionError::NotResumable {
            id: row.id.to_string(),
            reason: format!("it ended as `{other}`"),
        }),
    }
}

fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), SessionError> {
    let io = |source| SessionError::Io {
        path: path.to_path_buf(),
        source,
    };
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(io)?;
    }
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, bytes).map_err(io)?;
    std::fs::rename(&tmp, path).map_err(io)?;
    Ok(())
}

/// One live process per session: a resume refuses while another process
/// still drives it.
fn lock_session(dir: &Path) -> Result<quire_workspace::PidLock, SessionError> {
    quire_workspace::PidLock::acquire(dir).map_err(|err| match err {
        quire_workspace::LockError::Held { pid, .. } => SessionError::NotResumable {
            id: dir
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default(),
            reason: format!("process {pid} is still running it"),
        },
        quire_workspace::LockError::Io { path, source } => SessionError::Io { path, source },
    })
}
