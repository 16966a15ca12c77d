//! The Landlock sandbox: writes inside the confined folder work, writes
//! outside fail, TCP is blocked unless allowed. Skipped (with a note) where
//! the kernel has no Landlock.

use std::time::Duration;

use quire_workspace::{RunOptions, Sandbox, SandboxStatus, run_command, sandbox_status};

fn opts(sandbox: Option<Sandbox>) -> RunOptions {
    RunOptions {
        timeout: Duration::from_secs(20),
        output_cap_bytes: 64 * 1024,
        env: Vec::new(),
        sandbox,
    }
}

/// Folders outside the system temp dir (which the sandbox leaves
/// writable). The target dir is not enough: a checkout may itself live under
/// /tmp, so take the first candidate that is outside it.
fn dirs() -> (tempfile::TempDir, tempfile::TempDir) {
    let temp = std::env::temp_dir()
        .canonicalize()
        .unwrap_or_else(|_| std::env::temp_dir());
    let candidates = [
        std::env::var_os("HOME").map(std::path::PathBuf::from),
        Some(std::path::PathBuf::from("/var/tmp")),
        Some(std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR"))),
    ];
    let base = candidates
        .into_iter()
        .flatten()
        .filter_map(|p| p.canonicalize().ok())
        .find(|p| !p.starts_with(&temp) && tempfile::tempdir_in(p).is_ok())
        .expect("a writable folder outside the temp dir");
    (
        tempfile::tempdir_in(&base).unwrap(),
        tempfile::tempdir_in(&base).unwrap(),
    )
}

fn available() -> bool {
    match sandbox_status() {
        SandboxStatus::Available { .. } => true,
        SandboxStatus::Unavailable(why) => {
            eprintln!("skipping: {why}");
            false
        }
    }
}

#[tokio::test]
async fn writes_are_confined_to_the_root_and_temp() {
    if !available() {
        return;
    }
    let (root, outside) = dirs();
    let cmd = format!(
        "echo in > inside.txt && echo t > /tmp/quire-sandbox-probe-$$ && rm /tmp/quire-sandbox-probe-$$ && echo ok-so-far && echo out > {}/outside.txt",
        outside.path().display()
    );
    let sandbox = Sandbox::confined_to(root.path(), true);
    let out = run_command(&cmd, root.path(), &opts(Some(sandbox)))
        .await
        .unwrap();
    assert!(root.path().join("inside.txt").exists(), "{}", out.output);
    assert!(out.output.contains("ok-so-far"), "{}", out.output);
    assert!(
        !outside.path().join("outside.txt").exists(),
        "{}",
        out.output
    );
    assert!(!out.success(), "{}", out.output);

    // The same command unconfined writes outside: the test is meaningful.
    let out = run_command(&cmd, root.path(), &opts(None)).await.unwrap();
    assert!(out.success(), "{}", out.output);
    assert!(outside.path().join("outside.txt").exists());
}

#[tokio::test]
async fn tcp_is_blocked_unless_allowed() {
    let SandboxStatus::Available { network: true, .. } = sandbox_status() else {
        eprintln!("skipping: no Landlock network rules here");
        return;
    };
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let (root, _) = dirs();
    let probe = format!(
        "python3 -c \"import socket; socket.create_connection(('127.0.0.1', {port}), timeout=5); print('connected')\""
    );
    let blocked = run_command(
        &probe,
        root.path(),
        &opts(Some(Sandbox::confined_to(root.path(), false))),
    )
    .await
    .unwrap();
    assert!(!blocked.success(), "{}", blocked.output);
    assert!(
        !blocked.output.contains("connected\n"),
        "{}",
        blocked.output
    );
    let allowed = run_command(
        &probe,
        root.path(),
        &opts(Some(Sandbox::confined_to(root.path(), true))),
    )
    .await
    .unwrap();
    assert!(allowed.success(), "{}", allowed.output);
}
