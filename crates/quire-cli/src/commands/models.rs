use std::process::ExitCode;

use anyhow::Result;

use crate::cli::{GlobalArgs, ModelsCommand};
use crate::client::{live_client, load_agent};

pub async fn models(global: &GlobalArgs, cmd: ModelsCommand) -> Result<ExitCode> {
    match cmd {
        ModelsCommand::Ping { agent } => ping(global, agent.as_deref()).await,
    }
}

async fn ping(global: &GlobalArgs, agent: Option<&str>) -> Result<ExitCode> {
    let config = load_agent(global, agent)?;
    let client = live_client(&config)?;
    let target = format!("{} at {}", config.model.model, config.model.base_url);
    match quire_llm::ping(client.as_ref()).await {
        Ok(report) => {
            if global.json {
                let value = serde_json::json!({
                    "ok": true,
                    "model": report.model,
                    "latency_ms": report.latency.as_millis() as u64,
                    "usage": report.usage,
                    "reply": report.reply,
                });
                println!("{}", serde_json::to_string_pretty(&value)?);
            } else {
                println!(
                    "ok: {} answered in {} ms · {} tokens in, {} out · reply {:?}",
                    report.model,
                    report.latency.as_millis(),
                    report.usage.prompt_tokens,
                    report.usage.completion_tokens,
                    report.reply
                );
            }
            Ok(ExitCode::SUCCESS)
        }
        Err(err) => {
            if global.json {
                let value =
                    serde_json::json!({ "ok": false, "target": target, "error": err.to_string() });
                println!("{}", serde_json::to_string_pretty(&value)?);
                Ok(ExitCode::from(1))
            } else {
                Err(anyhow::anyhow!("ping {target} failed: {err}"))
            }
        }
    }
}
