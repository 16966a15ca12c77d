//! Session copy creation, manifest, and the path guard.

use std::fs;
use std::os::unix::fs::{PermissionsExt, symlink};
use std::path::Path;

use quire_workspace::{PathError, SessionCopy, SkipReason};

fn write(root: &Path, rel: &str, content: &str) {
    let p = root.join(rel);
    fs::create_dir_all(p.parent().unwrap()).unwrap();
    fs::write(p, content).unwrap();
}

/// A workspace with ignore rules, hidden files, .git, evaluation/ and
/// symlinks in and out.
fn sample() -> (tempfile::TempDir, tempfile::TempDir) {
    let ws = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    let r = ws.path();
    write(r, "src/main.py", "print('hi')\n");
    write(r, "src/util.py", "def f():\n    return 1\n");
    write(r, ".gitignore", "build/\n*.log\n");
    write(r, "build/out.bin", "junk");
    write(r, "debug.log", "log");
    write(r, "src/.ignore", "secret_cache.txt\n");
    write(r, "src/secret_cache.txt", "cache");
    write(r, ".env", "KEY=1\n");
    write(r, ".git/config", "[core]\n");
    write(r, ".git/HEAD", "ref: refs/heads/main\n");
    write(r, "evaluation/hidden_test.py", "assert False\n");
    write(r, "solution.patch", "--- a/x\n");
    write(
        r,
        "docs/evaluation/keep.md",
        "nested evaluation folder is kept\n",
    );
    write(r, "run.sh", "#!/bin/sh\necho hi\n");
    fs::set_permissions(r.join("run.sh"), fs::Permissions::from_mode(0o755)).unwrap();
    write(outside.path(), "secret.txt", "outside secret\n");
    symlink("src/main.py", r.join("main_link.py")).unwrap();
    symlink(outside.path().join("secret.txt"), r.join("escape.txt")).unwrap();
    symlink("../..", r.join("src/up")).unwrap();
    symlink("does-not-exist", r.join("dangling")).unwrap();
    symlink(r.join("src/util.py"), r.join("abs_inside.py")).unwrap();
    (ws, outside)
}

#[test]
fn copy_respects_ignores_and_skips() {
    let (ws, _outside) = sample();
    let dest = tempfile::tempdir().unwrap();
    let work = dest.path().join("work");
    let copy = SessionCopy::create(ws.path(), &work).unwrap();
    let c = copy.root();
    assert_eq!(
        fs::read_to_string(c.join("src/main.py")).unwrap(),
        "print('hi')\n"
    );
    assert!(c.join(".env").exists(), "hidden files are copied");
    assert!(c.join(".gitignore").exists());
    assert!(!c.join("build").exists(), "gitignored dir");
    assert!(!c.join("debug.log").exists(), "gitignored file");
    assert!(!c.join("src/secret_cache.txt").exists(), ".ignore honoured");
    assert!(!c.join(".git").exists(), ".git skipped");
    assert!(!c.join("evaluation").exists(), "evaluation/ skipped");
    assert!(!c.join("solution.patch").exists(), "solution.patch skipped");
    assert!(
        c.join("docs/evaluation/keep.md").exists(),
        "only top-level evaluation/ is skipped"
    );
    let mode = fs::metadata(c.join("run.sh")).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o755, "executable bit kept");

    // Symlinks: inside kept, outside and dangling skipped and recorded.
    assert_eq!(
        fs::read_link(c.join("main_link.py")).unwrap(),
        Path::new("src/main.py")
    );
    assert!(fs::symlink_metadata(c.join("escape.txt")).is_err());
    assert!(fs::symlink_metadata(c.join("src/up")).is_err());
    assert!(fs::symlink_metadata(c.join("dangling")).is_err());
    // An absolute link into the workspace is rewritten to stay in the copy.
    assert_eq!(
        fs::read_link(c.join("abs_inside.py")).unwrap(),
        Path::new("src/util.py")
    );
    let skipped = copy.skipped();
    let reason = |p: &str| {
        skipped
            .iter()
            .find(|s| s.path == p)
            .map(|s| s.reason.clone())
    };
    assert!(matches!(
        reason("escape.txt"),
        Some(SkipReason::SymlinkOutside { .. })
    ));
    assert!(matches!(
        reason("src/up"),
        Some(SkipReason::SymlinkOutside { .. })
    ));
    assert!(matches!(
        reason("dangling"),
        Some(SkipReason::SymlinkDangling { .. })
    ));

    let m = copy.manifest();
    assert!(m.files.contains_key("src/main.py"));
    assert!(m.files.contains_key(".env"));
    assert!(!m.files.contains_key("debug.log"));
    let e = &m.files["src/main.py"];
    assert_eq!(e.size, 12);
    assert_eq!(e.sha256.len(), 64);
    assert_eq!(m.files["run.sh"].mode & 0o777, 0o755);

    // No changes right after copying.
    assert!(copy.changes().unwrap().is_empty());
}

#[test]
fn dest_must_be_empty() {
    let (ws, _o) = sample();
    let dest = tempfile::tempdir().unwrap();
    write(dest.path(), "x", "y");
    let err = SessionCopy::create(ws.path(), dest.path()).unwrap_err();
    assert!(err.to_string().contains("not empty"), "{err}");
}

#[test]
fn manifest_round_trip_and_reopen() {
    let (ws, _o) = sample();
    let dest = tempfile::tempdir().unwrap();
    let work = dest.path().join("work");
    let copy = SessionCopy::create(ws.path(), &work).unwrap();
    let manifest = dest.path().join("manifest.json");
    copy.save_manifest(&manifest).unwrap();
    write(&work, "src/new.py", "x = 1\n");
    let reopened = SessionCopy::open(ws.path(), &work, &manifest).unwrap();
    assert_eq!(reopened.manifest(), copy.manifest());
    let changes = reopened.changes().unwrap();
    assert_eq!(changes.len(), 1);
    assert_eq!(changes[0].path, "src/new.py");
}

#[test]
fn guard_refuses_escapes() {
    let (ws, outside) = sample();
    let dest = tempfile::tempdir().unwrap();
    let copy = SessionCopy::create(ws.path(), &dest.path().join("w")).unwrap();
    let root = copy.root().to_path_buf();
    // Plant an escaping symlink in the copy, as the agent might via a shell.
    symlink(outside.path(), root.join("src/out")).unwrap();
    symlink("../../..", root.join("src/up2")).unwrap();
    symlink("nowhere", root.join("dangle")).unwrap();

    assert_eq!(
        copy.resolve("src/main.py").unwrap(),
        root.join("src/main.py")
    );
    assert_eq!(
        copy.resolve("./src/../src/main.py").unwrap(),
        root.join("src/main.py")
    );
    assert_eq!(
        copy.resolve("src/new/dir/file.rs").unwrap(),
        root.join("src/new/dir/file.rs")
    );
    assert_eq!(
        copy.resolve("main_link.py").unwrap(),
        root.join("main_link.py")
    );
    assert_eq!(copy.resolve(".").unwrap(), root);

    assert!(matches!(
        copy.resolve("/etc/passwd"),
        Err(PathError::Absolute { .. })
    ));
    assert!(matches!(
        copy.resolve("../x"),
        Err(PathError::Outside { .. })
    ));
    assert!(matches!(
        copy.resolve("src/../../x"),
        Err(PathError::Outside { .. })
    ));
    assert!(matches!(
        copy.resolve("src/out/secret.txt"),
        Err(PathError::Outside { .. })
    ));
    assert!(matches!(
        copy.resolve("src/out/new_file"),
        Err(PathError::Outside { .. })
    ));
    assert!(matches!(
        copy.resolve("src/out"),
        Err(PathError::Outside { .. })
    ));
    assert!(matches!(
        copy.resolve("src/up2/etc"),
        Err(PathError::Outside { .. })
    ));
    assert!(matches!(
        copy.resolve("dangle"),
        Err(PathError::DanglingSymlink { .. })
    ));
    assert!(matches!(
        copy.resolve("a\0b"),
        Err(PathError::Invalid { .. })
    ));

    assert!(matches!(
        copy.resolve_existing("src/nope.py"),
        Err(PathError::NotFound { .. })
    ));
    assert!(copy.resolve_existing("src/main.py").is_ok());

    assert_eq!(copy.relative(&root.join("src/main.py")), "src/main.py");
    assert_eq!(copy.relative(&root), ".");
}
