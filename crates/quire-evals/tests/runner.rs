//! The runner with stand-in session drivers: what it records when a session
//! panics, ignores its interrupt, or is stopped by the user, and that a
//! resumed run does only what is left.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use quire_core::Interrupt;
use quire_evals::{
    Category, EvalRunner, RunPlan, RunReport, SessionDriver, Settings, Suite, create_run,
};
use quire_session::{EndReason, RunOptions, SessionError, SessionReport, WorkspaceInfo};
use quire_store::{EvalResultStatus, EvalRunStatus, Store, Totals};
use quire_types::{SessionId, Usage};

fn suite() -> Suite {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/evalsuite");
    Suite::load(&path).unwrap()
}

/// What the stand-in does with the greeting task.
#[derive(Clone, Copy, PartialEq)]
enum Greeting {
    /// Never returns and never looks at its interrupt.
    IgnoreInterrupt,
    /// Returns `Interrupted` as soon as it is interrupted.
    HonourInterrupt,
    Solve,
    /// Ends as a model failure would.
    ModelError,
}

struct Stand {
    greeting: Greeting,
    calls: AtomicUsize,
}

fn report(reason: EndReason, root: &Path) -> SessionReport {
    SessionReport {
        id: SessionId::new(),
        status: reason.status(),
        reason,
        outcome: format!("{reason:?}"),
        totals: Totals {
            usage: Usage {
                prompt_tokens: 1000,
                completion_tokens: 50,
                cached_tokens: 0,
            },
            cost_usd: 0.01,
            iterations: 4,
            tool_calls: 3,
            elapsed_ms: 10,
        },
        diff: None,
        patch_path: None,
        applied: reason == EndReason::Applied,
        work_dir: root.to_path_buf(),
    }
}

fn edit(root: &Path, file: &str, old: &str, new: &str) {
    let path = root.join(file);
    let text = std::fs::read_to_string(&path).unwrap();
    std::fs::write(&path, text.replace(old, new)).unwrap();
}

#[async_trait]
impl SessionDriver for Stand {
    async fn run_session(
        &self,
        info: WorkspaceInfo,
        options: RunOptions,
    ) -> Result<SessionReport, SessionError> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        assert!(
            !info.root.join("evaluation").exists(),
            "hidden tests are hidden"
        );
        assert!(!info.root.join("solution.patch").exists());
        if info.task.contains("difference instead of the sum") {
            edit(&info.root, "src/calc.py", "a - b", "a + b");
            return Ok(report(EndReason::Applied, &info.root));
        }
        if info.task.contains("clamp") {
            panic!("scripted crash inside the session");
        }
        match self.greeting {
            Greeting::IgnoreInterrupt => std::future::pending().await,
            Greeting::HonourInterrupt => {
                options.interrupt.triggered().await;
                Ok(report(EndReason::Interrupted, &info.root))
            }
            Greeting::ModelError => Ok(report(EndReason::ModelError, &info.root)),
            Greeting::Solve => {
                edit(
                    &info.root,
                    "src/greet.py",
                    "return \"Hello \" + name",
                    "return f\"Hello, {name or 'stranger'}!\"",
                );
                Ok(report(EndReason::Applied, &info.root))
            }
        }
    }
}

struct Home {
    _dir: tempfile::TempDir,
    evals: PathBuf,
    store: Arc<Mutex<Store>>,
}

fn home() -> Home {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("quire.db")).unwrap();
    Home {
        evals: dir.path().join("evals"),
        store: Arc::new(Mutex::new(store)),
        _dir: dir,
    }
}

fn plan(suite: &Suite, repeat: u32) -> RunPlan {
    RunPlan {
        selection: suite.select("test", &[]).unwrap(),
        repeat,
        jobs: 3,
        timeout: Duration::from_secs(1),
        agent: "stand-in".into(),
        config_hash: "hash".into(),
        model: "none".into(),
        args: serde_json::json!({}),
        notes: quire_evals::NotesPlan::Off,
    }
}

fn settings(jobs: usize) -> Settings {
    let mut s = Settings::new(jobs, Duration::from_secs(1));
    s.grace = Duration::from_millis(500);
    s.test_timeout = Duration::from_secs(60);
    s
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_panic_and_a_hang_are_results_and_the_run_goes_on() {
    let suite = suite();
    let home = home();
    let run = create_run(&home.store.lock().unwrap(), &suite, &plan(&suite, 2)).unwrap();
    let driver = Arc::new(Stand {
        greeting: Greeting::IgnoreInterrupt,
        calls: AtomicUsize::new(0),
    });
    let runner = EvalRunner::new(driver.clone(), home.store.clone(), home.evals.clone());
    let end = runner.execute(&run.id, &suite, &settings(3)).await.unwrap();
    assert!(!end.interrupted);
    assert_eq!(end.run.status, EvalRunStatus::Completed);
    assert_eq!(driver.calls.load(Ordering::SeqCst), 6);
    let order: Vec<String> = end
        .results
        .iter()
        .map(|r| format!("{}#{}", r.task_id, r.attempt))
        .collect();
    assert_eq!(
        order,
        [
            "fix-add#1",
            "clamp-range#1",
            "greeting#1",
            "fix-add#2",
            "clamp-range#2",
            "greeting#2"
        ],
        "attempt-major, in split order"
    );
    for r in &end.results {
        assert_eq!(r.status, EvalResultStatus::Done);
        let o = &r.outcome;
        match r.task_id.as_str() {
            "fix-add" => {
                assert!(o.resolved);
                assert_eq!(o.category, Category::Resolved.as_str());
                assert_eq!((o.hidden_passed, o.hidden_failed), (Some(2), Some(0)));
                assert_eq!(o.usage.prompt_tokens, 1000);
                assert_eq!((o.turns, o.tool_calls), (4, 3));
                assert_eq!(o.session_id, None, "no such session in the store");
            }
            "clamp-range" => {
                assert_eq!(o.category, Category::Crash.as_str());
                let error = o.error.as_deref().unwrap();
                assert!(
                    error.contains("scripted crash inside the session"),
                    "{error}"
                );
                assert_eq!((o.visible_passed, o.visible_failed), (Some(2), Some(1)));
            }
            _ => {
                assert_eq!(o.category, Category::Timeout.as_str());
                assert!(o.error.as_deref().unwrap().contains("timed out after 1s"));
                assert!(o.wall_ms >= 1000);
            }
        }
    }
    let report = RunReport::new(end.run, end.results);
    assert_eq!(report.headline(), "2/6 resolved (33.3%, 95% CI 9.7%–70.0%)");
    // Each attempt kept its own tree and logs.
    let tree = runner.run_dir(&run.id).join("fix-add-2");
    assert!(
        std::fs::read_to_string(tree.join("src/calc.py"))
            .unwrap()
            .contains("a + b")
    );
    assert!(
        runner
            .run_dir(&run.id)
            .join("logs/greeting-1.hidden.log")
            .is_file()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stopped_run_is_interrupted_and_resumes_only_what_is_left() {
    let suite = suite();
    let home = home();
    let mut plan = plan(&suite, 1);
    plan.timeout = Duration::from_secs(60);
    let run = create_run(&home.store.lock().unwrap(), &suite, &plan).unwrap();
    let stop = Interrupt::new();
    let first = Arc::new(Stand {
        greeting: Greeting::HonourInterrupt,
        calls: AtomicUsize::new(0),
    });
    let runner = EvalRunner::new(first.clone(), home.store.clone(), home.evals.clone())
        .with_stop(stop.clone());
    let trigger = {
        let store = home.store.clone();
        let id = run.id.clone();
        tokio::spawn(async move {
            // Stop once the greeting attempt is under way.
            loop {
                tokio::time::sleep(Duration::from_millis(50)).await;
                let rows = store.lock().unwrap().eval_results(&id).unwrap();
                if rows
                    .iter()
                    .any(|r| r.task_id == "greeting" && r.status == EvalResultStatus::Running)
                {
                    stop.trigger();
                    return;
                }
            }
        })
    };
    let mut slow = settings(1);
    slow.timeout = Duration::from_secs(60);
    let end = runner.execute(&run.id, &suite, &slow).await.unwrap();
    trigger.await.unwrap();
    assert!(end.interrupted);
    assert_eq!(end.run.status, EvalRunStatus::Interrupted);
    let pending: Vec<_> = end
        .results
        .iter()
        .filter(|r| r.status != EvalResultStatus::Done)
        .map(|r| (r.task_id.as_str(), r.status))
        .collect();
    assert_eq!(pending, [("greeting", EvalResultStatus::Pending)]);

    let second = Arc::new(Stand {
        greeting: Greeting::Solve,
        calls: AtomicUsize::new(0),
    });
    let runner = EvalRunner::new(second.clone(), home.store.clone(), home.evals.clone());
    let end = runner.execute(&run.id, &suite, &slow).await.unwrap();
    assert_eq!(
        second.calls.load(Ordering::SeqCst),
        1,
        "only the greeting ran"
    );
    assert_eq!(end.run.status, EvalRunStatus::Completed);
    let greeting = end
        .results
        .iter()
        .find(|r| r.task_id == "greeting")
        .unwrap();
    assert!(greeting.outcome.resolved);
}

#[tokio::test]
async fn a_run_held_by_a_live_process_cannot_be_executed_twice() {
    let suite = suite();
    let home = home();
    let run = create_run(&home.store.lock().unwrap(), &suite, &plan(&suite, 1)).unwrap();
    let runner = EvalRunner::new(
        Arc::new(Stand {
            greeting: Greeting::Solve,
            calls: AtomicUsize::new(0),
        }),
        home.store.clone(),
        home.evals.clone(),
    );
    let dir = runner.run_dir(&run.id);
    std::fs::create_dir_all(&dir).unwrap();
    // PID 1 is always alive.
    std::fs::write(dir.join("lock"), "1").unwrap();
    let err = runner
        .execute(&run.id, &suite, &settings(1))
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("process 1"), "{err}");
}

#[tokio::test]
async fn a_model_failure_is_recorded_with_its_message() {
    let suite = suite();
    let home = home();
    let mut plan = plan(&suite, 1);
    plan.selection = suite.select("test", &["greeting".to_string()]).unwrap();
    let run = create_run(&home.store.lock().unwrap(), &suite, &plan).unwrap();
    let runner = EvalRunner::new(
        Arc::new(Stand {
            greeting: Greeting::ModelError,
            calls: AtomicUsize::new(0),
        }),
        home.store.clone(),
        home.evals.clone(),
    );
    let end = runner.execute(&run.id, &suite, &settings(1)).await.unwrap();
    assert_eq!(end.results.len(), 1);
    let o = &end.results[0].outcome;
    assert_eq!(o.category, Category::ModelError.as_str());
    assert_eq!(o.error.as_deref(), Some("ModelError"));
    assert_eq!(o.details["end_reason"], "model_error");
    assert_eq!((o.hidden_passed, o.hidden_failed), (Some(0), Some(2)));
    // Executing a finished run again changes nothing.
    let again = runner.execute(&run.id, &suite, &settings(1)).await.unwrap();
    assert_eq!(again.results, end.results);
    assert_eq!(again.run.ended_at, end.run.ended_at);
}
