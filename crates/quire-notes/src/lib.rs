//! Cross-session notes as files: a tree of Markdown notes with YAML
//! frontmatter (the source of truth) and a tantivy index derived from it,
//! searched by error, file, symbol and words. Knows nothing of the agent
//! loop or a model: the note-taker (`quire-distill`) writes notes through
//! it, the `notes` extension (`quire-recall`) reads them into sessions.
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
mod handle;
mod index;
mod note;
mod readme;
mod search;
mod stale;
mod tree;

pub use handle::{Notes, NotesPaths};
pub use stale::stale_reason;

pub use error::{Error, Result};
pub use frontmatter::{
    FileDefaults, FilledField, FrontmatterError, parse as parse_note_text, quote as yaml_quote,
};
pub use index::{NoteIndex, SyncReport};
pub use note::{
    Frontmatter, Kind, NewNote, Note, NoteFilter, Provenance, Scope, Status, UnknownVariant,
    abandoned_hindsight_template, body_template, cut_at_line, flatten_line, slugify,
};
pub use search::{Hit, SearchQuery, normalize_error};
pub use tree::{BrokenNote, FilledNote, NoteTree, README, ScanReport};
