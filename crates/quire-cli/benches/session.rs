//! Harness overhead of a 50-step session, measured on the real binary.
//!
//! Drives `quire run` on a copy of an `evals/shop` task with the scripted
//! model server answering 50 steps (reads, searches, listings, one edit, a
//! test run, finish), then prints:
//! - harness overhead per step: session wall time minus model calls, tool
//!   calls and the post-apply test run, divided by the steps;
//! - peak RSS of the `quire` process (getrusage of the child);
//! - store throughput: the session's own events appended again into a fresh
//!   database, in events per second.
//!
//! Run: `cargo bench -p quire-cli --bench session`.

use std::path::Path;
use std::process::Command;
use std::time::Instant;

use quire_store::{NewSession, Store};
use quire_testkit::{Reply, Script, ScriptedServer, call};
use quire_types::EventKind;
use serde_json::json;

const STEPS: usize = 50;

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

fn script() -> Vec<Reply> {
    let files = [
        "src/orders.py",
        "src/coupons.py",
        "src/pricing.py",
        "src/cart.py",
        "src/catalog.py",
        "src/inventory.py",
        "src/invoices.py",
        "src/reports.py",
    ];
    let mut replies = Vec::new();
    for i in 0..STEPS - 3 {
        let reply = match i % 3 {
            0 => call(
                "read_file",
                json!({"path": files[i / 3 % files.len()], "offset": 1 + i, "limit": 40}),
            ),
            1 => call(
                "search",
                json!({"pattern": format!("def {}", ["apply", "total", "get", "place", "reserve"][i % 5])}),
            ),
            _ => call("list_files", json!({"path": "src", "depth": 1})),
        };
        replies.push(Reply::ToolCalls(vec![reply]));
    }
    replies.push(Reply::ToolCalls(vec![call(
        "edit_file",
        json!({"path": "src/orders.py", "old": "\"\"\"", "new": "\"\"\"", "bogus": 1}),
    )]));
    replies.push(Reply::ToolCalls(vec![call("run_tests", json!({}))]));
    replies.push(Reply::ToolCalls(vec![call(
        "finish",
        json!({"summary": "bench"}),
    )]));
    replies
}

fn peak_rss_of_children_kb() -> i64 {
    // SAFETY: getrusage only writes into the struct we pass.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut usage) };
    usage.ru_maxrss
}

fn main() {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let tmp = tempfile::tempdir().unwrap();
    let ws = tmp.path().join("ws");
    copy_dir(&repo.join("evals/shop/bugfix-coupon-codes"), &ws);
    let _ = std::fs::remove_dir_all(ws.join("evaluation"));
    let home = tmp.path().join("home");
    let server = ScriptedServer::start_blocking(Script::sequence(script()));

    let started = Instant::now();
    let out = Command::new(env!("CARGO_BIN_EXE_quire"))
        .env("QUIRE_HOME", &home)
        .env_remove("OPENAI_API_KEY")
        .args([
            "--quiet",
            "--base-url",
            &server.openai_base_url(),
            "-c",
            "limits.max_iterations=60",
        ])
        .args(["-c", "finish.require_change=false", "run"])
        .arg(&ws)
        .args(["--yes", "--no-apply"])
        .output()
        .unwrap();
    let wall = started.elapsed();
    assert!(
        out.status.success() || out.status.code() == Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let peak_kb = peak_rss_of_children_kb();

    let store = Store::open(&home.join("quire.db")).unwrap();
    let row = store.list_sessions(&Default::default()).unwrap().remove(0);
    let events = store.events(&row.id).unwrap();
    let (mut model_ms, mut tool_ms, mut test_ms, mut steps) = (0u64, 0u64, 0u64, 0u64);
    for e in &events {
        match &e.event.kind {
            EventKind::ModelResponse { duration_ms, .. } => {
                model_ms += duration_ms;
                steps += 1;
            }
            EventKind::ToolResult { duration_ms, .. } => tool_ms += duration_ms,
            EventKind::TestRun {
                phase, duration_ms, ..
            } if *phase == quire_types::TestPhase::PostApply => test_ms += duration_ms,
            _ => {}
        }
    }
    let session_ms = row.totals.elapsed_ms;
    let overhead_ms = session_ms.saturating_sub(model_ms + tool_ms + test_ms) as f64;

    // Store throughput on these very events, into a fresh file database.
    let fresh = Store::open(&tmp.path().join("bench.db")).unwrap();
    let id = fresh
        .create_session(&NewSession {
            task: "bench".into(),
            ..Default::default()
        })
        .unwrap();
    let rounds = 20;
    let t = Instant::now();
    for _ in 0..rounds {
        for e in &events {
            fresh.append_event(&id, &e.event).unwrap();
        }
    }
    let appended = (events.len() * rounds) as f64;
    let eps = appended / t.elapsed().as_secs_f64();

    println!(
        "session: {} steps, {} events, status {}",
        steps,
        events.len(),
        row.status
    );
    println!(
        "  process wall time     {:>8.1} ms (includes start-up and the copy)",
        wall.as_secs_f64() * 1000.0
    );
    println!("  session time          {:>8} ms", session_ms);
    println!("  model calls           {:>8} ms", model_ms);
    println!("  tools                 {:>8} ms", tool_ms);
    println!(
        "  harness overhead      {:>8.0} ms = {:.2} ms/step (target < 2 ms)",
        overhead_ms,
        overhead_ms / steps.max(1) as f64
    );
    println!(
        "  peak RSS (quire)      {:>8.1} MB (target < 50 MB)",
        peak_kb as f64 / 1024.0
    );
    println!(
        "  store throughput      {:>8.0} events/s ({} appends of this session's events)",
        eps, appended
    );
}
