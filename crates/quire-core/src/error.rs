/// Failures of the loop itself (not of a tool, which the model sees as a result).
#[derive(Debug, thiserror::Error)]
pub enum CoreError {
    #[error("model call failed: {0}")]
    Model(#[from] quire_llm::LlmError),
    #[error("could not record the trajectory: {0}")]
    Sink(#[from] crate::sink::SinkError),
    #[error("tool `{0}` has no text in the agent config (add tools/{0}.toml)")]
    MissingToolText(String),
    #[error("tool `{tool}` is claimed by two extensions: `{first}` and `{second}`")]
    DuplicateTool {
        tool: String,
        first: String,
        second: String,
    },
    #[error("extension `{extension}` failed: {message}")]
    Extension { extension: String, message: String },
}
