//! Notes in eval runs: `--notes off|from=<run|home>` and `--learn`. Turns
//! the flags into a [`NotesPlan`] and finds a run's notes; the wiring
//! itself (the run's tree, its runner, the note-taker) is quire-evals'.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, anyhow, bail};
use quire_config::AgentConfig;
use quire_evals::{NoteTaker, NotesPlan, note_taker_config, run_notes_dirs};
use quire_notes::NotesPaths;
use quire_session::DataHome;
use quire_store::{EvalRunRow, Store};

use crate::client::{live_client, redactor};

/// The plan the flags ask for. `notes` is `off`, `from=<run|home|path>`,
/// or absent.
pub fn plan(
    home: &DataHome,
    config: &AgentConfig,
    learn: bool,
    notes: Option<&str>,
) -> Result<NotesPlan> {
    let source = match notes.map(str::trim) {
        None => None,
        Some("off") if learn => {
            bail!("--learn writes notes, so it cannot run with --notes off")
        }
        Some("off") => return Ok(NotesPlan::Off),
        Some(spec) => match spec.strip_prefix("from=") {
            Some(source) => Some(resolve_source(home, config, source.trim())?),
            None => bail!("--notes takes `off` or `from=<run|home|path>`, not `{spec}`"),
        },
    };
    let source = source.map(|p| p.display().to_string());
    Ok(match (learn, source) {
        (true, from) => NotesPlan::Learn { from },
        (false, Some(source)) => NotesPlan::From { source },
        (false, None) => NotesPlan::Off,
    })
}

/// A notes tree from `home` (this data home's notes), an eval run id or
/// unique prefix (the notes that run learnt), or a path (a data home, or a
/// notes folder).
fn resolve_source(home: &DataHome, config: &AgentConfig, spec: &str) -> Result<PathBuf> {
    if spec.is_empty() {
        bail!("--notes from= needs a run id, `home` or a path");
    }
    if spec == "home" {
        return Ok(home.notes_paths(config).root);
    }
    let path = Path::new(spec);
    if path.is_dir() {
        let inner = path.join("notes");
        let source = if path.join("quire.db").is_file() && inner.is_dir() {
            inner
        } else {
            path.to_path_buf()
        };
        return source
            .canonicalize()
            .with_context(|| format!("cannot resolve {}", source.display()));
    }
    let store = Store::open(&home.db_path())?;
    let run = store.find_eval_run(spec)?.with_context(|| {
        format!("--notes from={spec}: no eval run, data home or notes folder by that name")
    })?;
    Ok(run_notes(home, &run)?.root)
}

/// A run by id, unique prefix, or `last`.
pub fn find_run(store: &Store, spec: &str) -> Result<EvalRunRow> {
    if spec == "last" || spec == "latest" {
        return store
            .list_eval_runs(None, Some(1))?
            .into_iter()
            .next()
            .map(|s| s.run)
            .ok_or_else(|| anyhow!("no eval runs yet"));
    }
    store
        .find_eval_run(spec)?
        .ok_or_else(|| anyhow!("no eval run matches `{spec}` (see `quire eval list`)"))
}

/// The notes tree an eval run learnt or started from: refused for runs
/// that have none (`--notes off`).
pub fn run_notes(home: &DataHome, run: &EvalRunRow) -> Result<NotesPaths> {
    let (root, index_dir) = run_notes_dirs(&home.root().join("evals").join(&run.id));
    if !root.is_dir() {
        bail!(
            "eval run {} has no notes of its own (only runs with --learn or --notes from= do)",
            run.id
        );
    }
    Ok(NotesPaths { root, index_dir })
}

/// The note-taker of a learn run over `paths`, with `notes.model` if set.
pub fn note_taker(home: &DataHome, config: &AgentConfig, paths: &NotesPaths) -> Result<NoteTaker> {
    let config = note_taker_config(config);
    let redactor = redactor(&config);
    let client = live_client(&config)?;
    Ok(NoteTaker::new(
        &home.db_path(),
        config,
        paths,
        client,
        redactor,
    )?)
}
