//! Cross-session notes: a tree of Markdown notes with YAML frontmatter (the
//! source of truth), a tantivy index derived from it, the note-taker that
//! distills finished sessions into notes, and retrieval of notes into new
//! sessions.
//!
//! Layout under the notes root: `projects/<project>/<topic>/<slug>.md` for
//! one codebase's knowledge, `shared/<topic>/<slug>.md` for knowledge that
//! holds across projects, and a generated `README.md` in every folder.
//!
//! Everything written into a note goes through the tree's
//! [`quire_types::Redactor`], so secrets never reach the files or the index.

mod digest;
mod distill;
mod error;
mod facts;
mod frontmatter;
mod fsx;
mod handle;
mod index;
mod note;
mod note_tools;
mod readme;
mod retrieval;
mod search;
mod stale;
#[cfg(test)]
mod testutil;
mod tree;
pub mod triage;

pub use digest::{DigestLimits, DigestOptions, digest};
pub use distill::{DistillError, DistillSettings, Distiller, JobOutcome, JobReport};
pub use facts::{READ_NOTE, SessionFacts, Verdict, via};
pub use handle::{Notes, NotesPaths};
pub use note_tools::{
    MAX_EDIT_CHARS, NOTE_TAKER_TEXTS, NOTE_TAKER_TOOLS, NoteAction, NoteTakerState, NoteTools,
    Progress, WrittenNote,
};
pub use retrieval::{
    NotesExtension, NotesState, RETRIEVAL_TEXTS, RETRIEVAL_TOOLS, RetrievalSettings,
    START_LIST_SOURCE,
};
pub use stale::stale_reason;

pub use error::{Error, Result};
pub use frontmatter::{
    FileDefaults, FilledField, FrontmatterError, parse as parse_note_text, quote as yaml_quote,
};
pub use index::{NoteIndex, SyncReport};
pub use note::{
    Frontmatter, Kind, NewNote, Note, NoteFilter, Provenance, Scope, Status, UnknownVariant,
    abandoned_hindsight_template, body_template, flatten_line, slugify,
};
pub use search::{Hit, SearchQuery, normalize_error};
pub use tree::{BrokenNote, FilledNote, NoteTree, README, ScanReport};

#[cfg(test)]
mod texts {
    use crate::testutil::config;

    /// Every text the notes code sends is in the default agent, so none
    /// reaches a model as a missing-text marker.
    #[test]
    fn the_default_agent_has_every_text() {
        let config = config();
        for key in [
            "notes_retrieved",
            "notes_retrieved_entry",
            "notes_stale",
            "notes_error_hint",
            "notes_error_hint_inline",
            "notes_digest",
            "notes_digest_resumed",
            "notes_digest_existing",
            "notes_no_tool_call",
        ] {
            assert!(
                config.messages.contains_key(key),
                "messages.toml lacks {key}"
            );
        }
        let missing = config.missing_tool_texts(crate::NOTE_TAKER_TEXTS);
        assert!(missing.is_empty(), "{missing:?}");
        let missing = config.missing_tool_texts(crate::RETRIEVAL_TEXTS);
        assert!(missing.is_empty(), "{missing:?}");
        for tool in crate::NOTE_TAKER_TOOLS.iter().chain(crate::RETRIEVAL_TOOLS) {
            assert!(
                config.tools.contains_key(*tool),
                "tools/{tool}.toml is missing"
            );
        }
        assert!(config.prompts.note_taker.contains("note_done"));
        assert!(config.extensions.iter().any(|e| e == "notes"));
    }
}
