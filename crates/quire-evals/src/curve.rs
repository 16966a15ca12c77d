//! `quire eval curve`: does learning pay off as a suite goes on? A learn
//! run (notes on, distilled after each task) against a baseline run (notes
//! off) over the same tasks, position by position: prompt tokens, calls,
//! resolves, what the notes weighed and what distilling them cost, the
//! cumulative saving, and totals with a paired bootstrap interval. Text,
//! Markdown, SVG or JSON.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt::Write as _;

use quire_store::{EvalResultRow, EvalResultStatus, EvalRunRow};
use serde::Serialize;

use crate::learning::{DistillCost, DistillState, NotesUse};
use crate::report::{pct, secs, short_hash, tokens_text};
use crate::stats::{BOOTSTRAP_RESAMPLES, BOOTSTRAP_SEED, mean, paired_bootstrap};

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

/// The figures of one attempt (or a mean of some).
#[derive(Debug, Clone, Copy, Default)]
struct Sample {
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
struct TaskRuns {
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
fn counted(run: &ArmRun) -> impl Iterator<Item = &EvalResultRow> {
    let repeats = run.run.repeat > 1;
    run.results
        .iter()
        .filter(move |r| r.status == EvalResultStatus::Done && (repeats || r.attempt == 1))
}

/// Task ids in the order a run first finished them.
fn task_order(run: &ArmRun) -> Vec<String> {
    let mut seen = BTreeSet::new();
    counted(run)
        .filter(|r| seen.insert(r.task_id.clone()))
        .map(|r| r.task_id.clone())
        .collect()
}

/// Per task, one averaged sample per run of the arm.
fn gather(arm: &[ArmRun]) -> BTreeMap<String, TaskRuns> {
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

/// Least-squares slope of y over x; `None` without two distinct x.
fn slope(points: &[(f64, f64)]) -> Option<f64> {
    let xbar = mean(points.iter().map(|p| p.0))?;
    let ybar = mean(points.iter().map(|p| p.1))?;
    let sxx: f64 = points.iter().map(|p| (p.0 - xbar).powi(2)).sum();
    let sxy: f64 = points.iter().map(|p| (p.0 - xbar) * (p.1 - ybar)).sum();
    (sxx > 0.0).then(|| sxy / sxx)
}

/// `learn / baseline - 1`, `None` for a zero baseline.
fn change(learn: f64, baseline: f64) -> Option<f64> {
    (baseline != 0.0).then(|| learn / baseline - 1.0)
}

fn bootstrap(diffs: &[f64]) -> Option<(f64, f64)> {
    // One cluster per task: tasks are resampled, the arms' repeats were
    // already averaged into the task's figure.
    let clusters: Vec<Vec<f64>> = diffs.iter().map(|d| vec![*d]).collect();
    paired_bootstrap(&clusters, BOOTSTRAP_RESAMPLES, BOOTSTRAP_SEED)
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

    /// `learn vs baseline: prompt tokens -23.4% (…), calls …`.
    pub fn headline(&self) -> String {
        let t = &self.totals;
        let ci = t.prompt_diff_ci95.map_or_else(String::new, |(lo, hi)| {
            format!(
                " (95% CI of the per-task difference [{}, {}])",
                signed_tokens(lo),
                signed_tokens(hi)
            )
        });
        format!(
            "learn vs baseline: prompt tokens {}{ci}, calls {}, net of distillation {}, resolved {}/{} vs {}/{}",
            change_text(t.prompt_change),
            change_text(t.calls_change),
            change_text(t.net_prompt_change),
            count(t.learn.resolved),
            t.tasks,
            count(t.baseline.resolved),
            t.tasks
        )
    }

    /// A table for the terminal, then the totals.
    pub fn render_text(&self) -> String {
        let mut out = String::new();
        let t = &self.totals;
        let _ = writeln!(
            out,
            "learning curve · {} · {} in both arms",
            suite_text(&self.learn_runs),
            tasks_text(t.tasks)
        );
        for (label, runs) in [
            ("learn:   ", &self.learn_runs),
            ("baseline:", &self.baseline_runs),
        ] {
            let _ = writeln!(out, "{label} {}", arm_text(runs));
        }
        for w in &self.warnings {
            let _ = writeln!(out, "warning: {w}");
        }
        let width = self
            .points
            .iter()
            .map(|p| p.task_id.chars().count())
            .max()
            .unwrap_or(4)
            .max(4);
        let _ = writeln!(
            out,
            "\nprompt tokens per task (mean over runs); saved = cumulative baseline - learn, net = less distillation\n"
        );
        let row = |cells: [&str; 10]| {
            format!(
                "{:>3}  {:<width$}  {:>8}  {:>8}  {:>11}  {:>9}  {:>6}  {:>8}  {:>8}  {:>8}",
                cells[0],
                cells[1],
                cells[2],
                cells[3],
                cells[4],
                cells[5],
                cells[6],
                cells[7],
                cells[8],
                cells[9]
            )
        };
        let _ = writeln!(
            out,
            "{}",
            row([
                "pos",
                "task",
                "learn",
                "baseline",
                "calls L/B",
                "resolved",
                "notes",
                "distill",
                "saved",
                "net"
            ])
        );
        for p in &self.points {
            let cells = PointCells::of(p);
            let _ = writeln!(
                out,
                "{}",
                row([
                    &p.position.to_string(),
                    &p.task_id,
                    &cells.learn,
                    &cells.baseline,
                    &cells.calls,
                    &cells.resolved,
                    &cells.notes,
                    &cells.distill,
                    &cells.saved,
                    &cells.net,
                ])
            );
        }
        if self.points.iter().any(|p| p.distill.not_done > 0) {
            let _ = writeln!(
                out,
                "* distillation pending, failed or missing for some attempts: counted as 0"
            );
        }
        let _ = writeln!(out);
        for (label, arm) in [("learn:   ", &t.learn), ("baseline:", &t.baseline)] {
            let _ = writeln!(
                out,
                "mean per task, {label} {}",
                arm_totals_text(arm, t.tasks)
            );
        }
        let _ = writeln!(
            out,
            "learn notes: {} prompt tokens per task · distillation: {} prompt, {} completion tokens, {:.1} calls per task",
            tokens_text(t.notes_prompt_tokens.round() as u64),
            tokens_text(t.distill_prompt_tokens.round() as u64),
            tokens_text(t.distill_completion_tokens.round() as u64),
            t.distill_calls
        );
        let _ = writeln!(out, "{}", self.headline());
        let _ = writeln!(out, "{}", self.differences_text());
        let _ = writeln!(out, "{}", self.slopes_text());
        out
    }

    /// The same as Markdown tables, for pasting.
    pub fn render_markdown(&self) -> String {
        let mut out = String::new();
        let t = &self.totals;
        let _ = writeln!(
            out,
            "### Learning curve: learn {} vs baseline {}\n\n{} · {} in both arms\n",
            code_ids(&self.learn_runs),
            code_ids(&self.baseline_runs),
            suite_text(&self.learn_runs),
            tasks_text(t.tasks)
        );
        let _ = writeln!(
            out,
            "| arm | runs | agent | config | model | prompt tokens | uncached | calls | time | resolved |\n|---|---|---|---|---|---:|---:|---:|---:|---:|"
        );
        for (label, runs, arm) in [
            ("learn", &self.learn_runs, &t.learn),
            ("baseline", &self.baseline_runs, &t.baseline),
        ] {
            let first = runs.first();
            let _ = writeln!(
                out,
                "| {label} | {} | {} | `{}` | `{}` | {} | {} | {:.1} | {} | {}/{} ({}) |",
                code_ids(runs),
                first.map_or("", |r| r.agent.as_str()),
                first.map_or("", |r| short_hash(&r.config_hash)),
                first.map_or("", |r| r.model.as_str()),
                tokens_text(arm.prompt_tokens.round() as u64),
                tokens_text(arm.uncached_prompt_tokens.round() as u64),
                arm.calls,
                secs(arm.wall_secs),
                count(arm.resolved),
                t.tasks,
                pct(arm.resolve_rate)
            );
        }
        for w in &self.warnings {
            let _ = writeln!(out, "\n> warning: {w}");
        }
        let _ = writeln!(out, "\n**{}**\n", self.headline());
        let _ = writeln!(
            out,
            "- {}\n- {}\n- learn notes: {} prompt tokens per task; distillation: {} prompt, {} completion tokens, {:.1} calls per task\n",
            self.differences_text(),
            self.slopes_text(),
            tokens_text(t.notes_prompt_tokens.round() as u64),
            tokens_text(t.distill_prompt_tokens.round() as u64),
            tokens_text(t.distill_completion_tokens.round() as u64),
            t.distill_calls
        );
        let _ = writeln!(
            out,
            "| # | task | learn prompt | baseline prompt | calls L/B | resolved L/B | notes | distill | saved (cumulative) | net of distillation |\n|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|"
        );
        for p in &self.points {
            let c = PointCells::of(p);
            let _ = writeln!(
                out,
                "| {} | `{}` | {} | {} | {} | {} | {} | {} | {} | {} |",
                p.position,
                p.task_id.replace('|', "\\|").replace('`', "'"),
                c.learn,
                c.baseline,
                c.calls,
                c.resolved,
                c.notes,
                c.distill.replace('*', "\\*"),
                c.saved,
                c.net
            );
        }
        if self.points.iter().any(|p| p.distill.not_done > 0) {
            let _ = writeln!(
                out,
                "\n\\* distillation pending, failed or missing for some attempts: counted as 0."
            );
        }
        out
    }

    /// A self-contained 720×400 SVG: prompt tokens per task over position,
    /// one line per arm and a dashed one for learn + distillation.
    pub fn render_svg(&self) -> String {
        svg(self)
    }

    /// `mean per-task difference (learn - baseline): …`.
    fn differences_text(&self) -> String {
        let t = &self.totals;
        let ci = |ci: Option<(f64, f64)>, f: fn(f64) -> String| {
            ci.map_or_else(String::new, |(lo, hi)| format!(" [{}, {}]", f(lo), f(hi)))
        };
        let calls = |v: f64| format!("{v:+.1}");
        format!(
            "mean per-task difference (learn - baseline, 95% CI over tasks): prompt tokens {}{} · calls {}{} · net of distillation {}{}",
            signed_tokens(t.prompt_diff),
            ci(t.prompt_diff_ci95, signed_tokens),
            calls(t.calls_diff),
            ci(t.calls_diff_ci95, calls),
            signed_tokens(t.net_prompt_diff),
            ci(t.net_prompt_diff_ci95, signed_tokens)
        )
    }

    /// The slopes, in words.
    fn slopes_text(&self) -> String {
        let t = &self.totals;
        format!(
            "slope per position (negative = the curve slopes down): learn prompt tokens {} · learn/baseline {}",
            t.learn_slope
                .map_or_else(|| "n/a".into(), |s| format!("{s:+.1}")),
            t.ratio_slope
                .map_or_else(|| "n/a".into(), |s| format!("{s:+.3}"))
        )
    }
}

/// The cells of a position's row, shared by text and Markdown.
struct PointCells {
    learn: String,
    baseline: String,
    calls: String,
    resolved: String,
    notes: String,
    distill: String,
    saved: String,
    net: String,
}

impl PointCells {
    fn of(p: &CurvePoint) -> PointCells {
        let mark = if p.distill.not_done > 0 { "*" } else { "" };
        PointCells {
            learn: tokens_text(p.learn.prompt_tokens.round() as u64),
            baseline: tokens_text(p.baseline.prompt_tokens.round() as u64),
            calls: format!("{:.1}/{:.1}", p.learn.calls, p.baseline.calls),
            resolved: format!("{}/{}", count(p.learn.resolved), count(p.baseline.resolved)),
            notes: tokens_text(p.notes.prompt_tokens.round() as u64),
            distill: format!(
                "{}{mark}",
                tokens_text(p.distill.prompt_tokens.round() as u64)
            ),
            saved: signed_tokens(p.cumulative_saving),
            net: signed_tokens(p.cumulative_net_saving),
        }
    }
}

fn totals(points: &[CurvePoint], learn: &[ArmRun], baseline: &[ArmRun]) -> CurveTotals {
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

fn warnings(
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

/// `+1.2k` / `-812` tokens.
fn signed_tokens(v: f64) -> String {
    let magnitude = tokens_text(v.abs().round() as u64);
    if v < 0.0 && magnitude != "0" {
        format!("-{magnitude}")
    } else {
        format!("+{magnitude}")
    }
}

/// `-23.4%`, or `n/a` without a baseline figure.
fn change_text(change: Option<f64>) -> String {
    change.map_or_else(|| "n/a".into(), |c| format!("{:+.1}%", c * 100.0))
}

/// `1 task`, `4 tasks`.
fn tasks_text(n: u32) -> String {
    if n == 1 {
        "1 task".into()
    } else {
        format!("{n} tasks")
    }
}

/// A count that may be a mean over runs: `3`, or `2.5`.
fn count(v: f64) -> String {
    if (v - v.round()).abs() < 1e-9 {
        format!("{}", v.round() as i64)
    } else {
        format!("{v:.1}")
    }
}

fn suite_text(runs: &[EvalRunRow]) -> String {
    runs.first()
        .map_or_else(String::new, |r| format!("suite {} ({})", r.suite, r.split))
}

/// `01A, 01B · agent default (0123456789ab) · model m`.
fn arm_text(runs: &[EvalRunRow]) -> String {
    let ids: Vec<&str> = runs.iter().map(|r| r.id.as_str()).collect();
    match runs.first() {
        Some(r) => format!(
            "{} · agent {} ({}) · model {}",
            ids.join(", "),
            r.agent,
            short_hash(&r.config_hash),
            r.model
        ),
        None => String::new(),
    }
}

fn arm_totals_text(arm: &ArmTotals, tasks: u32) -> String {
    format!(
        "{} prompt tokens ({} uncached) · {} completion · {:.1} calls · {} · resolved {}/{} ({})",
        tokens_text(arm.prompt_tokens.round() as u64),
        tokens_text(arm.uncached_prompt_tokens.round() as u64),
        tokens_text(arm.completion_tokens.round() as u64),
        arm.calls,
        secs(arm.wall_secs),
        count(arm.resolved),
        tasks,
        pct(arm.resolve_rate)
    )
}

fn code_ids(runs: &[EvalRunRow]) -> String {
    runs.iter()
        .map(|r| format!("`{}`", r.id))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Text safe inside SVG elements and attribute values.
fn xml_escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            c if c.is_control() && c != '\n' && c != '\t' => out.push('\u{fffd}'),
            c => out.push(c),
        }
    }
    out
}

/// At most `max` characters, with an ellipsis when cut.
fn clip(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        text.to_string()
    } else {
        let mut cut: String = text.chars().take(max.saturating_sub(1)).collect();
        cut.push('…');
        cut
    }
}

/// `01A, 01B +3 more`: as many ids as fit in about 30 characters (at
/// least one), so the SVG's subtitle stays on one line.
fn ids_short(runs: &[EvalRunRow]) -> String {
    let mut shown: Vec<&str> = Vec::new();
    let mut used = 0;
    for r in runs {
        if !shown.is_empty() && used + 2 + r.id.chars().count() > 30 {
            break;
        }
        used += r.id.chars().count() + if shown.is_empty() { 0 } else { 2 };
        shown.push(&r.id);
    }
    let more = runs.len() - shown.len();
    if more > 0 {
        format!("{} +{more} more", shown.join(", "))
    } else {
        shown.join(", ")
    }
}

/// A tick label exact enough that `1250` is not shown as `1.2k`.
fn tick_text(v: f64) -> String {
    let trimmed = |x: f64| {
        let text = format!("{x:.2}");
        text.trim_end_matches('0').trim_end_matches('.').to_string()
    };
    if v < 1e3 {
        format!("{}", v.round() as u64)
    } else if v < 1e6 {
        format!("{}k", trimmed(v / 1e3))
    } else {
        format!("{}M", trimmed(v / 1e6))
    }
}

/// A 1–2–2.5–5 step giving about `target` ticks up to `max` (at least 1).
fn nice_step(max: f64, target: f64) -> f64 {
    let raw = (max / target).max(1.0);
    let mag = 10f64.powf(raw.log10().floor());
    let norm = raw / mag;
    let nice = if norm <= 1.0 {
        1.0
    } else if norm <= 2.0 {
        2.0
    } else if norm <= 2.5 {
        2.5
    } else if norm <= 5.0 {
        5.0
    } else {
        10.0
    };
    nice * mag
}

const SVG_W: f64 = 720.0;
const SVG_H: f64 = 400.0;
const PLOT_LEFT: f64 = 72.0;
const PLOT_RIGHT: f64 = 696.0;
const PLOT_TOP: f64 = 48.0;
const PLOT_BOTTOM: f64 = 318.0;
const LEARN_COLOUR: &str = "#1a5fb4";
const BASE_COLOUR: &str = "#c64600";

fn svg(curve: &LearningCurve) -> String {
    let pts = &curve.points;
    let n = pts.len();
    let max = pts
        .iter()
        .flat_map(|p| {
            [
                p.learn.prompt_tokens,
                p.baseline.prompt_tokens,
                p.learn.prompt_tokens + p.distill.prompt_tokens,
            ]
        })
        .filter(|v| v.is_finite())
        .fold(0.0_f64, f64::max);
    let step = nice_step(max.max(1.0), 5.0);
    // A little headroom, so the highest point does not sit on the frame.
    let y_max = ((max * 1.04 / step).ceil() * step).max(step);
    let inset = 16.0;
    let x = |pos: u32| -> f64 {
        if n <= 1 {
            (PLOT_LEFT + PLOT_RIGHT) / 2.0
        } else {
            let span = PLOT_RIGHT - PLOT_LEFT - 2.0 * inset;
            PLOT_LEFT + inset + f64::from(pos - 1) / (n - 1) as f64 * span
        }
    };
    let y = |v: f64| PLOT_BOTTOM - v / y_max * (PLOT_BOTTOM - PLOT_TOP);

    let mut out = String::new();
    let runs = format!(
        "learn {} vs baseline {}",
        ids_short(&curve.learn_runs),
        ids_short(&curve.baseline_runs)
    );
    let _ = writeln!(
        out,
        r##"<svg xmlns="http://www.w3.org/2000/svg" width="{SVG_W}" height="{SVG_H}" viewBox="0 0 {SVG_W} {SVG_H}" font-family="sans-serif" font-size="12" fill="#222">"##
    );
    let _ = writeln!(out, "<title>Learning curve: {}</title>", xml_escape(&runs));
    let _ = writeln!(
        out,
        r##"<rect x="0" y="0" width="{SVG_W}" height="{SVG_H}" fill="#ffffff"/>"##
    );
    let _ = writeln!(
        out,
        r#"<text x="{}" y="20" text-anchor="middle" font-size="14" font-weight="bold">Learning curve: prompt tokens per task</text>"#,
        SVG_W / 2.0
    );
    // Run ids are long (ULIDs): their own smaller line, clipped to fit.
    let _ = writeln!(
        out,
        r##"<text x="{}" y="36" text-anchor="middle" font-size="11" fill="#555">{}</text>"##,
        SVG_W / 2.0,
        xml_escape(&clip(&runs, 92))
    );
    // Horizontal grid with the y ticks.
    let mut tick = 0.0;
    while tick <= y_max + step / 2.0 {
        let ty = y(tick);
        let _ = writeln!(
            out,
            r##"<line x1="{PLOT_LEFT}" y1="{ty:.1}" x2="{PLOT_RIGHT}" y2="{ty:.1}" stroke="#e4e4e4"/>"##
        );
        let _ = writeln!(
            out,
            r#"<text x="{:.1}" y="{:.1}" text-anchor="end">{}</text>"#,
            PLOT_LEFT - 6.0,
            ty + 4.0,
            xml_escape(&tick_text(tick))
        );
        tick += step;
    }
    let _ = writeln!(
        out,
        r##"<line x1="{PLOT_LEFT}" y1="{PLOT_TOP}" x2="{PLOT_LEFT}" y2="{PLOT_BOTTOM}" stroke="#444"/>"##
    );
    let _ = writeln!(
        out,
        r##"<line x1="{PLOT_LEFT}" y1="{PLOT_BOTTOM}" x2="{PLOT_RIGHT}" y2="{PLOT_BOTTOM}" stroke="#444"/>"##
    );
    // x ticks: every position, thinned to about 20 labels.
    let every = n.div_ceil(20).max(1);
    for p in pts {
        let tx = x(p.position);
        let _ = writeln!(
            out,
            r##"<line x1="{tx:.1}" y1="{PLOT_BOTTOM}" x2="{tx:.1}" y2="{:.1}" stroke="#444"/>"##,
            PLOT_BOTTOM + 4.0
        );
    }
    for p in pts.iter().step_by(every) {
        let _ = writeln!(
            out,
            r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">{}</text>"#,
            x(p.position),
            PLOT_BOTTOM + 18.0,
            p.position
        );
    }
    let _ = writeln!(
        out,
        r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">task position</text>"#,
        (PLOT_LEFT + PLOT_RIGHT) / 2.0,
        PLOT_BOTTOM + 36.0
    );
    let _ = writeln!(
        out,
        r#"<text transform="rotate(-90)" x="{:.1}" y="16" text-anchor="middle">prompt tokens per task</text>"#,
        -(PLOT_TOP + PLOT_BOTTOM) / 2.0
    );
    let line = |values: &dyn Fn(&CurvePoint) -> f64| -> String {
        pts.iter()
            .map(|p| format!("{:.1},{:.1}", x(p.position), y(values(p))))
            .collect::<Vec<_>>()
            .join(" ")
    };
    let _ = writeln!(
        out,
        r#"<polyline fill="none" stroke="{LEARN_COLOUR}" stroke-width="1.5" stroke-dasharray="6 4" points="{}"/>"#,
        line(&|p| p.learn.prompt_tokens + p.distill.prompt_tokens)
    );
    let _ = writeln!(
        out,
        r#"<polyline fill="none" stroke="{BASE_COLOUR}" stroke-width="2" points="{}"/>"#,
        line(&|p| p.baseline.prompt_tokens)
    );
    let _ = writeln!(
        out,
        r#"<polyline fill="none" stroke="{LEARN_COLOUR}" stroke-width="2" points="{}"/>"#,
        line(&|p| p.learn.prompt_tokens)
    );
    for p in pts {
        let tx = x(p.position);
        for (colour, value, arm) in [
            (BASE_COLOUR, p.baseline.prompt_tokens, "baseline"),
            (LEARN_COLOUR, p.learn.prompt_tokens, "learn"),
        ] {
            let tip = format!(
                "{}. {}: {arm} {} prompt tokens",
                p.position,
                p.task_id,
                tokens_text(value.round() as u64)
            );
            let _ = writeln!(
                out,
                r#"<circle cx="{tx:.1}" cy="{:.1}" r="3.5" fill="{colour}"><title>{}</title></circle>"#,
                y(value),
                xml_escape(&tip)
            );
        }
    }
    // Legend, one row under the axis title.
    let legend_y = SVG_H - 20.0;
    let items = [
        (LEARN_COLOUR, "", "learn (notes on)"),
        (BASE_COLOUR, "", "baseline (notes off)"),
        (
            LEARN_COLOUR,
            r#" stroke-dasharray="6 4""#,
            "learn + distillation",
        ),
    ];
    // About 6.5px a character at 12px sans-serif: the row is centred.
    let width = |label: &str| 30.0 + label.chars().count() as f64 * 6.5 + 28.0;
    let mut lx = (SVG_W - items.iter().map(|i| width(i.2)).sum::<f64>()) / 2.0;
    for (colour, dash, label) in items {
        let _ = writeln!(
            out,
            r#"<line x1="{lx:.1}" y1="{:.1}" x2="{:.1}" y2="{:.1}" stroke="{colour}" stroke-width="2"{dash}/>"#,
            legend_y - 4.0,
            lx + 24.0,
            legend_y - 4.0
        );
        let _ = writeln!(
            out,
            r#"<text x="{:.1}" y="{legend_y:.1}">{}</text>"#,
            lx + 30.0,
            xml_escape(label)
        );
        lx += width(label);
    }
    out.push_str("</svg>\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::tests::run_row;
    use quire_store::EvalOutcome;
    use quire_types::{SessionId, Usage};

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-6
    }

    /// One done attempt; its session is `<run>-<task>-<attempt>`.
    struct Attempt {
        task: &'static str,
        attempt: u32,
        prompt: u64,
        cached: u64,
        turns: u32,
        resolved: bool,
        notes_tokens: Option<u64>,
    }

    fn attempt(task: &'static str, prompt: u64, turns: u32, resolved: bool) -> Attempt {
        Attempt {
            task,
            attempt: 1,
            prompt,
            cached: 0,
            turns,
            resolved,
            notes_tokens: None,
        }
    }

    fn session(run: &str, task: &str, attempt: u32) -> String {
        format!("{run}-{task}-{attempt}")
    }

    fn row(run: &str, a: &Attempt) -> EvalResultRow {
        let details = match a.notes_tokens {
            Some(t) => serde_json::json!({ "notes": NotesUse {
                shown: vec!["n1".into(), "n2".into()],
                inlined: vec![],
                read: vec!["n1".into()],
                prompt_tokens: t,
            }}),
            None => serde_json::json!({}),
        };
        EvalResultRow {
            run_id: run.into(),
            task_id: a.task.into(),
            attempt: a.attempt,
            status: EvalResultStatus::Done,
            started_at: None,
            ended_at: None,
            outcome: EvalOutcome {
                session_id: Some(SessionId(session(run, a.task, a.attempt))),
                resolved: a.resolved,
                category: if a.resolved {
                    "resolved"
                } else {
                    "hidden_failed"
                }
                .into(),
                usage: Usage {
                    prompt_tokens: a.prompt,
                    completion_tokens: 100,
                    cached_tokens: a.cached,
                },
                turns: a.turns,
                wall_ms: 2000,
                details,
                ..EvalOutcome::default()
            },
        }
    }

    fn cost(state: DistillState, prompt: u64) -> DistillCost {
        DistillCost {
            state,
            prompt_tokens: prompt,
            completion_tokens: 20,
            cached_tokens: 0,
            calls: 2,
            notes_written: 1,
        }
    }

    /// A run of `attempts`; each session distilled for `distill` prompt
    /// tokens (a learn run) or not at all (`None`, a baseline).
    fn arm_run(id: &str, attempts: &[Attempt], distill: Option<u64>) -> ArmRun {
        let mut run = run_row();
        run.id = id.into();
        let distill = distill.map_or_else(HashMap::new, |prompt| {
            attempts
                .iter()
                .map(|a| {
                    (
                        session(id, a.task, a.attempt),
                        cost(DistillState::Done, prompt),
                    )
                })
                .collect()
        });
        ArmRun {
            run,
            results: attempts.iter().map(|a| row(id, a)).collect(),
            distill,
        }
    }

    fn notes(mut a: Attempt, tokens: u64) -> Attempt {
        a.notes_tokens = Some(tokens);
        a
    }

    /// Learn prompt tokens a 1100, b 800, c 700, d 500 (means of two runs);
    /// baseline 1000, 1100, 1000, 1000. Distillation 100 (L1) and 200 (L2)
    /// per session, but L2's distillation of `d` is pending.
    fn arms() -> (Vec<ArmRun>, Vec<ArmRun>) {
        let mut a1 = attempt("a", 1000, 10, true);
        a1.cached = 400;
        let l1 = arm_run(
            "01L1",
            &[
                a1,
                notes(attempt("b", 900, 8, true), 60),
                notes(attempt("c", 600, 6, true), 40),
                notes(attempt("d", 500, 5, true), 30),
            ],
            Some(100),
        );
        let mut l2 = arm_run(
            "01L2",
            &[
                attempt("a", 1200, 10, true),
                notes(attempt("b", 700, 8, true), 20),
                notes(attempt("c", 800, 6, true), 40),
                notes(attempt("d", 500, 5, false), 50),
            ],
            Some(200),
        );
        l2.distill
            .insert(session("01L2", "d", 1), cost(DistillState::Pending, 999));
        let b1 = arm_run(
            "01B1",
            &[
                attempt("a", 1000, 10, true),
                attempt("b", 1000, 10, true),
                attempt("c", 1000, 10, false),
                attempt("d", 1100, 10, true),
            ],
            None,
        );
        let b2 = arm_run(
            "01B2",
            &[
                attempt("a", 1000, 10, true),
                attempt("b", 1200, 10, true),
                attempt("c", 1000, 10, false),
                attempt("d", 900, 10, true),
            ],
            None,
        );
        (vec![l1, l2], vec![b1, b2])
    }

    #[test]
    fn per_position_means_and_cumulative_savings() {
        let (learn, baseline) = arms();
        let curve = LearningCurve::new(learn, baseline).unwrap();
        let tasks: Vec<&str> = curve.points.iter().map(|p| p.task_id.as_str()).collect();
        assert_eq!(tasks, ["a", "b", "c", "d"]);
        let positions: Vec<u32> = curve.points.iter().map(|p| p.position).collect();
        assert_eq!(positions, [1, 2, 3, 4]);
        let learn: Vec<f64> = curve.points.iter().map(|p| p.learn.prompt_tokens).collect();
        assert_eq!(learn, [1100.0, 800.0, 700.0, 500.0]);
        let base: Vec<f64> = curve
            .points
            .iter()
            .map(|p| p.baseline.prompt_tokens)
            .collect();
        assert_eq!(base, [1000.0, 1100.0, 1000.0, 1000.0]);
        let a = &curve.points[0];
        assert!(close(a.learn.uncached_prompt_tokens, 900.0), "{a:?}");
        assert!(close(a.learn.calls, 10.0) && close(a.learn.wall_secs, 2.0));
        assert_eq!((a.learn.runs, a.baseline.runs), (2, 2));
        let d = &curve.points[3];
        assert!(close(d.learn.resolved, 0.5), "{d:?}");
        assert!(close(curve.points[2].baseline.resolved, 0.0));
        // Notes: b had 60 and 20 tokens, two shown and one read each time.
        let b = &curve.points[1];
        assert!(close(b.notes.prompt_tokens, 40.0), "{b:?}");
        assert!(close(b.notes.shown, 2.0) && close(b.notes.read, 1.0));
        assert_eq!(a.notes.missing, 2);
        // Distillation: (100 + 200) / 2, except d where the pending one is 0.
        assert!(close(a.distill.prompt_tokens, 150.0) && close(a.distill.calls, 2.0));
        assert!(close(d.distill.prompt_tokens, 50.0), "{d:?}");
        assert_eq!((a.distill.not_done, d.distill.not_done), (0, 1));
        let cumulative: Vec<f64> = curve.points.iter().map(|p| p.cumulative_saving).collect();
        assert_eq!(cumulative, [-100.0, 200.0, 500.0, 1000.0]);
        let net: Vec<f64> = curve
            .points
            .iter()
            .map(|p| p.cumulative_net_saving)
            .collect();
        assert_eq!(net, [-250.0, -100.0, 50.0, 500.0]);
        assert!(
            curve
                .warnings
                .iter()
                .any(|w| w.contains("counted as 0 tokens: 1")),
            "{:?}",
            curve.warnings
        );
    }

    #[test]
    fn totals_changes_interval_and_slopes() {
        let (learn, baseline) = arms();
        let curve = LearningCurve::new(learn, baseline).unwrap();
        let t = &curve.totals;
        assert_eq!(t.tasks, 4);
        assert!(close(t.learn.prompt_tokens, 775.0) && close(t.baseline.prompt_tokens, 1025.0));
        assert!(
            close(t.prompt_change.unwrap(), 775.0 / 1025.0 - 1.0),
            "{t:?}"
        );
        assert!(close(t.distill_prompt_tokens, 125.0));
        assert!(close(t.net_prompt_change.unwrap(), 900.0 / 1025.0 - 1.0));
        assert!(close(t.calls_change.unwrap(), -0.275));
        assert!(close(t.learn.resolved, 3.5) && close(t.baseline.resolved, 3.0));
        assert!(close(t.prompt_diff, -250.0) && close(t.net_prompt_diff, -125.0));
        let (lo, hi) = t.prompt_diff_ci95.unwrap();
        assert!(
            lo <= -250.0 && -250.0 <= hi && lo >= -500.0 && hi <= 100.0,
            "{lo} {hi}"
        );
        assert!(hi > lo, "tasks differ, so the interval has width");
        let (clo, chi) = t.calls_diff_ci95.unwrap();
        assert!(clo <= -2.75 && -2.75 <= chi, "{clo} {chi}");
        // (1, 1100) (2, 800) (3, 700) (4, 500): slope -190.
        assert!(close(t.learn_slope.unwrap(), -190.0), "{t:?}");
        assert!(t.ratio_slope.unwrap() < 0.0);
        let text = curve.render_text();
        assert!(
            text.contains(
                "learn vs baseline: prompt tokens -24.4% (95% CI of the per-task difference ["
            ) && text.contains("calls -27.5%, net of distillation -12.2%, resolved 3.5/4 vs 3/4"),
            "{text}"
        );
        assert!(text.contains("  4  d"), "{text}");
        assert!(text.contains("· 4 tasks in both arms"), "{text}");
        assert!(text.contains("50*"), "pending distillation marked: {text}");
        let md = curve.render_markdown();
        assert!(
            md.contains("| 2 | `b` | 800 | 1.1k | 8.0/10.0 | 1/1 | 40 | 150 | +200 | -100 |"),
            "{md}"
        );
        let json = serde_json::to_value(&curve).unwrap();
        assert_eq!(json["points"].as_array().map(Vec::len), Some(4));
        assert_eq!(json["totals"]["tasks"], 4);
        assert_eq!(json["points"][3]["cumulative_saving"], 1000.0);
    }

    #[test]
    fn a_rising_curve_has_a_positive_slope() {
        let learn = vec![arm_run(
            "01L",
            &[
                attempt("a", 100, 1, true),
                attempt("b", 200, 1, true),
                attempt("c", 400, 1, true),
            ],
            Some(0),
        )];
        let baseline = vec![arm_run(
            "01B",
            &[
                attempt("c", 300, 1, true),
                attempt("b", 300, 1, true),
                attempt("a", 300, 1, true),
            ],
            None,
        )];
        let curve = LearningCurve::new(learn, baseline).unwrap();
        // Positions follow the learn run, not the baseline's order.
        assert_eq!(curve.points[0].task_id, "a");
        assert!(close(curve.totals.learn_slope.unwrap(), 150.0));
        assert!(curve.totals.ratio_slope.unwrap() > 0.0);
        assert!(close(
            curve.totals.prompt_change.unwrap(),
            700.0 / 900.0 - 1.0
        ));
    }

    #[test]
    fn repeats_average_attempts_and_unshared_or_unfinished_are_left_out() {
        let mut learn = arm_run(
            "01L",
            &[
                attempt("a", 100, 1, true),
                Attempt {
                    attempt: 2,
                    ..attempt("a", 300, 3, false)
                },
                attempt("only-learn", 100, 1, true),
                attempt("b", 500, 1, true),
            ],
            Some(10),
        );
        learn.run.repeat = 2;
        learn.results[3].status = EvalResultStatus::Pending;
        let mut base = arm_run(
            "01B",
            &[
                attempt("a", 400, 4, true),
                Attempt {
                    attempt: 2,
                    ..attempt("a", 999, 9, true)
                },
                attempt("b", 400, 4, true),
                attempt("only-base", 400, 4, true),
            ],
            None,
        );
        // Repeat 1: a second attempt does not count.
        base.run.repeat = 1;
        let curve = LearningCurve::new(vec![learn], vec![base]).unwrap();
        assert_eq!(curve.points.len(), 1, "{:?}", curve.points);
        let a = &curve.points[0];
        assert!(close(a.learn.prompt_tokens, 200.0) && close(a.learn.calls, 2.0));
        assert!(close(a.learn.resolved, 0.5));
        assert!(close(a.baseline.prompt_tokens, 400.0), "{a:?}");
        let w = curve.warnings.join("\n");
        assert!(
            w.contains("not done in the baseline (left out): only-learn"),
            "{w}"
        );
        assert!(
            w.contains("not done in the learn arm (left out): b, only-base"),
            "{w}"
        );
    }

    #[test]
    fn an_empty_arm_or_disjoint_tasks_are_errors() {
        let (learn, baseline) = arms();
        assert_eq!(
            LearningCurve::new(vec![], baseline.clone()).unwrap_err(),
            CurveError::EmptyArm { arm: "learn" }
        );
        assert_eq!(
            LearningCurve::new(learn.clone(), vec![]).unwrap_err(),
            CurveError::EmptyArm { arm: "baseline" }
        );
        let mut unfinished = baseline.clone();
        for run in &mut unfinished {
            for r in &mut run.results {
                r.status = EvalResultStatus::Pending;
            }
        }
        assert_eq!(
            LearningCurve::new(learn.clone(), unfinished).unwrap_err(),
            CurveError::EmptyArm { arm: "baseline" }
        );
        let other = vec![arm_run("01X", &[attempt("zzz", 1, 1, true)], None)];
        assert_eq!(
            LearningCurve::new(learn, other).unwrap_err(),
            CurveError::NoSharedTask
        );
    }

    #[test]
    fn tick_labels_are_exact_and_steps_nice() {
        assert_eq!(tick_text(1250.0), "1.25k");
        assert_eq!(tick_text(1000.0), "1k");
        assert_eq!(tick_text(750.0), "750");
        assert_eq!(tick_text(2_500_000.0), "2.5M");
        assert_eq!(nice_step(1250.0, 5.0), 250.0);
        assert_eq!(nice_step(9000.0, 5.0), 2000.0);
        assert_eq!(nice_step(3.0, 5.0), 1.0);
        let run = |id: &str| EvalRunRow {
            id: id.into(),
            ..run_row()
        };
        assert_eq!(ids_short(&[run("01A"), run("01B")]), "01A, 01B");
        let long = [run(&"X".repeat(26)), run("01B"), run("01C")];
        assert_eq!(ids_short(&long), format!("{} +2 more", "X".repeat(26)));
    }

    #[test]
    fn svg_has_three_lines_and_escapes_data() {
        let learn = arm_run(
            "01L<&>",
            &[
                attempt("a<b&c", 1000, 5, true),
                attempt("d\"e'", 500, 3, true),
            ],
            Some(100),
        );
        let base = arm_run(
            "01B",
            &[
                attempt("a<b&c", 1200, 6, true),
                attempt("d\"e'", 1200, 6, true),
            ],
            None,
        );
        let curve = LearningCurve::new(vec![learn], vec![base]).unwrap();
        let svg = curve.render_svg();
        assert!(svg.starts_with("<svg"), "{svg}");
        assert!(svg.trim_end().ends_with("</svg>"));
        assert_eq!(svg.matches("<polyline").count(), 3, "{svg}");
        assert_eq!(svg.matches("stroke-dasharray").count(), 2, "line + legend");
        assert!(svg.contains("a&lt;b&amp;c") && svg.contains("d&quot;e&apos;"));
        assert!(!svg.contains("a<b") && !svg.contains("d\"e"), "{svg}");
        assert!(
            svg.contains("learn 01L&lt;&amp;&gt; vs baseline 01B"),
            "{svg}"
        );
        for forbidden in ["<script", "href", "@import", "url("] {
            assert!(!svg.contains(forbidden), "{forbidden}");
        }
        // Outside attribute values and escapes, `&` and `<` only open tags
        // and entities: every `&` starts one of the five escapes.
        for (i, _) in svg.match_indices('&') {
            let rest = &svg[i..];
            assert!(
                ["&amp;", "&lt;", "&gt;", "&quot;", "&apos;"]
                    .iter()
                    .any(|e| rest.starts_with(e)),
                "{}",
                &rest[..rest.len().min(12)]
            );
        }
        // The highest point (1200) is inside the plot, the lowest below it.
        let ys: Vec<f64> = svg
            .match_indices("cy=\"")
            .filter_map(|(i, m)| {
                let rest = &svg[i + m.len()..];
                rest.split('"').next()?.parse().ok()
            })
            .collect();
        assert_eq!(ys.len(), 4);
        assert!(
            ys.iter().all(|y| (PLOT_TOP..=PLOT_BOTTOM).contains(y)),
            "{ys:?}"
        );
    }
}
