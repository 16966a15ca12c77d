use std::sync::{Arc, Mutex};

use quire_core::{EventSink, SinkError};
use quire_store::Store;
use quire_types::{Event, SessionId};

/// Persists each event in its own committed transaction as it happens, so a
/// killed process leaves a readable, resumable session.
pub struct StoreSink {
    store: Arc<Mutex<Store>>,
    session: SessionId,
}

impl StoreSink {
    pub fn new(store: Arc<Mutex<Store>>, session: SessionId) -> StoreSink {
        StoreSink { store, session }
    }
}

impl EventSink for StoreSink {
    fn emit(&self, event: &Event) -> Result<(), SinkError> {
        let store = self
            .store
            .lock()
            .map_err(|_| SinkError("store lock poisoned".into()))?;
        store
            .append_event(&self.session, event)
            .map_err(|err| SinkError(err.to_string()))?;
        Ok(())
    }
}
