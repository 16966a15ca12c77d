//! The Landlock sandbox: writes inside the confined folder work, writes
//! outside fail, TCP is blocked unless allowed. Skipped (with a note) where
//! the kernel has no Landlock.

use std::time::Duration;

use quire_workspace::{
    RunOptions, Sandbox, SandboxEnforcement, SandboxStatus, run_command, sandbox_enforcement,
    sandbox_status,
};

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
/// /tmp (CI clones there), so take the first candidate that is outside it.
/// Both are removed when dropped.
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
        .find(|p| {
            !p.starts_with(&temp) && !p.starts_with("/tmp") && tempfile::tempdir_in(p).is_ok()
        })
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

#[test]
fn status_and_enforcement_agree() {
    eprintln!("{:?}, {:?}", sandbox_status(), sandbox_enforcement());
    match (sandbox_status(), sandbox_enforcement()) {
        (SandboxStatus::Available { abi, .. }, level) => {
            assert!(*abi >= 1);
            assert_ne!(level, SandboxEnforcement::None);
        }
        (SandboxStatus::Unavailable(why), level) => {
            assert!(!why.is_empty());
            assert_eq!(level, SandboxEnforcement::None);
        }
    }
    // Detected once: the same value every time.
    assert!(std::ptr::eq(sandbox_status(), sandbox_status()));
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
    assert!(out.output.contains("Permission denied"), "{}", out.output);

    // The same command unconfined writes outside: the test is meaningful.
    let out = run_command(&cmd, root.path(), &opts(None)).await.unwrap();
    assert!(out.success(), "{}", out.output);
    assert!(outside.path().join("outside.txt").exists());
}

#[tokio::test]
async fn other_writes_are_blocked_too() {
    if !available() {
        return;
    }
    let (root, outside) = dirs();
    std::fs::write(outside.path().join("existing.txt"), "keep").unwrap();
    std::fs::create_dir(outside.path().join("sub")).unwrap();
    let o = outside.path().display();
    // Each must fail on its own: truncate, delete, mkdir, rmdir, rename in.
    for cmd in [
        format!(": > {o}/existing.txt"),
        format!("rm {o}/existing.txt"),
        format!("mkdir {o}/new"),
        format!("rmdir {o}/sub"),
        format!("echo x > moved.txt && mv moved.txt {o}/moved.txt"),
    ] {
        let out = run_command(
            &cmd,
            root.path(),
            &opts(Some(Sandbox::confined_to(root.path(), true))),
        )
        .await
        .unwrap();
        assert!(!out.success(), "{cmd}: {}", out.output);
    }
    assert_eq!(
        std::fs::read_to_string(outside.path().join("existing.txt")).unwrap(),
        "keep"
    );
    assert!(outside.path().join("sub").is_dir());
    assert!(!outside.path().join("new").exists());
    assert!(!outside.path().join("moved.txt").exists());
}

#[tokio::test]
async fn extra_writable_folders_and_missing_paths() {
    if !available() {
        return;
    }
    let (root, extra) = dirs();
    let mut sandbox = Sandbox::confined_to(root.path(), true);
    sandbox.writable.push(extra.path().to_path_buf());
    // A writable path that does not exist is skipped, not an error.
    sandbox
        .writable
        .push(root.path().join("does/not/exist").to_path_buf());
    let cmd = format!("echo x > {}/extra.txt && echo done", extra.path().display());
    let out = run_command(&cmd, root.path(), &opts(Some(sandbox)))
        .await
        .unwrap();
    assert!(out.success(), "{}", out.output);
    assert!(extra.path().join("extra.txt").exists());
}

#[tokio::test]
async fn tcp_is_blocked_unless_allowed() {
    let SandboxStatus::Available { network: true, .. } = sandbox_status() else {
        eprintln!("skipping: no Landlock network rules here (ABI < 4)");
        return;
    };
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let (root, _) = dirs();
    let probe = format!(
        "python3 -c \"import socket; socket.create_connection(('127.0.0.1', {port}), timeout=5); print('connected')\""
    );
    let unconfined = run_command(&probe, root.path(), &opts(None)).await.unwrap();
    if !unconfined.success() {
        eprintln!(
            "skipping: python3 cannot connect here: {}",
            unconfined.output
        );
        return;
    }
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
    // Landlock refuses with EACCES, not a timeout or a missing interpreter.
    assert!(
        blocked.output.contains("Permission denied"),
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
    assert!(allowed.output.contains("connected"), "{}", allowed.output);
}
