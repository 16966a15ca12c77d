//! `quire meta`: agent generations and the measured improve loop
//! (`quire-meta`), wired to the CLI's config loading and model clients.

use std::io::{BufRead, Write as _};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result, anyhow, bail};
use quire_config::{AgentConfig, AgentSource, locate_agent};
use quire_evals::Suite;
use quire_llm::ModelClient;
use quire_meta::generation::{Lineage, Status};
use quire_meta::history;
use quire_meta::improve::{
    ClientFactory, Evaluate, ImproveOptions, Improver, Say, SuiteEvaluator, evaluate_on_test,
};
use quire_meta::model::{MetaModel, MetaPrompts, MetaUsage};
use quire_store::Store;

use crate::cli::{GlobalArgs, MetaCommand, MetaImproveArgs, MetaNewArgs, MetaReportArgs};
use crate::client::{home, live_client, load_agent, overrides};

pub async fn meta(global: &GlobalArgs, cmd: MetaCommand) -> Result<ExitCode> {
    match cmd {
        MetaCommand::New(args) => new(global, args).await,
        MetaCommand::Improve(args) => improve(global, args).await,
        MetaCommand::Promote { agent, generation } => promote(global, &agent, generation),
        MetaCommand::History { agent, svg } => history_cmd(global, &agent, svg.as_deref()),
        MetaCommand::Diff { agent, a, b } => diff(global, &agent, a, b),
        MetaCommand::Compare {
            agent,
            a,
            b,
            split,
            markdown,
        } => compare(global, &agent, a, b, &split, markdown),
        MetaCommand::Report(args) => report(global, args).await,
    }
}

/// The agent's folder (generations live in it, so the built-in default,
/// which has none, cannot be improved in place).
fn agent_dir(global: &GlobalArgs, agent: &str) -> Result<PathBuf> {
    let mut search = vec![PathBuf::from("agents")];
    if let Ok(home) = home(global) {
        search.push(home.agents_dir());
    }
    match locate_agent(agent, &search)? {
        AgentSource::Dir(dir) => Ok(dir.canonicalize().unwrap_or(dir)),
        AgentSource::Builtin => bail!(
            "`{agent}` is the built-in agent, which has no folder to keep generations in; \
             run from a checkout with agents/{agent}/, or make an agent with `quire meta new`"
        ),
    }
}

fn agent_clients() -> ClientFactory {
    Arc::new(|config: &AgentConfig| live_client(config).map_err(|e| format!("{e:#}")))
}

/// The meta model: the agent's own model settings, `--meta-model` naming
/// another model on the same endpoint.
fn meta_model(
    global: &GlobalArgs,
    agent: &str,
    dir: Option<&Path>,
    model: Option<&str>,
) -> Result<MetaModel> {
    let mut config = load_agent(global, Some(agent))?;
    if let Some(model) = model {
        config.model.model = model.to_string();
    }
    let client: Arc<dyn ModelClient> = live_client(&config)?;
    let mut meta = MetaModel::new(client, MetaPrompts::load(dir)?);
    meta.max_output_tokens = config.model.max_output_tokens;
    Ok(meta)
}

fn sayer(global: &GlobalArgs) -> Say {
    let live = !global.quiet && !global.json;
    Arc::new(move |line: &str| {
        if live {
            println!("{line}");
        }
    })
}

/// Evaluations use the command line's overrides. Each run's notes are its
/// own (`--learn`), or there are none: notes written during one evaluation
/// never leak into the next.
fn evaluator(
    global: &GlobalArgs,
    suite: &Path,
    jobs: u32,
    timeout: u64,
) -> Result<Arc<SuiteEvaluator>> {
    Ok(Arc::new(SuiteEvaluator {
        suite: Suite::load(suite)?,
        home: home(global)?,
        overrides: overrides(global)?,
        clients: agent_clients(),
        jobs: jobs.max(1) as usize,
        timeout: Duration::from_secs(timeout.max(1)),
        stop: super::ctrl_c_interrupt("interrupting: the running evaluation stops"),
    }))
}

async fn new(global: &GlobalArgs, args: MetaNewArgs) -> Result<ExitCode> {
    let dest = args
        .dir
        .clone()
        .unwrap_or_else(|| PathBuf::from("agents"))
        .join(&args.name);
    if dest.exists() {
        bail!("{} exists already; pick another name", dest.display());
    }
    // The base: --agent's folder, or the built-in default written out.
    let mut search = vec![PathBuf::from("agents")];
    if let Ok(home) = home(global) {
        search.push(home.agents_dir());
    }
    let scratch = tempfile::tempdir()?;
    let base = match locate_agent(&global.agent, &search)? {
        AgentSource::Dir(dir) => dir,
        AgentSource::Builtin => {
            for (rel, text) in quire_config::builtin_agent_files() {
                let path = scratch.path().join(rel);
                if let Some(parent) = path.parent() {
                    std::fs::create_dir_all(parent)?;
                }
                std::fs::write(path, text)?;
            }
            scratch.path().to_path_buf()
        }
    };
    let meta = meta_model(
        global,
        &global.agent,
        Some(&base),
        args.meta_model.as_deref(),
    )?;
    let mut usage = MetaUsage::default();
    let spec = quire_meta::synth::synthesize(&meta, &base, &args.spec, &mut usage).await?;
    if global.json {
        println!("{}", serde_json::to_string_pretty(&spec)?);
    } else {
        println!("agent {} from: {}\n", args.name, args.spec);
        print!("{}", spec.render());
    }
    if !args.yes {
        eprint!("write {}? [y/N] ", dest.display());
        std::io::stderr().flush()?;
        let mut answer = String::new();
        std::io::stdin().lock().read_line(&mut answer)?;
        if !matches!(answer.trim(), "y" | "Y" | "yes") {
            eprintln!("nothing written");
            return Ok(ExitCode::from(1));
        }
    }
    quire_meta::synth::write_agent(&base, &dest, &args.name, &spec, &usage)?;
    if !global.json {
        println!(
            "wrote {} and generation 0; improve it with `quire meta improve {} --suite {}`",
            dest.display(),
            dest.display(),
            if spec.suite.is_empty() {
                "<suite>"
            } else {
                &spec.suite
            }
        );
    }
    Ok(ExitCode::SUCCESS)
}

async fn improve(global: &GlobalArgs, args: MetaImproveArgs) -> Result<ExitCode> {
    let dir = agent_dir(global, &args.agent)?;
    let evaluator = evaluator(global, &args.suite, args.jobs, args.timeout)?;
    let meta = meta_model(
        global,
        &dir.display().to_string(),
        Some(&dir),
        args.meta_model.as_deref(),
    )?;
    let improver = Improver {
        lineage: Lineage::new(&dir),
        evaluator,
        meta,
        say: sayer(global),
    };
    let options = ImproveOptions {
        rounds: args.rounds,
        budget_tokens: args.budget_tokens,
        batch: args.batch,
        patience: args.patience,
        copy_ngram: args.copy_ngram,
        learn: args.learn,
        ..ImproveOptions::default()
    };
    let report = improver.run(&options).await?;
    if global.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        println!(
            "stopped: {} · front {:?} · loop cost {} meta tokens, {} eval tokens",
            report.stopped,
            report.front,
            quire_evals::tokens_text(report.meta_tokens),
            quire_evals::tokens_text(report.eval_tokens)
        );
        if !global.quiet {
            println!("details: quire meta history {}", dir.display());
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn promote(global: &GlobalArgs, agent: &str, n: u32) -> Result<ExitCode> {
    let dir = agent_dir(global, agent)?;
    let files = Lineage::new(&dir).promote(n)?;
    if global.json {
        println!("{}", serde_json::json!({ "generation": n, "files": files }));
    } else {
        println!(
            "generation {n} is now the active config of {} ({} files written)",
            dir.display(),
            files.len()
        );
    }
    Ok(ExitCode::SUCCESS)
}

fn history_cmd(global: &GlobalArgs, agent: &str, svg: Option<&Path>) -> Result<ExitCode> {
    let dir = agent_dir(global, agent)?;
    let rows = history::rows(&Lineage::new(&dir))?;
    if rows.is_empty() {
        println!("no generations yet (start with `quire meta improve {agent} --suite <suite>`)");
        return Ok(ExitCode::SUCCESS);
    }
    if let Some(path) = svg {
        std::fs::write(path, history::render_svg(&rows))
            .with_context(|| format!("writing {}", path.display()))?;
    }
    if global.json {
        println!("{}", serde_json::to_string_pretty(&rows)?);
    } else {
        print!("{}", history::render_text(&rows));
        if let Some(path) = svg {
            println!("chart: {}", path.display());
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn diff(global: &GlobalArgs, agent: &str, a: u32, b: u32) -> Result<ExitCode> {
    let dir = agent_dir(global, agent)?;
    let lineage = Lineage::new(&dir);
    for n in [a, b] {
        lineage.load(n)?;
    }
    let text = history::diff(
        &lineage.dir(a),
        &lineage.dir(b),
        &format!("g{a}"),
        &format!("g{b}"),
    )?;
    if text.is_empty() {
        println!("generations {a} and {b} have the same configuration");
    } else {
        print!("{text}");
    }
    Ok(ExitCode::SUCCESS)
}

fn compare(
    global: &GlobalArgs,
    agent: &str,
    a: u32,
    b: u32,
    split: &str,
    markdown: bool,
) -> Result<ExitCode> {
    let dir = agent_dir(global, agent)?;
    let lineage = Lineage::new(&dir);
    let run_of = |n: u32| -> Result<String> {
        let meta = lineage.load(n)?;
        meta.latest(split).map(|r| r.run_id.clone()).ok_or_else(|| {
            anyhow!("generation {n} has no run on {split} (see `quire meta report`)")
        })
    };
    let (run_a, run_b) = (run_of(a)?, run_of(b)?);
    let store = Store::open(&home(global)?.db_path())?;
    let cmp = history::compare_runs(&store, &run_a, &run_b)?;
    if global.json {
        println!("{}", serde_json::to_string_pretty(&cmp)?);
    } else if markdown {
        print!("{}", cmp.render_markdown());
    } else {
        println!("g{a} (A) against g{b} (B) on {split}");
        print!("{}", cmp.render_text());
    }
    Ok(ExitCode::SUCCESS)
}

async fn report(global: &GlobalArgs, args: MetaReportArgs) -> Result<ExitCode> {
    let dir = agent_dir(global, &args.agent)?;
    let lineage = Lineage::new(&dir);
    let all = lineage.all()?;
    if all.is_empty() {
        bail!("{} has no generations yet", dir.display());
    }
    // Default: generation 0 and the accepted generations on the front.
    let mut chosen = if args.generations.is_empty() {
        let mut c = vec![0];
        c.extend(quire_meta::generation::pareto_front(&all));
        c
    } else {
        args.generations.clone()
    };
    if !chosen.contains(&0) {
        chosen.insert(0, 0);
    }
    let mut seen = std::collections::HashSet::new();
    chosen.retain(|n| seen.insert(*n));
    for &n in &chosen {
        let meta = lineage.load(n)?;
        if matches!(meta.status, Status::Refused | Status::Failed) {
            bail!("generation {n} is {}: it was never evaluated", meta.status);
        }
    }
    let evaluator = evaluator(global, &args.suite, args.jobs, args.timeout)?;
    let say = sayer(global);
    let runs = evaluate_on_test(
        &lineage,
        evaluator.as_ref(),
        &chosen,
        args.repeat,
        args.learn,
        &say,
    )
    .await?;
    let store = evaluator.store()?;
    let base = &runs[0].1.run_id;
    let mut comparisons = Vec::new();
    for (n, run) in runs.iter().skip(1) {
        let cmp = history::compare_runs(&store, base, &run.run_id)?;
        if !global.json {
            println!("\ng0 (A) against g{n} (B) on test ×{}:", args.repeat);
            print!("{}", cmp.render_text());
        }
        comparisons.push(serde_json::json!({ "generation": n, "comparison": cmp }));
    }
    if global.json {
        let runs: Vec<_> = runs
            .iter()
            .map(|(n, r)| serde_json::json!({ "generation": n, "run": r }))
            .collect();
        println!(
            "{}",
            serde_json::to_string_pretty(&serde_json::json!({
                "runs": runs,
                "comparisons": comparisons,
            }))?
        );
    } else if comparisons.is_empty() {
        println!("only generation 0 was evaluated; name others with --gen");
    }
    Ok(ExitCode::SUCCESS)
}
