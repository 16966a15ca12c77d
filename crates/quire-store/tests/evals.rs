//! Eval runs and results through the store's public API.

use quire_store::{
    EvalOutcome, EvalResultStatus, EvalRunStatus, NewEvalRun, NewSession, Store, StoreError,
};
use quire_types::{Redactor, SessionId, Usage};

fn store() -> (tempfile::TempDir, Store) {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("quire.db")).unwrap();
    (dir, store)
}

fn new_run(id: &str) -> NewEvalRun {
    NewEvalRun {
        id: id.into(),
        suite: "shop".into(),
        suite_path: "/suites/shop".into(),
        split: "test".into(),
        agent: "default".into(),
        config_hash: "abc".into(),
        model: "m".into(),
        repeat: 2,
        jobs: 3,
        timeout_secs: 900,
        args: serde_json::json!({"agent": "default"}),
    }
}

fn attempts() -> Vec<(String, u32)> {
    vec![
        ("b".into(), 1),
        ("a".into(), 1),
        ("b".into(), 2),
        ("a".into(), 2),
    ]
}

fn outcome(resolved: bool, session: Option<SessionId>) -> EvalOutcome {
    EvalOutcome {
        session_id: session,
        resolved,
        category: if resolved { "resolved" } else { "timeout" }.into(),
        visible_passed: Some(3),
        visible_failed: Some(0),
        hidden_passed: Some(2),
        hidden_failed: None,
        usage: Usage {
            prompt_tokens: 100,
            completion_tokens: 20,
            cached_tokens: 5,
        },
        cost_usd: 0.5,
        turns: 4,
        tool_calls: 3,
        wall_ms: 1234,
        error: None,
        details: serde_json::json!({"tree": "/t"}),
    }
}

#[test]
fn a_run_is_created_with_pending_results_in_planned_order() {
    let (_dir, store) = store();
    store
        .create_eval_run(&new_run("01RUNA"), &attempts())
        .unwrap();
    let run = store.get_eval_run("01RUNA").unwrap().unwrap();
    assert_eq!(run.status, EvalRunStatus::Running);
    assert_eq!((run.repeat, run.jobs, run.timeout_secs), (2, 3, 900));
    assert_eq!(run.args["agent"], "default");
    let rows = store.eval_results("01RUNA").unwrap();
    let order: Vec<(String, u32)> = rows
        .iter()
        .map(|r| (r.task_id.clone(), r.attempt))
        .collect();
    assert_eq!(order, attempts());
    assert!(rows.iter().all(|r| r.status == EvalResultStatus::Pending));
    assert!(matches!(
        store.create_eval_run(&new_run("01RUNA"), &[]),
        Err(StoreError::EvalRunExists { .. })
    ));
}

#[test]
fn results_move_from_pending_to_running_to_done_and_link_existing_sessions() {
    let (_dir, store) = store();
    store
        .create_eval_run(&new_run("01RUNA"), &attempts())
        .unwrap();
    let session = store
        .create_session(&NewSession {
            workspace: "/home/evals/01RUNA/a-1".into(),
            ..NewSession::default()
        })
        .unwrap();
    store.start_eval_result("01RUNA", "a", 1).unwrap();
    let row = &store.eval_results("01RUNA").unwrap()[1];
    assert_eq!(row.status, EvalResultStatus::Running);
    assert!(row.started_at.is_some());
    store
        .finish_eval_result("01RUNA", "a", 1, &outcome(true, Some(session.clone())))
        .unwrap();
    store.start_eval_result("01RUNA", "b", 1).unwrap();
    store
        .finish_eval_result(
            "01RUNA",
            "b",
            1,
            &outcome(false, Some(SessionId("01NOTASESSION".into()))),
        )
        .unwrap();
    store.start_eval_result("01RUNA", "b", 2).unwrap();
    store.reset_eval_result("01RUNA", "b", 2).unwrap();

    let rows = store.eval_results("01RUNA").unwrap();
    let a = &rows[1];
    assert_eq!(a.status, EvalResultStatus::Done);
    assert_eq!(a.outcome, outcome(true, Some(session.clone())));
    assert!(a.ended_at.is_some());
    assert_eq!(
        rows[0].outcome.session_id, None,
        "unknown sessions are not linked"
    );
    assert_eq!(rows[2].status, EvalResultStatus::Pending);

    let found = store
        .sessions_in_workspace("/home/evals/01RUNA/a-1")
        .unwrap();
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].id, session);
    assert!(matches!(
        store.start_eval_result("01RUNA", "zzz", 1),
        Err(StoreError::EvalResultNotFound { .. })
    ));
}

#[test]
fn runs_list_newest_first_with_headline_figures_and_resolve_by_prefix() {
    let (_dir, store) = store();
    store
        .create_eval_run(&new_run("01RUNA"), &attempts())
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(5));
    let mut other = new_run("01RUNB");
    other.suite = "mini".into();
    store.create_eval_run(&other, &[("x".into(), 1)]).unwrap();
    store.start_eval_result("01RUNA", "a", 1).unwrap();
    store
        .finish_eval_result("01RUNA", "a", 1, &outcome(true, None))
        .unwrap();
    store
        .finish_eval_result("01RUNA", "b", 1, &outcome(false, None))
        .unwrap();
    store
        .set_eval_run_status("01RUNA", EvalRunStatus::Interrupted)
        .unwrap();

    let runs = store.list_eval_runs(None, None).unwrap();
    let ids: Vec<&str> = runs.iter().map(|r| r.run.id.as_str()).collect();
    assert_eq!(ids, ["01RUNB", "01RUNA"]);
    let a = &runs[1];
    assert_eq!((a.attempts, a.done, a.resolved), (4, 2, 1));
    assert_eq!((a.prompt_tokens, a.completion_tokens), (200, 40));
    assert!((a.cost_usd - 1.0).abs() < 1e-9);
    assert_eq!(a.run.status, EvalRunStatus::Interrupted);
    assert!(a.run.ended_at.is_some());
    let only = store.list_eval_runs(Some("mini"), Some(5)).unwrap();
    assert_eq!(only.len(), 1);

    assert_eq!(store.find_eval_run("01RUNA").unwrap().unwrap().id, "01RUNA");
    assert!(matches!(
        store.find_eval_run("01run"),
        Err(StoreError::AmbiguousPrefix { .. })
    ));
    assert!(store.find_eval_run("01Z").unwrap().is_none());
    store
        .set_eval_run_status("01RUNA", EvalRunStatus::Running)
        .unwrap();
    assert!(
        store
            .get_eval_run("01RUNA")
            .unwrap()
            .unwrap()
            .ended_at
            .is_none()
    );
    assert!(matches!(
        store.set_eval_run_status("nope", EvalRunStatus::Completed),
        Err(StoreError::EvalRunNotFound { .. })
    ));
}

#[test]
fn eval_texts_are_redacted() {
    let dir = tempfile::tempdir().unwrap();
    let mut redactor = Redactor::new();
    redactor.add_secret("sk-secret-value-123");
    let store = Store::open(&dir.path().join("quire.db"))
        .unwrap()
        .with_redactor(redactor);
    let mut run = new_run("01RUNA");
    run.args = serde_json::json!({"base_url": "https://x/sk-secret-value-123"});
    store.create_eval_run(&run, &[("a".into(), 1)]).unwrap();
    let mut done = outcome(false, None);
    done.error = Some("model error: bad key sk-secret-value-123".into());
    store.finish_eval_result("01RUNA", "a", 1, &done).unwrap();
    let row = &store.eval_results("01RUNA").unwrap()[0];
    assert!(!row.outcome.error.as_deref().unwrap().contains("sk-secret"));
    let run = store.get_eval_run("01RUNA").unwrap().unwrap();
    assert!(!run.args.to_string().contains("sk-secret"));
}
