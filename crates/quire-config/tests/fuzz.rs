//! Fuzzing config loading: mutants of `agent.toml` (corpus in
//! `tests/fuzz/agent_toml`) loaded from a copy of the default agent folder.
//! No input panics; every rejection names the file it is about.

use std::path::{Path, PathBuf};

use quire_config::{AgentSource, Loader};

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

#[test]
fn loading_a_mutated_agent_toml_never_panics_and_errors_name_the_file() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let dir = tempfile::tempdir().unwrap();
    let agent: PathBuf = dir.path().join("agent");
    copy_dir(&root.join("agents/default"), &agent);
    let mut loaded = 0;
    quire_testkit::fuzz::run(
        &root.join("tests/fuzz/agent_toml"),
        0x7e57_0003,
        400,
        |input| {
            std::fs::write(agent.join("agent.toml"), input).unwrap();
            match Loader::default().load(&AgentSource::Dir(agent.clone())) {
                Ok(_) => loaded += 1,
                Err(err) => {
                    let message = err.to_string();
                    assert!(
                        message.contains("agent.toml")
                            || message.contains(".md")
                            || message.contains(".toml"),
                        "a rejection names its file: {message}"
                    );
                }
            }
        },
    );
    assert!(loaded > 0, "some mutants still load");
}
