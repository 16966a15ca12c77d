//! `quire view`: a local, read-only web viewer over the data home: the
//! sessions and their traces, the notes tree, eval runs and the generations
//! of meta-improved agents.
//!
//! It reads through the crates that own the data (`quire-store`,
//! `quire-notes`, `quire-evals`, `quire-meta`); none of them learns about
//! HTTP. The server binds loopback only, checks the `Host` header (no DNS
//! rebinding), requires the random token printed at start (then kept in a
//! cookie), answers GET and HEAD only, and escapes every text it shows:
//! most of it was written by a model. Pages carry a CSP that lets only the
//! page's own nonce'd script run, so even a slip in escaping stays inert.

mod error;
mod evals;
mod generations;
pub mod html;
mod notes;
mod safety;
mod sessions;
mod state;

use std::net::{Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::sync::Arc;

use axum::Router;
use axum::routing::get;
use quire_notes::NotesPaths;
use quire_types::Redactor;
use tokio::net::TcpListener;

pub use error::ViewError;
pub use safety::{TOKEN_PARAM, cookie_name};

/// What the viewer reads.
#[derive(Debug, Clone)]
pub struct ViewConfig {
    /// The data home (`quire.db`, `evals/`, `agents/`).
    pub home: PathBuf,
    /// The notes tree and its index.
    pub notes: NotesPaths,
    /// Folders holding agent folders whose `generations/` are shown
    /// (`./agents` and `<home>/agents`).
    pub agent_dirs: Vec<PathBuf>,
    /// Applied to notes written through the tree (the viewer writes none).
    pub redactor: Redactor,
}

/// A bound, not yet serving viewer: its address and URL are known, so the
/// caller can print them before serving.
pub struct Viewer {
    listener: TcpListener,
    app: Router,
    addr: SocketAddr,
    token: String,
}

impl Viewer {
    /// Opens the data home and binds 127.0.0.1:`port` (0 picks a free port).
    pub async fn bind(config: ViewConfig, port: u16) -> Result<Viewer, ViewError> {
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, port))
            .await
            .map_err(|source| ViewError::Bind { port, source })?;
        let addr = listener
            .local_addr()
            .map_err(|source| ViewError::Bind { port, source })?;
        let token = safety::new_token();
        let state = Arc::new(state::App::open(config, addr.port(), token.clone())?);
        Ok(Viewer {
            listener,
            app: router(state),
            addr,
            token,
        })
    }

    /// The bound address (always loopback).
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The access token every request must carry (URL or cookie).
    pub fn token(&self) -> &str {
        &self.token
    }

    /// The URL to open: the start page with the token.
    pub fn url(&self) -> String {
        format!(
            "http://127.0.0.1:{}/?{TOKEN_PARAM}={}",
            self.addr.port(),
            self.token
        )
    }

    /// Serves until `shutdown` resolves.
    pub async fn serve(
        self,
        shutdown: impl std::future::Future<Output = ()> + Send + 'static,
    ) -> Result<(), ViewError> {
        axum::serve(self.listener, self.app)
            .with_graceful_shutdown(shutdown)
            .await
            .map_err(ViewError::Serve)
    }
}

fn router(state: Arc<state::App>) -> Router {
    Router::new()
        .route("/", get(sessions::home))
        .route("/sessions", get(sessions::list))
        .route("/sessions/{id}", get(sessions::show))
        .route("/api/sessions", get(sessions::list_json))
        .route("/api/sessions/{id}", get(sessions::show_json))
        .route("/api/sessions/{id}/status", get(sessions::status_json))
        .route("/notes", get(notes::tree))
        .route("/notes/hits", get(notes::hits))
        .route("/notes/{id}", get(notes::show))
        .route("/api/notes", get(notes::list_json))
        .route("/api/notes/search", get(notes::search_json))
        .route("/api/notes/{id}", get(notes::show_json))
        .route("/evals", get(evals::list))
        .route("/evals/compare", get(evals::compare))
        .route("/evals/curve", get(evals::curve))
        .route("/evals/curve.svg", get(evals::curve_svg))
        .route("/evals/{id}", get(evals::show))
        .route("/api/evals", get(evals::list_json))
        .route("/api/evals/{id}", get(evals::show_json))
        .route("/api/evals/{id}/status", get(evals::status_json))
        .route("/generations", get(generations::list))
        .route("/generations/{agent}", get(generations::show))
        .route(
            "/generations/{agent}/graph.svg",
            get(generations::graph_svg),
        )
        .route(
            "/generations/{agent}/chart.svg",
            get(generations::chart_svg),
        )
        .route("/generations/{agent}/diff", get(generations::diff))
        .route("/api/generations/{agent}", get(generations::show_json))
        .fallback(error::not_found_page)
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            safety::guard,
        ))
        .with_state(state)
}
