use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use quire_config::{AgentConfig, Loader, Override, locate_agent};
use quire_llm::{
    ClientSettings, ModelClient, Provider, RecordingClient, ReplayClient, build_client,
};
use quire_session::DataHome;
use quire_types::Redactor;

use crate::cli::{GlobalArgs, RecordingArgs};

/// Overrides in precedence order: `QUIRE__*` env, then `-c`, then shorthands.
pub fn overrides(global: &GlobalArgs) -> Result<Vec<Override>> {
    let mut all = Override::from_env();
    for spec in &global.overrides {
        all.push(Override::parse(spec)?);
    }
    let quoted = |v: &str| format!("\"{}\"", v.replace('\\', "\\\\").replace('"', "\\\""));
    if let Some(p) = &global.provider {
        all.push(Override::new("model.provider", &quoted(p), "--provider"));
        // Switching provider switches its usual endpoint and key variable too,
        // unless they are given explicitly.
        let provider = match p.as_str() {
            "anthropic" => Some(Provider::Anthropic),
            "openai" => Some(Provider::OpenAi),
            _ => None,
        };
        let given = |key: &str| {
            global
                .overrides
                .iter()
                .any(|o| o.trim_start().starts_with(key))
        };
        if let Some(provider) = provider {
            if global.base_url.is_none() && !given("model.base_url") {
                all.push(Override::new(
                    "model.base_url",
                    &quoted(provider.default_base_url()),
                    "--provider",
                ));
            }
            if !given("model.api_key_env") {
                all.push(Override::new(
                    "model.api_key_env",
                    &quoted(provider.default_api_key_env()),
                    "--provider",
                ));
            }
        }
    }
    if let Some(m) = &global.model {
        all.push(Override::new("model.model", &quoted(m), "--model"));
    }
    if let Some(u) = &global.base_url {
        all.push(Override::new("model.base_url", &quoted(u), "--base-url"));
    }
    Ok(all)
}

pub fn home(global: &GlobalArgs) -> Result<DataHome> {
    Ok(DataHome::resolve(global.home.as_deref())?)
}

/// Loads the agent named by `name` (or `--agent`) with every override applied.
pub fn load_agent(global: &GlobalArgs, name: Option<&str>) -> Result<AgentConfig> {
    let name = name.unwrap_or(&global.agent);
    let mut search: Vec<PathBuf> = vec![PathBuf::from("agents")];
    if let Ok(home) = home(global) {
        search.push(home.agents_dir());
    }
    let source = locate_agent(name, &search)?;
    let config = Loader::new(overrides(global)?).load(&source)?;
    // Logs mask this config's secrets from now on, whatever the command.
    redactor(&config);
    Ok(config)
}

/// The client the config describes, wrapped for `--record` or replaced by
/// `--replay`.
pub fn model_client(
    config: &AgentConfig,
    recording: &RecordingArgs,
) -> Result<Arc<dyn ModelClient>> {
    if let Some(path) = &recording.replay {
        let replay = ReplayClient::open(path)
            .with_context(|| format!("cannot open the recording {}", path.display()))?;
        return Ok(Arc::new(replay));
    }
    let client = live_client(config)?;
    Ok(match &recording.record {
        Some(path) => {
            Arc::new(RecordingClient::new(client, path.clone()).with_redactor(redactor(config)))
        }
        None => client,
    })
}

pub fn live_client(config: &AgentConfig) -> Result<Arc<dyn ModelClient>> {
    let m = &config.model;
    let provider = match m.provider {
        quire_config::Provider::OpenAi => Provider::OpenAi,
        quire_config::Provider::Anthropic => Provider::Anthropic,
    };
    let api_key = if m.api_key_env.is_empty() {
        None
    } else {
        std::env::var(&m.api_key_env).ok().filter(|k| !k.is_empty())
    };
    if api_key.is_none() && needs_key(&m.base_url) {
        bail!(
            "no API key: set ${} (or point --base-url at a local server such as Ollama)",
            if m.api_key_env.is_empty() {
                "the variable named by model.api_key_env"
            } else {
                &m.api_key_env
            }
        );
    }
    let settings = ClientSettings {
        provider,
        model: m.model.clone(),
        base_url: m.base_url.clone(),
        api_key_env: m.api_key_env.clone(),
        api_key,
        request_timeout: Duration::from_secs(m.request_timeout_secs),
        idle_timeout: Duration::from_secs(m.stream_idle_timeout_secs),
        stream: m.stream,
        max_attempts: m.max_attempts.max(1),
        retry_base_delay: Duration::from_millis(m.retry_base_delay_ms),
        retry_max_delay: Duration::from_millis(m.retry_max_delay_ms),
        extra_headers: Vec::new(),
    };
    Ok(build_client(settings)?)
}

/// Hosted APIs need a key; local servers (loopback) usually don't.
fn needs_key(base_url: &str) -> bool {
    let host = base_url.split("://").nth(1).unwrap_or(base_url);
    !(host.starts_with("127.")
        || host.starts_with("localhost")
        || host.starts_with("[::1]")
        || host.starts_with("0.0.0.0"))
}

/// Masks the model key and the values of `notes.secret_env`; logs on
/// stderr mask them from here on too.
pub fn redactor(config: &AgentConfig) -> Redactor {
    let redactor = config.secret_redactor();
    crate::logging::add_redactor(&redactor);
    redactor
}
