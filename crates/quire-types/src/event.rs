use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::fields::{
    ApprovalDecision, CommandDecision, CompactionStage, ExtensionPayload, MessageSource, NotesVia,
    SessionStatus, TestPhase,
};
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
        source: MessageSource,
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
        phase: TestPhase,
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
        decision: ApprovalDecision,
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
        stage: CompactionStage,
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
    /// Notes from earlier sessions reached this one (`via` says how). The
    /// distillation job credits the notes read by the session's outcome.
    NotesRetrieved {
        via: NotesVia,
        ids: Vec<String>,
    },
    /// Whether the processes of this session (tests, commands) run
    /// confined: recorded once at session start. `detail` says how, or
    /// why not (no Landlock, turned off in the config).
    Sandbox {
        enforced: bool,
        detail: String,
    },
    /// A `run_command` policy decision; `reason` says which rule decided.
    CommandDecision {
        command: String,
        decision: CommandDecision,
        reason: String,
    },
    /// An event an extension defines for itself (see
    /// [`crate::ExtensionEvent`]).
    Extension(ExtensionPayload),
    SessionEnded {
        status: SessionStatus,
        /// What happened, in a sentence for people.
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
            EventKind::Extension(_) => "extension",
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

    /// Rows written while these fields were strings, byte for byte as the
    /// store holds them: each reads into the typed field and writes back the
    /// same JSON, so old databases keep working.
    #[test]
    fn old_format_rows_read_and_write_back_unchanged() {
        let rows = [
            r#"{"at":"2026-01-02T03:04:05Z","kind":"user_message","source":"post_apply_failure","content":"tests failed"}"#,
            r#"{"at":"2026-01-02T03:04:05Z","kind":"user_message","source":"notes","content":"notes list"}"#,
            r#"{"at":"2026-01-02T03:04:05Z","kind":"test_run","phase":"post_apply","command":"pytest","exit_code":1,"passed":2,"failed":1,"timed_out":false,"digest":"d","output":"o","duration_ms":9}"#,
            r#"{"at":"2026-01-02T03:04:05Z","kind":"approval","decision":"feedback","feedback":"rename it"}"#,
            r#"{"at":"2026-01-02T03:04:05Z","kind":"compaction","stage":"fade_all","tokens_before":10,"tokens_after":5,"usage":{"prompt_tokens":0,"completion_tokens":0,"cached_tokens":0},"messages":[]}"#,
            r#"{"at":"2026-01-02T03:04:05Z","kind":"notes_retrieved","via":"error","ids":["n1"]}"#,
            r#"{"at":"2026-01-02T03:04:05Z","kind":"command_decision","command":"make","decision":"denied","reason":"asked"}"#,
            r#"{"at":"2026-01-02T03:04:05Z","kind":"session_ended","status":"rejected","outcome":"change rejected by the user","usage":{"prompt_tokens":1,"completion_tokens":2,"cached_tokens":0},"iterations":3,"tool_calls":4,"elapsed_ms":5,"cost_usd":0.5}"#,
        ];
        let mut kinds = Vec::new();
        for row in rows {
            let event: Event = serde_json::from_str(row).unwrap_or_else(|e| panic!("{row}: {e}"));
            let written: serde_json::Value = serde_json::to_value(&event).unwrap();
            let stored: serde_json::Value = serde_json::from_str(row).unwrap();
            assert_eq!(written, stored, "{row}");
            kinds.push(event.kind);
        }
        assert!(matches!(
            kinds[0],
            EventKind::UserMessage {
                source: MessageSource::PostApplyFailure,
                ..
            }
        ));
        assert!(matches!(
            kinds[2],
            EventKind::TestRun {
                phase: TestPhase::PostApply,
                ..
            }
        ));
        assert!(matches!(
            kinds[4],
            EventKind::Compaction {
                stage: CompactionStage::FadeAll,
                ..
            }
        ));
        assert!(matches!(
            kinds[6],
            EventKind::CommandDecision {
                decision: CommandDecision::Denied,
                ..
            }
        ));
        assert!(matches!(
            kinds[7],
            EventKind::SessionEnded {
                status: SessionStatus::Rejected,
                ..
            }
        ));
    }

    #[test]
    fn a_word_outside_the_set_is_an_error_naming_it() {
        let row = r#"{"at":"2026-01-02T03:04:05Z","kind":"command_decision","command":"make","decision":"alowed","reason":"x"}"#;
        let err = serde_json::from_str::<Event>(row).unwrap_err().to_string();
        assert!(err.contains("alowed"), "{err}");
        assert!(!CommandDecision::Denied.runs() && !CommandDecision::Refused.runs());
        assert!(CommandDecision::Allowed.runs() && CommandDecision::Approved.runs());
    }

    #[derive(Debug, PartialEq, Serialize, Deserialize)]
    struct Tally {
        hits: u32,
    }

    impl crate::ExtensionEvent for Tally {
        const EXTENSION: &'static str = "counter";
        const EVENT: &'static str = "tally";
    }

    #[derive(Debug, PartialEq, Serialize, Deserialize)]
    struct Other {}

    impl crate::ExtensionEvent for Other {
        const EXTENSION: &'static str = "counter";
        const EVENT: &'static str = "other";
    }

    #[test]
    fn an_extension_event_round_trips_through_its_payload() {
        let payload = ExtensionPayload::new(&Tally { hits: 3 }).unwrap();
        let event = Event::now(EventKind::Extension(payload));
        let json = serde_json::to_value(&event).unwrap();
        assert_eq!(json["kind"], "extension");
        assert_eq!(json["extension"], "counter");
        assert_eq!(json["event"], "tally");
        assert_eq!(json["data"]["hits"], 3);
        let back: Event = serde_json::from_value(json).unwrap();
        assert_eq!(back.kind.name(), "extension");
        let EventKind::Extension(payload) = back.kind else {
            panic!("not an extension event");
        };
        assert_eq!(
            payload.decode::<Tally>().unwrap().unwrap(),
            Tally { hits: 3 }
        );
        assert!(payload.decode::<Other>().is_none());
    }
}
