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
        (status, axum::response::Html(page(Section::Home, title, &body, None))).into_response()
    }
}

/// The page for an address no route knows.
pub async fn not_found_page(uri: axum::http::Uri) -> ViewError {
    ViewError::NotFound(format!("there is no page at {}", uri.path()))
}
