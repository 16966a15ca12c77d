use std::sync::Mutex;

use quire_types::Event;

/// Could not persist or forward an event.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct SinkError(pub String);

/// Receives every event as it happens: the store persists it, the terminal
/// renders it. Called from the loop, never from inside a tool.
pub trait EventSink: Send + Sync {
    fn emit(&self, event: &Event) -> Result<(), SinkError>;
}

/// Drops events (benchmarks, dry runs).
pub struct NullSink;

impl EventSink for NullSink {
    fn emit(&self, _event: &Event) -> Result<(), SinkError> {
        Ok(())
    }
}

/// Keeps events in memory (tests).
#[derive(Default)]
pub struct MemorySink {
    events: Mutex<Vec<Event>>,
}

impl MemorySink {
    pub fn events(&self) -> Vec<Event> {
        self.events.lock().map(|e| e.clone()).unwrap_or_default()
    }
}

impl EventSink for MemorySink {
    fn emit(&self, event: &Event) -> Result<(), SinkError> {
        self.events
            .lock()
            .map_err(|_| SinkError("memory sink poisoned".into()))?
            .push(event.clone());
        Ok(())
    }
}

/// Forwards to several sinks in order; the first failure stops the event.
impl EventSink for Vec<std::sync::Arc<dyn EventSink>> {
    fn emit(&self, event: &Event) -> Result<(), SinkError> {
        for sink in self {
            sink.emit(event)?;
        }
        Ok(())
    }
}
