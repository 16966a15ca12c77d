//! Distillation jobs: queued once per session, claimed by one worker at a
//! time, taken over after a missed lease, retried a bounded number of times.

use std::sync::{Arc, Barrier};
use std::time::Duration;

use quire_store::{DistillStatus, NewSession, Store};
use quire_types::SessionId;

const LEASE: Duration = Duration::from_secs(60);

fn store_with_session(dir: &tempfile::TempDir) -> (Store, SessionId) {
    let store = Store::open(&dir.path().join("quire.db")).unwrap();
    let id = SessionId::new();
    store
        .create_session(&NewSession {
            id: id.clone(),
            project: "p".into(),
            task: "t".into(),
            ..NewSession::default()
        })
        .unwrap();
    (store, id)
}

#[test]
fn a_job_is_queued_once_claimed_once_and_finished() {
    let dir = tempfile::tempdir().unwrap();
    let (store, id) = store_with_session(&dir);
    assert!(store.queue_distill_job(&id).unwrap());
    assert!(store.queue_distill_job(&id).unwrap(), "still pending");
    assert_eq!(store.distill_jobs(None, 10).unwrap().len(), 1);

    let job = store
        .claim_distill_job(None, "w1", LEASE, 3)
        .unwrap()
        .unwrap();
    assert_eq!(job.session_id, id);
    assert_eq!(job.status, DistillStatus::Running);
    assert_eq!(job.attempts, 1);
    assert_eq!(job.worker.as_deref(), Some("w1"));
    assert!(
        store
            .claim_distill_job(None, "w2", LEASE, 3)
            .unwrap()
            .is_none()
    );
    assert!(
        !store.queue_distill_job(&id).unwrap(),
        "running: not queued again"
    );

    let written = serde_json::json!([{"id": "N1", "action": "created"}]);
    assert!(
        store
            .record_distill_progress(&id, "w1", &written, &["R1".into()])
            .unwrap()
    );
    assert!(
        !store.heartbeat_distill_job(&id, "w2").unwrap(),
        "not w2's job"
    );
    assert!(
        store
            .finish_distill_job(&id, "w1", &written, "one note")
            .unwrap()
    );
    let done = store.distill_job(&id).unwrap().unwrap();
    assert_eq!(done.status, DistillStatus::Done);
    assert_eq!(done.notes_written, written);
    assert_eq!(done.credited, vec!["R1"]);
    assert_eq!(done.summary.as_deref(), Some("one note"));
    assert!(done.finished_at.is_some());
    assert!(
        store
            .claim_distill_job(None, "w3", Duration::ZERO, 3)
            .unwrap()
            .is_none(),
        "done is never claimed again"
    );

    // A session resumed and ended again is distilled again; credits stay.
    assert!(store.queue_distill_job(&id).unwrap());
    let again = store
        .claim_distill_job(Some(&id), "w4", LEASE, 3)
        .unwrap()
        .unwrap();
    assert_eq!(again.attempts, 1);
    assert_eq!(again.credited, vec!["R1"]);
}

#[test]
fn two_workers_racing_for_one_job_get_it_once() {
    let dir = tempfile::tempdir().unwrap();
    let (store, id) = store_with_session(&dir);
    store.queue_distill_job(&id).unwrap();
    drop(store);
    for round in 0..5 {
        let barrier = Arc::new(Barrier::new(2));
        let handles: Vec<_> = (0..2)
            .map(|w| {
                let path = dir.path().join("quire.db");
                let barrier = barrier.clone();
                std::thread::spawn(move || {
                    let store = Store::open(&path).unwrap();
                    barrier.wait();
                    store
                        .claim_distill_job(None, &format!("w{round}-{w}"), LEASE, 10)
                        .unwrap()
                        .is_some()
                })
            })
            .collect();
        let wins: usize = handles
            .into_iter()
            .map(|h| usize::from(h.join().unwrap()))
            .sum();
        assert_eq!(wins, 1, "round {round}");
        let store = Store::open(&dir.path().join("quire.db")).unwrap();
        let worker = store.distill_job(&id).unwrap().unwrap().worker.unwrap();
        store.release_distill_job(&id, &worker).unwrap();
    }
}

#[test]
fn a_dead_workers_job_is_taken_over_after_its_lease() {
    let dir = tempfile::tempdir().unwrap();
    let (store, id) = store_with_session(&dir);
    store.queue_distill_job(&id).unwrap();
    store
        .claim_distill_job(None, "dead", LEASE, 3)
        .unwrap()
        .unwrap();
    assert!(
        store
            .claim_distill_job(None, "alive", LEASE, 3)
            .unwrap()
            .is_none(),
        "lease still fresh"
    );
    std::thread::sleep(Duration::from_millis(20));
    let job = store
        .claim_distill_job(None, "alive", Duration::from_millis(10), 3)
        .unwrap()
        .unwrap();
    assert_eq!(job.worker.as_deref(), Some("alive"));
    assert_eq!(job.attempts, 2);
    // The old worker wakes up: it can no longer touch the job.
    assert!(!store.heartbeat_distill_job(&id, "dead").unwrap());
    assert!(
        !store
            .finish_distill_job(&id, "dead", &serde_json::json!([]), "x")
            .unwrap()
    );
    assert!(
        store
            .finish_distill_job(&id, "alive", &serde_json::json!([]), "ok")
            .unwrap()
    );
}

#[test]
fn failures_are_retried_then_given_up() {
    let dir = tempfile::tempdir().unwrap();
    let (store, id) = store_with_session(&dir);
    store.queue_distill_job(&id).unwrap();
    for attempt in 1..=2 {
        let job = store
            .claim_distill_job(None, "w", LEASE, 2)
            .unwrap()
            .unwrap();
        assert_eq!(job.attempts, attempt);
        store
            .fail_distill_job(&id, "w", "model error: 500", 2)
            .unwrap();
    }
    let job = store.distill_job(&id).unwrap().unwrap();
    assert_eq!(job.status, DistillStatus::Failed);
    assert_eq!(job.error.as_deref(), Some("model error: 500"));

    // A job whose workers kept dying is marked failed at the next claim.
    let (other, id2) = {
        let store = Store::open(&dir.path().join("quire.db")).unwrap();
        let id2 = SessionId::new();
        store
            .create_session(&NewSession {
                id: id2.clone(),
                ..NewSession::default()
            })
            .unwrap();
        (store, id2)
    };
    other.queue_distill_job(&id2).unwrap();
    other
        .claim_distill_job(None, "a", Duration::ZERO, 1)
        .unwrap()
        .unwrap();
    std::thread::sleep(Duration::from_millis(5));
    assert!(
        other
            .claim_distill_job(None, "b", Duration::from_millis(1), 1)
            .unwrap()
            .is_none()
    );
    let job = other.distill_job(&id2).unwrap().unwrap();
    assert_eq!(job.status, DistillStatus::Failed);
    assert!(job.error.unwrap().contains("gave up after 1 attempt"));
    let counts = other.distill_job_counts().unwrap();
    assert_eq!(counts, vec![(DistillStatus::Failed, 2)]);
}

#[test]
fn an_interrupted_worker_gives_the_job_back() {
    let dir = tempfile::tempdir().unwrap();
    let (store, id) = store_with_session(&dir);
    store.queue_distill_job(&id).unwrap();
    store
        .claim_distill_job(None, "w", LEASE, 3)
        .unwrap()
        .unwrap();
    assert!(store.release_distill_job(&id, "w").unwrap());
    let job = store.distill_job(&id).unwrap().unwrap();
    assert_eq!((job.status, job.attempts), (DistillStatus::Pending, 0));
}

#[test]
fn a_job_for_another_notes_tree_is_claimed_only_by_its_session() {
    let dir = tempfile::tempdir().unwrap();
    let (store, id) = store_with_session(&dir);
    assert!(
        store
            .queue_distill_job_into(&id, Some("/runs/r1/notes"))
            .unwrap()
    );
    assert!(
        store
            .claim_distill_job(None, "general", LEASE, 3)
            .unwrap()
            .is_none(),
        "the general queue must not take an eval run's job"
    );
    let job = store
        .claim_distill_job(Some(&id), "learner", LEASE, 3)
        .unwrap()
        .unwrap();
    assert_eq!(job.notes_root.as_deref(), Some("/runs/r1/notes"));

    // The note-taker's cost adds up over attempts, failed ones included.
    let usage = quire_types::Usage {
        prompt_tokens: 1_000,
        completion_tokens: 50,
        cached_tokens: 600,
    };
    store.add_distill_usage(&id, &usage, 2).unwrap();
    store.add_distill_usage(&id, &usage, 1).unwrap();
    let job = store.distill_job(&id).unwrap().unwrap();
    assert_eq!(job.usage.prompt_tokens, 2_000);
    assert_eq!(job.usage.completion_tokens, 100);
    assert_eq!(job.usage.cached_tokens, 1_200);
    assert_eq!(job.calls, 3);
}
