use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use quire_session::{WorkspaceChoices, WorkspaceInfo};

use crate::cli::{DemoArgs, GlobalArgs, RecordingArgs, ReviewArgs};
use crate::client::{home, load_agent, redactor};

/// Copies the bundled example task into the data home and runs it, applying
/// the change to that copy. By default the model's words come from a
/// recording; tools, tests, the patch and the store are all real.
pub async fn demo(global: &GlobalArgs, args: DemoArgs) -> Result<ExitCode> {
    let task_dir = args.dir.join("task");
    let recording = args.dir.join("recording.jsonl");
    if !task_dir.join("prompt.txt").is_file() {
        bail!(
            "no example task at {} (run from the repository root, or pass --dir)",
            task_dir.display()
        );
    }
    require_pytest()?;
    let home = home(global)?;
    let stamp = chrono::Utc::now().format("%Y%m%d-%H%M%S");
    let target = home.root().join("demo").join(format!("task-{stamp}"));
    copy_tree(&task_dir, &target)
        .with_context(|| format!("copying the example to {}", target.display()))?;
    let recording_args = if args.live {
        RecordingArgs::default()
    } else {
        RecordingArgs {
            record: None,
            replay: Some(recording),
        }
    };
    if !global.quiet {
        if args.live {
            println!("Running the example task live against the configured model.");
        } else {
            println!(
                "This is a REPLAY: the model's answers come from {}; tools, tests, the patch and the store are real.",
                args.dir.join("recording.jsonl").display()
            );
            println!(
                "To run live: set OPENAI_API_KEY (or --provider/--model/--base-url) and run `quire demo --live`."
            );
        }
        println!("Working on a copy of the example at {}\n", target.display());
    }
    // A replay must send exactly the recorded requests: no notes in them.
    let replay_global;
    let global = if args.live {
        global
    } else {
        replay_global = super::run::without_notes(global);
        &replay_global
    };
    let config = load_agent(global, None)?;
    let info = WorkspaceInfo::discover(&target, &demo_choices(), &config.tests.command)?;
    let redactor = redactor(&config);
    let runner = super::run::runner(global, config, &recording_args)?;
    let review = ReviewArgs {
        yes: true,
        no_apply: false,
    };
    let report = runner
        .run(info, super::run::options(global, &redactor, &review))
        .await?;
    Ok(super::run::finish(global, &report))
}

/// The example is a Python project tested with pytest: without it every
/// test run fails and the replay goes off its recording, so say so first.
fn require_pytest() -> Result<()> {
    let found = std::process::Command::new("python3")
        .args(["-c", "import pytest"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status();
    match found {
        Ok(status) if status.success() => Ok(()),
        Ok(_) => bail!(
            "the example's tests run with pytest, which python3 cannot import here: install it \
             (`bash .ci/deps`, or `python3 -m pip install pytest`) and run the demo again"
        ),
        Err(err) => bail!(
            "the example's tests run with python3 and pytest, but python3 could not be started \
             ({err}): install Python 3 and pytest (`bash .ci/deps`) and run the demo again"
        ),
    }
}

/// The demo's sessions are filed under the project `demo`.
fn demo_choices() -> WorkspaceChoices {
    WorkspaceChoices {
        project: Some("demo".into()),
        ..Default::default()
    }
}

fn copy_tree(from: &Path, to: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(to)?;
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let dest: PathBuf = to.join(entry.file_name());
        if entry.file_type()?.is_dir() {
            if entry.file_name() == "__pycache__" || entry.file_name() == ".pytest_cache" {
                continue;
            }
            copy_tree(&entry.path(), &dest)?;
        } else {
            std::fs::copy(entry.path(), dest)?;
        }
    }
    Ok(())
}
