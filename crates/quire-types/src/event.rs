use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::message::{Message, ToolCall, Usage};

/// One step of a session's trajectory, as persisted and rendered.
///
/// The loop emits events; the store persists them (each committed as it
/// happens) and the terminal renders them. Neither is called from a tool.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Event {
    pub at: DateTime<Utc>,
    #[serde(flatten)]
    pub kind: EventKind,
}

impl Event {
    pub fn now(kind: EventKind) -> Self {
        Event {
            at: Utc::now(),
            kind,
        }
    }
}

/// The two views of a tool result: what the model reads and what people read.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolResultViews {
    /// Compact, for the model's reasoning.
    pub agent_view: String,
    /// Rich, for the user and the trajectory (full output, diffs).
    pub user_view: String,
}

/// What happened. Variants that grow the conversation carry enough to rebuild
/// it on resume: `UserMessage`, `ModelResponse` and `ToolResult`; and
/// `Compaction` and `HistoryReplaced` replace it as a whole.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum EventKind {
    SessionStarted {
        task: String,
        workspace: String,
        project: String,
        agent: String,
        config_hash: String,
        model: String,
    },
    /// The system prompt the session runs with (stable prefix of every request).
    SystemPrompt {
        content: String,
    },
    /// A user-role message joined the conversation: the task, feedback,
    /// a reminder or a protocol repair. `source` says which.
    UserMessage {
        source: String,
        content: String,
    },
    ModelRequest {
        iteration: u32,
        messages: usize,
        tools: usize,
        /// Prompt tokens counted locally before sending (the session's
        /// estimator: o200k BPE with the `context` extension, else chars/4),
        /// uncalibrated; the provider's count is in the `ModelResponse` usage.
        estimated_tokens: u64,
    },
    ModelResponse {
        iteration: u32,
        content: String,
        tool_calls: Vec<ToolCall>,
        usage: Usage,
        duration_ms: u64,
        model: String,
    },
    /// A model request attempt failed and is retried: what the user sees
    /// as one line, and what the provider may bill for (`usage`, the tokens
    /// it reported before failing; they count in the session's totals).
    ModelRetry {
        iteration: u32,
        /// The attempt that failed (from 1); the next is this + 1.
        failed_attempt: u32,
        max_attempts: u32,
        reason: String,
        /// Set when the attempt timed out: the limit, in seconds.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        timed_out_after_secs: Option<f64>,
        #[serde(default)]
        usage: Usage,
        elapsed_ms: u64,
        retry_in_ms: u64,
    },
    ToolCallStarted {
        call_id: String,
        name: String,
        arguments: String,
    },
    ToolResult {
        call_id: String,
        name: String,
        #[serde(flatten)]
        views: ToolResultViews,
        is_error: bool,
        duration_ms: u64,
    },
    /// Model output broke the protocol; a repair message was sent.
    ProtocolRepair {
        attempt: u32,
        reason: String,
    },
    TestRun {
        phase: String,
        command: String,
        exit_code: Option<i32>,
        passed: Option<u32>,
        failed: Option<u32>,
        timed_out: bool,
        digest: String,
        output: String,
        duration_ms: u64,
    },
    /// The change proposed at finish (unified diff of the session copy
    /// against the original).
    Patch {
        diff: String,
        files: Vec<String>,
    },
    Approval {
        decision: String,
        feedback: Option<String>,
    },
    Applied {
        files: Vec<String>,
    },
    RolledBack {
        files: Vec<String>,
        reason: String,
    },
    /// The context extension rewrote the conversation to keep requests under
    /// budget. `messages` is the whole conversation after the system prompt
    /// from now on (resume continues from it).
    Compaction {
        /// `supersede`, `fade`, `summary`, `fade_all` (the summary failed) or
        /// `trim` (over the hard window).
        stage: String,
        /// Estimated request size before and after, in calibrated tokens.
        tokens_before: u64,
        tokens_after: u64,
        /// The architect summary that replaced the older history.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        summary: Option<String>,
        /// What the summary call cost (zero for the other stages).
        #[serde(default)]
        usage: Usage,
        messages: Vec<Message>,
    },
    /// The conversation history was replaced (resume repair).
    HistoryReplaced {
        reason: String,
        messages: Vec<Message>,
    },
    Error {
        message: String,
    },
    /// Notes from earlier sessions reached this one: `via` is `start` (listed
    /// after the task), `search` (`search_notes`), `error` (offered next to
    /// a failure) or `read` (`read_note`). The distillation job credits the
    /// notes read by the session's outcome.
    NotesRetrieved {
        via: String,
        ids: Vec<String>,
    },
    /// Whether the processes of this session (tests, commands) run
    /// confined: recorded once at session start. `detail` says how, or
    /// why not (no Landlock, turned off in the config).
    Sandbox {
        enforced: bool,
        detail: String,
    },
    /// A `run_command` policy decision: `allowed` (allowlisted), `approved`
    /// or `denied` (asked), `refused` (denylisted, dangerous, or nobody to
    /// ask); `reason` says which rule decided.
    CommandDecision {
        command: String,
        decision: String,
        reason: String,
    },
    SessionEnded {
        status: String,
        outcome: String,
        usage: Usage,
        iterations: u32,
        tool_calls: u32,
        elapsed_ms: u64,
        cost_usd: f64,
    },
}

impl EventKind {
    /// Stable short name, used as the `kind` column in the store.
    pub fn name(&self) -> &'static str {
        match self {
            EventKind::SessionStarted { .. } => "session_started",
            EventKind::SystemPrompt { .. } => "system_prompt",
            EventKind::UserMessage { .. } => "user_message",
            EventKind::ModelRequest { .. } => "model_request",
            EventKind::ModelResponse { .. } => "model_response",
            EventKind::ModelRetry { .. } => "model_retry",
            EventKind::ToolCallStarted { .. } => "tool_call_started",
            EventKind::ToolResult { .. } => "tool_result",
            EventKind::ProtocolRepair { .. } => "protocol_repair",
            EventKind::TestRun { .. } => "test_run",
            EventKind::Patch { .. } => "patch",
            EventKind::Approval { .. } => "approval",
            EventKind::Applied { .. } => "applied",
            EventKind::RolledBack { .. } => "rolled_back",
            EventKind::Compaction { .. } => "compaction",
            EventKind::HistoryReplaced { .. } => "history_replaced",
            EventKind::Error { .. } => "error",
            EventKind::NotesRetrieved { .. } => "notes_retrieved",
            EventKind::CommandDecision { .. } => "command_decision",
            EventKind::Sandbox { .. } => "sandbox",
            EventKind::SessionEnded { .. } => "session_ended",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn event_serializes_with_kind_tag_and_flattened_views() {
        let ev = Event::now(EventKind::ToolResult {
            call_id: "c1".into(),
            name: "read_file".into(),
            views: ToolResultViews {
                agent_view: "1: x".into(),
                user_view: "full".into(),
            },
            is_error: false,
            duration_ms: 3,
        });
        let json = serde_json::to_value(&ev).unwrap();
        assert_eq!(json["kind"], "tool_result");
        assert_eq!(json["agent_view"], "1: x");
        let back: Event = serde_json::from_value(json).unwrap();
        assert_eq!(back, ev);
        assert_eq!(back.kind.name(), "tool_result");
    }
}
