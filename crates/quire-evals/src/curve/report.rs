//! The curve as text for the terminal and as Markdown tables.

use std::fmt::Write as _;

use quire_store::EvalRunRow;

use super::*;
use crate::report::{pct, secs, short_hash, tokens_text};

impl LearningCurve {
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
pub(super) struct PointCells {
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

/// `+1.2k` / `-812` tokens.
pub(super) fn signed_tokens(v: f64) -> String {
    let magnitude = tokens_text(v.abs().round() as u64);
    if v < 0.0 && magnitude != "0" {
        format!("-{magnitude}")
    } else {
        format!("+{magnitude}")
    }
}

/// `-23.4%`, or `n/a` without a baseline figure.
pub(super) fn change_text(change: Option<f64>) -> String {
    change.map_or_else(|| "n/a".into(), |c| format!("{:+.1}%", c * 100.0))
}

/// `1 task`, `4 tasks`.
pub(super) fn tasks_text(n: u32) -> String {
    if n == 1 {
        "1 task".into()
    } else {
        format!("{n} tasks")
    }
}

/// A count that may be a mean over runs: `3`, or `2.5`.
pub(super) fn count(v: f64) -> String {
    if (v - v.round()).abs() < 1e-9 {
        format!("{}", v.round() as i64)
    } else {
        format!("{v:.1}")
    }
}

pub(super) fn suite_text(runs: &[EvalRunRow]) -> String {
    runs.first()
        .map_or_else(String::new, |r| format!("suite {} ({})", r.suite, r.split))
}

/// `01A, 01B · agent default (0123456789ab) · model m`.
pub(super) fn arm_text(runs: &[EvalRunRow]) -> String {
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

pub(super) fn arm_totals_text(arm: &ArmTotals, tasks: u32) -> String {
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

pub(super) fn code_ids(runs: &[EvalRunRow]) -> String {
    runs.iter()
        .map(|r| format!("`{}`", r.id))
        .collect::<Vec<_>>()
        .join(", ")
}
