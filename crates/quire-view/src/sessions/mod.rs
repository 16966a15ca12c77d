//! The start page, the session list and a session's trace (its page
//! body is [`trace`]).

mod trace;

use std::fmt::Write as _;
use std::sync::Arc;

use axum::Json;
use axum::extract::{Extension, Path, State};
use axum::response::Html;
use chrono::{DateTime, NaiveDate, Utc};
use quire_store::{SessionQuery, SessionRow, SessionStatus, Store, StoreError};
use quire_types::SessionId;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::ViewError;
use crate::error::Params;
use crate::html::{Section, esc, num, page, status_tag, url};
use crate::safety::Nonce;
use crate::state::{App, blocking};

pub use trace::{live_script, trace};

/// Most sessions on one page of the list.
const MAX_PER_PAGE: usize = 500;
const DEFAULT_PER_PAGE: usize = 50;

#[derive(Debug, Default, Deserialize)]
pub struct ListParams {
    project: Option<String>,
    status: Option<String>,
    agent: Option<String>,
    /// `YYYY-MM-DD`, inclusive.
    since: Option<String>,
    /// `YYYY-MM-DD`, inclusive.
    until: Option<String>,
    page: Option<usize>,
    per: Option<usize>,
}

fn nonempty(v: &Option<String>) -> Option<String> {
    v.as_deref()
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
}

fn date(field: &str, text: &Option<String>, end: bool) -> Result<Option<DateTime<Utc>>, ViewError> {
    let Some(text) = nonempty(text) else {
        return Ok(None);
    };
    let day = NaiveDate::parse_from_str(&text, "%Y-%m-%d").map_err(|_| {
        ViewError::BadRequest(format!(
            "`{field}` must be a date like 2025-01-31, not `{text}`"
        ))
    })?;
    let day = if end {
        day.succ_opt().unwrap_or(day)
    } else {
        day
    };
    Ok(day.and_hms_opt(0, 0, 0).map(|t| t.and_utc()))
}

impl ListParams {
    fn query(&self) -> Result<SessionQuery, ViewError> {
        let per = self.per.unwrap_or(DEFAULT_PER_PAGE).clamp(1, MAX_PER_PAGE);
        let page = self.page.unwrap_or(1).max(1);
        Ok(SessionQuery {
            project: nonempty(&self.project),
            status: nonempty(&self.status).and_then(|s| s.parse::<SessionStatus>().ok()),
            agent: nonempty(&self.agent),
            since: date("since", &self.since, false)?,
            until: date("until", &self.until, true)?,
            offset: (page - 1).saturating_mul(per),
            limit: per,
        })
    }

    /// This list's query string with another page number.
    fn with_page(&self, page: usize) -> String {
        let mut out = format!("page={page}");
        for (key, value) in [
            ("project", &self.project),
            ("status", &self.status),
            ("agent", &self.agent),
            ("since", &self.since),
            ("until", &self.until),
        ] {
            if let Some(v) = nonempty(value) {
                let _ = write!(out, "&{key}={}", url(&v));
            }
        }
        if let Some(per) = self.per {
            let _ = write!(out, "&per={per}");
        }
        out
    }
}

fn store_err(e: StoreError) -> ViewError {
    match e {
        StoreError::AmbiguousPrefix {
            prefix, matches, ..
        } => ViewError::BadRequest(format!(
            "`{prefix}` matches several sessions: {}",
            matches.join(", ")
        )),
        other => ViewError::Store(other),
    }
}

fn find(store: &Store, id: &str) -> Result<SessionRow, ViewError> {
    store
        .find_session(id)
        .map_err(store_err)?
        .ok_or_else(|| ViewError::NotFound(format!("no session matches `{id}`")))
}

fn first_line(text: &str, max: usize) -> String {
    let line = text.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
    let mut out: String = line.chars().take(max).collect();
    if line.chars().count() > max {
        out.push('…');
    }
    out
}

fn session_table(rows: &[SessionRow]) -> String {
    let mut out = String::from(
        "<table class=\"sessions\"><tr><th>id</th><th>started (UTC)</th><th>status</th><th>project</th><th>agent</th><th>task</th><th>steps</th><th>tokens</th><th>cost</th></tr>",
    );
    for r in rows {
        let tokens = r.totals.usage.prompt_tokens + r.totals.usage.completion_tokens;
        let _ = write!(
            out,
            "<tr><td><a href=\"/sessions/{}\"><code>{}</code></a></td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">${:.4}</td></tr>",
            url(r.id.as_str()),
            esc(r.id.as_str()),
            r.started_at.format("%Y-%m-%d %H:%M"),
            status_tag(r.status.as_str()),
            esc(&r.project),
            esc(&r.agent),
            esc(&first_line(&r.task, 80)),
            r.totals.iterations,
            num(tokens),
            r.totals.cost_usd
        );
    }
    out.push_str("</table>");
    out
}

pub async fn home(State(app): State<Arc<App>>) -> Result<Html<String>, ViewError> {
    blocking(&app, |app| {
        let store = app.store();
        let recent = store.session_page(&SessionQuery {
            limit: 10,
            ..Default::default()
        })?;
        let runs = store.list_eval_runs(None, Some(5))?;
        let notes = app.notes.index.len();
        let mut body = format!(
            "<h1>Quire data home</h1><p class=\"muted\"><code>{}</code></p>\
             <p><a href=\"/sessions\">{} sessions</a> · <a href=\"/notes\">{} notes</a> · <a href=\"/evals\">eval runs</a> · <a href=\"/generations\">generations</a></p>\
             <h2>Recent sessions</h2>",
            esc(&app.home.display().to_string()),
            num(recent.total),
            num(notes),
        );
        if recent.rows.is_empty() {
            body.push_str("<p>No sessions yet: run <code>quire run</code> or <code>quire demo</code>.</p>");
        } else {
            body.push_str(&session_table(&recent.rows));
        }
        body.push_str("<h2>Recent eval runs</h2>");
        body.push_str(&crate::evals::runs_table(&runs));
        Ok(Html(page(Section::Home, "Start", &body, None)))
    })
    .await
}

fn select(name: &str, label: &str, options: &[String], current: Option<&str>) -> String {
    let mut out = format!("<label>{label}<select name=\"{name}\"><option value=\"\">any</option>");
    for o in options {
        let sel = if current == Some(o.as_str()) {
            " selected"
        } else {
            ""
        };
        let _ = write!(out, "<option{sel} value=\"{0}\">{0}</option>", esc(o));
    }
    out.push_str("</select></label>");
    out
}

pub async fn list(
    State(app): State<Arc<App>>,
    Params(params): Params<ListParams>,
) -> Result<Html<String>, ViewError> {
    let query = params.query()?;
    blocking(&app, move |app| {
        let store = app.store();
        let facets = store.session_facets()?;
        let found = store.session_page(&query)?;
        let per = query.limit;
        let page_no = query.offset / per + 1;
        let pages = (found.total as usize).div_ceil(per).max(1);
        let mut body = String::from("<h1>Sessions</h1><form class=\"filters\" method=\"get\" action=\"/sessions\">");
        body.push_str(&select("project", "project", &facets.projects, params.project.as_deref()));
        body.push_str(&select("status", "status", &facets.statuses, params.status.as_deref()));
        body.push_str(&select("agent", "agent", &facets.agents, params.agent.as_deref()));
        let _ = write!(
            body,
            "<label>since<input type=\"date\" name=\"since\" value=\"{}\"></label><label>until<input type=\"date\" name=\"until\" value=\"{}\"></label><button type=\"submit\">Filter</button></form>",
            esc(params.since.as_deref().unwrap_or("")),
            esc(params.until.as_deref().unwrap_or(""))
        );
        let _ = write!(
            body,
            "<p class=\"muted\" id=\"count\">{} matching · page {page_no} of {pages}</p>",
            num(found.total)
        );
        if found.rows.is_empty() {
            body.push_str("<p>No session matches these filters.</p>");
        } else {
            body.push_str(&session_table(&found.rows));
        }
        body.push_str("<p class=\"pager\">");
        if page_no > 1 {
            let _ = write!(body, "<a rel=\"prev\" href=\"/sessions?{}\">← newer</a> ", esc(&params.with_page(page_no - 1)));
        }
        if page_no < pages {
            let _ = write!(body, "<a rel=\"next\" href=\"/sessions?{}\">older →</a>", esc(&params.with_page(page_no + 1)));
        }
        body.push_str("</p>");
        Ok(Html(page(Section::Sessions, "Sessions", &body, None)))
    })
    .await
}

pub async fn list_json(
    State(app): State<Arc<App>>,
    Params(params): Params<ListParams>,
) -> Result<Json<Value>, ViewError> {
    let query = params.query()?;
    blocking(&app, move |app| {
        let found = app.store().session_page(&query)?;
        Ok(Json(json!({
            "total": found.total,
            "offset": query.offset,
            "limit": query.limit,
            "sessions": found.rows,
        })))
    })
    .await
}

pub async fn show_json(
    State(app): State<Arc<App>>,
    Path(id): Path<String>,
) -> Result<Json<Value>, ViewError> {
    blocking(&app, move |app| {
        let store = app.store();
        let row = find(&store, &id)?;
        let events = store.events(&row.id)?;
        Ok(Json(json!({ "session": row, "events": events })))
    })
    .await
}

pub async fn status_json(
    State(app): State<Arc<App>>,
    Path(id): Path<String>,
) -> Result<Json<Value>, ViewError> {
    blocking(&app, move |app| {
        let store = app.store();
        let row = find(&store, &id)?;
        let events = store.event_count(&row.id)?;
        Ok(Json(json!({
            "id": row.id,
            "status": row.status,
            "events": events,
            "running": row.status == SessionStatus::Running,
        })))
    })
    .await
}

pub async fn show(
    State(app): State<Arc<App>>,
    Extension(nonce): Extension<Nonce>,
    Path(id): Path<String>,
) -> Result<Html<String>, ViewError> {
    blocking(&app, move |app| {
        let store = app.store();
        let row = find(&store, &id)?;
        let events = store.events(&row.id)?;
        let distilled = distilled_notes(&store, &row.id)?;
        let evals = eval_of(&store, &row.id)?;
        drop(store);
        let body = trace(&row, &events, &distilled, evals.as_ref());
        let script =
            (row.status == SessionStatus::Running).then(|| live_script(&row.id, events.len()));
        Ok(Html(page(
            Section::Sessions,
            &format!("Session {}", row.id),
            &body,
            script.as_deref().map(|s| (nonce.0.as_str(), s)),
        )))
    })
    .await
}

/// Notes the session's distillation wrote: (id, action, title).
fn distilled_notes(
    store: &Store,
    id: &SessionId,
) -> Result<Vec<(String, String, String)>, ViewError> {
    let Some(job) = store.distill_job(id)? else {
        return Ok(Vec::new());
    };
    let mut out = Vec::new();
    for note in job.notes_written.as_array().into_iter().flatten() {
        let field = |k: &str| {
            note.get(k)
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string()
        };
        out.push((field("id"), field("action"), field("title")));
    }
    Ok(out)
}

/// The eval run and task this session was an attempt of, if any.
fn eval_of(store: &Store, id: &SessionId) -> Result<Option<(String, String)>, ViewError> {
    let Some(run) = store.session_eval_run(id)? else {
        return Ok(None);
    };
    Ok(Some(run))
}
