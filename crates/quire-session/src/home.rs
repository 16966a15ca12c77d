use std::path::{Path, PathBuf};

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
