//! Runs one task end to end: the session copy, the agent built from its
//! config, the trajectory in SQLite, review and approval, applying the change
//! to the original workspace and verifying it with the tests there.
//!
//! The CLI and the eval runner both drive sessions through [`Runner`].

mod approval;
mod driver;
mod error;
mod home;
mod registry;
mod sink;
mod workspace_info;

pub use approval::{Approver, AutoApprove, Decision, ProposedChange};
pub use driver::{EndReason, NotesWrites, RunOptions, Runner, SessionReport};
pub use error::SessionError;
pub use home::DataHome;
pub use registry::{
    KNOWN_EXTENSIONS, REQUIRED_EXTENSIONS, SessionParts, build_extensions, config_problems,
    extension_list_problems, order_problems, retrieval_settings, start_mcp, texts_by_extension,
};
pub use sink::StoreSink;
pub use workspace_info::{WorkspaceChoices, WorkspaceInfo};
