use std::path::PathBuf;

/// Why a session could not start or continue. Failures *inside* a session
/// (model errors, iteration cap) end it with a status instead.
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    #[error("no data home: set QUIRE_HOME or HOME")]
    NoDataHome,
    #[error("{}: {message}", path.display())]
    Workspace { path: PathBuf, message: String },
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(transparent)]
    Store(#[from] quire_store::StoreError),
    #[error(transparent)]
    Core(#[from] quire_core::CoreError),
    #[error("could not record the trajectory: {0}")]
    Sink(#[from] quire_core::SinkError),
    #[error("session copy: {0}")]
    Copy(String),
    #[error("unknown extension `{name}` in the agent config (known: {known})")]
    UnknownExtension { name: String, known: String },
    #[error("agent config: {0}")]
    ExtensionOrder(String),
    #[error("no session matches `{0}`")]
    SessionNotFound(String),
    #[error("session {id} cannot be resumed: {reason}")]
    NotResumable { id: String, reason: String },
    #[error("approval failed: {0}")]
    Approval(String),
}
