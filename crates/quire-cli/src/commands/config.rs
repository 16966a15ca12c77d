use std::process::ExitCode;

use anyhow::Result;
use quire_session::KNOWN_EXTENSIONS;

use crate::cli::{ConfigCommand, GlobalArgs};
use crate::client::load_agent;

pub fn config(global: &GlobalArgs, cmd: ConfigCommand) -> Result<ExitCode> {
    match cmd {
        ConfigCommand::Check { agent } => check(global, agent.as_deref()),
    }
}

/// Validates an agent beyond parsing: extensions known, every tool an
/// extension needs has its words, and prints the resolved config.
fn check(global: &GlobalArgs, agent: Option<&str>) -> Result<ExitCode> {
    let config = load_agent(global, agent)?;
    let mut problems = Vec::new();
    for name in &config.extensions {
        if !KNOWN_EXTENSIONS.contains(&name.as_str()) {
            problems.push(format!(
                "unknown extension `{name}` (known: {})",
                KNOWN_EXTENSIONS.join(", ")
            ));
        }
    }
    problems.extend(quire_session::order_problems(&config));
    for (ext, tools) in quire_session::tools_by_extension() {
        if config.extensions.iter().any(|e| e == ext) {
            for tool in tools.iter() {
                if !config.tools.contains_key(*tool) {
                    problems.push(format!("extension `{ext}` needs tools/{tool}.toml"));
                }
            }
        }
    }
    // The note-taker is an agent of its own: its tools are not listed in
    // `extensions`, but it needs their words whenever notes are on.
    if config.notes.enabled {
        for tool in quire_notes::NOTE_TAKER_TOOLS {
            if !config.tools.contains_key(*tool) {
                problems.push(format!("the note-taker needs tools/{tool}.toml"));
            }
        }
        if config.prompts.note_taker.trim().is_empty() {
            problems.push("the note-taker prompt (prompts.note_taker) is empty".into());
        }
    }
    if global.json {
        let value = serde_json::json!({ "config": config, "problems": problems });
        println!("{}", serde_json::to_string_pretty(&value)?);
    } else {
        let source = config
            .dir
            .as_ref()
            .map_or("<builtin default>".to_string(), |d| d.display().to_string());
        println!("agent {} ({source}) · hash {}", config.name, config.hash);
        println!(
            "model: {:?} {} at {} (key in ${})",
            config.model.provider,
            config.model.model,
            config.model.base_url,
            config.model.api_key_env
        );
        println!("extensions: {}", config.extensions.join(" → "));
        println!(
            "tools: {}",
            config.tools.keys().cloned().collect::<Vec<_>>().join(", ")
        );
        println!(
            "system prompt: {} sections, {} chars",
            config.prompts.system.len(),
            config.system_prompt().len()
        );
        println!("{}", toml_view(&config)?);
        for p in &problems {
            println!("problem: {p}");
        }
    }
    if problems.is_empty() {
        if !global.json {
            println!("ok");
        }
        Ok(ExitCode::SUCCESS)
    } else {
        Ok(ExitCode::from(1))
    }
}

/// The settings (not the texts) as TOML, so overrides can be checked at a glance.
fn toml_view(config: &quire_config::AgentConfig) -> Result<String> {
    #[derive(serde::Serialize)]
    struct Settings<'a> {
        model: &'a quire_config::ModelConfig,
        limits: &'a quire_config::Limits,
        context: &'a quire_config::ContextConfig,
        tests: &'a quire_config::TestsConfig,
        finish: &'a quire_config::FinishConfig,
        notes: &'a quire_config::NotesConfig,
        pricing: &'a quire_config::Pricing,
    }
    let settings = Settings {
        model: &config.model,
        limits: &config.limits,
        context: &config.context,
        tests: &config.tests,
        finish: &config.finish,
        notes: &config.notes,
        pricing: &config.pricing,
    };
    Ok(toml::to_string(&settings)?)
}
