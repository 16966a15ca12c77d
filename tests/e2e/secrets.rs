//! Secrets never land on disk: a fake model key planted in the environment
//! (the variable named by `model.api_key_env`), a second one named by
//! `notes.secret_env`, and a key-shaped token in a file the agent reads are
//! searched for, byte for byte, in everything Quire writes afterwards: the
//! SQLite files (incl. `-wal`/`-shm`), logs, notes, the index, the
//! recording, the JSON export and the terminal output (with debug logs).

use std::path::{Path, PathBuf};

use quire_testkit::{RecordedRequest, Reply, Script, ScriptedServer, call};
use serde_json::{Value, json};

use crate::harness::{Env, stderr};

/// Not key-shaped: only the exact-value redaction can catch it.
const MODEL_KEY: &str = "plainvalue-QQ-31415926-zebra";
/// Named by `notes.secret_env`.
const OTHER_SECRET: &str = "second-secret-27182818-otter";
/// Key-shaped (an OpenAI project key) and in no environment variable.
const FILE_TOKEN: &str = "sk-proj-Zz9Yy8Xx7Ww6Vv5Uu4Tt3Ss2";
const FIX_OLD: &str = "    return round(price * (100 - percent) / 100, 2)";
const NOTE_TAKER: &str = "You keep the notebook of a coding agent";

fn step(req: &RecordedRequest) -> usize {
    req.messages()
        .iter()
        .filter(|m| m.get("role").and_then(Value::as_str) == Some("tool"))
        .count()
}

/// The agent reads the file holding the token, then "leaks" every secret
/// in its own text and tool arguments, the way a confused model might.
fn script() -> Script {
    Script::from_fn(move |req, _| {
        if req.all_text().contains(NOTE_TAKER) {
            return match step(req) {
                0 => Reply::ToolCalls(vec![call(
                    "note_create",
                    json!({
                        "title": "settings hold the deploy token",
                        "kind": "hindsight",
                        "scope": "project",
                        "topic": "settings",
                        "description": format!("token {FILE_TOKEN} key {MODEL_KEY}"),
                        "body": format!("## Error\n\nnone\n\n## Fix\n\nUse {FILE_TOKEN} and {MODEL_KEY} and {OTHER_SECRET}."),
                        "error_signatures": [format!("bad token {FILE_TOKEN}")],
                        "keywords": ["settings"],
                        "files": ["src/settings.py"],
                        "symbols": ["DEPLOY_TOKEN"],
                    }),
                )]),
                _ => Reply::ToolCalls(vec![call("note_done", json!({"summary": "one note"}))]),
            };
        }
        match step(req) {
            0 => Reply::ToolCalls(vec![call("read_file", json!({"path": "src/settings.py"}))]),
            1 => Reply::TextAndToolCalls(
                format!("The token is {FILE_TOKEN}, my key is {MODEL_KEY}, also {OTHER_SECRET}."),
                vec![call("read_file", json!({"path": "src/pricing.py"}))],
            ),
            2 => Reply::ToolCalls(vec![call(
                "search",
                json!({"pattern": format!("{FILE_TOKEN}|{MODEL_KEY}|{OTHER_SECRET}")}),
            )]),
            3 => Reply::ToolCalls(vec![call(
                "edit_file",
                json!({
                    "path": "src/pricing.py",
                    "old": FIX_OLD,
                    "new": format!("    if percent < 0 or percent > 100:\n        raise ValueError(\"percent out of range\")\n{FIX_OLD}"),
                }),
            )]),
            4 => Reply::ToolCalls(vec![call("run_tests", json!({}))]),
            _ => Reply::ToolCalls(vec![call(
                "finish",
                json!({"summary": format!("range check added; token {FILE_TOKEN} key {MODEL_KEY}")}),
            )]),
        }
    })
}

fn files_under(root: &Path, skip: &[PathBuf], out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(root) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if skip.iter().any(|s| path.starts_with(s)) {
            continue;
        }
        if entry.file_type().is_ok_and(|t| t.is_dir()) {
            files_under(&path, skip, out);
        } else {
            out.push(path);
        }
    }
}

/// Also catches a secret cut short (a truncated preview): its first 16 bytes.
fn contains(haystack: &[u8], needle: &str) -> bool {
    let needle = &needle[..16];
    haystack
        .windows(needle.len())
        .any(|w| w == needle.as_bytes())
}

#[test]
fn planted_secrets_appear_nowhere_quire_writes() {
    let env = Env::new("pricing", ScriptedServer::start_blocking(script()));
    std::fs::write(
        env.ws().join("src/settings.py"),
        format!(
            "DEPLOY_TOKEN = \"{FILE_TOKEN}\"\nMODEL_KEY = \"{MODEL_KEY}\"\nOTHER = \"{OTHER_SECRET}\"\n"
        ),
    )
    .unwrap();
    let recording = env.home.path().join("rec.jsonl");
    let secret_args = [
        "-c",
        r#"model.api_key_env="QUIRE_FAKE_MODEL_KEY""#,
        "-c",
        r#"notes.secret_env=["QUIRE_FAKE_OTHER"]"#,
    ];
    let mut outputs = Vec::new();
    let out = env
        .quire()
        .env("QUIRE_FAKE_MODEL_KEY", MODEL_KEY)
        .env("QUIRE_FAKE_OTHER", OTHER_SECRET)
        .env("QUIRE_LOG", "debug")
        .args(secret_args)
        .args(["run", env.ws().to_str().unwrap(), "--yes", "--no-apply"])
        .args(["--record", recording.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}\n{}",
        stderr(&out),
        crate::harness::stdout(&out)
    );
    outputs.push(out);
    let (row, _) = env.only_session();
    for args in [
        vec!["notes", "distill", "--pending"],
        vec!["sessions", "export", row.id.as_str(), "--json"],
        vec!["sessions", "show", row.id.as_str(), "--full"],
        vec!["sessions", "list"],
    ] {
        let out = env
            .quire()
            .env("QUIRE_FAKE_MODEL_KEY", MODEL_KEY)
            .env("QUIRE_FAKE_OTHER", OTHER_SECRET)
            .env("QUIRE_LOG", "debug")
            .env("QUIRE_LOG", "debug")
            .args(secret_args)
            .args(&args)
            .output()
            .unwrap();
        assert_eq!(
            out.status.code(),
            Some(0),
            "{args:?}: {}\n{}",
            stderr(&out),
            crate::harness::stdout(&out)
        );
        outputs.push(out);
    }
    // The model did see the file (it must, to work on it) and was asked
    // to search for the token: the secrets really went through the run.
    assert!(
        env.server
            .requests()
            .iter()
            .any(|r| r.all_text().contains(FILE_TOKEN))
    );

    // The session copy is the user's own code, which holds the token on
    // purpose; everything else Quire wrote must not.
    let copies: Vec<PathBuf> = std::fs::read_dir(env.home.path().join("sessions"))
        .unwrap()
        .flatten()
        .map(|e| e.path().join("work"))
        .collect();
    let mut files = Vec::new();
    files_under(env.home.path(), &copies, &mut files);
    assert!(files.iter().any(|f| f.ends_with("quire.db")));
    assert!(files.iter().any(|f| f.ends_with("rec.jsonl")));
    assert!(
        files
            .iter()
            .any(|f| f.extension().is_some_and(|e| e == "md")),
        "a note was written: {files:?}"
    );
    let mut leaks = Vec::new();
    for file in &files {
        let bytes = std::fs::read(file).unwrap();
        for secret in [MODEL_KEY, OTHER_SECRET, FILE_TOKEN] {
            if contains(&bytes, secret) {
                leaks.push(format!("{} holds {secret}", file.display()));
            }
        }
    }
    for (i, out) in outputs.iter().enumerate() {
        for secret in [MODEL_KEY, OTHER_SECRET, FILE_TOKEN] {
            if contains(&out.stdout, secret) || contains(&out.stderr, secret) {
                let all = format!(
                    "{}{}",
                    String::from_utf8_lossy(&out.stdout),
                    String::from_utf8_lossy(&out.stderr)
                );
                let line = all.lines().find(|l| l.contains(&secret[..16]));
                leaks.push(format!("output of command {i} holds {secret}: {line:?}"));
            }
        }
    }
    assert!(leaks.is_empty(), "leaks:\n{}", leaks.join("\n"));
}
