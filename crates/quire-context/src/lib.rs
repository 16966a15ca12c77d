//! Context management as extensions of the agent loop, after the Confucius
//! and OpenDev papers: long sessions stay sharp and cheap.
//!
//! - [`TokenCounter`]: o200k BPE counts of each request, cached per text and
//!   calibrated against the provider's reported usage; installed as the
//!   session's [`quire_core::TokenEstimator`].
//! - [`ContextExtension`] (`context`): staged compaction against
//!   `context.budget_tokens` (supersede, fade, architect summary; trim only
//!   past the hard window), each stage rewriting the conversation once and
//!   recorded as a `Compaction` event, so the prompt cache survives between
//!   compactions.
//! - [`MemoryExtension`] (`memory`): per-session Markdown notes with four
//!   tools, indexed at the end of every request.
//! - [`GuidanceExtension`] (`guidance`): loop detection and reminders.
//!
//! Every threshold and text comes from the agent config.

mod compact;
mod context;
mod error;
mod guidance;
mod memory;
mod tokens;

pub use context::ContextExtension;
pub use error::ContextError;
pub use guidance::GuidanceExtension;
pub use memory::{
    MEMORY_TEXTS, MEMORY_TOOLS, MemoryEntry, MemoryExtension, MemoryStore, render_index,
};
pub use tokens::TokenCounter;

use quire_config::ToolTexts;

/// The tools each extension of this crate declares, with the texts they
/// render, by extension name: a config is checked against them when it loads.
pub fn texts_by_extension() -> &'static [(&'static str, &'static [ToolTexts])] {
    &[
        (ContextExtension::NAME, &[]),
        (MemoryExtension::NAME, MEMORY_TEXTS),
        (GuidanceExtension::NAME, &[]),
    ]
}

#[cfg(test)]
mod tests {
    use quire_config::{AgentSource, Loader};

    /// Every text these extensions send is in the default agent, so none
    /// reaches the model as a missing-text marker.
    #[test]
    fn the_default_agent_has_every_text() {
        let config = Loader::default().load(&AgentSource::Builtin).unwrap();
        for key in [
            "context_superseded",
            "context_faded",
            "context_summary",
            "memory_index",
            "memory_index_entry",
        ] {
            assert!(config.messages.contains_key(key), "messages.toml: {key}");
        }
        for key in [
            "loop_detected",
            "open_todo",
            "edit_failures",
            "tests_not_run",
        ] {
            assert!(config.reminders.contains_key(key), "reminders.toml: {key}");
        }
        assert_eq!(config.missing_tool_texts(super::MEMORY_TEXTS), Vec::new());
        for extension in ["context", "memory", "guidance"] {
            assert!(config.extensions.iter().any(|e| e == extension));
        }
    }
}
