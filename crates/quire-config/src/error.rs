use std::path::PathBuf;

/// A configuration mistake, located as precisely as the input allows.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("{}:{line}:{column}: {message}", path.display())]
    Invalid {
        path: PathBuf,
        line: usize,
        column: usize,
        message: String,
    },
    #[error("{}: {message}", path.display())]
    InvalidFile { path: PathBuf, message: String },
    #[error("override `{key}`: {message}")]
    Override { key: String, message: String },
    #[error("{}: referenced file is missing (from `{key}` in {})", path.display(), from.display())]
    MissingFile {
        path: PathBuf,
        key: String,
        from: PathBuf,
    },
    #[error("no agent named `{name}` (looked in: {searched})")]
    AgentNotFound { name: String, searched: String },
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}
