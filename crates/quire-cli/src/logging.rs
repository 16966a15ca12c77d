//! Logs and error lines on stderr, redacted like everything else Quire
//! writes: debug logs carry tool arguments and model text, which may hold
//! keys the model read from the workspace.

use std::io::Write;
use std::sync::RwLock;

use quire_types::Redactor;

/// The redactor for stderr. Until a config is loaded it knows only key
/// shapes; [`add_redactor`] adds the config's secret values.
static REDACTOR: RwLock<Option<Redactor>> = RwLock::new(None);

/// Makes every later log line also mask the values this redactor knows.
pub fn add_redactor(redactor: &Redactor) {
    // A poisoned lock only means a writer panicked mid-line; the value is
    // still a whole `Option<Redactor>`, so keep using it.
    let mut slot = REDACTOR.write().unwrap_or_else(|e| e.into_inner());
    slot.get_or_insert_with(Redactor::new).merge(redactor);
}

/// `text` with secrets masked.
pub fn redact(text: &str) -> String {
    let slot = REDACTOR.read().unwrap_or_else(|e| e.into_inner());
    match slot.as_ref() {
        Some(redactor) => redactor.redact(text),
        None => Redactor::new().redact(text),
    }
}

/// Stderr, redacting each write. The fmt layer formats an event into one
/// buffer and writes it whole, so a secret is never split across writes.
pub struct RedactingStderr;

impl Write for RedactingStderr {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let text = redact(&String::from_utf8_lossy(buf));
        std::io::stderr().lock().write_all(text.as_bytes())?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        std::io::stderr().flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_set_later_are_masked_and_key_shapes_always_are() {
        assert_eq!(redact("ghp_abcdefghijklmnopqrstuvwxyz0123"), "[REDACTED]");
        let mut r = Redactor::new();
        r.add_secret("logged-secret-value-42");
        add_redactor(&r);
        assert_eq!(redact("x logged-secret-value-42 y"), "x [REDACTED] y");
    }
}
