use std::path::{Path, PathBuf};

use quire_config::AgentConfig;
use quire_notes::NotesPaths;

use crate::error::SessionError;

/// Where Quire keeps its data: `quire.db`, `notes/`, `index/`, `sessions/`.
///
/// `$QUIRE_HOME` wins, then `$XDG_DATA_HOME/quire`, then
/// `~/.local/share/quire`. Created on first use.
#[derive(Debug, Clone)]
pub struct DataHome {
    root: PathBuf,
}

impl DataHome {
    pub fn resolve(explicit: Option<&Path>) -> Result<DataHome, SessionError> {
        let root = match explicit {
            Some(path) => path.to_path_buf(),
            None => default_root()?,
        };
        DataHome::at(root)
    }

    pub fn at(root: PathBuf) -> Result<DataHome, SessionError> {
        std::fs::create_dir_all(&root).map_err(|source| SessionError::Io {
            path: root.clone(),
            source,
        })?;
        Ok(DataHome { root })
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    pub fn db_path(&self) -> PathBuf {
        self.root.join("quire.db")
    }

    pub fn notes_dir(&self) -> PathBuf {
        self.root.join("notes")
    }

    pub fn index_dir(&self) -> PathBuf {
        self.root.join("index")
    }

    /// The notes folder the config names (`notes.root`, default
    /// `<home>/notes`) and its index, always under the data home (a shared
    /// notes repository must not carry anyone's derived index).
    pub fn notes_paths(&self, config: &AgentConfig) -> NotesPaths {
        let root = config.notes.root.trim();
        let root = if root.is_empty() {
            self.notes_dir()
        } else if let Some(rest) = root.strip_prefix("~/")
            && let Some(home) = std::env::var_os("HOME")
        {
            PathBuf::from(home).join(rest)
        } else {
            PathBuf::from(root)
        };
        NotesPaths {
            root,
            index_dir: self.index_dir().join("notes"),
        }
    }

    /// Where background workers (the note-taker) write their logs.
    pub fn logs_dir(&self) -> PathBuf {
        self.root.join("logs")
    }

    pub fn agents_dir(&self) -> PathBuf {
        self.root.join("agents")
    }

    /// Per-session folder: `work/` (the session copy), the manifest, the
    /// apply backup and the saved patch.
    pub fn session_dir(&self, id: &str) -> PathBuf {
        self.root.join("sessions").join(id)
    }
}

fn default_root() -> Result<PathBuf, SessionError> {
    if let Some(home) = std::env::var_os("QUIRE_HOME").filter(|v| !v.is_empty()) {
        return Ok(PathBuf::from(home));
    }
    if let Some(xdg) = std::env::var_os("XDG_DATA_HOME").filter(|v| !v.is_empty()) {
        return Ok(PathBuf::from(xdg).join("quire"));
    }
    match std::env::var_os("HOME").filter(|v| !v.is_empty()) {
        Some(home) => Ok(PathBuf::from(home).join(".local/share/quire")),
        None => Err(SessionError::NoDataHome),
    }
}
