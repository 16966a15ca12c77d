//! MCP tool servers as one extension (`mcp`): each `[mcp.servers.<name>]`
//! is started over stdio when the session starts, and its tools are offered
//! as `<name>__<tool>` with the server's description and input schema (an
//! agent folder may override the description and the error texts in
//! `tools/<name>__<tool>.toml`).
//!
//! Every call goes through the server's `approval`, a time limit, the
//! agent-view cap and the redactor, and is recorded like any tool call. A
//! server that cannot start, dies or hangs costs the session one clear
//! error for the model and one warning for the user, never the session.
//! With no servers configured the extension offers nothing and adds nothing
//! to requests.

mod error;
mod render;
mod server;

use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use quire_config::{AgentConfig, MCP_TOOL_SEPARATOR, McpApproval, McpServerConfig, render};
use quire_core::{Action, CoreError, Ctx, Extension, ToolOutput};
use quire_tools::{CommandApprover, cap_output};
use quire_types::{
    EventKind, ExtensionEvent, ExtensionPayload, Message, MessageSource, Redactor, ToolSpec,
};
use serde::{Deserialize, Serialize};

pub use error::McpError;

use crate::server::{Called, Connected};

/// The extension name used in agent.toml `extensions`.
pub const NAME: &str = "mcp";

/// The `messages.toml` keys this extension renders (a tool's own file may
/// override each under `[errors]`, without the `mcp_` prefix).
pub const MESSAGES: &[&str] = &[
    "mcp_not_started",
    "mcp_unavailable",
    "mcp_timeout",
    "mcp_declined",
    "mcp_unapproved",
    "mcp_failed",
    "mcp_tool_error",
    "mcp_cut",
];

/// The user view keeps more than the model's, but not without end.
const USER_VIEW_MAX_CHARS: usize = 200_000;

/// What became of one server at session start, for the trajectory.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct McpServerStatus {
    pub server: String,
    /// The tools offered to the model, by the names it sees.
    pub tools: Vec<String>,
    /// Why it is not available; `None` when it started.
    pub error: Option<String>,
}

impl ExtensionEvent for McpServerStatus {
    const EXTENSION: &'static str = NAME;
    const EVENT: &'static str = "server";
}

/// One server as `config check` sees it: its tools, or why not.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ServerProbe {
    pub server: String,
    pub result: Result<Vec<ToolSpec>, String>,
}

/// Starts each configured server, lists what it offers and stops it again.
pub async fn probe(config: &AgentConfig, cwd: &Path) -> Vec<ServerProbe> {
    let started = start_all(config, cwd).await;
    started
        .into_iter()
        .map(|(name, server_config, started)| ServerProbe {
            result: started.map(|connected| {
                offered(config, &name, &server_config, &connected)
                    .into_iter()
                    .map(|(spec, _)| spec)
                    .collect()
            }),
            server: name,
        })
        .collect()
}

async fn start_all(
    config: &AgentConfig,
    cwd: &Path,
) -> Vec<(String, McpServerConfig, Result<Connected, String>)> {
    let starts = config.mcp.servers.iter().map(|(name, server)| async move {
        let started = server::connect(server, cwd)
            .await
            .map_err(|err| err.to_string());
        (name.clone(), server.clone(), started)
    });
    futures::future::join_all(starts).await
}

/// The tools of a started server the config lets through, as the model
/// sees them, each with the name the server knows it by.
fn offered(
    config: &AgentConfig,
    name: &str,
    server: &McpServerConfig,
    connected: &Connected,
) -> Vec<(ToolSpec, String)> {
    let mut seen = HashSet::new();
    connected
        .tools
        .iter()
        .filter(|tool| {
            let tool = tool.name.as_ref();
            (server.enabled_tools.is_empty() || server.enabled_tools.iter().any(|t| t == tool))
                && !server.disabled_tools.iter().any(|t| t == tool)
        })
        .map(|tool| {
            let exposed = exposed_name(name, &tool.name);
            let description = config
                .tools
                .get(&exposed)
                .map(|t| t.description.trim().to_string())
                .filter(|d| !d.is_empty())
                .or_else(|| tool.description.as_ref().map(|d| d.trim().to_string()))
                .or_else(|| tool.title.clone())
                .unwrap_or_default();
            let mut parameters = tool.input_schema.as_ref().clone();
            // Providers want an object schema with properties, even an empty one.
            parameters
                .entry("type")
                .or_insert_with(|| serde_json::Value::String("object".into()));
            parameters
                .entry("properties")
                .or_insert_with(|| serde_json::Value::Object(Default::default()));
            let spec = ToolSpec {
                name: exposed,
                description,
                parameters: serde_json::Value::Object(parameters),
            };
            (spec, tool.name.to_string())
        })
        // Two names that differ only in characters made safe would be one
        // tool twice, which the loop refuses: the first one is kept.
        .filter(|(spec, tool)| {
            let fresh = seen.insert(spec.name.clone());
            if !fresh {
                tracing::warn!(
                    "MCP server `{name}`: tool `{tool}` is not offered, its name is taken as `{}`",
                    spec.name
                );
            }
            fresh
        })
        .collect()
}

/// `<server>__<tool>`, with characters providers refuse in tool names
/// replaced by `_`.
fn exposed_name(server: &str, tool: &str) -> String {
    let tool: String = tool
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    format!("{server}{MCP_TOOL_SEPARATOR}{tool}")
}

/// A started server during the session.
struct Live {
    name: String,
    config: McpServerConfig,
    connected: Connected,
    /// Set when it died: why, so every later call says so at once.
    down: Mutex<Option<String>>,
}

/// Which server runs a tool the model calls, and its name there.
struct Route {
    server: usize,
    tool: String,
}

/// The `mcp` extension: the session's MCP servers and their tools.
pub struct McpExtension {
    live: Vec<Live>,
    /// Servers that did not start, with the reason.
    failed: Vec<(String, String)>,
    statuses: Vec<McpServerStatus>,
    tools: Vec<ToolSpec>,
    routes: HashMap<String, Route>,
    approver: Arc<dyn CommandApprover>,
    redactor: Redactor,
    /// `first_use` tools the user approved in this session.
    approved: Mutex<HashSet<String>>,
}

impl McpExtension {
    /// The extension with nothing to offer (no servers configured).
    pub fn empty(approver: Arc<dyn CommandApprover>, redactor: Redactor) -> McpExtension {
        McpExtension {
            live: Vec::new(),
            failed: Vec::new(),
            statuses: Vec::new(),
            tools: Vec::new(),
            routes: HashMap::new(),
            approver,
            redactor,
            approved: Mutex::new(HashSet::new()),
        }
    }

    /// Starts every configured server at once, in `cwd` (the session copy).
    /// A server that fails is told to the user here (a warning) and to the
    /// model when the session starts; the others go on.
    pub async fn start(
        config: &AgentConfig,
        cwd: &Path,
        approver: Arc<dyn CommandApprover>,
        redactor: Redactor,
    ) -> McpExtension {
        let mut ext = McpExtension::empty(approver, redactor);
        for (name, server_config, started) in start_all(config, cwd).await {
            match started {
                Ok(connected) => {
                    let offered = offered(config, &name, &server_config, &connected);
                    let index = ext.live.len();
                    let mut names = Vec::new();
                    for (spec, tool) in offered {
                        names.push(spec.name.clone());
                        ext.routes.insert(
                            spec.name.clone(),
                            Route {
                                server: index,
                                tool,
                            },
                        );
                        ext.tools.push(spec);
                    }
                    tracing::info!(server = %name, tools = names.len(), "MCP server started");
                    ext.statuses.push(McpServerStatus {
                        server: name.clone(),
                        tools: names,
                        error: None,
                    });
                    ext.live.push(Live {
                        name,
                        config: server_config,
                        connected,
                        down: Mutex::new(None),
                    });
                }
                Err(reason) => {
                    let reason = ext.redactor.redact(&reason);
                    tracing::warn!(
                        "MCP server `{name}` could not be started ({reason}); the session goes on without it"
                    );
                    ext.statuses.push(McpServerStatus {
                        server: name.clone(),
                        tools: Vec::new(),
                        error: Some(reason.clone()),
                    });
                    ext.failed.push((name, reason));
                }
            }
        }
        ext
    }

    /// What became of each server at start.
    pub fn statuses(&self) -> &[McpServerStatus] {
        &self.statuses
    }

    async fn call(&self, ctx: &Ctx, exposed: &str, action: &Action) -> ToolOutput {
        let config = &ctx.config;
        let Some(route) = self.routes.get(exposed) else {
            let tools: Vec<&str> = self.tools.iter().map(|t| t.name.as_str()).collect();
            return ToolOutput::error(render(
                config.message("unknown_tool"),
                &[("name", exposed), ("tools", &tools.join(", "))],
            ));
        };
        let live = &self.live[route.server];
        let words = |key: &str, extra: &[(&str, &str)]| {
            let mut values = vec![("tool", exposed), ("server", live.name.as_str())];
            values.extend_from_slice(extra);
            render(text(config, exposed, key), &values)
        };
        if let Some(reason) = self.down_reason(live) {
            return ToolOutput::error(words("unavailable", &[("reason", &reason)]));
        }
        match self.approve(live, exposed, action).await {
            Approval::Go => {}
            Approval::Declined => return ToolOutput::error(words("declined", &[])),
            Approval::NobodyToAsk => return ToolOutput::error(words("unapproved", &[])),
        }
        let started = Instant::now();
        let limit = Duration::from_secs(live.config.call_timeout_secs);
        let peer = live.connected.peer();
        match server::call(&peer, &route.tool, action.args.clone(), limit).await {
            Called::Result(result) => {
                let output = render::result_text(&result);
                let header = format!(
                    "{} · {} · {} ms",
                    live.name,
                    route.tool,
                    started.elapsed().as_millis()
                );
                if result.is_error == Some(true) {
                    let message = words("tool_error", &[("output", &output)]);
                    let mut out = ToolOutput::error(message.clone());
                    out.user_view = format!("{header} · error\n{message}");
                    out
                } else {
                    ToolOutput::ok(output.clone(), format!("{header}\n{output}"))
                }
            }
            Called::TimedOut => {
                let secs = live.config.call_timeout_secs.to_string();
                tracing::warn!(
                    "MCP tool `{exposed}` did not answer within {secs} s; the call was abandoned"
                );
                ToolOutput::error(words("timeout", &[("secs", &secs)]))
            }
            Called::Closed => {
                let reason = format!("it exited{}", live.connected.stderr.suffix());
                let reason = self.redactor.redact(&reason);
                tracing::warn!(
                    "MCP server `{}` stopped ({reason}); the session goes on without it",
                    live.name
                );
                if let Ok(mut down) = live.down.lock() {
                    *down = Some(reason.clone());
                }
                ToolOutput::error(words("unavailable", &[("reason", &reason)]))
            }
            Called::Failed(error) => ToolOutput::error(words("failed", &[("error", &error)])),
        }
    }

    fn down_reason(&self, live: &Live) -> Option<String> {
        if let Some(reason) = live.down.lock().ok().and_then(|d| d.clone()) {
            return Some(reason);
        }
        live.connected
            .service
            .is_closed()
            .then(|| format!("it exited{}", live.connected.stderr.suffix()))
    }

    async fn approve(&self, live: &Live, exposed: &str, action: &Action) -> Approval {
        let remembered = || self.approved.lock().is_ok_and(|a| a.contains(exposed));
        match live.config.approval {
            McpApproval::Never => return Approval::Go,
            McpApproval::FirstUse if remembered() => return Approval::Go,
            McpApproval::FirstUse | McpApproval::Always => {}
        }
        let args = serde_json::Value::Object(action.args.clone());
        let question = format!("MCP tool {exposed} {args}");
        match self.approver.ask(&question).await {
            Some(true) => {
                if let Ok(mut approved) = self.approved.lock() {
                    approved.insert(exposed.to_string());
                }
                Approval::Go
            }
            Some(false) => Approval::Declined,
            None => Approval::NobodyToAsk,
        }
    }
}

enum Approval {
    Go,
    Declined,
    NobodyToAsk,
}

/// A tool's own error text if its file has one, else the agent's message.
fn text<'a>(config: &'a AgentConfig, tool: &str, key: &str) -> &'a str {
    config
        .tools
        .get(tool)
        .and_then(|t| t.errors.get(key))
        .map(String::as_str)
        .unwrap_or_else(|| config.message(&format!("mcp_{key}")))
}

#[async_trait]
impl Extension for McpExtension {
    fn name(&self) -> &str {
        NAME
    }

    fn tool_specs(&self) -> Vec<ToolSpec> {
        self.tools.clone()
    }

    /// Records what each server offers, and tells the model once (not again
    /// on resume) about each server that did not start.
    async fn on_start(&self, ctx: &mut Ctx) -> Result<(), CoreError> {
        for status in &self.statuses {
            match ExtensionPayload::new(status) {
                Ok(payload) => ctx.emit(EventKind::Extension(payload))?,
                Err(err) => tracing::warn!(%err, "cannot record an MCP server's status"),
            }
        }
        for (server, reason) in &self.failed {
            let note = render(
                ctx.config.message("mcp_not_started"),
                &[("server", server), ("reason", reason)],
            );
            let told = ctx
                .messages
                .iter()
                .any(|m| matches!(m, Message::User { content, .. } if *content == note));
            if !told {
                ctx.push_user(MessageSource::Reminder, note)?;
            }
        }
        Ok(())
    }

    async fn execute(&self, ctx: &mut Ctx, action: &Action) -> ToolOutput {
        let exposed = action.call.name.as_str();
        let mut out = self.call(ctx, exposed, action).await;
        let max = ctx.config.limits.tool_output_max_chars as usize;
        let cut = text(&ctx.config, exposed, "cut");
        out.agent_view = cap_output(&self.redactor.redact(&out.agent_view), max, cut);
        out.user_view = cap_output(
            &self.redactor.redact(&out.user_view),
            USER_VIEW_MAX_CHARS,
            cut,
        );
        out
    }
}

#[cfg(test)]
mod tests;
