//! The note-taker: turns finished sessions into notes.
//!
//! A session's events become a digest (the story, not the transcript);
//! triage skips a session with nothing to teach without a model call; a
//! distillation job credits the notes the session read by its outcome,
//! then runs the note-taker — an agent of its own with the note tools
//! (`note_search`, `note_read`, `note_create`, `note_update`,
//! `note_supersede`, `note_done`) — over the digest. Notes are written
//! through `quire-notes`; what a session was shown and read comes from
//! `quire-recall`'s record.

mod digest;
mod distill;
mod note_tools;
#[cfg(test)]
mod testutil;
pub mod triage;

pub use digest::{DigestLimits, DigestOptions, digest};
pub use distill::{DistillError, DistillSettings, Distiller, JobOutcome, JobReport};
pub use note_tools::{
    MAX_EDIT_CHARS, NOTE_TAKER_TEXTS, NOTE_TAKER_TOOLS, NoteAction, NoteTakerState, NoteTools,
    Progress, WrittenNote,
};

#[cfg(test)]
mod texts {
    use crate::testutil::config;

    /// Every text the note-taker's code sends is in the default agent, so
    /// none reaches its model as a missing-text marker.
    #[test]
    fn the_default_agent_has_every_text() {
        let config = config();
        for key in [
            "notes_digest",
            "notes_digest_resumed",
            "notes_digest_existing",
            "notes_digest_names",
            "notes_no_tool_call",
        ] {
            assert!(
                config.messages.contains_key(key),
                "messages.toml lacks {key}"
            );
        }
        let missing = config.missing_tool_texts(crate::NOTE_TAKER_TEXTS);
        assert!(missing.is_empty(), "{missing:?}");
        assert!(config.prompts.note_taker.contains("note_done"));
    }
}
