//! The notes tree, search through the tantivy index (as you type), and one
//! note: rendered Markdown, its frontmatter, provenance and the sessions
//! that used it, and its superseded chain.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::Arc;

use axum::Json;
use axum::extract::{Extension, Path, State};
use axum::response::Html;
use quire_notes::{Hit, Note, SearchQuery, Status, stale_reason};
use quire_store::SessionQuery;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::ViewError;
use crate::error::Params;
use crate::html::{Section, esc, markdown, page, status_tag, url};
use crate::safety::Nonce;
use crate::state::{App, blocking};

/// Most hits one search shows.
const MAX_HITS: usize = 50;

#[derive(Debug, Default, Deserialize)]
pub struct SearchParams {
    q: Option<String>,
    /// Include superseded notes.
    all: Option<String>,
}

impl SearchParams {
    fn text(&self) -> &str {
        self.q.as_deref().map(str::trim).unwrap_or("")
    }
    fn all(&self) -> bool {
        self.all
            .as_deref()
            .is_some_and(|v| !v.is_empty() && v != "0")
    }
}

fn search(app: &App, params: &SearchParams) -> Result<Vec<Hit>, ViewError> {
    let mut query = SearchQuery::new(params.text());
    query.status_active_only = !params.all();
    query.limit = MAX_HITS;
    Ok(app.notes.index.search(&query)?)
}

fn hits_html(hits: &[Hit], text: &str) -> String {
    if text.is_empty() {
        return String::from("<p class=\"muted\">Type to search the notes.</p>");
    }
    if hits.is_empty() {
        return format!(
            "<p class=\"none\">No note matches <q>{}</q>.</p>",
            esc(text)
        );
    }
    let mut out = format!("<p class=\"muted\">{} hit(s)</p>", hits.len());
    for h in hits {
        let _ = write!(
            out,
            "<div class=\"hit\"><a href=\"/notes/{}\">{}</a> <span class=\"tag\">{}</span> <span class=\"muted\">{}</span><div>{}</div><div class=\"snip\">{}</div></div>",
            url(&h.id),
            esc(&h.title),
            esc(h.kind.as_str()),
            esc(&h.path),
            esc(&h.description),
            esc(&h.snippet)
        );
    }
    out
}

#[derive(Default)]
struct Folder {
    folders: BTreeMap<String, Folder>,
    notes: Vec<(String, String, bool)>,
}

fn tree_html(folder: &Folder, out: &mut String) {
    out.push_str("<ul class=\"tree\">");
    for (name, sub) in &folder.folders {
        let _ = write!(out, "<li><details open><summary>{}/</summary>", esc(name));
        tree_html(sub, out);
        out.push_str("</details></li>");
    }
    for (id, title, superseded) in &folder.notes {
        let mark = if *superseded {
            " <span class=\"tag\">superseded</span>"
        } else {
            ""
        };
        let _ = write!(
            out,
            "<li><a href=\"/notes/{}\">{}</a>{mark}</li>",
            url(id),
            esc(title)
        );
    }
    out.push_str("</ul>");
}

/// Folders, then notes, from `projects/…` and `shared/…` paths.
fn folders(notes: &[Note]) -> Folder {
    let mut root = Folder::default();
    for n in notes {
        let path = n.path_str();
        let mut parts: Vec<&str> = path.split('/').collect();
        parts.pop();
        let mut at = &mut root;
        for p in parts {
            at = at.folders.entry(p.to_string()).or_default();
        }
        at.notes.push((
            n.meta.id.clone(),
            n.meta.title.clone(),
            n.meta.status == Status::Superseded,
        ));
    }
    root
}

const SEARCH_SCRIPT: &str = r##"(function(){var box=document.getElementById("q");var out=document.getElementById("hits");var timer=null;var asked=0;
function run(){var q=box.value;var n=++asked;fetch("/notes/hits?q="+encodeURIComponent(q),{credentials:"same-origin"}).then(function(r){return r.text();}).then(function(t){if(n===asked){out.innerHTML=t;out.setAttribute("data-query",q);}});}
box.addEventListener("input",function(){clearTimeout(timer);timer=setTimeout(run,150);});
var h=location.hash;if(h.indexOf("#q=")===0){box.value=decodeURIComponent(h.slice(3));run();}})();"##;

pub async fn tree(
    State(app): State<Arc<App>>,
    Extension(nonce): Extension<Nonce>,
    Params(params): Params<SearchParams>,
) -> Result<Html<String>, ViewError> {
    blocking(&app, move |app| {
        let report = app.notes.tree.scan()?;
        let text = params.text().to_string();
        let hits = if text.is_empty() {
            Vec::new()
        } else {
            search(app, &params)?
        };
        let mut body = format!(
            "<h1>Notes</h1><p class=\"muted\">{} notes in <code>{}</code></p><div class=\"notes\"><div><h2>Tree</h2>",
            report.notes.len(),
            esc(&app.notes.root().display().to_string())
        );
        if report.notes.is_empty() {
            body.push_str("<p>No notes yet. Sessions are distilled into notes when they end.</p>");
        } else {
            tree_html(&folders(&report.notes), &mut body);
        }
        if !report.broken.is_empty() {
            body.push_str("<h3>Broken notes (left out)</h3><ul>");
            for b in &report.broken {
                let _ = write!(
                    body,
                    "<li><code>{}:{}</code> {}</li>",
                    esc(&b.path.display().to_string()),
                    b.line,
                    esc(&b.message)
                );
            }
            body.push_str("</ul>");
        }
        let _ = write!(
            body,
            "</div><div><h2>Search</h2><form method=\"get\" action=\"/notes\"><input type=\"search\" id=\"q\" name=\"q\" autocomplete=\"off\" placeholder=\"error text, file, keyword…\" value=\"{}\"></form><div id=\"hits\">{}</div></div></div>",
            esc(&text),
            hits_html(&hits, &text)
        );
        Ok(Html(page(
            Section::Notes,
            "Notes",
            &body,
            Some((nonce.0.as_str(), SEARCH_SCRIPT)),
        )))
    })
    .await
}

/// The hits as an HTML fragment, for search as you type.
pub async fn hits(
    State(app): State<Arc<App>>,
    Params(params): Params<SearchParams>,
) -> Result<Html<String>, ViewError> {
    blocking(&app, move |app| {
        let hits = search(app, &params)?;
        Ok(Html(hits_html(&hits, params.text())))
    })
    .await
}

pub async fn search_json(
    State(app): State<Arc<App>>,
    Params(params): Params<SearchParams>,
) -> Result<Json<Value>, ViewError> {
    blocking(&app, move |app| {
        let hits = search(app, &params)?;
        let hits: Vec<Value> = hits
            .iter()
            .map(|h| {
                json!({"id": h.id, "title": h.title, "description": h.description, "path": h.path,
                       "score": h.score, "snippet": h.snippet, "kind": h.kind.as_str(),
                       "scope": h.scope.as_str(), "project": h.project})
            })
            .collect();
        Ok(Json(json!({ "query": params.text(), "hits": hits })))
    })
    .await
}

pub async fn list_json(State(app): State<Arc<App>>) -> Result<Json<Value>, ViewError> {
    blocking(&app, move |app| {
        let report = app.notes.tree.scan()?;
        let notes: Vec<Value> = report
            .notes
            .iter()
            .map(|n| json!({"path": n.path_str(), "meta": n.meta}))
            .collect();
        Ok(Json(
            json!({ "notes": notes, "broken": report.broken.len() }),
        ))
    })
    .await
}

fn get_note(app: &App, id: &str) -> Result<Note, ViewError> {
    app.notes
        .tree
        .get(id)?
        .ok_or_else(|| ViewError::NotFound(format!("no note has the id `{id}`")))
}

pub async fn show_json(
    State(app): State<Arc<App>>,
    Path(id): Path<String>,
) -> Result<Json<Value>, ViewError> {
    blocking(&app, move |app| {
        let note = get_note(app, &id)?;
        let used = app.store().sessions_retrieving_note(&id)?;
        Ok(Json(json!({
            "path": note.path_str(),
            "meta": note.meta,
            "body": note.body,
            "used_by": used,
        })))
    })
    .await
}

fn list_row(label: &str, items: &[String]) -> String {
    let text = if items.is_empty() {
        "—".to_string()
    } else {
        items
            .iter()
            .map(|i| format!("<code>{}</code>", esc(i)))
            .collect::<Vec<_>>()
            .join(" ")
    };
    format!("<tr><th>{label}</th><td>{text}</td></tr>")
}

fn session_link(id: &str) -> String {
    format!(
        "<a href=\"/sessions/{}\"><code>{}</code></a>",
        url(id),
        esc(id)
    )
}

pub async fn show(
    State(app): State<Arc<App>>,
    Path(id): Path<String>,
) -> Result<Html<String>, ViewError> {
    blocking(&app, move |app| {
        let note = get_note(app, &id)?;
        let m = &note.meta;
        let store = app.store();
        let used = store.sessions_retrieving_note(&id)?;
        // Stale against the project's latest workspace, when one is known.
        let stale = match &m.project {
            Some(project) => store
                .session_page(&SessionQuery {
                    project: Some(project.clone()),
                    limit: 1,
                    ..Default::default()
                })?
                .rows
                .first()
                .map(|r| std::path::PathBuf::from(&r.workspace))
                .filter(|ws| ws.is_dir())
                .and_then(|ws| stale_reason(&note, &ws)),
            None => None,
        };
        drop(store);
        let all = app.notes.tree.scan()?.notes;
        let predecessors: Vec<&Note> = all
            .iter()
            .filter(|n| n.meta.superseded_by.as_deref() == Some(m.id.as_str()))
            .collect();
        let mut body = format!(
            "<h1>{}</h1><p class=\"muted\"><code>{}</code> · {}</p>",
            esc(&m.title),
            esc(&note.path_str()),
            status_tag(m.status.as_str())
        );
        if let Some(reason) = &stale {
            let _ = write!(
                body,
                "<p class=\"tag warn\" id=\"stale\">stale: {}</p>",
                esc(reason)
            );
        }
        if let Some(next) = &m.superseded_by {
            let _ = write!(
                body,
                "<p>Superseded by <a href=\"/notes/{}\"><code>{}</code></a></p>",
                url(next),
                esc(next)
            );
        }
        for p in &predecessors {
            let _ = write!(
                body,
                "<p>Supersedes <a href=\"/notes/{}\">{}</a></p>",
                url(p.id()),
                esc(&p.meta.title)
            );
        }
        let _ = write!(
            body,
            "<table id=\"frontmatter\"><tr><th>id</th><td><code>{}</code></td></tr><tr><th>kind</th><td>{}</td></tr><tr><th>scope</th><td>{}{}</td></tr><tr><th>topic</th><td>{}</td></tr><tr><th>description</th><td>{}</td></tr>{}{}<tr><th>helpful / harmful</th><td>{} / {}</td></tr><tr><th>stale</th><td>{}</td></tr><tr><th>created</th><td>{}</td></tr><tr><th>updated</th><td>{}</td></tr></table>",
            esc(&m.id),
            esc(m.kind.as_str()),
            esc(m.scope.as_str()),
            m.project
                .as_deref()
                .map(|p| format!(" · project <code>{}</code>", esc(p)))
                .unwrap_or_default(),
            esc(&m.topic),
            esc(&m.description),
            list_row("keywords", &m.keywords),
            list_row("error signatures", &m.error_signatures),
            m.helpful,
            m.harmful,
            if stale.is_some() { "yes" } else { "no" },
            m.created.format("%Y-%m-%d %H:%M"),
            m.updated.format("%Y-%m-%d %H:%M"),
        );
        let prov = &m.provenance;
        body.push_str("<h2>Provenance</h2><table id=\"provenance\"><tr><th>written by sessions</th><td>");
        if prov.sessions.is_empty() {
            body.push('—');
        }
        body.push_str(
            &prov
                .sessions
                .iter()
                .map(|s| session_link(s))
                .collect::<Vec<_>>()
                .join(" "),
        );
        body.push_str("</td></tr><tr><th>used by sessions</th><td id=\"used-by\">");
        if used.is_empty() {
            body.push('—');
        }
        body.push_str(
            &used
                .iter()
                .map(|s| session_link(s.as_str()))
                .collect::<Vec<_>>()
                .join(" "),
        );
        let _ = write!(
            body,
            "</td></tr><tr><th>commit</th><td>{}</td></tr>{}{}</table>",
            esc(prov.commit.as_deref().unwrap_or("—")),
            list_row("files", &prov.files),
            list_row("symbols", &prov.symbols)
        );
        let _ = write!(
            body,
            "<h2>Body</h2><div class=\"card note-body\">{}</div>",
            markdown(&note.body)
        );
        Ok(Html(page(Section::Notes, &m.title, &body, None)))
    })
    .await
}
