//! Changes, unified diff, applying to the original, conflicts, rollback.

use std::collections::BTreeMap;
use std::fs;
use std::os::unix::fs::{PermissionsExt, symlink};
use std::path::Path;

use quire_workspace::{
    AppliedChange, ApplyError, ChangeKind, ConflictReason, Content, SessionCopy, unified_diff,
};

fn write(root: &Path, rel: &str, content: &[u8]) {
    let p = root.join(rel);
    fs::create_dir_all(p.parent().unwrap()).unwrap();
    fs::write(p, content).unwrap();
}

/// Every file under `root` (except .git) with its bytes and mode, or link
/// target: a byte-exact picture of a tree.
fn snapshot(root: &Path) -> BTreeMap<String, (Vec<u8>, u32)> {
    fn visit(root: &Path, dir: &Path, out: &mut BTreeMap<String, (Vec<u8>, u32)>) {
        let mut entries: Vec<_> = fs::read_dir(dir).unwrap().map(|e| e.unwrap()).collect();
        entries.sort_by_key(|e| e.file_name());
        for e in entries {
            let p = e.path();
            let rel = p.strip_prefix(root).unwrap().to_string_lossy().into_owned();
            let meta = fs::symlink_metadata(&p).unwrap();
            if meta.file_type().is_symlink() {
                let t = fs::read_link(&p).unwrap();
                out.insert(rel, (t.to_string_lossy().as_bytes().to_vec(), 0o120000));
            } else if meta.is_dir() {
                out.insert(
                    format!("{rel}/"),
                    (Vec::new(), meta.permissions().mode() & 0o7777),
                );
                visit(root, &p, out);
            } else {
                out.insert(
                    rel,
                    (fs::read(&p).unwrap(), meta.permissions().mode() & 0o7777),
                );
            }
        }
    }
    let mut out = BTreeMap::new();
    visit(root, root, &mut out);
    out
}

struct Fixture {
    ws: tempfile::TempDir,
    state: tempfile::TempDir,
    copy: SessionCopy,
}

impl Fixture {
    fn new() -> Fixture {
        let ws = tempfile::tempdir().unwrap();
        let r = ws.path();
        write(
            r,
            "src/app.py",
            b"def main():\n    return 1\n\nprint(main())\n",
        );
        write(r, "src/old.py", b"gone = True\n");
        write(r, "lib/only/child.txt", b"only child\n");
        write(r, "data.bin", &[0u8, 1, 2, 255, 0, 7]);
        write(r, "notes.txt", b"no newline at end");
        write(r, "tool.sh", b"#!/bin/sh\n");
        write(r, ".gitignore", b"__pycache__/\n");
        fs::set_permissions(r.join("tool.sh"), fs::Permissions::from_mode(0o755)).unwrap();
        symlink("src/app.py", r.join("app_link.py")).unwrap();
        let state = tempfile::tempdir().unwrap();
        let copy = SessionCopy::create(r, &state.path().join("work")).unwrap();
        Fixture { ws, state, copy }
    }

    fn work(&self) -> &Path {
        self.copy.root()
    }

    fn backup(&self) -> std::path::PathBuf {
        self.state.path().join("apply-backup")
    }

    /// Edit the copy: modify, add, delete, binary, mode change, ignored file.
    fn edit(&self) {
        let w = self.work();
        write(
            w,
            "src/app.py",
            b"def main():\n    return 2\n\nprint(main())\n",
        );
        write(w, "src/new/mod.py", b"NEW = 1\n");
        fs::remove_file(w.join("src/old.py")).unwrap();
        fs::remove_dir_all(w.join("lib")).unwrap();
        write(w, "data.bin", &[0u8, 9, 9]);
        write(w, "notes.txt", b"no newline at end\nnow there is\n");
        fs::set_permissions(w.join("tool.sh"), fs::Permissions::from_mode(0o644)).unwrap();
        write(w, "src/__pycache__/app.cpython.pyc", b"\0junk");
    }
}

#[test]
fn changes_and_unified_diff() {
    let f = Fixture::new();
    f.edit();
    let changes = f.copy.changes().unwrap();
    let summary: Vec<(&str, ChangeKind)> =
        changes.iter().map(|c| (c.path.as_str(), c.kind)).collect();
    assert_eq!(
        summary,
        vec![
            ("data.bin", ChangeKind::Modified),
            ("lib/only/child.txt", ChangeKind::Deleted),
            ("notes.txt", ChangeKind::Modified),
            ("src/app.py", ChangeKind::Modified),
            ("src/new/mod.py", ChangeKind::Added),
            ("src/old.py", ChangeKind::Deleted),
            ("tool.sh", ChangeKind::Modified),
        ]
    );
    let bin = &changes[0];
    assert!(matches!(bin.old, Some(Content::Binary(_))));
    assert!(matches!(bin.new, Some(Content::Binary(_))));
    assert!(changes.iter().all(|c| !c.original_changed));

    let diff = unified_diff(&changes);
    assert!(diff.contains(
        "diff --git a/data.bin b/data.bin\nBinary files a/data.bin and b/data.bin differ\n"
    ));
    assert!(diff.contains(
        "diff --git a/src/app.py b/src/app.py\n--- a/src/app.py\n+++ b/src/app.py\n@@ -1,4 +1,4 @@\n def main():\n-    return 1\n+    return 2\n \n print(main())\n"
    ));
    assert!(diff.contains(
        "diff --git a/src/new/mod.py b/src/new/mod.py\nnew file mode 100644\n--- /dev/null\n+++ b/src/new/mod.py\n@@ -0,0 +1 @@\n+NEW = 1\n"
    ));
    assert!(diff.contains(
        "diff --git a/src/old.py b/src/old.py\ndeleted file mode 100644\n--- a/src/old.py\n+++ /dev/null\n@@ -1 +0,0 @@\n-gone = True\n"
    ));
    assert!(diff.contains(
        "-no newline at end\n\\ No newline at end of file\n+no newline at end\n+now there is\n"
    ));
    assert!(diff.contains("diff --git a/tool.sh b/tool.sh\nold mode 100755\nnew mode 100644\n"));
    assert!(!diff.contains("__pycache__"));

    // The diff round-trips through quire-patch against the original texts.
    let text_files = |p: &str| fs::read_to_string(f.ws.path().join(p)).ok();
    let without_binary: Vec<_> = changes
        .iter()
        .filter(|c| c.path != "data.bin")
        .cloned()
        .collect();
    let out = quire_patch::apply_patch(
        &unified_diff(&without_binary),
        text_files,
        &Default::default(),
    )
    .unwrap();
    for file in out.files {
        let expected = fs::read_to_string(f.work().join(&file.path)).ok();
        assert_eq!(file.content, expected, "{}", file.path);
    }
}

#[test]
fn apply_then_rollback_restores_bytes_exactly() {
    let f = Fixture::new();
    let before = snapshot(f.ws.path());
    f.edit();
    let changes = f.copy.changes().unwrap();
    let applied = f.copy.apply_to_original(&changes, &f.backup()).unwrap();
    let o = f.ws.path();
    assert_eq!(
        fs::read_to_string(o.join("src/app.py")).unwrap(),
        "def main():\n    return 2\n\nprint(main())\n"
    );
    assert_eq!(fs::read(o.join("src/new/mod.py")).unwrap(), b"NEW = 1\n");
    assert!(!o.join("src/old.py").exists());
    assert!(
        !o.join("lib").exists(),
        "emptied folders removed when gone from the copy too"
    );
    assert_eq!(fs::read(o.join("data.bin")).unwrap(), vec![0u8, 9, 9]);
    assert_eq!(
        fs::metadata(o.join("tool.sh"))
            .unwrap()
            .permissions()
            .mode()
            & 0o777,
        0o644
    );
    assert!(o.join(".git").exists() || !before.contains_key(".git/"));
    assert!(AppliedChange::pending(&f.backup()));
    assert_eq!(applied.files().len(), changes.len());

    // Tests in the original might leave files behind; rollback only
    // restores the touched paths.
    applied.rollback().unwrap();
    assert_eq!(snapshot(o), before);
    assert!(!AppliedChange::pending(&f.backup()));
}

#[test]
fn commit_drops_backup() {
    let f = Fixture::new();
    f.edit();
    let changes = f.copy.changes().unwrap();
    let applied = f.copy.apply_to_original(&changes, &f.backup()).unwrap();
    applied.commit().unwrap();
    assert!(!f.backup().exists());
    assert_eq!(
        fs::read(f.ws.path().join("src/new/mod.py")).unwrap(),
        b"NEW = 1\n"
    );
    // After committing, the copy and the original agree.
    let after = snapshot(f.ws.path());
    assert_eq!(
        after.get("src/app.py"),
        snapshot(f.work()).get("src/app.py")
    );
}

#[test]
fn kill_safe_backup_reload() {
    let f = Fixture::new();
    let before = snapshot(f.ws.path());
    f.edit();
    let changes = f.copy.changes().unwrap();
    let applied = f.copy.apply_to_original(&changes, &f.backup()).unwrap();
    // Simulate a killed process: forget the handle without finishing.
    std::mem::forget(applied);
    let reloaded = AppliedChange::load(&f.backup()).unwrap();
    assert_eq!(reloaded.original(), f.ws.path());
    // A second apply is refused while the backup is pending.
    let err = f.copy.apply_to_original(&changes, &f.backup()).unwrap_err();
    assert!(matches!(err, ApplyError::BackupPending { .. }), "{err}");
    reloaded.rollback().unwrap();
    assert_eq!(snapshot(f.ws.path()), before);
    assert!(AppliedChange::load(&f.backup()).is_err());
}

#[test]
fn conflicts_refuse_and_leave_original_untouched() {
    let f = Fixture::new();
    f.edit();
    let changes = f.copy.changes().unwrap();
    let o = f.ws.path();
    // The user edits the original meanwhile. (Deleting src/old.py, which
    // the change deletes too, is no conflict: the result is the same.)
    write(o, "src/app.py", b"user edit\n");
    fs::remove_file(o.join("src/old.py")).unwrap();
    write(o, "src/new/mod.py", b"user created\n");
    write(o, "notes.txt", b"the user's own notes\n");
    fs::remove_file(o.join("tool.sh")).unwrap();
    let before = snapshot(o);
    let err = f.copy.apply_to_original(&changes, &f.backup()).unwrap_err();
    let ApplyError::Conflicts(conflicts) = &err else {
        panic!("expected conflicts, got {err}");
    };
    let got: Vec<(&str, ConflictReason)> = conflicts
        .iter()
        .map(|c| (c.path.as_str(), c.reason))
        .collect();
    assert_eq!(
        got,
        vec![
            ("notes.txt", ConflictReason::Modified),
            ("src/app.py", ConflictReason::Modified),
            ("src/new/mod.py", ConflictReason::Created),
            ("tool.sh", ConflictReason::Deleted),
        ]
    );
    assert!(err.to_string().contains("src/app.py"));
    assert_eq!(snapshot(o), before, "nothing written");
    assert!(!AppliedChange::pending(&f.backup()));
    // The diff flags the drift too.
    let again = f.copy.changes().unwrap();
    let app = again.iter().find(|c| c.path == "src/app.py").unwrap();
    assert!(app.original_changed);
}

#[test]
fn symlink_changes_apply_and_roll_back() {
    let f = Fixture::new();
    let before = snapshot(f.ws.path());
    let w = f.work();
    fs::remove_file(w.join("app_link.py")).unwrap();
    symlink("src/old.py", w.join("app_link.py")).unwrap();
    let changes = f.copy.changes().unwrap();
    assert_eq!(changes.len(), 1);
    assert_eq!(changes[0].new, Some(Content::Symlink("src/old.py".into())));
    let diff = unified_diff(&changes);
    assert!(
        diff.contains("-src/app.py\n\\ No newline at end of file\n+src/old.py\n"),
        "{diff}"
    );
    let applied = f.copy.apply_to_original(&changes, &f.backup()).unwrap();
    assert_eq!(
        fs::read_link(f.ws.path().join("app_link.py")).unwrap(),
        Path::new("src/old.py")
    );
    applied.rollback().unwrap();
    assert_eq!(snapshot(f.ws.path()), before);
}

#[test]
fn unsafe_change_paths_are_refused() {
    let f = Fixture::new();
    write(f.work(), "x.txt", b"x\n");
    let mut changes = f.copy.changes().unwrap();
    changes[0].path = "../escape.txt".into();
    assert!(matches!(
        f.copy.apply_to_original(&changes, &f.backup()),
        Err(ApplyError::UnsafePath { .. })
    ));
    changes[0].path = ".git/hooks/pre-commit".into();
    assert!(matches!(
        f.copy.apply_to_original(&changes, &f.backup()),
        Err(ApplyError::UnsafePath { .. })
    ));
    assert!(!f.ws.path().parent().unwrap().join("escape.txt").exists());
}

#[test]
fn writes_the_apply_would_refuse_are_known_before_the_apply() {
    let f = Fixture::new();
    let outside = tempfile::tempdir().unwrap();
    // A link out of the workspace is left out of the copy, so in the copy
    // `vendor/` is just a missing folder the agent could create.
    symlink(outside.path(), f.ws.path().join("vendor")).unwrap();
    symlink("nowhere", f.ws.path().join("dangling")).unwrap();
    let copy = SessionCopy::create(f.ws.path(), &f.state.path().join("work2")).unwrap();
    assert!(
        copy.resolve("vendor/lib.py").is_ok(),
        "the copy alone allows it"
    );
    assert!(matches!(
        copy.check_applicable("vendor/lib.py"),
        Err(quire_workspace::PathError::Outside { .. })
    ));
    assert!(matches!(
        copy.check_applicable("dangling/x.py"),
        Err(quire_workspace::PathError::DanglingSymlink { .. })
    ));
    assert!(matches!(
        copy.check_applicable("src/../.git/config"),
        Err(quire_workspace::PathError::Reserved { .. })
    ));
    assert!(matches!(
        copy.check_applicable("evaluation/test_x.py"),
        Err(quire_workspace::PathError::Reserved { .. })
    ));
    copy.check_applicable("src/app.py").unwrap();
    copy.check_applicable("src/brand/new.py").unwrap();
    copy.check_applicable("app_link.py").unwrap();

    // And the apply does refuse what the check refused.
    write(copy.root(), "vendor/lib.py", b"x = 1\n");
    let changes = copy.changes().unwrap();
    assert!(changes.iter().any(|c| c.path == "vendor/lib.py"));
    assert!(matches!(
        copy.apply_to_original(&changes, &f.state.path().join("backup2")),
        Err(ApplyError::UnsafePath { .. })
    ));
}
