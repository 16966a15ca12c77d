//! Scripted long sessions through the real runner and HTTP client: each
//! compaction stage and what the next request contains, calls and results
//! paired, the cached prefix kept between compactions, the summary failing,
//! resume after compaction, working memory and the guidance reminders.

mod common;

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use common::*;
use quire_core::Interrupt;
use quire_session::EndReason;
use quire_testkit::{Fault, RecordedRequest, Reply, Script, ScriptedCall, call};
use quire_types::{Event, EventKind, MessageSource};
use serde_json::{Value, json};

const TASK: &str = "Fix the helpers.";
const INDEX_MARKER: &str = "Working memory (read a note";
const SUPERSEDED_MARKER: &str = "the file was read again or edited since";
const FADED_MARKER: &str = "removed to save context";
const SUMMARY_MARKER: &str = "The earlier part of this session was summarised";
const SECTIONS: [&str; 5] = [
    "## Task and constraints",
    "## Decisions made and why",
    "## Progress",
    "## Technical details",
    "## Outstanding items",
];

/// Small budgets so a 30-step session crosses every threshold.
const SMALL_BUDGET: &[&str] = &[
    "context.budget_tokens=4000",
    "context.summary_max_tokens=300",
];

/// A 30-step session over 12 modules: reads, re-reads, searches, edits and
/// test runs, then `finish`.
fn long_session() -> (Vec<(String, String)>, Vec<ScriptedCall>) {
    let files = modules(12, 15);
    let mut steps = Vec::new();
    for n in 0..12 {
        steps.push(read(&format!("src/mod_{n}.py")));
        match n % 4 {
            1 => steps.push(read(&format!("src/mod_{}.py", n - 1))),
            2 => steps.push(search(&format!("mod_{n}_helper_3"))),
            3 => {
                let path = format!("src/mod_{n}.py");
                let old = format!("mod_{n}_helper_1(value)");
                steps.push(edit(&path, &old, &format!("mod_{n}_helper_1(value=0)")));
                steps.push(tests());
            }
            _ => {}
        }
    }
    steps.push(finish());
    (files, steps)
}

fn stages(events: &[Event]) -> Vec<String> {
    compactions(events).into_iter().map(|c| c.0).collect()
}

fn role(message: &Value) -> &str {
    message.get("role").and_then(Value::as_str).unwrap_or("")
}

fn text(message: &Value) -> &str {
    message.get("content").and_then(Value::as_str).unwrap_or("")
}

/// What the model read of each call, from the trajectory.
fn agent_views(events: &[Event]) -> HashMap<String, String> {
    events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::ToolResult { call_id, views, .. } => {
                Some((call_id.clone(), views.agent_view.clone()))
            }
            _ => None,
        })
        .collect()
}

/// The last `turns` assistant turns of a request are exactly as the tools
/// answered them.
fn assert_recent_turns_verbatim(
    request: &RecordedRequest,
    views: &HashMap<String, String>,
    turns: usize,
) {
    let messages = conversation(request, INDEX_MARKER);
    let starts: Vec<usize> = messages
        .iter()
        .enumerate()
        .filter(|(_, m)| role(m) == "assistant")
        .map(|(i, _)| i)
        .collect();
    let Some(&from) = starts.iter().rev().nth(turns - 1).or(starts.first()) else {
        return;
    };
    for message in &messages[from..] {
        if role(message) == "tool" {
            let id = message["tool_call_id"].as_str().unwrap();
            assert_eq!(
                Some(text(message)),
                views.get(id).map(String::as_str),
                "recent result {id} is not verbatim"
            );
        }
    }
}

#[tokio::test]
async fn a_long_session_crosses_every_stage_and_completes() {
    let (files, steps) = long_session();
    let s = Session::start(&files, SMALL_BUDGET, script(steps, Reply::text(SUMMARY)), 1).await;
    let report = s.run(TASK).await;
    assert_eq!(report.reason, EndReason::Applied, "{}", report.outcome);
    s.server.assert_clean();

    let events = s.events(&report);
    let stages_seen = stages(&events);
    for stage in ["supersede", "fade", "summary"] {
        assert!(stages_seen.iter().any(|s| s == stage), "{stages_seen:?}");
    }
    for (stage, before, after) in compactions(&events) {
        assert!(after < before, "{stage}: {before} -> {after}");
    }
    let requests = s.agent_requests();
    let before = stages_before_requests(&events);
    assert_eq!(requests.len(), before.len());
    let views = agent_views(&events);
    let task = text(&requests[0].messages()[1]).to_string();
    assert!(task.contains(TASK));

    for (i, request) in requests.iter().enumerate() {
        let all = request.all_text();
        // The system prompt and the task are never compacted.
        assert_eq!(request.messages()[0], requests[0].messages()[0]);
        assert_eq!(text(&request.messages()[1]), task);
        assert_recent_turns_verbatim(request, &views, 3);
        for stage in &before[i] {
            match stage.as_str() {
                "supersede" => assert!(all.contains(SUPERSEDED_MARKER), "request {i}"),
                "fade" => assert!(all.contains(FADED_MARKER), "request {i}"),
                "summary" => {
                    let summary = text(&request.messages()[2]);
                    assert!(summary.starts_with(SUMMARY_MARKER), "{summary}");
                    for section in SECTIONS {
                        assert!(summary.contains(section), "{section} in {summary}");
                    }
                    // Everything before the recent turns went into the summary.
                    assert_eq!(role(&request.messages()[3]), "assistant");
                }
                other => panic!("unexpected stage {other}"),
            }
        }
        // Between compactions each request extends the previous one byte
        // for byte, so the provider's prompt cache keeps serving it.
        if i > 0 && before[i].is_empty() {
            let previous = conversation(&requests[i - 1], INDEX_MARKER);
            let current = conversation(request, INDEX_MARKER);
            assert_eq!(
                previous[..],
                current[..previous.len()],
                "request {i} rewrote its prefix"
            );
        }
    }

    // The summary call saw the task and the history it replaces, and only that.
    let summary = &s.summary_requests()[0];
    let input = text(&summary.messages()[1]);
    assert!(input.contains(TASK));
    assert!(input.contains("<tool_call name=\"read_file\">"), "{input}");
    assert!(summary.tool_names().is_empty());
    let compacted_summary = events.iter().find_map(|e| match &e.kind {
        EventKind::Compaction {
            summary: Some(text),
            usage,
            ..
        } => Some((text.clone(), *usage)),
        _ => None,
    });
    let (recorded, usage) = compacted_summary.unwrap();
    assert_eq!(recorded, SUMMARY);
    assert!(
        usage.prompt_tokens > 0,
        "the summary call's cost is recorded"
    );
}

#[tokio::test]
async fn every_stage_keeps_the_anthropic_conversation_valid() {
    let (files, steps) = long_session();
    let s = Session::start_with(
        &files,
        SMALL_BUDGET,
        script(steps, Reply::text(SUMMARY)),
        1,
        quire_llm::Provider::Anthropic,
    )
    .await;
    let report = s.run(TASK).await;
    assert_eq!(report.reason, EndReason::Applied, "{}", report.outcome);
    // Roles alternate, every tool_use has its tool_result right after it.
    s.server.assert_clean();
    let stages_seen = stages(&s.events(&report));
    for stage in ["supersede", "fade", "summary"] {
        assert!(stages_seen.iter().any(|s| s == stage), "{stages_seen:?}");
    }
    assert!(!s.summary_requests().is_empty());
}

#[tokio::test]
async fn a_failing_summary_falls_back_to_fading_and_the_session_goes_on() {
    let (files, steps) = long_session();
    // A high minimum gain keeps the normal fade from doing much, so the
    // fallback has old results to fade.
    let s = Session::start(
        &files,
        &[SMALL_BUDGET, &["context.min_gain=0.6"]].concat(),
        script(steps, Reply::Fault(Fault::ServerError)),
        2,
    )
    .await;
    let report = s.run(TASK).await;
    assert_eq!(report.reason, EndReason::Applied, "{}", report.outcome);
    s.server.assert_clean();
    let events = s.events(&report);
    let stages_seen = stages(&events);
    assert!(
        !stages_seen.iter().any(|s| s == "summary"),
        "{stages_seen:?}"
    );
    assert!(
        stages_seen.iter().any(|s| s == "fade_all"),
        "{stages_seen:?}"
    );
    // Tried (twice, by the client's retry), then not again every step.
    let attempts = s.summary_requests().len();
    assert!((2..=4).contains(&attempts), "{attempts} summary requests");
    let errors: Vec<&str> = events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::Error { message } => Some(message.as_str()),
            _ => None,
        })
        .collect();
    assert!(
        errors
            .iter()
            .any(|m| m.starts_with("context summary: the summary call failed")),
        "{errors:?}"
    );
}

#[tokio::test]
async fn resume_continues_from_the_compacted_history() {
    let (files, steps) = long_session();
    let interrupt = Interrupt::new();
    let trigger = interrupt.clone();
    let fired = Arc::new(AtomicBool::new(false));
    let fired_in_script = fired.clone();
    let next = AtomicUsize::new(0);
    // Once a request carries the summary, interrupt the session while the
    // model "thinks" about it.
    let rule = Script::from_fn(move |request, _| {
        if is_summary(request) {
            return Reply::text(SUMMARY);
        }
        let i = next.fetch_add(1, Ordering::SeqCst);
        let reply = Reply::ToolCalls(vec![steps.get(i).cloned().unwrap_or_else(finish)]);
        if request.all_text().contains(SUMMARY_MARKER)
            && !fired_in_script.swap(true, Ordering::SeqCst)
        {
            trigger.trigger();
            return Reply::Fault(Fault::Delay(Duration::from_millis(500), Box::new(reply)));
        }
        reply
    });
    let s = Session::start(&files, SMALL_BUDGET, rule, 1).await;
    let first = s
        .runner
        .run(info(s.ws.path(), TASK), options(interrupt))
        .await
        .unwrap();
    assert_eq!(first.reason, EndReason::Interrupted, "{}", first.outcome);
    assert!(fired.load(Ordering::SeqCst));
    let interrupted_at = s.agent_requests().len() - 1;

    let second = s
        .runner
        .resume(first.id.as_str(), options(Interrupt::new()))
        .await
        .unwrap();
    assert_eq!(second.reason, EndReason::Applied, "{}", second.outcome);
    s.server.assert_clean();

    let requests = s.agent_requests();
    let (cut, resumed) = (&requests[interrupted_at], &requests[interrupted_at + 1]);
    assert!(resumed.all_text().contains(SUMMARY_MARKER));
    assert_eq!(text(&resumed.messages()[2]), text(&cut.messages()[2]));
    // No compaction runs again at resume: the cut request is sent again as it was.
    let events = s.events(&second);
    let before = stages_before_requests(&events);
    assert!(before[interrupted_at + 1].is_empty(), "{before:?}");
    assert_eq!(
        conversation(resumed, INDEX_MARKER),
        conversation(cut, INDEX_MARKER)
    );
}

#[tokio::test]
async fn the_memory_index_goes_last_in_every_request_and_survives_compaction() {
    let (files, mut steps) = long_session();
    steps.insert(
        0,
        call(
            "memory_write",
            json!({"path": "plan.md", "content": "# Plan\n- [x] read the modules\n"}),
        ),
    );
    let s = Session::start(&files, SMALL_BUDGET, script(steps, Reply::text(SUMMARY)), 1).await;
    let report = s.run(TASK).await;
    assert_eq!(report.reason, EndReason::Applied, "{}", report.outcome);
    s.server.assert_clean();
    let events = s.events(&report);
    assert!(stages(&events).iter().any(|s| s == "summary"));

    let note = s
        .home
        .path()
        .join("sessions")
        .join(report.id.as_str())
        .join("memory/plan.md");
    assert_eq!(
        std::fs::read_to_string(note).unwrap(),
        "# Plan\n- [x] read the modules\n"
    );
    let requests = s.agent_requests();
    assert!(!requests[0].all_text().contains(INDEX_MARKER));
    for request in &requests[1..] {
        let last = request.messages().last().unwrap();
        assert_eq!(role(last), "user");
        assert!(text(last).contains(INDEX_MARKER), "{}", text(last));
        assert!(text(last).contains("- plan.md: Plan"), "{}", text(last));
        // Sent with this request only, never part of the conversation.
        let kept = conversation(request, INDEX_MARKER);
        assert!(!kept.iter().any(|m| text(m).contains(INDEX_MARKER)));
    }
    for event in &events {
        if let EventKind::Compaction { messages, .. } = &event.kind {
            assert!(!messages.iter().any(|m| m.text().contains(INDEX_MARKER)));
        }
    }
}

#[tokio::test]
async fn an_open_todo_in_memory_holds_finish_back_once() {
    let steps = vec![
        call(
            "memory_write",
            json!({"path": "todo.md", "content": "- [ ] check the docs\n- [x] fix mod_0"}),
        ),
        read("src/mod_0.py"),
        edit(
            "src/mod_0.py",
            "mod_0_helper_1(value)",
            "mod_0_helper_1(value=0)",
        ),
        tests(),
        finish(),
        finish(),
    ];
    let s = Session::start(&modules(1, 5), &[], script(steps, Reply::text(SUMMARY)), 1).await;
    let report = s.run(TASK).await;
    assert_eq!(report.reason, EndReason::Applied, "{}", report.outcome);
    s.server.assert_clean();
    let requests = s.agent_requests();
    assert_eq!(requests.len(), 6);
    let refused = requests[5].last_tool_result().unwrap();
    assert!(refused.contains("still has open items"), "{refused}");
    assert!(refused.contains("todo.md: check the docs"), "{refused}");
}

#[tokio::test]
async fn a_repeated_call_is_reminded_then_stopped() {
    let steps = vec![read("src/mod_0.py"); 10];
    let s = Session::start(&modules(1, 5), &[], script(steps, Reply::text(SUMMARY)), 1).await;
    let report = s.run(TASK).await;
    assert_eq!(report.reason, EndReason::Stopped, "{}", report.outcome);
    assert!(
        report.outcome.starts_with("loop detected"),
        "{}",
        report.outcome
    );
    s.server.assert_clean();
    // Third identical call: reminded; fourth: reminded (max_fires = 2);
    // fifth: no more; sixth (loop_stop): stopped before another request.
    let requests = s.agent_requests();
    assert_eq!(requests.len(), 6);
    let reminded: Vec<bool> = requests
        .iter()
        .map(|r| {
            let last = r.messages().last().unwrap();
            role(last) == "user" && text(last).contains("with the same arguments")
        })
        .collect();
    assert_eq!(reminded, [false, false, false, true, true, false]);
    let events = s.events(&report);
    let reminders = events
        .iter()
        .filter(
            |e| matches!(&e.kind, EventKind::UserMessage { source, .. } if *source == MessageSource::Reminder),
        )
        .count();
    assert_eq!(reminders, 2);
}

#[tokio::test]
async fn repeated_edit_failures_on_one_file_are_reminded() {
    let bad = || edit("src/mod_0.py", "no such text", "x");
    let steps = vec![
        read("src/mod_0.py"),
        bad(),
        bad(),
        bad(),
        edit(
            "src/mod_0.py",
            "mod_0_helper_1(value)",
            "mod_0_helper_1(value=0)",
        ),
        tests(),
        finish(),
    ];
    let s = Session::start(&modules(1, 5), &[], script(steps, Reply::text(SUMMARY)), 1).await;
    let report = s.run(TASK).await;
    assert_eq!(report.reason, EndReason::Applied, "{}", report.outcome);
    s.server.assert_clean();
    let requests = s.agent_requests();
    let after_third = requests[4].last_user_text().unwrap();
    assert!(
        after_third.contains("Your last 3 edits of `src/mod_0.py` failed"),
        "{after_third}"
    );
    assert!(
        !requests[3]
            .last_user_text()
            .unwrap()
            .contains("edits of `src/mod_0.py` failed")
    );
}

#[tokio::test]
async fn finishing_without_testing_is_reminded_at_most_max_fires_times() {
    let steps = vec![
        read("src/mod_0.py"),
        edit(
            "src/mod_0.py",
            "mod_0_helper_1(value)",
            "mod_0_helper_1(value=0)",
        ),
        finish(),
        finish(),
        finish(),
    ];
    // The finish tool's own check is off, so the reminder is what holds it back.
    let s = Session::start(
        &modules(1, 5),
        &["finish.require_tests_after_edit=false"],
        script(steps, Reply::text(SUMMARY)),
        1,
    )
    .await;
    let report = s.run(TASK).await;
    assert_eq!(report.reason, EndReason::Applied, "{}", report.outcome);
    s.server.assert_clean();
    let requests = s.agent_requests();
    assert_eq!(
        requests.len(),
        5,
        "two refusals (max_fires = 2), then finished"
    );
    for request in &requests[3..] {
        let result = request.last_tool_result().unwrap();
        assert!(
            result.contains("Run `run_tests` before calling `finish`"),
            "{result}"
        );
    }
}

#[tokio::test]
async fn with_compaction_off_requests_only_grow() {
    let (files, steps) = long_session();
    let s = Session::start(
        &files,
        &["context.enabled=false", "context.budget_tokens=4000"],
        script(steps, Reply::text(SUMMARY)),
        1,
    )
    .await;
    let report = s.run(TASK).await;
    assert_eq!(report.reason, EndReason::Applied, "{}", report.outcome);
    let events = s.events(&report);
    assert!(compactions(&events).is_empty());
    assert!(s.summary_requests().is_empty());
    let requests = s.agent_requests();
    for pair in requests.windows(2) {
        let previous = conversation(&pair[0], INDEX_MARKER);
        assert_eq!(
            previous[..],
            conversation(&pair[1], INDEX_MARKER)[..previous.len()]
        );
    }
    // The trajectory records the BPE estimate beside the provider's count.
    let estimates: Vec<u64> = events
        .iter()
        .filter_map(|e| match e.kind {
            EventKind::ModelRequest {
                estimated_tokens, ..
            } => Some(estimated_tokens),
            _ => None,
        })
        .collect();
    assert_eq!(estimates.len(), requests.len());
    assert!(estimates.windows(2).all(|w| w[0] < w[1]));
}

#[tokio::test]
async fn over_the_window_the_oldest_turns_are_trimmed_and_pairs_kept() {
    let (files, steps) = long_session();
    // Only the hard limit is in play: 3500 - 500 output tokens.
    let s = Session::start(
        &files,
        &[
            "context.window_tokens=3500",
            "context.budget_tokens=3500",
            "model.max_output_tokens=500",
            "context.supersede_at=10.0",
            "context.fade_at=10.0",
            "context.summary_at=10.0",
        ],
        script(steps, Reply::text(SUMMARY)),
        1,
    )
    .await;
    let report = s.run(TASK).await;
    assert_eq!(report.reason, EndReason::Applied, "{}", report.outcome);
    s.server.assert_clean();
    let events = s.events(&report);
    let all = compactions(&events);
    assert!(!all.is_empty());
    assert!(
        all.iter()
            .all(|(stage, _, after)| stage == "trim" && *after <= 3000),
        "{all:?}"
    );
    let requests = s.agent_requests();
    for request in &requests {
        assert!(text(&request.messages()[1]).contains(TASK));
    }
}

/// What an OpenAI-compatible server answers to a request over its window.
const OVERFLOW_BODY: &str = r#"{"error":{"message":"This model's maximum context length is 8192 tokens. However, your messages resulted in 9100 tokens.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}"#;

/// Serves `steps` like [`script`], but refuses agent requests number
/// `from..from + count` (0-based) as over the model's window.
fn overflow_script(steps: Vec<ScriptedCall>, from: usize, count: usize) -> Script {
    let requests = AtomicUsize::new(0);
    let served = AtomicUsize::new(0);
    Script::from_fn(move |request, _| {
        if is_summary(request) {
            return Reply::text(SUMMARY);
        }
        let n = requests.fetch_add(1, Ordering::SeqCst);
        if (from..from.saturating_add(count)).contains(&n) {
            return Reply::Fault(Fault::Status(400, OVERFLOW_BODY.to_string()));
        }
        let i = served.fetch_add(1, Ordering::SeqCst);
        Reply::ToolCalls(vec![steps.get(i).cloned().unwrap_or_else(finish)])
    })
}

#[tokio::test]
async fn a_request_over_the_window_is_summarised_and_sent_again() {
    let (files, steps) = long_session();
    // The default budget: the local count never asks for compaction, only
    // the provider's refusal does.
    let s = Session::start(&files, &[], overflow_script(steps, 8, 1), 1).await;
    let report = s.run(TASK).await;
    assert_eq!(report.reason, EndReason::Applied, "{}", report.outcome);
    s.server.assert_clean();
    let events = s.events(&report);
    assert_eq!(stages(&events), vec!["summary".to_string()]);
    assert_eq!(s.summary_requests().len(), 1);
    // The request sent again (the 10th) carries the summary in place of the
    // older history; the refused one did not.
    let requests = s.agent_requests();
    let has_summary = |r: &RecordedRequest| {
        conversation(r, INDEX_MARKER)
            .iter()
            .any(|m| text(m).contains(SUMMARY_MARKER))
    };
    assert!(!has_summary(&requests[8]));
    assert!(has_summary(&requests[9]));
    assert!(
        !events
            .iter()
            .any(|e| matches!(&e.kind, EventKind::Error { .. })),
        "no error recorded"
    );
}

#[tokio::test]
async fn a_request_still_over_the_window_after_compacting_ends_with_the_reason() {
    let (files, steps) = long_session();
    let s = Session::start(&files, &[], overflow_script(steps, 8, usize::MAX), 1).await;
    let report = s.run(TASK).await;
    assert_eq!(report.reason, EndReason::ModelError, "{}", report.outcome);
    assert!(
        report.outcome.contains("context window")
            && report
                .outcome
                .contains("still too long after compacting once"),
        "{}",
        report.outcome
    );
    // One summary, one retry: 8 served, the refused one and its retry.
    assert_eq!(s.summary_requests().len(), 1);
    assert_eq!(s.agent_requests().len(), 10);
}
