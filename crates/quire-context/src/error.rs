/// Failures of the working-memory store; the tools turn them into texts
/// from the agent config.
#[derive(Debug, thiserror::Error)]
pub enum ContextError {
    #[error("`{0}` is not a valid note path")]
    BadPath(String),
    #[error("{path}: {source}")]
    Io {
        path: String,
        #[source]
        source: std::io::Error,
    },
}
