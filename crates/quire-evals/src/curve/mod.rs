//! `quire eval curve`: does learning pay off as a suite goes on? A learn
//! run (notes on, distilled after each task) against a baseline run (notes
//! off) over the same tasks, position by position: prompt tokens, calls,
//! resolves, what the notes weighed and what distilling them cost, the
//! cumulative saving, and totals with a paired bootstrap interval. Text,
//! Markdown, SVG or JSON.

mod pairing;
mod report;
mod svg;
#[cfg(test)]
mod tests;
mod totals;

use std::collections::HashMap;

use quire_store::{EvalResultRow, EvalRunRow};
use serde::Serialize;

use crate::learning::DistillCost;

/// One stored run of an arm, with the distillation cost of each of its
/// sessions (by session id; empty for a baseline).
#[derive(Debug, Clone)]
pub struct ArmRun {
    pub run: EvalRunRow,
    pub results: Vec<EvalResultRow>,
    pub distill: HashMap<String, DistillCost>,
}

/// Why there is no curve to draw.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CurveError {
    #[error("the {arm} arm has no finished attempt (no runs, or none done)")]
    EmptyArm { arm: &'static str },
    #[error("the learn and baseline runs share no finished task")]
    NoSharedTask,
}

/// One arm at one task: means over the arm's runs (a run's attempts of the
/// task averaged first).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ArmPoint {
    /// Runs of the arm that finished this task.
    pub runs: u32,
    pub prompt_tokens: f64,
    /// Prompt tokens not served from the provider's cache.
    pub uncached_prompt_tokens: f64,
    pub completion_tokens: f64,
    /// Model calls.
    pub calls: f64,
    pub wall_secs: f64,
    /// Fraction of the runs that resolved the task.
    pub resolved: f64,
}

/// What the notes weighed in the learn arm's sessions of one task.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct NotesPoint {
    pub prompt_tokens: f64,
    pub shown: f64,
    pub read: f64,
    /// Learn attempts without a notes record (counted as no notes).
    pub missing: u32,
}

/// What distilling the learn arm's sessions of one task cost.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DistillPoint {
    pub prompt_tokens: f64,
    pub completion_tokens: f64,
    pub calls: f64,
    /// Attempts whose distillation is pending, failed, absent or unknown:
    /// counted as 0 tokens, so the net saving may be overstated.
    pub not_done: u32,
}

/// One task position of the curve.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CurvePoint {
    /// 1-based, in the first learn run's order.
    pub position: u32,
    pub task_id: String,
    pub learn: ArmPoint,
    pub baseline: ArmPoint,
    pub notes: NotesPoint,
    pub distill: DistillPoint,
    /// Baseline prompt tokens − learn prompt tokens (positive = saved).
    pub saving: f64,
    /// The saving less the distillation's prompt tokens.
    pub net_saving: f64,
    pub cumulative_saving: f64,
    pub cumulative_net_saving: f64,
}

/// Means per task of one arm over the shared tasks.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ArmTotals {
    pub runs: Vec<String>,
    pub prompt_tokens: f64,
    pub uncached_prompt_tokens: f64,
    pub completion_tokens: f64,
    pub calls: f64,
    pub wall_secs: f64,
    /// Sum over tasks of the fraction of runs resolved (`2.5` of 4 tasks).
    pub resolved: f64,
    pub resolve_rate: f64,
}

/// The curve in a few numbers.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CurveTotals {
    /// Tasks in both arms (the positions).
    pub tasks: u32,
    pub learn: ArmTotals,
    pub baseline: ArmTotals,
    /// Means per task of the learn arm's notes and distillation.
    pub notes_prompt_tokens: f64,
    pub distill_prompt_tokens: f64,
    pub distill_completion_tokens: f64,
    pub distill_calls: f64,
    /// Relative changes learn vs baseline (`-0.234` = 23.4% fewer); `None`
    /// when the baseline's figure is 0.
    pub prompt_change: Option<f64>,
    pub uncached_change: Option<f64>,
    pub calls_change: Option<f64>,
    pub wall_change: Option<f64>,
    /// Learn prompt tokens plus distillation prompt tokens vs baseline.
    pub net_prompt_change: Option<f64>,
    /// Mean per-task difference learn − baseline, with a bootstrap 95%
    /// interval over tasks.
    pub prompt_diff: f64,
    pub prompt_diff_ci95: Option<(f64, f64)>,
    pub calls_diff: f64,
    pub calls_diff_ci95: Option<(f64, f64)>,
    pub net_prompt_diff: f64,
    pub net_prompt_diff_ci95: Option<(f64, f64)>,
    pub bootstrap_resamples: usize,
    pub bootstrap_seed: u64,
    /// Least-squares slope of the learn arm's prompt tokens per position
    /// (negative = the curve slopes down); `None` under two positions.
    pub learn_slope: Option<f64>,
    /// Slope of learn/baseline prompt tokens per position (positions with
    /// a zero baseline left out).
    pub ratio_slope: Option<f64>,
}

/// The learning-curve report.
#[derive(Debug, Clone, Serialize)]
pub struct LearningCurve {
    pub learn_runs: Vec<EvalRunRow>,
    pub baseline_runs: Vec<EvalRunRow>,
    pub points: Vec<CurvePoint>,
    pub totals: CurveTotals,
    /// What makes the curve weaker (tasks left out, unfinished
    /// distillation, runs in a different order, …).
    pub warnings: Vec<String>,
}
