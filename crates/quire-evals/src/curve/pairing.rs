//! Pairing the arms: each run's counted attempts, averaged per task and
//! run, matched position by position with the other arm; what weakens
//! the pairing is a warning.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use quire_store::{EvalResultRow, EvalResultStatus};

use super::totals::*;
use super::*;
use crate::learning::{DistillCost, DistillState, NotesUse};
use crate::stats::mean;

/// The figures of one attempt (or a mean of some).
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Sample {
    prompt: f64,
    uncached: f64,
    completion: f64,
    calls: f64,
    wall_secs: f64,
    resolved: f64,
    notes_prompt: f64,
    notes_shown: f64,
    notes_read: f64,
    distill_prompt: f64,
    distill_completion: f64,
    distill_calls: f64,
}

impl Sample {
    /// One attempt's figures, and whether its notes record is missing and
    /// its distillation not done.
    fn of(r: &EvalResultRow, distill: &HashMap<String, DistillCost>) -> (Sample, bool, bool) {
        let o = &r.outcome;
        let notes = NotesUse::from_details(&o.details);
        let cost = o
            .session_id
            .as_ref()
            .and_then(|id| distill.get(id.as_str()))
            .filter(|c| c.state == DistillState::Done);
        let sample = Sample {
            prompt: o.usage.prompt_tokens as f64,
            uncached: o.usage.prompt_tokens.saturating_sub(o.usage.cached_tokens) as f64,
            completion: o.usage.completion_tokens as f64,
            calls: f64::from(o.turns),
            wall_secs: o.wall_ms as f64 / 1000.0,
            resolved: if o.resolved { 1.0 } else { 0.0 },
            notes_prompt: notes.as_ref().map_or(0.0, |n| n.prompt_tokens as f64),
            notes_shown: notes.as_ref().map_or(0.0, |n| n.shown.len() as f64),
            notes_read: notes.as_ref().map_or(0.0, |n| n.read.len() as f64),
            distill_prompt: cost.map_or(0.0, |c| c.prompt_tokens as f64),
            distill_completion: cost.map_or(0.0, |c| c.completion_tokens as f64),
            distill_calls: cost.map_or(0.0, |c| f64::from(c.calls)),
        };
        (sample, notes.is_none(), cost.is_none())
    }

    /// Field by field mean; the default for none.
    fn mean(samples: &[Sample]) -> Sample {
        let m = |f: fn(&Sample) -> f64| mean(samples.iter().map(f)).unwrap_or(0.0);
        Sample {
            prompt: m(|s| s.prompt),
            uncached: m(|s| s.uncached),
            completion: m(|s| s.completion),
            calls: m(|s| s.calls),
            wall_secs: m(|s| s.wall_secs),
            resolved: m(|s| s.resolved),
            notes_prompt: m(|s| s.notes_prompt),
            notes_shown: m(|s| s.notes_shown),
            notes_read: m(|s| s.notes_read),
            distill_prompt: m(|s| s.distill_prompt),
            distill_completion: m(|s| s.distill_completion),
            distill_calls: m(|s| s.distill_calls),
        }
    }
}

/// One arm's figures for one task, a sample per run that finished it.
#[derive(Debug, Default)]
pub(super) struct TaskRuns {
    runs: Vec<Sample>,
    notes_missing: u32,
    distill_not_done: u32,
}

impl TaskRuns {
    fn point(&self) -> (ArmPoint, Sample) {
        let s = Sample::mean(&self.runs);
        let point = ArmPoint {
            runs: self.runs.len() as u32,
            prompt_tokens: s.prompt,
            uncached_prompt_tokens: s.uncached,
            completion_tokens: s.completion,
            calls: s.calls,
            wall_secs: s.wall_secs,
            resolved: s.resolved,
        };
        (point, s)
    }
}

/// The attempts of a run that count, in stored (planned) order: done ones,
/// attempt 1 only unless the run repeats tasks.
pub(super) fn counted(run: &ArmRun) -> impl Iterator<Item = &EvalResultRow> {
    let repeats = run.run.repeat > 1;
    run.results
        .iter()
        .filter(move |r| r.status == EvalResultStatus::Done && (repeats || r.attempt == 1))
}

/// Task ids in the order a run first finished them.
pub(super) fn task_order(run: &ArmRun) -> Vec<String> {
    let mut seen = BTreeSet::new();
    counted(run)
        .filter(|r| seen.insert(r.task_id.clone()))
        .map(|r| r.task_id.clone())
        .collect()
}

/// Per task, one averaged sample per run of the arm.
pub(super) fn gather(arm: &[ArmRun]) -> BTreeMap<String, TaskRuns> {
    let mut tasks: BTreeMap<String, TaskRuns> = BTreeMap::new();
    for run in arm {
        let mut per_task: BTreeMap<&str, Vec<Sample>> = BTreeMap::new();
        for r in counted(run) {
            let (sample, notes_missing, distill_not_done) = Sample::of(r, &run.distill);
            per_task.entry(&r.task_id).or_default().push(sample);
            let entry = tasks.entry(r.task_id.clone()).or_default();
            entry.notes_missing += u32::from(notes_missing);
            entry.distill_not_done += u32::from(distill_not_done);
        }
        for (task, samples) in per_task {
            tasks
                .entry(task.to_string())
                .or_default()
                .runs
                .push(Sample::mean(&samples));
        }
    }
    tasks
}

impl LearningCurve {
    /// `learn` and `baseline` each hold one or more runs (repeat runs of an
    /// arm). Positions follow the first learn run; tasks missing from
    /// either arm are left out and named in the warnings.
    pub fn new(learn: Vec<ArmRun>, baseline: Vec<ArmRun>) -> Result<LearningCurve, CurveError> {
        let learn_tasks = gather(&learn);
        let base_tasks = gather(&baseline);
        if learn_tasks.is_empty() {
            return Err(CurveError::EmptyArm { arm: "learn" });
        }
        if base_tasks.is_empty() {
            return Err(CurveError::EmptyArm { arm: "baseline" });
        }
        let order = learn.first().map(task_order).unwrap_or_default();
        let shared: Vec<&String> = order
            .iter()
            .filter(|t| base_tasks.contains_key(*t))
            .collect();
        if shared.is_empty() {
            return Err(CurveError::NoSharedTask);
        }
        let warnings = warnings(&learn, &baseline, &order, &learn_tasks, &base_tasks);

        let mut points = Vec::with_capacity(shared.len());
        let (mut cumulative, mut cumulative_net) = (0.0, 0.0);
        for (i, task) in shared.iter().enumerate() {
            let (Some(l), Some(b)) = (learn_tasks.get(*task), base_tasks.get(*task)) else {
                continue;
            };
            let (learn_point, ls) = l.point();
            let (base_point, _) = b.point();
            let saving = base_point.prompt_tokens - learn_point.prompt_tokens;
            let net_saving = saving - ls.distill_prompt;
            cumulative += saving;
            cumulative_net += net_saving;
            points.push(CurvePoint {
                position: i as u32 + 1,
                task_id: (*task).clone(),
                learn: learn_point,
                baseline: base_point,
                notes: NotesPoint {
                    prompt_tokens: ls.notes_prompt,
                    shown: ls.notes_shown,
                    read: ls.notes_read,
                    missing: l.notes_missing,
                },
                distill: DistillPoint {
                    prompt_tokens: ls.distill_prompt,
                    completion_tokens: ls.distill_completion,
                    calls: ls.distill_calls,
                    not_done: l.distill_not_done,
                },
                saving,
                net_saving,
                cumulative_saving: cumulative,
                cumulative_net_saving: cumulative_net,
            });
        }
        let totals = totals(&points, &learn, &baseline);
        Ok(LearningCurve {
            learn_runs: learn.into_iter().map(|r| r.run).collect(),
            baseline_runs: baseline.into_iter().map(|r| r.run).collect(),
            points,
            totals,
            warnings,
        })
    }
}

pub(super) fn warnings(
    learn: &[ArmRun],
    baseline: &[ArmRun],
    order: &[String],
    learn_tasks: &BTreeMap<String, TaskRuns>,
    base_tasks: &BTreeMap<String, TaskRuns>,
) -> Vec<String> {
    let mut out = Vec::new();
    let sets: BTreeSet<(&str, &str)> = learn
        .iter()
        .chain(baseline)
        .map(|r| (r.run.suite.as_str(), r.run.split.as_str()))
        .collect();
    if sets.len() > 1 {
        let sets: Vec<String> = sets.iter().map(|(s, p)| format!("{s} ({p})")).collect();
        out.push(format!("runs of different task sets: {}", sets.join(", ")));
    }
    for (name, arm) in [("learn", learn), ("baseline", baseline)] {
        let configs: BTreeSet<&str> = arm.iter().map(|r| r.run.config_hash.as_str()).collect();
        if configs.len() > 1 {
            out.push(format!(
                "the {name} runs have different agent configurations"
            ));
        }
    }
    let ordered: BTreeSet<&String> = order.iter().collect();
    // Tasks one side has and the other leaves out, each said in one line.
    let mut left_out = |what: &str, tasks: Vec<&String>| {
        if !tasks.is_empty() {
            let names: Vec<&str> = tasks.into_iter().map(String::as_str).collect();
            out.push(format!("{what} (left out): {}", names.join(", ")));
        }
    };
    left_out(
        "done in other learn runs but not the first",
        learn_tasks
            .keys()
            .filter(|t| !ordered.contains(t))
            .collect(),
    );
    left_out(
        "not done in the baseline",
        order
            .iter()
            .filter(|t| !base_tasks.contains_key(*t))
            .collect(),
    );
    left_out(
        "not done in the learn arm",
        base_tasks
            .keys()
            .filter(|t| !learn_tasks.contains_key(*t))
            .collect(),
    );
    if let Some(first) = learn.first() {
        for other in learn.iter().skip(1) {
            let theirs: Vec<String> = task_order(other)
                .into_iter()
                .filter(|t| ordered.contains(t))
                .collect();
            let mine: Vec<&String> = order.iter().filter(|t| theirs.contains(t)).collect();
            if theirs.iter().ne(mine.iter().copied()) {
                out.push(format!(
                    "learn run {} ran the tasks in another order than {}; positions follow {}",
                    other.run.id, first.run.id, first.run.id
                ));
            }
        }
    }
    for (name, arm, tasks) in [
        ("learn", learn, learn_tasks),
        ("baseline", baseline, base_tasks),
    ] {
        let partial: Vec<String> = order
            .iter()
            .filter_map(|t| tasks.get(t).map(|r| (t, r.runs.len())))
            .filter(|(_, n)| *n < arm.len())
            .map(|(t, n)| format!("{t} ({n}/{})", arm.len()))
            .collect();
        if !partial.is_empty() {
            out.push(format!(
                "not done in every {name} run (mean over the runs that did): {}",
                partial.join(", ")
            ));
        }
    }
    let shared = |t: &&String| base_tasks.contains_key(*t);
    let not_distilled: u32 = order
        .iter()
        .filter(shared)
        .filter_map(|t| learn_tasks.get(t))
        .map(|r| r.distill_not_done)
        .sum();
    if not_distilled > 0 {
        out.push(format!(
            "learn attempts without a finished distillation (pending, failed or none), counted as 0 tokens: {not_distilled}"
        ));
    }
    let no_notes: u32 = order
        .iter()
        .filter(shared)
        .filter_map(|t| learn_tasks.get(t))
        .map(|r| r.notes_missing)
        .sum();
    if no_notes > 0 {
        out.push(format!(
            "learn attempts without a notes record, counted as no notes: {no_notes}"
        ));
    }
    out
}
