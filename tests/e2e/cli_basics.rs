use quire_testkit::{Fault, Reply, Script, ScriptedServer};

use crate::harness::{Env, stderr, stdout};

fn env(replies: Vec<Reply>) -> Env {
    Env::new(
        "pricing",
        ScriptedServer::start_blocking(Script::sequence(replies)),
    )
}

#[test]
fn version_and_help_read_well() {
    let env = env(vec![]);
    let out = env.run(&["--version"]);
    assert!(out.status.success());
    assert!(stdout(&out).starts_with("quire "), "{}", stdout(&out));
    let help = stdout(&env.run(&["--help"]));
    // The user reads what Quire is, not the crate's doc comment for developers.
    assert!(
        help.starts_with("Quire: a terminal coding agent."),
        "{help}"
    );
    assert!(!help.contains("argument parsing"), "{help}");
    for word in [
        "run", "config", "models", "sessions", "--agent", "--home", "--json",
    ] {
        assert!(help.contains(word), "help lacks {word}: {help}");
    }
}

#[test]
fn config_check_prints_the_resolved_config_with_overrides() {
    let env = env(vec![]);
    let out = env.run(&[
        "config",
        "check",
        "-c",
        "limits.max_iterations=9",
        "--model",
        "tiny",
    ]);
    assert!(out.status.success());
    let text = stdout(&out);
    assert!(text.contains("max_iterations = 9"), "{text}");
    assert!(text.contains("model = \"tiny\""), "{text}");
    assert!(text.contains(&env.server.openai_base_url()), "{text}");
    assert!(text.trim_end().ends_with("ok"), "{text}");
}

#[test]
fn config_check_json_is_data() {
    let env = env(vec![]);
    let out = env.run(&["config", "check", "--json"]);
    let value: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(value["config"]["name"], "default");
    assert!(value["problems"].as_array().unwrap().is_empty());
    assert!(value["config"]["tools"]["edit_file"]["errors"]["no_match"].is_string());
}

#[test]
fn a_malformed_agent_fails_with_file_line_and_column() {
    let env = env(vec![]);
    let agent = env.home.path().join("broken");
    crate::harness::copy_dir(&crate::harness::fixture("../../agents/default"), &agent);
    let toml = agent.join("agent.toml");
    let text = std::fs::read_to_string(&toml)
        .unwrap()
        .replace("max_iterations = 40", "max_iterations = \"forty\"");
    std::fs::write(&toml, &text).unwrap();
    let line = text.lines().position(|l| l.contains("\"forty\"")).unwrap() + 1;
    let out = env.run(&["config", "check", agent.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(err.contains(&format!("agent.toml:{line}:18:")), "{err}");
    assert!(err.contains("invalid type"), "{err}");
    assert_eq!(
        err.lines().filter(|l| l.starts_with("error:")).count(),
        1,
        "one clear line: {err}"
    );
}

/// A copy of the default agent in the data home, changed by `edit`.
fn custom_agent(env: &Env, edit: impl Fn(&std::path::Path)) -> String {
    let agent = env.home.path().join("custom");
    crate::harness::copy_dir(&crate::harness::fixture("../../agents/default"), &agent);
    edit(&agent);
    agent.to_str().unwrap().to_string()
}

fn replace_in(path: &std::path::Path, from: &str, to: &str) {
    let text = std::fs::read_to_string(path).unwrap();
    assert!(text.contains(from), "{} lacks {from}", path.display());
    std::fs::write(path, text.replace(from, to)).unwrap();
}

#[test]
fn an_agent_lacking_a_tool_error_text_fails_check_and_run_with_file_and_key() {
    let env = env(vec![]);
    let agent = custom_agent(&env, |dir| {
        let file = dir.join("tools/edit_file.toml");
        let text = std::fs::read_to_string(&file).unwrap();
        let kept: Vec<&str> = text
            .lines()
            .filter(|l| !l.starts_with("no_match ="))
            .collect();
        std::fs::write(&file, kept.join("\n")).unwrap();
    });
    let out = env.run(&["config", "check", &agent]);
    assert_eq!(out.status.code(), Some(1));
    let expected = "tools/edit_file.toml: [errors] has no `no_match`";
    assert!(stdout(&out).contains(expected), "{}", stdout(&out));
    // A session with it never starts: no model request is made.
    let ws = env.ws();
    let out = env.run(&["--agent", &agent, "run", ws.to_str().unwrap(), "--yes"]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains(expected), "{}", stderr(&out));
    assert!(env.server.requests().is_empty());
}

#[test]
fn config_check_reports_a_missing_or_repeated_extension() {
    let env = env(vec![]);
    let agent = custom_agent(&env, |dir| {
        replace_in(
            &dir.join("agent.toml"),
            "\"tests\", \"finish\", \"memory\"",
            "\"tests\", \"memory\", \"tests\"",
        );
    });
    let out = env.run(&["config", "check", &agent]);
    assert_eq!(out.status.code(), Some(1));
    let text = stdout(&out);
    assert!(text.contains("extension `finish` is required"), "{text}");
    assert!(text.contains("extension `tests` is listed twice"), "{text}");
}

#[test]
fn unknown_override_and_unknown_agent_are_clear_errors() {
    let env = env(vec![]);
    let out = env.run(&["config", "check", "-c", "model.temprature=1"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("model.temprature") && stderr(&out).contains("temperature"),
        "{}",
        stderr(&out)
    );
    let out = env.run(&["config", "check", "nosuchagent"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("no agent named `nosuchagent`"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn models_ping_reports_latency_model_and_usage() {
    let env = env(vec![Reply::Text("pong".into())]);
    let out = env.run(&["models", "ping", "--json"]);
    assert!(out.status.success());
    let value: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(value["ok"], true);
    assert_eq!(value["reply"], "pong");
    assert_eq!(value["model"], "scripted-model");
    assert!(value["usage"]["prompt_tokens"].as_u64().unwrap() > 0);
    env.server.assert_clean();
}

#[test]
fn models_ping_names_the_key_variable_on_401_but_never_the_key() {
    let server = ScriptedServer::start_blocking(Script::sequence(vec![Reply::Text("pong".into())]))
        .with_api_key("sk-right-key-0000000000000000");
    let env = Env::new("pricing", server);
    let secret = "sk-wrong-key-1234567890abcdefghij";
    let out = env
        .quire()
        .env("OPENAI_API_KEY", secret)
        .args(["models", "ping"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(err.contains("OPENAI_API_KEY"), "{err}");
    assert!(!err.contains("1234567890abcdef"), "key leaked: {err}");
}

#[test]
fn models_ping_reports_a_missing_model() {
    let env = env(vec![Reply::Fault(Fault::Status(404, r#"{"error":{"message":"The model `nope` does not exist","type":"invalid_request_error","code":"model_not_found"}}"#.into()))]);
    let out = env.run(&["models", "ping", "--model", "nope"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).to_lowercase().contains("not found")
            || stderr(&out).contains("does not exist"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn provider_shorthand_switches_endpoint_and_key_variable() {
    let env = env(vec![]);
    let out = env
        .quire_at("unused")
        .env_remove("QUIRE_BASE_URL")
        .args(["config", "check", "--json", "--provider", "anthropic"])
        .output()
        .unwrap();
    // quire_at passes --base-url, which must win over the provider default.
    let value: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(value["config"]["model"]["provider"], "anthropic");
    assert_eq!(value["config"]["model"]["base_url"], "unused");
    assert_eq!(value["config"]["model"]["api_key_env"], "ANTHROPIC_API_KEY");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_quire"))
        .env("QUIRE_HOME", env.home.path())
        .env_remove("QUIRE_BASE_URL")
        .args(["config", "check", "--json", "--provider", "anthropic"])
        .output()
        .unwrap();
    let value: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        value["config"]["model"]["base_url"],
        "https://api.anthropic.com"
    );
}

#[test]
fn the_demo_replays_the_bundled_recording_end_to_end() {
    let env = env(vec![]);
    let demo = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../evals/demo");
    let out = env.run(&["demo", "--dir", demo.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0));
    let text = stdout(&out);
    assert!(text.contains("REPLAY"), "says it is a replay: {text}");
    assert!(
        text.contains("quire demo --live"),
        "says how to run live: {text}"
    );
    assert!(
        env.server.requests().is_empty(),
        "no model call during a replay"
    );
    let (row, _) = {
        let store = quire_store::Store::open(&env.home.path().join("quire.db")).unwrap();
        let rows = store.list_sessions(&Default::default()).unwrap();
        (rows[0].clone(), ())
    };
    assert_eq!(row.status.as_str(), "completed");
    assert_eq!(row.project, "demo");
    let copy = std::fs::read_dir(env.home.path().join("demo"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let fixed = std::fs::read_to_string(copy.join("src/date_range.py")).unwrap();
    assert!(fixed.contains("start <= day <= end"), "{fixed}");
}

#[test]
fn the_demo_without_pytest_says_how_to_get_it_before_doing_anything() {
    let env = env(vec![]);
    // A python3 that cannot import pytest (or anything): first on PATH.
    let bin = env.home.path().join("fake-bin");
    std::fs::create_dir_all(&bin).unwrap();
    let fake = bin.join("python3");
    std::fs::write(&fake, "#!/bin/sh\nexit 1\n").unwrap();
    std::fs::set_permissions(&fake, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let demo = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../evals/demo");
    let out = env
        .quire()
        .env("PATH", path)
        .args(["demo", "--dir", demo.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(
        err.contains("pytest") && err.contains("bash .ci/deps"),
        "{err}"
    );
    assert!(
        !env.home.path().join("demo").exists(),
        "nothing copied, no session"
    );
}
