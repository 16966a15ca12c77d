//! Running commands: timeouts, process groups, output caps.

use std::path::Path;
use std::time::{Duration, Instant};

use quire_test_digest::{TestFramework, digest_test_output};
use quire_workspace::{RunOptions, run_command};

fn opts(timeout_ms: u64, cap: usize) -> RunOptions {
    RunOptions {
        timeout: Duration::from_millis(timeout_ms),
        output_cap_bytes: cap,
        env: Vec::new(),
        sandbox: None,
    }
}

/// True once `pid` no longer runs (gone, or a zombie awaiting its reaper).
fn dead(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit_once(") ")
            .and_then(|(_, rest)| rest.chars().next())
            .is_some_and(|state| state == 'Z' || state == 'X'),
    }
}

async fn wait_dead(pid: u32) -> bool {
    assert!(
        !dead(std::process::id()),
        "/proc must show this live process"
    );
    for _ in 0..40 {
        if dead(pid) {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    false
}

fn read_pid(path: &Path) -> u32 {
    for _ in 0..100 {
        let pid = std::fs::read_to_string(path)
            .ok()
            .and_then(|s| s.trim().parse().ok());
        if let Some(pid) = pid {
            return pid;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    panic!("no pid written to {}", path.display());
}

#[tokio::test]
async fn timeout_kills_the_whole_group() {
    let dir = tempfile::tempdir().unwrap();
    let started = Instant::now();
    let out = run_command(
        "sleep 30 & echo $! > child.pid; echo started; wait",
        dir.path(),
        &opts(1000, 4096),
    )
    .await
    .unwrap();
    let elapsed = started.elapsed();
    assert!(out.timed_out);
    assert_eq!(out.exit_code, None);
    assert_eq!(out.signal, Some(9));
    assert!(elapsed >= Duration::from_millis(900), "{elapsed:?}");
    assert!(elapsed < Duration::from_secs(4), "{elapsed:?}");
    assert!(out.output.contains("started"));
    let pid = read_pid(&dir.path().join("child.pid"));
    assert!(wait_dead(pid).await, "child sleep {pid} survived");
}

#[tokio::test]
async fn dropping_the_future_kills_the_group() {
    let dir = tempfile::tempdir().unwrap();
    let o = opts(60_000, 4096);
    let fut = run_command("sleep 30 & echo $! > child.pid; wait", dir.path(), &o);
    let result = tokio::time::timeout(Duration::from_millis(500), fut).await;
    assert!(result.is_err(), "should still be running when dropped");
    let pid = read_pid(&dir.path().join("child.pid"));
    assert!(wait_dead(pid).await, "child sleep {pid} survived the drop");
}

#[tokio::test]
async fn background_stragglers_do_not_hang_a_finished_command() {
    let dir = tempfile::tempdir().unwrap();
    let started = Instant::now();
    let out = run_command(
        "sleep 30 & echo $! > child.pid; echo done",
        dir.path(),
        &opts(20_000, 4096),
    )
    .await
    .unwrap();
    assert!(started.elapsed() < Duration::from_secs(5));
    assert_eq!(out.exit_code, Some(0));
    assert!(!out.timed_out);
    assert_eq!(out.output, "done\n");
    let pid = read_pid(&dir.path().join("child.pid"));
    assert!(wait_dead(pid).await);
}

#[tokio::test]
async fn output_is_capped_head_and_tail() {
    let dir = tempfile::tempdir().unwrap();
    let cmd =
        "echo FIRST; i=0; while [ $i -lt 5000 ]; do echo line-$i; i=$((i+1)); done; echo LAST";
    let out = run_command(cmd, dir.path(), &opts(20_000, 1000))
        .await
        .unwrap();
    assert!(out.success());
    assert!(out.output.starts_with("FIRST\n"));
    assert!(out.output.ends_with("LAST\n"));
    assert!(out.omitted_bytes > 40_000);
    assert_eq!(out.total_bytes, out.omitted_bytes + 1000);
    assert!(
        out.output
            .contains(&format!("[... {} bytes omitted ...]", out.omitted_bytes))
    );
    assert!(out.output.len() < 1100);
}

#[tokio::test]
async fn exit_code_stderr_env_and_cwd() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("marker.txt"), "here").unwrap();
    let mut o = opts(10_000, 4096);
    o.env.push(("QUIRE_TEST_VAR".into(), "hello".into()));
    let out = run_command(
        "echo out; echo err >&2; cat marker.txt; echo $QUIRE_TEST_VAR; exit 3",
        dir.path(),
        &o,
    )
    .await
    .unwrap();
    assert_eq!(out.exit_code, Some(3));
    assert!(!out.success());
    for needle in ["out\n", "err\n", "here", "hello\n"] {
        assert!(
            out.output.contains(needle),
            "{needle:?} in {:?}",
            out.output
        );
    }
    let out = run_command("kill -9 $$", dir.path(), &o).await.unwrap();
    assert_eq!(out.exit_code, None);
    assert_eq!(out.signal, Some(9));
    assert!(!out.timed_out);
}

#[tokio::test]
async fn missing_cwd_is_a_spawn_error() {
    let err = run_command(
        "true",
        Path::new("/nonexistent/quire/dir"),
        &opts(1000, 100),
    )
    .await
    .unwrap_err();
    assert!(err.to_string().contains("/nonexistent/quire/dir"), "{err}");
}

#[tokio::test]
async fn digest_of_a_real_run() {
    let dir = tempfile::tempdir().unwrap();
    let script = "printf '%s\\n' 'FAILED tests/test_a.py::test_x - assert 1 == 2' '==== 1 failed, 3 passed in 0.10s ===='; exit 1";
    let out = run_command(script, dir.path(), &opts(10_000, 4096))
        .await
        .unwrap();
    let d = digest_test_output(&out.output, out.exit_code);
    assert_eq!(d.framework, TestFramework::Pytest);
    assert_eq!((d.passed, d.failed), (Some(3), Some(1)));
    assert_eq!(d.failing_tests, vec!["tests/test_a.py::test_x"]);
}
