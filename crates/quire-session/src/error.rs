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
    /// The session copy, or applying to and restoring the original.
    #[error("session copy: {0}")]
    Copy(#[from] quire_workspace::WorkspaceError),
    #[error("could not run the tests in the original: {0}")]
    Process(#[from] quire_workspace::ProcessError),
    /// A thread panicked while it held the store.
    #[error("the trajectory store is unusable: a thread panicked while writing to it")]
    StorePoisoned,
    #[error("unknown extension `{name}` in the agent config (known: {known})")]
    UnknownExtension { name: String, known: String },
    #[error("agent config: {0}")]
    ExtensionOrder(String),
    #[error("agent config lacks texts its tools render:\n{}", list_lines(.0))]
    MissingTexts(Vec<quire_config::MissingText>),
    #[error("no session matches `{0}`")]
    SessionNotFound(String),
    #[error("session {id} cannot be resumed: {reason}")]
    NotResumable { id: String, reason: String },
    #[error("approval failed: {0}")]
    Approval(String),
}

fn list_lines(missing: &[quire_config::MissingText]) -> String {
    missing
        .iter()
        .map(|m| format!("  {m}"))
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
mod tests {
    use std::error::Error as _;
    use std::path::Path;

    use super::SessionError;

    /// The workspace's own error stays reachable, not flattened into text.
    #[test]
    fn a_session_copy_error_keeps_its_source() {
        let err = quire_workspace::SessionCopy::create(
            Path::new("/nonexistent/quire/original"),
            Path::new("/nonexistent/quire/copy"),
        )
        .map_err(SessionError::from)
        .unwrap_err();
        assert!(matches!(err, SessionError::Copy(_)));
        assert!(err.to_string().starts_with("session copy: "), "{err}");
        let source = err.source().expect("the workspace error is the source");
        assert!(
            source.to_string().contains("/nonexistent/quire"),
            "{source}"
        );
    }
}
