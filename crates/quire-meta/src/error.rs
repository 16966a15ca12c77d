use std::path::PathBuf;

/// Why a meta-agent command could not go on. A bad proposal inside the loop
/// is not an error: it is recorded on its generation (refused, failed).
#[derive(Debug, thiserror::Error)]
pub enum MetaError {
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{}: {message}", path.display())]
    File { path: PathBuf, message: String },
    #[error("unknown config part `{0}` (see the part ids in docs/ARCHITECTURE.md)")]
    UnknownPart(String),
    #[error("part `{part}`: {message}")]
    Part { part: String, message: String },
    #[error("agent {agent} has no generation {n}")]
    NoGeneration { agent: String, n: u32 },
    #[error("{0}")]
    Invalid(String),
    #[error("the meta model: {0}")]
    Model(String),
    #[error(transparent)]
    Config(#[from] quire_config::ConfigError),
    #[error(transparent)]
    Eval(#[from] quire_evals::EvalError),
    #[error(transparent)]
    Store(#[from] quire_store::StoreError),
    #[error(transparent)]
    Session(#[from] quire_session::SessionError),
}

impl MetaError {
    pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> MetaError {
        MetaError::Io {
            path: path.into(),
            source,
        }
    }

    pub(crate) fn part(part: impl std::fmt::Display, message: impl Into<String>) -> MetaError {
        MetaError::Part {
            part: part.to_string(),
            message: message.into(),
        }
    }
}
