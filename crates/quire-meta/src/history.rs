//! Comparing generations: the history table and its charts (terminal and
//! SVG), the text diff of changed parts, and paired comparisons of runs.

use std::fmt::Write as _;
use std::path::Path;

use quire_evals::{Comparison, pct, tokens_text};
use quire_store::Store;
use serde::Serialize;

use crate::error::MetaError;
use crate::generation::{GenerationMeta, Lineage, RunRecord};
use crate::parts::AgentFiles;

/// One row of `quire meta history`.
#[derive(Debug, Clone, Serialize)]
pub struct HistoryRow {
    pub n: u32,
    pub parent: Option<u32>,
    pub part: Option<String>,
    pub status: String,
    pub reason: String,
    pub rationale: String,
    pub train: Option<RunRecord>,
    pub val: Option<RunRecord>,
    pub test: Option<RunRecord>,
    pub meta_tokens: u64,
    pub eval_tokens: u64,
    pub eval_wall_ms: u64,
    pub eval_cost_usd: f64,
}

impl HistoryRow {
    pub fn new(meta: &GenerationMeta) -> HistoryRow {
        HistoryRow {
            n: meta.n,
            parent: meta.parent,
            part: meta.part.clone(),
            status: meta.status.to_string(),
            reason: meta.reason.clone(),
            rationale: meta.rationale.clone(),
            train: meta.latest("train").cloned(),
            val: meta.latest("val").cloned(),
            test: meta.latest("test").cloned(),
            meta_tokens: meta.cost.meta_tokens(),
            eval_tokens: meta.cost.eval_tokens,
            eval_wall_ms: meta.cost.eval_wall_ms,
            eval_cost_usd: meta.cost.eval_cost_usd,
        }
    }
}

pub fn rows(lineage: &Lineage) -> Result<Vec<HistoryRow>, MetaError> {
    Ok(lineage.all()?.iter().map(HistoryRow::new).collect())
}

fn rate(run: &Option<RunRecord>) -> String {
    run.as_ref().map_or_else(
        || "-".into(),
        |r| format!("{}/{} {}", r.resolved, r.done, pct(r.resolve_rate)),
    )
}

/// The table and a terminal chart of val resolve rate and tokens.
pub fn render_text(rows: &[HistoryRow]) -> String {
    let mut out = String::new();
    let part_width = rows
        .iter()
        .filter_map(|r| r.part.as_ref().map(String::len))
        .max()
        .unwrap_or(4)
        .clamp(4, 40);
    let _ = writeln!(
        out,
        "{:>4}  {:>6}  {:<part_width$}  {:<9}  {:>13}  {:>13}  {:>13}  {:>9}  {:>9}  {:>9}  {:>8}",
        "gen",
        "parent",
        "part",
        "status",
        "train",
        "val",
        "test",
        "val tok",
        "meta tok",
        "eval tok",
        "eval time"
    );
    for r in rows {
        let part: String = r.part.as_deref().unwrap_or("-").chars().take(40).collect();
        let _ = writeln!(
            out,
            "{:>4}  {:>6}  {:<part_width$}  {:<9}  {:>13}  {:>13}  {:>13}  {:>9}  {:>9}  {:>9}  {:>8}",
            format!("g{}", r.n),
            r.parent.map_or_else(|| "-".into(), |p| format!("g{p}")),
            part,
            r.status,
            rate(&r.train),
            rate(&r.val),
            rate(&r.test),
            r.val
                .as_ref()
                .map_or_else(|| "-".into(), |v| tokens_text(v.mean_tokens.round() as u64)),
            tokens_text(r.meta_tokens),
            tokens_text(r.eval_tokens),
            quire_evals::secs(r.eval_wall_ms as f64 / 1000.0),
        );
    }
    let (meta, eval, wall) = rows.iter().fold((0, 0, 0), |(m, e, w), r| {
        (m + r.meta_tokens, e + r.eval_tokens, w + r.eval_wall_ms)
    });
    let _ = writeln!(
        out,
        "\nloop cost: {} meta tokens · {} eval tokens · {} eval time",
        tokens_text(meta),
        tokens_text(eval),
        quire_evals::secs(wall as f64 / 1000.0)
    );
    let measured: Vec<(u32, &RunRecord)> = rows
        .iter()
        .filter_map(|r| r.val.as_ref().map(|v| (r.n, v)))
        .collect();
    if !measured.is_empty() {
        let max_tokens = measured
            .iter()
            .map(|(_, v)| v.mean_tokens)
            .fold(0.0, f64::max)
            .max(1.0);
        let _ = writeln!(
            out,
            "\nval over generations (█ resolve rate, ▒ tokens per attempt):"
        );
        for (n, v) in &measured {
            let bar = |frac: f64, ch: char| -> String {
                std::iter::repeat_n(ch, (frac * 30.0).round() as usize).collect()
            };
            let _ = writeln!(
                out,
                "{:>4}  {:<30} {:>6}  {:<30} {}",
                format!("g{n}"),
                bar(v.resolve_rate, '█'),
                pct(v.resolve_rate),
                bar(v.mean_tokens / max_tokens, '▒'),
                tokens_text(v.mean_tokens.round() as u64)
            );
        }
    }
    out
}

/// A small SVG: val resolve rate (left axis, 0–100%) and tokens per
/// attempt (right axis, 0–max) as two polylines over the generations
/// measured on val.
pub fn render_svg(rows: &[HistoryRow]) -> String {
    let points: Vec<(u32, f64, f64)> = rows
        .iter()
        .filter_map(|r| r.val.as_ref().map(|v| (r.n, v.resolve_rate, v.mean_tokens)))
        .collect();
    let (w, h, pad) = (640.0_f64, 320.0_f64, 48.0_f64);
    let max_tokens = points.iter().map(|p| p.2).fold(0.0, f64::max).max(1.0);
    let last = points.iter().map(|p| p.0).max().unwrap_or(1).max(1) as f64;
    let x = |n: u32| pad + (w - 2.0 * pad) * f64::from(n) / last;
    let y = |frac: f64| h - pad - (h - 2.0 * pad) * frac;
    let line = |f: &dyn Fn(&(u32, f64, f64)) -> f64| {
        points
            .iter()
            .map(|p| format!("{:.1},{:.1}", x(p.0), y(f(p))))
            .collect::<Vec<_>>()
            .join(" ")
    };
    let mut svg = String::new();
    let _ = writeln!(
        svg,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" viewBox="0 0 {w} {h}" font-family="sans-serif" font-size="12">"#
    );
    let _ = writeln!(svg, r#"<rect width="{w}" height="{h}" fill="white"/>"#);
    let _ = writeln!(
        svg,
        r#"<line x1="{pad}" y1="{b}" x2="{r}" y2="{b}" stroke="black"/><line x1="{pad}" y1="{pad}" x2="{pad}" y2="{b}" stroke="black"/>"#,
        b = h - pad,
        r = w - pad
    );
    let _ = writeln!(
        svg,
        r#"<text x="{pad}" y="{t}">val resolve rate (blue, 0–100%) · tokens per attempt (orange, 0–{})</text>"#,
        tokens_text(max_tokens.round() as u64),
        t = pad - 16.0
    );
    for p in &points {
        let _ = writeln!(
            svg,
            r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">g{}</text>"#,
            x(p.0),
            h - pad + 16.0,
            p.0
        );
    }
    let _ = writeln!(
        svg,
        r##"<polyline id="val-rate" fill="none" stroke="#1f77b4" stroke-width="2" points="{}"/>"##,
        line(&|p| p.1)
    );
    let _ = writeln!(
        svg,
        r##"<polyline id="val-tokens" fill="none" stroke="#ff7f0e" stroke-width="2" points="{}"/>"##,
        line(&|p| p.2 / max_tokens)
    );
    svg.push_str("</svg>\n");
    svg
}

/// The unified diff of every part whose value differs between two agent
/// folders, part by part.
pub fn diff(a_dir: &Path, b_dir: &Path, a_label: &str, b_label: &str) -> Result<String, MetaError> {
    let a = AgentFiles::open(a_dir)?;
    let b = AgentFiles::open(b_dir)?;
    let mut parts = a.parts()?;
    for p in b.parts()? {
        if !parts.contains(&p) {
            parts.push(p);
        }
    }
    let mut out = String::new();
    for part in parts {
        let old = a.get(&part).map(|v| v.display()).unwrap_or_default();
        let new = b.get(&part).map(|v| v.display()).unwrap_or_default();
        if old == new {
            continue;
        }
        let with_newline = |s: String| if s.ends_with('\n') { s } else { s + "\n" };
        let (old, new) = (with_newline(old), with_newline(new));
        let text = similar::TextDiff::from_lines(&old, &new)
            .unified_diff()
            .header(&format!("{a_label} {part}"), &format!("{b_label} {part}"))
            .to_string();
        let _ = writeln!(out, "== {part}");
        out.push_str(&text);
    }
    Ok(out)
}

/// Pairs two stored runs (B against A).
pub fn compare_runs(store: &Store, a: &str, b: &str) -> Result<Comparison, MetaError> {
    let find = |id: &str| {
        store
            .get_eval_run(id)?
            .ok_or_else(|| MetaError::Invalid(format!("eval run {id} is not in the store")))
    };
    let (run_a, run_b) = (find(a)?, find(b)?);
    let results_a = store.eval_results(a)?;
    let results_b = store.eval_results(b)?;
    Ok(Comparison::new(run_a, &results_a, run_b, &results_b))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::generation::{GenerationMeta, Status};

    fn row(n: u32, rate: f64, tokens: f64) -> HistoryRow {
        let mut g = GenerationMeta::new(n, n.checked_sub(1));
        g.status = Status::Accepted;
        g.record_run(RunRecord {
            split: "val".into(),
            run_id: "r".into(),
            tasks: vec![],
            repeat: 1,
            done: 2,
            resolved: (rate * 2.0) as u32,
            resolve_rate: rate,
            mean_tokens: tokens,
            total_tokens: (tokens * 2.0) as u64,
            wall_ms: 1500,
            cost_usd: 0.0,
            learn: false,
            distill_tokens: 0,
        });
        HistoryRow::new(&g)
    }

    #[test]
    fn charts_show_every_measured_generation() {
        let rows = vec![row(0, 0.0, 1000.0), row(1, 1.0, 500.0)];
        let text = render_text(&rows);
        assert!(text.contains("g1"), "{text}");
        assert!(text.contains("100.0%"), "{text}");
        let svg = render_svg(&rows);
        assert!(svg.starts_with("<svg"), "{svg}");
        assert_eq!(svg.matches("<polyline").count(), 2);
        assert!(svg.contains(r#"points="48.0,272.0 592.0,48.0""#), "{svg}");
    }
}
