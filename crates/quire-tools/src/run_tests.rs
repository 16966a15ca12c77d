//! `run_tests`: the test command in the session copy, with a compact digest
//! for the model and the full output for the user.

use std::time::{Duration, Instant};

use quire_config::AgentConfig;
use quire_core::{Control, Ctx, TestOutcome, ToolOutput};
use quire_types::TestPhase;

use crate::state::{TestSummary, WorkspaceState};
use crate::util::text;
use quire_test_digest::{TestDigest, digest_test_output};
use quire_workspace::{RunOptions, SessionCopy, run_command};

pub(crate) const TOOL: &str = "run_tests";
/// The `[errors]` keys this tool renders (checked when a config loads).
pub(crate) const ERRORS: &[&str] = &[
    "count_changed",
    "cut",
    "errors",
    "failed",
    "failing",
    "no_command",
    "passed",
    "runner_missing",
    "start_failed",
    "timeout",
];
/// Most failing test names listed in the digest.
const FAILING_MAX: usize = 15;
/// Most error lines quoted in the digest.
const ERROR_LINES_MAX: usize = 20;

pub(crate) async fn run(copy: &SessionCopy, command: Option<&str>, ctx: &mut Ctx) -> ToolOutput {
    let config = ctx.config.clone();
    let Some(command) = command else {
        return ToolOutput::error(text(&config, TOOL, "no_command", &[]));
    };
    ctx.state.get_mut::<WorkspaceState>().test_command = Some(command.to_string());
    let options = RunOptions {
        timeout: Duration::from_secs(config.tests.timeout_secs),
        output_cap_bytes: usize::try_from(config.tests.output_cap_bytes).unwrap_or(usize::MAX),
        env: vec![("PYTHONDONTWRITEBYTECODE".to_string(), "1".to_string())],
        sandbox: crate::process_sandbox(&config, copy.root()),
    };
    let started = Instant::now();
    let output = match run_command(command, copy.root(), &options).await {
        Ok(output) => output,
        Err(err) => {
            tracing::warn!(%err, command, "test command could not start");
            return ToolOutput::error(text(
                &config,
                TOOL,
                "start_failed",
                &[("command", command), ("error", &err.to_string())],
            ));
        }
    };
    let duration_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
    // A runner that is not installed fails every run the same way, and no
    // edit can fix it: the session ends here with the cause for the user,
    // instead of the model going round run_tests and finish.
    if let Some(detail) = runner_missing(command, &output.output, output.exit_code) {
        tracing::warn!(command, %detail, "the test runner is not installed");
        let message = text(
            &config,
            TOOL,
            "runner_missing",
            &[("command", command), ("error", &detail)],
        );
        let reason = format!(
            "the test command `{command}` cannot run here ({detail}): install what it needs, \
             or set tests.command, and run again"
        );
        return ToolOutput {
            user_view: output.output,
            ..ToolOutput::error(message)
        }
        .with_control(Control::Stop { reason });
    }
    let digest = digest_test_output(&output.output, output.exit_code);
    let mut agent = render_digest(&config, &digest, output.exit_code, output.timed_out);
    // Did the tests the model added get collected? Say when the count moved.
    let before = ctx
        .state
        .get_mut::<WorkspaceState>()
        .last_test
        .as_ref()
        .and_then(|t| test_count(t.passed, t.failed, t.errors));
    if let (Some(before), Some(now)) = (
        before,
        test_count(digest.passed, digest.failed, digest.errors),
    ) && before != now
    {
        agent.push('\n');
        agent.push_str(&text(
            &config,
            TOOL,
            "count_changed",
            &[("now", &now.to_string()), ("before", &before.to_string())],
        ));
    }
    tracing::info!(exit_code = ?output.exit_code, timed_out = output.timed_out, duration_ms, "tests ran");

    let summary = TestSummary {
        command: command.to_string(),
        exit_code: output.exit_code,
        passed: digest.passed,
        failed: digest.failed,
        errors: digest.errors,
        timed_out: output.timed_out,
        failing_tests: digest.failing_tests.clone(),
        digest: agent.clone(),
        output: output.output.clone(),
        duration_ms,
    };
    // The trajectory gets a typed test-run event beside the tool result, so
    // reports and the note-taker need not parse tool output.
    if let Err(err) = ctx.emit(quire_types::EventKind::TestRun {
        phase: TestPhase::Agent,
        command: command.to_string(),
        exit_code: output.exit_code,
        passed: digest.passed,
        failed: digest.failed,
        timed_out: output.timed_out,
        digest: summary.digest.clone(),
        output: String::new(),
        duration_ms,
    }) {
        tracing::warn!(%err, "could not record the test run");
    }
    ctx.facts.tested(if summary.timed_out {
        TestOutcome::TimedOut
    } else if summary.succeeded() {
        TestOutcome::Passed
    } else {
        TestOutcome::Failed
    });
    let state = ctx.state.get_mut::<WorkspaceState>();
    state.last_test = Some(summary);
    state.test_runs += 1;

    let out = if output.timed_out {
        ToolOutput::error(agent)
    } else {
        ToolOutput::ok(agent, String::new())
    };
    ToolOutput {
        user_view: output.output,
        ..out
    }
}

/// Why the test command's own runner could not run, when that is what its
/// output says: the shell did not find the command (exit 127), or Python
/// has no module for the runner the command names (`python -m pytest`,
/// `pytest`). A missing module the project imports is the model's to fix
/// and is not reported here.
pub(crate) fn runner_missing(
    command: &str,
    output: &str,
    exit_code: Option<i32>,
) -> Option<String> {
    if exit_code == Some(0) {
        return None;
    }
    if exit_code == Some(127) {
        let line = output
            .lines()
            .map(str::trim)
            .find(|l| l.contains("not found"))
            .unwrap_or("command not found");
        return Some(line.to_string());
    }
    let words: Vec<&str> = command.split_whitespace().collect();
    let mut runners: Vec<&str> = words
        .windows(2)
        .filter(|w| w[0] == "-m")
        .map(|w| w[1])
        .collect();
    if let Some(first) = words.first() {
        runners.push(first.rsplit('/').next().unwrap_or(first));
    }
    output.lines().map(str::trim).find_map(|line| {
        let (_, module) = line.split_once("No module named ")?;
        let module = module.trim().trim_matches(|c| c == '\'' || c == '"');
        let top = module.split('.').next().unwrap_or(module);
        runners
            .iter()
            .any(|r| *r == module || *r == top)
            .then(|| format!("No module named {module}"))
    })
}

/// How many tests a run counted, when its summary said.
fn test_count(passed: Option<u32>, failed: Option<u32>, errors: Option<u32>) -> Option<u32> {
    (passed.is_some() || failed.is_some() || errors.is_some())
        .then(|| passed.unwrap_or(0) + failed.unwrap_or(0) + errors.unwrap_or(0))
}

/// The model's view of a run: outcome line, failing tests, first errors.
fn render_digest(
    config: &AgentConfig,
    digest: &TestDigest,
    exit_code: Option<i32>,
    timed_out: bool,
) -> String {
    // pytest frames its summary in `=====`; the frame costs tokens only.
    let summary = digest
        .summary_line
        .as_deref()
        .map(|s| s.trim_matches(|c: char| c == '=' || c.is_whitespace()))
        .unwrap_or("");
    let code = exit_code.map_or_else(|| "-".to_string(), |c| c.to_string());
    let mut out = if timed_out {
        text(
            config,
            TOOL,
            "timeout",
            &[
                ("seconds", &config.tests.timeout_secs.to_string()),
                ("summary", summary),
            ],
        )
    } else if exit_code == Some(0) {
        text(config, TOOL, "passed", &[("summary", summary)])
    } else {
        text(
            config,
            TOOL,
            "failed",
            &[("code", &code), ("summary", summary)],
        )
    };
    if !digest.failing_tests.is_empty() {
        let mut names: Vec<&str> = digest
            .failing_tests
            .iter()
            .take(FAILING_MAX)
            .map(String::as_str)
            .collect();
        let more = digest.failing_tests.len().saturating_sub(FAILING_MAX) + digest.more_failing;
        let more_text;
        if more > 0 {
            more_text = format!("(+{more})");
            names.push(&more_text);
        }
        out.push('\n');
        out.push_str(&text(
            config,
            TOOL,
            "failing",
            &[("tests", &names.join("\n"))],
        ));
    }
    if !digest.first_error_lines.is_empty() && exit_code != Some(0) {
        let lines: Vec<&str> = digest
            .first_error_lines
            .iter()
            .take(ERROR_LINES_MAX)
            .map(String::as_str)
            .collect();
        out.push('\n');
        out.push_str(&text(
            config,
            TOOL,
            "errors",
            &[("lines", &lines.join("\n"))],
        ));
    }
    out
}
