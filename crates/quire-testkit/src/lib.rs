//! A scripted model server for tests.
//!
//! [`ScriptedServer`] is a real HTTP server on `127.0.0.1` (random port) that
//! speaks OpenAI Chat Completions (`POST /v1/chat/completions`,
//! `GET /v1/models`) and Anthropic Messages (`POST /v1/messages`), streaming
//! and not. The real model clients talk to it over HTTP, so their encoding,
//! SSE parsing, retries and timeouts are exercised for real. It answers from
//! a [`Script`], records every request, and rejects (400) conversations that
//! the real providers would reject, recording them as violations so a test
//! can end with [`ScriptedServer::assert_clean`].
//!
//! ```no_run
//! # async fn demo() {
//! use quire_testkit::{Reply, Script, ScriptedServer, call};
//! let server = ScriptedServer::start(Script::sequence(vec![
//!     Reply::ToolCalls(vec![call("read_file", serde_json::json!({"path": "a.txt"}))]),
//!     Reply::Text("done".into()),
//! ]))
//! .await
//! .with_api_key("sk-test");
//! // point the client at server.openai_base_url() or server.anthropic_base_url() ...
//! server.assert_clean();
//! # }
//! ```

mod anthropic;
pub mod fuzz;
mod invariants;
mod openai;
mod request;
pub mod rng;
mod script;
mod server;
mod usage;

use std::net::SocketAddr;
use std::sync::Arc;

pub use request::{Protocol, RecordedRequest};
pub use script::{FAULT_STREAM_TEXT, Fault, Reply, Script, ScriptedCall, call};

use server::Shared;

/// Handle to a running scripted server. Dropping it stops accepting new
/// connections (in-flight responses may still finish).
pub struct ScriptedServer {
    addr: SocketAddr,
    shared: Arc<Shared>,
    _stop: Stop,
}

/// How the server task is stopped when the handle is dropped.
enum Stop {
    Task(tokio::task::JoinHandle<()>),
    Thread(Option<tokio::sync::oneshot::Sender<()>>),
}

impl Drop for Stop {
    fn drop(&mut self) {
        match self {
            Stop::Task(handle) => handle.abort(),
            Stop::Thread(tx) => {
                if let Some(tx) = tx.take() {
                    // The thread may already be gone; nothing to do then.
                    let _ = tx.send(());
                }
            }
        }
    }
}

impl ScriptedServer {
    /// Binds `127.0.0.1:0` and serves on the current tokio runtime. Use from
    /// async tests that call the client in-process.
    ///
    /// # Panics
    /// If no local port can be bound (a broken test environment).
    pub async fn start(script: Script) -> ScriptedServer {
        let shared = Arc::new(Shared::new(script));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .unwrap_or_else(|e| panic!("quire-testkit: cannot bind 127.0.0.1:0: {e}"));
        let addr = listener
            .local_addr()
            .unwrap_or_else(|e| panic!("quire-testkit: bound socket has no address: {e}"));
        let app = server::router(Arc::clone(&shared));
        let task = tokio::spawn(async move {
            if let Err(e) = axum::serve(listener, app).await {
                tracing::error!("quire-testkit server stopped: {e}");
            }
        });
        ScriptedServer {
            addr,
            shared,
            _stop: Stop::Task(task),
        }
    }

    /// Like [`start`](Self::start) but runs its own runtime on a background
    /// thread, for non-async tests that drive a subprocess (the `quire`
    /// binary). Safe to call from inside a runtime too.
    ///
    /// # Panics
    /// If no local port can be bound or the runtime cannot be built.
    pub fn start_blocking(script: Script) -> ScriptedServer {
        let shared = Arc::new(Shared::new(script));
        // Bind synchronously so the address is known before returning.
        let std_listener = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap_or_else(|e| panic!("quire-testkit: cannot bind 127.0.0.1:0: {e}"));
        let addr = std_listener
            .local_addr()
            .unwrap_or_else(|e| panic!("quire-testkit: bound socket has no address: {e}"));
        std_listener
            .set_nonblocking(true)
            .unwrap_or_else(|e| panic!("quire-testkit: cannot make socket non-blocking: {e}"));
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap_or_else(|e| panic!("quire-testkit: cannot build a tokio runtime: {e}"));
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let app = server::router(Arc::clone(&shared));
        std::thread::Builder::new()
            .name(format!("quire-testkit-{}", addr.port()))
            .spawn(move || {
                runtime.block_on(async move {
                    let listener = match tokio::net::TcpListener::from_std(std_listener) {
                        Ok(l) => l,
                        Err(e) => {
                            tracing::error!("quire-testkit: cannot register listener: {e}");
                            return;
                        }
                    };
                    let serve = axum::serve(listener, app).into_future();
                    tokio::select! {
                        result = serve => {
                            if let Err(e) = result {
                                tracing::error!("quire-testkit server stopped: {e}");
                            }
                        }
                        _ = rx => {}
                    }
                });
            })
            .unwrap_or_else(|e| panic!("quire-testkit: cannot spawn server thread: {e}"));
        ScriptedServer {
            addr,
            shared,
            _stop: Stop::Thread(Some(tx)),
        }
    }

    /// Requires this API key (`Authorization: Bearer <key>` for OpenAI,
    /// `x-api-key` for Anthropic); other requests get a provider-shaped 401.
    pub fn with_api_key(self, key: &str) -> Self {
        self.shared.lock().api_key = Some(key.to_string());
        self
    }

    /// Model name reported in responses and `GET /v1/models`
    /// (default `"scripted-model"`).
    pub fn with_model(self, name: &str) -> Self {
        self.shared.lock().model = name.to_string();
        self
    }

    /// The bound address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Base URL for OpenAI-compatible clients: `http://127.0.0.1:PORT/v1`.
    pub fn openai_base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// Base URL for Anthropic clients, which append `/v1/messages`:
    /// `http://127.0.0.1:PORT`.
    pub fn anthropic_base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Every request received so far, in arrival order, including rejected
    /// ones (401, 400, unknown paths) and `GET /v1/models`.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.shared.lock().requests.clone()
    }

    /// Problems seen so far: broken conversation invariants, malformed
    /// bodies, unknown endpoints, script exhaustion, panicking rules.
    pub fn violations(&self) -> Vec<String> {
        self.shared.lock().violations.clone()
    }

    /// Panics listing every violation; call it at the end of a test.
    pub fn assert_clean(&self) {
        let violations = self.violations();
        if !violations.is_empty() {
            panic!(
                "quire-testkit saw {} violation(s):\n  - {}",
                violations.len(),
                violations.join("\n  - ")
            );
        }
    }

    /// Sequence steps not yet served (0 for [`Script::from_fn`] scripts).
    pub fn remaining(&self) -> usize {
        self.shared.lock().remaining()
    }
}

// Tests wrap `assert_clean` in `catch_unwind`. All mutable state sits behind
// a mutex that recovers from poisoning, and the stop handle is only used on
// drop, so observing the server after a caught panic is sound.
impl std::panic::UnwindSafe for ScriptedServer {}
impl std::panic::RefUnwindSafe for ScriptedServer {}

impl std::fmt::Debug for ScriptedServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ScriptedServer")
            .field("addr", &self.addr)
            .finish_non_exhaustive()
    }
}
