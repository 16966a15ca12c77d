//! Cross-session notes, storage half: a tree of Markdown notes with YAML
//! frontmatter (the source of truth) and a tantivy index derived from it.
//!
//! Layout under the notes root: `projects/<project>/<topic>/<slug>.md` for
//! one codebase's knowledge, `shared/<topic>/<slug>.md` for knowledge that
//! holds across projects, and a generated `README.md` in every folder.
//!
//! Everything written into a note goes through the tree's
//! [`quire_types::Redactor`], so secrets never reach the files or the index.

mod error;
mod frontmatter;
mod fsx;
mod index;
mod note;
mod readme;
mod search;
mod tree;

pub use error::{Error, Result};
pub use frontmatter::{FrontmatterError, parse as parse_note_text, quote as yaml_quote};
pub use index::{NoteIndex, SyncReport};
pub use note::{
    Frontmatter, Kind, NewNote, Note, NoteFilter, Provenance, Scope, Status, UnknownVariant,
    abandoned_hindsight_template, body_template, flatten_line, slugify,
};
pub use search::{Hit, SearchQuery, normalize_error};
pub use tree::{BrokenNote, NoteTree, README, ScanReport};
