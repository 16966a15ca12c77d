//! Append throughput of the trajectory store on a file database.
//!
//! Appends 5,000 events with 2–8 KB payloads (model responses, tool results,
//! test runs, user messages, as a real session writes them), each in its own
//! committed transaction with a redactor active, then prints events/second
//! and the database size. Run with `cargo bench -p quire-store`.

use std::time::Instant;

use quire_store::{NewSession, Store};
use quire_types::{
    Event, EventKind, MessageSource, Redactor, TestPhase, ToolCall, ToolResultViews, Usage,
};

const EVENTS: usize = 5_000;
const SESSIONS: usize = 10;

const SOURCE: &str = "fn apply(&mut self, patch: &Patch) -> Result<(), PatchError> {\n    \
    for hunk in &patch.hunks {\n        let start = self.find(&hunk.context)?;\n        \
    self.lines.splice(start..start + hunk.old.len(), hunk.new.iter().cloned());\n    }\n    \
    Ok(())\n}\n// error[E0308]: mismatched types at src/lib.rs:42:17 expected `u64`, found `i32`\n";

/// Small deterministic generator (no external crates in benches).
struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        self.0 >> 33
    }

    fn text(&mut self, min: usize, max: usize) -> String {
        let len = min + (self.next() as usize) % (max - min);
        let mut out = String::with_capacity(len + SOURCE.len());
        while out.len() < len {
            let skip = (self.next() as usize) % 40;
            out.push_str(&SOURCE[skip..]);
            out.push_str(&format!("    // line {}\n", self.next() % 10_000));
        }
        out.truncate(len);
        out
    }
}

fn event(rng: &mut Lcg, i: usize) -> Event {
    let kind = match i % 4 {
        0 => EventKind::ModelResponse {
            iteration: (i / 4) as u32,
            content: rng.text(2_000, 6_000),
            tool_calls: vec![ToolCall::new(
                format!("call_{i}"),
                "edit_file",
                format!(
                    "{{\"path\":\"src/lib.rs\",\"patch\":{:?}}}",
                    rng.text(200, 1_500)
                ),
            )],
            usage: Usage {
                prompt_tokens: 12_000,
                completion_tokens: 600,
                cached_tokens: 9_000,
            },
            duration_ms: 1_800,
            model: "bench-model".into(),
        },
        1 => {
            let text = rng.text(1_000, 4_000);
            EventKind::ToolResult {
                call_id: format!("call_{}", i - 1),
                name: "edit_file".into(),
                views: ToolResultViews {
                    agent_view: text[..text.len() / 2].to_string(),
                    user_view: text,
                },
                is_error: false,
                duration_ms: 12,
            }
        }
        2 => EventKind::TestRun {
            phase: TestPhase::Agent,
            command: "cargo test".into(),
            exit_code: Some(101),
            passed: Some(41),
            failed: Some(1),
            timed_out: false,
            digest: "1 failed: tests::apply_patch".into(),
            output: rng.text(2_000, 8_000),
            duration_ms: 9_400,
        },
        _ => EventKind::UserMessage {
            source: MessageSource::Feedback,
            content: rng.text(2_000, 8_000),
        },
    };
    Event::now(kind)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let path = dir.path().join("quire.db");
    let mut redactor = Redactor::new();
    redactor.add_secret("bench-secret-value-0123456789");
    let store = Store::open(&path)?.with_redactor(redactor.clone());

    let sessions = (0..SESSIONS)
        .map(|n| {
            store.create_session(&NewSession {
                project: "bench".into(),
                task: format!("bench task {n}"),
                ..NewSession::default()
            })
        })
        .collect::<Result<Vec<_>, _>>()?;

    let mut rng = Lcg(0x5eed);
    let events: Vec<Event> = (0..EVENTS).map(|i| event(&mut rng, i)).collect();
    let payload_bytes: usize = events
        .iter()
        .map(|e| serde_json::to_string(&e.kind).map_or(0, |s| s.len()))
        .sum();

    // The share of append time spent serializing and redacting payloads.
    let redact_start = Instant::now();
    for event in &events {
        let mut value = serde_json::to_value(&event.kind)?;
        redactor.redact_json(&mut value);
        std::hint::black_box(serde_json::to_string(&value)?);
    }
    let redact_elapsed = redact_start.elapsed();

    let start = Instant::now();
    for (i, event) in events.iter().enumerate() {
        store.append_event(&sessions[i % SESSIONS], event)?;
    }
    let elapsed = start.elapsed();

    let read_start = Instant::now();
    let mut read = 0;
    for id in &sessions {
        read += store.events(id)?.len();
    }
    let read_elapsed = read_start.elapsed();
    assert_eq!(read, EVENTS);

    let size = |p: &std::path::Path| std::fs::metadata(p).map_or(0, |m| m.len());
    let db = size(&path);
    let wal = size(&path.with_extension("db-wal"));
    let secs = elapsed.as_secs_f64();
    println!(
        "store_throughput: {EVENTS} events over {SESSIONS} sessions, avg payload {} B",
        payload_bytes / EVENTS
    );
    println!(
        "  append: {:.2} s, {:.0} events/s, {:.1} MB/s",
        secs,
        EVENTS as f64 / secs,
        payload_bytes as f64 / secs / 1e6
    );
    println!(
        "  of which encode + redact: {:.2} s",
        redact_elapsed.as_secs_f64()
    );
    println!(
        "  read back: {:.3} s, {:.0} events/s",
        read_elapsed.as_secs_f64(),
        EVENTS as f64 / read_elapsed.as_secs_f64()
    );
    println!(
        "  db size: {:.1} MB (+ {:.1} MB WAL)",
        db as f64 / 1e6,
        wal as f64 / 1e6
    );
    Ok(())
}
