//! `quire eval`: check suites, run an agent over them, resume, report,
//! compare and list runs.

use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use anyhow::{Context, Result, anyhow, bail};
use quire_evals::{
    ArmRun, CheckOptions, Comparison, EvalRunner, LearningCurve, NotesPlan, Progress, RunPlan,
    RunReport, Settings, Suite, TaskCheck, check_suite, create_run, short_hash, tokens_text,
};
use quire_store::{EvalResultRow, EvalRunRow, Store};

use super::eval_notes::{self, find_run};
use crate::cli::{EvalCommand, EvalRunArgs, GlobalArgs, RecordingArgs};
use crate::client::{home, load_agent};
use crate::render::Style;

/// The split `eval run` uses when none is given and no task is named.
const DEFAULT_RUN_SPLIT: &str = "test";

pub async fn eval(global: &GlobalArgs, cmd: EvalCommand) -> Result<ExitCode> {
    match cmd {
        EvalCommand::Check { suite, tasks, jobs } => check(global, &suite, tasks, jobs).await,
        EvalCommand::Run(args) => run(global, args).await,
        EvalCommand::Resume { run, jobs, timeout } => resume(global, &run, jobs, timeout).await,
        EvalCommand::Report { run, markdown } => report(global, &run, markdown),
        EvalCommand::Compare { a, b, markdown } => compare(global, &a, &b, markdown),
        EvalCommand::Curve {
            learn,
            baseline,
            svg,
            markdown,
        } => curve(global, &learn, &baseline, svg.as_deref(), markdown),
        EvalCommand::List { suite, limit } => list(global, suite.as_deref(), limit),
    }
}

async fn check(
    global: &GlobalArgs,
    path: &Path,
    tasks: Vec<String>,
    jobs: Option<usize>,
) -> Result<ExitCode> {
    let suite = Suite::load(path)?;
    let jobs = jobs.unwrap_or_else(|| {
        std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1)
    });
    let options = CheckOptions {
        jobs,
        tasks,
        ..CheckOptions::default()
    };
    let style = Style::detect();
    let live = !global.quiet && !global.json;
    if live {
        println!(
            "checking suite {} ({} tasks, {} at a time)",
            suite.name,
            if options.tasks.is_empty() {
                suite.tasks.len()
            } else {
                options.tasks.len()
            },
            jobs.max(1)
        );
    }
    let verdicts = check_suite(&suite, &options, |t| {
        if live {
            println!("{}", check_line(&style, t));
        }
    })
    .await;
    if global.json {
        println!("{}", serde_json::to_string_pretty(&verdicts)?);
    } else {
        let bad: Vec<&TaskCheck> = verdicts.bad().collect();
        if !bad.is_empty() {
            println!("\nbad tasks:");
            for t in &bad {
                println!("  {}", style.red(&t.id));
                for p in &t.problems {
                    println!("    - {p}");
                }
            }
        }
        for p in &verdicts.problems {
            println!("suite problem: {p}");
        }
        println!(
            "{}: {} tasks checked, {} ok, {} bad ({:.1}s)",
            verdicts.suite,
            verdicts.tasks.len(),
            verdicts.tasks.len() - bad.len(),
            bad.len(),
            verdicts.duration_ms as f64 / 1000.0
        );
    }
    Ok(if verdicts.ok() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

fn check_line(style: &Style, t: &TaskCheck) -> String {
    let mark = if t.ok {
        style.green("ok ")
    } else {
        style.red("BAD")
    };
    let mut parts = Vec::new();
    if let Some(v) = &t.visible_before {
        parts.push(format!("visible {v}"));
    }
    if let Some(h) = &t.hidden_before {
        parts.push(format!("hidden untouched {h}"));
    }
    match (&t.visible_after, &t.hidden_after) {
        (Some(v), Some(h)) => parts.push(format!("with solution: visible {v}, hidden {h}")),
        _ if !t.has_solution => parts.push("no reference solution".into()),
        _ => {}
    }
    format!(
        "{mark} {:<36} {} ({:.1}s)",
        t.id,
        style.dim(&parts.join(" · ")),
        t.duration_ms as f64 / 1000.0
    )
}

/// The agent as a resume will find it again from any directory: its
/// folder, absolute, or the name for the built-in one.
fn agent_spec(global: &GlobalArgs, config: &quire_config::AgentConfig) -> String {
    config
        .dir
        .as_ref()
        .and_then(|dir| dir.canonicalize().ok())
        .map_or_else(|| global.agent.clone(), |dir| dir.display().to_string())
}

async fn run(global: &GlobalArgs, args: EvalRunArgs) -> Result<ExitCode> {
    let suite = Suite::load(&args.suite)?;
    // A task named without a split runs wherever it is listed.
    let selection = match &args.split {
        None if !args.tasks.is_empty() => suite.select_named(&args.tasks)?,
        split => suite.select(split.as_deref().unwrap_or(DEFAULT_RUN_SPLIT), &args.tasks)?,
    };
    let config = load_agent(global, None)?;
    let notes = eval_notes::plan(&home(global)?, &config, args.learn, args.notes.as_deref())?;
    let settings = settings(&config, args.jobs, args.timeout);
    let plan = RunPlan {
        selection,
        repeat: args.repeat,
        jobs: args.jobs,
        timeout: Duration::from_secs(args.timeout),
        agent: config.name.clone(),
        config_hash: config.hash.clone(),
        model: config.model.model.clone(),
        args: serde_json::json!({
            "agent": agent_spec(global, &config),
            "tasks": args.tasks,
            "cwd": std::env::current_dir().ok(),
        }),
        notes,
    };
    let run = {
        let store = Store::open(&home(global)?.db_path())?;
        create_run(&store, &suite, &plan)?
    };
    execute(global, config, &run, &suite, &settings).await
}

async fn resume(
    global: &GlobalArgs,
    spec: &str,
    jobs: Option<u32>,
    timeout: Option<u64>,
) -> Result<ExitCode> {
    let run = {
        let store = Store::open(&home(global)?.db_path())?;
        find_run(&store, spec)?
    };
    let suite = Suite::load(Path::new(&run.suite_path))
        .with_context(|| format!("loading the suite of run {} again", run.id))?;
    let agent = run
        .args
        .get("agent")
        .and_then(|a| a.as_str())
        .unwrap_or(&run.agent)
        .to_string();
    let config = load_agent(global, Some(&agent))?;
    if config.hash != run.config_hash && !global.quiet {
        eprintln!(
            "warning: agent `{agent}` now has config hash {} but run {} started with {}; \
             attempts run now use the current config",
            short_hash(&config.hash),
            run.id,
            short_hash(&run.config_hash)
        );
    }
    let learns = NotesPlan::of_run(&run.args).learns();
    let jobs = if learns {
        1
    } else {
        jobs.unwrap_or(run.jobs).max(1)
    };
    let timeout = timeout.unwrap_or(run.timeout_secs).max(1);
    let settings = settings(&config, jobs, timeout);
    if jobs != run.jobs {
        Store::open(&home(global)?.db_path())?.set_eval_run_jobs(&run.id, jobs)?;
    }
    execute(global, config, &run, &suite, &settings).await
}

fn settings(config: &quire_config::AgentConfig, jobs: u32, timeout: u64) -> Settings {
    let mut settings = Settings::new(jobs as usize, Duration::from_secs(timeout));
    settings.test_timeout = Duration::from_secs(config.tests.timeout_secs.max(1));
    settings.output_cap_bytes = config.tests.output_cap_bytes as usize;
    settings.notes_tool_chars = quire_evals::notes_tool_chars(config);
    settings
}

/// Runs what is left of `run`: its notes tree made (or found again), the
/// sessions wired to it, and for a learn run the note-taker as learner.
async fn execute(
    global: &GlobalArgs,
    config: quire_config::AgentConfig,
    run: &EvalRunRow,
    suite: &Suite,
    settings: &Settings,
) -> Result<ExitCode> {
    let home = home(global)?;
    let evals_dir = home.root().join("evals");
    let plan = NotesPlan::of_run(&run.args);
    let paths = quire_evals::prepare_run_notes(&evals_dir.join(&run.id), &plan)?;
    let learner = match (&paths, plan.learns()) {
        (Some(paths), true) => Some(eval_notes::note_taker(&home, &config, paths)?),
        _ => None,
    };
    let config = quire_evals::notes_session_config(config, &plan);
    let runner = super::run::runner(global, config, &RecordingArgs::default())?;
    let runner = Arc::new(quire_evals::notes_runner(runner, paths, &plan));
    let store = runner.store();
    let progress = Arc::new(Printer {
        style: Style::detect(),
        live: !global.quiet && !global.json,
        done: AtomicUsize::new(0),
        total: AtomicUsize::new(0),
        width: suite.tasks.iter().map(|t| t.id.len()).max().unwrap_or(8) + 3,
        notes: plan.describe(),
    });
    let mut evals = EvalRunner::new(runner, store, evals_dir)
        .with_progress(progress)
        .with_stop(super::ctrl_c_interrupt(
            "interrupting: stopping the running attempts",
        ));
    if let Some(learner) = learner {
        evals = evals.with_learner(Arc::new(learner));
    }
    let end = evals.execute(&run.id, suite, settings).await?;
    let report = RunReport::new(end.run.clone(), end.results.clone());
    if global.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else if end.interrupted {
        let t = &report.totals;
        println!(
            "interrupted: {}/{} attempts done; continue with `quire eval resume {}`",
            t.done, t.attempts, end.run.id
        );
    } else {
        if !global.quiet {
            println!();
        }
        println!("{} · run {}", report.headline(), end.run.id);
        if !global.quiet {
            println!("details: quire eval report {}", end.run.id);
        }
    }
    Ok(if end.interrupted {
        ExitCode::from(130)
    } else {
        ExitCode::SUCCESS
    })
}

/// Live progress lines.
struct Printer {
    style: Style,
    live: bool,
    done: AtomicUsize,
    total: AtomicUsize,
    width: usize,
    /// The run's notes plan, in words.
    notes: String,
}

impl Progress for Printer {
    fn run_started(&self, run: &EvalRunRow, todo: usize, total: usize) {
        self.total.store(total, Ordering::SeqCst);
        self.done.store(total - todo, Ordering::SeqCst);
        if !self.live {
            return;
        }
        let resumed = if todo < total {
            format!(" · resuming: {todo} of {total} attempts to do")
        } else {
            String::new()
        };
        println!(
            "eval run {} · suite {} ({}) · {} attempts · agent {} ({}) · model {} · jobs {} · timeout {}s · {}{resumed}",
            self.style.bold(&run.id),
            run.suite,
            run.split,
            total,
            run.agent,
            short_hash(&run.config_hash),
            run.model,
            run.jobs,
            run.timeout_secs,
            self.notes
        );
    }

    fn attempt_started(&self, task: &str, attempt: u32) {
        if self.live {
            let label = format!("{task}#{attempt}");
            println!(
                "{}",
                self.style
                    .dim(&format!("  start  {label:<width$}", width = self.width))
            );
        }
    }

    fn attempt_finished(&self, r: &EvalResultRow) {
        let done = self.done.fetch_add(1, Ordering::SeqCst) + 1;
        if !self.live {
            return;
        }
        let o = &r.outcome;
        let category = if o.resolved {
            self.style.green(&format!("{:<13}", o.category))
        } else {
            self.style.yellow(&format!("{:<13}", o.category))
        };
        let counts = |p: Option<u32>, f: Option<u32>| match (p, f) {
            (None, None) => "-".to_string(),
            (p, f) => format!("{}/{}", p.unwrap_or(0), p.unwrap_or(0) + f.unwrap_or(0)),
        };
        let error = o
            .error
            .as_deref()
            .filter(|_| !o.resolved)
            .map(|e| format!(" · {}", e.chars().take(120).collect::<String>()))
            .unwrap_or_default();
        println!(
            "  [{done}/{}] {:<width$} {category} visible {:<7} hidden {:<7} · {} tokens · {} turns · {:.1}s{error}",
            self.total.load(Ordering::SeqCst),
            format!("{}#{}", r.task_id, r.attempt),
            counts(o.visible_passed, o.visible_failed),
            counts(o.hidden_passed, o.hidden_failed),
            tokens_text(o.usage.prompt_tokens + o.usage.completion_tokens),
            o.turns,
            o.wall_ms as f64 / 1000.0,
            width = self.width
        );
    }

    fn attempt_interrupted(&self, task: &str, attempt: u32) {
        if self.live {
            println!("  stopped {task}#{attempt} (left to do)");
        }
    }

    fn distill_started(&self, task: &str, attempt: u32) {
        if self.live {
            let label = format!("{task}#{attempt}");
            println!(
                "{}",
                self.style.dim(&format!(
                    "  notes  {label:<width$} distilling",
                    width = self.width
                ))
            );
        }
    }

    fn distill_finished(&self, task: &str, attempt: u32, job: Option<&quire_store::DistillJob>) {
        if !self.live {
            return;
        }
        let label = format!("{task}#{attempt}");
        let Some(job) = job else {
            return;
        };
        let written = job.notes_written.as_array().map_or(0, Vec::len);
        println!(
            "  notes  {label:<width$} {} · {written} note(s) written · {} prompt tokens · {} calls",
            job.status,
            tokens_text(job.usage.prompt_tokens),
            job.calls,
            width = self.width
        );
    }
}

fn report(global: &GlobalArgs, spec: &str, markdown: bool) -> Result<ExitCode> {
    let store = Store::open(&home(global)?.db_path())?;
    let run = find_run(&store, spec)?;
    let results = store.eval_results(&run.id)?;
    let report = RunReport::new(run, results);
    if global.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else if markdown {
        print!("{}", report.render_markdown());
    } else {
        print!("{}", report.render_text());
    }
    Ok(ExitCode::SUCCESS)
}

fn compare(global: &GlobalArgs, a: &str, b: &str, markdown: bool) -> Result<ExitCode> {
    let store = Store::open(&home(global)?.db_path())?;
    let run_a = find_run(&store, a)?;
    let run_b = find_run(&store, b)?;
    if run_a.id == run_b.id {
        bail!("both arguments name run {}", run_a.id);
    }
    let results_a = store.eval_results(&run_a.id)?;
    let results_b = store.eval_results(&run_b.id)?;
    let cmp = Comparison::new(run_a, &results_a, run_b, &results_b);
    if global.json {
        println!("{}", serde_json::to_string_pretty(&cmp)?);
    } else if markdown {
        print!("{}", cmp.render_markdown());
    } else {
        print!("{}", cmp.render_text());
    }
    Ok(ExitCode::SUCCESS)
}

fn list(global: &GlobalArgs, suite: Option<&str>, limit: usize) -> Result<ExitCode> {
    let store = Store::open(&home(global)?.db_path())?;
    let runs = store.list_eval_runs(suite, Some(limit))?;
    if global.json {
        println!("{}", serde_json::to_string_pretty(&runs)?);
        return Ok(ExitCode::SUCCESS);
    }
    if runs.is_empty() {
        println!("no eval runs yet (start one with `quire eval run <suite>`)");
        return Ok(ExitCode::SUCCESS);
    }
    println!(
        "{:<26}  {:<16}  {:<11}  {:<18}  {:<14}  {:<12}  {:<16}  {:>9}  {:>7}  {:>8}",
        "id",
        "started",
        "status",
        "suite/split",
        "agent",
        "config",
        "model",
        "resolved",
        "rate",
        "tokens"
    );
    for s in runs {
        let r = &s.run;
        let rate = if s.done == 0 {
            "-".to_string()
        } else {
            quire_evals::pct(f64::from(s.resolved) / f64::from(s.done))
        };
        let done = if s.done < s.attempts {
            format!("{}/{}*", s.resolved, s.done)
        } else {
            format!("{}/{}", s.resolved, s.done)
        };
        println!(
            "{:<26}  {:<16}  {:<11}  {:<18}  {:<14}  {:<12}  {:<16}  {:>9}  {:>7}  {:>8}",
            r.id,
            r.started_at.format("%Y-%m-%d %H:%M"),
            r.status.as_str(),
            clip(&format!("{}/{}", r.suite, r.split), 18),
            clip(&r.agent, 14),
            short_hash(&r.config_hash),
            clip(&r.model, 16),
            done,
            rate,
            tokens_text(s.prompt_tokens + s.completion_tokens),
        );
    }
    Ok(ExitCode::SUCCESS)
}

fn clip(text: &str, n: usize) -> String {
    text.chars().take(n).collect()
}

/// `quire eval curve`: a learn arm against a baseline arm.
fn curve(
    global: &GlobalArgs,
    learn: &str,
    baseline: &str,
    svg: Option<&Path>,
    markdown: bool,
) -> Result<ExitCode> {
    let home = home(global)?;
    let store = Store::open(&home.db_path())?;
    let arm = |specs: &str| -> Result<Vec<ArmRun>> {
        let mut runs = Vec::new();
        for spec in specs.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            runs.push(ArmRun::load(&store, find_run(&store, spec)?)?);
        }
        if runs.is_empty() {
            bail!("no run named in `{specs}`");
        }
        Ok(runs)
    };
    let learn_runs = arm(learn)?;
    let first = learn_runs[0].run.id.clone();
    let curve = LearningCurve::new(learn_runs, arm(baseline)?).map_err(|e| anyhow!("{e}"))?;
    let svg_path = match svg {
        Some(path) => path.to_path_buf(),
        None => home
            .root()
            .join("evals")
            .join(&first)
            .join(format!("curve-{first}.svg")),
    };
    if let Some(dir) = svg_path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    std::fs::write(&svg_path, curve.render_svg())
        .with_context(|| format!("writing {}", svg_path.display()))?;
    if global.json {
        println!("{}", serde_json::to_string_pretty(&curve)?);
    } else {
        if markdown {
            print!("{}", curve.render_markdown());
        } else {
            print!("{}", curve.render_text());
        }
        if !global.quiet {
            println!("learning curve: {}", svg_path.display());
        }
    }
    Ok(ExitCode::SUCCESS)
}
