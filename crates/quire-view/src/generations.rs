//! Generations of meta-improved agents: each agent's lineage as a graph
//! (parent → child, coloured by status, labelled with the part changed),
//! the scores per split, a chart of resolve rate and tokens by generation,
//! and the text diff of any two generations' parts.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::PathBuf;
use std::sync::Arc;

use axum::Json;
use axum::extract::{Path, State};
use axum::response::{Html, Response};
use quire_evals::{pct, tokens_text};
use quire_meta::generation::{Lineage, RunRecord};
use quire_meta::history::{self, HistoryRow};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::ViewError;
use crate::error::Params;
use crate::evals::svg_response;
use crate::html::{Section, diff_block, esc, page, status_tag, url};
use crate::state::{App, blocking};

/// Agents with a `generations/` folder: name → folder (the first agent
/// folder of a name wins, as when an agent is looked up).
fn agents(app: &App) -> BTreeMap<String, PathBuf> {
    let mut out = BTreeMap::new();
    for dir in &app.agent_dirs {
        let Ok(entries) = std::fs::read_dir(dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if !path.join("generations").is_dir() {
                continue;
            }
            if let Some(name) = path.file_name().and_then(|n| n.to_str()) {
                out.entry(name.to_string()).or_insert(path);
            }
        }
    }
    out
}

fn lineage(app: &App, agent: &str) -> Result<Lineage, ViewError> {
    agents(app)
        .remove(agent)
        .map(|dir| Lineage::new(&dir))
        .ok_or_else(|| ViewError::NotFound(format!("no agent named `{agent}` has generations")))
}

pub async fn list(State(app): State<Arc<App>>) -> Result<Html<String>, ViewError> {
    blocking(&app, |app| {
        let agents = agents(app);
        let mut body = String::from("<h1>Generations</h1>");
        if agents.is_empty() {
            body.push_str("<p>No agent has generations yet: start with <code>quire meta improve &lt;agent&gt; --suite …</code>.</p>");
        } else {
            body.push_str("<table><tr><th>agent</th><th>generations</th><th>accepted</th><th>folder</th></tr>");
            for (name, dir) in &agents {
                let gens = Lineage::new(dir).all().unwrap_or_default();
                let accepted = gens.iter().filter(|g| g.status.as_str() == "accepted").count();
                let _ = write!(
                    body,
                    "<tr><td><a href=\"/generations/{}\">{}</a></td><td class=\"num\">{}</td><td class=\"num\">{accepted}</td><td><code>{}</code></td></tr>",
                    url(name),
                    esc(name),
                    gens.len(),
                    esc(&dir.display().to_string())
                );
            }
            body.push_str("</table>");
        }
        Ok(Html(page(Section::Generations, "Generations", &body, None)))
    })
    .await
}

fn figures(run: &Option<RunRecord>) -> String {
    match run {
        None => "—".into(),
        Some(r) => format!(
            "<a href=\"/evals/{}\">{}/{} {}</a> <span class=\"muted\">{} tok</span>",
            url(&r.run_id),
            r.resolved,
            r.done,
            pct(r.resolve_rate),
            tokens_text(r.mean_tokens.round() as u64)
        ),
    }
}

fn options(rows: &[HistoryRow], selected: Option<u32>) -> String {
    rows.iter()
        .map(|r| {
            let sel = if Some(r.n) == selected {
                " selected"
            } else {
                ""
            };
            format!("<option{sel} value=\"{0}\">g{0}</option>", r.n)
        })
        .collect()
}

pub async fn show(
    State(app): State<Arc<App>>,
    Path(agent): Path<String>,
) -> Result<Html<String>, ViewError> {
    blocking(&app, move |app| {
        let rows = history::rows(&lineage(app, &agent)?)?;
        let a = url(&agent);
        let mut body = format!(
            "<h1>Generations of <code>{}</code></h1><h2>Lineage</h2><p><img class=\"chart\" id=\"lineage\" alt=\"lineage graph\" src=\"/generations/{a}/graph.svg\"></p>\
             <h2>Resolve rate and tokens by generation</h2><p><img class=\"chart\" id=\"chart\" alt=\"resolve rate and tokens by generation\" src=\"/generations/{a}/chart.svg\"></p>",
            esc(&agent)
        );
        body.push_str("<h2>Scores per split</h2><table id=\"generations\"><tr><th>gen</th><th>parent</th><th>status</th><th>part changed</th><th>train</th><th>val</th><th>test</th><th>meta tokens</th><th>eval tokens</th><th>reason</th></tr>");
        for r in &rows {
            let _ = write!(
                body,
                "<tr id=\"g{n}\"><td>g{n}</td><td>{}</td><td>{}</td><td><code>{}</code></td><td>{}</td><td>{}</td><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td>{}<details><summary>rationale</summary><pre>{}</pre></details></td></tr>",
                r.parent.map(|p| format!("g{p}")).unwrap_or_else(|| "—".into()),
                status_tag(&r.status),
                esc(r.part.as_deref().unwrap_or("—")),
                figures(&r.train),
                figures(&r.val),
                figures(&r.test),
                tokens_text(r.meta_tokens),
                tokens_text(r.eval_tokens),
                esc(&r.reason),
                esc(&r.rationale),
                n = r.n,
            );
        }
        body.push_str("</table>");
        if rows.len() >= 2 {
            let last = rows.last().map(|r| r.n);
            let _ = write!(
                body,
                "<h2>Diff two generations</h2><form class=\"filters\" method=\"get\" action=\"/generations/{a}/diff\"><label>from<select name=\"a\">{}</select></label><label>to<select name=\"b\">{}</select></label><button type=\"submit\">Diff</button></form>",
                options(&rows, rows.first().map(|r| r.n)),
                options(&rows, last)
            );
        }
        Ok(Html(page(Section::Generations, &format!("Generations of {agent}"), &body, None)))
    })
    .await
}

pub async fn show_json(
    State(app): State<Arc<App>>,
    Path(agent): Path<String>,
) -> Result<Json<Value>, ViewError> {
    blocking(&app, move |app| {
        let rows = history::rows(&lineage(app, &agent)?)?;
        Ok(Json(json!({ "agent": agent, "generations": rows })))
    })
    .await
}

pub async fn chart_svg(
    State(app): State<Arc<App>>,
    Path(agent): Path<String>,
) -> Result<Response, ViewError> {
    blocking(&app, move |app| {
        let rows = history::rows(&lineage(app, &agent)?)?;
        Ok(svg_response(history::render_svg(&rows)))
    })
    .await
}

pub async fn graph_svg(
    State(app): State<Arc<App>>,
    Path(agent): Path<String>,
) -> Result<Response, ViewError> {
    blocking(&app, move |app| {
        let rows = history::rows(&lineage(app, &agent)?)?;
        Ok(svg_response(lineage_svg(&rows)))
    })
    .await
}

fn clip(text: &str, n: usize) -> String {
    if text.chars().count() <= n {
        text.to_string()
    } else {
        text.chars().take(n - 1).chain(['…']).collect()
    }
}

/// The lineage as a tree: one column per depth, children below their
/// parent's row order; each node says its number, status and the part
/// it changed. Every label is escaped.
pub fn lineage_svg(rows: &[HistoryRow]) -> String {
    let mut depth: BTreeMap<u32, u32> = BTreeMap::new();
    for r in rows {
        let d = r
            .parent
            .and_then(|p| depth.get(&p).copied())
            .map_or(0, |d| d + 1);
        depth.insert(r.n, d);
    }
    let mut next_row: BTreeMap<u32, u32> = BTreeMap::new();
    let mut at: BTreeMap<u32, (f64, f64)> = BTreeMap::new();
    let (col_w, row_h, node_w, node_h, pad) = (230.0, 70.0, 200.0, 50.0, 20.0);
    for r in rows {
        let d = depth.get(&r.n).copied().unwrap_or(0);
        let slot = next_row.entry(d).or_insert(0);
        at.insert(
            r.n,
            (pad + f64::from(d) * col_w, pad + f64::from(*slot) * row_h),
        );
        *slot += 1;
    }
    let cols = depth.values().max().map_or(1, |d| d + 1);
    let max_rows = next_row.values().max().copied().unwrap_or(1).max(1);
    let w = pad * 2.0 + f64::from(cols) * col_w;
    let h = pad * 2.0 + f64::from(max_rows) * row_h;
    let mut svg = format!(
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" viewBox="0 0 {w} {h}" font-family="sans-serif" font-size="12"><rect width="{w}" height="{h}" fill="white"/>"#
    );
    for r in rows {
        if let (Some(p), Some(&(x, y))) = (r.parent, at.get(&r.n))
            && let Some(&(px, py)) = at.get(&p)
        {
            let _ = write!(
                svg,
                r##"<line class="edge" x1="{:.1}" y1="{:.1}" x2="{x:.1}" y2="{:.1}" stroke="#888" stroke-width="1.5"/>"##,
                px + node_w,
                py + node_h / 2.0,
                y + node_h / 2.0
            );
        }
    }
    for r in rows {
        let Some(&(x, y)) = at.get(&r.n) else {
            continue;
        };
        let fill = match r.status.as_str() {
            "accepted" => "#d8f5dd",
            "rejected" => "#fbdada",
            "refused" | "failed" => "#e6e6e6",
            _ => "#fff3c4",
        };
        let val = r
            .val
            .as_ref()
            .map(|v| format!(" · val {}", pct(v.resolve_rate)))
            .unwrap_or_default();
        let _ = write!(
            svg,
            r##"<g class="node" id="node-g{n}"><rect x="{x:.1}" y="{y:.1}" width="{node_w}" height="{node_h}" rx="6" fill="{fill}" stroke="#555"/><text x="{:.1}" y="{:.1}" font-weight="bold">g{n} {}{}</text><text x="{:.1}" y="{:.1}">{}</text></g>"##,
            x + 8.0,
            y + 19.0,
            xml(&r.status),
            xml(&val),
            x + 8.0,
            y + 38.0,
            xml(&clip(r.part.as_deref().unwrap_or("(root)"), 30)),
            n = r.n
        );
    }
    svg.push_str("</svg>\n");
    svg
}

fn xml(text: &str) -> String {
    esc(text)
}

#[derive(Debug, Deserialize)]
pub struct DiffParams {
    a: Option<String>,
    b: Option<String>,
}

fn generation_number(value: &Option<String>, name: &str) -> Result<u32, ViewError> {
    let text = value.as_deref().map(str::trim).unwrap_or("");
    text.trim_start_matches('g').parse().map_err(|_| {
        ViewError::BadRequest(format!(
            "`{name}` must be a generation number like 0 or g3, not `{text}`"
        ))
    })
}

pub async fn diff(
    State(app): State<Arc<App>>,
    Path(agent): Path<String>,
    Params(params): Params<DiffParams>,
) -> Result<Html<String>, ViewError> {
    let a = generation_number(&params.a, "a")?;
    let b = generation_number(&params.b, "b")?;
    blocking(&app, move |app| {
        let lineage = lineage(app, &agent)?;
        let numbers = lineage.numbers()?;
        for n in [a, b] {
            if !numbers.contains(&n) {
                return Err(ViewError::NotFound(format!(
                    "agent `{agent}` has no generation {n}"
                )));
            }
        }
        let text = history::diff(
            &lineage.dir(a),
            &lineage.dir(b),
            &format!("g{a}"),
            &format!("g{b}"),
        )?;
        let mut body = format!(
            "<h1><a href=\"/generations/{}\">{}</a>: g{a} → g{b}</h1>",
            url(&agent),
            esc(&agent)
        );
        if text.trim().is_empty() {
            body.push_str("<p>No part differs.</p>");
        }
        let mut sections: Vec<(String, String)> = Vec::new();
        for line in text.lines() {
            if let Some(part) = line.strip_prefix("== ") {
                sections.push((part.to_string(), String::new()));
            } else if let Some((_, buf)) = sections.last_mut() {
                buf.push_str(line);
                buf.push('\n');
            }
        }
        for (part, diff) in &sections {
            let _ = write!(
                body,
                "<details open class=\"part\"><summary><code>{}</code></summary>{}</details>",
                esc(part),
                diff_block(diff)
            );
        }
        Ok(Html(page(Section::Generations, "Diff", &body, None)))
    })
    .await
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(n: u32, parent: Option<u32>, status: &str, part: &str) -> HistoryRow {
        HistoryRow {
            n,
            parent,
            part: Some(part.into()),
            status: status.into(),
            reason: String::new(),
            rationale: String::new(),
            train: None,
            val: None,
            test: None,
            meta_tokens: 0,
            eval_tokens: 0,
            eval_wall_ms: 0,
            eval_cost_usd: 0.0,
        }
    }

    #[test]
    fn the_lineage_graph_has_a_node_per_generation_an_edge_per_parent_and_escapes_parts() {
        let rows = vec![
            row(0, None, "accepted", "root"),
            row(1, Some(0), "accepted", "prompt:<script>"),
            row(2, Some(1), "rejected", "tool:edit_file:description"),
            row(3, Some(0), "refused", "message:x"),
        ];
        let svg = lineage_svg(&rows);
        assert_eq!(svg.matches("class=\"node\"").count(), 4);
        assert_eq!(svg.matches("class=\"edge\"").count(), 3);
        assert!(!svg.contains("<script>"), "{svg}");
        assert!(svg.contains("prompt:&lt;script&gt;"));
        assert!(svg.contains("#fbdada"), "rejected is red");
    }
}
