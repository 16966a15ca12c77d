//! Fuzzing config loading with proptest: mutants of `agent.toml` (corpus in
//! `tests/fuzz/agent_toml`, see `quire_testkit::fuzz`) loaded from a copy of
//! the default agent folder. No input panics; every rejection names the
//! file it is about; some mutants still load. Failures are kept in the
//! corpus folder's `proptest-regressions.txt` and replayed first.

use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};

use proptest::prelude::*;
use proptest::test_runner::TestRunner;
use quire_config::{AgentSource, Loader};
use quire_testkit::fuzz;

const TARGET: &str = "agent_toml";

/// Each case writes and loads files (about 1 ms), so fewer cases than the
/// parsers; `PROPTEST_CASES` overrides.
const CASES: u32 = 2_000;

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap().flatten() {
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

/// Writes `input` as the agent's `agent.toml` and loads the agent, counting
/// successful loads in `loaded`.
fn check(agent: &Path, input: &str, loaded: &AtomicUsize) -> Result<(), TestCaseError> {
    std::fs::write(agent.join("agent.toml"), input).unwrap();
    match Loader::default().load(&AgentSource::Dir(agent.to_path_buf())) {
        Ok(_) => {
            loaded.fetch_add(1, Ordering::Relaxed);
        }
        Err(err) => {
            let message = err.to_string();
            prop_assert!(
                message.contains("agent.toml")
                    || message.contains(".md")
                    || message.contains(".toml"),
                "a rejection names its file: {}",
                message
            );
        }
    }
    Ok(())
}

#[test]
fn loading_a_mutated_agent_toml_never_panics_and_errors_name_the_file() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let dir = tempfile::tempdir().unwrap();
    let agent = dir.path().join("agent");
    copy_dir(&root.join("agents/default"), &agent);
    let seeds = fuzz::corpus(TARGET);

    let corpus_loaded = AtomicUsize::new(0);
    fuzz::check_corpus(&seeds, |input| {
        check(&agent, input, &corpus_loaded).unwrap_or_else(|e| panic!("{e}"))
    });
    assert!(corpus_loaded.into_inner() > 0, "some corpus file loads");

    // A runner rather than `proptest!`, to count loads across cases.
    let config = fuzz::config(TARGET, CASES);
    let cases = config.cases;
    let mut runner = TestRunner::new(config);
    let loaded = AtomicUsize::new(0);
    let result = runner.run(&fuzz::inputs(&seeds), |input| {
        check(&agent, &input, &loaded)
    });
    if let Err(err) = result {
        panic!("{err}");
    }
    let loaded = loaded.into_inner();
    eprintln!("{loaded} of {cases} mutants loaded");
    // Too few cases (a small PROPTEST_CASES) may all be rejected by chance.
    assert!(cases < 100 || loaded > 0, "some mutants still load");
}
