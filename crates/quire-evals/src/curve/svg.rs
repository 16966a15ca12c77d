//! The curve as a self-contained SVG chart.

use std::fmt::Write as _;

use quire_store::EvalRunRow;

use super::*;
use crate::report::tokens_text;

impl LearningCurve {
    /// A self-contained 720×400 SVG: prompt tokens per task over position,
    /// one line per arm and a dashed one for learn + distillation.
    pub fn render_svg(&self) -> String {
        svg(self)
    }
}

/// Text safe inside SVG elements and attribute values.
pub(super) fn xml_escape(text: &str) -> String {
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
pub(super) fn clip(text: &str, max: usize) -> String {
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
pub(super) fn ids_short(runs: &[EvalRunRow]) -> String {
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
pub(super) fn tick_text(v: f64) -> String {
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
pub(super) fn nice_step(max: f64, target: f64) -> f64 {
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

pub(super) const SVG_W: f64 = 720.0;
pub(super) const SVG_H: f64 = 400.0;
pub(super) const PLOT_LEFT: f64 = 72.0;
pub(super) const PLOT_RIGHT: f64 = 696.0;
pub(super) const PLOT_TOP: f64 = 48.0;
pub(super) const PLOT_BOTTOM: f64 = 318.0;
pub(super) const LEARN_COLOUR: &str = "#1a5fb4";
pub(super) const BASE_COLOUR: &str = "#c64600";

pub(super) fn svg(curve: &LearningCurve) -> String {
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
