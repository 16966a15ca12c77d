use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Result;
use quire_core::{EventSink, Interrupt};
use quire_session::{
    Approver, AutoApprove, RunOptions, Runner, SessionReport, WorkspaceChoices, WorkspaceInfo,
};
use quire_store::SessionStatus;

use crate::approve::TerminalApprover;
use crate::cli::{GlobalArgs, RecordingArgs, ReviewArgs, RunArgs};
use crate::client::{home, load_agent, model_client, redactor};
use crate::render::{Renderer, Style, TerminalSink};

pub async fn run(global: &GlobalArgs, args: RunArgs) -> Result<ExitCode> {
    let config = load_agent(global, None)?;
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
    Ok(finish(global, &report))
}

pub async fn resume(
    global: &GlobalArgs,
    id: &str,
    review: ReviewArgs,
    recording: RecordingArgs,
) -> Result<ExitCode> {
    let config = load_agent(global, None)?;
    let redactor = redactor(&config);
    let runner = runner(global, config, &recording)?;
    let report = runner
        .resume(id, options(global, &redactor, &review))
        .await?;
    Ok(finish(global, &report))
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
    let interrupt = Interrupt::new();
    let signal = interrupt.clone();
    tokio::spawn(async move {
        if tokio::signal::ctrl_c().await.is_ok() {
            eprintln!("\ninterrupting: saving the session (Ctrl-C again to quit at once)");
            signal.trigger();
            if tokio::signal::ctrl_c().await.is_ok() {
                std::process::exit(130);
            }
        }
    });
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
