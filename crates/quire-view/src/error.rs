//! What can go wrong, and the page each failure gets: a clear message and
//! the right status, never a panic or a blank page.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};

use crate::html::{Section, esc, page};

#[derive(Debug, thiserror::Error)]
pub enum ViewError {
    #[error("cannot listen on 127.0.0.1:{port}: {source}")]
    Bind {
        port: u16,
        #[source]
        source: std::io::Error,
    },
    #[error("the viewer stopped: {0}")]
    Serve(#[source] std::io::Error),
    #[error("cannot open the data home: {0}")]
    Store(#[from] quire_store::StoreError),
    #[error("cannot read the notes: {0}")]
    Notes(#[from] quire_notes::Error),
    #[error("cannot read the eval runs: {0}")]
    Eval(#[from] quire_evals::EvalError),
    #[error("cannot read the generations: {0}")]
    Meta(#[from] quire_meta::MetaError),
    /// Nothing at this address, or no such id: the text says which.
    #[error("{0}")]
    NotFound(String),
    /// A malformed query: the text says what was wrong.
    #[error("{0}")]
    BadRequest(String),
    #[error("internal error: {0}")]
    Internal(String),
}

impl ViewError {
    fn status(&self) -> StatusCode {
        match self {
            ViewError::NotFound(_) => StatusCode::NOT_FOUND,
            ViewError::BadRequest(_) => StatusCode::BAD_REQUEST,
            _ => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }
}

impl IntoResponse for ViewError {
    fn into_response(self) -> Response {
        let status = self.status();
        if status.is_server_error() {
            tracing::warn!("quire view: {self}");
        }
        let title = match status {
            StatusCode::NOT_FOUND => "Not found",
            StatusCode::BAD_REQUEST => "Bad request",
            _ => "Error",
        };
        let body = format!(
            "<h1>{title}</h1><p class=\"error\">{}</p><p><a href=\"/\">Back to the start page</a></p>",
            esc(&self.to_string())
        );
        (
            status,
            axum::response::Html(page(Section::Home, title, &body, None)),
        )
            .into_response()
    }
}

/// The page for an address no route knows.
pub async fn not_found_page(uri: axum::http::Uri) -> ViewError {
    ViewError::NotFound(format!("there is no page at {}", uri.path()))
}

/// A query string parsed into `T`; one that does not parse gets the bad
/// request page saying what was wrong, like every other error.
pub struct Params<T>(pub T);

impl<T, S> axum::extract::FromRequestParts<S> for Params<T>
where
    T: serde::de::DeserializeOwned,
    S: Send + Sync,
{
    type Rejection = ViewError;

    async fn from_request_parts(
        parts: &mut axum::http::request::Parts,
        _state: &S,
    ) -> Result<Self, Self::Rejection> {
        // The message names the field, never echoes the query: it holds the token.
        axum::extract::Query::<T>::try_from_uri(&parts.uri)
            .map(|q| Params(q.0))
            .map_err(|e| {
                let reason = e.body_text();
                let reason = reason
                    .strip_prefix("Failed to deserialize query string: ")
                    .unwrap_or(&reason);
                ViewError::BadRequest(format!("the query is not understood: {reason}"))
            })
    }
}
