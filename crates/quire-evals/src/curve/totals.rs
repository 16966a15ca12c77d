//! The curve in a few numbers: means per task, relative changes, paired
//! bootstrap intervals over tasks and least-squares slopes.

use super::*;
use crate::stats::{BOOTSTRAP_RESAMPLES, BOOTSTRAP_SEED, mean, paired_bootstrap};

/// Least-squares slope of y over x; `None` without two distinct x.
pub(super) fn slope(points: &[(f64, f64)]) -> Option<f64> {
    let xbar = mean(points.iter().map(|p| p.0))?;
    let ybar = mean(points.iter().map(|p| p.1))?;
    let sxx: f64 = points.iter().map(|p| (p.0 - xbar).powi(2)).sum();
    let sxy: f64 = points.iter().map(|p| (p.0 - xbar) * (p.1 - ybar)).sum();
    (sxx > 0.0).then(|| sxy / sxx)
}

/// `learn / baseline - 1`, `None` for a zero baseline.
pub(super) fn change(learn: f64, baseline: f64) -> Option<f64> {
    (baseline != 0.0).then(|| learn / baseline - 1.0)
}

pub(super) fn bootstrap(diffs: &[f64]) -> Option<(f64, f64)> {
    // One cluster per task: tasks are resampled, the arms' repeats were
    // already averaged into the task's figure.
    let clusters: Vec<Vec<f64>> = diffs.iter().map(|d| vec![*d]).collect();
    paired_bootstrap(&clusters, BOOTSTRAP_RESAMPLES, BOOTSTRAP_SEED)
}

pub(super) fn totals(points: &[CurvePoint], learn: &[ArmRun], baseline: &[ArmRun]) -> CurveTotals {
    let m = |f: &dyn Fn(&CurvePoint) -> f64| mean(points.iter().map(f)).unwrap_or(0.0);
    let arm = |runs: &[ArmRun], side: fn(&CurvePoint) -> &ArmPoint| {
        let resolved: f64 = points.iter().map(|p| side(p).resolved).sum();
        ArmTotals {
            runs: runs.iter().map(|r| r.run.id.clone()).collect(),
            prompt_tokens: m(&|p| side(p).prompt_tokens),
            uncached_prompt_tokens: m(&|p| side(p).uncached_prompt_tokens),
            completion_tokens: m(&|p| side(p).completion_tokens),
            calls: m(&|p| side(p).calls),
            wall_secs: m(&|p| side(p).wall_secs),
            resolved,
            resolve_rate: if points.is_empty() {
                0.0
            } else {
                resolved / points.len() as f64
            },
        }
    };
    let l = arm(learn, |p| &p.learn);
    let b = arm(baseline, |p| &p.baseline);
    let distill_prompt = m(&|p| p.distill.prompt_tokens);
    let prompt_diffs: Vec<f64> = points
        .iter()
        .map(|p| p.learn.prompt_tokens - p.baseline.prompt_tokens)
        .collect();
    let calls_diffs: Vec<f64> = points
        .iter()
        .map(|p| p.learn.calls - p.baseline.calls)
        .collect();
    let net_diffs: Vec<f64> = points.iter().map(|p| -p.net_saving).collect();
    let at = |p: &CurvePoint| f64::from(p.position);
    let learn_curve: Vec<(f64, f64)> = points
        .iter()
        .map(|p| (at(p), p.learn.prompt_tokens))
        .collect();
    let ratio_curve: Vec<(f64, f64)> = points
        .iter()
        .filter(|p| p.baseline.prompt_tokens > 0.0)
        .map(|p| (at(p), p.learn.prompt_tokens / p.baseline.prompt_tokens))
        .collect();
    CurveTotals {
        tasks: points.len() as u32,
        notes_prompt_tokens: m(&|p| p.notes.prompt_tokens),
        distill_prompt_tokens: distill_prompt,
        distill_completion_tokens: m(&|p| p.distill.completion_tokens),
        distill_calls: m(&|p| p.distill.calls),
        prompt_change: change(l.prompt_tokens, b.prompt_tokens),
        uncached_change: change(l.uncached_prompt_tokens, b.uncached_prompt_tokens),
        calls_change: change(l.calls, b.calls),
        wall_change: change(l.wall_secs, b.wall_secs),
        net_prompt_change: change(l.prompt_tokens + distill_prompt, b.prompt_tokens),
        prompt_diff: mean(prompt_diffs.iter().copied()).unwrap_or(0.0),
        prompt_diff_ci95: bootstrap(&prompt_diffs),
        calls_diff: mean(calls_diffs.iter().copied()).unwrap_or(0.0),
        calls_diff_ci95: bootstrap(&calls_diffs),
        net_prompt_diff: mean(net_diffs.iter().copied()).unwrap_or(0.0),
        net_prompt_diff_ci95: bootstrap(&net_diffs),
        bootstrap_resamples: BOOTSTRAP_RESAMPLES,
        bootstrap_seed: BOOTSTRAP_SEED,
        learn_slope: slope(&learn_curve),
        ratio_slope: slope(&ratio_curve),
        learn: l,
        baseline: b,
    }
}
