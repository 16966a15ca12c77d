//! The start page, the session list and a session's trace.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::sync::Arc;

use axum::Json;
use axum::extract::{Extension, Path, State};
use axum::response::Html;
use chrono::{DateTime, NaiveDate, Utc};
use quire_store::{SessionQuery, SessionRow, SessionStatus, Store, StoreError, StoredEvent};
use quire_types::{EventKind, SessionId};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::ViewError;
use crate::error::Params;
use crate::html::{Section, esc, file_sections, num, page, status_tag, url};
use crate::safety::Nonce;
use crate::state::{App, blocking};

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

/// Polls the session's status; when events arrive, re-reads the page and
/// swaps the trace in place (the server escaped it; scripts in swapped
/// HTML never run).
pub fn live_script(id: &SessionId, events: usize) -> String {
    format!(
        r#"(function(){{var seen={events};var url="/api/sessions/{id}/status";
function tick(){{fetch(url,{{credentials:"same-origin"}}).then(function(r){{return r.json();}}).then(function(s){{
if(s.events!==seen){{seen=s.events;fetch(location.pathname,{{credentials:"same-origin"}}).then(function(r){{return r.text();}}).then(function(t){{
var doc=new DOMParser().parseFromString(t,"text/html");var m=doc.querySelector("main");if(m){{document.querySelector("main").innerHTML=m.innerHTML;}}
document.body.setAttribute("data-live-events",String(seen));}});}}
if(s.running){{setTimeout(tick,1000);}}else{{document.body.setAttribute("data-live","ended");}}}}).catch(function(){{setTimeout(tick,3000);}});}}
document.body.setAttribute("data-live","on");setTimeout(tick,1000);}})();"#,
        id = url(id.as_str())
    )
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

fn pre(text: &str) -> String {
    format!("<pre>{}</pre>", esc(text))
}

fn pretty_args(arguments: &str) -> String {
    serde_json::from_str::<Value>(arguments)
        .ok()
        .and_then(|v| serde_json::to_string_pretty(&v).ok())
        .unwrap_or_else(|| arguments.to_string())
}

fn note_links(ids: &[String]) -> String {
    ids.iter()
        .map(|id| {
            format!(
                "<a href=\"/notes/{}\"><code>{}</code></a>",
                url(id),
                esc(id)
            )
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// The whole trace page body.
pub fn trace(
    row: &SessionRow,
    events: &[StoredEvent],
    distilled: &[(String, String, String)],
    eval: Option<&(String, String)>,
) -> String {
    let mut out = String::with_capacity(events.len() * 1024 + 4096);
    let u = &row.totals.usage;
    let _ = write!(
        out,
        "<h1>Session <code>{}</code> {}</h1><div class=\"card\" id=\"summary\"><p><b>Task:</b></p>{}<table>\
         <tr><th>project</th><td>{}</td><th>agent</th><td>{}</td><th>model</th><td>{}</td></tr>\
         <tr><th>started</th><td>{}</td><th>ended</th><td>{}</td><th>config</th><td><code>{}</code></td></tr>\
         <tr><th>model calls</th><td class=\"num\">{}</td><th>tool calls</th><td class=\"num\">{}</td><th>elapsed</th><td class=\"num\">{:.1}s</td></tr>\
         <tr><th>prompt tokens</th><td class=\"num\">{}</td><th>cached / fresh</th><td class=\"num\">{} / {}</td><th>completion</th><td class=\"num\">{}</td></tr>\
         <tr><th>cost</th><td class=\"num\">${:.4}</td><th>outcome</th><td colspan=\"3\">{}</td></tr></table>",
        esc(row.id.as_str()),
        status_tag(row.status.as_str()),
        pre(&row.task),
        esc(&row.project),
        esc(&row.agent),
        esc(&row.model),
        row.started_at.format("%Y-%m-%d %H:%M:%S UTC"),
        row.ended_at
            .map(|t| t.format("%Y-%m-%d %H:%M:%S UTC").to_string())
            .unwrap_or_else(|| "—".into()),
        esc(&row.config_hash.chars().take(12).collect::<String>()),
        row.totals.iterations,
        row.totals.tool_calls,
        row.totals.elapsed_ms as f64 / 1000.0,
        num(u.prompt_tokens),
        num(u.cached_tokens),
        num(u.prompt_tokens.saturating_sub(u.cached_tokens)),
        num(u.completion_tokens),
        row.totals.cost_usd,
        esc(row.outcome.as_deref().unwrap_or("—")),
    );
    if let Some(parent) = &row.parent_id {
        let _ = write!(
            out,
            "<p>Resumes <a href=\"/sessions/{}\"><code>{}</code></a></p>",
            url(parent.as_str()),
            esc(parent.as_str())
        );
    }
    if let Some((run, task)) = eval {
        let _ = write!(
            out,
            "<p>Attempt at task <code>{}</code> of eval run <a href=\"/evals/{}\"><code>{}</code></a></p>",
            esc(task),
            url(run),
            esc(run)
        );
    }
    out.push_str("</div>");

    // Notes read and written.
    let mut read: Vec<String> = Vec::new();
    for e in events {
        if let EventKind::NotesRetrieved { ids, .. } = &e.event.kind {
            for id in ids {
                if !read.contains(id) {
                    read.push(id.clone());
                }
            }
        }
    }
    out.push_str("<div class=\"card\" id=\"notes\"><h3>Notes</h3>");
    if read.is_empty() {
        out.push_str("<p class=\"muted\">No notes reached this session.</p>");
    } else {
        let _ = write!(out, "<p>Read or shown: {}</p>", note_links(&read));
    }
    if distilled.is_empty() {
        out.push_str("<p class=\"muted\">No notes distilled from this session.</p>");
    } else {
        out.push_str("<p>Distilled from it:</p><ul id=\"distilled\">");
        for (id, action, title) in distilled {
            let _ = write!(
                out,
                "<li>{} <a href=\"/notes/{}\">{}</a></li>",
                esc(action),
                url(id),
                esc(title)
            );
        }
        out.push_str("</ul>");
    }
    out.push_str("</div>");

    // Tokens per request.
    out.push_str("<h2>Requests</h2><table id=\"requests\"><tr><th>#</th><th>estimated</th><th>prompt</th><th>cached</th><th>fresh</th><th>completion</th><th>ms</th><th>model</th></tr>");
    let mut estimates: HashMap<u32, u64> = HashMap::new();
    for e in events {
        match &e.event.kind {
            EventKind::ModelRequest {
                iteration,
                estimated_tokens,
                ..
            } => {
                estimates.insert(*iteration, *estimated_tokens);
            }
            EventKind::ModelResponse {
                iteration,
                usage,
                duration_ms,
                model,
                ..
            } => {
                let _ = write!(
                    out,
                    "<tr><td><a href=\"#step-{iteration}\">{iteration}</a></td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{duration_ms}</td><td>{}</td></tr>",
                    estimates
                        .get(iteration)
                        .map(|n| num(*n))
                        .unwrap_or_default(),
                    num(usage.prompt_tokens),
                    num(usage.cached_tokens),
                    num(usage.prompt_tokens.saturating_sub(usage.cached_tokens)),
                    num(usage.completion_tokens),
                    esc(model)
                );
            }
            _ => {}
        }
    }
    out.push_str("</table><h2>Trace</h2><div id=\"trace\">");
    let mut calls: HashMap<&str, &str> = HashMap::new();
    for e in events {
        if let EventKind::ToolCallStarted {
            call_id, arguments, ..
        } = &e.event.kind
        {
            calls.insert(call_id, arguments);
        }
    }
    for e in events {
        event_card(&mut out, e, &calls);
    }
    out.push_str("</div>");
    out
}

fn event_card(out: &mut String, e: &StoredEvent, calls: &HashMap<&str, &str>) {
    let at = e.at.format("%H:%M:%S");
    let mut card = |class: &str, title: &str, inner: &str| {
        let _ = write!(
            out,
            "<div class=\"card {class}\" id=\"e{}\"><h3>{title} <span class=\"muted\">#{} · {at}</span></h3>{inner}</div>",
            e.seq, e.seq
        );
    };
    match &e.event.kind {
        EventKind::SessionStarted { workspace, .. } => card(
            "start",
            "Session started",
            &format!(
                "<p class=\"muted\">workspace <code>{}</code></p>",
                esc(workspace)
            ),
        ),
        EventKind::SystemPrompt { content } => card(
            "system",
            "System prompt",
            &format!(
                "<details><summary>{} characters</summary>{}</details>",
                content.chars().count(),
                pre(content)
            ),
        ),
        EventKind::UserMessage { source, content } => card(
            "user",
            &format!(
                "User message <span class=\"tag\">{}</span>",
                esc(source.as_str())
            ),
            &pre(content),
        ),
        EventKind::ModelRequest {
            iteration,
            messages,
            tools,
            estimated_tokens,
        } => card(
            "request",
            &format!("<span id=\"step-{iteration}\">Request {iteration}</span>"),
            &format!(
                "<p class=\"muted\">{messages} messages · {tools} tools · ~{} tokens estimated</p>",
                num(*estimated_tokens)
            ),
        ),
        EventKind::ModelResponse {
            iteration,
            content,
            tool_calls,
            usage,
            duration_ms,
            ..
        } => {
            let mut inner = format!(
                "<p class=\"muted\">prompt {} (cached {} · fresh {}) · completion {} · {duration_ms} ms</p>",
                num(usage.prompt_tokens),
                num(usage.cached_tokens),
                num(usage.prompt_tokens.saturating_sub(usage.cached_tokens)),
                num(usage.completion_tokens)
            );
            if !content.trim().is_empty() {
                let _ = write!(inner, "<div class=\"reply\">{}</div>", pre(content));
            }
            for call in tool_calls {
                let _ = write!(
                    inner,
                    "<p>calls <code>{}</code></p>{}",
                    esc(&call.name),
                    pre(&pretty_args(&call.arguments))
                );
            }
            card("response", &format!("Reply {iteration}"), &inner)
        }
        EventKind::ModelRetry {
            iteration,
            failed_attempt,
            max_attempts,
            reason,
            usage,
            elapsed_ms,
            retry_in_ms,
            ..
        } => card(
            "repair warn",
            &format!(
                "Retry of request {iteration}: attempt {failed_attempt}/{max_attempts} failed"
            ),
            &format!(
                "<p class=\"muted\">after {elapsed_ms} ms · prompt {} · completion {} reported before it failed · next attempt in {retry_in_ms} ms</p>{}",
                num(usage.prompt_tokens),
                num(usage.completion_tokens),
                pre(reason)
            ),
        ),
        EventKind::ToolCallStarted { .. } => {}
        EventKind::ToolResult {
            call_id,
            name,
            views,
            is_error,
            duration_ms,
        } => {
            let args = calls
                .get(call_id.as_str())
                .map(|a| {
                    format!(
                        "<details><summary>arguments</summary>{}</details>",
                        pre(&pretty_args(a))
                    )
                })
                .unwrap_or_default();
            let inner = format!(
                "{args}<div class=\"views\"><div class=\"agent-view\"><h4>agent view (what the model read)</h4>{}</div><div class=\"user-view\"><h4>user view</h4>{}</div></div>",
                pre(&views.agent_view),
                pre(&views.user_view)
            );
            let flag = if *is_error {
                " <span class=\"tag bad\">error</span>"
            } else {
                ""
            };
            card(
                "tool",
                &format!(
                    "Tool <code>{}</code>{flag} <span class=\"muted\">{duration_ms} ms</span>",
                    esc(name)
                ),
                &inner,
            )
        }
        EventKind::ProtocolRepair { attempt, reason } => card(
            "repair warn",
            &format!("Protocol repair {attempt}"),
            &pre(reason),
        ),
        EventKind::TestRun {
            phase,
            command,
            exit_code,
            passed,
            failed,
            timed_out,
            digest,
            output,
            duration_ms,
        } => {
            let figures = format!(
                "<p><code>{}</code> · exit {} · {} passed · {} failed{} · {duration_ms} ms</p>",
                esc(command),
                exit_code.map_or("—".into(), |c| c.to_string()),
                passed.map_or("?".into(), |n| n.to_string()),
                failed.map_or("?".into(), |n| n.to_string()),
                if *timed_out { " · timed out" } else { "" }
            );
            card(
                "tests",
                &format!("Tests <span class=\"tag\">{}</span>", esc(phase.as_str())),
                &format!(
                    "{figures}{}<details><summary>output</summary>{}</details>",
                    pre(digest),
                    pre(output)
                ),
            )
        }
        EventKind::Patch { diff, files } => card(
            "patch",
            &format!(
                "Final diff <span class=\"muted\">{} file(s)</span>",
                files.len()
            ),
            &file_sections(diff),
        ),
        EventKind::Approval { decision, feedback } => card(
            "approval",
            &format!("Approval {}", status_tag(decision.as_str())),
            &feedback.as_deref().map(pre).unwrap_or_default(),
        ),
        EventKind::Applied { files } => card(
            "applied ok",
            "Applied to the original",
            &pre(&files.join("\n")),
        ),
        EventKind::RolledBack { files, reason } => card(
            "rolled-back bad",
            "Rolled back",
            &format!("{}{}", pre(reason), pre(&files.join("\n"))),
        ),
        EventKind::Compaction {
            stage,
            tokens_before,
            tokens_after,
            summary,
            usage,
            messages,
        } => card(
            "compaction",
            &format!(
                "Compaction <span class=\"tag\">{}</span>",
                esc(stage.as_str())
            ),
            &format!(
                "<p>{} → {} tokens · {} messages kept · summary cost {} prompt tokens</p>{}",
                num(*tokens_before),
                num(*tokens_after),
                messages.len(),
                num(usage.prompt_tokens),
                summary
                    .as_deref()
                    .map(|s| format!("<details><summary>summary</summary>{}</details>", pre(s)))
                    .unwrap_or_default()
            ),
        ),
        EventKind::HistoryReplaced { reason, messages } => card(
            "history",
            "History replaced",
            &format!(
                "{}<p class=\"muted\">{} messages</p>",
                pre(reason),
                messages.len()
            ),
        ),
        EventKind::Error { message } => card("error bad", "Error", &pre(message)),
        EventKind::NotesRetrieved { via, ids } => card(
            "notes-retrieved",
            &format!(
                "Notes retrieved <span class=\"tag\">{}</span>",
                esc(via.as_str())
            ),
            &format!("<p>{}</p>", note_links(ids)),
        ),
        EventKind::Sandbox { enforced, detail } => card(
            "sandbox",
            &format!(
                "Sandbox {}",
                if *enforced {
                    "enforced"
                } else {
                    "not enforced"
                }
            ),
            &format!("<p class=\"muted\">{}</p>", esc(detail)),
        ),
        EventKind::CommandDecision {
            command,
            decision,
            reason,
        } => card(
            "command",
            &format!("Command {}", status_tag(decision.as_str())),
            &format!("{}<p class=\"muted\">{}</p>", pre(command), esc(reason)),
        ),
        // An extension's own event: its owner, name and data, escaped.
        EventKind::Extension(payload) => card(
            "extension",
            &format!(
                "{} <span class=\"tag\">{}</span>",
                esc(&payload.extension),
                esc(&payload.event)
            ),
            &pre(&payload.data.to_string()),
        ),
        EventKind::SessionEnded {
            status,
            outcome,
            usage,
            iterations,
            tool_calls,
            elapsed_ms,
            cost_usd,
        } => card(
            "ended",
            &format!("Session ended {}", status_tag(status.as_str())),
            &format!(
                "{}<p>{iterations} model calls · {tool_calls} tool calls · {} prompt ({} cached) + {} completion tokens · {:.1}s · ${cost_usd:.4}</p>",
                pre(outcome),
                num(usage.prompt_tokens),
                num(usage.cached_tokens),
                num(usage.completion_tokens),
                *elapsed_ms as f64 / 1000.0
            ),
        ),
    }
}
