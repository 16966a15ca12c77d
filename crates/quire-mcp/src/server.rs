//! One MCP server: started over stdio, its tools listed, calls made with a
//! time limit; what it printed on stderr kept for the reason it failed.

use std::collections::VecDeque;
use std::path::Path;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use quire_config::McpServerConfig;
use rmcp::model::{CallToolRequestParams, CallToolResult, Tool};
use rmcp::service::{Peer, RunningService, ServiceError};
use rmcp::transport::TokioChildProcess;
use rmcp::{RoleClient, ServiceExt};
use tokio::io::AsyncBufReadExt;

use crate::error::McpError;

/// Variables every server gets besides the ones its config names: enough
/// to find programs and a home, nothing that could hold a secret.
const BASE_ENV: &[&str] = &[
    "PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LC_ALL", "TERM", "TMPDIR", "TZ",
];

/// Lines of the server's stderr kept for error messages.
const STDERR_LINES: usize = 5;

/// The last lines a server wrote on stderr.
#[derive(Clone, Default)]
pub(crate) struct StderrTail(Arc<Mutex<VecDeque<String>>>);

impl StderrTail {
    fn push(&self, line: String) {
        if let Ok(mut lines) = self.0.lock() {
            if lines.len() == STDERR_LINES {
                lines.pop_front();
            }
            lines.push_back(line);
        }
    }

    /// `; stderr: …` for an error message, or nothing.
    pub(crate) fn suffix(&self) -> String {
        let lines = match self.0.lock() {
            Ok(lines) => lines.iter().cloned().collect::<Vec<_>>(),
            Err(_) => Vec::new(),
        };
        if lines.is_empty() {
            String::new()
        } else {
            format!("; its stderr: {}", lines.join(" | "))
        }
    }
}

/// A started server: the running client, its peer for calls, its tools.
pub(crate) struct Connected {
    pub service: RunningService<RoleClient, ()>,
    pub tools: Vec<Tool>,
    pub stderr: StderrTail,
}

impl Connected {
    pub(crate) fn peer(&self) -> Peer<RoleClient> {
        self.service.peer().clone()
    }
}

/// Starts the server in `cwd`, makes the handshake and lists its tools,
/// all within `startup_timeout_secs`. On failure the child is killed (the
/// transport's drop) and the error says what its stderr said.
pub(crate) async fn connect(config: &McpServerConfig, cwd: &Path) -> Result<Connected, McpError> {
    let mut command = tokio::process::Command::new(&config.command);
    command.args(&config.args).current_dir(cwd).env_clear();
    for name in BASE_ENV
        .iter()
        .copied()
        .chain(config.env.iter().map(String::as_str))
    {
        if let Ok(value) = std::env::var(name) {
            command.env(name, value);
        }
    }
    command.kill_on_drop(true);
    let (transport, stderr) = TokioChildProcess::builder(command)
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|source| McpError::Spawn {
            command: config.command.clone(),
            source,
        })?;
    let tail = StderrTail::default();
    let reader = stderr.map(|stderr| {
        let tail = tail.clone();
        tokio::spawn(async move {
            let mut lines = tokio::io::BufReader::new(stderr).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                tracing::debug!(target: "quire_mcp::stderr", "{line}");
                tail.push(line);
            }
        })
    });
    let limit = Duration::from_secs(config.startup_timeout_secs);
    let started = tokio::time::timeout(limit, async {
        let service =
            ().serve(transport)
                .await
                .map_err(|err| McpError::Handshake {
                    error: err.to_string(),
                    stderr: String::new(),
                })?;
        let tools = service
            .peer()
            .list_all_tools()
            .await
            .map_err(|err| McpError::ListTools {
                error: err.to_string(),
                stderr: String::new(),
            })?;
        Ok::<_, McpError>((service, tools))
    })
    .await;
    let failed = match started {
        Ok(Ok((service, tools))) => {
            return Ok(Connected {
                service,
                tools,
                stderr: tail,
            });
        }
        Ok(Err(err)) => err,
        Err(_) => McpError::StartupTimeout {
            secs: config.startup_timeout_secs,
            stderr: String::new(),
        },
    };
    // A server that died at once has said why on stderr: wait for it
    // briefly, so the reason carries it.
    if let Some(reader) = reader {
        let _ = tokio::time::timeout(Duration::from_millis(300), reader).await;
    }
    Err(failed.with_stderr(tail.suffix()))
}

/// How one call ended, before it is put into words.
pub(crate) enum Called {
    Result(CallToolResult),
    /// No answer within the call's limit; the server may still be alive.
    TimedOut,
    /// The connection is gone: the server exited or closed its pipes.
    Closed,
    /// The server answered the request with a protocol error.
    Failed(String),
}

pub(crate) async fn call(
    peer: &Peer<RoleClient>,
    tool: &str,
    args: serde_json::Map<String, serde_json::Value>,
    limit: Duration,
) -> Called {
    let params = CallToolRequestParams::new(tool.to_string()).with_arguments(args);
    match tokio::time::timeout(limit, peer.call_tool(params)).await {
        Err(_) => Called::TimedOut,
        Ok(Ok(result)) => Called::Result(result),
        Ok(Err(ServiceError::TransportClosed | ServiceError::TransportSend(_))) => Called::Closed,
        Ok(Err(ServiceError::Timeout { .. })) => Called::TimedOut,
        Ok(Err(err)) => Called::Failed(err.to_string()),
    }
}
