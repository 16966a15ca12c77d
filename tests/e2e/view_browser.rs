//! `quire view` in a real browser: headless Chromium loads the main pages
//! of the shared data home (see `view.rs`), runs their scripts, and the test
//! reads the resulting DOM and the browser's console. Screenshots go to
//! `target/tmp/view-screenshots/` (or `$QUIRE_VIEW_SCREENSHOTS`), so a
//! person can look at them.
//!
//! Chromium comes from Debian's `chromium` package (`.ci/run` installs it).
//! Without it the test says so and passes locally; on CI (`CI` set) it fails.

use std::path::{Path, PathBuf};
use std::process::Command;

use std::time::Duration;

use crate::view::{NOTE_TITLE, Viewer, first_session, home, slow_session};

fn chromium() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("QUIRE_CHROMIUM") {
        return Some(PathBuf::from(path));
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .flat_map(|dir| {
            ["chromium", "chromium-browser", "google-chrome"]
                .into_iter()
                .map(move |name| dir.join(name))
        })
        .find(|p| p.is_file())
}

fn screenshots_dir() -> PathBuf {
    std::env::var_os("QUIRE_VIEW_SCREENSHOTS")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("view-screenshots"))
}

/// Virtual time for a page's scripts to run before the DOM is read; it
/// pauses while a request is pending, so fetches finish within it.
const SETTLE: &str = "--virtual-time-budget=4000";

struct Browser {
    exe: PathBuf,
    profile: tempfile::TempDir,
}

/// What one headless load left: the DOM after scripts ran, and the
/// console messages the page logged.
struct Loaded {
    dom: String,
    console: Vec<String>,
}

impl Browser {
    fn command(&self, window: &str) -> Command {
        let mut cmd = Command::new(&self.exe);
        cmd.args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--disable-extensions",
            "--disable-background-networking",
            "--hide-scrollbars",
            "--enable-logging=stderr",
            "--v=0",
        ])
        .arg(format!("--window-size={window}"))
        .arg(format!("--user-data-dir={}", self.profile.path().display()));
        cmd
    }

    fn load(&self, url: &str) -> Loaded {
        self.load_with(url, &[SETTLE])
    }

    fn load_with(&self, url: &str, extra: &[&str]) -> Loaded {
        let out = self
            .command("1280,1000")
            .args(extra)
            .arg("--dump-dom")
            .arg(url)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "chromium failed on {url}:\n{stderr}");
        Loaded {
            dom: String::from_utf8_lossy(&out.stdout).into_owned(),
            console: stderr
                .lines()
                .filter(|l| l.contains(":CONSOLE"))
                .map(str::to_string)
                .collect(),
        }
    }

    fn screenshot(&self, url: &str, to: &Path) {
        let out = self
            .command("1280,1600")
            .arg(SETTLE)
            .arg(format!("--screenshot={}", to.display()))
            .arg(url)
            .output()
            .unwrap();
        assert!(
            out.status.success() && to.is_file(),
            "no screenshot of {url}:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

/// The `<body …>` start tag: where the probes would leave their mark.
fn body_tag(dom: &str) -> &str {
    let start = dom.find("<body").expect("a body");
    let end = dom[start..].find('>').unwrap() + start;
    &dom[start..=end]
}

fn browser() -> Option<Browser> {
    let Some(exe) = chromium() else {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI must have chromium (`apt-get install chromium`, see .ci/run)"
        );
        eprintln!(
            "SKIPPED the browser test: no chromium on PATH (apt-get install chromium, or set QUIRE_CHROMIUM)"
        );
        return None;
    };
    Some(Browser {
        exe,
        profile: tempfile::tempdir().unwrap(),
    })
}

/// A page opened while its session runs follows it to the end: the live
/// script swaps in each new state, without a reload.
#[test]
fn a_running_session_page_updates_in_the_browser() {
    let Some(browser) = browser() else {
        return;
    };
    let root = tempfile::tempdir().unwrap();
    // Five slow steps: time for the browser to start and open the page
    // while the session still runs, even on a busy machine.
    let mut session = slow_session(root.path(), Duration::from_millis(4000));
    let viewer = Viewer::start(root.path());
    let id = first_session(&viewer);
    assert_eq!(
        viewer.json(&format!("/api/sessions/{id}/status"))["running"],
        true
    );
    // Virtual time stands still while a poll is in flight, and the script
    // stops polling when the session ends: a budget this large ends when
    // the session does, in real time.
    let loaded = browser.load_with(
        &viewer.url(&format!("/sessions/{id}")),
        &["--virtual-time-budget=100000000"],
    );
    assert!(session.run.wait().unwrap().success());
    let body = body_tag(&loaded.dom);
    assert!(
        body.contains("data-live="),
        "the page opened after the session ended (machine too slow?): {body}"
    );
    assert!(
        body.contains("data-live=\"ended\""),
        "the script saw the end: {body}"
    );
    assert!(
        body.contains("data-live-events="),
        "it swapped in new events: {body}"
    );
    assert!(
        loaded.dom.contains("Session ended"),
        "the page shows the end without a reload"
    );
    assert!(loaded.console.is_empty(), "{}", loaded.console.join("\n"));
}

#[test]
fn the_main_pages_render_search_works_both_views_show_and_probes_stay_inert() {
    let Some(exe) = chromium() else {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI must have chromium (`apt-get install chromium`, see .ci/run)"
        );
        eprintln!(
            "SKIPPED the browser test: no chromium on PATH (apt-get install chromium, or set QUIRE_CHROMIUM)"
        );
        return;
    };
    let home = home();
    let viewer = Viewer::start(&home.root);
    let browser = Browser {
        exe,
        profile: tempfile::tempdir().unwrap(),
    };
    let shots = screenshots_dir();
    std::fs::create_dir_all(&shots).unwrap();

    let writer = format!("/sessions/{}", home.writer);
    let note = format!("/notes/{}", home.note_id);
    let run = format!("/evals/{}", home.runs[0]);
    let compare = format!("/evals/compare?a={}&b={}", home.runs[1], home.runs[0]);
    let curve = format!(
        "/evals/curve?learn={}&baseline={}",
        home.learn, home.baseline
    );
    let pages: Vec<(&str, &str, Vec<&str>)> = vec![
        ("start", "/", vec!["Quire data home", "Recent sessions"]),
        (
            "sessions",
            "/sessions",
            vec!["class=\"sessions\"", home.reader.as_str()],
        ),
        (
            "session",
            &writer,
            vec![
                "class=\"agent-view\"",
                "class=\"user-view\"",
                "id=\"requests\"",
                "Final diff",
            ],
        ),
        (
            "notes-search",
            "/notes#q=discount",
            vec!["data-query=\"discount\"", NOTE_TITLE],
        ),
        (
            "note",
            &note,
            vec!["id=\"frontmatter\"", "<strong>ValueError</strong>"],
        ),
        ("evals", "/evals", vec![home.runs[0].as_str()]),
        ("eval-run", &run, vec!["id=\"tasks\"", "shift-ten"]),
        ("compare", &compare, vec!["id=\"pairs\""]),
        ("curve", &curve, vec!["id=\"curve\"", "learn vs baseline"]),
        (
            "generations",
            "/generations/mini",
            vec!["id=\"lineage\"", "tool:edit_file:error:no_match"],
        ),
        (
            "generation-diff",
            "/generations/mini/diff?a=0&b=1",
            vec!["copied verbatim"],
        ),
    ];
    for (name, path, wanted) in &pages {
        let loaded = browser.load(&viewer.url(path));
        for w in wanted {
            assert!(
                loaded.dom.contains(w),
                "{name} ({path}) lacks `{w}` after rendering"
            );
        }
        let body = body_tag(&loaded.dom);
        assert!(!body.contains("data-xss"), "{name}: a probe ran: {body}");
        assert!(
            !loaded.dom.contains("<img src=\"x\""),
            "{name}: a probe became an element"
        );
        assert!(
            loaded.console.is_empty(),
            "{name} logged to the console:\n{}",
            loaded.console.join("\n")
        );
        browser.screenshot(&viewer.url(path), &shots.join(format!("{name}.png")));
    }

    // Search as you type: the hits came from the script's request (the
    // page was served without a query), and name the note's path.
    let search = browser.load(&viewer.url("/notes#q=percent"));
    let hits = search.dom.split("id=\"hits\"").nth(1).unwrap();
    assert!(hits.contains("data-query=\"percent\"") || hits.starts_with(" data-query=\"percent\""));
    assert!(hits.contains(&format!("/notes/{}", home.note_id)), "{hits}");

    // The probes are on the session and note pages, as text.
    let session = browser.load(&viewer.url(&writer));
    assert!(
        session
            .dom
            .contains("&lt;script&gt;document.body.setAttribute")
    );
    assert!(session.dom.contains("&lt;img src=x onerror="));
    let views = session.dom.matches("class=\"agent-view\"").count();
    assert!(views >= 3, "one pair of views per tool call: {views}");
    assert_eq!(views, session.dom.matches("class=\"user-view\"").count());

    eprintln!("screenshots of the viewer: {}", shots.display());
}
