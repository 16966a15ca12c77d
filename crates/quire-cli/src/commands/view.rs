//! `quire view`: serves the read-only web viewer over the data home and
//! prints its URL (with the access token) until Ctrl-C.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result};
use quire_view::{ViewConfig, Viewer};

use crate::cli::{GlobalArgs, ViewArgs};
use crate::client::{home, load_agent, redactor};

pub async fn view(global: &GlobalArgs, args: ViewArgs) -> Result<ExitCode> {
    let config = load_agent(global, None)?;
    let home = home(global)?;
    let view = ViewConfig {
        home: home.root().to_path_buf(),
        notes: home.notes_paths(&config),
        agent_dirs: vec![PathBuf::from("agents"), home.agents_dir()],
        redactor: redactor(&config),
    };
    let viewer = Viewer::bind(view, args.port)
        .await
        .with_context(|| format!("starting the viewer on port {}", args.port))?;
    let url = viewer.url();
    println!("quire view: {url}");
    eprintln!("(read-only, 127.0.0.1 only; the token in the URL is required; Ctrl-C stops it)");
    if args.open {
        open_browser(&url);
    }
    viewer
        .serve(async {
            let _ = tokio::signal::ctrl_c().await;
        })
        .await?;
    Ok(ExitCode::SUCCESS)
}

/// Best effort: the URL is printed either way.
fn open_browser(url: &str) {
    let opener = if cfg!(target_os = "macos") {
        "open"
    } else {
        "xdg-open"
    };
    if let Err(err) = std::process::Command::new(opener)
        .arg(url)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
    {
        eprintln!("cannot open a browser ({opener}: {err}); open the URL above");
    }
}
