mod config;
mod demo;
mod eval;
mod eval_notes;
mod meta;
mod models;
mod notes;
mod run;
mod sessions;
mod view;

use std::process::ExitCode;

use anyhow::Result;

use crate::cli::{Cli, Command};

pub async fn dispatch(cli: Cli) -> Result<ExitCode> {
    let global = cli.global;
    match cli.command {
        Command::Run(args) => run::run(&global, args).await,
        Command::Demo(args) => demo::demo(&global, args).await,
        Command::Config(cmd) => config::config(&global, cmd).await,
        Command::Models(cmd) => models::models(&global, cmd).await,
        Command::Sessions(cmd) => sessions::sessions(&global, cmd).await,
        Command::Eval(cmd) => eval::eval(&global, cmd).await,
        Command::Notes(args) => notes::notes(&global, args).await,
        Command::Meta(cmd) => meta::meta(&global, cmd).await,
        Command::View(args) => view::view(&global, args).await,
    }
}

/// A stop signal wired to Ctrl-C: the first press triggers a clean stop
/// (`message` says what that means here); a second one exits at once.
pub(crate) fn ctrl_c_interrupt(message: &'static str) -> quire_core::Interrupt {
    let interrupt = quire_core::Interrupt::new();
    let signal = interrupt.clone();
    tokio::spawn(async move {
        if tokio::signal::ctrl_c().await.is_ok() {
            eprintln!("\n{message} (Ctrl-C again to quit at once)");
            signal.trigger();
            if tokio::signal::ctrl_c().await.is_ok() {
                std::process::exit(130);
            }
        }
    });
    interrupt
}
