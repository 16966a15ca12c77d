//! `quire view` end to end: the real binary serves a data home filled by
//! real sessions (the scripted model plays the coding agent, the
//! note-taker and the meta model), and a real HTTP client reads every page
//! and JSON endpoint. The model's text carries XSS probes; they must reach
//! the browser as text. `view_browser.rs` drives Chromium over the same home.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use quire_store::Store;
use quire_testkit::{Fault, RecordedRequest, Reply, Script, ScriptedServer, call};
use serde_json::{Value, json};

use crate::harness::{copy_dir, fixture, quire_in, stdout};

/// Runs when a page lets model text through as markup.
pub const XSS_SCRIPT: &str = "<script>document.body.setAttribute('data-xss','script')</script>";
pub const XSS_IMG: &str = "<img src=x onerror=\"document.body.setAttribute('data-xss','img')\">";
pub const NOTE_TITLE: &str = "Discount percentages need a range check";
const NOTE_TAKER: &str = "You keep the notebook of a coding agent";
const FIX_OLD: &str = "    return round(price * (100 - percent) / 100, 2)";

/// The shared data home and what the tests look for in it.
pub struct Home {
    pub root: PathBuf,
    /// The session that wrote the note (probes in its reply and summary).
    pub writer: String,
    /// The session that searched for and read the note.
    pub reader: String,
    pub note_id: String,
    /// Two eval runs of the meta loop (generation 0 and 1 on val).
    pub runs: Vec<String>,
    /// A learn run and its baseline on the three-task suite.
    pub learn: String,
    pub baseline: String,
}

fn tool_steps(req: &RecordedRequest) -> usize {
    req.messages()
        .iter()
        .filter(|m| m.get("role").and_then(Value::as_str) == Some("tool"))
        .count()
}

fn writer_script() -> Script {
    Script::from_fn(|req, _| {
        if req.all_text().contains(NOTE_TAKER) {
            return match tool_steps(req) {
                0 => Reply::ToolCalls(vec![call(
                    "note_create",
                    json!({
                        "title": NOTE_TITLE,
                        "kind": "hindsight",
                        "scope": "project",
                        "topic": "pricing",
                        "description": format!("apply_discount accepted negative percentages {XSS_IMG}"),
                        "body": format!("## Error\n\nNegative percent was accepted.\n\n## Fix\n\nRaise **ValueError** when percent < 0.\n\n{XSS_SCRIPT}\n\nInline {XSS_IMG} too. [click](javascript:alert(1))\n"),
                        "error_signatures": ["Failed: DID NOT RAISE ValueError"],
                        "keywords": ["discount", "percent", "validation"],
                        "files": ["src/pricing.py"],
                        "symbols": ["apply_discount"],
                    }),
                )]),
                _ => Reply::ToolCalls(vec![call("note_done", json!({"summary": "one note"}))]),
            };
        }
        match tool_steps(req) {
            0 => Reply::TextAndToolCalls(
                format!("Let me look at the code. {XSS_SCRIPT} {XSS_IMG}"),
                vec![call("read_file", json!({"path": "src/pricing.py"}))],
            ),
            1 => Reply::ToolCalls(vec![call(
                "edit_file",
                json!({
                    "path": "src/pricing.py",
                    "old": FIX_OLD,
                    "new": format!("    if percent < 0:\n        raise ValueError(\"percent must be between 0 and 100\")\n{FIX_OLD}"),
                }),
            )]),
            2 => Reply::ToolCalls(vec![call("run_tests", json!({}))]),
            _ => Reply::ToolCalls(vec![call(
                "finish",
                json!({"summary": format!("apply_discount rejects negative percentages {XSS_IMG}")}),
            )]),
        }
    })
}

fn reader_script() -> Script {
    Script::from_fn(|req, _| match tool_steps(req) {
        0 => Reply::ToolCalls(vec![call(
            "search_notes",
            json!({"query": "discount percent range check"}),
        )]),
        1 => Reply::ToolCalls(vec![call("read_file", json!({"path": "src/pricing.py"}))]),
        2 => Reply::ToolCalls(vec![call(
            "edit_file",
            json!({"path": "src/pricing.py", "old": FIX_OLD, "new": format!("    # the range is checked above\n{FIX_OLD}")}),
        )]),
        3 => Reply::ToolCalls(vec![call("run_tests", json!({}))]),
        _ => Reply::ToolCalls(vec![call("finish", json!({"summary": "noted the check"}))]),
    })
}

fn run_ok(cmd: &mut Command, what: &str) -> String {
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "{what} failed ({:?}):\n{}\n{}",
        out.status.code(),
        stdout(&out),
        String::from_utf8_lossy(&out.stderr)
    );
    stdout(&out)
}

fn session_ids(root: &Path) -> Vec<String> {
    let store = Store::open(&root.join("quire.db")).unwrap();
    let mut rows = store.list_sessions(&Default::default()).unwrap();
    rows.sort_by_key(|r| r.started_at);
    rows.into_iter().map(|r| r.id.0).collect()
}

fn build_home() -> Home {
    // One fixed folder, replaced on each run, so runs do not pile up.
    let root = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("view-home");
    let _ = std::fs::remove_dir_all(&root);
    std::fs::create_dir_all(&root).unwrap();
    let ws_parent = tempfile::tempdir().unwrap();
    let ws = ws_parent.path().join("pricing");
    copy_dir(&fixture("pricing"), &ws);
    let ws_arg = ws.to_str().unwrap();

    // 1. A session that fixes the bug; its note-taker writes one note.
    let server = ScriptedServer::start_blocking(writer_script());
    let url = server.openai_base_url();
    run_ok(
        quire_in(&root, &url).args(["run", ws_arg, "--yes"]),
        "the writing session",
    );
    run_ok(
        quire_in(&root, &url).args(["notes", "distill", "--pending"]),
        "distillation",
    );
    server.assert_clean();
    let writer = session_ids(&root)[0].clone();
    let note_file = crate::harness::note_files(&root.join("notes"))
        .into_iter()
        .next()
        .expect("the note-taker wrote a note");
    let note_id = crate::harness::read(&note_file)
        .lines()
        .find_map(|l| l.strip_prefix("id: "))
        .unwrap()
        .trim_matches('"')
        .to_string();

    // 2. A later session that searches the notes and finds it.
    let server = ScriptedServer::start_blocking(reader_script());
    run_ok(
        quire_in(&root, &server.openai_base_url()).args([
            "run",
            ws_arg,
            "--yes",
            "--task",
            "Check the discount rules",
        ]),
        "the reading session",
    );
    let reader = session_ids(&root)[1].clone();

    // 3. One round of the meta loop: eval runs and two generations.
    let suite_parent = tempfile::tempdir().unwrap();
    let suite = suite_parent.path().join("metasuite");
    copy_dir(&fixture("metasuite"), &suite);
    let agent = root.join("agents/mini");
    for (rel, text) in quire_config::builtin_agent_files() {
        let path = agent.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    let server = ScriptedServer::start_blocking(crate::meta::script::script());
    run_ok(
        quire_in(&root, &server.openai_base_url()).args([
            "meta",
            "improve",
            "mini",
            "--suite",
            suite.to_str().unwrap(),
            "--rounds",
            "1",
            "--jobs",
            "2",
            "--timeout",
            "60",
        ]),
        "meta improve",
    );
    let store = Store::open(&root.join("quire.db")).unwrap();
    let runs: Vec<String> = store
        .list_eval_runs(None, None)
        .unwrap()
        .into_iter()
        .filter(|s| s.run.split == "val")
        .map(|s| s.run.id)
        .collect();
    assert!(runs.len() >= 2, "two val runs: {runs:?}");

    // 4. A learn run and a baseline on the three-task suite: a learning curve.
    let evalsuite_parent = tempfile::tempdir().unwrap();
    let evalsuite = evalsuite_parent.path().join("evalsuite");
    copy_dir(&fixture("evalsuite"), &evalsuite);
    let server = ScriptedServer::start_blocking(crate::learn::script());
    let url = server.openai_base_url();
    let run_id = |out: String| -> String {
        let v: Value = serde_json::from_str(&out).unwrap();
        v["run"]["id"].as_str().unwrap().to_string()
    };
    let suite_arg = evalsuite.to_str().unwrap();
    let learn = run_id(run_ok(
        quire_in(&root, &url).args(["--json", "eval", "run", suite_arg, "--learn"]),
        "the learn run",
    ));
    let baseline = run_id(run_ok(
        quire_in(&root, &url).args(["--json", "eval", "run", suite_arg, "--notes", "off"]),
        "the baseline run",
    ));
    Home {
        root,
        writer,
        reader,
        note_id,
        runs,
        learn,
        baseline,
    }
}

/// Built once for all viewer tests (HTTP and browser).
pub fn home() -> &'static Home {
    static HOME: OnceLock<Home> = OnceLock::new();
    HOME.get_or_init(build_home)
}

/// A running `quire view` on a data home; killed when dropped.
pub struct Viewer {
    child: Child,
    pub base: String,
    pub token: String,
}

impl Viewer {
    pub fn start(root: &Path) -> Viewer {
        let mut child = Command::new(env!("CARGO_BIN_EXE_quire"))
            .env("QUIRE_HOME", root)
            .env("NO_COLOR", "1")
            .args(["view", "--port", "0"])
            .current_dir(root)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let mut line = String::new();
        let mut out = BufReader::new(child.stdout.take().unwrap());
        out.read_line(&mut line).unwrap();
        // Keep reading, so the viewer never writes into a closed pipe.
        std::thread::spawn(move || std::io::copy(&mut out, &mut std::io::sink()));
        let url = line
            .trim()
            .strip_prefix("quire view: ")
            .unwrap_or_else(|| panic!("no URL printed: `{line}`"))
            .to_string();
        let (base, token) = url.split_once("/?token=").unwrap();
        assert!(
            base.starts_with("http://127.0.0.1:"),
            "loopback only: {base}"
        );
        Viewer {
            child,
            base: base.to_string(),
            token: token.to_string(),
        }
    }

    /// `path` with the token added to its query.
    pub fn url(&self, path: &str) -> String {
        let (path, fragment) = path.split_once('#').map_or((path, ""), |(p, f)| (p, f));
        let sep = if path.contains('?') { '&' } else { '?' };
        let fragment = if fragment.is_empty() {
            String::new()
        } else {
            format!("#{fragment}")
        };
        format!("{}{path}{sep}token={}{fragment}", self.base, self.token)
    }

    pub fn get(&self, path: &str) -> (u16, String) {
        let response = client().get(self.url(path)).send().unwrap();
        let status = response.status().as_u16();
        (status, response.text().unwrap())
    }

    pub fn page(&self, path: &str) -> String {
        let (status, body) = self.get(path);
        assert_eq!(status, 200, "GET {path}:\n{body}");
        body
    }

    pub fn json(&self, path: &str) -> Value {
        let body = self.page(path);
        serde_json::from_str(&body).unwrap_or_else(|e| panic!("{path} is not JSON ({e}): {body}"))
    }
}

impl Drop for Viewer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn client() -> reqwest::blocking::Client {
    reqwest::blocking::Client::builder()
        .timeout(Duration::from_secs(30))
        .build()
        .unwrap()
}

fn assert_inert(page: &str, what: &str) {
    for probe in [XSS_SCRIPT, XSS_IMG, "<img src=x", "javascript:alert"] {
        assert!(
            !page.contains(probe),
            "{what} lets `{probe}` through as markup"
        );
    }
}

#[test]
fn every_page_and_json_endpoint_shows_the_data_home() {
    let home = home();
    let v = Viewer::start(&home.root);

    let start = v.page("/");
    let all = v.json("/api/sessions?per=500");
    let newest = all["sessions"][0]["id"].as_str().unwrap();
    assert!(start.contains(newest), "recent sessions on the start page");
    assert!(
        start.contains(&format!("{} sessions", all["total"])),
        "the count"
    );
    assert!(start.contains(&home.learn), "recent eval runs");

    let list = v.page("/sessions");
    assert!(list.contains(&home.writer) && list.contains(&home.reader));
    let json = v.json("/api/sessions?project=pricing");
    assert_eq!(json["total"], 2, "{json}");
    assert_eq!(
        json["sessions"][0]["id"],
        home.reader.as_str(),
        "newest first"
    );

    let trace = v.page(&format!("/sessions/{}", home.writer));
    for part in [
        "agent view (what the model read)",
        "user view",
        "id=\"requests\"",
        "Final diff",
        "src/pricing.py",
        "Approval",
        "Session ended",
    ] {
        assert!(trace.contains(part), "the trace lacks `{part}`");
    }
    assert!(trace.contains("class=\"agent-view\"") && trace.contains("class=\"user-view\""));
    assert!(
        trace.contains(&format!("/notes/{}", home.note_id)),
        "links the note distilled from it"
    );
    assert!(trace.contains("raise ValueError"), "the diff's added line");
    // Requests table: one row per model call, with cached and fresh columns.
    let requests = trace
        .split("id=\"requests\"")
        .nth(1)
        .unwrap()
        .split("</table>")
        .next()
        .unwrap();
    assert_eq!(requests.matches("<tr><td>").count(), 4, "{requests}");
    let json = v.json(&format!("/api/sessions/{}", home.writer));
    assert_eq!(json["session"]["id"], home.writer.as_str());
    assert!(json["events"].as_array().unwrap().len() > 10);
    let status = v.json(&format!("/api/sessions/{}/status", home.writer));
    assert_eq!(status["running"], false);
    assert_eq!(
        status["events"].as_u64().unwrap() as usize,
        json["events"].as_array().unwrap().len()
    );

    let reader = v.page(&format!("/sessions/{}", home.reader));
    assert!(
        reader.contains(&format!("/notes/{}", home.note_id)),
        "links the note it read"
    );

    let notes = v.page("/notes");
    assert!(
        notes.contains(NOTE_TITLE) && notes.contains("projects/"),
        "the tree"
    );
    let hits = v.page("/notes/hits?q=discount");
    assert!(hits.contains(NOTE_TITLE), "{hits}");
    let none = v.page("/notes/hits?q=zebra");
    assert!(none.contains("No note matches"), "{none}");
    let json = v.json("/api/notes/search?q=percent");
    assert_eq!(json["hits"][0]["id"], home.note_id.as_str());
    assert_eq!(v.json("/api/notes")["notes"].as_array().unwrap().len(), 1);
    let note = v.page(&format!("/notes/{}", home.note_id));
    for part in [
        "id=\"frontmatter\"",
        "hindsight",
        "Failed: DID NOT RAISE ValueError",
        "helpful / harmful",
        "<strong>ValueError</strong>",
        "apply_discount",
    ] {
        assert!(note.contains(part), "the note page lacks `{part}`");
    }
    let provenance = note.split("id=\"provenance\"").nth(1).unwrap();
    assert!(
        provenance.contains(&home.writer),
        "written by the first session"
    );
    let used = note
        .split("id=\"used-by\"")
        .nth(1)
        .unwrap()
        .split("</td>")
        .next()
        .unwrap();
    assert!(
        used.contains(&home.reader),
        "used by the second session: {used}"
    );
    assert_eq!(
        v.json(&format!("/api/notes/{}", home.note_id))["used_by"][0],
        home.reader.as_str()
    );

    let evals = v.page("/evals");
    for run in &home.runs {
        assert!(evals.contains(run.as_str()));
    }
    let run = v.page(&format!("/evals/{}", home.runs[0]));
    assert!(
        run.contains("id=\"tasks\"") && run.contains("shift-ten") && run.contains("product-pair")
    );
    assert!(run.contains("95% CI"), "intervals");
    let json = v.json(&format!("/api/evals/{}", home.runs[0]));
    assert_eq!(json["run"]["id"], home.runs[0].as_str());
    let status = v.json(&format!("/api/evals/{}/status", home.runs[0]));
    assert_eq!(status["done"], status["attempts"]);
    assert!(v.json("/api/evals")["runs"].as_array().unwrap().len() >= 2);
    let cmp = v.page(&format!(
        "/evals/compare?a={}&b={}",
        home.runs[1], home.runs[0]
    ));
    assert!(
        cmp.contains("paired attempts") && cmp.contains("id=\"pairs\""),
        "{cmp}"
    );
    assert!(
        cmp.contains("gained"),
        "generation 1 recovers where 0 gave up"
    );

    let learn = v.page(&format!("/evals/{}", home.learn));
    let curve_link = format!(
        "/evals/curve?learn={}&amp;baseline={}",
        home.learn, home.baseline
    );
    assert!(
        learn.contains(&curve_link),
        "a learn run links its curve against the baseline"
    );
    let curve = v.page(&format!(
        "/evals/curve?learn={}&baseline={}",
        home.learn, home.baseline
    ));
    assert!(
        curve.contains("learn vs baseline: prompt tokens"),
        "{curve}"
    );
    assert!(curve.contains("/evals/curve.svg?learn="), "the chart");
    let svg = client()
        .get(v.url(&format!(
            "/evals/curve.svg?learn={}&baseline={}",
            home.learn, home.baseline
        )))
        .send()
        .unwrap();
    assert_eq!(
        svg.headers()["content-type"],
        "image/svg+xml; charset=utf-8"
    );
    let svg = svg.text().unwrap();
    assert!(
        svg.starts_with("<svg") && svg.contains("<polyline"),
        "{svg}"
    );

    let gens = v.page("/generations");
    assert!(gens.contains("/generations/mini"));
    let lineage = v.page("/generations/mini");
    assert!(lineage.contains("graph.svg") && lineage.contains("chart.svg"));
    assert!(
        lineage.contains("tool:edit_file:error:no_match"),
        "the part g1 changed"
    );
    let svg = client()
        .get(v.url("/generations/mini/graph.svg"))
        .send()
        .unwrap();
    assert_eq!(
        svg.headers()["content-type"],
        "image/svg+xml; charset=utf-8"
    );
    let svg = svg.text().unwrap();
    assert_eq!(svg.matches("class=\"node\"").count(), 2);
    assert_eq!(svg.matches("class=\"edge\"").count(), 1);
    assert!(v.page("/generations/mini/chart.svg").contains("val-rate"));
    let diff = v.page("/generations/mini/diff?a=0&b=1");
    assert!(
        diff.contains("tool:edit_file:error:no_match") && diff.contains("copied verbatim"),
        "{diff}"
    );
    assert_eq!(
        v.json("/api/generations/mini")["generations"]
            .as_array()
            .unwrap()
            .len(),
        2
    );
}

#[test]
fn the_session_list_filters_and_pages() {
    let home = home();
    let v = Viewer::start(&home.root);
    let first = v.page("/sessions?project=pricing&per=1");
    assert!(first.contains("2 matching · page 1 of 2"), "{first}");
    assert!(first.contains(&home.reader) && !first.contains(&format!(">{}<", home.writer)));
    assert!(first.contains("rel=\"next\""));
    let second = v.page("/sessions?project=pricing&per=1&page=2");
    assert!(second.contains(&home.writer) && second.contains("rel=\"prev\""));
    let none = v.page("/sessions?project=pricing&status=running");
    assert!(none.contains("No session matches"), "{none}");
    let all = v.json("/api/sessions")["total"].as_u64().unwrap();
    assert!(all >= 6, "the pricing sessions and the meta loop's: {all}");
    assert_eq!(v.json("/api/sessions?agent=default")["total"], all);
    assert_eq!(v.json("/api/sessions?agent=nosuch")["total"], 0);
    let today = chrono::Utc::now().format("%Y-%m-%d").to_string();
    let dated = v.json(&format!("/api/sessions?since={today}&project=pricing"));
    assert_eq!(dated["total"], 2);
    let past = v.json("/api/sessions?until=2001-01-01");
    assert_eq!(past["total"], 0);
}

#[test]
fn model_written_probes_reach_the_page_as_text() {
    let home = home();
    let v = Viewer::start(&home.root);
    for path in [
        format!("/sessions/{}", home.writer),
        "/sessions".to_string(),
        "/".to_string(),
        format!("/notes/{}", home.note_id),
        "/notes".to_string(),
        "/notes?q=discount".to_string(),
        "/notes/hits?q=discount".to_string(),
    ] {
        let page = v.page(&path);
        assert_inert(&page, &path);
        if path.starts_with("/sessions/") || path.starts_with("/notes/") {
            assert!(
                page.contains("&lt;script&gt;") || page.contains("&lt;img src=x"),
                "{path} shows the probe as text"
            );
        }
    }
    let (_, json) = v.get(&format!("/api/sessions/{}", home.writer));
    assert!(
        json.contains("data-xss"),
        "JSON keeps the text as it was (served as JSON, not HTML)"
    );
}

#[test]
fn unknown_pages_and_bad_ids_get_a_clear_page() {
    let home = home();
    let v = Viewer::start(&home.root);
    for (path, status, words) in [
        ("/no/such/page", 404, "there is no page at /no/such/page"),
        (
            "/sessions/01NOSUCHSESSION",
            404,
            "no session matches `01NOSUCHSESSION`",
        ),
        ("/api/sessions/01NOSUCHSESSION", 404, "no session matches"),
        (
            "/notes/01NOSUCHNOTE",
            404,
            "no note has the id `01NOSUCHNOTE`",
        ),
        ("/evals/nosuchrun", 404, "no eval run matches `nosuchrun`"),
        (
            "/generations/nosuchagent",
            404,
            "no agent named `nosuchagent` has generations",
        ),
        ("/generations/..%2F..%2Fetc", 404, "has generations"),
        (
            "/generations/mini/diff?a=0&b=99",
            404,
            "agent `mini` has no generation 99",
        ),
        (
            "/generations/mini/diff?a=zero&b=1",
            400,
            "`a` must be a generation number",
        ),
        (
            "/sessions?since=yesterday",
            400,
            "`since` must be a date like 2025-01-31, not `yesterday`",
        ),
        (
            "/sessions?page=banana",
            400,
            "the query is not understood: page: invalid digit",
        ),
        ("/evals/compare?a=x", 400, "the `b` parameter"),
        ("/evals/curve?learn=x", 400, "the `baseline` parameter"),
    ] {
        let (got, body) = v.get(path);
        assert_eq!(got, status, "GET {path}:\n{body}");
        assert!(
            !body.contains(&v.token),
            "GET {path}: the page repeats the token"
        );
        assert!(
            body.contains(words),
            "GET {path} does not say `{words}`:\n{body}"
        );
        assert!(body.contains("<h1>"), "a page, not a bare error: {body}");
    }
    let (got, body) = v.get(&format!("/evals/compare?a={0}&b={0}", home.runs[0]));
    assert_eq!(got, 400);
    assert!(body.contains("both sides name run"), "{body}");
}

#[test]
fn the_guard_wants_loopback_host_the_token_and_reads_only() {
    let home = home();
    let v = Viewer::start(&home.root);
    let c = client();
    let plain = format!("{}/sessions", v.base);
    let r = c.get(&plain).send().unwrap();
    assert_eq!(r.status(), 403);
    assert!(r.text().unwrap().contains("needs its access token"));
    let r = c
        .get(format!("{plain}?token=0123456789abcdef0123456789abcdef"))
        .send()
        .unwrap();
    assert_eq!(r.status(), 403, "a wrong token");
    let r = c
        .get(v.url("/sessions"))
        .header("Host", "attacker.example")
        .send()
        .unwrap();
    assert_eq!(r.status(), 403, "DNS rebinding: another Host name");
    assert!(r.text().unwrap().contains("answers only to 127.0.0.1"));
    let r = c.post(v.url("/sessions")).send().unwrap();
    assert_eq!(r.status(), 405, "read-only");

    let r = c.get(v.url("/sessions")).send().unwrap();
    assert_eq!(r.status(), 200);
    let csp = r.headers()["content-security-policy"]
        .to_str()
        .unwrap()
        .to_string();
    assert!(
        csp.contains("default-src 'none'") && csp.contains("script-src 'nonce-"),
        "{csp}"
    );
    let cookie = r.headers()["set-cookie"].to_str().unwrap().to_string();
    assert!(
        cookie.contains("HttpOnly") && cookie.contains("SameSite=Strict"),
        "{cookie}"
    );
    let pair = cookie.split(';').next().unwrap().to_string();
    let r = c.get(&plain).header("Cookie", pair).send().unwrap();
    assert_eq!(r.status(), 200, "the cookie stands in for the token");
    let r = c
        .get(&plain)
        .header("Cookie", format!("quire_view_1={}", v.token))
        .send()
        .unwrap();
    assert_eq!(r.status(), 403, "another viewer's cookie name");

    // The nonce on the page's script is the one in the CSP, and changes per answer.
    let notes = c.get(v.url("/notes")).send().unwrap();
    let csp = notes.headers()["content-security-policy"]
        .to_str()
        .unwrap()
        .to_string();
    let nonce = csp
        .split("'nonce-")
        .nth(1)
        .unwrap()
        .split('\'')
        .next()
        .unwrap()
        .to_string();
    assert!(
        notes
            .text()
            .unwrap()
            .contains(&format!("<script nonce=\"{nonce}\">"))
    );
    let again = c.get(v.url("/notes")).send().unwrap();
    assert!(
        !again.headers()["content-security-policy"]
            .to_str()
            .unwrap()
            .contains(&nonce)
    );
}

/// A session running in the background whose model answers each step
/// after `delay`; the workspace and server live as long as it.
pub struct SlowSession {
    pub run: Child,
    _server: ScriptedServer,
    _ws: tempfile::TempDir,
}

pub fn slow_session(root: &Path, delay: Duration) -> SlowSession {
    let ws_parent = tempfile::tempdir().unwrap();
    let ws = ws_parent.path().join("pricing");
    copy_dir(&fixture("pricing"), &ws);
    let slow = |reply: Reply| Reply::Fault(Fault::Delay(delay, Box::new(reply)));
    let server = ScriptedServer::start_blocking(Script::sequence(vec![
        slow(Reply::ToolCalls(vec![call(
            "read_file",
            json!({"path": "src/pricing.py"}),
        )])),
        slow(Reply::ToolCalls(vec![call("list_files", json!({}))])),
        slow(Reply::ToolCalls(vec![call(
            "edit_file",
            json!({"path": "src/pricing.py", "old": FIX_OLD, "new": format!("    if percent < 0:\n        raise ValueError(\"negative\")\n{FIX_OLD}")}),
        )])),
        slow(Reply::ToolCalls(vec![call("run_tests", json!({}))])),
        slow(Reply::ToolCalls(vec![call(
            "finish",
            json!({"summary": "looked around"}),
        )])),
    ]));
    let run = quire_in(root, &server.openai_base_url())
        .args(["run", ws.to_str().unwrap(), "--yes"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    SlowSession {
        run,
        _server: server,
        _ws: ws_parent,
    }
}

/// The id of the first session in `root`, once it exists.
pub fn first_session(v: &Viewer) -> String {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let list = v.json("/api/sessions");
        if let Some(id) = list["sessions"][0]["id"].as_str() {
            return id.to_string();
        }
        assert!(Instant::now() < deadline, "the session never appeared");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A session whose model answers slowly: its page carries the live script
/// and its status endpoint shows events arriving until it ends.
#[test]
fn a_running_session_is_shown_live() {
    let root = tempfile::tempdir().unwrap();
    let mut session = slow_session(root.path(), Duration::from_millis(1200));
    let run = &mut session.run;
    let v = Viewer::start(root.path());
    let deadline = Instant::now() + Duration::from_secs(30);
    let id = first_session(&v);
    let status = v.json(&format!("/api/sessions/{id}/status"));
    assert_eq!(status["running"], true, "{status}");
    let page = v.page(&format!("/sessions/{id}"));
    assert!(
        page.contains("/api/sessions/") && page.contains("<script nonce="),
        "the live script"
    );
    let mut counts = vec![status["events"].as_u64().unwrap()];
    loop {
        let s = v.json(&format!("/api/sessions/{id}/status"));
        let n = s["events"].as_u64().unwrap();
        if counts.last() != Some(&n) {
            counts.push(n);
        }
        if s["running"] == false {
            break;
        }
        assert!(
            Instant::now() < deadline + Duration::from_secs(30),
            "the session never ended"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(
        counts.len() >= 3,
        "events arrived in steps while it ran: {counts:?}"
    );
    assert!(run.wait().unwrap().success());
    let page = v.page(&format!("/sessions/{id}"));
    assert!(
        !page.contains("<script nonce="),
        "an ended session needs no live script"
    );
}

/// The data home `quire demo` leaves: its one session reads in full.
#[test]
fn the_viewer_reads_the_data_home_quire_demo_leaves() {
    let root = tempfile::tempdir().unwrap();
    let demo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../evals/demo");
    run_ok(
        quire_in(root.path(), "http://127.0.0.1:9/v1").args([
            "demo",
            "--dir",
            demo.to_str().unwrap(),
        ]),
        "quire demo",
    );
    let v = Viewer::start(root.path());
    let list = v.json("/api/sessions");
    assert_eq!(list["total"], 1);
    let id = list["sessions"][0]["id"].as_str().unwrap();
    let page = v.page(&format!("/sessions/{id}"));
    for part in [
        "completed",
        "src/date_range.py",
        "Final diff",
        "agent view (what the model read)",
        "Applied to the original",
        "Tests",
    ] {
        assert!(page.contains(part), "the demo session page lacks `{part}`");
    }
    assert!(v.page("/").contains(id));
    assert!(v.page("/notes").contains("Notes"));
    assert!(v.page("/evals").contains("No eval runs yet"));
    assert!(
        v.page("/generations")
            .contains("No agent has generations yet")
    );
}
