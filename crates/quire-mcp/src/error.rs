/// Why an MCP server could not be used. Shown to the user and, in the
/// agent's words (`mcp_not_started`), to the model.
#[derive(Debug, thiserror::Error)]
pub enum McpError {
    #[error("cannot start `{command}`: {source}")]
    Spawn {
        command: String,
        #[source]
        source: std::io::Error,
    },
    #[error("the MCP handshake failed: {error}{stderr}")]
    Handshake { error: String, stderr: String },
    #[error("listing its tools failed: {error}{stderr}")]
    ListTools { error: String, stderr: String },
    #[error("it did not start within {secs} s{stderr}")]
    StartupTimeout { secs: u64, stderr: String },
}

impl McpError {
    /// Adds what the server wrote on stderr (`; its stderr: …`).
    pub(crate) fn with_stderr(self, tail: String) -> McpError {
        match self {
            McpError::Handshake { error, .. } => McpError::Handshake {
                error,
                stderr: tail,
            },
            McpError::ListTools { error, .. } => McpError::ListTools {
                error,
                stderr: tail,
            },
            McpError::StartupTimeout { secs, .. } => {
                McpError::StartupTimeout { secs, stderr: tail }
            }
            spawn @ McpError::Spawn { .. } => spawn,
        }
    }
}
