//! The guard in front of every page: only loopback Host names (a page on
//! another site that rebinds its DNS name to 127.0.0.1 is refused), only
//! with the start token (in the URL once, then in a same-site cookie),
//! only GET and HEAD; and on every answer a CSP that lets only the page's
//! own nonce'd script run and nothing load from elsewhere.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{Html, IntoResponse, Response};
use rand::Rng;

use crate::html::{Section, esc, page};
use crate::state::App;

/// The query parameter that carries the token.
pub const TOKEN_PARAM: &str = "token";

/// The per-response nonce the page's inline script must carry.
#[derive(Debug, Clone)]
pub struct Nonce(pub String);

/// The cookie that keeps the token after the first visit; named after the
/// port so two viewers on one machine do not clash.
pub fn cookie_name(port: u16) -> String {
    format!("quire_view_{port}")
}

/// 128 random bits, hex.
pub fn new_token() -> String {
    hex(&rand::rng().random::<[u8; 16]>())
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Compares without an early exit, so timing does not reveal a prefix.
fn same(a: &str, b: &str) -> bool {
    a.len() == b.len()
        && a.bytes()
            .zip(b.bytes())
            .fold(0u8, |acc, (x, y)| acc | (x ^ y))
            == 0
}

/// True for the Host values a browser sends for this viewer.
pub fn host_allowed(host: Option<&str>, port: u16) -> bool {
    let Some(host) = host else {
        return false;
    };
    [format!("127.0.0.1:{port}"), format!("localhost:{port}")]
        .iter()
        .any(|ok| host.eq_ignore_ascii_case(ok))
}

fn query_token(query: Option<&str>) -> Option<&str> {
    query?
        .split('&')
        .find_map(|pair| pair.strip_prefix(TOKEN_PARAM)?.strip_prefix('='))
}

fn cookie_token<'a>(req: &'a Request, name: &str) -> Option<&'a str> {
    req.headers()
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .find_map(|pair| pair.trim().strip_prefix(name)?.strip_prefix('='))
}

fn refuse(status: StatusCode, message: &str) -> Response {
    let body = format!("<h1>Refused</h1><p class=\"error\">{}</p>", esc(message));
    let mut response = (status, Html(page(Section::Home, "Refused", &body, None))).into_response();
    harden(&mut response, "none");
    response
}

fn harden(response: &mut Response, nonce: &str) {
    let csp = format!(
        "default-src 'none'; script-src 'nonce-{nonce}'; style-src 'unsafe-inline'; \
         img-src 'self'; connect-src 'self'; form-action 'self'; base-uri 'none'; \
         frame-ancestors 'none'"
    );
    let headers = response.headers_mut();
    if let Ok(value) = HeaderValue::from_str(&csp) {
        headers.insert(header::CONTENT_SECURITY_POLICY, value);
    }
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    headers.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
}

/// The middleware: refuses what is not for this viewer, then serves and
/// hardens the answer.
pub async fn guard(State(app): State<Arc<App>>, mut req: Request, next: Next) -> Response {
    let host = req
        .headers()
        .get(header::HOST)
        .and_then(|h| h.to_str().ok());
    if !host_allowed(host, app.port) {
        tracing::warn!(
            host = host.unwrap_or("-"),
            "quire view: refused a request for another host"
        );
        return refuse(
            StatusCode::FORBIDDEN,
            &format!(
                "this viewer answers only to 127.0.0.1:{port} and localhost:{port}, not to `{}`",
                host.unwrap_or("(no Host header)"),
                port = app.port
            ),
        );
    }
    if req.method() != Method::GET && req.method() != Method::HEAD {
        return refuse(
            StatusCode::METHOD_NOT_ALLOWED,
            "the viewer is read-only: only GET and HEAD requests are answered",
        );
    }
    let cookie = cookie_name(app.port);
    let by_query = query_token(req.uri().query()).is_some_and(|t| same(t, &app.token));
    let by_cookie = cookie_token(&req, &cookie).is_some_and(|t| same(t, &app.token));
    if !by_query && !by_cookie {
        return refuse(
            StatusCode::FORBIDDEN,
            "this viewer needs its access token: open the URL `quire view` printed at start (it ends in ?token=…)",
        );
    }
    let nonce = new_token();
    req.extensions_mut().insert(Nonce(nonce.clone()));
    let mut response = next.run(req).await;
    harden(&mut response, &nonce);
    if by_query && !by_cookie {
        let set = format!("{cookie}={}; Path=/; HttpOnly; SameSite=Strict", app.token);
        if let Ok(value) = HeaderValue::from_str(&set) {
            response.headers_mut().append(header::SET_COOKIE, value);
        }
    }
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_loopback_names_with_our_port_pass() {
        assert!(host_allowed(Some("127.0.0.1:8080"), 8080));
        assert!(host_allowed(Some("LOCALHOST:8080"), 8080));
        assert!(!host_allowed(Some("127.0.0.1:8081"), 8080));
        assert!(!host_allowed(Some("evil.example:8080"), 8080));
        assert!(!host_allowed(Some("127.0.0.1.evil.example:8080"), 8080));
        assert!(!host_allowed(None, 8080));
    }

    #[test]
    fn tokens_are_random_and_compared_whole() {
        let a = new_token();
        assert_eq!(a.len(), 32);
        assert_ne!(a, new_token());
        assert!(same(&a, &a.clone()));
        assert!(!same(&a, &a[..31]));
        assert_eq!(query_token(Some("x=1&token=abc&y=2")), Some("abc"));
        assert_eq!(query_token(Some("tokenx=abc")), None);
    }
}
