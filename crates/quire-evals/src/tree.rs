//! Working trees for tasks: the agent's view of a task, the hidden
//! evaluation copied in, a reference solution applied, and the test
//! commands run in them.

use std::path::{Component, Path};
use std::time::Duration;

use quire_patch::{ApplyOptions, ChangeKind, apply_patch};
use quire_test_digest::digest_test_output;
use quire_workspace::{RunOptions, SessionCopy, run_command};
use serde::Serialize;

use crate::error::EvalError;

/// What the agent sees of a task: the folder without `evaluation/`,
/// `solution.patch`, `.git` and ignored files (the session copy's rules).
/// `dest` must not exist or be empty.
pub fn agent_view(task_dir: &Path, dest: &Path) -> Result<(), EvalError> {
    SessionCopy::create(task_dir, dest).map_err(|err| EvalError::Task {
        task: task_dir.display().to_string(),
        message: format!("cannot copy into {}: {err}", dest.display()),
    })?;
    Ok(())
}

/// Copies `evaluation/` into `tree/evaluation`, replacing whatever the agent
/// may have put there.
pub fn install_evaluation(evaluation: &Path, tree: &Path) -> Result<(), EvalError> {
    let target = tree.join("evaluation");
    if target.exists() {
        std::fs::remove_dir_all(&target).map_err(|e| EvalError::io(&target, e))?;
    }
    copy_dir(evaluation, &target)
}

/// A plain recursive copy that leaves Python caches behind.
pub fn copy_dir(from: &Path, to: &Path) -> Result<(), EvalError> {
    std::fs::create_dir_all(to).map_err(|e| EvalError::io(to, e))?;
    for entry in std::fs::read_dir(from).map_err(|e| EvalError::io(from, e))? {
        let entry = entry.map_err(|e| EvalError::io(from, e))?;
        let name = entry.file_name();
        if name == "__pycache__" || name == ".pytest_cache" {
            continue;
        }
        let source = entry.path();
        let dest = to.join(&name);
        let kind = entry.file_type().map_err(|e| EvalError::io(&source, e))?;
        if kind.is_dir() {
            copy_dir(&source, &dest)?;
        } else {
            std::fs::copy(&source, &dest).map_err(|e| EvalError::io(&source, e))?;
        }
    }
    Ok(())
}

/// Applies a unified diff (e.g. `solution.patch`) to `tree` with our own
/// patch crate, all or nothing. Returns the files it touched.
pub fn apply_patch_file(tree: &Path, patch: &str) -> Result<Vec<String>, String> {
    let outcome = apply_patch(
        patch,
        |rel| {
            safe_relative(rel)
                .ok()
                .and_then(|_| std::fs::read_to_string(tree.join(rel)).ok())
        },
        &ApplyOptions::default(),
    )
    .map_err(|err| err.to_string())?;
    for file in &outcome.files {
        safe_relative(&file.path)?;
    }
    let mut touched = Vec::with_capacity(outcome.files.len());
    for file in outcome.files {
        let path = tree.join(&file.path);
        match (file.kind, file.content) {
            (ChangeKind::Deleted, _) | (_, None) => {
                std::fs::remove_file(&path).map_err(|e| format!("deleting {}: {e}", file.path))?;
            }
            (_, Some(content)) => {
                if let Some(parent) = path.parent() {
                    std::fs::create_dir_all(parent)
                        .map_err(|e| format!("creating {}: {e}", parent.display()))?;
                }
                std::fs::write(&path, content)
                    .map_err(|e| format!("writing {}: {e}", file.path))?;
            }
        }
        touched.push(file.path);
    }
    Ok(touched)
}

/// A patch may only name plain relative paths inside the tree.
fn safe_relative(rel: &str) -> Result<(), String> {
    let path = Path::new(rel);
    let ok = !rel.is_empty()
        && path
            .components()
            .all(|c| matches!(c, Component::Normal(_) | Component::CurDir));
    if ok {
        Ok(())
    } else {
        Err(format!(
            "the patch names `{rel}`, which is outside the tree"
        ))
    }
}

/// How a test command went, condensed.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TestRun {
    pub command: String,
    pub exit_code: Option<i32>,
    pub timed_out: bool,
    /// Exit 0 within the time limit and no failures counted.
    pub passed: bool,
    /// Counted passing tests, when the runner's summary was understood.
    pub tests_passed: Option<u32>,
    /// Counted failures and errors, when understood.
    pub tests_failed: Option<u32>,
    pub summary: Option<String>,
    pub failing_tests: Vec<String>,
    pub duration_ms: u64,
    #[serde(skip)]
    pub output: String,
}

impl TestRun {
    /// `"3 passed, 1 failed"`, or the exit code when no counts were read.
    pub fn counts(&self) -> String {
        match (self.tests_passed, self.tests_failed) {
            (None, None) if self.timed_out => "timed out".into(),
            (None, None) => format!(
                "exit {}",
                self.exit_code
                    .map_or_else(|| "killed".to_string(), |c| c.to_string())
            ),
            (p, f) => format!("{} passed, {} failed", p.unwrap_or(0), f.unwrap_or(0)),
        }
    }

    /// Exit 1 (tests ran, some failed) or 2 (collection errors) under
    /// pytest's conventions: the command ran and did not pass.
    pub fn ran_and_failed(&self) -> bool {
        !self.passed && !self.timed_out && matches!(self.exit_code, Some(1) | Some(2))
    }
}

/// Runs a test command in `dir` (bytecode caches off, so trees stay clean).
pub async fn run_tests(
    command: &str,
    dir: &Path,
    timeout: Duration,
    output_cap_bytes: usize,
) -> Result<TestRun, EvalError> {
    let opts = RunOptions {
        timeout,
        output_cap_bytes,
        env: vec![("PYTHONDONTWRITEBYTECODE".into(), "1".into())],
        // The grader's own tests: trusted, and may need the network.
        sandbox: None,
    };
    let output = run_command(command, dir, &opts)
        .await
        .map_err(|err| EvalError::Task {
            task: dir.display().to_string(),
            message: err.to_string(),
        })?;
    let digest = digest_test_output(&output.output, output.exit_code);
    let counted = digest.passed.is_some() || digest.failed.is_some() || digest.errors.is_some();
    let failed = counted.then(|| digest.failed.unwrap_or(0) + digest.errors.unwrap_or(0));
    let passed = counted.then(|| digest.passed.unwrap_or(0));
    Ok(TestRun {
        command: command.to_string(),
        exit_code: output.exit_code,
        timed_out: output.timed_out,
        passed: digest.success() && !output.timed_out,
        tests_passed: passed,
        tests_failed: failed,
        summary: digest.summary_line.clone(),
        failing_tests: digest.failing_tests.clone(),
        duration_ms: output.duration.as_millis() as u64,
        output: output.output,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patches_apply_create_and_refuse_escapes() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("src")).unwrap();
        std::fs::write(dir.path().join("src/a.py"), "x = 1\ny = 2\n").unwrap();
        let patch = "diff --git a/src/a.py b/src/a.py\n--- a/src/a.py\n+++ b/src/a.py\n@@ -1,2 +1,2 @@\n-x = 1\n+x = 3\n y = 2\ndiff --git a/src/new.py b/src/new.py\nnew file mode 100644\n--- /dev/null\n+++ b/src/new.py\n@@ -0,0 +1 @@\n+z = 0\n";
        let touched = apply_patch_file(dir.path(), patch).unwrap();
        assert_eq!(touched, vec!["src/a.py", "src/new.py"]);
        assert_eq!(
            std::fs::read_to_string(dir.path().join("src/a.py")).unwrap(),
            "x = 3\ny = 2\n"
        );
        assert_eq!(
            std::fs::read_to_string(dir.path().join("src/new.py")).unwrap(),
            "z = 0\n"
        );
        let escape = "--- /dev/null\n+++ b/../evil.py\n@@ -0,0 +1 @@\n+boom\n";
        assert!(apply_patch_file(dir.path(), escape).is_err());
        assert!(!dir.path().parent().unwrap().join("evil.py").exists());
    }

    #[tokio::test]
    async fn test_runs_are_condensed() {
        let dir = tempfile::tempdir().unwrap();
        let run = run_tests(
            "echo '3 passed, 1 failed in 0.1s'; exit 1",
            dir.path(),
            Duration::from_secs(10),
            10_000,
        )
        .await
        .unwrap();
        assert!(!run.passed && run.ran_and_failed());
        assert_eq!(run.counts(), "3 passed, 1 failed");
    }
}
