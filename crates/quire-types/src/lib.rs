//! Shared vocabulary of Quire: conversation messages, tool calls and specs,
//! model requests and responses, token usage, trajectory events and ids.
//!
//! Every other crate speaks in these types so that the model clients, the
//! agent loop, the store and the terminal never need to know each other.

mod event;
mod fields;
mod ids;
mod message;
mod redact;
mod text_enum;

pub use event::{Event, EventKind, ToolResultViews};
pub use fields::{
    ApprovalDecision, CommandDecision, CompactionStage, ExtensionEvent, ExtensionPayload,
    MessageSource, NotesVia, SessionStatus, TestPhase,
};
pub use ids::{SessionId, new_id};
pub use message::{Message, ModelRequest, ModelResponse, StopReason, ToolCall, ToolSpec, Usage};
pub use redact::Redactor;
pub use text_enum::UnknownValue;
