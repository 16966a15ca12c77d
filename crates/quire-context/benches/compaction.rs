//! Compaction off versus on, over one fixed 60-step scripted session.
//!
//! The session (many large reads, re-reads, searches, edits and test runs on
//! a 24-module project) runs in-process twice through the real runner, HTTP
//! client and scripted model server: with `context.enabled = false`, then
//! with the default agent config. For each run it prints:
//! - total prompt tokens sent: the server's count (characters / 4 of the
//!   request JSON) and the local o200k count, summary calls included;
//! - the peak request, both ways, against `context.budget_tokens`;
//! - compactions per stage;
//! - cache friendliness: the share of each request that repeats the previous
//!   request's prefix byte for byte (what a provider's prompt cache serves);
//! - the cost of local token counting per step.
//!
//! Targets: peak under the budget; total prompt tokens at least 40% lower.
//!
//! Run: `cargo bench -p quire-context --bench compaction`.

#[path = "../tests/common/mod.rs"]
mod common;

use std::collections::BTreeMap;
use std::time::Instant;

use common::*;
use quire_context::TokenCounter;
use quire_core::rebuild_history;
use quire_testkit::{Reply, ScriptedCall};
use quire_types::{EventKind, Message, ModelRequest};

const STEPS: usize = 60;
const MODULES: usize = 24;

/// A module that reads like real code: docstrings, branches, comments.
fn realistic_module(n: usize) -> String {
    let mut out = format!(
        "\"\"\"Order handling, part {n}: pricing rules, discounts and rounding.\"\"\"\n\nfrom decimal import Decimal, ROUND_HALF_UP\n\n"
    );
    for f in 0..18 {
        out.push_str(&format!(
            "def rule_{n}_{f}(order, customer=None):\n    \"\"\"Apply rule {f} of part {n} to an order and return the new total.\"\"\"\n    total = Decimal(order.subtotal)\n    if customer is not None and customer.tier == \"gold\":\n        # Gold customers get the loyalty rebate before tax.\n        total -= total * Decimal(\"0.0{f}\")\n    elif order.coupon:\n        total -= Decimal(order.coupon.amount)\n    return total.quantize(Decimal(\"0.01\"), rounding=ROUND_HALF_UP)\n\n\n"
        ));
    }
    out
}

fn steps() -> Vec<ScriptedCall> {
    let path = |n: usize| format!("src/part_{}.py", n % MODULES);
    let mut steps = Vec::with_capacity(STEPS);
    let mut i = 0;
    while steps.len() < STEPS - 2 {
        match i % 6 {
            0 | 1 => steps.push(read(&path(i))),
            2 => steps.push(search(&format!("def rule_{}_", i % MODULES))),
            3 => steps.push(read(&path(i - 3))),
            4 => {
                let n = (i - 4) % MODULES;
                let old = format!("def rule_{n}_{}(order, customer=None):", i % 18);
                let new = format!(
                    "def rule_{n}_{}(order, customer=None, *, strict=False):",
                    i % 18
                );
                steps.push(edit(&path(i - 4), &old, &new));
            }
            _ => steps.push(tests()),
        }
        i += 1;
    }
    steps.push(tests());
    steps.push(finish());
    steps
}

struct Figures {
    server_total: u64,
    server_peak: u64,
    local_total: u64,
    local_peak: u64,
    summary_calls: usize,
    summary_tokens: u64,
    stages: BTreeMap<String, usize>,
    cache_share: f64,
    /// Prompt tokens a prefix cache could not serve (server count).
    uncached: f64,
    requests: usize,
    outcome: String,
    history: Vec<Message>,
}

async fn run(label: &str, overrides: &[&str]) -> Figures {
    let files: Vec<(String, String)> = (0..MODULES)
        .map(|n| (format!("src/part_{n}.py"), realistic_module(n)))
        .collect();
    let session = Session::start(&files, overrides, script(steps(), Reply::text(SUMMARY)), 1).await;
    let report = session
        .run("Make every pricing rule accept a keyword-only `strict` flag.")
        .await;
    session.server.assert_clean();
    let events = session.events(&report);
    let mut figures = Figures {
        server_total: 0,
        server_peak: 0,
        local_total: 0,
        local_peak: 0,
        summary_calls: 0,
        summary_tokens: 0,
        stages: BTreeMap::new(),
        cache_share: 0.0,
        uncached: 0.0,
        requests: 0,
        outcome: format!("{:?}: {}", report.reason, report.outcome),
        history: rebuild_history(&events),
    };
    for event in &events {
        match &event.kind {
            EventKind::ModelRequest {
                estimated_tokens, ..
            } => {
                figures.local_total += estimated_tokens;
                figures.local_peak = figures.local_peak.max(*estimated_tokens);
                figures.requests += 1;
            }
            EventKind::ModelResponse { usage, .. } => {
                figures.server_total += usage.prompt_tokens;
                figures.server_peak = figures.server_peak.max(usage.prompt_tokens);
            }
            EventKind::Compaction { stage, usage, .. } => {
                *figures.stages.entry(stage.to_string()).or_default() += 1;
                if usage.prompt_tokens > 0 {
                    figures.summary_calls += 1;
                    figures.summary_tokens += usage.prompt_tokens;
                }
            }
            _ => {}
        }
    }
    let requests = session.agent_requests();
    let prompt_tokens: Vec<u64> = events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::ModelResponse { usage, .. } => Some(usage.prompt_tokens),
            _ => None,
        })
        .collect();
    let (mut shared, mut sent) = (0usize, 0usize);
    figures.uncached = prompt_tokens.first().copied().unwrap_or(0) as f64;
    for (k, pair) in requests.windows(2).enumerate() {
        let (common, len) = shared_prefix(&pair[0], &pair[1]);
        shared += common;
        sent += len;
        let tokens = prompt_tokens.get(k + 1).copied().unwrap_or(0) as f64;
        figures.uncached += tokens * (1.0 - common as f64 / len.max(1) as f64);
    }
    figures.uncached += figures.summary_tokens as f64;
    figures.cache_share = shared as f64 / sent.max(1) as f64;
    println!(
        "{label:>14}: {} model calls, {} prompt tokens (server) / {} (o200k), peak {} / {}, \
         summary calls {} ({} tokens), compactions {:?}, prefix reuse {:.0}% ({:.0} tokens \
         not served from a prefix cache)\n{:>16}{}",
        figures.requests,
        figures.server_total + figures.summary_tokens,
        figures.local_total,
        figures.server_peak,
        figures.local_peak,
        figures.summary_calls,
        figures.summary_tokens,
        figures.stages,
        figures.cache_share * 100.0,
        figures.uncached,
        "",
        figures.outcome,
    );
    figures
}

/// Local counting per step as the session grows, cache warm as in a run.
fn counting_cost(history: &[Message]) -> f64 {
    let counter = TokenCounter::new();
    let started = Instant::now();
    for k in 1..=history.len() {
        let request = ModelRequest {
            messages: history[..k].to_vec(),
            ..ModelRequest::default()
        };
        std::hint::black_box(counter.count_request(&request));
    }
    started.elapsed().as_secs_f64() * 1000.0 / history.len().max(1) as f64
}

fn main() {
    let runtime = tokio::runtime::Runtime::new().expect("a tokio runtime");
    runtime.block_on(async {
        let extra_overrides = std::env::var("QUIRE_BENCH_OVERRIDES").unwrap_or_default();
        let parsed: Vec<&str> = extra_overrides
            .split(',')
            .filter(|o| !o.trim().is_empty())
            .collect();
        let budget = config(&parsed).context.budget_tokens;
        println!("fixed {STEPS}-step session, budget {budget} tokens");
        // Extra `key=value` overrides for both runs, to try other settings:
        // QUIRE_BENCH_OVERRIDES="context.min_gain=0.2,context.budget_tokens=16000".
        let extra = std::env::var("QUIRE_BENCH_OVERRIDES").unwrap_or_default();
        let cap = format!("limits.max_iterations={}", STEPS + 5);
        let mut on_overrides: Vec<&str> = vec![&cap];
        on_overrides.extend(extra.split(',').filter(|o| !o.trim().is_empty()));
        let mut off_overrides = on_overrides.clone();
        off_overrides.push("context.enabled=false");
        let off = run("compaction off", &off_overrides).await;
        let on = run("compaction on", &on_overrides).await;
        let total = |f: &Figures| f.server_total + f.summary_tokens;
        let saved = 1.0 - total(&on) as f64 / total(&off) as f64;
        let saved_local = 1.0 - on.local_total as f64 / off.local_total as f64;
        println!(
            "total prompt tokens: {:.1}% fewer (server count), {:.1}% fewer (o200k)",
            saved * 100.0,
            saved_local * 100.0
        );
        println!(
            "peak request with compaction: {} (server) / {} (o200k) of a {budget} budget",
            on.server_peak, on.local_peak
        );
        println!(
            "local token counting: {:.3} ms per step (each message tokenized once, as in a run; {} messages)",
            counting_cost(&off.history),
            off.history.len()
        );
        let peak_ok = on.server_peak.max(on.local_peak) < budget;
        let saved_ok = saved >= 0.40;
        println!(
            "targets: peak under budget {}; total -40% or better {}",
            if peak_ok { "MET" } else { "MISSED" },
            if saved_ok { "MET" } else { "MISSED" }
        );
    });
}
