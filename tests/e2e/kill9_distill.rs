//! Crash safety: `quire notes distill --pending` killed with SIGKILL at
//! random points, many times. After each kill the database opens, every
//! note file parses (nothing half written, no temp file passing for a
//! note), the index answers (and rebuilds when deleted or corrupted), and
//! when the queue is finally drained every job is done once and no note
//! exists twice.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use quire_store::{DistillStatus, Store};
use quire_testkit::rng::Rng;
use quire_testkit::{Fault, RecordedRequest, Reply, Script, ScriptedServer, call};
use serde_json::{Value, json};

use crate::harness::{Env, copy_dir, quire_in, stderr, stdout};

pub(crate) const NOTE_TAKER: &str = "You keep the notebook of a coding agent";
/// Every session's task names one tag; its note is titled after it.
pub(crate) const TAG_PREFIX: &str = "zq";
const FIX_OLD: &str = "    return round(price * (100 - percent) / 100, 2)";
/// What a distill worker is run with: short leases (a killed worker's job
/// is taken over a second later) and attempts to spare for many kills.
pub(crate) const DISTILL: &[&str] = &[
    "-c",
    "notes.job_lease_secs=1",
    "-c",
    "notes.job_max_attempts=100",
    "notes",
    "distill",
    "--pending",
];

pub(crate) fn is_note_taker(req: &RecordedRequest) -> bool {
    req.all_text().contains(NOTE_TAKER)
}

fn tool_results(req: &RecordedRequest) -> usize {
    req.messages()
        .iter()
        .filter(|m| m.get("role").and_then(Value::as_str) == Some("tool"))
        .count()
}

/// The tag of the conversation: the first `zq…` word of its first user
/// message (the task, or the digest, whose TASK section comes first).
fn tag_of(req: &RecordedRequest) -> String {
    let first = req
        .messages()
        .iter()
        .find(|m| m.get("role").and_then(Value::as_str) == Some("user"))
        .and_then(|m| m.get("content"))
        .map(|c| match c {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        })
        .unwrap_or_default();
    first
        .split(|c: char| !c.is_ascii_alphanumeric())
        .find(|w| w.starts_with(TAG_PREFIX) && w.len() > TAG_PREFIX.len())
        .unwrap_or("zqnone")
        .to_string()
}

pub(crate) fn title(tag: &str) -> String {
    format!("Lesson {tag}")
}

/// A note id (a ULID) in a tool result.
fn id_in(text: &str) -> Option<String> {
    text.split(|c: char| !c.is_ascii_alphanumeric())
        .find(|w| {
            w.len() == 26
                && w.chars()
                    .all(|c| c.is_ascii_digit() || c.is_ascii_uppercase())
        })
        .map(str::to_string)
}

/// The note-taker: search, create the session's note (or learn it exists
/// from a killed attempt), revise it, done. The coding agent: read, fix, test,
/// finish. Every reply is delayed 0–150 ms at random.
pub(crate) fn script(seed: u64) -> Script {
    let rng = Arc::new(Mutex::new(Rng::new(seed)));
    Script::from_fn(move |req, _| {
        let ms = rng.lock().unwrap().below(150) as u64;
        let tag = tag_of(req);
        let reply = if is_note_taker(req) {
            match tool_results(req) {
                0 => Reply::ToolCalls(vec![call("note_search", json!({"query": tag}))]),
                1 => Reply::ToolCalls(vec![call(
                    "note_create",
                    json!({
                        "title": title(&tag),
                        "kind": "insight",
                        "scope": "project",
                        "topic": "kills",
                        "description": format!("what session {tag} taught"),
                        "body": format!("## Lesson\n\nFirst version for {tag}.\n"),
                        "keywords": [tag, "lesson"],
                    }),
                )]),
                // The id from "Created note …" or from the duplicate refusal
                // (an earlier, killed attempt wrote the note already).
                2 => match req.last_tool_result().as_deref().and_then(id_in) {
                    Some(id) => Reply::ToolCalls(vec![call(
                        "note_update",
                        json!({"id": id, "old": "First version", "new": "Revised version"}),
                    )]),
                    None => Reply::ToolCalls(vec![call(
                        "note_done",
                        json!({"summary": "no id to revise"}),
                    )]),
                },
                _ => Reply::ToolCalls(vec![call(
                    "note_done",
                    json!({"summary": format!("one note for {tag}")}),
                )]),
            }
        } else {
            match tool_results(req) {
                0 => Reply::ToolCalls(vec![call("read_file", json!({"path": "src/pricing.py"}))]),
                1 => Reply::ToolCalls(vec![call(
                    "edit_file",
                    json!({"path": "src/pricing.py", "old": FIX_OLD,
                           "new": format!("    if not 0 <= percent <= 100:\n        raise ValueError(percent)\n{FIX_OLD}")}),
                )]),
                2 => Reply::ToolCalls(vec![call("run_tests", json!({}))]),
                _ => Reply::ToolCalls(vec![call(
                    "finish",
                    json!({"summary": format!("range check, {tag}")}),
                )]),
            }
        };
        Reply::Fault(Fault::Delay(Duration::from_millis(ms), Box::new(reply)))
    })
}

/// Ends one session per tag (a fix, its tests, finish; not applied), each
/// leaving a pending distillation job.
pub(crate) fn make_sessions(env: &Env, tags: &[String]) {
    // At once: each session works on its own copy.
    let children: Vec<_> = tags
        .iter()
        .map(|tag| {
            env.quire()
                .args(["run", env.ws().to_str().unwrap(), "--yes", "--no-apply"])
                .args(["--task", &format!("Reject bad discounts ({tag})")])
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for child in children {
        let out = child.wait_with_output().unwrap();
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}\n{}",
            stdout(&out),
            stderr(&out)
        );
    }
    let pending = env
        .store()
        .distill_jobs(Some(DistillStatus::Pending), usize::MAX)
        .unwrap();
    assert_eq!(pending.len(), tags.len());
}

/// Every file under `dir`, relative.
fn files(dir: &Path) -> Vec<PathBuf> {
    fn walk(dir: &Path, root: &Path, out: &mut Vec<PathBuf>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for e in entries.flatten() {
            let p = e.path();
            if p.is_dir() {
                walk(&p, root, out);
            } else {
                out.push(p.strip_prefix(root).unwrap().to_path_buf());
            }
        }
    }
    let mut out = Vec::new();
    walk(dir, dir, &mut out);
    out.sort();
    out
}

fn ok(out: Output, what: &str) -> String {
    assert_eq!(
        out.status.code(),
        Some(0),
        "{what}\nstdout:\n{}\nstderr:\n{}",
        stdout(&out),
        stderr(&out)
    );
    stdout(&out)
}

/// What the tree holds after a crash: each note's title and body.
pub(crate) struct TreeState {
    pub notes: Vec<(String, String)>,
    /// Hidden temp files a killed write left behind.
    pub temps: usize,
}

/// The store opens, the CLI reads it, every note file parses, no temp file
/// looks like a note, and the index finds every note on disk.
pub(crate) fn check_consistent(home: &Path, base_url: &str, label: &str) -> TreeState {
    let store = Store::open(&home.join("quire.db")).unwrap();
    store.distill_jobs(None, usize::MAX).unwrap();
    drop(store);
    let cli = |args: &[&str]| quire_in(home, base_url).args(args).output().unwrap();
    ok(cli(&["sessions", "list"]), label);
    let listed = cli(&["notes", "list", "--all", "--json"]);
    if listed.status.code() != Some(0) {
        // Once more with -v: the failure's cause chain (how a killed
        // writer's leftover delete file was found).
        let again = cli(&["-v", "notes", "list", "--all", "--json"]);
        panic!("{label}: {}\nwith -v: {}", stderr(&listed), stderr(&again));
    }
    assert!(
        !stderr(&listed).contains("broken"),
        "{label}: a broken note: {}",
        stderr(&listed)
    );
    let listed: Value = serde_json::from_str(&ok(listed, label)).unwrap();
    let listed = listed.as_array().unwrap();
    let stats: Value = serde_json::from_str(&ok(cli(&["--json", "notes", "stats"]), label))
        .unwrap_or_else(|e| panic!("{label}: stats not JSON: {e}"));
    assert_eq!(stats["broken"], json!([]), "{label}");

    let root = home.join("notes");
    let mut temps = 0;
    let mut md = 0;
    for rel in files(&root) {
        let name = rel.file_name().unwrap().to_string_lossy().into_owned();
        if name.starts_with('.') {
            // Scans skip hidden files (these are not even `.md`) and sweep
            // them once they are ten minutes old.
            assert!(name.ends_with(".tmp"), "{label}: stray {rel:?}");
            temps += 1;
        } else if name != "README.md" {
            assert!(name.ends_with(".md"), "{label}: stray {rel:?}");
            md += 1;
        }
    }
    assert_eq!(md, listed.len(), "{label}: every note file parses");

    let mut notes = Vec::new();
    for note in listed {
        let title = note["meta"]["title"].as_str().unwrap().to_string();
        let tag = title.trim_start_matches("Lesson ").to_string();
        let hits = cli(&["--json", "notes", "search", &tag]);
        let hits: Value = serde_json::from_str(&ok(hits, label)).unwrap();
        let found = hits
            .as_array()
            .unwrap()
            .iter()
            .any(|h| h["id"] == note["meta"]["id"]);
        assert!(found, "{label}: {title} is on disk but not found: {hits}");
        notes.push((title, note["body"].as_str().unwrap().to_string()));
    }
    TreeState { notes, temps }
}

/// After the queue is drained: every job done, once; one revised note per
/// session.
fn check_drained(home: &Path, base_url: &str, tags: &[String], label: &str) -> TreeState {
    let state = check_consistent(home, base_url, label);
    let store = Store::open(&home.join("quire.db")).unwrap();
    let jobs = store.distill_jobs(None, usize::MAX).unwrap();
    assert_eq!(jobs.len(), tags.len(), "{label}");
    for job in &jobs {
        assert_eq!(job.status, DistillStatus::Done, "{label}: {job:?}");
        assert!(job.finished_at.is_some() && job.attempts >= 1, "{label}");
    }
    let mut titles: BTreeMap<&str, usize> = BTreeMap::new();
    for (t, body) in &state.notes {
        *titles.entry(t).or_default() += 1;
        assert!(body.contains("Revised version"), "{label}: {t}: {body}");
    }
    let expected: BTreeMap<String, usize> = tags.iter().map(|t| (title(t), 1)).collect();
    let titles: BTreeMap<String, usize> = titles
        .into_iter()
        .map(|(t, n)| (t.to_string(), n))
        .collect();
    assert_eq!(
        titles, expected,
        "{label}: one note per session, none twice"
    );
    let again = quire_in(home, base_url).args(DISTILL).output().unwrap();
    assert!(
        ok(again, label).contains("no pending distillation jobs"),
        "{label}: processed once"
    );
    state
}

/// A fresh copy of the template home (database, notes, logs).
fn copy_home(template: &Path) -> tempfile::TempDir {
    let home = tempfile::tempdir().unwrap();
    copy_dir(template, home.path());
    home
}

#[test]
fn kill_9_of_distill_at_random_points_leaves_notes_and_index_consistent() {
    let seed = std::env::var("QUIRE_KILL_SEED")
        .ok()
        .and_then(|s| u64::from_str_radix(s.trim_start_matches("0x"), 16).ok())
        .unwrap_or(0xd157_1119_u64);
    eprintln!("seed {seed:#x} (QUIRE_KILL_SEED=<hex> replays)");
    let mut rng = Rng::new(seed);
    let tags: Vec<String> = ["amber", "birch", "cedar", "dune", "ember"]
        .iter()
        .map(|t| format!("{TAG_PREFIX}{t}"))
        .collect();
    let env = Env::new("pricing", ScriptedServer::start_blocking(script(seed)));
    make_sessions(&env, &tags);
    let template = env.home.path();

    // Reference: one uninterrupted drain of the queue.
    let reference = copy_home(template);
    let url = env.server.openai_base_url();
    let started = Instant::now();
    let out = quire_in(reference.path(), &url)
        .args(DISTILL)
        .output()
        .unwrap();
    let span = started.elapsed();
    ok(out, "reference");
    check_drained(reference.path(), &url, &tags, "reference");
    eprintln!("uninterrupted distill of {} jobs: {span:?}", tags.len());

    let mut home = copy_home(template);
    let mut outcomes: BTreeMap<&str, usize> = BTreeMap::new();
    let (mut kills, mut drained, mut temps) = (0, 0, 0);
    let mut leftover_running = 0;
    let mut round = 0;
    while kills < 10 {
        round += 1;
        assert!(round < 40, "too many rounds without kills");
        let server = ScriptedServer::start_blocking(script(rng.next_u64()));
        let url = server.openai_base_url();
        let mut child = quire_in(home.path(), &url)
            .args(DISTILL)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        // Uniform over this worker's expected life: the whole span for a
        // full queue, a share of it for what is left.
        let open = Store::open(&home.path().join("quire.db"))
            .unwrap()
            .distill_jobs(None, usize::MAX)
            .unwrap()
            .iter()
            .filter(|j| j.status != DistillStatus::Done)
            .count();
        let life = span.as_millis() as usize * open.max(1) / tags.len();
        let at = Duration::from_millis(rng.below(life + 1) as u64);
        std::thread::sleep(at);
        let finished = child.try_wait().unwrap();
        let label = format!("seed {seed:#x} round {round} (kill at {at:?})");
        if finished.is_none() {
            // SIGKILL: no chance to clean up.
            child.kill().unwrap();
            child.wait().unwrap();
            kills += 1;
            let state = check_consistent(home.path(), &url, &label);
            let store = Store::open(&home.path().join("quire.db")).unwrap();
            let jobs = store.distill_jobs(None, usize::MAX).unwrap();
            let running = jobs
                .iter()
                .filter(|j| j.status == DistillStatus::Running)
                .count();
            leftover_running += running;
            assert!(
                jobs.iter().all(|j| j.status != DistillStatus::Failed),
                "{label}: {jobs:?}"
            );
            let done = jobs
                .iter()
                .filter(|j| j.status == DistillStatus::Done)
                .count();
            *outcomes
                .entry(match (done, state.notes.len()) {
                    (0, 0) => "before any note",
                    (0, _) => "notes written, no job done",
                    (d, _) if d == tags.len() => "every job done",
                    _ => "some jobs done",
                })
                .or_default() += 1;
            temps = temps.max(state.temps);
            // Now and then the derived index is lost or damaged: it rebuilds.
            let index = home.path().join("index/notes");
            if kills == 3 {
                std::fs::remove_dir_all(&index).unwrap();
                check_consistent(home.path(), &url, &format!("{label}, index deleted"));
            } else if kills == 6 {
                std::fs::write(index.join("meta.json"), b"{ not json").unwrap();
                check_consistent(home.path(), &url, &format!("{label}, index corrupted"));
            }
            // The killed job's lease runs out; the next worker takes it over.
            std::thread::sleep(Duration::from_millis(1100));
        } else {
            let out = child.wait_with_output().unwrap();
            assert_eq!(out.status.code(), Some(0), "{label}");
        }
        let open = Store::open(&home.path().join("quire.db"))
            .unwrap()
            .distill_jobs(None, usize::MAX)
            .unwrap()
            .iter()
            .any(|j| j.status != DistillStatus::Done);
        if !open {
            check_drained(home.path(), &url, &tags, &label);
            drained += 1;
            home = copy_home(template);
        }
    }
    // The last home is drained to the end by one more worker.
    let server = ScriptedServer::start_blocking(script(rng.next_u64()));
    let url = server.openai_base_url();
    ok(
        quire_in(home.path(), &url).args(DISTILL).output().unwrap(),
        "final drain",
    );
    check_drained(home.path(), &url, &tags, "final drain");
    drained += 1;
    eprintln!(
        "distill: {kills} kills in {round} rounds, {drained} queues drained to the end, \
         {leftover_running} jobs left running by a kill and taken over, \
         at most {temps} temp files left; after each kill: {outcomes:?}"
    );
}
