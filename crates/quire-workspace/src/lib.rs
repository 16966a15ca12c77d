//! The session copy of a workspace and the mechanics around it.
//!
//! Quire lets the agent work on an isolated copy of the user's workspace,
//! then shows the diff, applies it to the original on approval, runs the
//! tests there and rolls back exactly if they fail. This crate is that
//! machinery: copying ([`SessionCopy::create`]), the path guard
//! ([`SessionCopy::resolve`]), the diff ([`SessionCopy::changes`],
//! [`unified_diff`]), applying with a crash-safe backup
//! ([`SessionCopy::apply_to_original`], [`AppliedChange`]), running commands
//! in their own process group ([`run_command`]). Condensing test output
//! is `quire-test-digest`'s job.
//!
//! Unix only: modes, symlinks and process groups are used directly.

mod apply;
mod copy;
mod diff;
mod error;
mod fsutil;
mod guard;
mod lock;
mod manifest;
mod process;
mod sandbox;
mod walk;

pub use apply::{AppliedChange, ApplyError, Conflict, ConflictReason};
pub use copy::SessionCopy;
pub use diff::{ChangeKind, Content, FileChange, unified_diff};
pub use error::WorkspaceError;
pub use guard::PathError;
pub use lock::{LockError, PidLock};

/// `path` relative to `root`, `/`-separated (`.` for the root itself); a
/// path outside `root` comes back whole. One spelling for every listing.
pub fn relative_path(root: &std::path::Path, path: &std::path::Path) -> String {
    guard::relative_to(root, root, path)
}
pub use manifest::{Manifest, ManifestEntry, SkipReason, Skipped};
pub use process::{CommandOutput, ProcessError, RunOptions, run_command};
pub use sandbox::{
    Sandbox, SandboxEnforcement, SandboxStatus, enforcement as sandbox_enforcement,
    status as sandbox_status,
};
