use std::process::ExitCode;

use anyhow::Result;

use crate::cli::{ConfigCommand, GlobalArgs};
use crate::client::load_agent;

pub fn config(global: &GlobalArgs, cmd: ConfigCommand) -> Result<ExitCode> {
    match cmd {
        ConfigCommand::Check { agent } => check(global, agent.as_deref()),
    }
}

/// Validates an agent beyond parsing (the extension list, every text its
/// tools render: the same check a session makes before it starts) and
/// prints the resolved config.
fn check(global: &GlobalArgs, agent: Option<&str>) -> Result<ExitCode> {
    let config = load_agent(global, agent)?;
    let problems = quire_session::config_problems(&config);
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
