//! Agent configurations: `agents/<name>/agent.toml` plus the text files it
//! references. Every word the model sees comes from here, never from Rust.
//!
//! Loading resolves a folder into one [`AgentConfig`] with all texts inline,
//! applies overrides (`QUIRE__*` environment variables, then `-c key=value`),
//! and reports mistakes with file, line and column.

mod error;
mod load;
mod schema;
mod template;
mod texts;

pub use error::ConfigError;
pub use load::{
    AgentSource, Loader, MCP_TOOL_SEPARATOR, Override, builtin_agent_files, locate_agent,
};
pub use schema::{
    AgentConfig, CommandApproval, CommandsConfig, ContextConfig, FinishConfig, GuidanceConfig,
    Limits, McpApproval, McpConfig, McpServerConfig, ModelConfig, NotesConfig, Pricing,
    PromptSection, Prompts, Provider, Reminder, TestsConfig, ToolCalling, ToolRoles, ToolText,
};
pub use template::render;
pub use texts::{MissingText, ToolTexts};
