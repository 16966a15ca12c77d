//! Evals: run an agent configuration over a suite of tasks, judge each
//! result with tests the agent never saw, and store everything for
//! comparison. Without this, no claim about an agent change (or about
//! notes) can be measured.
//!
//! - [`Suite`]: a folder of tasks in the Ark benchmark layout plus an
//!   optional `suite.toml` (name, description, train/val/test splits).
//! - [`check_suite`]: is every task fair (visible tests run, hidden
//!   evaluation fails untouched and passes with the reference solution)?
//! - [`EvalRunner`]: runs the attempts of a run in parallel, each in a fresh
//!   copy, and records each result in the store as it finishes; a killed
//!   run resumes where it was.
//! - [`RunReport`] and [`Comparison`]: resolve rates with intervals, and
//!   paired differences between two runs.

mod check;
mod compare;
mod curve;
mod error;
mod learning;
mod metadata;
mod notes_run;
mod plan;
mod report;
mod runner;
mod stats;
mod suite;
mod tree;

pub use check::{CheckOptions, SuiteCheck, TaskCheck, check_suite, check_task};
pub use compare::{Comparison, Pair, Side};
pub use curve::{
    ArmPoint, ArmRun, ArmTotals, CurveError, CurvePoint, CurveTotals, DistillPoint, LearningCurve,
    NotesPoint,
};
pub use error::EvalError;
pub use learning::{
    DistillCost, DistillState, LearnEnd, Learner, NotesPlan, NotesUse, copy_notes, run_notes_dirs,
};
pub use metadata::TaskMetadata;
pub use notes_run::{
    NoteTaker, note_taker_config, notes_runner, notes_session_config, notes_tool_chars,
    prepare_run_notes,
};
pub use plan::{Category, NoProgress, Progress, RunPlan, SessionDriver, Settings, create_run};
pub use report::{ReportTotals, RunReport, pct, secs, short_hash, tokens_text};
pub use runner::{EvalRunner, RunEnd, tree_dir};
pub use stats::{paired_bootstrap, wilson_interval};
pub use suite::{DEFAULT_EVALUATION_COMMAND, DEFAULT_SPLIT, SPLITS, Selection, Suite, Task};
pub use tree::{TestRun, agent_view, apply_patch_file, install_evaluation, run_tests};
