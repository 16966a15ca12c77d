use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Result;
use quire_core::EventSink;
use quire_session::{
    Approver, AutoApprove, RunOptions, Runner, SessionReport, WorkspaceChoices, WorkspaceInfo,
};
use quire_store::SessionStatus;

use crate::approve::TerminalApprover;
use crate::cli::{GlobalArgs, RecordingArgs, ReviewArgs, RunArgs};
use crate::client::{home, load_agent, model_client, redactor};
use crate::render::{Renderer, Style, TerminalSink};

pub async fn run(global: &GlobalArgs, args: RunArgs) -> Result<ExitCode> {
    let notes_off;
    let global = if args.no_notes {
        notes_off = without_notes(global);
        &notes_off
    } else {
        global
    };
    let config = load_agent(global, None)?;
    let notes = config.notes.clone();
    let choices = WorkspaceChoices {
        task: args.task,
        test_command: args.test_cmd,
        project: args.project,
    };
    let info = WorkspaceInfo::discover(&args.workspace, &choices, &config.tests.command)?;
    let redactor = redactor(&config);
    let runner = runner(global, config, &args.recording)?;
    let report = runner
        .run(info, options(global, &redactor, &args.review))
        .await?;
    let code = finish(global, &report);
    distill_in_background(global, &notes, &args.recording, &report);
    Ok(code)
}

pub async fn resume(
    global: &GlobalArgs,
    id: &str,
    review: ReviewArgs,
    recording: RecordingArgs,
) -> Result<ExitCode> {
    let config = load_agent(global, None)?;
    let notes = config.notes.clone();
    let redactor = redactor(&config);
    let runner = runner(global, config, &recording)?;
    let report = runner
        .resume(id, options(global, &redactor, &review))
        .await?;
    let code = finish(global, &report);
    distill_in_background(global, &notes, &recording, &report);
    Ok(code)
}

/// The same global arguments with notes turned off (`--no-notes`, replays).
pub fn without_notes(global: &GlobalArgs) -> GlobalArgs {
    let mut global = global.clone();
    global.overrides.push("notes.enabled=false".into());
    global
}

/// Starts `quire notes distill --session <id>` as a detached process (its
/// own process group, output to `<home>/logs/`), so the user gets control
/// back at once while the note-taker works. Replays never distill: the
/// recording holds no note-taker answers.
fn distill_in_background(
    global: &GlobalArgs,
    notes: &quire_config::NotesConfig,
    recording: &RecordingArgs,
    report: &SessionReport,
) {
    if !notes.enabled || !notes.auto_distill || recording.replay.is_some() {
        return;
    }
    let started = (|| -> Result<std::path::PathBuf> {
        let home = home(global)?;
        let pending = quire_store::Store::open(&home.db_path())?
            .distill_job(&report.id)?
            .is_some_and(|j| j.status == quire_store::DistillStatus::Pending);
        if !pending {
            anyhow::bail!("no pending job");
        }
        std::fs::create_dir_all(home.logs_dir())?;
        let log_path = home.logs_dir().join(format!("distill-{}.log", report.id));
        let log = std::fs::File::create(&log_path)?;
        let mut cmd = std::process::Command::new(std::env::current_exe()?);
        cmd.arg("--agent").arg(&global.agent);
        cmd.arg("--home").arg(home.root());
        for o in &global.overrides {
            cmd.arg("-c").arg(o);
        }
        for (flag, value) in [
            ("--provider", &global.provider),
            ("--model", &global.model),
            ("--base-url", &global.base_url),
        ] {
            if let Some(v) = value {
                cmd.arg(flag).arg(v);
            }
        }
        for _ in 0..global.verbose {
            cmd.arg("-v");
        }
        cmd.args(["notes", "distill", "--session", report.id.as_str()])
            .stdin(std::process::Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log);
        #[cfg(unix)]
        {
            use std::os::unix::process::CommandExt;
            // Its own group: Ctrl-C in this terminal does not reach it.
            cmd.process_group(0);
        }
        cmd.spawn()?;
        Ok(log_path)
    })();
    match started {
        Ok(log) => {
            if !global.quiet && !global.json {
                println!(
                    "notes: distilling this session in the background (log: {})",
                    log.display()
                );
            }
        }
        Err(err) => tracing::debug!(%err, "no background distillation"),
    }
}

pub fn runner(
    global: &GlobalArgs,
    config: quire_config::AgentConfig,
    recording: &RecordingArgs,
) -> Result<Runner> {
    let client = model_client(&config, recording)?;
    Ok(Runner::new(home(global)?, Arc::new(config), client)?)
}

/// Wires Ctrl-C to a clean stop: the first press interrupts the session
/// (saved, resumable); a second one exits at once.
pub fn options(
    global: &GlobalArgs,
    redactor: &quire_types::Redactor,
    review: &ReviewArgs,
) -> RunOptions {
    let interrupt = super::ctrl_c_interrupt("interrupting: saving the session");
    let style = Style::detect();
    let approver: Arc<dyn Approver> = if review.yes {
        Arc::new(AutoApprove)
    } else {
        Arc::new(TerminalApprover { style })
    };
    let mut sinks: Vec<Arc<dyn EventSink>> = Vec::new();
    if !global.quiet && !global.json {
        let preview = if global.verbose > 0 { None } else { Some(12) };
        sinks.push(Arc::new(TerminalSink::new(Renderer {
            style,
            preview_lines: preview,
            redactor: redactor.clone(),
        })));
    }
    RunOptions {
        approver,
        apply: !review.no_apply,
        interrupt,
        sinks,
    }
}

/// Prints the outcome (JSON with --json) and maps the status to an exit code.
pub fn finish(global: &GlobalArgs, report: &SessionReport) -> ExitCode {
    if global.json {
        let value = serde_json::json!({
            "session": report.id,
            "status": report.status,
            "reason": report.reason,
            "outcome": report.outcome,
            "totals": report.totals,
            "applied": report.applied,
            "patch_path": report.patch_path,
            "diff": report.diff,
        });
        println!(
            "{}",
            serde_json::to_string_pretty(&value).unwrap_or_default()
        );
    } else if global.quiet {
        println!("{} {}: {}", report.id, report.status, report.outcome);
    } else {
        println!("session id: {}", report.id);
    }
    match report.status {
        SessionStatus::Completed => ExitCode::SUCCESS,
        SessionStatus::Interrupted => ExitCode::from(130),
        _ => ExitCode::from(1),
    }
}
