use std::sync::Arc;

use async_trait::async_trait;

use crate::error::SessionError;

/// The change the agent proposes when it finishes.
#[derive(Debug, Clone)]
pub struct ProposedChange {
    pub session_id: String,
    pub summary: String,
    /// Unified diff of the session copy against the original.
    pub diff: String,
    pub files: Vec<String>,
}

/// What the reviewer decided.
#[derive(Debug, Clone, PartialEq)]
pub enum Decision {
    Approve,
    Reject,
    /// Back to the agent as a new instruction.
    Feedback(String),
}

/// Asks someone (a person at a terminal, or nobody in eval runs) whether a
/// change may be applied.
#[async_trait]
pub trait Approver: Send + Sync {
    async fn review(&self, change: &ProposedChange) -> Result<Decision, SessionError>;

    /// May `run_command` run `command`, which the policy leaves to a
    /// person? `None`: nobody can be asked, so it is refused (the default:
    /// eval runs and `--yes` never ask).
    async fn approve_command(&self, _command: &str) -> Option<bool> {
        None
    }
}

/// An [`Approver`] seen as the `commands` extension's approver.
pub(crate) struct CommandApproval(pub Arc<dyn Approver>);

#[async_trait]
impl quire_tools::CommandApprover for CommandApproval {
    async fn ask(&self, command: &str) -> Option<bool> {
        self.0.approve_command(command).await
    }
}

/// Approves everything: `--yes` and non-interactive eval runs.
pub struct AutoApprove;

#[async_trait]
impl Approver for AutoApprove {
    async fn review(&self, _change: &ProposedChange) -> Result<Decision, SessionError> {
        Ok(Decision::Approve)
    }
}
