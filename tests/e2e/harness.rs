use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use quire_store::{SessionRow, Store, StoredEvent};
use quire_testkit::ScriptedServer;

/// A data home, a copy of a fixture workspace, and the scripted server.
pub struct Env {
    pub home: tempfile::TempDir,
    pub ws_parent: tempfile::TempDir,
    pub server: ScriptedServer,
}

pub fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures")
        .join(name)
}

pub fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            if entry.file_name() == "__pycache__" {
                continue;
            }
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

impl Env {
    pub fn new(fixture_name: &str, server: ScriptedServer) -> Env {
        let ws_parent = tempfile::tempdir().unwrap();
        copy_dir(&fixture(fixture_name), &ws_parent.path().join(fixture_name));
        Env {
            home: tempfile::tempdir().unwrap(),
            ws_parent,
            server,
        }
    }

    pub fn ws(&self) -> PathBuf {
        std::fs::read_dir(self.ws_parent.path())
            .unwrap()
            .next()
            .unwrap()
            .unwrap()
            .path()
    }

    /// `quire` pointed at the scripted server, with a private data home.
    pub fn quire(&self) -> Command {
        self.quire_at(&self.server.openai_base_url())
    }

    /// `quire` pointed at another model server (e.g. after a resume).
    pub fn quire_at(&self, base_url: &str) -> Command {
        quire_in(self.home.path(), base_url)
    }

    pub fn run(&self, args: &[&str]) -> Output {
        let out = self.quire().args(args).output().unwrap();
        eprintln!(
            "--- quire {args:?} exit {:?}\nstdout:\n{}\nstderr:\n{}",
            out.status.code(),
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        out
    }

    pub fn store(&self) -> Store {
        Store::open(&self.home.path().join("quire.db")).unwrap()
    }

    pub fn only_session(&self) -> (SessionRow, Vec<StoredEvent>) {
        let store = self.store();
        let rows = store.list_sessions(&Default::default()).unwrap();
        assert_eq!(rows.len(), 1, "expected one session");
        let events = store.events(&rows[0].id).unwrap();
        (rows[0].clone(), events)
    }
}

pub fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

pub fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

pub fn kinds(events: &[StoredEvent]) -> Vec<String> {
    events.iter().map(|e| e.kind.clone()).collect()
}

pub fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap()
}

/// Every file under `root` (test caches aside) and its bytes: compared
/// before and after a kill, a half-written tree shows.
pub fn snapshot(root: &Path) -> BTreeMap<String, Vec<u8>> {
    fn walk(dir: &Path, root: &Path, out: &mut BTreeMap<String, Vec<u8>>) {
        for entry in std::fs::read_dir(dir).unwrap().flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if name == "__pycache__" || name == ".pytest_cache" {
                continue;
            }
            let path = entry.path();
            if path.is_dir() {
                walk(&path, root, out);
            } else {
                let rel = path
                    .strip_prefix(root)
                    .unwrap()
                    .to_string_lossy()
                    .into_owned();
                out.insert(rel, std::fs::read(&path).unwrap());
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(root, root, &mut out);
    out
}

/// `quire` on the data home `home`, talking to `base_url`, with fast
/// retries and no background note-taker racing the test for the scripted
/// server (the notes tests turn it on or distill explicitly).
pub fn quire_in(home: &Path, base_url: &str) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_quire"));
    cmd.env("QUIRE_HOME", home)
        .env_remove("QUIRE_AGENT")
        .env_remove("OPENAI_API_KEY")
        .env("NO_COLOR", "1")
        .args(["--base-url", base_url])
        .args([
            "-c",
            "model.retry_base_delay_ms=10",
            "-c",
            "model.request_timeout_secs=10",
            "-c",
            "notes.auto_distill=false",
        ])
        .current_dir(home);
    cmd
}

/// The evalsuite fixture's tasks: id, a marker of its prompt, the file,
/// the buggy and the fixed code.
pub const EVALSUITE_TASKS: &[(&str, &str, &str, &str, &str)] = &[
    (
        "fix-add",
        "returns the difference instead of the sum",
        "src/calc.py",
        "    return a - b",
        "    return a + b",
    ),
    (
        "clamp-range",
        "returns the lower bound for values above the range",
        "src/bounds.py",
        "    if value > high:\n        return low",
        "    if low > high:\n        raise ValueError(\"empty range\")\n    if value > high:\n        return high",
    ),
    (
        "greeting",
        "The greeting is too curt",
        "src/greet.py",
        "    return \"Hello \" + name",
        "    return f\"Hello, {name or 'stranger'}!\"",
    ),
];

/// The note files under a notes root (generated folder READMEs aside).
pub fn note_files(root: &Path) -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for e in entries.flatten() {
            let p = e.path();
            if p.is_dir() {
                walk(&p, out);
            } else if p.extension().is_some_and(|x| x == "md")
                && p.file_name().is_some_and(|n| n != "README.md")
            {
                out.push(p);
            }
        }
    }
    let mut out = Vec::new();
    walk(root, &mut out);
    out.sort();
    out
}
