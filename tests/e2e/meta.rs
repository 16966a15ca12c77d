//! `quire meta` end to end: the real binary, sessions and evals against the
//! scripted server playing both the agent model and the meta model (see
//! `tests/fixtures/metasuite_script.rs`).

use std::path::{Path, PathBuf};

use quire_testkit::ScriptedServer;
use serde_json::Value;

use crate::harness::{Env, read, stdout};

#[path = "../fixtures/metasuite_script.rs"]
pub mod script;

/// The suite copy and `agents/mini` (the default agent's files) in the
/// data home, which is the binary's working folder.
fn env() -> (Env, PathBuf) {
    let env = Env::new(
        "metasuite",
        ScriptedServer::start_blocking(script::script()),
    );
    let agent = env.home.path().join("agents/mini");
    for (rel, text) in quire_config::builtin_agent_files() {
        let path = agent.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    (env, agent)
}

fn json(out: &std::process::Output) -> Value {
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}", stdout(out)))
}

#[test]
fn improve_accepts_rejects_refuses_and_reports() {
    let (env, agent) = env();
    let suite = env.ws().display().to_string();
    let out = env.run(&[
        "meta",
        "improve",
        "mini",
        "--suite",
        &suite,
        "--rounds",
        "3",
        "--jobs",
        "2",
        "--timeout",
        "60",
    ]);
    assert!(out.status.success());
    let text = stdout(&out);
    for line in [
        "round 1: g1 accepted — tool:edit_file:error:no_match",
        "round 2: g2 rejected — prompt:workflow: train minibatch",
        "round 3: g3 refused — message:no_tool_call: the edit copies task text",
    ] {
        assert!(text.contains(line), "missing `{line}` in:\n{text}");
    }

    // History: lineage, statuses, figures and costs.
    let rows = json(&env.run(&["--json", "meta", "history", "mini"]));
    let rows = rows.as_array().unwrap();
    assert_eq!(rows.len(), 4);
    let field = |i: usize, k: &str| rows[i][k].clone();
    let statuses: Vec<Value> = (0..4).map(|i| field(i, "status")).collect();
    assert_eq!(statuses, ["accepted", "accepted", "rejected", "refused"]);
    let parents: Vec<Value> = (0..4).map(|i| field(i, "parent")).collect();
    assert_eq!(parents, [Value::Null, 0.into(), 1.into(), 1.into()]);
    assert_eq!(rows[1]["val"]["resolved"], 2);
    assert_eq!(rows[0]["val"]["resolved"], 0);
    assert!(rows[1]["meta_tokens"].as_u64().unwrap() > 0);
    assert!(rows[1]["eval_tokens"].as_u64().unwrap() > 0);
    assert!(
        rows[2]["val"].is_null(),
        "a rejected child never reaches val"
    );
    assert!(
        rows.iter().all(|r| r["test"].is_null()),
        "the loop never runs test"
    );
    let meta = read(&agent.join("generations/2/meta.toml"));
    assert!(meta.contains("status = \"rejected\""), "{meta}");
    assert!(
        meta.contains("meta_calls = 3"),
        "a repair was needed: {meta}"
    );

    let svg = env.home.path().join("chart.svg");
    let out = env.run(&["meta", "history", "mini", "--svg", svg.to_str().unwrap()]);
    let text = stdout(&out);
    assert!(text.contains("val over generations"), "{text}");
    assert!(text.contains("tool:edit_file:error:no_match"), "{text}");
    assert_eq!(read(&svg).matches("<polyline").count(), 2);

    let out = env.run(&["meta", "diff", "mini", "0", "1"]);
    let text = stdout(&out);
    assert!(text.contains("== tool:edit_file:error:no_match"), "{text}");
    assert!(
        text.contains("+Retry with the closest line copied verbatim into `old`."),
        "{text}"
    );
    assert_eq!(text.matches("== ").count(), 1, "{text}");

    // A generation folder is an agent.
    let out = env.run(&["--agent", "agents/mini/generations/1", "config", "check"]);
    assert!(out.status.success());

    // The report evaluates generation 0 and the front on test.
    let out = env.run(&[
        "meta",
        "report",
        "mini",
        "--suite",
        &suite,
        "--repeat",
        "1",
        "--jobs",
        "2",
        "--timeout",
        "60",
    ]);
    assert!(out.status.success());
    assert!(stdout(&out).contains("g0 (A) against g1 (B) on test"));
    let cmp = json(&env.run(&[
        "--json", "meta", "compare", "mini", "0", "1", "--split", "test",
    ]));
    assert_eq!(cmp["gained"].as_array().unwrap().len(), 2, "{cmp}");
    assert_eq!(cmp["lost"].as_array().unwrap().len(), 0);

    let out = env.run(&["meta", "promote", "mini", "1"]);
    assert!(out.status.success());
    assert!(read(&agent.join("tools/edit_file.toml")).contains(script::MARKER));
    assert!(agent.join("generations/3/meta.toml").is_file());
    let out = env.run(&["meta", "promote", "mini", "3"]);
    assert!(
        !out.status.success(),
        "a refused generation is not promoted"
    );
    env.server.assert_clean();
}

#[test]
fn new_writes_an_agent_and_generation_zero() {
    let (env, _) = env();
    let out = env.run(&[
        "meta",
        "new",
        "flaky",
        "--spec",
        "an agent that fixes flaky tests",
        "--yes",
    ]);
    assert!(out.status.success());
    assert!(stdout(&out).contains("Never delete a test."));
    let dir: &Path = &env.home.path().join("agents/flaky");
    let agent = read(&dir.join("agent.toml"));
    assert!(agent.contains("name = \"flaky\""), "{agent}");
    assert!(agent.contains("max_iterations = 20"), "{agent}");
    assert!(read(&dir.join("generations/0/meta.toml")).contains("status = \"accepted\""));
    let out = env.run(&["--agent", "agents/flaky", "config", "check"]);
    assert!(out.status.success());
    env.server.assert_clean();
}
