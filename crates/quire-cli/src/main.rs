//! `quire`: a coding agent that gets better the longer it works on a codebase.

mod approve;
mod cli;
mod client;
mod commands;
mod logging;
mod markdown;
mod render;

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let mut cli = cli::Cli::parse();
    // clap keeps only the last level's `-c` values of a global option
    // (`quire -c a=1 run -c b=2` would drop a=1); take them all, in order.
    cli.global.overrides = cli::config_overrides(
        std::env::args_os()
            .skip(1)
            .map(|a| a.to_string_lossy().into_owned()),
    );
    init_tracing(&cli.global);
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(err) => {
            eprintln!("error: cannot start the async runtime: {err}");
            return ExitCode::from(2);
        }
    };
    let verbose = cli.global.verbose > 0;
    match runtime.block_on(commands::dispatch(cli)) {
        Ok(code) => code,
        Err(err) => {
            eprintln!("error: {}", logging::redact(&err.to_string()));
            if verbose {
                for cause in err.chain().skip(1) {
                    eprintln!("  caused by: {}", logging::redact(&cause.to_string()));
                }
            } else if err.chain().nth(1).is_some() {
                eprintln!("  (run with -v for the cause chain)");
            }
            ExitCode::from(1)
        }
    }
}

/// Logs go to stderr, redacted (`logging`): the terminal view is rendered
/// separately from events.
fn init_tracing(global: &cli::GlobalArgs) {
    let default = match (global.quiet, global.verbose) {
        (true, _) => "error",
        (false, 0) => "warn",
        (false, 1) => "info,quire=debug",
        (false, _) => "debug",
    };
    let filter = tracing_subscriber::EnvFilter::try_from_env("QUIRE_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(|| logging::RedactingStderr)
        .with_target(false)
        .try_init();
}
