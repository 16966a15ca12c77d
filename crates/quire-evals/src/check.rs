//! `quire eval check`: is every task of a suite a fair task? Its metadata
//! parses, its visible tests run, its hidden evaluation fails on the
//! untouched project (not already solved) and passes with the reference
//! solution applied (not impossible), where there is one.

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::suite::{Suite, Task};
use crate::tree::{TestRun, agent_view, apply_patch_file, install_evaluation, run_tests};

/// How to check.
#[derive(Debug, Clone)]
pub struct CheckOptions {
    /// Tasks checked at once.
    pub jobs: usize,
    /// Per test command.
    pub test_timeout: Duration,
    pub output_cap_bytes: usize,
    /// Only these tasks (all when empty).
    pub tasks: Vec<String>,
}

impl Default for CheckOptions {
    fn default() -> Self {
        CheckOptions {
            jobs: 1,
            test_timeout: Duration::from_secs(300),
            output_cap_bytes: 200_000,
            tasks: Vec::new(),
        }
    }
}

/// The verdict on one task.
#[derive(Debug, Clone, Serialize)]
pub struct TaskCheck {
    pub id: String,
    pub ok: bool,
    /// Why the task is bad; empty when it is fine.
    pub problems: Vec<String>,
    /// Visible tests on the untouched project.
    pub visible_before: Option<String>,
    /// Hidden evaluation on the untouched project.
    pub hidden_before: Option<String>,
    pub has_solution: bool,
    /// Visible tests and hidden evaluation with the solution applied.
    pub visible_after: Option<String>,
    pub hidden_after: Option<String>,
    pub duration_ms: u64,
}

/// The verdict on a suite.
#[derive(Debug, Clone, Serialize)]
pub struct SuiteCheck {
    pub suite: String,
    /// Problems of the suite as a whole (tasks no split lists, …).
    pub problems: Vec<String>,
    pub tasks: Vec<TaskCheck>,
    pub duration_ms: u64,
}

impl SuiteCheck {
    pub fn ok(&self) -> bool {
        self.problems.is_empty() && self.tasks.iter().all(|t| t.ok)
    }

    pub fn bad(&self) -> impl Iterator<Item = &TaskCheck> {
        self.tasks.iter().filter(|t| !t.ok)
    }
}

/// Checks the suite's tasks, `jobs` at a time; `each` sees every verdict as
/// it comes (in completion order). The result lists tasks in suite order.
pub async fn check_suite(
    suite: &Suite,
    options: &CheckOptions,
    each: impl Fn(&TaskCheck),
) -> SuiteCheck {
    let started = Instant::now();
    let mut problems = Vec::new();
    let unlisted = suite.unlisted();
    if !unlisted.is_empty() {
        problems.push(format!(
            "suite.toml lists no split for: {}",
            unlisted.join(", ")
        ));
    }
    for id in &options.tasks {
        if suite.task(id).is_none() {
            problems.push(format!("no task `{id}` in the suite"));
        }
    }
    let chosen: Vec<Task> = suite
        .tasks
        .iter()
        .filter(|t| options.tasks.is_empty() || options.tasks.contains(&t.id))
        .cloned()
        .collect();
    let permits = Arc::new(tokio::sync::Semaphore::new(options.jobs.max(1)));
    let mut set = tokio::task::JoinSet::new();
    for (index, task) in chosen.iter().cloned().enumerate() {
        let permits = permits.clone();
        let options = options.clone();
        let command = suite.evaluation_command.clone();
        set.spawn(async move {
            let _permit = permits.acquire_owned().await;
            (index, check_task(&task, &command, &options).await)
        });
    }
    let mut verdicts: Vec<Option<TaskCheck>> = vec![None; chosen.len()];
    while let Some(joined) = set.join_next().await {
        match joined {
            Ok((index, verdict)) => {
                each(&verdict);
                verdicts[index] = Some(verdict);
            }
            Err(err) => problems.push(format!("a task check crashed: {err}")),
        }
    }
    SuiteCheck {
        suite: suite.name.clone(),
        problems,
        tasks: verdicts.into_iter().flatten().collect(),
        duration_ms: started.elapsed().as_millis() as u64,
    }
}

/// Checks one task in throwaway copies of what the agent would see.
pub async fn check_task(
    task: &Task,
    evaluation_command: &str,
    options: &CheckOptions,
) -> TaskCheck {
    let started = Instant::now();
    let mut verdict = TaskCheck {
        id: task.id.clone(),
        ok: false,
        problems: Vec::new(),
        visible_before: None,
        hidden_before: None,
        has_solution: task.solution().is_some(),
        visible_after: None,
        hidden_after: None,
        duration_ms: 0,
    };
    if let Err(problem) = check_inner(task, evaluation_command, options, &mut verdict).await {
        verdict.problems.push(problem);
    }
    verdict.ok = verdict.problems.is_empty();
    verdict.duration_ms = started.elapsed().as_millis() as u64;
    verdict
}

/// Pushes every problem it can find; `Err` stops at one that makes the
/// remaining steps meaningless.
async fn check_inner(
    task: &Task,
    evaluation_command: &str,
    options: &CheckOptions,
    verdict: &mut TaskCheck,
) -> Result<(), String> {
    let metadata = task.metadata.as_ref().map_err(Clone::clone)?;
    let prompt = std::fs::read_to_string(task.dir.join("prompt.txt")).unwrap_or_default();
    if prompt.trim().is_empty() {
        verdict
            .problems
            .push("prompt.txt is missing or empty".into());
    }
    let evaluation = task.evaluation_dir();
    if !evaluation.is_dir() {
        return Err("no evaluation/ folder: nothing hidden to judge the result by".into());
    }
    let scratch = tempfile::Builder::new()
        .prefix(&format!("quire-check-{}-", task.id))
        .tempdir()
        .map_err(|e| format!("cannot make a scratch folder: {e}"))?;
    let run = |command: String, dir: std::path::PathBuf| {
        let options = options.clone();
        async move {
            run_tests(
                &command,
                &dir,
                options.test_timeout,
                options.output_cap_bytes,
            )
            .await
            .map_err(|e| e.to_string())
        }
    };

    // The untouched project, as the agent would get it.
    let before = scratch.path().join("before");
    agent_view(&task.dir, &before).map_err(|e| e.to_string())?;
    let visible = run(metadata.test_command.clone(), before.clone()).await?;
    verdict.visible_before = Some(visible.counts());
    let collected_none = visible.tests_passed.is_some()
        && visible.tests_passed.unwrap_or(0) + visible.tests_failed.unwrap_or(0) == 0;
    if !(visible.passed || visible.ran_and_failed()) || collected_none {
        verdict.problems.push(format!(
            "visible tests do not run: `{}` {}{}",
            metadata.test_command,
            describe(&visible),
            tail(&visible)
        ));
    }
    install_evaluation(&evaluation, &before).map_err(|e| e.to_string())?;
    let hidden = run(evaluation_command.to_string(), before).await?;
    verdict.hidden_before = Some(hidden.counts());
    if hidden.passed {
        verdict.problems.push(format!(
            "hidden evaluation already passes on the untouched project ({}): the task is solved before it starts",
            hidden.counts()
        ));
    } else if !hidden.ran_and_failed() {
        verdict.problems.push(format!(
            "hidden evaluation does not run: `{evaluation_command}` {}{}",
            describe(&hidden),
            tail(&hidden)
        ));
    }

    // With the reference solution.
    let Some(solution) = task.solution() else {
        return Ok(());
    };
    let after = scratch.path().join("after");
    agent_view(&task.dir, &after).map_err(|e| e.to_string())?;
    let patch = std::fs::read_to_string(&solution)
        .map_err(|e| format!("cannot read solution.patch: {e}"))?;
    apply_patch_file(&after, &patch).map_err(|e| format!("solution.patch does not apply: {e}"))?;
    let visible = run(metadata.test_command.clone(), after.clone()).await?;
    verdict.visible_after = Some(visible.counts());
    if !visible.passed {
        verdict.problems.push(format!(
            "visible tests fail with the reference solution: {}{}",
            describe(&visible),
            tail(&visible)
        ));
    }
    install_evaluation(&evaluation, &after).map_err(|e| e.to_string())?;
    let hidden = run(evaluation_command.to_string(), after).await?;
    verdict.hidden_after = Some(hidden.counts());
    if !hidden.passed {
        verdict.problems.push(format!(
            "hidden evaluation fails with the reference solution: {}{}",
            describe(&hidden),
            tail(&hidden)
        ));
    }
    Ok(())
}

fn describe(run: &TestRun) -> String {
    if run.timed_out {
        return "timed out".into();
    }
    let code = run
        .exit_code
        .map_or_else(|| "killed".to_string(), |c| format!("exit {c}"));
    format!("({code}; {})", run.counts())
}

/// The last few lines of output, indented, for a problem report.
fn tail(run: &TestRun) -> String {
    let lines: Vec<&str> = run
        .output
        .lines()
        .filter(|l| !l.trim().is_empty())
        .collect();
    let start = lines.len().saturating_sub(4);
    lines[start..]
        .iter()
        .map(|l| format!("\n      | {}", l.chars().take(200).collect::<String>()))
        .collect()
}
