//! Running shell commands (tests, builds) in their own process group, with
//! a timeout, capped output, and no stray processes left behind.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::io::AsyncReadExt;
use tokio::process::Command;

/// How long to keep reading output after the command ended, in case a
/// process that escaped the group still holds the pipes.
const DRAIN_GRACE: Duration = Duration::from_secs(2);

/// How to run a command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunOptions {
    /// Wall-clock limit; the whole process group is killed after it.
    pub timeout: Duration,
    /// Output kept (head and tail halves); the middle is cut.
    pub output_cap_bytes: usize,
    /// Extra environment variables.
    pub env: Vec<(String, String)>,
    /// Confine writes (and the network) with Landlock where the kernel
    /// allows; `None` runs unconfined.
    pub sandbox: Option<crate::sandbox::Sandbox>,
}

impl Default for RunOptions {
    fn default() -> Self {
        RunOptions {
            timeout: Duration::from_secs(300),
            output_cap_bytes: 64 * 1024,
            env: Vec::new(),
            sandbox: None,
        }
    }
}

/// What a command did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandOutput {
    /// stdout and stderr interleaved as they arrived, capped: when cut,
    /// head and tail are joined by a line `[... N bytes omitted ...]`.
    pub output: String,
    /// Exit code; `None` when killed by a signal.
    pub exit_code: Option<i32>,
    /// The signal that ended it, if any.
    pub signal: Option<i32>,
    pub timed_out: bool,
    pub duration: Duration,
    /// Bytes of output produced in total.
    pub total_bytes: u64,
    /// Bytes cut from the middle of `output`.
    pub omitted_bytes: u64,
}

impl CommandOutput {
    /// Exited with code 0 within the time limit.
    pub fn success(&self) -> bool {
        self.exit_code == Some(0) && !self.timed_out
    }
}

/// Why a command could not be run at all.
#[derive(Debug, thiserror::Error)]
pub enum ProcessError {
    #[error("could not start `{command}` in {cwd}: {source}")]
    Spawn {
        command: String,
        cwd: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("waiting for `{command}`: {source}")]
    Wait {
        command: String,
        #[source]
        source: std::io::Error,
    },
}

/// Kills the process group when dropped, unless disarmed: this is what
/// makes a dropped (Ctrl-C'd) run leave nothing behind.
struct GroupGuard {
    pgid: Option<i32>,
}

impl GroupGuard {
    fn kill(&self) {
        if let Some(pgid) = self.pgid.filter(|&p| p > 1) {
            // SAFETY: kill(2) with a negative pid signals the process group
            // we created with process_group(0); it has no memory effects.
            let rc = unsafe { libc::kill(-pgid, libc::SIGKILL) };
            if rc != 0 {
                tracing::trace!(pgid, "process group already gone");
            }
        }
    }
}

impl Drop for GroupGuard {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Output collector keeping the first and last halves of `cap` bytes.
struct Capped {
    head_cap: usize,
    tail_cap: usize,
    head: Vec<u8>,
    tail: std::collections::VecDeque<u8>,
    total: u64,
}

impl Capped {
    fn new(cap: usize) -> Self {
        let head_cap = cap / 2;
        Capped {
            head_cap,
            tail_cap: cap - head_cap,
            head: Vec::new(),
            tail: std::collections::VecDeque::new(),
            total: 0,
        }
    }

    fn push(&mut self, mut bytes: &[u8]) {
        self.total += bytes.len() as u64;
        let room = self.head_cap.saturating_sub(self.head.len());
        let take = room.min(bytes.len());
        self.head.extend_from_slice(&bytes[..take]);
        bytes = &bytes[take..];
        if bytes.len() >= self.tail_cap {
            self.tail.clear();
            self.tail.extend(&bytes[bytes.len() - self.tail_cap..]);
        } else {
            let overflow = (self.tail.len() + bytes.len()).saturating_sub(self.tail_cap);
            self.tail.drain(..overflow);
            self.tail.extend(bytes);
        }
    }

    fn finish(self) -> (String, u64, u64) {
        let kept = self.head.len() as u64 + self.tail.len() as u64;
        let omitted = self.total - kept;
        let tail: Vec<u8> = self.tail.into_iter().collect();
        if omitted == 0 {
            let mut all = self.head;
            all.extend_from_slice(&tail);
            return (String::from_utf8_lossy(&all).into_owned(), self.total, 0);
        }
        let head = utf8_head(&self.head);
        let tail = utf8_tail(&tail);
        let mut out = String::with_capacity(head.len() + tail.len() + 40);
        out.push_str(&head);
        if !out.is_empty() && !out.ends_with('\n') {
            out.push('\n');
        }
        out.push_str(&format!("[... {omitted} bytes omitted ...]\n"));
        out.push_str(&tail);
        (out, self.total, omitted)
    }
}

/// Lossy text of a head cut, dropping a partial character at the end.
fn utf8_head(bytes: &[u8]) -> String {
    let end = match std::str::from_utf8(bytes) {
        Ok(_) => bytes.len(),
        Err(e) if e.error_len().is_none() => e.valid_up_to(),
        Err(_) => bytes.len(),
    };
    String::from_utf8_lossy(&bytes[..end]).into_owned()
}

/// Lossy text of a tail cut, dropping a partial character at the start.
fn utf8_tail(bytes: &[u8]) -> String {
    let skip = bytes
        .iter()
        .take(3)
        .take_while(|&&b| b & 0b1100_0000 == 0b1000_0000)
        .count();
    String::from_utf8_lossy(&bytes[skip..]).into_owned()
}

async fn pump<R: tokio::io::AsyncRead + Unpin>(mut reader: R, sink: Arc<Mutex<Capped>>) {
    let mut buf = vec![0u8; 8192];
    loop {
        match reader.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                if let Ok(mut s) = sink.lock() {
                    s.push(&buf[..n]);
                }
            }
        }
    }
}

/// Run `cmd` with `sh -c` in `cwd`, in a new process group. On timeout, or
/// if this future is dropped, the whole group is killed with SIGKILL; when
/// the command ends normally, processes it left in its group are killed
/// too. Output is capped per [`RunOptions::output_cap_bytes`].
pub async fn run_command(
    cmd: &str,
    cwd: &Path,
    opts: &RunOptions,
) -> Result<CommandOutput, ProcessError> {
    let started = Instant::now();
    let mut command = Command::new("sh");
    command
        .arg("-c")
        .arg(cmd)
        .current_dir(cwd)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    for (k, v) in &opts.env {
        command.env(k, v);
    }
    // Built here in the parent; the child only applies it (see `sandbox`).
    if let Some(sandbox) = &opts.sandbox {
        crate::sandbox::confine(&mut command, sandbox);
    }
    let mut child = command.spawn().map_err(|source| ProcessError::Spawn {
        command: cmd.to_string(),
        cwd: cwd.to_path_buf(),
        source,
    })?;
    let guard = GroupGuard {
        pgid: child.id().and_then(|id| i32::try_from(id).ok()),
    };
    tracing::debug!(command = cmd, pgid = ?guard.pgid, "started");
    let sink = Arc::new(Mutex::new(Capped::new(opts.output_cap_bytes)));
    let mut pumps = Vec::new();
    if let Some(out) = child.stdout.take() {
        pumps.push(tokio::spawn(pump(out, sink.clone())));
    }
    if let Some(err) = child.stderr.take() {
        pumps.push(tokio::spawn(pump(err, sink.clone())));
    }

    let (status, timed_out) = match tokio::time::timeout(opts.timeout, child.wait()).await {
        Ok(status) => (status, false),
        Err(_) => {
            tracing::info!(command = cmd, timeout = ?opts.timeout, "timed out; killing process group");
            guard.kill();
            (child.wait().await, true)
        }
    };
    // Stragglers (background jobs) in the group would hold the pipes open.
    guard.kill();
    let status = status.map_err(|source| ProcessError::Wait {
        command: cmd.to_string(),
        source,
    })?;
    let deadline = Instant::now() + DRAIN_GRACE;
    for p in pumps {
        let left = deadline.saturating_duration_since(Instant::now());
        if tokio::time::timeout(left, p).await.is_err() {
            tracing::warn!(
                command = cmd,
                "output still open after the command ended; not waiting"
            );
        }
    }
    let capped = match Arc::try_unwrap(sink) {
        Ok(m) => m.into_inner().unwrap_or_else(|p| p.into_inner()),
        // A pump still running holds a clone: take what is there so far.
        Err(shared) => match shared.lock() {
            Ok(mut s) => std::mem::replace(&mut *s, Capped::new(0)),
            Err(p) => std::mem::replace(&mut *p.into_inner(), Capped::new(0)),
        },
    };
    let (output, total_bytes, omitted_bytes) = capped.finish();
    use std::os::unix::process::ExitStatusExt;
    let out = CommandOutput {
        output,
        exit_code: status.code(),
        signal: status.signal(),
        timed_out,
        duration: started.elapsed(),
        total_bytes,
        omitted_bytes,
    };
    tracing::debug!(command = cmd, exit = ?out.exit_code, timed_out, ms = out.duration.as_millis() as u64, "finished");
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn capped_keeps_head_and_tail() {
        let mut c = Capped::new(10);
        c.push(b"0123456789abcdefghij");
        let (out, total, omitted) = c.finish();
        assert_eq!(total, 20);
        assert_eq!(omitted, 10);
        assert_eq!(out, "01234\n[... 10 bytes omitted ...]\nfghij");
        let mut c = Capped::new(100);
        c.push(b"short");
        c.push(b" text");
        assert_eq!(c.finish(), ("short text".to_string(), 10, 0));
    }

    #[test]
    fn capped_many_small_pushes() {
        let mut c = Capped::new(8);
        for b in b"abcdefghijklmnop".chunks(3) {
            c.push(b);
        }
        let (out, _, omitted) = c.finish();
        assert_eq!(omitted, 8);
        assert_eq!(out, "abcd\n[... 8 bytes omitted ...]\nmnop");
    }

    #[test]
    fn utf8_cuts_are_clean() {
        assert_eq!(utf8_head("aé".as_bytes()[..2].as_ref()), "a");
        assert_eq!(utf8_tail(&"éa".as_bytes()[1..]), "a");
    }
}
