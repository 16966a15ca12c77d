//! The fixed sets of words some event fields take. Each is stored as the
//! word it always was, so trajectories written before these types existed
//! read back unchanged.

use serde::Serialize;
use serde::de::DeserializeOwned;

crate::text_enum! {
    /// Why a user-role message joined the conversation.
    pub enum MessageSource ("message source") {
        /// The task as the session started with it.
        Task = "task",
        /// The reviewer's feedback on a proposed change.
        Feedback = "feedback",
        /// A guidance reminder (loops, open todos, untested edits).
        Reminder = "reminder",
        /// The model's reply broke the tool protocol.
        ProtocolRepair = "protocol_repair",
        /// The tests failed in the original after applying.
        PostApplyFailure = "post_apply_failure",
        /// The `notes` extension's start list after the task.
        Notes = "notes",
        /// The session digest the note-taker starts from.
        Digest = "digest",
    }
}

crate::text_enum! {
    /// When a test run happened.
    pub enum TestPhase ("test phase") {
        /// The agent ran the tests (`run_tests`) in its session copy.
        Agent = "agent",
        /// The session ran them in the original after applying.
        PostApply = "post_apply",
    }
}

crate::text_enum! {
    /// The reviewer's answer to a proposed change.
    pub enum ApprovalDecision ("approval decision") {
        Approved = "approved",
        Rejected = "rejected",
        /// Sent back to the agent with feedback.
        Feedback = "feedback",
    }
}

crate::text_enum! {
    /// Which compaction stage rewrote the conversation.
    pub enum CompactionStage ("compaction stage") {
        /// Reads of a file read again or edited since became pointers.
        Supersede = "supersede",
        /// Older tool results became pointers.
        Fade = "fade",
        /// The architect summary replaced the older history.
        Summary = "summary",
        /// The summary failed: all but the recent turns faded.
        FadeAll = "fade_all",
        /// Over the hard window: the oldest turns were dropped.
        Trim = "trim",
    }
}

crate::text_enum! {
    /// How notes from earlier sessions reached this one.
    pub enum NotesVia ("notes retrieval") {
        /// Listed after the task.
        Start = "start",
        /// Found by `search_notes`.
        Search = "search",
        /// Offered next to a failure.
        Error = "error",
        /// Read in full with `read_note`.
        Read = "read",
    }
}

crate::text_enum! {
    /// A `run_command` policy decision.
    pub enum CommandDecision ("command decision") {
        /// Allowlisted: runs without asking.
        Allowed = "allowed",
        /// Asked, and the person said yes.
        Approved = "approved",
        /// Asked, and the person said no.
        Denied = "denied",
        /// Denylisted, dangerous, or nobody to ask.
        Refused = "refused",
    }
}

impl CommandDecision {
    /// Whether the command may run: the one place the gate is decided.
    pub fn runs(self) -> bool {
        match self {
            CommandDecision::Allowed | CommandDecision::Approved => true,
            CommandDecision::Denied | CommandDecision::Refused => false,
        }
    }
}

crate::text_enum! {
    /// Where a session stands (also the store's `status` column).
    pub enum SessionStatus ("session status") {
        Running = "running",
        Completed = "completed",
        Failed = "failed",
        /// Left running by a process that died (decided by a caller).
        Interrupted = "interrupted",
        /// The user rejected the proposed change.
        Rejected = "rejected",
    }
}

/// An event an extension defines for itself. It is recorded as an
/// [`ExtensionPayload`] under the extension's name, so an extension adds
/// events without a variant in this crate, and readers decode it back to
/// the same type.
pub trait ExtensionEvent: Serialize + DeserializeOwned {
    /// The extension that owns the event (its name in `extensions`).
    const EXTENSION: &'static str;
    /// The event's name within the extension.
    const EVENT: &'static str;
}

/// An extension's own event as stored: who owns it, which event, its data.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ExtensionPayload {
    pub extension: String,
    pub event: String,
    pub data: serde_json::Value,
}

impl ExtensionPayload {
    pub fn new<T: ExtensionEvent>(event: &T) -> Result<ExtensionPayload, serde_json::Error> {
        Ok(ExtensionPayload {
            extension: T::EXTENSION.to_string(),
            event: T::EVENT.to_string(),
            data: serde_json::to_value(event)?,
        })
    }

    /// `None` when the payload is another event; an error when it is this
    /// one but its data does not read as `T`.
    pub fn decode<T: ExtensionEvent>(&self) -> Option<Result<T, serde_json::Error>> {
        (self.extension == T::EXTENSION && self.event == T::EVENT)
            .then(|| serde_json::from_value(self.data.clone()))
    }
}
