//! `quire view` at scale, measured on the real binary.
//!
//! Fills a data home with 10,000 sessions and one session of 1,000 steps
//! (a request, a reply with a tool call, and the tool's two views per step,
//! written through the store as a run would), starts `quire view` on it and
//! prints:
//! - page time (median and worst of several loads, over HTTP) for the first
//!   and a deep page of the 10,000-session list, its JSON, and the
//!   1,000-step trace;
//! - the viewer's resident memory after start and its peak after the loads.
//!
//! Run: `cargo bench -p quire-cli --bench view`.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use chrono::{TimeZone, Utc};
use quire_store::{NewSession, SessionStatus, Store, Totals};
use quire_types::{Event, EventKind, SessionId, ToolCall, ToolResultViews, Usage};

const SESSIONS: usize = 10_000;
const STEPS: u32 = 1_000;
const LOADS: usize = 7;

fn fill(home: &Path) -> SessionId {
    let store = Store::open(&home.join("quire.db")).unwrap();
    let base = Utc.with_ymd_and_hms(2025, 1, 1, 0, 0, 0).unwrap();
    for i in 0..SESSIONS {
        let id = store
            .create_session(&NewSession {
                project: format!("project-{}", i % 20),
                workspace: format!("/src/project-{}", i % 20),
                work_dir: format!("/data/sessions/{i}"),
                task: format!("Fix bug number {i} in the invoice rounding"),
                agent: if i % 3 == 0 {
                    "mini".into()
                } else {
                    "default".into()
                },
                config_hash: "abc123def456".into(),
                model: "bench-model".into(),
                started_at: Some(base + chrono::Duration::seconds(i as i64 * 60)),
                ..NewSession::default()
            })
            .unwrap();
        store
            .finish_session(
                &id,
                SessionStatus::Completed,
                Some("done"),
                &Totals::default(),
            )
            .unwrap();
    }
    let long = store
        .create_session(&NewSession {
            project: "long".into(),
            task: "A very long session".into(),
            agent: "default".into(),
            model: "bench-model".into(),
            ..NewSession::default()
        })
        .unwrap();
    let file = "def f(x):\n    return x + 1\n".repeat(20);
    for step in 1..=STEPS {
        let call_id = format!("c{step}");
        let args = format!(r#"{{"path": "src/module_{step}.py"}}"#);
        for kind in [
            EventKind::ModelRequest {
                iteration: step,
                messages: step as usize * 2,
                tools: 10,
                estimated_tokens: 1_000 + u64::from(step) * 120,
            },
            EventKind::ModelResponse {
                iteration: step,
                content: format!("Reading module {step} <to check> the helper & its callers."),
                tool_calls: vec![ToolCall::new(&call_id, "read_file", &args)],
                usage: Usage {
                    prompt_tokens: 1_000 + u64::from(step) * 120,
                    completion_tokens: 40,
                    cached_tokens: u64::from(step) * 110,
                },
                duration_ms: 900,
                model: "bench-model".into(),
            },
            EventKind::ToolCallStarted {
                call_id: call_id.clone(),
                name: "read_file".into(),
                arguments: args.clone(),
            },
            EventKind::ToolResult {
                call_id: call_id.clone(),
                name: "read_file".into(),
                views: ToolResultViews {
                    agent_view: file.clone(),
                    user_view: file.clone(),
                },
                is_error: false,
                duration_ms: 2,
            },
        ] {
            store.append_event(&long, &Event::now(kind)).unwrap();
        }
    }
    long
}

/// (VmRSS, VmHWM) of a process, in MiB.
fn memory(pid: u32) -> (f64, f64) {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.split_whitespace().next())
            .and_then(|kb| kb.parse::<f64>().ok())
            .map_or(f64::NAN, |kb| kb / 1024.0)
    };
    (field("VmRSS:"), field("VmHWM:"))
}

fn main() {
    let home = tempfile::tempdir().unwrap();
    let started = Instant::now();
    let long = fill(home.path());
    println!(
        "filled a data home with {SESSIONS} sessions and one of {STEPS} steps in {:.1}s",
        started.elapsed().as_secs_f64()
    );
    let mut child = Command::new(env!("CARGO_BIN_EXE_quire"))
        .env("QUIRE_HOME", home.path())
        .args(["view", "--port", "0"])
        .current_dir(home.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    out.read_line(&mut line).unwrap();
    std::thread::spawn(move || std::io::copy(&mut out, &mut std::io::sink()));
    let url = line
        .trim()
        .strip_prefix("quire view: ")
        .unwrap()
        .to_string();
    let (base, token) = url.split_once("/?token=").unwrap();
    let (rss_start, _) = memory(child.id());
    let client = reqwest::blocking::Client::builder()
        .timeout(Duration::from_secs(120))
        .build()
        .unwrap();
    println!(
        "{:<34} {:>10} {:>10} {:>10}",
        "page", "median ms", "worst ms", "KiB"
    );
    for (label, path) in [
        ("session list, first page", "/sessions?".to_string()),
        (
            "session list, page 150 of 200",
            "/sessions?page=150&".to_string(),
        ),
        (
            "session list filtered (project)",
            "/sessions?project=project-7&".to_string(),
        ),
        (
            "session list JSON, 500 rows",
            "/api/sessions?per=500&".to_string(),
        ),
        ("1,000-step session trace", format!("/sessions/{long}?")),
        ("1,000-step session JSON", format!("/api/sessions/{long}?")),
    ] {
        let mut times = Vec::new();
        let mut size = 0;
        for _ in 0..LOADS {
            let t = Instant::now();
            let response = client
                .get(format!("{base}{path}token={token}"))
                .send()
                .unwrap();
            assert!(
                response.status().is_success(),
                "{path}: {}",
                response.status()
            );
            size = response.bytes().unwrap().len();
            times.push(t.elapsed().as_secs_f64() * 1000.0);
        }
        times.sort_by(f64::total_cmp);
        println!(
            "{label:<34} {:>10.1} {:>10.1} {:>10}",
            times[times.len() / 2],
            times[times.len() - 1],
            size / 1024
        );
    }
    let (rss_end, peak) = memory(child.id());
    println!(
        "viewer memory: {rss_start:.1} MiB resident after start, {rss_end:.1} MiB after the loads, {peak:.1} MiB peak"
    );
    let _ = child.kill();
    let _ = child.wait();
}
