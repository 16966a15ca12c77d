//! Eval runs: the list with headline figures, one run's per-task table
//! with intervals (live while it runs), the comparison of two runs, and
//! the learning curve of a learn arm against a baseline arm.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::Arc;

use axum::Json;
use axum::extract::{Extension, Path, State};
use axum::http::header;
use axum::response::{Html, IntoResponse, Response};
use quire_evals::{
    ArmRun, Comparison, LearningCurve, NotesPlan, RunReport, pct, short_hash, tokens_text,
    wilson_interval,
};
use quire_store::{
    EvalResultRow, EvalResultStatus, EvalRunRow, EvalRunStatus, EvalRunSummary, Store, StoreError,
};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::ViewError;
use crate::error::Params;
use crate::html::{Section, esc, num, page, status_tag, url};
use crate::safety::Nonce;
use crate::state::{App, blocking};

/// Runs listed on the runs page.
const RUNS_LISTED: usize = 500;

fn find_run(store: &Store, spec: &str) -> Result<EvalRunRow, ViewError> {
    store
        .find_eval_run(spec)
        .map_err(|e| match e {
            StoreError::AmbiguousPrefix {
                prefix, matches, ..
            } => ViewError::BadRequest(format!(
                "`{prefix}` matches several eval runs: {}",
                matches.join(", ")
            )),
            other => ViewError::Store(other),
        })?
        .ok_or_else(|| ViewError::NotFound(format!("no eval run matches `{spec}`")))
}

fn run_link(id: &str) -> String {
    format!(
        "<a href=\"/evals/{}\"><code>{}</code></a>",
        url(id),
        esc(id)
    )
}

fn interval((lo, hi): (f64, f64)) -> String {
    format!("[{}, {}]", pct(lo), pct(hi))
}

/// The runs with their headline figures.
pub fn runs_table(runs: &[EvalRunSummary]) -> String {
    if runs.is_empty() {
        return String::from(
            "<p>No eval runs yet: start one with <code>quire eval run &lt;suite&gt;</code>.</p>",
        );
    }
    let mut out = String::from(
        "<table class=\"runs\"><tr><th>run</th><th>started (UTC)</th><th>status</th><th>suite / split</th><th>agent</th><th>config</th><th>model</th><th>notes</th><th>resolved</th><th>rate (95% CI)</th><th>tokens</th><th>cost</th></tr>",
    );
    for s in runs {
        let r = &s.run;
        let (rate, ci) = if s.done == 0 {
            ("—".to_string(), String::new())
        } else {
            (
                pct(f64::from(s.resolved) / f64::from(s.done)),
                interval(wilson_interval(s.resolved, s.done)),
            )
        };
        let _ = write!(
            out,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{} / {}</td><td>{}</td><td><code>{}</code></td><td>{}</td><td>{}</td><td class=\"num\">{}/{}{}</td><td class=\"num\">{rate} <span class=\"muted\">{ci}</span></td><td class=\"num\">{}</td><td class=\"num\">${:.4}</td></tr>",
            run_link(&r.id),
            r.started_at.format("%Y-%m-%d %H:%M"),
            status_tag(r.status.as_str()),
            esc(&r.suite),
            esc(&r.split),
            esc(&r.agent),
            esc(short_hash(&r.config_hash)),
            esc(&r.model),
            notes_label(&r.args),
            s.resolved,
            s.done,
            if s.done < s.attempts {
                format!(" of {}", s.attempts)
            } else {
                String::new()
            },
            tokens_text(s.prompt_tokens + s.completion_tokens),
            s.cost_usd
        );
    }
    out.push_str("</table>");
    out
}

fn notes_label(args: &Value) -> &'static str {
    match NotesPlan::of_run(args) {
        NotesPlan::Off => "off",
        plan if plan.learns() => "learn",
        _ => "from",
    }
}

fn run_options(runs: &[EvalRunSummary], selected: Option<&str>) -> String {
    let mut out = String::new();
    for s in runs {
        let r = &s.run;
        let sel = if selected == Some(r.id.as_str()) {
            " selected"
        } else {
            ""
        };
        let _ = write!(
            out,
            "<option{sel} value=\"{}\">{} · {} / {} · {} · notes {}</option>",
            esc(&r.id),
            esc(&r.id),
            esc(&r.suite),
            esc(&r.split),
            esc(&r.agent),
            notes_label(&r.args)
        );
    }
    out
}

pub async fn list(State(app): State<Arc<App>>) -> Result<Html<String>, ViewError> {
    blocking(&app, |app| {
        let runs = app.store().list_eval_runs(None, Some(RUNS_LISTED))?;
        let mut body = String::from("<h1>Eval runs</h1>");
        body.push_str(&runs_table(&runs));
        if runs.len() >= 2 {
            let _ = write!(
                body,
                "<h2>Compare two runs</h2><form class=\"filters\" method=\"get\" action=\"/evals/compare\"><label>A<select name=\"a\">{}</select></label><label>B<select name=\"b\">{}</select></label><button type=\"submit\">Compare</button></form>",
                run_options(&runs, runs.get(1).map(|s| s.run.id.as_str())),
                run_options(&runs, runs.first().map(|s| s.run.id.as_str())),
            );
            let _ = write!(
                body,
                "<h2>Learning curve</h2><form class=\"filters\" method=\"get\" action=\"/evals/curve\"><label>learn run<select name=\"learn\">{}</select></label><label>baseline run<select name=\"baseline\">{}</select></label><button type=\"submit\">Show curve</button></form>",
                run_options(&runs, None),
                run_options(&runs, None),
            );
        }
        Ok(Html(page(Section::Evals, "Eval runs", &body, None)))
    })
    .await
}

pub async fn list_json(State(app): State<Arc<App>>) -> Result<Json<Value>, ViewError> {
    blocking(&app, |app| {
        let runs = app.store().list_eval_runs(None, Some(RUNS_LISTED))?;
        Ok(Json(json!({ "runs": runs })))
    })
    .await
}

/// Per task: attempts done, resolved, and the rows.
fn by_task(results: &[EvalResultRow]) -> BTreeMap<&str, Vec<&EvalResultRow>> {
    let mut out: BTreeMap<&str, Vec<&EvalResultRow>> = BTreeMap::new();
    for r in results {
        out.entry(r.task_id.as_str()).or_default().push(r);
    }
    out
}

fn run_page(report: &RunReport) -> String {
    let r = &report.run;
    let t = &report.totals;
    let mut body = format!(
        "<h1>Eval run <code>{}</code> {}</h1><p id=\"headline\">{}</p>",
        esc(&r.id),
        status_tag(r.status.as_str()),
        esc(&report.headline())
    );
    let _ = write!(
        body,
        "<table id=\"run-summary\"><tr><th>suite / split</th><td>{} / {}</td><th>agent</th><td>{}</td><th>config</th><td><code>{}</code></td></tr>\
         <tr><th>model</th><td>{}</td><th>repeat · jobs</th><td>{} · {}</td><th>notes</th><td>{}</td></tr>\
         <tr><th>progress</th><td><progress max=\"{}\" value=\"{}\"></progress> {}/{}</td><th>resolved</th><td>{} ({}) {}</td><th>mean tokens</th><td class=\"num\">{}</td></tr>\
         <tr><th>mean turns</th><td class=\"num\">{:.1}</td><th>mean wall</th><td class=\"num\">{:.1}s</td><th>total cost</th><td class=\"num\">${:.4}</td></tr></table>",
        esc(&r.suite),
        esc(&r.split),
        esc(&r.agent),
        esc(short_hash(&r.config_hash)),
        esc(&r.model),
        r.repeat,
        r.jobs,
        notes_label(&r.args),
        t.attempts,
        t.done,
        t.done,
        t.attempts,
        t.resolved,
        pct(t.resolve_rate),
        interval(t.ci95),
        tokens_text(t.mean_tokens.round() as u64),
        t.mean_turns,
        t.mean_wall_secs,
        t.total_cost_usd
    );
    if !t.categories.is_empty() {
        body.push_str("<p>");
        for (cat, n) in &t.categories {
            let _ = write!(body, "{} {n} · ", status_tag(cat));
        }
        body.push_str("</p>");
    }
    body.push_str("<h2>Per task</h2><table id=\"tasks\"><tr><th>task</th><th>resolved</th><th>rate (95% CI)</th><th>attempt</th><th>status</th><th>category</th><th>visible p/f</th><th>hidden p/f</th><th>tokens</th><th>turns</th><th>wall</th><th>cost</th><th>session</th></tr>");
    for (task, rows) in by_task(&report.results) {
        let done: Vec<_> = rows
            .iter()
            .filter(|r| r.status == EvalResultStatus::Done)
            .collect();
        let resolved = done.iter().filter(|r| r.outcome.resolved).count() as u32;
        let n = done.len() as u32;
        let rate = if n == 0 {
            "—".to_string()
        } else {
            format!(
                "{} <span class=\"muted\">{}</span>",
                pct(f64::from(resolved) / f64::from(n)),
                interval(wilson_interval(resolved, n))
            )
        };
        for (i, row) in rows.iter().enumerate() {
            let o = &row.outcome;
            let pf = |p: Option<u32>, f: Option<u32>| match (p, f) {
                (None, None) => "—".to_string(),
                (p, f) => format!(
                    "{}/{}",
                    p.map_or("?".into(), |n| n.to_string()),
                    f.map_or("?".into(), |n| n.to_string())
                ),
            };
            let lead = if i == 0 {
                format!(
                    "<td rowspan=\"{k}\"><code>{}</code></td><td rowspan=\"{k}\" class=\"num\">{resolved}/{n}</td><td rowspan=\"{k}\" class=\"num\">{rate}</td>",
                    esc(task),
                    k = rows.len()
                )
            } else {
                String::new()
            };
            let session = o
                .session_id
                .as_ref()
                .map(|s| {
                    format!(
                        "<a href=\"/sessions/{}\"><code>{}</code></a>",
                        url(s.as_str()),
                        esc(s.as_str())
                    )
                })
                .unwrap_or_else(|| "—".into());
            let category = if o.category.is_empty() {
                "—".to_string()
            } else {
                status_tag(&o.category)
            };
            let error = o
                .error
                .as_deref()
                .map(|e| format!(" <span class=\"muted\">{}</span>", esc(e)))
                .unwrap_or_default();
            let _ = write!(
                body,
                "<tr>{lead}<td class=\"num\">{}</td><td>{}</td><td>{category}{error}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{:.1}s</td><td class=\"num\">${:.4}</td><td>{session}</td></tr>",
                row.attempt,
                status_tag(row.status.as_str()),
                pf(o.visible_passed, o.visible_failed),
                pf(o.hidden_passed, o.hidden_failed),
                num(o.usage.prompt_tokens + o.usage.completion_tokens),
                o.turns,
                o.wall_ms as f64 / 1000.0,
                o.cost_usd
            );
        }
    }
    body.push_str("</table>");
    body
}

pub async fn show(
    State(app): State<Arc<App>>,
    Extension(nonce): Extension<Nonce>,
    Path(id): Path<String>,
) -> Result<Html<String>, ViewError> {
    blocking(&app, move |app| {
        let store = app.store();
        let run = find_run(&store, &id)?;
        let results = store.eval_results(&run.id)?;
        let others = store.list_eval_runs(Some(&run.suite), Some(RUNS_LISTED))?;
        drop(store);
        let running = run.status == EvalRunStatus::Running;
        let learns = NotesPlan::of_run(&run.args).learns();
        let report = RunReport::new(run, results);
        let mut body = run_page(&report);
        let id = &report.run.id;
        let peers: Vec<&EvalRunSummary> = others
            .iter()
            .filter(|s| s.run.id != *id && s.run.split == report.run.split)
            .collect();
        if !peers.is_empty() {
            body.push_str("<h2>Compare with</h2><ul>");
            for p in &peers {
                let _ = write!(
                    body,
                    "<li><a href=\"/evals/compare?a={}&amp;b={}\">{} (notes {})</a>{}</li>",
                    url(&p.run.id),
                    url(id),
                    esc(&p.run.id),
                    notes_label(&p.run.args),
                    if learns && !NotesPlan::of_run(&p.run.args).learns() {
                        format!(
                            " · <a href=\"/evals/curve?learn={}&amp;baseline={}\">learning curve</a>",
                            url(id),
                            url(&p.run.id)
                        )
                    } else {
                        String::new()
                    }
                );
            }
            body.push_str("</ul>");
        }
        let script = running.then(|| live_script(id, report.totals.done));
        Ok(Html(page(
            Section::Evals,
            &format!("Eval run {id}"),
            &body,
            script.as_deref().map(|s| (nonce.0.as_str(), s)),
        )))
    })
    .await
}

/// While a run is going on: poll its progress and swap the page in place
/// when an attempt finishes.
fn live_script(id: &str, done: u32) -> String {
    format!(
        r#"(function(){{var seen={done};var url="/api/evals/{id}/status";
function tick(){{fetch(url,{{credentials:"same-origin"}}).then(function(r){{return r.json();}}).then(function(s){{
if(s.done!==seen||!s.running){{seen=s.done;fetch(location.pathname,{{credentials:"same-origin"}}).then(function(r){{return r.text();}}).then(function(t){{
var doc=new DOMParser().parseFromString(t,"text/html");var m=doc.querySelector("main");if(m){{document.querySelector("main").innerHTML=m.innerHTML;}}}});}}
if(s.running){{setTimeout(tick,1500);}}else{{document.body.setAttribute("data-live","ended");}}}}).catch(function(){{setTimeout(tick,3000);}});}}
document.body.setAttribute("data-live","on");setTimeout(tick,1500);}})();"#,
        id = url(id)
    )
}

pub async fn show_json(
    State(app): State<Arc<App>>,
    Path(id): Path<String>,
) -> Result<Json<Value>, ViewError> {
    blocking(&app, move |app| {
        let store = app.store();
        let run = find_run(&store, &id)?;
        let results = store.eval_results(&run.id)?;
        let report = RunReport::new(run, results);
        serde_json::to_value(&report)
            .map(Json)
            .map_err(|e| ViewError::Internal(format!("encoding run {id}: {e}")))
    })
    .await
}

pub async fn status_json(
    State(app): State<Arc<App>>,
    Path(id): Path<String>,
) -> Result<Json<Value>, ViewError> {
    blocking(&app, move |app| {
        let store = app.store();
        let run = find_run(&store, &id)?;
        let results = store.eval_results(&run.id)?;
        let done = results
            .iter()
            .filter(|r| r.status == EvalResultStatus::Done)
            .count();
        Ok(Json(json!({
            "id": run.id,
            "status": run.status,
            "attempts": results.len(),
            "done": done,
            "running": run.status == EvalRunStatus::Running,
        })))
    })
    .await
}

#[derive(Debug, Deserialize)]
pub struct CompareParams {
    a: Option<String>,
    b: Option<String>,
}

fn required(value: &Option<String>, name: &str) -> Result<String, ViewError> {
    value
        .as_deref()
        .map(str::trim)
        .filter(|v| !v.is_empty())
        .map(str::to_string)
        .ok_or_else(|| {
            ViewError::BadRequest(format!(
                "the `{name}` parameter (an eval run id) is missing"
            ))
        })
}

pub async fn compare(
    State(app): State<Arc<App>>,
    Params(params): Params<CompareParams>,
) -> Result<Html<String>, ViewError> {
    let a = required(&params.a, "a")?;
    let b = required(&params.b, "b")?;
    blocking(&app, move |app| {
        let store = app.store();
        let run_a = find_run(&store, &a)?;
        let run_b = find_run(&store, &b)?;
        if run_a.id == run_b.id {
            return Err(ViewError::BadRequest(format!(
                "both sides name run {}",
                run_a.id
            )));
        }
        let results_a = store.eval_results(&run_a.id)?;
        let results_b = store.eval_results(&run_b.id)?;
        drop(store);
        let cmp = Comparison::new(run_a, &results_a, run_b, &results_b);
        Ok(Html(page(
            Section::Evals,
            "Comparison",
            &compare_page(&cmp),
            None,
        )))
    })
    .await
}

fn compare_page(cmp: &Comparison) -> String {
    let mut body = format!(
        "<h1>{} → {}</h1><p id=\"headline\">{}</p><table><tr><th></th><th>run</th><th>agent</th><th>config</th><th>resolved</th><th>rate (95% CI)</th></tr>",
        esc(&cmp.a.run.id),
        esc(&cmp.b.run.id),
        esc(&cmp.headline())
    );
    for (label, side) in [("A", &cmp.a), ("B", &cmp.b)] {
        let _ = write!(
            body,
            "<tr><th>{label}</th><td>{}</td><td>{}</td><td><code>{}</code></td><td class=\"num\">{}/{}</td><td class=\"num\">{} {}</td></tr>",
            run_link(&side.run.id),
            esc(&side.run.agent),
            esc(short_hash(&side.run.config_hash)),
            side.resolved,
            side.done,
            pct(side.resolve_rate),
            interval(side.ci95)
        );
    }
    body.push_str("</table>");
    let ci = cmp
        .rate_diff_ci95
        .map(|(lo, hi)| format!("{:+.1} to {:+.1} points", lo * 100.0, hi * 100.0))
        .unwrap_or_else(|| "—".into());
    let _ = write!(
        body,
        "<table id=\"paired\"><tr><th>paired attempts</th><td class=\"num\">{}</td></tr><tr><th>resolve rate A → B</th><td class=\"num\">{} → {}</td></tr><tr><th>difference (paired bootstrap 95% CI, {} resamples)</th><td class=\"num\">{:+.1} points ({ci})</td></tr><tr><th>mean tokens B − A</th><td class=\"num\">{:+.0}</td></tr><tr><th>mean wall B − A</th><td class=\"num\">{:+.1}s</td></tr><tr><th>mean cost B − A</th><td class=\"num\">{}</td></tr></table>",
        cmp.pairs.len(),
        pct(cmp.paired_rate_a),
        pct(cmp.paired_rate_b),
        cmp.bootstrap_resamples,
        cmp.rate_diff * 100.0,
        cmp.mean_tokens_diff,
        cmp.mean_wall_secs_diff,
        signed_dollars(cmp.mean_cost_diff)
    );
    for (title, list) in [
        ("Gained (B resolved, A did not)", &cmp.gained),
        ("Lost (A resolved, B did not)", &cmp.lost),
        ("Only in A", &cmp.only_a),
        ("Only in B", &cmp.only_b),
    ] {
        if !list.is_empty() {
            let _ = write!(
                body,
                "<p><b>{title}:</b> {}</p>",
                list.iter()
                    .map(|t| format!("<code>{}</code>", esc(t)))
                    .collect::<Vec<_>>()
                    .join(" ")
            );
        }
    }
    for w in &cmp.warnings {
        let _ = write!(body, "<p class=\"tag warn\">{}</p>", esc(w));
    }
    body.push_str("<h2>Pairs</h2><table id=\"pairs\"><tr><th>task</th><th>attempt</th><th>A</th><th>B</th><th>flip</th><th>tokens B − A</th><th>wall B − A</th></tr>");
    for p in &cmp.pairs {
        let yes = |r: bool, c: &str| {
            format!(
                "{} <span class=\"muted\">{}</span>",
                if r {
                    status_tag("resolved")
                } else {
                    status_tag("failed")
                },
                esc(c)
            )
        };
        let _ = write!(
            body,
            "<tr><td><code>{}</code></td><td class=\"num\">{}</td><td>{}</td><td>{}</td><td>{}</td><td class=\"num\">{:+}</td><td class=\"num\">{:+.1}s</td></tr>",
            esc(&p.task_id),
            p.attempt,
            yes(p.a_resolved, &p.a_category),
            yes(p.b_resolved, &p.b_category),
            match p.flip() {
                Some("gained") => "<span class=\"tag ok\">gained</span>",
                Some(_) => "<span class=\"tag bad\">lost</span>",
                None => "",
            },
            p.tokens_diff,
            p.wall_ms_diff as f64 / 1000.0
        );
    }
    body.push_str("</table>");
    body
}

/// `+$0.0012` / `-$0.0012`.
fn signed_dollars(v: f64) -> String {
    format!("{}${:.4}", if v < 0.0 { '-' } else { '+' }, v.abs())
}

#[derive(Debug, Deserialize)]
pub struct CurveParams {
    learn: Option<String>,
    baseline: Option<String>,
}

fn arm(store: &Store, specs: &str) -> Result<Vec<ArmRun>, ViewError> {
    let mut runs = Vec::new();
    for spec in specs.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        runs.push(ArmRun::load(store, find_run(store, spec)?)?);
    }
    Ok(runs)
}

fn learning_curve(app: &App, params: &CurveParams) -> Result<LearningCurve, ViewError> {
    let learn = required(&params.learn, "learn")?;
    let baseline = required(&params.baseline, "baseline")?;
    let store = app.store();
    let learn = arm(&store, &learn)?;
    let baseline = arm(&store, &baseline)?;
    drop(store);
    LearningCurve::new(learn, baseline)
        .map_err(|e| ViewError::BadRequest(format!("no learning curve for these runs: {e}")))
}

pub async fn curve(
    State(app): State<Arc<App>>,
    Params(params): Params<CurveParams>,
) -> Result<Html<String>, ViewError> {
    blocking(&app, move |app| {
        let curve = learning_curve(app, &params)?;
        let query = format!(
            "learn={}&amp;baseline={}",
            url(params.learn.as_deref().unwrap_or("")),
            url(params.baseline.as_deref().unwrap_or(""))
        );
        let body = format!(
            "<h1>Learning curve</h1><p id=\"headline\">{}</p><p><img class=\"chart\" id=\"curve\" alt=\"learning curve\" src=\"/evals/curve.svg?{query}\"></p><p><a href=\"/evals/curve.svg?{query}\" download=\"learning-curve.svg\">Save the SVG</a></p><pre>{}</pre>",
            esc(&curve.headline()),
            esc(&curve.render_text())
        );
        Ok(Html(page(Section::Evals, "Learning curve", &body, None)))
    })
    .await
}

/// The chart as a standalone SVG (shown through `<img>`, where no script
/// in it could run).
pub async fn curve_svg(
    State(app): State<Arc<App>>,
    Params(params): Params<CurveParams>,
) -> Result<Response, ViewError> {
    blocking(&app, move |app| {
        let curve = learning_curve(app, &params)?;
        Ok(svg_response(curve.render_svg()))
    })
    .await
}

pub fn svg_response(svg: String) -> Response {
    (
        [(header::CONTENT_TYPE, "image/svg+xml; charset=utf-8")],
        svg,
    )
        .into_response()
}
