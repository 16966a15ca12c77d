//! One open notes folder with its index: what retrieval, the note-taker and
//! the CLI share.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use quire_types::Redactor;

use crate::error::Result;
use crate::index::{NoteIndex, SyncReport};
use crate::tree::NoteTree;

/// Where the notes live and where their index is kept.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotesPaths {
    /// The Markdown tree (the source of truth), e.g. `<data home>/notes`
    /// or a team's git repository of notes.
    pub root: PathBuf,
    /// The tantivy index, derived and rebuildable, e.g. `<data home>/index/notes`.
    pub index_dir: PathBuf,
}

/// An open tree plus its index. Cheap to share (`Arc`).
#[derive(Debug, Clone)]
pub struct Notes {
    pub tree: NoteTree,
    pub index: Arc<NoteIndex>,
}

impl Notes {
    /// Opens the tree and the index (built, or rebuilt when missing or
    /// corrupt), then syncs the index with hand edits. Broken notes are in
    /// the report (path and line) and left out; the rest work.
    pub fn open(paths: &NotesPaths, redactor: Redactor) -> Result<(Notes, SyncReport)> {
        let tree = NoteTree::open(&paths.root)?.with_redactor(redactor);
        let index = NoteIndex::open(&paths.index_dir, &tree)?;
        let report = index.sync()?;
        for b in &report.broken {
            tracing::debug!(path = %b.path.display(), line = b.line, "broken note: {}", b.message);
        }
        Ok((
            Notes {
                tree,
                index: Arc::new(index),
            },
            report,
        ))
    }

    /// The notes root.
    pub fn root(&self) -> &Path {
        self.tree.root()
    }
}
