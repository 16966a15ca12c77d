use super::*;
use quire_types::{ToolCall, ToolResultViews, Usage};
use serde_json::json;

pub(crate) const TEMPLATE: &str = "project {project}: {status} ({outcome})\ntests {tests}\nTASK\n{task}\nSTEPS\n{steps}\nNOTES\n{notes}\nDIFF\n{diff}";

fn options() -> DigestOptions {
    let mut redactor = Redactor::new();
    redactor.add_secret("hunter2-very-secret-value");
    DigestOptions {
        template: TEMPLATE.into(),
        edit_tools: vec!["edit_file".into(), "apply_patch".into()],
        redactor,
        limits: DigestLimits::default(),
    }
}

fn ev(kind: EventKind) -> Event {
    Event::now(kind)
}

fn call(id: &str, name: &str, args: serde_json::Value) -> Vec<Event> {
    vec![
        ev(EventKind::ModelResponse {
            iteration: 1,
            content: String::new(),
            tool_calls: vec![ToolCall::new(id, name, args.to_string())],
            usage: Usage::default(),
            duration_ms: 1,
            model: "m".into(),
        }),
        ev(EventKind::ToolCallStarted {
            call_id: id.into(),
            name: name.into(),
            arguments: args.to_string(),
        }),
    ]
}

fn result(id: &str, name: &str, text: &str, is_error: bool) -> Event {
    ev(EventKind::ToolResult {
        call_id: id.into(),
        name: name.into(),
        views: ToolResultViews {
            agent_view: text.into(),
            user_view: text.into(),
        },
        is_error,
        duration_ms: 1,
    })
}

fn test_run(passed: bool, digest: &str) -> Event {
    ev(EventKind::TestRun {
        phase: TestPhase::Agent,
        command: "pytest".into(),
        exit_code: Some(if passed { 0 } else { 1 }),
        passed: Some(1),
        failed: Some(u32::from(!passed)),
        timed_out: false,
        digest: digest.into(),
        output: String::new(),
        duration_ms: 5,
    })
}

/// A session that hits a test failure and an edit error, fixes both,
/// and gets its change applied.
pub(crate) fn session_events() -> Vec<Event> {
    let mut events = vec![
        ev(EventKind::SessionStarted {
            task: "Fix the import error in the tests; token hunter2-very-secret-value".into(),
            workspace: "/ws".into(),
            project: "shop".into(),
            agent: "default".into(),
            config_hash: "h".into(),
            model: "m".into(),
        }),
        ev(EventKind::UserMessage {
            source: MessageSource::Task,
            content: "the task".into(),
        }),
    ];
    events.extend(call("c1", "run_tests", serde_json::json!({})));
    events.push(test_run(
        false,
        "Tests failed (exit code 2).\nE   ModuleNotFoundError: No module named 'src'",
    ));
    events.push(result("c1", "run_tests", "Tests failed", false));
    events.extend(call(
        "c2",
        "edit_file",
        serde_json::json!({"path": "pytest.ini", "old": "x", "new": "[pytest]\npythonpath = .\n"}),
    ));
    events.push(result(
        "c2",
        "edit_file",
        "No match for `old` in pytest.ini",
        true,
    ));
    events.extend(call(
            "c3",
            "edit_file",
            serde_json::json!({"path": "pytest.ini", "old": "[pytest]", "new": "[pytest]\npythonpath = ."}),
        ));
    events.push(result("c3", "edit_file", "Edited pytest.ini", false));
    events.extend(call("c4", "read_note", serde_json::json!({"id": "01NOTE"})));
    events.push(result("c4", "read_note", "# A note", false));
    events.extend(call("c5", "run_tests", serde_json::json!({})));
    events.push(test_run(true, "Tests passed. 3 passed"));
    events.push(result("c5", "run_tests", "Tests passed", false));
    events.extend(call(
        "c6",
        "finish",
        serde_json::json!({"summary": "set pythonpath"}),
    ));
    events.push(result("c6", "finish", "Finished", false));
    events.push(ev(EventKind::Patch {
        diff: "--- a/pytest.ini\n+++ b/pytest.ini\n@@\n+pythonpath = .\n".into(),
        files: vec!["pytest.ini".into()],
    }));
    events.push(ev(EventKind::Approval {
        decision: quire_types::ApprovalDecision::Approved,
        feedback: None,
    }));
    events.push(ev(EventKind::Applied {
        files: vec!["pytest.ini".into()],
    }));
    events.push(ev(EventKind::SessionEnded {
        status: quire_types::SessionStatus::Completed,
        outcome: "applied 1 file(s): set pythonpath".into(),
        usage: Usage::default(),
        iterations: 6,
        tool_calls: 6,
        elapsed_ms: 10,
        cost_usd: 0.0,
    }));
    events
}

#[test]
fn digest_tells_the_story_compactly() {
    let text = digest(&session_events(), &options());
    assert!(
        text.contains("project shop: completed (applied 1 file(s)"),
        "{text}"
    );
    assert!(text.contains("review: approved"), "{text}");
    assert!(text.contains("tests `pytest`"), "{text}");
    assert!(
        text.contains("1. run_tests() → tests failed [fixed by step 3 (passed at step 5)]"),
        "{text}"
    );
    assert!(
        text.contains("   | E   ModuleNotFoundError: No module named 'src'"),
        "{text}"
    );
    let step2 = text.lines().find(|l| l.starts_with("2. ")).unwrap();
    assert!(step2.starts_with("2. edit_file("), "{step2}");
    assert!(
        step2.contains("new=[pytest] pythonpath = .")
            && step2.contains("old=x")
            && step2.contains("path=pytest.ini"),
        "{step2}"
    );
    assert!(
        step2.ends_with(") → error [resolved at step 3]:"),
        "{step2}"
    );
    assert!(text.contains("No match for `old` in pytest.ini"), "{text}");
    assert!(
        text.contains("5. run_tests() → tests passed: Tests passed. 3 passed"),
        "{text}"
    );
    assert!(text.contains("read: 01NOTE"), "{text}");
    assert!(text.contains("```diff\n--- a/pytest.ini"), "{text}");
}

#[test]
fn a_search_shows_its_first_hits_with_the_scope_they_are_in() {
    let mut events = session_events();
    events.extend(call(
        "s1",
        "search",
        serde_json::json!({"pattern": "class seekable"}),
    ));
    events.push(result(
            "s1",
            "search",
            "more_itertools/more.py:2927:class seekable:\nmore_itertools/more.pyi:582:class seekable(Generic[_T]):\n\
             tests/test_more.py:3540 (in SeekableTest.test_peek):        s = seekable(x)\ntests/test_more.py:3600:    seekable\n\
             (showing 4 of 4 matches in 3 files)",
            false,
        ));
    let d = digest(&events, &options());
    assert!(
            d.contains("search(pattern=class seekable) → found:\n     more_itertools/more.py:2927:class seekable:"),
            "{d}"
        );
    assert!(
        d.contains("tests/test_more.py:3540 (in SeekableTest.test_peek):"),
        "{d}"
    );
    assert!(!d.contains("3600"), "three hits only: {d}");
    assert!(d.contains("(+1 more)"), "{d}");
    assert!(!d.contains("showing 4 of 4"), "not a hit: {d}");
}

#[test]
fn a_search_with_after_shows_its_windows_with_their_scope() {
    let mut events = session_events();
    events.extend(call(
        "s1",
        "search",
        serde_json::json!({"pattern": "iequals", "path": "tests", "after": 3}),
    ));
    events.push(result(
        "s1",
        "search",
        "tests/test_more.py:120-123 (in IequalsTests.test_basic)\n120|         self.assertTrue(mi.iequals('a', 'a'))\n121|         x = 1\n\
         (… the block goes on after line 123: read_file tests/test_more.py with offset 124 for the rest)",
        false,
    ));
    let d = digest(&events, &options());
    assert!(
        d.contains("found:\n     tests/test_more.py:120-123 (in IequalsTests.test_basic)"),
        "the window's file, lines and scope: {d}"
    );
    assert!(!d.contains("121|"), "a window's lines are not hits: {d}");
}

#[test]
fn a_session_cut_short_says_which_files_it_edited() {
    let events: Vec<Event> = session_events()
        .into_iter()
        .filter(|e| !matches!(e.kind, EventKind::Patch { .. }))
        .collect();
    let text = digest(&events, &options());
    assert!(
        text.contains("(none proposed: the session ended before finish, after editing pytest.ini)"),
        "{text}"
    );
}

#[test]
fn secrets_are_redacted_from_the_digest() {
    let mut events = session_events();
    events.push(result(
        "c9",
        "x",
        "ghp_abcdefghijklmnopqrstuvwxyz0123",
        true,
    ));
    let text = digest(&events, &options());
    assert!(!text.contains("hunter2-very-secret-value"), "{text}");
    assert!(text.contains("[REDACTED]"), "{text}");
}

#[test]
fn long_errors_and_sessions_are_capped() {
    let mut events = session_events();
    let long = "E".repeat(5_000);
    for i in 0..200 {
        let id = format!("r{i}");
        events.extend(call(
            &id,
            "read_file",
            serde_json::json!({"path": format!("f{i}.py")}),
        ));
        events.push(result(&id, "read_file", "contents", false));
    }
    events.extend(call(
        "bad",
        "apply_patch",
        serde_json::json!({"patch": "x"}),
    ));
    events.push(result("bad", "apply_patch", &long, true));
    let text = digest(&events, &options());
    assert!(text.contains("characters cut"), "long error capped");
    assert!(text.contains("uneventful step(s)"), "middle steps elided");
    assert!(
        text.contains("apply_patch(patch=x) → error [not resolved]"),
        "{text}"
    );
    assert!(text.len() < 20_000, "{}", text.len());
}

#[test]
fn args_are_short() {
    assert_eq!(short_args("{}", 10), "");
    assert_eq!(short_args("{\"path\":\"a.py\"}", 10), "path=a.py");
    assert_eq!(
        short_args("{\"q\":\"aaaaaaaaaaaaaaa\"}", 5),
        "q=aaaaa [… 10 characters cut]"
    );
    assert_eq!(short_args("not json", 20), "not json");
}

#[test]
fn steps_are_grouped_by_the_model_reply_that_made_them() {
    // Two reads in one reply, then an edit in the next: the note-taker
    // must see that the reads were one batch.
    let mut events = vec![ev(EventKind::ModelResponse {
        iteration: 1,
        content: String::new(),
        tool_calls: vec![
            ToolCall::new("a", "read_file", json!({"path": "a.py"}).to_string()),
            ToolCall::new("b", "read_file", json!({"path": "b.py"}).to_string()),
        ],
        usage: Usage::default(),
        duration_ms: 1,
        model: "m".into(),
    })];
    for (id, path) in [("a", "a.py"), ("b", "b.py")] {
        events.push(ev(EventKind::ToolCallStarted {
            call_id: id.into(),
            name: "read_file".into(),
            arguments: json!({ "path": path }).to_string(),
        }));
        events.push(result(id, "read_file", "text", false));
    }
    events.extend(call(
        "c",
        "edit_file",
        json!({"path": "a.py", "old": "x", "new": "y"}),
    ));
    events.push(result("c", "edit_file", "ok", false));
    let text = digest(&events, &options());
    let steps: Vec<&str> = text
        .lines()
        .skip_while(|l| *l != "STEPS")
        .skip(1)
        .take_while(|l| *l != "NOTES")
        .collect();
    assert_eq!(
        steps,
        [
            "model reply 1:",
            "1. read_file(path=a.py)",
            "2. read_file(path=b.py)",
            "model reply 2:",
            "3. edit_file(new=y, old=x, path=a.py)",
        ],
        "{text}"
    );
}

#[test]
fn a_long_diff_keeps_every_file_cut_at_lines() {
    let mut diff = String::new();
    for (name, lines) in [
        ("src/orders.py", 80),
        ("src/invoices.py", 4),
        ("src/reports.py", 60),
    ] {
        diff.push_str(&format!(
            "diff --git a/{name} b/{name}\n--- a/{name}\n+++ b/{name}\n@@ -1,3 +1,3 @@\n"
        ));
        for i in 0..lines {
            diff.push_str(&format!("+line {i} of {name}\n"));
        }
    }
    let capped = super::cap_diff(diff.trim_end(), 1_500);
    assert!(capped.chars().count() <= 1_500 + 200, "{}", capped.len());
    for name in ["src/orders.py", "src/invoices.py", "src/reports.py"] {
        assert!(
            capped.contains(&format!("+++ b/{name}")),
            "{name} kept: {capped}"
        );
    }
    // The short file whole, the long ones cut at a line, saying how much.
    assert!(capped.contains("+line 3 of src/invoices.py"));
    assert!(capped.contains("more lines of this file's diff cut]"));
    assert!(
        capped
            .lines()
            .all(|l| !l.ends_with("of src/ord") && !l.is_empty())
    );
    // Short enough already: unchanged.
    assert_eq!(
        super::cap_diff("diff --git a/x b/x\n+a", 100),
        "diff --git a/x b/x\n+a"
    );
}
