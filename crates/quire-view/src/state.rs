//! What every handler shares: the open store (one connection, used from
//! blocking threads one request at a time), the open notes, and where the
//! agents with generations live.

use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard};

use quire_notes::Notes;
use quire_store::Store;

use crate::{ViewConfig, ViewError};

pub struct App {
    pub port: u16,
    pub token: String,
    pub home: PathBuf,
    pub agent_dirs: Vec<PathBuf>,
    store: Mutex<Store>,
    pub notes: Notes,
}

impl App {
    pub fn open(config: ViewConfig, port: u16, token: String) -> Result<App, ViewError> {
        let store = Store::open(&config.home.join("quire.db"))?;
        let (notes, sync) = Notes::open(&config.notes, config.redactor)?;
        for broken in &sync.broken {
            tracing::warn!(path = %broken.path.display(), line = broken.line, "broken note left out: {}", broken.message);
        }
        Ok(App {
            port,
            token,
            home: config.home,
            agent_dirs: config.agent_dirs,
            store: Mutex::new(store),
            notes,
        })
    }

    /// The store, for one request's reads.
    pub fn store(&self) -> MutexGuard<'_, Store> {
        // A panic while reading leaves the connection as it was.
        self.store.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Runs `work` on a blocking thread (SQLite and file reads), so the
/// server's threads keep answering.
pub async fn blocking<T, F>(app: &Arc<App>, work: F) -> Result<T, ViewError>
where
    T: Send + 'static,
    F: FnOnce(&App) -> Result<T, ViewError> + Send + 'static,
{
    let app = app.clone();
    tokio::task::spawn_blocking(move || work(&app))
        .await
        .map_err(|e| ViewError::Internal(format!("a page failed to render: {e}")))?
}
