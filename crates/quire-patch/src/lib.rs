//! Unified diffs as written by models: parse them, repair the mistakes models
//! commonly make, and apply them to text with a little tolerance for drift.
//!
//! It also renders diffs (`unified_diff`) in the same dialect it parses.
//!
//! Everything here is pure (no I/O) and must never panic on any input, since
//! the input is whatever a model produced. Failures are typed errors with the
//! precise data (hunk number, expected lines, nearest region of the file) so
//! that the tools crate can word a helpful message for the model.

mod apply;
mod model;
mod multi;
mod parse;
mod render;
mod repair;
mod similarity;

pub use apply::{
    Applied, ApplyError, ApplyOptions, HunkPlacement, MatchMode, Region, SearchKind, apply,
    apply_with,
};
pub use model::{FilePatch, Hunk, HunkLine, Patch};
pub use multi::{ChangeKind, FileOutcome, PatchError, PatchOutcome, apply_patch};
pub use parse::{ParseError, header_paths, parse};
pub use render::{unified_diff, unified_hunks};
pub use repair::{Fix, Repaired, repair};
