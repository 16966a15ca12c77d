//! `quire eval compare`: two runs paired attempt by attempt — what flipped
//! either way, the resolve-rate difference with a paired bootstrap 95%
//! interval, and the paired token, time and cost differences. The
//! meta-agent and the notes experiments read this.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use quire_store::{EvalResultRow, EvalResultStatus, EvalRunRow};
use serde::Serialize;

use crate::report::{RunReport, pct, secs, short_hash, tokens_text};
use crate::stats::{BOOTSTRAP_RESAMPLES, BOOTSTRAP_SEED, mean, paired_bootstrap};

/// One (task, attempt) done in both runs.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Pair {
    pub task_id: String,
    pub attempt: u32,
    pub a_resolved: bool,
    pub b_resolved: bool,
    pub a_category: String,
    pub b_category: String,
    /// `b - a`, prompt + completion tokens.
    pub tokens_diff: i64,
    pub wall_ms_diff: i64,
    pub cost_diff: f64,
}

impl Pair {
    /// `gained` (B resolved what A did not), `lost`, or `None`.
    pub fn flip(&self) -> Option<&'static str> {
        match (self.a_resolved, self.b_resolved) {
            (false, true) => Some("gained"),
            (true, false) => Some("lost"),
            _ => None,
        }
    }
}

/// Headline of one side.
#[derive(Debug, Clone, Serialize)]
pub struct Side {
    pub run: EvalRunRow,
    pub done: u32,
    pub resolved: u32,
    pub resolve_rate: f64,
    pub ci95: (f64, f64),
}

/// The comparison of run B against run A (differences are `b - a`).
#[derive(Debug, Clone, Serialize)]
pub struct Comparison {
    pub a: Side,
    pub b: Side,
    pub pairs: Vec<Pair>,
    /// `task#attempt` resolved in B but not A.
    pub gained: Vec<String>,
    /// `task#attempt` resolved in A but not B.
    pub lost: Vec<String>,
    /// Done in only one of the runs (not paired, not counted below).
    pub only_a: Vec<String>,
    pub only_b: Vec<String>,
    /// Resolve rates over the paired attempts only.
    pub paired_rate_a: f64,
    pub paired_rate_b: f64,
    pub rate_diff: f64,
    /// Paired bootstrap 95% interval of `rate_diff` (tasks resampled whole).
    pub rate_diff_ci95: Option<(f64, f64)>,
    pub bootstrap_resamples: usize,
    pub bootstrap_seed: u64,
    pub mean_tokens_diff: f64,
    pub mean_wall_secs_diff: f64,
    pub mean_cost_diff: f64,
    /// Per task over its paired attempts: resolved in A, in B, attempts.
    pub per_task: BTreeMap<String, (u32, u32, u32)>,
    /// Things that make the comparison weaker (different suites, …).
    pub warnings: Vec<String>,
}

impl Comparison {
    pub fn new(
        a_run: EvalRunRow,
        a_results: &[EvalResultRow],
        b_run: EvalRunRow,
        b_results: &[EvalResultRow],
    ) -> Comparison {
        let done = |rows: &[EvalResultRow]| -> BTreeMap<(String, u32), EvalResultRow> {
            rows.iter()
                .filter(|r| r.status == EvalResultStatus::Done)
                .map(|r| ((r.task_id.clone(), r.attempt), r.clone()))
                .collect()
        };
        let a_done = done(a_results);
        let b_done = done(b_results);
        let key = |(task, attempt): &(String, u32)| format!("{task}#{attempt}");
        let mut pairs = Vec::new();
        // In A's planned order.
        for a in a_results
            .iter()
            .filter(|r| r.status == EvalResultStatus::Done)
        {
            let k = &(a.task_id.clone(), a.attempt);
            if let Some(b) = b_done.get(k) {
                let tokens = |r: &EvalResultRow| {
                    (r.outcome.usage.prompt_tokens + r.outcome.usage.completion_tokens) as i64
                };
                pairs.push(Pair {
                    task_id: k.0.clone(),
                    attempt: k.1,
                    a_resolved: a.outcome.resolved,
                    b_resolved: b.outcome.resolved,
                    a_category: a.outcome.category.clone(),
                    b_category: b.outcome.category.clone(),
                    tokens_diff: tokens(b) - tokens(a),
                    wall_ms_diff: b.outcome.wall_ms as i64 - a.outcome.wall_ms as i64,
                    cost_diff: b.outcome.cost_usd - a.outcome.cost_usd,
                });
            }
        }
        let only_a = a_done
            .keys()
            .filter(|k| !b_done.contains_key(*k))
            .map(key)
            .collect();
        let only_b = b_done
            .keys()
            .filter(|k| !a_done.contains_key(*k))
            .map(key)
            .collect();
        let flips = |which: &str| {
            pairs
                .iter()
                .filter(|p| p.flip() == Some(which))
                .map(|p| format!("{}#{}", p.task_id, p.attempt))
                .collect::<Vec<_>>()
        };
        let as_f = |b: bool| if b { 1.0 } else { 0.0 };
        let mut clusters: BTreeMap<&str, Vec<f64>> = BTreeMap::new();
        let mut per_task: BTreeMap<String, (u32, u32, u32)> = BTreeMap::new();
        for p in &pairs {
            clusters
                .entry(p.task_id.as_str())
                .or_default()
                .push(as_f(p.b_resolved) - as_f(p.a_resolved));
            let entry = per_task.entry(p.task_id.clone()).or_default();
            entry.0 += u32::from(p.a_resolved);
            entry.1 += u32::from(p.b_resolved);
            entry.2 += 1;
        }
        let clusters: Vec<Vec<f64>> = clusters.into_values().collect();
        let paired_rate_a = mean(pairs.iter().map(|p| as_f(p.a_resolved))).unwrap_or(0.0);
        let paired_rate_b = mean(pairs.iter().map(|p| as_f(p.b_resolved))).unwrap_or(0.0);
        let mut warnings = Vec::new();
        if a_run.suite != b_run.suite || a_run.split != b_run.split {
            warnings.push(format!(
                "different task sets: A is {} ({}), B is {} ({})",
                a_run.suite, a_run.split, b_run.suite, b_run.split
            ));
        }
        if pairs.is_empty() {
            warnings.push("no attempt is done in both runs: nothing to pair".into());
        }
        let side = |run: EvalRunRow, rows: &[EvalResultRow]| {
            let t = RunReport::new(run.clone(), rows.to_vec()).totals;
            Side {
                run,
                done: t.done,
                resolved: t.resolved,
                resolve_rate: t.resolve_rate,
                ci95: t.ci95,
            }
        };
        Comparison {
            gained: flips("gained"),
            lost: flips("lost"),
            only_a,
            only_b,
            paired_rate_a,
            paired_rate_b,
            rate_diff: paired_rate_b - paired_rate_a,
            rate_diff_ci95: paired_bootstrap(&clusters, BOOTSTRAP_RESAMPLES, BOOTSTRAP_SEED),
            bootstrap_resamples: BOOTSTRAP_RESAMPLES,
            bootstrap_seed: BOOTSTRAP_SEED,
            mean_tokens_diff: mean(pairs.iter().map(|p| p.tokens_diff as f64)).unwrap_or(0.0),
            mean_wall_secs_diff: mean(pairs.iter().map(|p| p.wall_ms_diff as f64 / 1000.0))
                .unwrap_or(0.0),
            mean_cost_diff: mean(pairs.iter().map(|p| p.cost_diff)).unwrap_or(0.0),
            per_task,
            warnings,
            a: side(a_run, a_results),
            b: side(b_run, b_results),
            pairs,
        }
    }

    /// `+33.3 points (95% CI -33.3 to +100.0)`.
    pub fn headline(&self) -> String {
        let ci = self.rate_diff_ci95.map_or_else(String::new, |(lo, hi)| {
            format!(
                " (paired bootstrap 95% CI {} to {})",
                points(lo),
                points(hi)
            )
        });
        format!(
            "resolve rate {} → {} over {} paired attempts: {} points{ci}",
            pct(self.paired_rate_a),
            pct(self.paired_rate_b),
            self.pairs.len(),
            points(self.rate_diff)
        )
    }

    pub fn render_text(&self) -> String {
        let mut out = String::new();
        for (label, side) in [("A", &self.a), ("B", &self.b)] {
            let _ = writeln!(
                out,
                "{label}: {} · {} ({}) · agent {} ({}) · model {} · {}/{} resolved ({})",
                side.run.id,
                side.run.suite,
                side.run.split,
                side.run.agent,
                short_hash(&side.run.config_hash),
                side.run.model,
                side.resolved,
                side.done,
                pct(side.resolve_rate)
            );
        }
        for w in &self.warnings {
            let _ = writeln!(out, "warning: {w}");
        }
        let width = self
            .pairs
            .iter()
            .map(|p| p.task_id.len() + 4)
            .max()
            .unwrap_or(4)
            .max(4);
        let _ = writeln!(
            out,
            "\n{:<width$}  {:<13}  {:<13}  {:<7}  {:>9}  {:>8}",
            "task", "A", "B", "flip", "Δtokens", "Δtime"
        );
        for p in &self.pairs {
            let _ = writeln!(
                out,
                "{:<width$}  {:<13}  {:<13}  {:<7}  {:>9}  {:>8}",
                format!("{}#{}", p.task_id, p.attempt),
                p.a_category,
                p.b_category,
                p.flip().unwrap_or(""),
                signed(p.tokens_diff as f64, |v| tokens_text(v as u64)),
                signed(p.wall_ms_diff as f64 / 1000.0, secs),
            );
        }
        if self.per_task.values().any(|(_, _, n)| *n > 1) {
            let _ = writeln!(out, "\nper task (resolved in A → B, of paired attempts):");
            for (task, (a, b, n)) in &self.per_task {
                let _ = writeln!(out, "  {task:<width$}  {a}/{n} → {b}/{n}");
            }
        }
        let _ = writeln!(out, "\n{}", self.headline());
        let _ = writeln!(
            out,
            "flips: {} gained{} · {} lost{}",
            self.gained.len(),
            list(&self.gained),
            self.lost.len(),
            list(&self.lost)
        );
        let _ = writeln!(
            out,
            "mean paired difference (B - A): {} tokens · {} · {}",
            signed(self.mean_tokens_diff, |v| tokens_text(v.round() as u64)),
            signed(self.mean_wall_secs_diff, secs),
            signed(self.mean_cost_diff, |v| format!("${v:.4}"))
        );
        if !self.only_a.is_empty() || !self.only_b.is_empty() {
            let _ = writeln!(
                out,
                "unpaired (done in one run only): A {}{} · B {}{}",
                self.only_a.len(),
                list(&self.only_a),
                self.only_b.len(),
                list(&self.only_b)
            );
        }
        out
    }

    pub fn render_markdown(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "### Eval comparison `{}` → `{}`\n",
            self.a.run.id, self.b.run.id
        );
        let _ = writeln!(
            out,
            "| | run | agent | config | model | resolved |\n|---|---|---|---|---|---:|"
        );
        for (label, side) in [("A", &self.a), ("B", &self.b)] {
            let _ = writeln!(
                out,
                "| {label} | `{}` | {} | `{}` | `{}` | {}/{} ({}) |",
                side.run.id,
                side.run.agent,
                short_hash(&side.run.config_hash),
                side.run.model,
                side.resolved,
                side.done,
                pct(side.resolve_rate)
            );
        }
        for w in &self.warnings {
            let _ = writeln!(out, "\n> warning: {w}");
        }
        let _ = writeln!(out, "\n**{}**\n", self.headline());
        let _ = writeln!(
            out,
            "- gained ({}): {}\n- lost ({}): {}\n- mean paired difference (B − A): {} tokens, {}, {}\n",
            self.gained.len(),
            code_list(&self.gained),
            self.lost.len(),
            code_list(&self.lost),
            signed(self.mean_tokens_diff, |v| tokens_text(v.round() as u64)),
            signed(self.mean_wall_secs_diff, secs),
            signed(self.mean_cost_diff, |v| format!("${v:.4}"))
        );
        let _ = writeln!(
            out,
            "| task | A | B | flip | Δ tokens | Δ time |\n|---|---|---|---|---:|---:|"
        );
        for p in &self.pairs {
            let _ = writeln!(
                out,
                "| `{}#{}` | {} | {} | {} | {} | {} |",
                p.task_id,
                p.attempt,
                p.a_category,
                p.b_category,
                p.flip().unwrap_or(""),
                signed(p.tokens_diff as f64, |v| tokens_text(v as u64)),
                signed(p.wall_ms_diff as f64 / 1000.0, secs),
            );
        }
        out
    }
}

/// `+33.3` / `-12.0` percentage points.
fn points(diff: f64) -> String {
    format!("{:+.1}", diff * 100.0)
}

/// A signed rendering of a magnitude formatter.
fn signed(v: f64, f: impl Fn(f64) -> String) -> String {
    if v < 0.0 {
        format!("-{}", f(-v))
    } else {
        format!("+{}", f(v))
    }
}

fn list(items: &[String]) -> String {
    if items.is_empty() {
        String::new()
    } else {
        format!(" ({})", items.join(", "))
    }
}

fn code_list(items: &[String]) -> String {
    if items.is_empty() {
        "none".into()
    } else {
        items
            .iter()
            .map(|i| format!("`{i}`"))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::tests::{result, run_row};

    #[test]
    fn pairs_flips_and_differences() {
        let a = vec![
            result("a", 1, "resolved", 100, 1000),
            result("b", 1, "hidden_failed", 100, 1000),
            result("c", 1, "timeout", 100, 9000),
            result("only-a", 1, "resolved", 100, 1000),
        ];
        let b = vec![
            result("a", 1, "resolved", 200, 2000),
            result("b", 1, "resolved", 300, 1000),
            result("c", 1, "timeout", 100, 9000),
        ];
        let mut b_run = run_row();
        b_run.id = "01RUNB".into();
        let cmp = Comparison::new(run_row(), &a, b_run, &b);
        assert_eq!(cmp.pairs.len(), 3);
        assert_eq!(cmp.gained, vec!["b#1"]);
        assert!(cmp.lost.is_empty());
        assert_eq!(cmp.only_a, vec!["only-a#1"]);
        assert!((cmp.rate_diff - 1.0 / 3.0).abs() < 1e-9);
        let (lo, hi) = cmp.rate_diff_ci95.unwrap();
        assert!(
            (0.0..=1.0 / 3.0).contains(&lo) && hi >= 1.0 / 3.0,
            "{lo} {hi}"
        );
        assert!((cmp.mean_tokens_diff - 100.0).abs() < 1e-9);
        assert!((cmp.mean_wall_secs_diff - 1.0 / 3.0).abs() < 1e-9);
        let text = cmp.render_text();
        assert!(
            text.contains("1 gained (b#1)") && text.contains("+33.3 points"),
            "{text}"
        );
        let md = cmp.render_markdown();
        assert!(
            md.contains("| `b#1` | hidden_failed | resolved | gained |"),
            "{md}"
        );
        let again = Comparison::new(run_row(), &a, run_row(), &b);
        assert_eq!(again.rate_diff_ci95, cmp.rate_diff_ci95, "deterministic");
    }

    #[test]
    fn repeats_pair_per_attempt_and_summarise_per_task() {
        let a = vec![
            result("a", 1, "resolved", 100, 1000),
            result("a", 2, "timeout", 100, 1000),
            result("b", 1, "no_change", 100, 1000),
            result("b", 2, "no_change", 100, 1000),
        ];
        let b = vec![
            result("a", 1, "resolved", 100, 1000),
            result("a", 2, "resolved", 100, 1000),
            result("b", 1, "resolved", 100, 1000),
            result("b", 2, "no_change", 100, 1000),
        ];
        let cmp = Comparison::new(run_row(), &a, run_row(), &b);
        assert_eq!(cmp.gained, vec!["a#2", "b#1"]);
        assert_eq!(cmp.per_task.get("a"), Some(&(1, 2, 2)));
        assert_eq!(cmp.per_task.get("b"), Some(&(0, 1, 2)));
        assert!((cmp.rate_diff - 0.5).abs() < 1e-9);
        // Whole tasks are resampled: each task's mean gain is 0.5, so every
        // resample gives 0.5.
        assert_eq!(cmp.rate_diff_ci95, Some((0.5, 0.5)));
        let text = cmp.render_text();
        assert!(text.contains("  a      1/2 → 2/2"), "{text}");
    }
}
