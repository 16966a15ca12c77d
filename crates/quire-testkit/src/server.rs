//! The HTTP side: routing, recording, auth, invariant checks, and turning a
//! [`Reply`] into bytes on the wire (including the faults).

use std::collections::HashMap;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use axum::Router;
use axum::body::{Body, to_bytes};
use axum::extract::{DefaultBodyLimit, Request, State};
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::response::Response;
use bytes::Bytes;
use futures::FutureExt;
use futures::future::BoxFuture;
use serde_json::Value;

use crate::request::{Protocol, RecordedRequest};
use crate::script::{FAULT_STREAM_TEXT, Fault, Reply, RuleFn, Script, ScriptKind, ScriptedCall};
use crate::usage::{self, Usage};
use crate::{anthropic, invariants, openai};

/// Characters per streamed text delta: small, so clients must concatenate.
pub(crate) const TEXT_PIECE: usize = 8;
/// Characters per streamed argument fragment: odd-sized, so fragments split
/// keys and strings and only the reassembled whole is valid JSON.
pub(crate) const ARG_PIECE: usize = 7;
/// Pause before dropping a cut connection so the partial data is flushed
/// to the client first.
const CUT_GRACE: Duration = Duration::from_millis(50);
/// Pieces a non-stream body is split into for `DripStream`.
const DRIP_BODY_PIECES: usize = 4;

/// Splits `s` into pieces of at most `n` characters (on char boundaries).
pub(crate) fn pieces(s: &str, n: usize) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut count = 0;
    for (i, _) in s.char_indices() {
        if count == n {
            out.push(&s[start..i]);
            start = i;
            count = 0;
        }
        count += 1;
    }
    if start < s.len() {
        out.push(&s[start..]);
    }
    out
}

/// A model turn ready to be rendered in either protocol.
pub(crate) struct Answer {
    pub message_id: String,
    pub model: String,
    pub text: Option<String>,
    pub calls: Vec<IdCall>,
    pub usage: Usage,
}

/// A scripted call with its server-assigned id.
pub(crate) struct IdCall {
    pub id: String,
    pub name: String,
    pub arguments: String,
}

/// Mutable server state behind one lock (never held across an await).
pub(crate) struct ServerState {
    pub api_key: Option<String>,
    pub model: String,
    pub requests: Vec<RecordedRequest>,
    pub violations: Vec<String>,
    script: ScriptKind,
    /// Model requests that reached the script (the index given to rules).
    served: usize,
    /// Prompt text of the previous request per protocol, for cached tokens.
    last_prompt: HashMap<Protocol, String>,
}

impl ServerState {
    /// Script steps not yet served; 0 for rule scripts.
    pub fn remaining(&self) -> usize {
        match &self.script {
            ScriptKind::Sequence(q) => q.len(),
            ScriptKind::Rules(_) => 0,
        }
    }
}

/// State shared between the handle and the server tasks.
pub(crate) struct Shared {
    state: Mutex<ServerState>,
    next_call_id: AtomicU64,
    next_message_id: AtomicU64,
}

impl Shared {
    pub fn new(script: Script) -> Shared {
        Shared {
            state: Mutex::new(ServerState {
                api_key: None,
                model: "scripted-model".to_string(),
                requests: Vec::new(),
                violations: Vec::new(),
                script: script.kind,
                served: 0,
                last_prompt: HashMap::new(),
            }),
            next_call_id: AtomicU64::new(1),
            next_message_id: AtomicU64::new(1),
        }
    }

    /// Locks the state. A panic while holding the lock (e.g. in a test
    /// thread) leaves the data consistent, so poisoning is ignored.
    pub fn lock(&self) -> MutexGuard<'_, ServerState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn violation(&self, label: &str, message: &str) {
        tracing::warn!("quire-testkit violation: {label}: {message}");
        self.lock().violations.push(format!("{label}: {message}"));
    }
}

pub(crate) fn router(shared: Arc<Shared>) -> Router {
    Router::new()
        .fallback(handle)
        .layer(DefaultBodyLimit::disable())
        .with_state(shared)
}

enum Next {
    Reply(Reply),
    Rule(Arc<RuleFn>, usize),
    Exhausted(usize),
}

enum Route {
    Chat,
    Models,
    Unknown,
}

/// Everything needed to answer one model request once the reply is known.
struct Ctx {
    shared: Arc<Shared>,
    protocol: Protocol,
    stream: bool,
    include_usage: bool,
    label: String,
    prompt: String,
    previous: Option<String>,
}

async fn handle(State(shared): State<Arc<Shared>>, req: Request) -> Response {
    let (parts, body) = req.into_parts();
    let path = parts.uri.path().to_string();
    let method = parts.method.clone();
    let headers: Vec<(String, String)> = parts
        .headers
        .iter()
        .map(|(k, v)| {
            let value = String::from_utf8_lossy(v.as_bytes()).into_owned();
            (k.as_str().to_string(), value)
        })
        .collect();
    let bytes = match to_bytes(body, usize::MAX).await {
        Ok(b) => b,
        Err(e) => {
            let msg = format!("could not read request body: {e}");
            return text_response(StatusCode::BAD_REQUEST, "text/plain", msg);
        }
    };
    let (body, parse_error) = if bytes.is_empty() {
        (Value::Null, None)
    } else {
        match serde_json::from_slice::<Value>(&bytes) {
            Ok(v) => (v, None),
            Err(e) => (
                Value::String(String::from_utf8_lossy(&bytes).into_owned()),
                Some(e.to_string()),
            ),
        }
    };

    let has_header = |name: &str| headers.iter().any(|(n, _)| n == name);
    let anthropic_headers = has_header("x-api-key") || has_header("anthropic-version");
    let (route, protocol) = match (&method, path.as_str()) {
        (&Method::POST, "/v1/chat/completions") => (Route::Chat, Protocol::OpenAi),
        (&Method::POST, "/v1/messages") => (Route::Chat, Protocol::Anthropic),
        (&Method::GET, "/v1/models") if anthropic_headers => (Route::Models, Protocol::Anthropic),
        (&Method::GET, "/v1/models") => (Route::Models, Protocol::OpenAi),
        _ if anthropic_headers || path.contains("messages") => {
            (Route::Unknown, Protocol::Anthropic)
        }
        _ => (Route::Unknown, Protocol::OpenAi),
    };
    let record = RecordedRequest {
        protocol,
        path: path.clone(),
        headers,
        stream: body.get("stream").and_then(Value::as_bool) == Some(true),
        body,
    };
    let index = {
        let mut st = shared.lock();
        st.requests.push(record.clone());
        st.requests.len() - 1
    };
    let label = format!("request #{index} ({method} {path})");
    tracing::debug!("quire-testkit: {label}");

    if let Route::Unknown = route {
        let msg = format!("unknown endpoint {method} {path} (check the client's base URL)");
        shared.violation(&label, &msg);
        return error_response(protocol, ErrKind::NotFound, &msg);
    }
    if let Some(resp) = check_auth(&shared, &record) {
        return resp;
    }
    if let Route::Models = route {
        let model = shared.lock().model.clone();
        let body = match protocol {
            Protocol::OpenAi => openai::models_body(&model),
            Protocol::Anthropic => anthropic::models_body(&model),
        };
        return json_response(StatusCode::OK, &body);
    }
    if let Some(e) = parse_error {
        let msg = format!("request body is not valid JSON: {e}");
        shared.violation(&label, &msg);
        return error_response(protocol, ErrKind::Invalid, &msg);
    }
    let problems = match protocol {
        Protocol::OpenAi => invariants::check_openai(&record.body),
        Protocol::Anthropic => invariants::check_anthropic(&record.body),
    };
    if !problems.is_empty() {
        for p in &problems {
            shared.violation(&label, p);
        }
        let msg = format!(
            "quire-testkit rejected the conversation: {}",
            problems.join("; ")
        );
        return error_response(protocol, ErrKind::Invalid, &msg);
    }

    let prompt = usage::prompt_text(&record.body);
    let (next, previous) = {
        let mut st = shared.lock();
        let previous = st.last_prompt.insert(protocol, prompt.clone());
        let script_index = st.served;
        st.served += 1;
        let next = match &mut st.script {
            ScriptKind::Sequence(q) => match q.pop_front() {
                Some(reply) => Next::Reply(reply),
                None => Next::Exhausted(script_index),
            },
            ScriptKind::Rules(rule) => Next::Rule(Arc::clone(rule), script_index),
        };
        (next, previous)
    };
    let reply = match next {
        Next::Reply(reply) => reply,
        // The rule runs outside the lock so it may take its time; a panic
        // (e.g. an assert inside the rule) becomes a violation and a 500.
        Next::Rule(rule, script_index) => {
            match catch_unwind(AssertUnwindSafe(|| rule(&record, script_index))) {
                Ok(reply) => reply,
                Err(panic) => {
                    let msg = format!("script rule panicked: {}", panic_message(&*panic));
                    shared.violation(&label, &msg);
                    return error_response(protocol, ErrKind::Server, &msg);
                }
            }
        }
        Next::Exhausted(served) => {
            let hint = record
                .last_tool_result()
                .map(|t| format!("last tool result: {}", truncate(&t, 200)))
                .or_else(|| {
                    record
                        .last_user_text()
                        .map(|t| format!("last user text: {}", truncate(&t, 200)))
                })
                .unwrap_or_default();
            let msg = format!(
                "script exhausted after {served} replies: unexpected extra model call; {hint}"
            );
            shared.violation(&label, &msg);
            return text_response(
                StatusCode::INTERNAL_SERVER_ERROR,
                "text/plain",
                "script exhausted",
            );
        }
    };

    let ctx = Ctx {
        shared,
        protocol,
        stream: record.stream,
        include_usage: record
            .body
            .pointer("/stream_options/include_usage")
            .and_then(Value::as_bool)
            == Some(true),
        label,
        prompt,
        previous,
    };
    serve(ctx, reply).await
}

fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        s.to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "<non-string panic payload>".to_string()
    }
}

fn truncate(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_string(),
    }
}

/// 401 when an API key is required and the request does not carry it.
fn check_auth(shared: &Shared, record: &RecordedRequest) -> Option<Response> {
    let key = shared.lock().api_key.clone()?;
    let ok = match record.protocol {
        Protocol::OpenAi => {
            record
                .header("authorization")
                .and_then(|v| v.strip_prefix("Bearer "))
                == Some(key.as_str())
        }
        Protocol::Anthropic => record.header("x-api-key") == Some(key.as_str()),
    };
    if ok {
        return None;
    }
    let msg = match record.protocol {
        Protocol::OpenAi => "Incorrect API key provided.",
        Protocol::Anthropic => "invalid x-api-key",
    };
    Some(error_response(record.protocol, ErrKind::Auth, msg))
}

/// Serves a scripted reply; recursive only through `Fault::Delay`.
fn serve(ctx: Ctx, reply: Reply) -> BoxFuture<'static, Response> {
    async move {
        let protocol = ctx.protocol;
        match reply {
            Reply::Text(text) => answer(&ctx, Some(text), Vec::new()),
            Reply::ToolCalls(calls) => answer(&ctx, None, calls),
            Reply::TextAndToolCalls(text, calls) => answer(&ctx, Some(text), calls),
            Reply::Fault(Fault::Delay(d, inner)) => {
                tokio::time::sleep(d).await;
                serve(ctx, *inner).await
            }
            Reply::Fault(Fault::RateLimited { retry_after_secs }) => {
                let msg = format!(
                    "Rate limit reached (scripted). Please try again in {retry_after_secs}s."
                );
                let mut resp = error_response(protocol, ErrKind::RateLimit, &msg);
                resp.headers_mut()
                    .insert(header::RETRY_AFTER, HeaderValue::from(retry_after_secs));
                resp
            }
            Reply::Fault(Fault::ServerError) => {
                let msg = "The server had an error while processing your request (scripted).";
                error_response(protocol, ErrKind::Server, msg)
            }
            Reply::Fault(Fault::Status(code, body)) => {
                let status = match StatusCode::from_u16(code) {
                    Ok(s) => s,
                    Err(_) => {
                        let msg = format!("script asked for invalid HTTP status {code}");
                        ctx.shared.violation(&ctx.label, &msg);
                        return error_response(protocol, ErrKind::Server, &msg);
                    }
                };
                let ct = if serde_json::from_str::<Value>(&body).is_ok() {
                    "application/json"
                } else {
                    "text/plain"
                };
                text_response(status, ct, body)
            }
            Reply::Fault(Fault::MalformedJson) => {
                let body = match (protocol, ctx.stream) {
                    (Protocol::OpenAi, false) => openai::MALFORMED_BODY,
                    (Protocol::OpenAi, true) => openai::MALFORMED_STREAM,
                    (Protocol::Anthropic, false) => anthropic::MALFORMED_BODY,
                    (Protocol::Anthropic, true) => anthropic::MALFORMED_STREAM,
                };
                let ct = if ctx.stream {
                    "text/event-stream"
                } else {
                    "application/json"
                };
                text_response(StatusCode::OK, ct, body)
            }
            Reply::Fault(Fault::CutStream) => {
                let a = build_answer(&ctx, Some(FAULT_STREAM_TEXT.to_string()), Vec::new());
                if ctx.stream {
                    let mut events = stream_events(&ctx, &a);
                    events.truncate(events.len() / 2);
                    chunked_response("text/event-stream", events, None, true, None)
                } else {
                    let full = Bytes::from(render_body(protocol, &a).to_string());
                    let half = full.slice(..full.len() / 2);
                    chunked_response("application/json", vec![half], None, true, Some(full.len()))
                }
            }
            Reply::Fault(Fault::SlowFirstToken(lead, inner)) if ctx.stream => {
                let (text, calls) = match *inner {
                    Reply::Text(text) => (Some(text), Vec::new()),
                    Reply::ToolCalls(calls) => (None, calls),
                    Reply::TextAndToolCalls(text, calls) => (Some(text), calls),
                    Reply::Fault(_) => {
                        let msg = "SlowFirstToken wraps a text or tool-call reply, not a fault";
                        ctx.shared.violation(&ctx.label, msg);
                        return error_response(protocol, ErrKind::Server, msg);
                    }
                };
                let a = build_answer(&ctx, text, calls);
                let pace = Pace {
                    lead: Some(lead),
                    ..Pace::default()
                };
                paced_response("text/event-stream", stream_events(&ctx, &a), pace, None)
            }
            Reply::Fault(Fault::SlowFirstToken(lead, inner)) => {
                tokio::time::sleep(lead).await;
                serve(ctx, *inner).await
            }
            Reply::Fault(Fault::StallStream) => {
                let a = build_answer(&ctx, Some(FAULT_STREAM_TEXT.to_string()), Vec::new());
                let stall = Pace {
                    stall: true,
                    ..Pace::default()
                };
                if ctx.stream {
                    let mut events = stream_events(&ctx, &a);
                    events.truncate(events.len() / 2);
                    paced_response("text/event-stream", events, stall, None)
                } else {
                    let full = Bytes::from(render_body(protocol, &a).to_string());
                    let half = full.slice(..full.len() / 2);
                    paced_response("application/json", vec![half], stall, Some(full.len()))
                }
            }
            Reply::Fault(Fault::DripStream(interval)) => {
                let a = build_answer(&ctx, Some(FAULT_STREAM_TEXT.to_string()), Vec::new());
                if ctx.stream {
                    let events = stream_events(&ctx, &a);
                    chunked_response("text/event-stream", events, Some(interval), false, None)
                } else {
                    let full = Bytes::from(render_body(protocol, &a).to_string());
                    let step = full.len().div_ceil(DRIP_BODY_PIECES).max(1);
                    let parts = (0..full.len())
                        .step_by(step)
                        .map(|i| full.slice(i..(i + step).min(full.len())))
                        .collect();
                    let len = Some(full.len());
                    chunked_response("application/json", parts, Some(interval), false, len)
                }
            }
        }
    }
    .boxed()
}

fn answer(ctx: &Ctx, text: Option<String>, calls: Vec<ScriptedCall>) -> Response {
    let a = build_answer(ctx, text, calls);
    if ctx.stream {
        chunked_response(
            "text/event-stream",
            stream_events(ctx, &a),
            None,
            false,
            None,
        )
    } else {
        json_response(StatusCode::OK, &render_body(ctx.protocol, &a))
    }
}

fn build_answer(ctx: &Ctx, text: Option<String>, calls: Vec<ScriptedCall>) -> Answer {
    let shared = &ctx.shared;
    let msg_n = shared.next_message_id.fetch_add(1, Ordering::Relaxed);
    let (message_id, call_prefix) = match ctx.protocol {
        Protocol::OpenAi => (format!("chatcmpl-{msg_n}"), "call_"),
        Protocol::Anthropic => (format!("msg_{msg_n}"), "toolu_"),
    };
    let calls: Vec<IdCall> = calls
        .into_iter()
        .map(|c| IdCall {
            id: format!(
                "{call_prefix}{}",
                shared.next_call_id.fetch_add(1, Ordering::Relaxed)
            ),
            name: c.name,
            arguments: c.arguments,
        })
        .collect();
    let completion_chars = text.as_deref().map_or(0, |t| t.chars().count())
        + calls
            .iter()
            .map(|c| c.name.chars().count() + c.arguments.chars().count())
            .sum::<usize>();
    Answer {
        message_id,
        model: shared.lock().model.clone(),
        text,
        calls,
        usage: usage::compute(&ctx.prompt, ctx.previous.as_deref(), completion_chars),
    }
}

fn render_body(protocol: Protocol, a: &Answer) -> Value {
    match protocol {
        Protocol::OpenAi => openai::response_body(a),
        Protocol::Anthropic => anthropic::response_body(a),
    }
}

fn stream_events(ctx: &Ctx, a: &Answer) -> Vec<Bytes> {
    match ctx.protocol {
        Protocol::OpenAi => openai::stream_events(a, ctx.include_usage),
        Protocol::Anthropic => anthropic::stream_events(a),
    }
}

#[derive(Clone, Copy)]
enum ErrKind {
    Auth,
    RateLimit,
    Server,
    Invalid,
    NotFound,
}

/// An error with the status and body shape the real provider uses.
fn error_response(protocol: Protocol, kind: ErrKind, message: &str) -> Response {
    let (status, oa_type, oa_code, an_type) = match kind {
        ErrKind::Auth => (
            StatusCode::UNAUTHORIZED,
            "invalid_request_error",
            Some("invalid_api_key"),
            "authentication_error",
        ),
        ErrKind::RateLimit => (
            StatusCode::TOO_MANY_REQUESTS,
            "requests",
            Some("rate_limit_exceeded"),
            "rate_limit_error",
        ),
        ErrKind::Server => (
            StatusCode::INTERNAL_SERVER_ERROR,
            "server_error",
            None,
            "api_error",
        ),
        ErrKind::Invalid => (
            StatusCode::BAD_REQUEST,
            "invalid_request_error",
            None,
            "invalid_request_error",
        ),
        ErrKind::NotFound => (
            StatusCode::NOT_FOUND,
            "invalid_request_error",
            Some("unknown_url"),
            "not_found_error",
        ),
    };
    let body = match protocol {
        Protocol::OpenAi => openai::error_body(message, oa_type, oa_code),
        Protocol::Anthropic => anthropic::error_body(an_type, message),
    };
    json_response(status, &body)
}

fn json_response(status: StatusCode, body: &Value) -> Response {
    text_response(status, "application/json", body.to_string())
}

fn text_response(
    status: StatusCode,
    content_type: &'static str,
    body: impl Into<Body>,
) -> Response {
    let mut resp = Response::new(body.into());
    *resp.status_mut() = status;
    resp.headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    resp
}

/// A 200 response whose body is sent as separate chunks, optionally one per
/// `interval`, and optionally cut (connection dropped) after the last chunk.
/// `content_length` announces a length, which makes a cut visible to
/// non-stream clients as a short body.
fn chunked_response(
    content_type: &'static str,
    chunks: Vec<Bytes>,
    interval: Option<Duration>,
    cut: bool,
    content_length: Option<usize>,
) -> Response {
    paced_response(
        content_type,
        chunks,
        Pace {
            interval,
            cut,
            ..Pace::default()
        },
        content_length,
    )
}

/// How a chunked body is played: a wait before the first chunk, one
/// between chunks, and how it ends (cut, stalled open, or cleanly).
#[derive(Default)]
struct Pace {
    lead: Option<Duration>,
    interval: Option<Duration>,
    cut: bool,
    stall: bool,
}

fn paced_response(
    content_type: &'static str,
    chunks: Vec<Bytes>,
    pace: Pace,
    content_length: Option<usize>,
) -> Response {
    struct Feed {
        chunks: std::vec::IntoIter<Bytes>,
        pace: Pace,
        first: bool,
    }
    let feed = Feed {
        chunks: chunks.into_iter(),
        pace,
        first: true,
    };
    let stream = futures::stream::unfold(feed, |mut f| async move {
        match f.chunks.next() {
            Some(chunk) => {
                let wait = if f.first {
                    f.pace.lead
                } else {
                    f.pace.interval
                };
                if let Some(d) = wait {
                    tokio::time::sleep(d).await;
                }
                f.first = false;
                Some((Ok(chunk), f))
            }
            None if f.pace.stall => {
                // Silent with the connection open, until the client leaves.
                futures::future::pending::<()>().await;
                None
            }
            None if f.pace.cut => {
                tokio::time::sleep(CUT_GRACE).await;
                f.pace.cut = false;
                let err = std::io::Error::new(
                    std::io::ErrorKind::ConnectionAborted,
                    "quire-testkit: connection cut by script",
                );
                Some((Err(err), f))
            }
            None => None,
        }
    });
    let mut resp = text_response(StatusCode::OK, content_type, Body::from_stream(stream));
    if content_type == "text/event-stream" {
        resp.headers_mut()
            .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    }
    if let Some(len) = content_length {
        resp.headers_mut()
            .insert(header::CONTENT_LENGTH, HeaderValue::from(len));
    }
    resp
}

#[cfg(test)]
mod tests {
    use super::pieces;

    #[test]
    fn pieces_split_on_char_boundaries() {
        assert_eq!(pieces("abcdefg", 3), vec!["abc", "def", "g"]);
        assert_eq!(pieces("héllo", 2), vec!["hé", "ll", "o"]);
        assert!(pieces("", 3).is_empty());
        assert_eq!(pieces("abc", 3), vec!["abc"]);
    }
}
