//! Behaviour of the tools through their extensions, on temporary workspaces
//! with the built-in default config.

use std::path::Path;
use std::sync::Arc;

use quire_config::{AgentConfig, AgentSource, Loader};
use quire_core::{Action, Control, Ctx, Extension, NullSink, ToolOutput};
use quire_types::ToolCall;
use serde_json::{Value, json};
use tempfile::TempDir;

use crate::{Finisher, TestRunner, WorkspaceState, WorkspaceTools};
use quire_workspace::SessionCopy;

fn config() -> AgentConfig {
    Loader::default()
        .load(&AgentSource::Builtin)
        .expect("built-in config loads")
}

fn ctx_with(config: AgentConfig) -> Ctx {
    Ctx::new(Arc::new(config), Arc::new(NullSink))
}

fn ctx() -> Ctx {
    ctx_with(config())
}

/// A workspace holding `files`, and its session copy.
struct Ws {
    _dirs: TempDir,
    root: std::path::PathBuf,
    copy: Arc<SessionCopy>,
}

fn write(root: &Path, rel: &str, content: &str) {
    let path = root.join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, content).unwrap();
}

fn workspace(files: &[(&str, &str)]) -> Ws {
    let dirs = TempDir::new().unwrap();
    let original = dirs.path().join("original");
    let root = dirs.path().join("copy");
    for (rel, content) in files {
        write(&original, rel, content);
    }
    std::fs::create_dir_all(&original).unwrap();
    let copy = Arc::new(SessionCopy::create(&original, &root).unwrap());
    Ws {
        _dirs: dirs,
        root,
        copy,
    }
}

fn action(tool: &str, args: Value) -> Action {
    let map = match args {
        Value::Object(map) => map,
        _ => panic!("args must be an object"),
    };
    Action {
        call: ToolCall::new("call-1", tool, Value::Object(map.clone()).to_string()),
        args: map,
    }
}

async fn call(ext: &dyn Extension, ctx: &mut Ctx, tool: &str, args: Value) -> ToolOutput {
    ext.execute(ctx, &action(tool, args)).await
}

fn tools(ws: &Ws) -> WorkspaceTools {
    WorkspaceTools::new(ws.copy.clone())
}

fn err_text(ctx: &Ctx, tool: &str, key: &str) -> String {
    ctx.config.tool_error(tool, key).to_string()
}

/// The fixed part of an error template before its first placeholder.
fn prefix_of(template: &str) -> &str {
    template.split('{').next().unwrap_or(template)
}

// ---------------------------------------------------------------- list_files

#[tokio::test]
async fn list_honours_gitignore_and_puts_folders_first() {
    let ws = workspace(&[
        (".gitignore", "build/\n*.log\n"),
        ("zeta.py", "x"),
        ("src/app.py", "x"),
        ("src/util/helpers.py", "x"),
    ]);
    // Produced in the copy after it was made (the copy skips ignored files).
    write(&ws.root, "build/out.txt", "x");
    write(&ws.root, "debug.log", "x");
    write(&ws.root, ".git/HEAD", "ref");
    let mut ctx = ctx();
    let out = call(&tools(&ws), &mut ctx, "list_files", json!({})).await;
    assert!(!out.is_error, "{}", out.agent_view);
    let view = out.agent_view;
    assert!(!view.contains("build"), "{view}");
    assert!(!view.contains("debug.log"), "{view}");
    assert!(!view.contains(".git/"), "{view}");
    assert!(view.contains(".gitignore"), "{view}");
    assert!(view.contains("  util/\n    helpers.py"), "{view}");
    let src = view.find("src/").unwrap();
    let zeta = view.find("zeta.py").unwrap();
    assert!(src < zeta, "folders come first: {view}");
}

#[tokio::test]
async fn list_cap_says_how_many_were_cut() {
    let files: Vec<(String, String)> = (0..30)
        .map(|i| (format!("d/f{i:02}.txt"), String::new()))
        .collect();
    let refs: Vec<(&str, &str)> = files
        .iter()
        .map(|(a, b)| (a.as_str(), b.as_str()))
        .collect();
    let ws = workspace(&refs);
    let mut config = config();
    config.limits.list_max_entries = 10;
    let mut ctx = ctx_with(config);
    let out = call(&tools(&ws), &mut ctx, "list_files", json!({})).await;
    // 31 entries (d/ and 30 files), 10 shown.
    let expected =
        quire_config::render(&err_text(&ctx, "list_files", "truncated"), &[("cut", "21")]);
    assert!(out.agent_view.ends_with(&expected), "{}", out.agent_view);
    assert!(
        out.agent_view.starts_with("d/ (+21)\n"),
        "{}",
        out.agent_view
    );
    assert_eq!(out.agent_view.lines().count(), 11);
}

#[tokio::test]
async fn list_refuses_files_and_missing_folders() {
    let ws = workspace(&[("a.py", "x")]);
    let mut ctx = ctx();
    let out = call(&tools(&ws), &mut ctx, "list_files", json!({"path": "a.py"})).await;
    assert!(out.is_error);
    assert!(
        out.agent_view
            .starts_with(prefix_of(&err_text(&ctx, "list_files", "not_a_dir")))
    );
    let out = call(&tools(&ws), &mut ctx, "list_files", json!({"path": "nope"})).await;
    assert!(out.is_error);
    assert!(
        out.agent_view
            .starts_with(prefix_of(&err_text(&ctx, "list_files", "not_found")))
    );
}

#[tokio::test]
async fn render_tree_matches_list_format() {
    let ws = workspace(&[("src/a.py", "x"), ("b.txt", "y")]);
    assert_eq!(crate::render_tree(&ws.copy, 3, 100), "src/\n  a.py\nb.txt");
}

// ----------------------------------------------------------------- read_file

fn numbered_file(n: usize) -> String {
    (1..=n).map(|i| format!("line {i}\n")).collect()
}

#[tokio::test]
async fn read_ranges_with_numbers_and_more_hint() {
    let ws = workspace(&[("big.txt", &numbered_file(12))]);
    let mut config = config();
    config.limits.read_max_lines = 5;
    let mut ctx = ctx_with(config);
    let out = call(
        &tools(&ws),
        &mut ctx,
        "read_file",
        json!({"path": "big.txt"}),
    )
    .await;
    assert!(!out.is_error);
    let expected_more = quire_config::render(
        &err_text(&ctx, "read_file", "more"),
        &[("from", "1"), ("to", "5"), ("total", "12"), ("next", "6")],
    );
    assert_eq!(
        out.agent_view,
        format!("1| line 1\n2| line 2\n3| line 3\n4| line 4\n5| line 5\n{expected_more}")
    );

    let out = call(
        &tools(&ws),
        &mut ctx,
        "read_file",
        json!({"path": "big.txt", "offset": 9, "limit": 2}),
    )
    .await;
    assert!(
        out.agent_view.starts_with(" 9| line 9\n10| line 10\n"),
        "{}",
        out.agent_view
    );
    assert!(out.agent_view.contains("offset=11"), "{}", out.agent_view);

    // The end of the file: no hint.
    let out = call(
        &tools(&ws),
        &mut ctx,
        "read_file",
        json!({"path": "big.txt", "offset": 11}),
    )
    .await;
    assert_eq!(out.agent_view, "11| line 11\n12| line 12");

    let out = call(
        &tools(&ws),
        &mut ctx,
        "read_file",
        json!({"path": "big.txt", "offset": 13}),
    )
    .await;
    assert!(out.is_error);
    assert!(out.agent_view.contains("12"), "{}", out.agent_view);

    let state = ctx.state.get::<WorkspaceState>().unwrap();
    assert!(state.was_read("big.txt"));
}

#[tokio::test]
async fn read_refuses_binary_and_folders() {
    let ws = workspace(&[("src/x.py", "x")]);
    std::fs::write(ws.root.join("img.bin"), [0x89u8, b'P', 0, 1, 2]).unwrap();
    let mut ctx = ctx();
    let out = call(
        &tools(&ws),
        &mut ctx,
        "read_file",
        json!({"path": "img.bin"}),
    )
    .await;
    assert!(out.is_error);
    let expected = quire_config::render(
        &err_text(&ctx, "read_file", "binary"),
        &[("path", "img.bin"), ("size", "5")],
    );
    assert_eq!(out.agent_view, expected);
    let out = call(&tools(&ws), &mut ctx, "read_file", json!({"path": "src"})).await;
    assert!(out.is_error);
    assert_eq!(
        out.agent_view,
        quire_config::render(&err_text(&ctx, "read_file", "is_dir"), &[("path", "src")])
    );
    assert!(!ctx.state.get_mut::<WorkspaceState>().was_read("img.bin"));
}

#[tokio::test]
async fn read_not_found_suggests_the_closest_path() {
    let ws = workspace(&[("pkg/core/models.py", "x"), ("pkg/views.py", "y")]);
    let mut ctx = ctx();
    let out = call(
        &tools(&ws),
        &mut ctx,
        "read_file",
        json!({"path": "models.py"}),
    )
    .await;
    assert!(out.is_error);
    assert!(
        out.agent_view.contains("`pkg/core/models.py`"),
        "{}",
        out.agent_view
    );
    let out = call(
        &tools(&ws),
        &mut ctx,
        "read_file",
        json!({"path": "pkg/view.py"}),
    )
    .await;
    assert!(
        out.agent_view.contains("`pkg/views.py`"),
        "{}",
        out.agent_view
    );
    let out = call(
        &tools(&ws),
        &mut ctx,
        "read_file",
        json!({"path": "zzzzzzzz/qqqq.rs"}),
    )
    .await;
    let suggestion_prefix = prefix_of(&err_text(&ctx, "read_file", "suggestion")).to_string();
    assert!(
        !out.agent_view.contains(suggestion_prefix.trim()),
        "{}",
        out.agent_view
    );
}

#[tokio::test]
async fn agent_view_is_capped_with_head_and_tail() {
    let long: String = (1..=200)
        .map(|i| format!("{i:04} {}\n", "x".repeat(80)))
        .collect();
    let ws = workspace(&[("long.txt", &long)]);
    let mut config = config();
    config.limits.tool_output_max_chars = 2_000;
    let mut ctx = ctx_with(config);
    let out = call(
        &tools(&ws),
        &mut ctx,
        "read_file",
        json!({"path": "long.txt"}),
    )
    .await;
    assert!(
        out.agent_view.chars().count() <= 2_000,
        "{}",
        out.agent_view.len()
    );
    assert!(out.agent_view.starts_with("  1| 0001"));
    assert!(
        out.agent_view
            .contains(prefix_of(&err_text(&ctx, "read_file", "cut")))
    );
    assert!(out.agent_view.contains("0200 "), "tail kept");
    assert!(out.user_view.len() > 10_000, "user view is not capped");
}

// -------------------------------------------------------------------- search

#[tokio::test]
async fn search_keeps_indentation_ignores_case_on_request_and_skips_the_task_file() {
    let ws = workspace(&[
        ("prompt.txt", "Rename Lookup everywhere\n"),
        ("metadata.json", "{\"title\": \"rename lookup\"}\n"),
        (
            "src/c.py",
            "class C:\n    def lookup(self):\n        return LOOKUP\n",
        ),
    ]);
    let mut ctx = ctx();
    let out = call(
        &tools(&ws),
        &mut ctx,
        "search",
        json!({"pattern": "lookup"}),
    )
    .await;
    assert_eq!(
        out.agent_view, "src/c.py:2 (in C):    def lookup(self):",
        "indentation kept, prompt.txt skipped"
    );
    let out = call(
        &tools(&ws),
        &mut ctx,
        "search",
        json!({"pattern": "lookup", "ignore_case": true}),
    )
    .await;
    assert_eq!(
        out.agent_view,
        "src/c.py:2 (in C):    def lookup(self):\nsrc/c.py:3 (in C.lookup):        return LOOKUP"
    );
}

#[tokio::test]
async fn search_hits_name_the_function_or_class_they_are_in() {
    let tests_py = "import unittest\n\n\nclass SeekableTest(unittest.TestCase):\n    @skip_if(old)\n    def test_peek(self):\n        s = mi.seekable(x)\n\n\ndef helper():\n    return mi.seekable(y)\n\nVALUE = mi.seekable(z)\n";
    let lib_rs = "pub struct Shelf;\n\nimpl Shelf {\n    pub fn put(&self) {\n        stock();\n    }\n}\n\nfn stock() {}\n";
    let ws = workspace(&[
        ("tests/test_more.py", tests_py),
        ("src/lib.rs", lib_rs),
        ("README.md", "# seekable\nmi.seekable is documented here\n"),
    ]);
    let mut ctx = ctx();
    let out = call(
        &tools(&ws),
        &mut ctx,
        "search",
        json!({"pattern": "seekable", "path": "tests"}),
    )
    .await;
    assert_eq!(
        out.agent_view,
        "tests/test_more.py:7 (in SeekableTest.test_peek):        s = mi.seekable(x)\n\
         tests/test_more.py:11 (in helper):    return mi.seekable(y)\n\
         tests/test_more.py:13:VALUE = mi.seekable(z)",
        "a hit names its innermost definition; a module-level hit names none"
    );
    // A decorator or a header line is in the scope around its definition.
    let out = call(
        &tools(&ws),
        &mut ctx,
        "search",
        json!({"pattern": "skip_if|def test_peek", "regex": true}),
    )
    .await;
    assert_eq!(
        out.agent_view,
        "tests/test_more.py:5 (in SeekableTest):    @skip_if(old)\n\
         tests/test_more.py:6 (in SeekableTest):    def test_peek(self):"
    );
    // Brace languages too; files of no known language keep the plain form.
    let out = call(
        &tools(&ws),
        &mut ctx,
        "search",
        json!({"pattern": "stock()"}),
    )
    .await;
    assert_eq!(
        out.agent_view,
        "src/lib.rs:5 (in Shelf.put):        stock();\nsrc/lib.rs:9:fn stock() {}"
    );
    let out = call(
        &tools(&ws),
        &mut ctx,
        "search",
        json!({"pattern": "documented"}),
    )
    .await;
    assert_eq!(out.agent_view, "README.md:2:mi.seekable is documented here");
    // Every hit form names its file and line for the readers of results.
    for (line, want) in [
        (
            "tests/test_more.py:7 (in SeekableTest.test_peek):        s = 1",
            Some(("tests/test_more.py", 7)),
        ),
        ("README.md:2:mi.seekable", Some(("README.md", 2))),
        ("a.py:2-10 (in f)", Some(("a.py", 2))),
        ("a.py:2-10", Some(("a.py", 2))),
        ("a.py:2-x", None),
        ("12|     return 2: x", None),
        (
            "(showing 3 of 9 matches in 2 files; not shown: a.py (6).)",
            None,
        ),
    ] {
        assert_eq!(crate::search_hit_location(line), want, "{line}");
    }
}

#[tokio::test]
async fn search_with_after_shows_the_following_lines_once_and_they_count_as_read() {
    let body: String = (1..=30).map(|i| format!("line {i}\n")).collect();
    let code = format!("def f():\n    return 1\n\n\ndef g():\n    return 2\n{body}");
    let ws = workspace(&[("a.py", &code), ("b.py", "def h():\n    pass\n")]);
    let mut ctx = ctx();
    let out = call(
        &tools(&ws),
        &mut ctx,
        "search",
        json!({"pattern": "def ", "after": 2}),
    )
    .await;
    assert!(!out.is_error, "{}", out.agent_view);
    assert_eq!(
        out.agent_view,
        "a.py:1-3\n1| def f():\n2|     return 1\n3| \n\
         a.py:5-7\n5| def g():\n6|     return 2\n7| line 1\n\
         b.py:1-2\n1| def h():\n2|     pass"
    );
    // Overlapping ranges merge: each line once.
    let out = call(
        &tools(&ws),
        &mut ctx,
        "search",
        json!({"pattern": "return", "path": "a.py", "after": 4}),
    )
    .await;
    assert_eq!(out.agent_view.matches("6|     return 2").count(), 1);
    assert!(
        out.agent_view.starts_with("a.py:2-10 (in f)\n"),
        "{}",
        out.agent_view
    );
    // What was shown can be edited without a read.
    let out = call(
        &tools(&ws),
        &mut ctx,
        "edit_file",
        json!({"path": "b.py", "old": "    pass\n", "new": "    return 3\n"}),
    )
    .await;
    assert!(!out.is_error, "{}", out.agent_view);
    // At most 80 lines per hit, however many are asked for.
    let out = call(
        &tools(&ws),
        &mut ctx,
        "search",
        json!({"pattern": "def f", "after": 1000}),
    )
    .await;
    assert!(
        out.agent_view.starts_with("a.py:1-36\n"),
        "{}",
        out.agent_view
    );
}

#[tokio::test]
async fn search_with_after_says_when_the_block_goes_on() {
    let code = "class C:\n    def m(self):\n        a = 1\n        b = 2\n\n        return a + b\n    def n(self):\n        pass\n";
    let ws = workspace(&[("a.py", code)]);
    let mut ctx = ctx();
    let out = call(
        &tools(&ws),
        &mut ctx,
        "search",
        json!({"pattern": "def m", "after": 2}),
    )
    .await;
    assert_eq!(
        out.agent_view,
        "a.py:2-4 (in C)\n2|     def m(self):\n3|         a = 1\n4|         b = 2\n\
         (… the block goes on after line 4: read_file a.py with offset 5 for the rest)"
    );
    // A window that reaches the block's end (or the file's) says nothing more.
    for (pattern, after) in [("def m", 4), ("def n", 5)] {
        let out = call(
            &tools(&ws),
            &mut ctx,
            "search",
            json!({"pattern": pattern, "after": after}),
        )
        .await;
        assert!(!out.agent_view.contains("goes on"), "{}", out.agent_view);
    }
}

#[tokio::test]
async fn search_with_after_ends_before_a_method_it_would_cut() {
    let code = "class T:\n    def test_a(self):\n        x = 1\n        assert x\n\n    @mark\n    def test_b(self):\n        y = 2\n        z = 3\n        assert y < z\n";
    let ws = workspace(&[("t.py", code)]);
    let mut ctx = ctx();
    let out = call(
        &tools(&ws),
        &mut ctx,
        "search",
        json!({"pattern": "class T", "after": 7}),
    )
    .await;
    // Lines 1-8 would end inside test_b: the window stops after test_a.
    assert_eq!(
        out.agent_view,
        "t.py:1-4\n1| class T:\n2|     def test_a(self):\n3|         x = 1\n4|         assert x\n\
         (… the block goes on after line 4: read_file t.py with offset 5 for the rest)"
    );
    // A window mostly inside one long method keeps it: cutting back would
    // show little more than the hit.
    let long = format!(
        "class U:\n    def a(self):\n        pass\n    def b(self):\n{}",
        "        step()\n".repeat(12)
    );
    std::fs::write(ws.root.join("u.py"), long).unwrap();
    let out = call(
        &tools(&ws),
        &mut ctx,
        "search",
        json!({"pattern": "class U", "after": 9}),
    )
    .await;
    assert!(
        out.agent_view.starts_with("u.py:1-10\n")
            && out.agent_view.contains("goes on after line 10"),
        "{}",
        out.agent_view
    );
    // A function's nested definition is its body: the window is not cut.
    let nested = "def chunked(n):\n    if n < 0:\n        raise ValueError(n)\n    def ret():\n        return n\n\n    return ret\n";
    std::fs::write(ws.root.join("c.py"), nested).unwrap();
    let out = call(
        &tools(&ws),
        &mut ctx,
        "search",
        json!({"pattern": "def chunked", "after": 4}),
    )
    .await;
    assert!(
        out.agent_view.starts_with("c.py:1-5\n") && out.agent_view.contains("5|         return n"),
        "{}",
        out.agent_view
    );
}

#[tokio::test]
async fn search_literal_vs_regex() {
    let ws = workspace(&[("a.py", "x = a.c\ny = abc\n")]);
    let mut ctx = ctx();
    let out = call(&tools(&ws), &mut ctx, "search", json!({"pattern": "a.c"})).await;
    assert_eq!(out.agent_view, "a.py:1:x = a.c");
    let out = call(
        &tools(&ws),
        &mut ctx,
        "search",
        json!({"pattern": "a.c", "regex": true}),
    )
    .await;
    assert_eq!(out.agent_view, "a.py:1:x = a.c\na.py:2:y = abc");
    let out = call(
        &tools(&ws),
        &mut ctx,
        "search",
        json!({"pattern": "a(", "regex": true}),
    )
    .await;
    assert!(out.is_error);
    assert!(
        out.agent_view
            .starts_with(prefix_of(&err_text(&ctx, "search", "bad_regex")))
    );
    // Literal mode takes regex metacharacters as text.
    let out = call(&tools(&ws), &mut ctx, "search", json!({"pattern": "a("})).await;
    assert!(!out.is_error);
}

#[tokio::test]
async fn a_plain_search_written_as_a_regex_that_finds_nothing_runs_as_one() {
    let ws = workspace(&[("t.py", "from itertools import (\n    count,\n)\nx = 1\n")]);
    let mut ctx = ctx();
    let out = call(
        &tools(&ws),
        &mut ctx,
        "search",
        json!({"pattern": "^from itertools"}),
    )
    .await;
    assert!(!out.is_error);
    let note = quire_config::render(
        &err_text(&ctx, "search", "as_regex"),
        &[("pattern", "^from itertools")],
    );
    assert_eq!(
        out.agent_view,
        format!("{note}\nt.py:1:from itertools import (")
    );
    // Its hits count as seen, as any search's do.
    let edit =
        json!({"path": "t.py", "old": "from itertools import (", "new": "from itertools import ("});
    let out = call(&tools(&ws), &mut ctx, "edit_file", edit).await;
    assert_ne!(
        out.agent_view,
        quire_config::render(
            &err_text(&ctx, "edit_file", "not_read"),
            &[("path", "t.py")]
        )
    );
    // Nothing either way: the plain-text refusal, naming the regex switch.
    let out = call(
        &tools(&ws),
        &mut ctx,
        "search",
        json!({"pattern": "^import os"}),
    )
    .await;
    assert!(
        out.agent_view
            .starts_with(prefix_of(&err_text(&ctx, "search", "no_hits_plain")))
    );
}

#[tokio::test]
async fn search_glob_path_and_gitignore() {
    let ws = workspace(&[
        (".gitignore", "vendor/\n"),
        ("src/a.py", "needle\n"),
        ("src/b.rs", "needle\n"),
        ("docs/c.py", "needle\n"),
    ]);
    write(&ws.root, "vendor/d.py", "needle\n");
    let mut ctx = ctx();
    let out = call(
        &tools(&ws),
        &mut ctx,
        "search",
        json!({"pattern": "needle"}),
    )
    .await;
    assert_eq!(
        out.agent_view,
        "docs/c.py:1:needle\nsrc/a.py:1:needle\nsrc/b.rs:1:needle"
    );
    let out = call(
        &tools(&ws),
        &mut ctx,
        "search",
        json!({"pattern": "needle", "glob": "*.py"}),
    )
    .await;
    assert_eq!(out.agent_view, "docs/c.py:1:needle\nsrc/a.py:1:needle");
    // A glob with the quotes of an example copied in means the same glob.
    for quoted in ["\"*.py\"", "'*.py'", "`*.py`"] {
        let out = call(
            &tools(&ws),
            &mut ctx,
            "search",
            json!({"pattern": "needle", "glob": quoted}),
        )
        .await;
        assert_eq!(
            out.agent_view, "docs/c.py:1:needle\nsrc/a.py:1:needle",
            "{quoted}"
        );
    }
    let out = call(
        &tools(&ws),
        &mut ctx,
        "search",
        json!({"pattern": "needle", "path": "src"}),
    )
    .await;
    assert_eq!(out.agent_view, "src/a.py:1:needle\nsrc/b.rs:1:needle");
    let out = call(
        &tools(&ws),
        &mut ctx,
        "search",
        json!({"pattern": "needle", "path": "src/b.rs"}),
    )
    .await;
    assert_eq!(out.agent_view, "src/b.rs:1:needle");
    let out = call(
        &tools(&ws),
        &mut ctx,
        "search",
        json!({"pattern": "needle", "glob": "[bad"}),
    )
    .await;
    assert!(out.is_error, "{}", out.agent_view);
}

#[tokio::test]
async fn a_plain_miss_that_looks_like_a_regex_says_how_to_search_for_it() {
    let ws = workspace(&[("a.py", "def format_money():\n    pass\n")]);
    let mut ctx = ctx();
    let out = call(
        &tools(&ws),
        &mut ctx,
        "search",
        json!({"pattern": "format_money|invoices"}),
    )
    .await;
    assert!(!out.is_error);
    assert!(
        out.agent_view.contains("as a regular expression")
            && out.agent_view.ends_with("a.py:1:def format_money():"),
        "{}",
        out.agent_view
    );
    let out = call(
        &tools(&ws),
        &mut ctx,
        "search",
        json!({"pattern": "format_cash|invoices"}),
    )
    .await;
    assert!(
        out.agent_view.contains("set regex true"),
        "{}",
        out.agent_view
    );
    let out = call(
        &tools(&ws),
        &mut ctx,
        "search",
        json!({"pattern": "format_money|invoices", "regex": true}),
    )
    .await;
    assert!(out.agent_view.starts_with("a.py:1:"), "{}", out.agent_view);
    let out = call(
        &tools(&ws),
        &mut ctx,
        "search",
        json!({"pattern": "absent"}),
    )
    .await;
    assert!(!out.agent_view.contains("regex"), "{}", out.agent_view);
}

#[tokio::test]
async fn search_cap_counts_what_was_cut_and_no_hit_is_not_an_error() {
    let body: String = (0..25).map(|i| format!("hit {i}\n")).collect();
    let ws = workspace(&[("a.txt", &body), ("b.txt", "hit\n")]);
    let mut config = config();
    config.limits.search_max_hits = 10;
    let mut ctx = ctx_with(config);
    let out = call(&tools(&ws), &mut ctx, "search", json!({"pattern": "hit"})).await;
    let lines: Vec<&str> = out.agent_view.lines().collect();
    assert_eq!(lines.len(), 11);
    let expected = quire_config::render(
        &err_text(&ctx, "search", "truncated"),
        &[
            ("cut", "16"),
            ("shown", "10"),
            ("total", "26"),
            ("files", "2"),
            ("rest", "a.txt (15), b.txt (1)"),
        ],
    );
    assert_eq!(lines[10], expected);
    assert!(expected.contains("showing 10 of 26"), "{expected}");
    assert!(
        expected.contains("not shown: a.txt (15), b.txt (1)"),
        "{expected}"
    );
    // A few past the cap (up to a quarter more) are all shown, uncut.
    let out = call(&tools(&ws), &mut ctx, "search", json!({"pattern": "hit 1"})).await;
    assert_eq!(out.agent_view.lines().count(), 11, "{}", out.agent_view);
    assert!(!out.agent_view.contains("showing"), "{}", out.agent_view);

    let out = call(
        &tools(&ws),
        &mut ctx,
        "search",
        json!({"pattern": "absent"}),
    )
    .await;
    assert!(!out.is_error);
    assert_eq!(
        out.agent_view,
        quire_config::render(
            &err_text(&ctx, "search", "no_hits"),
            &[("pattern", "absent"), ("path", ".")]
        )
    );
}

#[tokio::test]
async fn search_shows_hits_in_sorted_walk_order_whoever_walked_them() {
    // The walk runs on several threads; hits still come in the order of a
    // sorted walk (a folder's contents right after it, names by bytes).
    let ws = workspace(&[
        ("m.txt", "hit\n"),
        ("a.txt", "hit\n"),
        ("a-b.txt", "hit\n"),
        ("z/y.txt", "hit\n"),
        ("a/c/d.txt", "hit\n"),
        ("a/b.txt", "hit\n"),
        ("B.txt", "hit\n"),
    ]);
    let mut ctx = ctx();
    let expected = "B.txt:1:hit\na/b.txt:1:hit\na/c/d.txt:1:hit\na-b.txt:1:hit\na.txt:1:hit\nm.txt:1:hit\nz/y.txt:1:hit";
    for _ in 0..10 {
        let out = call(&tools(&ws), &mut ctx, "search", json!({"pattern": "hit"})).await;
        assert_eq!(out.agent_view, expected);
    }
    let out = call(
        &tools(&ws),
        &mut ctx,
        "search",
        json!({"pattern": "hit", "path": "a"}),
    )
    .await;
    assert_eq!(out.agent_view, "a/b.txt:1:hit\na/c/d.txt:1:hit");

    // Past the cap: the first files in that order are shown, the next
    // ones are named in order.
    let files: Vec<(String, String)> = (0..6)
        .flat_map(|d| (0..10).map(move |f| (format!("d{d}/f{f:02}.txt"), "hit\n".to_string())))
        .collect();
    let refs: Vec<(&str, &str)> = files
        .iter()
        .map(|(p, c)| (p.as_str(), c.as_str()))
        .collect();
    let ws = workspace(&refs);
    let mut config = config();
    config.limits.search_max_hits = 10;
    let mut ctx = ctx_with(config);
    let out = call(&tools(&ws), &mut ctx, "search", json!({"pattern": "hit"})).await;
    let lines: Vec<&str> = out.agent_view.lines().collect();
    let shown: Vec<String> = (0..10).map(|f| format!("d0/f{f:02}.txt:1:hit")).collect();
    assert_eq!(lines[..10], shown[..], "{}", out.agent_view);
    let rest: Vec<String> = (0..10)
        .map(|f| format!("d1/f{f:02}.txt (1)"))
        .chain(["and 40 more files".to_string()])
        .collect();
    let expected = quire_config::render(
        &err_text(&ctx, "search", "truncated"),
        &[
            ("cut", "50"),
            ("shown", "10"),
            ("total", "60"),
            ("files", "60"),
            ("rest", &rest.join(", ")),
        ],
    );
    assert_eq!(lines[10], expected);
}

#[tokio::test]
async fn search_cuts_long_lines_around_the_match() {
    let line = format!("{}NEEDLE{}\n", "a".repeat(500), "b".repeat(500));
    let ws = workspace(&[("min.js", &line)]);
    let mut ctx = ctx();
    let out = call(
        &tools(&ws),
        &mut ctx,
        "search",
        json!({"pattern": "NEEDLE"}),
    )
    .await;
    assert!(out.agent_view.contains("NEEDLE"), "{}", out.agent_view);
    assert!(out.agent_view.chars().count() < 230, "{}", out.agent_view);
}

// ----------------------------------------------------------------- edit_file

async fn read(ws: &Ws, ctx: &mut Ctx, path: &str) {
    let out = call(&tools(ws), ctx, "read_file", json!({"path": path})).await;
    assert!(!out.is_error, "{}", out.agent_view);
}

#[tokio::test]
async fn lines_shown_by_search_count_as_read_but_cut_ones_do_not() {
    let ws = workspace(&[
        ("a.py", "from m import lookup\n"),
        ("b.py", "from m import lookup\n"),
        ("c.py", "x = 1\n"),
    ]);
    let mut config = config();
    config.limits.search_max_hits = 1;
    let mut ctx = ctx_with(config);
    let out = call(
        &tools(&ws),
        &mut ctx,
        "search",
        json!({"pattern": "lookup"}),
    )
    .await;
    assert_eq!(out.agent_view.lines().count(), 2, "{}", out.agent_view);
    let shown = if out.agent_view.starts_with("a.py") {
        "a.py"
    } else {
        "b.py"
    };
    let cut = if shown == "a.py" { "b.py" } else { "a.py" };
    let edit =
        |path: &str| json!({"path": path, "old": "import lookup", "new": "import get_product"});
    let out = call(&tools(&ws), &mut ctx, "edit_file", edit(shown)).await;
    assert!(!out.is_error, "{}", out.agent_view);
    let out = call(&tools(&ws), &mut ctx, "edit_file", edit(cut)).await;
    assert!(out.is_error, "a file whose hits were cut was not seen");
    let out = call(
        &tools(&ws),
        &mut ctx,
        "edit_file",
        json!({"path": "c.py", "old": "x = 1", "new": "x = 2"}),
    )
    .await;
    assert!(out.is_error, "no hit, not seen");
}

#[tokio::test]
async fn insert_after_adds_a_test_method_and_an_import_without_a_read() {
    let src = "from decimal import Decimal\n\n\nclass SlicedTests:\n    def test_a(self):\n        pass\n\n\ndef helper():\n    pass\n";
    let ws = workspace(&[("tests/test_m.py", src)]);
    let mut ctx = ctx();
    let method = json!({"path": "tests/test_m.py", "insert_after": "SlicedTests",
        "new": "    def test_negative(self):\n        assert True\n"});
    let out = call(&tools(&ws), &mut ctx, "edit_file", method).await;
    assert!(!out.is_error, "{}", out.agent_view);
    let import =
        json!({"path": "tests/test_m.py", "insert_after": "imports", "new": "import math"});
    let out = call(&tools(&ws), &mut ctx, "edit_file", import).await;
    assert!(!out.is_error, "{}", out.agent_view);
    assert!(
        out.agent_view.contains("2| import math"),
        "{}",
        out.agent_view
    );
    assert_eq!(
        std::fs::read_to_string(ws.root.join("tests/test_m.py")).unwrap(),
        "from decimal import Decimal\nimport math\n\n\nclass SlicedTests:\n    def test_a(self):\n        pass\n\n    def test_negative(self):\n        assert True\n\n\ndef helper():\n    pass\n"
    );

    let both =
        json!({"path": "tests/test_m.py", "insert_after": "helper", "old": "pass", "new": "x = 1"});
    let out = call(&tools(&ws), &mut ctx, "edit_file", both).await;
    assert!(out.is_error);
    let missing =
        json!({"path": "tests/test_m.py", "insert_after": "ChunkedTests", "new": "x = 1"});
    let out = call(&tools(&ws), &mut ctx, "edit_file", missing).await;
    assert!(out.is_error);
    assert!(
        out.agent_view.contains("No definition `ChunkedTests`"),
        "{}",
        out.agent_view
    );
    assert!(
        std::fs::read_to_string(ws.root.join("tests/test_m.py"))
            .unwrap()
            .ends_with("def helper():\n    pass\n"),
        "a refused insertion changes nothing"
    );
}

#[tokio::test]
async fn edit_refused_before_read_then_applied() {
    let ws = workspace(&[("m.py", "def f():\n    return 1\n")]);
    let mut ctx = ctx();
    let args = json!({"path": "m.py", "old": "return 1", "new": "return 2"});
    let out = call(&tools(&ws), &mut ctx, "edit_file", args.clone()).await;
    assert!(out.is_error);
    assert_eq!(
        out.agent_view,
        quire_config::render(
            &err_text(&ctx, "edit_file", "not_read"),
            &[("path", "m.py")]
        )
    );
    assert_eq!(
        std::fs::read_to_string(ws.root.join("m.py")).unwrap(),
        "def f():\n    return 1\n"
    );

    read(&ws, &mut ctx, "m.py").await;
    let out = call(&tools(&ws), &mut ctx, "edit_file", args).await;
    assert!(!out.is_error, "{}", out.agent_view);
    assert_eq!(
        std::fs::read_to_string(ws.root.join("m.py")).unwrap(),
        "def f():\n    return 2\n"
    );
    assert!(
        out.agent_view.contains("2|     return 2"),
        "{}",
        out.agent_view
    );
    assert!(
        out.user_view.contains("-    return 1\n+    return 2"),
        "{}",
        out.user_view
    );
    assert_eq!(ctx.facts.touched, vec!["m.py".to_string()]);
    assert!(ctx.facts.edited_since_test);
    assert_eq!(ctx.facts.edit_paths("call-1"), ["m.py"]);
}

/// A new test anchored on the last lines a search window showed, inside a
/// method that goes on, would make the rest of that method its own body.
#[tokio::test]
async fn an_edit_that_adds_a_definition_inside_a_block_is_refused_with_where_the_block_ends() {
    let code = "class IequalsTests(TestCase):\n    def test_not_equal_lengths(self):\n        self.assertFalse(mi.iequals('abc', 'ab'))\n        self.assertFalse(mi.iequals('abc', 'bc'))\n\n    def test_empty(self):\n        self.assertTrue(mi.iequals())\n";
    let ws = workspace(&[("tests/test_more.py", code)]);
    let mut ctx = ctx();
    read(&ws, &mut ctx, "tests/test_more.py").await;
    let split = json!({
        "path": "tests/test_more.py",
        "old": "        self.assertFalse(mi.iequals('abc', 'ab'))\n",
        "new": "        self.assertFalse(mi.iequals('abc', 'ab'))\n\n    def test_any(self):\n        self.assertFalse(mi.iequals([], [ANY]))\n",
    });
    let out = call(&tools(&ws), &mut ctx, "edit_file", split).await;
    assert!(out.is_error, "{}", out.agent_view);
    assert_eq!(
        out.agent_view,
        quire_config::render(
            &err_text(&ctx, "edit_file", "splits_block_named"),
            &[
                ("path", "tests/test_more.py"),
                ("header", "def test_any(self):"),
                ("line", "4"),
                ("next", "self.assertFalse(mi.iequals('abc', 'bc'))"),
                ("block", "IequalsTests.test_not_equal_lengths"),
                ("end", "4"),
            ]
        )
    );
    assert_eq!(
        std::fs::read_to_string(ws.root.join("tests/test_more.py")).unwrap(),
        code,
        "nothing written"
    );
    // After the block's end it goes in; so does a rename of a header, and
    // the same text in a file of another language.
    let after = json!({
        "path": "tests/test_more.py",
        "old": "        self.assertFalse(mi.iequals('abc', 'bc'))\n",
        "new": "        self.assertFalse(mi.iequals('abc', 'bc'))\n\n    def test_any(self):\n        self.assertFalse(mi.iequals([], [ANY]))\n",
    });
    let out = call(&tools(&ws), &mut ctx, "edit_file", after).await;
    assert!(!out.is_error, "{}", out.agent_view);
    let rename = json!({
        "path": "tests/test_more.py",
        "old": "    def test_not_equal_lengths(self):\n",
        "new": "    def test_unequal_lengths(self):\n",
    });
    let out = call(&tools(&ws), &mut ctx, "edit_file", rename).await;
    assert!(!out.is_error, "{}", out.agent_view);
    // A new class put above another, `old` kept at the end of `new`: the
    // body after it is still that header's (a live session was refused).
    let above = json!({
        "path": "tests/test_more.py",
        "old": "class IequalsTests(TestCase):\n    def test_unequal_lengths(self):\n",
        "new": "class NewTests(TestCase):\n    def test_new(self):\n        pass\n\n\nclass IequalsTests(TestCase):\n    def test_unequal_lengths(self):\n",
    });
    let out = call(&tools(&ws), &mut ctx, "edit_file", above).await;
    assert!(!out.is_error, "{}", out.agent_view);
    // The same with `old` starting in the block before: what `new` ends
    // with is still the header `old` ended with.
    let between = json!({
        "path": "tests/test_more.py",
        "old": "        pass\n\n\nclass IequalsTests(TestCase):\n",
        "new": "        pass\n\n\nclass OtherTests(TestCase):\n    def test_other(self):\n        pass\n\n\nclass IequalsTests(TestCase):\n",
    });
    let out = call(&tools(&ws), &mut ctx, "edit_file", between).await;
    assert!(!out.is_error, "{}", out.agent_view);
    // But `old`'s lines kept at the end of `new` under an added header are
    // taken into it, and so is the rest of their block: refused.
    let swallowed = json!({
        "path": "tests/test_more.py",
        "old": "        self.assertFalse(mi.iequals('abc', 'ab'))\n",
        "new": "    def test_swallow(self):\n        self.assertFalse(mi.iequals('abc', 'ab'))\n",
    });
    let out = call(&tools(&ws), &mut ctx, "edit_file", swallowed).await;
    assert!(out.is_error, "{}", out.agent_view);
    assert!(
        out.agent_view.contains("def test_swallow(self):"),
        "{}",
        out.agent_view
    );
}

/// A stub added above a signature that spans several lines, in a `.pyi`:
/// the signature's continuation is still that signature's.
#[tokio::test]
async fn a_stub_added_above_a_multiline_signature_is_not_a_split() {
    let code = "def interleave(*iterables: Iterable[_T]) -> Iterator[_T]: ...\ndef intersperse(\n    e: _U, iterable: Iterable[_T], n: int = ...\n) -> Iterator[_T | _U]: ...\n";
    let ws = workspace(&[("more.pyi", code)]);
    let mut ctx = ctx();
    read(&ws, &mut ctx, "more.pyi").await;
    let stub = json!({
        "path": "more.pyi",
        "old": "def interleave(*iterables: Iterable[_T]) -> Iterator[_T]: ...\ndef intersperse(\n",
        "new": "def interleave(*iterables: Iterable[_T]) -> Iterator[_T]: ...\ndef subfactorial(n: int) -> int: ...\ndef intersperse(\n",
    });
    let out = call(&tools(&ws), &mut ctx, "edit_file", stub).await;
    assert!(!out.is_error, "{}", out.agent_view);
    let edited = std::fs::read_to_string(ws.root.join("more.pyi")).unwrap();
    assert!(
        edited.contains("def subfactorial(n: int) -> int: ...\ndef intersperse(\n    e: _U"),
        "{edited}"
    );
}

#[tokio::test]
async fn edit_no_match_shows_nearest_numbered_lines() {
    let mut body: String = (1..=40).map(|i| format!("x{i} = {i}\n")).collect();
    body.push_str("def total(items):\n    return sum(items)\n");
    let ws = workspace(&[("calc.py", &body)]);
    let mut ctx = ctx();
    read(&ws, &mut ctx, "calc.py").await;
    let out = call(
        &tools(&ws),
        &mut ctx,
        "edit_file",
        json!({"path": "calc.py", "old": "def total(item):\n    return sum(item)", "new": "pass"}),
    )
    .await;
    assert!(out.is_error);
    assert!(
        out.agent_view
            .starts_with(prefix_of(&err_text(&ctx, "edit_file", "no_match"))),
        "{}",
        out.agent_view
    );
    assert!(
        out.agent_view.contains("41| def total(items):"),
        "{}",
        out.agent_view
    );
    assert!(
        out.agent_view.contains("42|     return sum(items)"),
        "{}",
        out.agent_view
    );
    assert_eq!(
        ctx.state
            .get::<WorkspaceState>()
            .unwrap()
            .edit_failures
            .get("calc.py"),
        Some(&1)
    );
}

#[tokio::test]
async fn edit_many_matches_lists_lines() {
    let ws = workspace(&[("a.py", "x = 1\ny = 2\nx = 1\n")]);
    let mut ctx = ctx();
    read(&ws, &mut ctx, "a.py").await;
    let out = call(
        &tools(&ws),
        &mut ctx,
        "edit_file",
        json!({"path": "a.py", "old": "x = 1", "new": "x = 3"}),
    )
    .await;
    assert!(out.is_error);
    assert_eq!(
        out.agent_view,
        quire_config::render(
            &err_text(&ctx, "edit_file", "many_matches"),
            &[("path", "a.py"), ("count", "2"), ("lines", "1, 3")]
        )
    );
    assert_eq!(
        std::fs::read_to_string(ws.root.join("a.py")).unwrap(),
        "x = 1\ny = 2\nx = 1\n"
    );
}

#[tokio::test]
async fn edit_tolerates_copied_line_numbers() {
    let ws = workspace(&[("a.py", "def f():\n    a = 1\n    return a\n")]);
    let mut ctx = ctx();
    read(&ws, &mut ctx, "a.py").await;
    let out = call(
        &tools(&ws),
        &mut ctx,
        "edit_file",
        json!({"path": "a.py", "old": "2|     a = 1\n3|     return a", "new": "    a = 2\n    return a"}),
    )
    .await;
    assert!(!out.is_error, "{}", out.agent_view);
    assert_eq!(
        std::fs::read_to_string(ws.root.join("a.py")).unwrap(),
        "def f():\n    a = 2\n    return a\n"
    );
    assert!(
        out.agent_view
            .contains(&err_text(&ctx, "edit_file", "note_line_numbers")),
        "{}",
        out.agent_view
    );
}

#[tokio::test]
async fn edit_counts_as_read_after_write_file() {
    let ws = workspace(&[]);
    let mut ctx = ctx();
    let out = call(
        &tools(&ws),
        &mut ctx,
        "write_file",
        json!({"path": "new/mod.py", "content": "A = 1\n"}),
    )
    .await;
    assert!(!out.is_error, "{}", out.agent_view);
    let out = call(
        &tools(&ws),
        &mut ctx,
        "edit_file",
        json!({"path": "new/mod.py", "old": "A = 1", "new": "A = 2"}),
    )
    .await;
    assert!(!out.is_error, "{}", out.agent_view);
    assert_eq!(
        std::fs::read_to_string(ws.root.join("new/mod.py")).unwrap(),
        "A = 2\n"
    );
}

// ---------------------------------------------------------------- write_file

#[tokio::test]
async fn write_refuses_existing_files() {
    let ws = workspace(&[("a.py", "keep\n")]);
    let mut ctx = ctx();
    let out = call(
        &tools(&ws),
        &mut ctx,
        "write_file",
        json!({"path": "a.py", "content": "lost"}),
    )
    .await;
    assert!(out.is_error);
    assert_eq!(
        out.agent_view,
        quire_config::render(&err_text(&ctx, "write_file", "exists"), &[("path", "a.py")])
    );
    assert_eq!(
        std::fs::read_to_string(ws.root.join("a.py")).unwrap(),
        "keep\n"
    );
    let out = call(
        &tools(&ws),
        &mut ctx,
        "write_file",
        json!({"path": "pkg/deep/b.py", "content": "x\ny\n"}),
    )
    .await;
    assert!(!out.is_error);
    assert_eq!(
        std::fs::read_to_string(ws.root.join("pkg/deep/b.py")).unwrap(),
        "x\ny\n"
    );
    assert!(
        out.user_view.contains("+++ b/pkg/deep/b.py"),
        "{}",
        out.user_view
    );
}

// --------------------------------------------------------------- apply_patch

#[tokio::test]
async fn patch_with_fences_and_stale_counts_is_repaired() {
    let ws = workspace(&[("a.py", "one\ntwo\nthree\n")]);
    let mut ctx = ctx();
    read(&ws, &mut ctx, "a.py").await;
    // Fenced, and the header claims 5/5 lines for a 3/3 hunk.
    let patch = "```diff\n--- a/a.py\n+++ b/a.py\n@@ -1,5 +1,5 @@\n one\n-two\n+TWO\n three\n```\n";
    let out = call(
        &tools(&ws),
        &mut ctx,
        "apply_patch",
        json!({"patch": patch}),
    )
    .await;
    assert!(!out.is_error, "{}", out.agent_view);
    assert_eq!(
        std::fs::read_to_string(ws.root.join("a.py")).unwrap(),
        "one\nTWO\nthree\n"
    );
    assert!(
        out.agent_view
            .contains(&err_text(&ctx, "apply_patch", "fix_fences")),
        "{}",
        out.agent_view
    );
    assert_eq!(
        out.agent_view
            .matches(&err_text(&ctx, "apply_patch", "fix_fences"))
            .count(),
        1,
        "each repair is named once: {}",
        out.agent_view
    );
    assert!(out.user_view.contains("+TWO"), "{}", out.user_view);
}

#[tokio::test]
async fn patch_result_shows_the_changed_lines_as_they_now_read() {
    let body: String = (1..=30).map(|i| format!("line {i}\n")).collect();
    let ws = workspace(&[("big.py", body.as_str())]);
    let mut ctx = ctx();
    read(&ws, &mut ctx, "big.py").await;
    // Stated at line 2, found at 14: the model should see where it landed.
    let patch = "--- a/big.py\n+++ b/big.py\n@@ -2,7 +2,7 @@\n line 14\n line 15\n line 16\n-line 17\n+LINE SEVENTEEN\n line 18\n line 19\n line 20\n";
    let out = call(
        &tools(&ws),
        &mut ctx,
        "apply_patch",
        json!({"patch": patch}),
    )
    .await;
    assert!(!out.is_error, "{}", out.agent_view);
    assert!(
        out.agent_view.contains("17| LINE SEVENTEEN"),
        "{}",
        out.agent_view
    );
    assert!(
        out.agent_view.contains("`big.py` changed lines 17-17"),
        "{}",
        out.agent_view
    );
    assert!(
        !out.agent_view.contains("line 13"),
        "only the change and a little context: {}",
        out.agent_view
    );

    // A clean patch at its stated place is not echoed back.
    let patch =
        "--- a/big.py\n+++ b/big.py\n@@ -2,3 +2,3 @@\n line 2\n-line 3\n+LINE THREE\n line 4\n";
    let out = call(
        &tools(&ws),
        &mut ctx,
        "apply_patch",
        json!({"patch": patch}),
    )
    .await;
    assert!(!out.is_error, "{}", out.agent_view);
    assert!(!out.agent_view.contains("LINE THREE"), "{}", out.agent_view);
}

#[tokio::test]
async fn patch_applied_away_from_its_stated_line_says_where() {
    let body: String = (1..=30).map(|i| format!("l{i}\n")).collect();
    let ws = workspace(&[("a.txt", &body)]);
    let mut ctx = ctx();
    read(&ws, &mut ctx, "a.txt").await;
    // A few lines off (an earlier hunk's lines not counted): nothing to say.
    let near = "--- a/a.txt\n+++ b/a.txt\n@@ -20,3 +20,3 @@\n l24\n-l25\n+L25\n l26\n";
    let out = call(&tools(&ws), &mut ctx, "apply_patch", json!({"patch": near})).await;
    assert!(!out.is_error, "{}", out.agent_view);
    assert!(!out.agent_view.contains("Placed"), "{}", out.agent_view);
    assert!(
        !out.agent_view.contains("L25"),
        "not echoed: {}",
        out.agent_view
    );
    // Stated at line 3; the lines are at 14-16: worth a look.
    let patch = "--- a/a.txt\n+++ b/a.txt\n@@ -3,3 +3,3 @@\n l14\n-l15\n+L15\n l16\n";
    let out = call(
        &tools(&ws),
        &mut ctx,
        "apply_patch",
        json!({"patch": patch}),
    )
    .await;
    assert!(!out.is_error, "{}", out.agent_view);
    let note = quire_config::render(
        &err_text(&ctx, "apply_patch", "placed_offset"),
        &[
            ("hunk", "1"),
            ("path", "a.txt"),
            ("line", "14"),
            ("stated", "3"),
        ],
    );
    assert!(out.agent_view.contains(&note), "{}", out.agent_view);
    assert!(
        std::fs::read_to_string(ws.root.join("a.txt"))
            .unwrap()
            .contains("l14\nL15\nl16\n")
    );
}

#[tokio::test]
async fn patch_failing_hunk_changes_nothing() {
    let ws = workspace(&[("a.py", "a1\na2\n"), ("b.py", "b1\nb2\n")]);
    let mut ctx = ctx();
    read(&ws, &mut ctx, "a.py").await;
    read(&ws, &mut ctx, "b.py").await;
    let patch = "--- a/a.py\n+++ b/a.py\n@@ -1,2 +1,2 @@\n a1\n-a2\n+A2\n\
                 --- /dev/null\n+++ b/c.py\n@@ -0,0 +1 @@\n+new\n\
                 --- a/b.py\n+++ b/b.py\n@@ -1,2 +1,2 @@\n b1\n-bX\n+B2\n";
    let out = call(
        &tools(&ws),
        &mut ctx,
        "apply_patch",
        json!({"patch": patch}),
    )
    .await;
    assert!(out.is_error);
    assert!(out.agent_view.contains("b.py"), "{}", out.agent_view);
    assert!(
        out.agent_view.contains("bX"),
        "expected lines quoted: {}",
        out.agent_view
    );
    assert!(
        out.agent_view.contains("1| b1"),
        "nearest lines numbered: {}",
        out.agent_view
    );
    assert_eq!(
        std::fs::read_to_string(ws.root.join("a.py")).unwrap(),
        "a1\na2\n"
    );
    assert_eq!(
        std::fs::read_to_string(ws.root.join("b.py")).unwrap(),
        "b1\nb2\n"
    );
    assert!(!ws.root.join("c.py").exists());
    assert!(ctx.facts.touched.is_empty());
    // What the refused call aimed at is published all the same.
    let edit = &ctx.facts.edits[0];
    assert_eq!(
        (edit.call_id.as_str(), edit.applied),
        ("call-1", false),
        "{edit:?}"
    );
    assert_eq!(ctx.facts.edit_paths("call-1"), ["a.py", "c.py", "b.py"]);
}

#[tokio::test]
async fn patch_needs_read_files_but_not_for_new_ones() {
    let ws = workspace(&[("a.py", "a1\na2\na3\na4\n")]);
    let mut ctx = ctx();
    // Stated at line 1 but the context is at line 3: an unread file may only
    // be patched where the hunks match exactly.
    let drifting = "--- a/a.py\n+++ b/a.py\n@@ -1,2 +1,2 @@\n a3\n-a4\n+A4\n";
    let out = call(
        &tools(&ws),
        &mut ctx,
        "apply_patch",
        json!({"patch": drifting}),
    )
    .await;
    assert!(out.is_error);
    assert_eq!(
        out.agent_view,
        quire_config::render(
            &err_text(&ctx, "apply_patch", "not_read"),
            &[("path", "a.py")]
        )
    );
    assert_eq!(
        std::fs::read_to_string(ws.root.join("a.py")).unwrap(),
        "a1\na2\na3\na4\n"
    );
    // The same change stated at its true place proves the model knew the text.
    let exact = "--- a/a.py\n+++ b/a.py\n@@ -3,2 +3,2 @@\n a3\n-a4\n+A4\n";
    let out = call(
        &tools(&ws),
        &mut ctx,
        "apply_patch",
        json!({"patch": exact}),
    )
    .await;
    assert!(!out.is_error, "{}", out.agent_view);
    assert_eq!(
        std::fs::read_to_string(ws.root.join("a.py")).unwrap(),
        "a1\na2\na3\nA4\n"
    );
    let create = "--- /dev/null\n+++ b/pkg/n.py\n@@ -0,0 +1,2 @@\n+x\n+y\n";
    let out = call(
        &tools(&ws),
        &mut ctx,
        "apply_patch",
        json!({"patch": create}),
    )
    .await;
    assert!(!out.is_error, "{}", out.agent_view);
    assert_eq!(
        std::fs::read_to_string(ws.root.join("pkg/n.py")).unwrap(),
        "x\ny\n"
    );
}

// -------------------------------------------------------------- path guard

#[tokio::test]
async fn every_tool_refuses_paths_outside_the_workspace() {
    let outside = TempDir::new().unwrap();
    std::fs::write(outside.path().join("secret.txt"), "secret\n").unwrap();
    let ws = workspace(&[("in.py", "x\n")]);
    std::os::unix::fs::symlink(outside.path(), ws.root.join("link")).unwrap();
    let mut ctx = ctx();
    for bad in ["../x", "/etc/passwd", "link/secret.txt"] {
        let new_file = format!("{bad}/new.txt");
        let patched = format!("{bad}.new");
        let calls = [
            ("list_files", json!({"path": bad}), bad.to_string()),
            ("read_file", json!({"path": bad}), bad.to_string()),
            (
                "search",
                json!({"pattern": "secret", "path": bad}),
                bad.to_string(),
            ),
            (
                "edit_file",
                json!({"path": bad, "old": "secret", "new": "leak"}),
                bad.to_string(),
            ),
            (
                "write_file",
                json!({"path": new_file, "content": "x"}),
                new_file.clone(),
            ),
            (
                "apply_patch",
                json!({"patch": format!("--- /dev/null\n+++ b/{patched}\n@@ -0,0 +1 @@\n+x\n")}),
                patched.clone(),
            ),
        ];
        for (tool, args, shown) in calls {
            let out = call(&tools(&ws), &mut ctx, tool, args).await;
            assert!(out.is_error, "{tool} {bad}: {}", out.agent_view);
            let expected =
                quire_config::render(&err_text(&ctx, tool, "outside"), &[("path", &shown)]);
            assert_eq!(out.agent_view, expected, "{tool} {bad}");
        }
    }
    assert_eq!(
        std::fs::read_to_string(outside.path().join("secret.txt")).unwrap(),
        "secret\n"
    );
    assert_eq!(std::fs::read_dir(outside.path()).unwrap().count(), 1);
}

#[tokio::test]
async fn writes_the_final_apply_would_refuse_are_refused_at_write_time_with_the_reason() {
    let outside = TempDir::new().unwrap();
    let dirs = TempDir::new().unwrap();
    let original = dirs.path().join("original");
    write(&original, "in.py", "x\n");
    // Left out of the copy (it leads outside), so the copy has no `vendor`.
    std::os::unix::fs::symlink(outside.path(), original.join("vendor")).unwrap();
    let root = dirs.path().join("copy");
    let ws = Ws {
        copy: Arc::new(SessionCopy::create(&original, &root).unwrap()),
        root,
        _dirs: dirs,
    };
    let mut ctx = ctx();
    let calls = [
        (
            "write_file",
            json!({"path": "vendor/lib.py", "content": "x"}),
            "vendor/lib.py",
        ),
        (
            "apply_patch",
            json!({"patch": "--- /dev/null\n+++ b/vendor/new.py\n@@ -0,0 +1 @@\n+x\n"}),
            "vendor/new.py",
        ),
        (
            "write_file",
            json!({"path": ".git/hooks/pre-commit", "content": "x"}),
            ".git/hooks/pre-commit",
        ),
    ];
    for (tool, args, path) in calls {
        let out = call(&tools(&ws), &mut ctx, tool, args).await;
        assert!(out.is_error, "{tool} {path}: {}", out.agent_view);
        let template = err_text(&ctx, tool, "not_applicable");
        assert!(
            out.agent_view
                .starts_with(&quire_config::render(prefix_of(&template), &[])),
            "{tool}: {}",
            out.agent_view
        );
        assert!(
            out.agent_view.contains(&format!("`{path}`")),
            "{}",
            out.agent_view
        );
        // The reason says what is wrong with the path.
        let reason = if path.starts_with(".git") {
            "reserved path"
        } else {
            "leads outside the workspace"
        };
        assert!(out.agent_view.contains(reason), "{}", out.agent_view);
        assert!(!ws.root.join(path).exists(), "{tool} wrote {path}");
    }
    assert_eq!(std::fs::read_dir(outside.path()).unwrap().count(), 0);
    // A normal new file is still fine.
    let out = call(
        &tools(&ws),
        &mut ctx,
        "write_file",
        json!({"path": "src/new.py", "content": "x"}),
    )
    .await;
    assert!(!out.is_error, "{}", out.agent_view);
}

// ----------------------------------------------------------------- run_tests

const PYTEST_PROJECT: &[(&str, &str)] = &[
    ("calc.py", "def add(a, b):\n    return a - b\n"),
    (
        "test_calc.py",
        "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n\n\ndef test_zero():\n    assert add(0, 0) == 0\n",
    ),
];

#[tokio::test]
async fn run_tests_digests_pytest_output() {
    let ws = workspace(PYTEST_PROJECT);
    let mut ctx = ctx();
    let runner = TestRunner::new(
        ws.copy.clone(),
        Some("python3 -m pytest -q -p no:cacheprovider".into()),
    );
    runner.on_start(&mut ctx).await.unwrap();
    let out = call(&runner, &mut ctx, "run_tests", json!({})).await;
    assert!(!out.is_error, "{}", out.agent_view);
    assert!(
        out.agent_view.contains("test_calc.py::test_add"),
        "{}",
        out.agent_view
    );
    assert!(
        !out.agent_view.contains("test_zero"),
        "passing tests are not listed: {}",
        out.agent_view
    );
    assert!(
        out.user_view.contains("def test_add"),
        "full output for the user: {}",
        out.user_view
    );
    assert!(out.agent_view.len() < out.user_view.len());
    let state = ctx.state.get::<WorkspaceState>().unwrap();
    let last = state.last_test.as_ref().unwrap();
    assert_eq!(last.exit_code, Some(1));
    assert!(!last.succeeded());
    assert_eq!(state.test_runs, 1);
    assert!(!ctx.facts.edited_since_test);
    assert_eq!(ctx.facts.last_test, Some(quire_core::TestOutcome::Failed));
    assert!(!ws.root.join("__pycache__").exists(), "no bytecode written");
    assert!(
        !out.agent_view.contains("previous run"),
        "first run: {}",
        out.agent_view
    );

    // A test added since: the next run says the count moved.
    std::fs::write(
        ws.root.join("test_more.py"),
        "from calc import add\n\n\ndef test_neg():\n    assert add(-1, 1) == -2\n",
    )
    .unwrap();
    let out = call(&runner, &mut ctx, "run_tests", json!({})).await;
    assert!(
        out.agent_view
            .contains("3 tests ran; the previous run had 2."),
        "{}",
        out.agent_view
    );
    let out = call(&runner, &mut ctx, "run_tests", json!({})).await;
    assert!(
        !out.agent_view.contains("previous run"),
        "same count: {}",
        out.agent_view
    );
}

#[tokio::test]
async fn run_tests_times_out() {
    let ws = workspace(&[]);
    let mut config = config();
    config.tests.timeout_secs = 1;
    let mut ctx = ctx_with(config);
    let runner = TestRunner::new(ws.copy.clone(), Some("sleep 30".into()));
    let started = std::time::Instant::now();
    let out = call(&runner, &mut ctx, "run_tests", json!({})).await;
    assert!(started.elapsed() < std::time::Duration::from_secs(15));
    assert!(out.is_error);
    assert!(
        out.agent_view
            .starts_with(prefix_of(&err_text(&ctx, "run_tests", "timeout"))),
        "{}",
        out.agent_view
    );
    assert!(
        ctx.state
            .get::<WorkspaceState>()
            .unwrap()
            .last_test
            .as_ref()
            .unwrap()
            .timed_out
    );
}

#[tokio::test]
async fn a_test_runner_that_is_not_installed_stops_the_session_with_the_cause() {
    let ws = workspace(PYTEST_PROJECT);
    let mut ctx = ctx();
    // A runner module that does not exist, the way a missing pytest fails.
    let runner = TestRunner::new(
        ws.copy.clone(),
        Some("python3 -m quire_no_such_runner -q".into()),
    );
    let out = call(&runner, &mut ctx, "run_tests", json!({})).await;
    assert!(out.is_error);
    assert!(
        out.agent_view
            .starts_with(prefix_of(&err_text(&ctx, "run_tests", "runner_missing"))),
        "{}",
        out.agent_view
    );
    match &out.control {
        quire_core::Control::Stop { reason } => assert!(
            reason.contains("No module named quire_no_such_runner")
                && reason.contains("python3 -m quire_no_such_runner"),
            "{reason}"
        ),
        other => panic!("the session goes on: {other:?}"),
    }

    // A shell that finds no such command: the same.
    let runner = TestRunner::new(ws.copy.clone(), Some("quire-no-such-command".into()));
    let out = call(&runner, &mut ctx, "run_tests", json!({})).await;
    assert!(
        matches!(out.control, quire_core::Control::Stop { .. }),
        "{out:?}"
    );

    // A module the project's code imports is the model's to fix: the run
    // is reported as failing tests and the session goes on.
    std::fs::write(ws.root.join("calc.py"), "import quire_missing_dep\n").unwrap();
    let runner = TestRunner::new(
        ws.copy.clone(),
        Some("python3 -m pytest -q -p no:cacheprovider".into()),
    );
    let out = call(&runner, &mut ctx, "run_tests", json!({})).await;
    assert_eq!(
        out.control,
        quire_core::Control::Continue,
        "{}",
        out.agent_view
    );
}

#[test]
fn runner_missing_names_only_the_commands_own_runner() {
    use crate::run_tests::runner_missing;
    let cmd = "python -m pytest -q";
    assert_eq!(
        runner_missing(cmd, "/usr/bin/python: No module named pytest\n", Some(1)).as_deref(),
        Some("No module named pytest")
    );
    assert_eq!(
        runner_missing(
            "pytest -x",
            "E   ModuleNotFoundError: No module named 'pytest'",
            Some(1)
        )
        .as_deref(),
        Some("No module named pytest")
    );
    assert_eq!(
        runner_missing(
            cmd,
            "E   ModuleNotFoundError: No module named 'requests'",
            Some(1)
        ),
        None
    );
    assert_eq!(runner_missing(cmd, "No module named pytest", Some(0)), None);
    assert!(runner_missing("make test", "sh: 1: make: not found", Some(127)).is_some());
}

#[tokio::test]
async fn run_tests_without_command() {
    let ws = workspace(&[]);
    let mut ctx = ctx();
    let runner = TestRunner::new(ws.copy.clone(), Some("  ".into()));
    let out = call(&runner, &mut ctx, "run_tests", json!({})).await;
    assert!(out.is_error);
    assert_eq!(out.agent_view, err_text(&ctx, "run_tests", "no_command"));
}

// -------------------------------------------------------------------- finish

#[tokio::test]
async fn a_finish_sent_with_failing_tests_or_a_failed_edit_in_the_same_reply_is_refused() {
    let ws = workspace(PYTEST_PROJECT);
    let mut ctx = ctx();
    let runner = TestRunner::new(
        ws.copy.clone(),
        Some("python3 -m pytest -q -p no:cacheprovider".into()),
    );
    runner.on_start(&mut ctx).await.unwrap();
    let finisher = Finisher::new(ws.copy.clone());
    // A change that leaves test_add failing.
    std::fs::write(
        ws.root.join("calc.py"),
        "def add(a, b):\n    return a * b\n",
    )
    .unwrap();
    let reply = |calls: &[&str]| {
        quire_types::Message::assistant(
            "",
            calls
                .iter()
                .enumerate()
                .map(|(i, name)| ToolCall::new(format!("c{i}"), *name, "{}"))
                .collect(),
        )
    };
    ctx.messages.push(reply(&["run_tests", "finish"]));
    let out = call(&runner, &mut ctx, "run_tests", json!({})).await;
    assert!(
        out.agent_view.contains("Tests failed"),
        "{}",
        out.agent_view
    );
    let out = call(&finisher, &mut ctx, "finish", json!({"summary": "s"})).await;
    assert!(out.is_error);
    assert_eq!(
        out.agent_view,
        err_text(&ctx, "finish", "tests_failed_this_reply")
    );
    // Finishing in a later reply, having seen the failure, is the model's call.
    ctx.messages.push(reply(&["finish"]));
    let out = call(&finisher, &mut ctx, "finish", json!({"summary": "s"})).await;
    assert!(!out.is_error, "{}", out.agent_view);
    // Passing tests in the same reply: the finish stands.
    std::fs::write(
        ws.root.join("calc.py"),
        "def add(a, b):\n    return a + b\n",
    )
    .unwrap();
    ctx.messages.push(reply(&["run_tests", "finish"]));
    call(&runner, &mut ctx, "run_tests", json!({})).await;
    let out = call(&finisher, &mut ctx, "finish", json!({"summary": "s"})).await;
    assert!(!out.is_error, "{}", out.agent_view);
    // An edit of this reply that failed: not finished, whatever the tests
    // said (they ran without it).
    ctx.messages
        .push(reply(&["edit_file", "run_tests", "finish"]));
    ctx.messages.push(quire_types::Message::tool(
        "c0",
        "edit_file",
        "Not applied: ...",
        true,
    ));
    call(&runner, &mut ctx, "run_tests", json!({})).await;
    let out = call(&finisher, &mut ctx, "finish", json!({"summary": "s"})).await;
    assert!(out.is_error);
    assert_eq!(
        out.agent_view,
        err_text(&ctx, "finish", "edit_failed_this_reply")
    );
    // A failed read in the same reply does not stop the finish.
    ctx.messages
        .push(reply(&["read_file", "run_tests", "finish"]));
    ctx.messages.push(quire_types::Message::tool(
        "c0",
        "read_file",
        "No file",
        true,
    ));
    call(&runner, &mut ctx, "run_tests", json!({})).await;
    let out = call(&finisher, &mut ctx, "finish", json!({"summary": "s"})).await;
    assert!(!out.is_error, "{}", out.agent_view);
}

#[tokio::test]
async fn finish_requires_a_change_and_tests_after_edits() {
    let ws = workspace(PYTEST_PROJECT);
    let mut ctx = ctx();
    let runner = TestRunner::new(
        ws.copy.clone(),
        Some("python3 -m pytest -q -p no:cacheprovider".into()),
    );
    runner.on_start(&mut ctx).await.unwrap();
    let finisher = Finisher::new(ws.copy.clone());
    let summary = json!({"summary": "Fixed add."});

    let out = call(&finisher, &mut ctx, "finish", summary.clone()).await;
    assert!(out.is_error);
    assert_eq!(out.agent_view, err_text(&ctx, "finish", "no_change"));
    assert_eq!(out.control, Control::Continue);

    read(&ws, &mut ctx, "calc.py").await;
    let out = call(
        &tools(&ws),
        &mut ctx,
        "edit_file",
        json!({"path": "calc.py", "old": "a - b", "new": "a + b"}),
    )
    .await;
    assert!(!out.is_error, "{}", out.agent_view);
    let out = call(&finisher, &mut ctx, "finish", summary.clone()).await;
    assert!(out.is_error);
    assert_eq!(out.agent_view, err_text(&ctx, "finish", "tests_not_run"));

    let out = call(&runner, &mut ctx, "run_tests", json!({})).await;
    assert!(!out.is_error, "{}", out.agent_view);
    assert!(
        ctx.state
            .get::<WorkspaceState>()
            .unwrap()
            .last_test
            .as_ref()
            .unwrap()
            .succeeded(),
        "{}",
        out.user_view
    );
    let out = call(&finisher, &mut ctx, "finish", summary).await;
    assert!(!out.is_error, "{}", out.agent_view);
    assert_eq!(
        out.control,
        Control::Finish {
            summary: "Fixed add.".into()
        }
    );
}

#[tokio::test]
async fn finish_without_test_extension_does_not_demand_tests() {
    let ws = workspace(&[("a.py", "x = 1\n")]);
    let mut ctx = ctx();
    read(&ws, &mut ctx, "a.py").await;
    let out = call(
        &tools(&ws),
        &mut ctx,
        "edit_file",
        json!({"path": "a.py", "old": "x = 1", "new": "x = 2"}),
    )
    .await;
    assert!(!out.is_error);
    let out = call(
        &Finisher::new(ws.copy.clone()),
        &mut ctx,
        "finish",
        json!({"summary": "done"}),
    )
    .await;
    assert!(!out.is_error, "{}", out.agent_view);
    assert!(matches!(out.control, Control::Finish { .. }));
}

#[test]
fn extension_names_and_tools_are_stable() {
    let ws = workspace(&[]);
    let t = WorkspaceTools::new(ws.copy.clone());
    assert_eq!(t.name(), "workspace_tools");
    assert_eq!(
        t.tools(),
        vec![
            "list_files",
            "read_file",
            "search",
            "edit_file",
            "write_file",
            "apply_patch"
        ]
    );
    let r = TestRunner::new(ws.copy.clone(), None);
    assert_eq!((r.name(), r.tools()), ("tests", vec!["run_tests"]));
    let f = Finisher::new(ws.copy.clone());
    assert_eq!((f.name(), f.tools()), ("finish", vec!["finish"]));
    // Every tool has its words in the built-in config.
    let config = config();
    for tool in t.tools().into_iter().chain(r.tools()).chain(f.tools()) {
        assert!(config.tools.contains_key(tool), "{tool}");
    }
    // The published texts name exactly the tools each extension declares.
    let published = |name: &str| -> Vec<&str> {
        crate::texts_by_extension()
            .iter()
            .find(|(extension, _)| *extension == name)
            .map(|(_, texts)| texts.iter().map(|t| t.tool).collect())
            .unwrap_or_default()
    };
    assert_eq!(published(t.name()), t.tools());
    assert_eq!(published(r.name()), r.tools());
    assert_eq!(published(f.name()), f.tools());
}

/// Every text key the code renders is in the keys its tool publishes, and
/// the built-in config has every published key, so the model never reads
/// "[missing tool error text]" (other configs are checked when they load).
#[test]
fn every_text_key_used_is_published_and_in_the_default_config() {
    let sources = [
        (crate::list::ERRORS, include_str!("list.rs")),
        (crate::read::ERRORS, include_str!("read.rs")),
        (crate::search::ERRORS, include_str!("search.rs")),
        (crate::edit::ERRORS, include_str!("edit.rs")),
        (crate::write::ERRORS, include_str!("write.rs")),
        (crate::patch::ERRORS, include_str!("patch.rs")),
        (crate::run_tests::ERRORS, include_str!("run_tests.rs")),
        (crate::finish::ERRORS, include_str!("finish.rs")),
        (crate::commands::ERRORS, include_str!("commands.rs")),
    ];
    let mut checked = 0;
    for (published, source) in sources {
        assert!(published.contains(&"cut"), "every tool's output is capped");
        let mut rest = source;
        while let Some(at) = rest.find("TOOL,") {
            rest = rest[at + 5..].trim_start();
            if let Some(lit) = rest.strip_prefix('"') {
                let key = &lit[..lit.find('"').unwrap()];
                assert!(published.contains(&key), "unpublished key `{key}`");
                checked += 1;
            }
        }
    }
    assert!(checked > 50, "scan found only {checked} uses");
    // Keys chosen at run time: the edit notes, the command policy's reasons.
    let edit = include_str!("edit.rs");
    let mut rest = edit;
    while let Some(at) = rest.find("=> \"note_") {
        rest = &rest[at + 4..];
        let key = &rest[..rest.find('"').unwrap()];
        assert!(
            crate::edit::ERRORS.contains(&key),
            "unpublished key `{key}`"
        );
    }
    for reason in [
        "denylisted",
        "not_allowlisted",
        "asked",
        "nobody_to_ask",
        "git_push",
    ] {
        assert!(crate::commands::ERRORS.contains(&reason), "{reason}");
    }
    let config = config();
    for (_, texts) in crate::texts_by_extension() {
        assert_eq!(config.missing_tool_texts(texts), Vec::new());
    }
}

// ------------------------------------------------- read_file symbol, outline

const MODULE: &str = "\"\"\"A module.\"\"\"\n\n\nclass Seekable:\n    \"\"\"Doc.\n\nLong docstring line.\n\"\"\"\n\n    def __init__(self):\n        self.items = []\n\n    def elements(self):\n        return self.items\n\n\n@cache\ndef chunked(it, n):\n    if n < 0:\n        raise ValueError\n    return it\n\n\ndef chunked_even(it, n):\n    return it\n";

#[tokio::test]
async fn read_symbol_shows_one_definition_whole() {
    let ws = workspace(&[("pkg/more.py", MODULE)]);
    let mut ctx = ctx();
    let out = call(
        &tools(&ws),
        &mut ctx,
        "read_file",
        json!({"path": "pkg/more.py", "symbol": "chunked"}),
    )
    .await;
    assert!(!out.is_error, "{}", out.agent_view);
    assert_eq!(
        out.agent_view,
        "17| @cache\n18| def chunked(it, n):\n19|     if n < 0:\n20|         raise ValueError\n21|     return it"
    );

    // A class with its docstring and methods; a method by qualified name.
    let out = call(
        &tools(&ws),
        &mut ctx,
        "read_file",
        json!({"path": "pkg/more.py", "symbol": "Seekable"}),
    )
    .await;
    assert!(
        out.agent_view.starts_with(" 4| class Seekable:"),
        "{}",
        out.agent_view
    );
    assert!(
        out.agent_view.ends_with("14|         return self.items"),
        "{}",
        out.agent_view
    );
    let out = call(
        &tools(&ws),
        &mut ctx,
        "read_file",
        json!({"path": "pkg/more.py", "symbol": "Seekable.elements"}),
    )
    .await;
    assert_eq!(
        out.agent_view,
        "13|     def elements(self):\n14|         return self.items"
    );

    // A plural the file does not have (a note guessed `<Name>Tests`): the
    // one definition named so up to case and a final s is shown, and said.
    let out = call(
        &tools(&ws),
        &mut ctx,
        "read_file",
        json!({"path": "pkg/more.py", "symbol": "seekables"}),
    )
    .await;
    assert!(!out.is_error, "{}", out.agent_view);
    assert!(
        out.agent_view.starts_with(" 4| class Seekable:"),
        "{}",
        out.agent_view
    );
    assert!(
        out.agent_view.ends_with(&quire_config::render(
            &err_text(&ctx, "read_file", "symbol_loose"),
            &[("symbol", "seekables"), ("name", "Seekable")]
        )),
        "{}",
        out.agent_view
    );

    // Unknown: close names are offered; not code: said so.
    let out = call(
        &tools(&ws),
        &mut ctx,
        "read_file",
        json!({"path": "pkg/more.py", "symbol": "chunk"}),
    )
    .await;
    assert!(out.is_error);
    assert!(
        out.agent_view.contains("chunked, chunked_even"),
        "{}",
        out.agent_view
    );
    let ws2 = workspace(&[("notes.txt", "chunked\n")]);
    let out = call(
        &tools(&ws2),
        &mut ctx,
        "read_file",
        json!({"path": "notes.txt", "symbol": "chunked"}),
    )
    .await;
    assert!(out.is_error);
    assert!(
        out.agent_view.contains("offset and limit"),
        "{}",
        out.agent_view
    );
}

#[tokio::test]
async fn read_symbol_longer_than_the_limit_says_how_to_go_on() {
    let body: String = (0..30).map(|i| format!("    x{i} = {i}\n")).collect();
    let src = format!("def big():\n{body}\ndef after():\n    pass\n");
    let ws = workspace(&[("m.py", &src)]);
    let mut config = config();
    config.limits.read_max_lines = 10;
    let mut ctx = ctx_with(config);
    let out = call(
        &tools(&ws),
        &mut ctx,
        "read_file",
        json!({"path": "m.py", "symbol": "big"}),
    )
    .await;
    assert!(
        out.agent_view.contains(" 1| def big():"),
        "{}",
        out.agent_view
    );
    assert!(out.agent_view.contains("offset=11"), "{}", out.agent_view);
}

#[tokio::test]
async fn read_outline_lists_definitions_with_ranges() {
    let ws = workspace(&[("pkg/more.py", MODULE)]);
    let mut ctx = ctx();
    let out = call(
        &tools(&ws),
        &mut ctx,
        "read_file",
        json!({"path": "pkg/more.py", "outline": true}),
    )
    .await;
    assert!(!out.is_error);
    let lines: Vec<&str> = out.agent_view.lines().skip(1).collect();
    assert_eq!(
        lines,
        vec![
            "4-14 class Seekable:",
            "  10-11 def __init__(self):",
            "  13-14 def elements(self):",
            "17-21 def chunked(it, n):",
            "24-25 def chunked_even(it, n):"
        ]
    );
    assert!(
        out.agent_view.starts_with("pkg/more.py (25 lines)"),
        "{}",
        out.agent_view
    );
    // No imports: no imports section.
    assert!(!out.agent_view.contains("imports"), "{}", out.agent_view);

    // A module's import lines come first, numbered as read_file numbers
    // them, so an import can be edited without reading the top.
    let with_imports = format!("import os\nfrom src.errors import (Bad,\n    Worse)\n{MODULE}");
    let ws = workspace(&[("pkg/uses.py", with_imports.as_str())]);
    let mut ctx = crate::tests::ctx();
    let out = call(
        &tools(&ws),
        &mut ctx,
        "read_file",
        json!({"path": "pkg/uses.py", "outline": true}),
    )
    .await;
    assert!(
        out.agent_view.contains("imports (lines 1-3, as read_file shows them):\n1| import os\n2| from src.errors import (Bad,\n3|     Worse)\ndefinitions:\n7-17 class Seekable:"),
        "{}",
        out.agent_view
    );
    let out = call(
        &tools(&ws),
        &mut ctx,
        "edit_file",
        json!({"path": "pkg/uses.py", "old": "import os\n", "new": "import os\nimport sys\n"}),
    )
    .await;
    assert!(!out.is_error, "{}", out.agent_view);
}
