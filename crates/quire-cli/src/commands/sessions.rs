use std::process::ExitCode;

use anyhow::{Result, anyhow};
use quire_store::{SessionFilter, SessionStatus, Store};
use quire_types::Redactor;

use crate::cli::{GlobalArgs, SessionsCommand};
use crate::client::home;
use crate::render::{Renderer, Style};

pub async fn sessions(global: &GlobalArgs, cmd: SessionsCommand) -> Result<ExitCode> {
    if let SessionsCommand::Resume {
        id,
        review,
        recording,
    } = cmd
    {
        return super::run::resume(global, &id, review, recording).await;
    }
    let store = Store::open(&home(global)?.db_path())?;
    match cmd {
        SessionsCommand::List {
            project,
            status,
            limit,
        } => list(global, &store, project, status, limit),
        SessionsCommand::Show { id, full } => show(&store, &id, full),
        SessionsCommand::Export { id } => export(&store, &id),
        SessionsCommand::Resume { .. } => unreachable!("handled above"),
    }
}

fn list(
    global: &GlobalArgs,
    store: &Store,
    project: Option<String>,
    status: Option<String>,
    limit: usize,
) -> Result<ExitCode> {
    let filter = SessionFilter {
        project,
        status: status.map(|s| s.parse::<SessionStatus>()).transpose()?,
        limit: Some(limit),
    };
    let rows = store.list_sessions(&filter)?;
    if global.json {
        println!("{}", serde_json::to_string_pretty(&rows)?);
        return Ok(ExitCode::SUCCESS);
    }
    if rows.is_empty() {
        println!("no sessions yet");
        return Ok(ExitCode::SUCCESS);
    }
    println!(
        "{:<26}  {:<19}  {:<11}  {:<16}  {:>9}  {:>5}  task",
        "id", "started", "status", "project", "tokens", "steps"
    );
    for row in rows {
        let task: String = row
            .task
            .lines()
            .next()
            .unwrap_or("")
            .chars()
            .take(50)
            .collect();
        println!(
            "{:<26}  {:<19}  {:<11}  {:<16}  {:>9}  {:>5}  {task}",
            row.id.as_str(),
            row.started_at.format("%Y-%m-%d %H:%M:%S"),
            row.status.as_str(),
            row.project.chars().take(16).collect::<String>(),
            row.totals.usage.prompt_tokens + row.totals.usage.completion_tokens,
            row.totals.iterations,
        );
    }
    Ok(ExitCode::SUCCESS)
}

fn show(store: &Store, id: &str, full: bool) -> Result<ExitCode> {
    let row = store
        .find_session(id)?
        .ok_or_else(|| anyhow!("no session matches `{id}`"))?;
    let renderer = Renderer {
        style: Style::detect(),
        preview_lines: if full { None } else { Some(20) },
        redactor: Redactor::new(),
    };
    println!(
        "session {} · {} · started {}",
        row.id,
        row.status,
        row.started_at.format("%Y-%m-%d %H:%M:%S UTC")
    );
    for stored in store.events(&row.id)? {
        if let Some(text) = renderer.render(&stored.event) {
            println!("{text}");
        }
    }
    if row.status == SessionStatus::Running || row.status == SessionStatus::Interrupted {
        println!(
            "(not ended: continue with `quire sessions resume {}`)",
            row.id
        );
    }
    Ok(ExitCode::SUCCESS)
}

fn export(store: &Store, id: &str) -> Result<ExitCode> {
    let row = store
        .find_session(id)?
        .ok_or_else(|| anyhow!("no session matches `{id}`"))?;
    let events = store.events(&row.id)?;
    let value = serde_json::json!({ "session": row, "events": events });
    println!("{}", serde_json::to_string_pretty(&value)?);
    Ok(ExitCode::SUCCESS)
}
