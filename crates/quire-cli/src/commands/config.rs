use std::process::ExitCode;

use anyhow::Result;

use crate::cli::{ConfigCommand, GlobalArgs};
use crate::client::load_agent;

pub async fn config(global: &GlobalArgs, cmd: ConfigCommand) -> Result<ExitCode> {
    match cmd {
        ConfigCommand::Check { agent } => check(global, agent.as_deref()).await,
    }
}

/// Validates an agent beyond parsing (the extension list, every text its
/// tools render: the same check a session makes before it starts) and
/// prints the resolved config.
async fn check(global: &GlobalArgs, agent: Option<&str>) -> Result<ExitCode> {
    let config = load_agent(global, agent)?;
    let mut problems = quire_session::config_problems(&config);
    // Each server is started once (here, in the current folder) to list
    // its tools; one the listed `mcp` extension cannot reach is a problem.
    let probes = quire_mcp::probe(&config, &std::env::current_dir()?).await;
    let mcp_listed = config.extensions.iter().any(|e| e == quire_mcp::NAME);
    if mcp_listed {
        problems.extend(probes.iter().filter_map(|p| {
            p.result
                .as_ref()
                .err()
                .map(|why| format!("MCP server `{}` could not be reached: {why}", p.server))
        }));
    }
    if global.json {
        let mcp: Vec<serde_json::Value> = probes
            .iter()
            .map(|p| match &p.result {
                Ok(tools) => serde_json::json!({ "server": p.server, "tools": tools }),
                Err(why) => serde_json::json!({ "server": p.server, "error": why }),
            })
            .collect();
        let value =
            serde_json::json!({ "config": config, "mcp_servers": mcp, "problems": problems });
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
        for probe in &probes {
            match &probe.result {
                Ok(tools) => {
                    let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
                    println!(
                        "mcp server {}: {} tool(s): {}",
                        probe.server,
                        tools.len(),
                        names.join(", ")
                    );
                }
                Err(why) => println!("mcp server {}: could not be reached: {why}", probe.server),
            }
        }
        if !probes.is_empty() && !mcp_listed {
            println!(
                "mcp servers are configured but `mcp` is not in `extensions`: sessions do not start them"
            );
        }
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
