use std::io::{BufRead, Write};

use async_trait::async_trait;
use quire_session::{Approver, Decision, ProposedChange, SessionError};

use crate::render::Style;

/// Asks at the terminal (or whatever feeds stdin): approve, reject, or send
/// feedback to the agent. The diff was already rendered from the Patch event.
pub struct TerminalApprover {
    pub style: Style,
}

#[async_trait]
impl Approver for TerminalApprover {
    async fn review(&self, change: &ProposedChange) -> Result<Decision, SessionError> {
        let style = self.style;
        let summary = change.summary.clone();
        let files = change.files.len();
        tokio::task::spawn_blocking(move || ask(style, &summary, files))
            .await
            .map_err(|err| SessionError::Approval(err.to_string()))?
    }

    /// Asks y/n for a command the `[commands]` policy leaves to a person;
    /// a closed stdin means nobody is there, which refuses it.
    async fn approve_command(&self, command: &str) -> Option<bool> {
        let style = self.style;
        let command = crate::logging::redact(command);
        tokio::task::spawn_blocking(move || ask_command(style, &command))
            .await
            .ok()
            .flatten()
    }
}

fn ask_command(style: Style, command: &str) -> Option<bool> {
    let stdin = std::io::stdin();
    let mut stdout = std::io::stdout();
    loop {
        let _ = write!(
            stdout,
            "{} {command}\n{} ",
            style.bold("agent wants to run:"),
            style.bold("Run it? [y]es / [n]o:")
        );
        let _ = stdout.flush();
        let mut line = String::new();
        match stdin.lock().read_line(&mut line) {
            Ok(0) | Err(_) => return None,
            Ok(_) => {}
        }
        match line.trim().to_ascii_lowercase().as_str() {
            "y" | "yes" => return Some(true),
            "n" | "no" => return Some(false),
            _ => {}
        }
    }
}

fn ask(style: Style, summary: &str, files: usize) -> Result<Decision, SessionError> {
    let stdin = std::io::stdin();
    let mut stdout = std::io::stdout();
    let _ = writeln!(stdout, "{} {summary}", style.bold("agent:"));
    loop {
        let _ = write!(
            stdout,
            "{} ",
            style.bold(&format!(
                "Apply this change to {files} file(s)? [y]es / [n]o / [f]eedback:"
            ))
        );
        let _ = stdout.flush();
        let mut line = String::new();
        let read = stdin
            .lock()
            .read_line(&mut line)
            .map_err(|e| SessionError::Approval(e.to_string()))?;
        if read == 0 {
            return Err(SessionError::Approval(
                "no answer (standard input closed); pass --yes or --no-apply to run unattended"
                    .into(),
            ));
        }
        match line.trim().to_ascii_lowercase().as_str() {
            "y" | "yes" => return Ok(Decision::Approve),
            "n" | "no" => return Ok(Decision::Reject),
            "f" | "feedback" => {
                let _ = write!(stdout, "{} ", style.bold("Feedback for the agent:"));
                let _ = stdout.flush();
                let mut feedback = String::new();
                stdin
                    .lock()
                    .read_line(&mut feedback)
                    .map_err(|e| SessionError::Approval(e.to_string()))?;
                if !feedback.trim().is_empty() {
                    return Ok(Decision::Feedback(feedback.trim().to_string()));
                }
            }
            other if other.len() > 3 => return Ok(Decision::Feedback(line.trim().to_string())),
            _ => {}
        }
    }
}
