//! Notes recalled into a coding session: the `notes` extension (the start
//! list after the task, `search_notes` and `read_note`, a hint next to a
//! failing result) and the record it leaves in the trajectory, which says
//! what a finished session was shown and read and how its outcome credits
//! those notes ([`SessionFacts`]).
//!
//! The notes themselves (tree and index) are `quire-notes`; the note-taker
//! that writes them is `quire-distill`.

mod facts;
mod prefetch;
mod retrieval;
#[cfg(test)]
mod testutil;

pub use facts::{READ_NOTE, SessionFacts, Verdict, via};
pub use prefetch::{CodeShown, Excerpt, Why, plan as plan_code};
/// The `messages.toml` keys the `notes` extension renders: an agent that
/// lists it without them would show the model a marker.
pub const MESSAGES: &[&str] = &[
    "notes_retrieved",
    "notes_retrieved_in_full",
    "notes_retrieved_entry",
    "notes_retrieved_entry_full",
    "notes_stale",
    "notes_inline",
    "notes_inline_more",
    "notes_error_hint",
    "notes_error_hint_inline",
    "notes_code",
    "notes_code_file",
    "notes_code_definition",
];

pub use retrieval::{
    NotesExtension, NotesState, RETRIEVAL_TEXTS, RETRIEVAL_TOOLS, RetrievalSettings,
    START_LIST_SOURCE,
};

#[cfg(test)]
mod texts {
    use crate::testutil::config;

    /// Every text retrieval sends is in the default agent, so none reaches
    /// a model as a missing-text marker.
    #[test]
    fn the_default_agent_has_every_text() {
        let config = config();
        for key in crate::MESSAGES {
            assert!(
                config.messages.contains_key(*key),
                "messages.toml lacks {key}"
            );
        }
        let missing = config.missing_tool_texts(crate::RETRIEVAL_TEXTS);
        assert!(missing.is_empty(), "{missing:?}");
        assert!(config.extensions.iter().any(|e| e == "notes"));
    }
}
