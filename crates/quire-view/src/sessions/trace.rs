//! A session's trace: the page body (summary, then one card per event),
//! and the script that keeps a running session's page live.

use std::collections::HashMap;
use std::fmt::Write as _;

use quire_store::{SessionRow, StoredEvent};
use quire_types::{EventKind, SessionId};
use serde_json::Value;

use crate::html::{esc, file_sections, num, status_tag, url};

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
