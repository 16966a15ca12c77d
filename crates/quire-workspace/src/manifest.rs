//! What the session copy was made from: one entry per copied file.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::{IoContext, WorkspaceError};

/// Version written into manifests; bumped on incompatible changes.
pub(crate) const MANIFEST_VERSION: u32 = 1;

/// The state of the original at copy time, keyed by `/`-separated relative
/// path. Used to find what the agent changed and to detect that the user
/// changed the original meanwhile.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Manifest {
    pub version: u32,
    /// The original workspace root, absolute.
    pub original: PathBuf,
    pub files: BTreeMap<String, ManifestEntry>,
    /// What was deliberately not copied (symlinks leading outside, ...).
    #[serde(default)]
    pub skipped: Vec<Skipped>,
}

/// One copied file or symlink.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ManifestEntry {
    /// SHA-256 (hex) of the content; for a symlink, of its target text.
    pub sha256: String,
    pub size: u64,
    /// Permission bits of the original.
    pub mode: u32,
    /// For a symlink: its target as written in the original.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub symlink: Option<String>,
    /// For a symlink whose target had to be rewritten to stay inside the
    /// copy (absolute, or passing outside the root): the copy's target.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub copy_target: Option<String>,
}

impl ManifestEntry {
    /// The symlink target expected in the copy, if this is a symlink.
    pub(crate) fn expected_copy_target(&self) -> Option<&str> {
        self.copy_target.as_deref().or(self.symlink.as_deref())
    }
}

/// Something in the original that was not copied, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Skipped {
    pub path: String,
    pub reason: SkipReason,
}

/// Why an entry was not copied.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum SkipReason {
    /// A symlink resolving outside the workspace.
    SymlinkOutside { target: String },
    /// A symlink whose target does not exist.
    SymlinkDangling { target: String },
    /// A socket, FIFO or device.
    SpecialFile,
    /// Could not be read; the error text.
    Unreadable { error: String },
}

impl Manifest {
    /// Write as pretty JSON, atomically.
    pub fn save(&self, path: &Path) -> Result<(), WorkspaceError> {
        let json = serde_json::to_vec_pretty(self).map_err(|source| WorkspaceError::Json {
            path: path.to_path_buf(),
            source,
        })?;
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).at(parent)?;
        }
        crate::fsutil::atomic_write(path, &json, 0o644).at(path)
    }

    /// Read a manifest written by [`Manifest::save`].
    pub fn load(path: &Path) -> Result<Manifest, WorkspaceError> {
        let bytes = std::fs::read(path).at(path)?;
        serde_json::from_slice(&bytes).map_err(|source| WorkspaceError::Json {
            path: path.to_path_buf(),
            source,
        })
    }
}
