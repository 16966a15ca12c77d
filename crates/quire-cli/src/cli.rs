use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

/// Quire: a terminal coding agent that works on a copy of your project, shows
/// you the change, and applies it only when you approve and the tests pass.
#[derive(Debug, Parser)]
#[command(
    name = "quire",
    version,
    about = "Quire: a terminal coding agent. It works on a copy of your project, shows you the change as a \
             diff, and applies it only when you approve and your tests pass.",
    long_about = None,
    propagate_version = true
)]
pub struct Cli {
    #[command(flatten)]
    pub global: GlobalArgs,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Args, Clone)]
pub struct GlobalArgs {
    /// Agent to use: a name (agents/<name>, <home>/agents/<name>) or a folder path.
    #[arg(long, global = true, env = "QUIRE_AGENT", default_value = "default")]
    pub agent: String,
    /// Data home (quire.db, notes, sessions). Default: $QUIRE_HOME, else ~/.local/share/quire.
    #[arg(long, global = true, env = "QUIRE_HOME")]
    pub home: Option<PathBuf>,
    /// Override any agent config key, e.g. -c model.temperature=0.2 (repeatable).
    #[arg(short = 'c', long = "config", global = true, value_name = "KEY=VALUE")]
    pub overrides: Vec<String>,
    /// Shorthand for -c model.provider=… (openai | anthropic).
    #[arg(long, global = true, env = "QUIRE_PROVIDER")]
    pub provider: Option<String>,
    /// Shorthand for -c model.model=….
    #[arg(long, global = true, env = "QUIRE_MODEL")]
    pub model: Option<String>,
    /// Shorthand for -c model.base_url=… (e.g. http://localhost:11434/v1 for Ollama).
    #[arg(long, global = true, env = "QUIRE_BASE_URL")]
    pub base_url: Option<String>,
    /// More detail: logs and error cause chains (-vv for debug logs).
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    pub verbose: u8,
    /// Print only results and errors.
    #[arg(short, long, global = true)]
    pub quiet: bool,
    /// Print data as JSON where the output is data.
    #[arg(long, global = true)]
    pub json: bool,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run a task on a workspace: work on a copy, review the change, apply it.
    Run(RunArgs),
    /// Run the bundled example task (a replay of a recorded model; no API key needed).
    Demo(DemoArgs),
    /// Inspect agent configurations.
    #[command(subcommand)]
    Config(ConfigCommand),
    /// Talk to the configured model.
    #[command(subcommand)]
    Models(ModelsCommand),
    /// Browse, export and resume recorded sessions.
    #[command(subcommand)]
    Sessions(SessionsCommand),
    /// Measure an agent: run it over a suite of tasks, judge with hidden tests, report, compare.
    #[command(subcommand)]
    Eval(EvalCommand),
    /// Browse and maintain the notes sessions leave for later sessions; distill sessions into notes.
    Notes(NotesArgs),
    /// The meta-agent: agent generations and a measured improve loop (new, improve, history,
    /// diff, compare, report, promote).
    #[command(subcommand)]
    Meta(MetaCommand),
    /// A local, read-only web viewer over the data home: sessions, notes, eval runs, generations.
    View(ViewArgs),
}

#[derive(Debug, Args)]
pub struct ViewArgs {
    /// Port on 127.0.0.1 (0 picks a free one).
    #[arg(long, default_value_t = 7420)]
    pub port: u16,
    /// Open the URL in the default browser.
    #[arg(long)]
    pub open: bool,
}

#[derive(Debug, Args)]
pub struct RunArgs {
    /// The workspace folder (usually a git repository).
    pub workspace: PathBuf,
    /// The task; default: prompt.txt at the workspace root.
    #[arg(long)]
    pub task: Option<String>,
    /// Test command; default: the agent config's, else metadata.json's test_command.
    #[arg(long)]
    pub test_cmd: Option<String>,
    /// Project name for notes and reports; default: git remote or folder name.
    #[arg(long)]
    pub project: Option<String>,
    /// No notes for this session: none shown, none distilled from it.
    #[arg(long)]
    pub no_notes: bool,
    #[command(flatten)]
    pub review: ReviewArgs,
    #[command(flatten)]
    pub recording: RecordingArgs,
}

#[derive(Debug, Args, Clone, Default)]
pub struct ReviewArgs {
    /// Approve the change without asking.
    #[arg(long, short = 'y')]
    pub yes: bool,
    /// Save the approved patch instead of applying it to the workspace.
    #[arg(long)]
    pub no_apply: bool,
}

#[derive(Debug, Args, Clone, Default)]
pub struct RecordingArgs {
    /// Save every model exchange to this file (JSON lines).
    #[arg(long, value_name = "FILE", conflicts_with = "replay")]
    pub record: Option<PathBuf>,
    /// Serve model answers from a recording instead of calling a model.
    #[arg(long, value_name = "FILE")]
    pub replay: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct DemoArgs {
    /// Folder holding the example task and its recording.
    #[arg(long, default_value = "evals/demo")]
    pub dir: PathBuf,
    /// Call the configured model instead of replaying the recording.
    #[arg(long)]
    pub live: bool,
}

#[derive(Debug, Subcommand)]
pub enum ConfigCommand {
    /// Validate an agent and print its resolved configuration.
    Check {
        /// Agent name or folder (default: --agent).
        agent: Option<String>,
    },
}

#[derive(Debug, Subcommand)]
pub enum ModelsCommand {
    /// Send one tiny request and report latency, model and token usage.
    Ping {
        /// Agent name or folder (default: --agent).
        agent: Option<String>,
    },
}

#[derive(Debug, Subcommand)]
pub enum SessionsCommand {
    /// Recent sessions, newest first.
    List {
        #[arg(long)]
        project: Option<String>,
        #[arg(long)]
        status: Option<String>,
        #[arg(long, default_value_t = 20)]
        limit: usize,
    },
    /// A session's trace, step by step.
    Show {
        /// Session id or a unique prefix.
        id: String,
        /// Show full tool output instead of a preview.
        #[arg(long)]
        full: bool,
    },
    /// A session with all its events as JSON.
    Export { id: String },
    /// Continue an interrupted or killed session.
    Resume {
        id: String,
        #[command(flatten)]
        review: ReviewArgs,
        #[command(flatten)]
        recording: RecordingArgs,
    },
}

#[derive(Debug, Subcommand)]
pub enum EvalCommand {
    /// Validate every task: metadata, visible tests, hidden evaluation failing untouched and
    /// passing with the reference solution.
    Check {
        /// The suite folder (tasks, optionally suite.toml).
        suite: PathBuf,
        /// Only these tasks.
        #[arg(long = "task", value_name = "ID", num_args = 1..)]
        tasks: Vec<String>,
        /// Tasks checked at once (default: the number of CPUs).
        #[arg(long)]
        jobs: Option<usize>,
    },
    /// Run the agent (--agent) over a split of a suite; every attempt is stored.
    Run(EvalRunArgs),
    /// Finish an interrupted or killed run: only attempts not done are run again.
    Resume {
        /// Run id, a unique prefix, or `last`.
        run: String,
        /// Attempts at once (default: the run's).
        #[arg(long)]
        jobs: Option<u32>,
        /// Seconds per attempt (default: the run's).
        #[arg(long, value_name = "SECS")]
        timeout: Option<u64>,
    },
    /// A run's per-task table and totals (resolve rate with a 95% interval, means).
    Report {
        /// Run id, a unique prefix, or `last`.
        run: String,
        /// A Markdown table, for pasting.
        #[arg(long)]
        markdown: bool,
    },
    /// Pair two runs attempt by attempt: flips, resolve-rate difference with a paired
    /// bootstrap interval, token and time differences (B - A).
    Compare {
        /// The baseline run.
        a: String,
        /// The run compared with it.
        b: String,
        #[arg(long)]
        markdown: bool,
    },
    /// A learn run against a baseline, task by task in the learn run's order: tokens, model
    /// calls, wall time and resolved for both arms, what notes and distillation cost,
    /// cumulative savings, the paired difference with a bootstrap interval, and an SVG curve.
    Curve {
        /// The learn run(s): ids or unique prefixes, comma-separated for repeat runs of the arm.
        learn: String,
        /// The baseline run(s) (e.g. `--notes off`), comma-separated likewise.
        baseline: String,
        /// Where to write the SVG learning curve (default: curve-<learn run>.svg in the
        /// learn run's folder under the data home).
        #[arg(long, value_name = "FILE")]
        svg: Option<PathBuf>,
        #[arg(long)]
        markdown: bool,
    },
    /// Past runs, newest first, with agent, config hash, suite, split and headline figures.
    List {
        #[arg(long)]
        suite: Option<String>,
        #[arg(long, default_value_t = 20)]
        limit: usize,
    },
}

#[derive(Debug, Args)]
pub struct EvalRunArgs {
    /// The suite folder (tasks, optionally suite.toml).
    pub suite: PathBuf,
    /// train, val or test (default: test; with --task and no --split, the tasks run from
    /// whichever split lists them).
    #[arg(long)]
    pub split: Option<String>,
    /// Attempts per task.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
    pub repeat: u32,
    /// Attempts at once.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
    pub jobs: u32,
    /// Only these tasks (of --split when given, else of any split).
    #[arg(long = "task", value_name = "ID", num_args = 1..)]
    pub tasks: Vec<String>,
    /// Seconds per attempt; past it the session is interrupted and the attempt is a timeout.
    #[arg(long, default_value_t = 900, value_name = "SECS")]
    pub timeout: u64,
    /// The learning protocol: tasks one after another in the suite's order, each session
    /// distilled into the run's own notes before the next task starts.
    #[arg(long)]
    pub learn: bool,
    /// `off` (none shown, none written; the default without --learn) or
    /// `from=<run|home|path>`: start from a copy of the notes another run learnt, this data
    /// home's notes, or a notes folder (read-only unless --learn).
    #[arg(long, value_name = "off|from=SOURCE")]
    pub notes: Option<String>,
}

#[derive(Debug, Args)]
pub struct NotesArgs {
    /// Browse the notes an eval run learnt (`--learn`, `--notes from=`) instead of this data
    /// home's: a run id, unique prefix or `last`.
    #[arg(long, global = true, value_name = "RUN")]
    pub run: Option<String>,
    #[command(subcommand)]
    pub command: NotesCommand,
}

#[derive(Debug, Subcommand)]
pub enum NotesCommand {
    /// The notes folder as a tree: folders, then each note's id, kind and title.
    Tree,
    /// Notes as a table (active ones; --all adds superseded notes).
    List {
        /// Only this project's notes.
        #[arg(long)]
        project: Option<String>,
        /// insight, hindsight, how-to or architecture.
        #[arg(long)]
        kind: Option<String>,
        /// project or shared.
        #[arg(long)]
        scope: Option<String>,
        /// Include superseded notes.
        #[arg(long)]
        all: bool,
    },
    /// One note, rendered for the terminal (--raw: the file as it is).
    Show {
        /// Note id (or a unique prefix), or its path.
        note: String,
        #[arg(long)]
        raw: bool,
    },
    /// Ranked search with the matching passage of each note.
    Search {
        query: String,
        #[arg(long)]
        project: Option<String>,
        #[arg(long)]
        kind: Option<String>,
        /// Include superseded notes.
        #[arg(long)]
        all: bool,
        #[arg(long, default_value_t = 10)]
        limit: usize,
    },
    /// Write a new note by hand: a valid skeleton at PATH in the notes tree (scope, project and
    /// topic from its folders), opened in $VISUAL or $EDITOR, then checked and indexed.
    New {
        /// Where in the notes tree, e.g. shared/python/decimal-floats.md or
        /// projects/shop/testing/fixtures.md (`.md` is added when missing).
        path: PathBuf,
        /// The note's title (the one field a note must have).
        #[arg(long)]
        title: String,
        /// insight, hindsight, how-to or architecture: the body template.
        #[arg(long, default_value = "insight")]
        kind: String,
        /// Write the skeleton without opening an editor.
        #[arg(long)]
        no_edit: bool,
    },
    /// Open a note in $VISUAL or $EDITOR, then check and re-index it.
    Edit {
        /// Note id (or a unique prefix), or its path.
        note: String,
    },
    /// Delete a note (its file and its index entry).
    Rm {
        /// Note id (or a unique prefix), or its path.
        note: String,
    },
    /// What a session on a task would be shown from the notes: the notes listed after the task
    /// and the code they point to, exactly as the model would read it.
    Preview {
        /// The workspace (the task comes from prompt.txt there unless --task is given).
        workspace: PathBuf,
        #[arg(long)]
        task: Option<String>,
        /// The project whose notes apply (default: the git remote's name, else the folder's).
        #[arg(long)]
        project: Option<String>,
    },
    /// Counts by kind, scope, project and status; broken notes; the index; the job queue.
    Stats,
    /// Rebuild the index from the Markdown files.
    Reindex,
    /// Distill finished sessions into notes (default: every pending job).
    Distill {
        /// Only this session (id or unique prefix).
        #[arg(long, conflicts_with = "pending")]
        session: Option<String>,
        /// Every pending job (and jobs of workers that died).
        #[arg(long)]
        pending: bool,
    },
    /// Keep distilling sessions as they end, until Ctrl-C.
    Watch {
        /// Seconds between looks at the queue.
        #[arg(long, default_value_t = 5)]
        poll: u64,
    },
}

#[derive(Debug, Subcommand)]
pub enum MetaCommand {
    /// Design an agent from a description: the meta model fills a form (tools, test command,
    /// limits, safety constraints, suite), you confirm it, generation 0 is written.
    New(MetaNewArgs),
    /// The measured loop: reflect on train trajectories, propose one edit, keep it only if it
    /// improves the train minibatch and then val. The test split is never used.
    Improve(MetaImproveArgs),
    /// Make a generation the agent's active config (generations/ is kept).
    Promote {
        /// Agent name or folder.
        agent: String,
        generation: u32,
    },
    /// One row per generation: parent, part changed, status, train/val/test, tokens, cost;
    /// with a chart of val resolve rate and tokens.
    History {
        /// Agent name or folder.
        agent: String,
        /// Also write the chart as an SVG file.
        #[arg(long, value_name = "FILE")]
        svg: Option<PathBuf>,
    },
    /// The text diff of every part that differs between two generations.
    Diff { agent: String, a: u32, b: u32 },
    /// Pair two generations' latest runs on a split, task by task, with intervals.
    Compare {
        agent: String,
        a: u32,
        b: u32,
        #[arg(long, default_value = "test")]
        split: String,
        #[arg(long)]
        markdown: bool,
    },
    /// Evaluate generations on the test split (with repeats) and compare each with generation 0.
    Report(MetaReportArgs),
}

#[derive(Debug, Args)]
pub struct MetaNewArgs {
    /// The new agent's name (its folder is agents/<name>).
    pub name: String,
    /// What the agent is for, in words.
    #[arg(long)]
    pub spec: String,
    /// Write it without asking.
    #[arg(long, short = 'y')]
    pub yes: bool,
    /// Where agent folders go (default: ./agents).
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
    /// The meta model (default: the agent's model).
    #[arg(long)]
    pub meta_model: Option<String>,
    /// Evaluate every generation with learn runs (as `eval run --learn`):
    /// train from no notes, val from the notes learnt on train; the
    /// note-taker's tokens count, and the notes parts may be edited.
    #[arg(long)]
    pub learn: bool,
}

#[derive(Debug, Args)]
pub struct MetaImproveArgs {
    /// Agent name or folder (generations go in <folder>/generations).
    pub agent: String,
    /// The suite (needs train and val splits).
    #[arg(long)]
    pub suite: PathBuf,
    #[arg(long, default_value_t = 3)]
    pub rounds: u32,
    /// Stop once the loop's tokens (meta calls and evaluations) reach this.
    #[arg(long, value_name = "T")]
    pub budget_tokens: Option<u64>,
    /// Attempts at once.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
    pub jobs: u32,
    /// Train tasks per minibatch (default: all).
    #[arg(long)]
    pub batch: Option<usize>,
    /// Stop after this many rounds in a row without an accepted child.
    #[arg(long, default_value_t = 3)]
    pub patience: u32,
    /// Words in a row shared with task text that refuse an edit.
    #[arg(long, default_value_t = 8)]
    pub copy_ngram: usize,
    /// Seconds per attempt.
    #[arg(long, default_value_t = 900, value_name = "SECS")]
    pub timeout: u64,
    /// The meta model (default: the agent's model).
    #[arg(long)]
    pub meta_model: Option<String>,
    /// Evaluate every generation with learn runs (as `eval run --learn`):
    /// train from no notes, val from the notes learnt on train; the
    /// note-taker's tokens count, and the notes parts may be edited.
    #[arg(long)]
    pub learn: bool,
}

#[derive(Debug, Args)]
pub struct MetaReportArgs {
    /// Agent name or folder.
    pub agent: String,
    /// The suite (its test split).
    #[arg(long)]
    pub suite: PathBuf,
    /// Generations to evaluate (default: 0 and the Pareto front); 0 is always included.
    #[arg(long = "gen", value_name = "N", num_args = 1..)]
    pub generations: Vec<u32>,
    /// Attempts per task.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..))]
    pub repeat: u32,
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
    pub jobs: u32,
    #[arg(long, default_value_t = 900, value_name = "SECS")]
    pub timeout: u64,
    /// Learn runs on test, from the notes each generation learnt on val
    /// (for generations improved with `--learn`).
    #[arg(long)]
    pub learn: bool,
}

/// Every `-c`/`--config` value on the command line, in order, at any level
/// of subcommands. clap replaces a global option's values given before a
/// subcommand by those given after it (clap-rs/clap#3938), which would
/// silently drop an override; this reads them off the arguments instead.
/// Handles `-c V`, `-cV`, `-c=V`, `--config V`, `--config=V` and short flag
/// clusters ending in `c` (`-vc V`); stops at `--`.
pub fn config_overrides(args: impl IntoIterator<Item = String>) -> Vec<String> {
    /// Short flags that take no value, so `c` after them starts `-c`.
    const SHORT_FLAGS: &[char] = &['v', 'q'];
    let mut out = Vec::new();
    let mut args = args.into_iter();
    while let Some(arg) = args.next() {
        if arg == "--" {
            break;
        }
        if let Some(long) = arg.strip_prefix("--") {
            if long == "config" {
                out.extend(args.next());
            } else if let Some(value) = long.strip_prefix("config=") {
                out.push(value.to_string());
            }
            continue;
        }
        let Some(cluster) = arg.strip_prefix('-') else {
            continue;
        };
        let flags = cluster.trim_start_matches(SHORT_FLAGS);
        if let Some(rest) = flags.strip_prefix('c') {
            let value = rest.strip_prefix('=').unwrap_or(rest);
            if value.is_empty() {
                out.extend(args.next());
            } else {
                out.push(value.to_string());
            }
        }
    }
    out
}

#[cfg(test)]
mod config_override_tests {
    use super::*;
    use clap::Parser;

    fn args(line: &str) -> Vec<String> {
        line.split_whitespace().map(str::to_string).collect()
    }

    #[test]
    fn overrides_before_and_after_a_subcommand_are_all_kept_in_order() {
        let line = "-c a=1 --config b=2 eval -vc c=3 run suite -cd=4 --config=e=5 -c=f=6 -- -c g=7";
        assert_eq!(
            config_overrides(args(line)),
            ["a=1", "b=2", "c=3", "d=4", "e=5", "f=6"]
        );
        // What clap alone gives for the same line drops the first level's:
        // the reason `main` reads them off the arguments.
        let parsed = Cli::try_parse_from(
            std::iter::once("quire".to_string()).chain(args("-c a=1 run ws --task t -c b=2")),
        )
        .unwrap();
        assert_eq!(parsed.global.overrides, ["b=2"]);
        assert_eq!(
            config_overrides(args("-c a=1 run ws --task t -c b=2")),
            ["a=1", "b=2"]
        );
    }

    #[test]
    fn other_options_and_values_are_not_taken_for_overrides() {
        assert!(config_overrides(args("run ws --task config -v --cost")).is_empty());
        assert!(config_overrides(args("-q -vv run ws")).is_empty());
    }
}
