use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use tokio::sync::Notify;

/// A cooperative stop signal (Ctrl-C, an eval timeout). Cloning shares it.
#[derive(Clone, Default)]
pub struct Interrupt {
    inner: Arc<(AtomicBool, Notify)>,
}

impl Interrupt {
    pub fn new() -> Self {
        Interrupt::default()
    }

    pub fn trigger(&self) {
        self.inner.0.store(true, Ordering::SeqCst);
        self.inner.1.notify_waiters();
    }

    pub fn is_triggered(&self) -> bool {
        self.inner.0.load(Ordering::SeqCst)
    }

    /// Resolves once triggered (immediately if it already was).
    pub async fn triggered(&self) {
        loop {
            let notified = self.inner.1.notified();
            if self.is_triggered() {
                return;
            }
            notified.await;
        }
    }
}
