//! `quire eval report`: a run's per-attempt table and totals (resolve rate
//! with a Wilson 95% interval, means of tokens, turns, time and cost), as
//! text, Markdown or JSON.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use quire_store::{EvalResultRow, EvalResultStatus, EvalRunRow};
use serde::Serialize;

use crate::stats::{mean, wilson_interval};

/// A run and what it amounts to.
#[derive(Debug, Clone, Serialize)]
pub struct RunReport {
    pub run: EvalRunRow,
    pub results: Vec<EvalResultRow>,
    pub totals: ReportTotals,
}

/// Totals over the finished attempts.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ReportTotals {
    /// Planned attempts.
    pub attempts: u32,
    pub done: u32,
    /// Not done yet (pending, or left running).
    pub remaining: u32,
    pub resolved: u32,
    /// `resolved / done` (0 with nothing done).
    pub resolve_rate: f64,
    /// Wilson 95% interval of the resolve rate.
    pub ci95: (f64, f64),
    pub mean_prompt_tokens: f64,
    pub mean_completion_tokens: f64,
    pub mean_tokens: f64,
    pub mean_turns: f64,
    pub mean_tool_calls: f64,
    pub mean_wall_secs: f64,
    pub mean_cost_usd: f64,
    /// Prompt plus completion tokens over all finished attempts.
    pub total_tokens: u64,
    pub total_wall_ms: u64,
    pub total_cost_usd: f64,
    /// Category → attempts.
    pub categories: BTreeMap<String, u32>,
}

impl RunReport {
    pub fn new(run: EvalRunRow, results: Vec<EvalResultRow>) -> RunReport {
        let totals = ReportTotals::from_results(&results);
        RunReport {
            run,
            results,
            totals,
        }
    }

    /// The headline: `1/3 resolved (33.3%, 95% CI 6.1–79.2%)`.
    pub fn headline(&self) -> String {
        let t = &self.totals;
        let pending = if t.remaining > 0 {
            format!(", {} not run", t.remaining)
        } else {
            String::new()
        };
        format!(
            "{}/{} resolved ({}, 95% CI {}–{}){pending}",
            t.resolved,
            t.done,
            pct(t.resolve_rate),
            pct(t.ci95.0),
            pct(t.ci95.1)
        )
    }

    /// A plain-text table for the terminal.
    pub fn render_text(&self) -> String {
        let r = &self.run;
        let mut out = String::new();
        let _ = writeln!(
            out,
            "eval run {} · {} · suite {} ({}) · agent {} ({}) · model {}",
            r.id,
            r.status,
            r.suite,
            r.split,
            r.agent,
            short_hash(&r.config_hash),
            r.model
        );
        let width = self
            .results
            .iter()
            .map(|x| x.task_id.len() + digits(x.attempt) + 1)
            .max()
            .unwrap_or(4)
            .max(4);
        let _ = writeln!(
            out,
            "{:<width$}  {:<13}  {:>9}  {:>9}  {:>9}  {:>5}  {:>5}  {:>8}  {:>8}",
            "task", "result", "visible", "hidden", "tokens", "turns", "tools", "time", "cost"
        );
        for x in &self.results {
            let o = &x.outcome;
            let (visible, hidden, tokens, turns, tools, time, cost) =
                if x.status == EvalResultStatus::Done {
                    (
                        ratio(o.visible_passed, o.visible_failed),
                        ratio(o.hidden_passed, o.hidden_failed),
                        tokens_text(o.usage.prompt_tokens + o.usage.completion_tokens),
                        o.turns.to_string(),
                        o.tool_calls.to_string(),
                        secs(o.wall_ms as f64 / 1000.0),
                        format!("${:.4}", o.cost_usd),
                    )
                } else {
                    Default::default()
                };
            let _ = writeln!(
                out,
                "{:<width$}  {:<13}  {:>9}  {:>9}  {:>9}  {:>5}  {:>5}  {:>8}  {:>8}",
                format!("{}#{}", x.task_id, x.attempt),
                result_label(x),
                visible,
                hidden,
                tokens,
                turns,
                tools,
                time,
                cost
            );
        }
        let t = &self.totals;
        let _ = writeln!(out, "\n{}", self.headline());
        let _ = writeln!(
            out,
            "mean per attempt: {} tokens ({} in, {} out) · {:.1} turns · {:.1} tool calls · {} · ${:.4} (total ${:.4})",
            tokens_text(t.mean_tokens.round() as u64),
            tokens_text(t.mean_prompt_tokens.round() as u64),
            tokens_text(t.mean_completion_tokens.round() as u64),
            t.mean_turns,
            t.mean_tool_calls,
            secs(t.mean_wall_secs),
            t.mean_cost_usd,
            t.total_cost_usd
        );
        if !t.categories.is_empty() {
            let cats: Vec<String> = t
                .categories
                .iter()
                .map(|(c, n)| format!("{c} {n}"))
                .collect();
            let _ = writeln!(out, "categories: {}", cats.join(" · "));
        }
        out
    }

    /// The same as a Markdown table, for pasting.
    pub fn render_markdown(&self) -> String {
        let r = &self.run;
        let t = &self.totals;
        let mut out = String::new();
        let _ = writeln!(
            out,
            "### Eval run `{}`\n\nSuite **{}** (split `{}`) · agent **{}** (config `{}`) · model `{}` · {}\n",
            r.id,
            r.suite,
            r.split,
            r.agent,
            short_hash(&r.config_hash),
            r.model,
            r.status
        );
        let _ = writeln!(out, "**{}**\n", self.headline());
        let _ = writeln!(
            out,
            "| task | result | visible | hidden | tokens | turns | tool calls | time | cost |\n|---|---|---:|---:|---:|---:|---:|---:|---:|"
        );
        for x in &self.results {
            let o = &x.outcome;
            let done = x.status == EvalResultStatus::Done;
            let cell = |s: String| if done { s } else { String::new() };
            let _ = writeln!(
                out,
                "| `{}#{}` | {} | {} | {} | {} | {} | {} | {} | {} |",
                x.task_id,
                x.attempt,
                result_label(x),
                cell(ratio(o.visible_passed, o.visible_failed)),
                cell(ratio(o.hidden_passed, o.hidden_failed)),
                cell(tokens_text(
                    o.usage.prompt_tokens + o.usage.completion_tokens
                )),
                cell(o.turns.to_string()),
                cell(o.tool_calls.to_string()),
                cell(secs(o.wall_ms as f64 / 1000.0)),
                cell(format!("${:.4}", o.cost_usd)),
            );
        }
        let _ = writeln!(
            out,
            "\nMean per attempt: {} tokens ({} in, {} out), {:.1} turns, {:.1} tool calls, {}, ${:.4} (total ${:.4}).",
            tokens_text(t.mean_tokens.round() as u64),
            tokens_text(t.mean_prompt_tokens.round() as u64),
            tokens_text(t.mean_completion_tokens.round() as u64),
            t.mean_turns,
            t.mean_tool_calls,
            secs(t.mean_wall_secs),
            t.mean_cost_usd,
            t.total_cost_usd
        );
        out
    }
}

impl ReportTotals {
    /// Figures over the finished attempts of a run (the meta-agent's
    /// generation records use the same ones).
    pub fn from_results(results: &[EvalResultRow]) -> ReportTotals {
        totals(results)
    }
}

fn totals(results: &[EvalResultRow]) -> ReportTotals {
    let done: Vec<&EvalResultRow> = results
        .iter()
        .filter(|r| r.status == EvalResultStatus::Done)
        .collect();
    let n = done.len() as u32;
    let resolved = done.iter().filter(|r| r.outcome.resolved).count() as u32;
    let m = |f: &dyn Fn(&EvalResultRow) -> f64| mean(done.iter().map(|r| f(r))).unwrap_or(0.0);
    let mut categories = BTreeMap::new();
    for r in &done {
        *categories.entry(r.outcome.category.clone()).or_insert(0) += 1;
    }
    ReportTotals {
        attempts: results.len() as u32,
        done: n,
        remaining: results.len() as u32 - n,
        resolved,
        resolve_rate: if n == 0 {
            0.0
        } else {
            f64::from(resolved) / f64::from(n)
        },
        ci95: wilson_interval(resolved, n),
        mean_prompt_tokens: m(&|r| r.outcome.usage.prompt_tokens as f64),
        mean_completion_tokens: m(&|r| r.outcome.usage.completion_tokens as f64),
        mean_tokens: m(&|r| {
            (r.outcome.usage.prompt_tokens + r.outcome.usage.completion_tokens) as f64
        }),
        mean_turns: m(&|r| f64::from(r.outcome.turns)),
        mean_tool_calls: m(&|r| f64::from(r.outcome.tool_calls)),
        mean_wall_secs: m(&|r| r.outcome.wall_ms as f64 / 1000.0),
        mean_cost_usd: m(&|r| r.outcome.cost_usd),
        total_tokens: done
            .iter()
            .map(|r| r.outcome.usage.prompt_tokens + r.outcome.usage.completion_tokens)
            .sum(),
        total_wall_ms: done.iter().map(|r| r.outcome.wall_ms).sum(),
        total_cost_usd: done.iter().map(|r| r.outcome.cost_usd).sum(),
        categories,
    }
}

fn result_label(r: &EvalResultRow) -> String {
    match r.status {
        EvalResultStatus::Done => r.outcome.category.clone(),
        other => other.to_string(),
    }
}

/// `3/4`: passed out of counted (passed + failed); `-` when unknown.
fn ratio(passed: Option<u32>, failed: Option<u32>) -> String {
    match (passed, failed) {
        (None, None) => "-".into(),
        (p, f) => {
            let p = p.unwrap_or(0);
            format!("{p}/{}", p + f.unwrap_or(0))
        }
    }
}

/// A percentage with one decimal.
pub fn pct(rate: f64) -> String {
    format!("{:.1}%", rate * 100.0)
}

/// `812`, `12.3k`, `1.20M`.
pub fn tokens_text(n: u64) -> String {
    match n {
        0..=999 => n.to_string(),
        1_000..=999_999 => format!("{:.1}k", n as f64 / 1e3),
        _ => format!("{:.2}M", n as f64 / 1e6),
    }
}

/// `4.2s`, `3m05s`.
pub fn secs(s: f64) -> String {
    if s < 60.0 {
        format!("{s:.1}s")
    } else {
        let whole = s.round() as u64;
        format!("{}m{:02}s", whole / 60, whole % 60)
    }
}

pub fn short_hash(hash: &str) -> &str {
    hash.get(..12).unwrap_or(hash)
}

fn digits(n: u32) -> usize {
    n.to_string().len()
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use chrono::Utc;
    use quire_store::{EvalOutcome, EvalRunStatus};
    use quire_types::Usage;

    pub(crate) fn run_row() -> EvalRunRow {
        EvalRunRow {
            id: "01RUN".into(),
            suite: "mini".into(),
            suite_path: "/s".into(),
            split: "test".into(),
            agent: "default".into(),
            config_hash: "0123456789abcdef".into(),
            model: "m".into(),
            started_at: Utc::now(),
            ended_at: None,
            status: EvalRunStatus::Completed,
            repeat: 1,
            jobs: 1,
            timeout_secs: 60,
            args: serde_json::json!({}),
        }
    }

    pub(crate) fn result(
        task: &str,
        attempt: u32,
        category: &str,
        tokens: u64,
        wall_ms: u64,
    ) -> EvalResultRow {
        EvalResultRow {
            run_id: "01RUN".into(),
            task_id: task.into(),
            attempt,
            status: EvalResultStatus::Done,
            started_at: None,
            ended_at: None,
            outcome: EvalOutcome {
                resolved: category == "resolved",
                category: category.into(),
                visible_passed: Some(3),
                visible_failed: Some(0),
                hidden_passed: Some(1),
                hidden_failed: Some(1),
                usage: Usage {
                    prompt_tokens: tokens,
                    completion_tokens: 10,
                    cached_tokens: 0,
                },
                turns: 3,
                wall_ms,
                ..EvalOutcome::default()
            },
        }
    }

    #[test]
    fn totals_and_renderings() {
        let mut pending = result("c", 1, "", 0, 0);
        pending.status = EvalResultStatus::Pending;
        let report = RunReport::new(
            run_row(),
            vec![
                result("a", 1, "resolved", 90, 1000),
                result("b", 1, "hidden_failed", 190, 3000),
                result("d", 1, "timeout", 290, 5000),
                pending,
            ],
        );
        let t = &report.totals;
        assert_eq!((t.attempts, t.done, t.remaining, t.resolved), (4, 3, 1, 1));
        assert!((t.mean_tokens - 200.0).abs() < 1e-9);
        assert!((t.mean_wall_secs - 3.0).abs() < 1e-9);
        assert_eq!(t.categories.get("timeout"), Some(&1));
        assert_eq!(
            report.headline(),
            "1/3 resolved (33.3%, 95% CI 6.1%–79.2%), 1 not run"
        );
        let text = report.render_text();
        assert!(
            text.contains("a#1") && text.contains("hidden_failed"),
            "{text}"
        );
        assert!(text.contains("pending"), "{text}");
        let md = report.render_markdown();
        assert!(md.contains("| `b#1` | hidden_failed | 3/3 | 1/2 |"), "{md}");
        let json = serde_json::to_value(&report).unwrap();
        assert_eq!(json["totals"]["resolved"], 1);
        assert_eq!(json["results"][0]["category"], "resolved");
    }
}
