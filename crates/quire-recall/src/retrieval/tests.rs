use super::*;
use crate::testutil::{action, config, ctx};
use quire_notes::{Kind, NewNote, NoteTree, Provenance};

struct Fixture {
    dir: tempfile::TempDir,
    paths: NotesPaths,
    hindsight: String,
    stale: String,
    shared: String,
}

fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    std::fs::create_dir_all(ws.join("src")).unwrap();
    std::fs::write(ws.join("src/cart.py"), "def total(items): pass\n").unwrap();
    let paths = NotesPaths {
        root: dir.path().join("notes"),
        index_dir: dir.path().join("index"),
    };
    let tree = NoteTree::open(&paths.root).unwrap();
    let hindsight = tree
        .create(
            NewNote::project(
                "shop",
                "testing",
                Kind::Hindsight,
                "Cart totals crash with Decimal and float",
            )
            .description("adding a float price to a Decimal total")
            .error_signatures([
                "TypeError: unsupported operand type(s) for +: 'Decimal' and 'float'",
            ])
            .provenance(Provenance {
                files: vec!["src/cart.py".into()],
                ..Provenance::default()
            })
            .body("## Error\n\nTypeError\n\n## Fix\n\nParse prices as Decimal."),
        )
        .unwrap();
    let stale = tree
        .create(
            NewNote::project(
                "shop",
                "money",
                Kind::Insight,
                "Cart totals are rounded in money.py",
            )
            .description("where rounding of cart totals happens")
            .provenance(Provenance {
                files: vec!["src/money.py".into()],
                ..Provenance::default()
            }),
        )
        .unwrap();
    let shared = tree
        .create(
            NewNote::shared(
                "python",
                Kind::Insight,
                "Never mix Decimal and float for money totals",
            )
            .description("Decimal arithmetic with floats raises TypeError"),
        )
        .unwrap();
    tree.create(NewNote::project(
        "other",
        "x",
        Kind::Insight,
        "Cart totals in the other project",
    ))
    .unwrap();
    Fixture {
        hindsight: hindsight.meta.id,
        stale: stale.meta.id,
        shared: shared.meta.id,
        paths,
        dir,
    }
}

fn extension(f: &Fixture, budget: usize) -> NotesExtension {
    NotesExtension::new(
        f.paths.clone(),
        Redactor::new(),
        "shop",
        "Cart totals crash when a coupon adds a float",
        f.dir.path().join("ws"),
        RetrievalSettings {
            max_shown: 5,
            budget_chars: budget,
            inline_chars: 0,
            min_score: 0.0,
            code_chars: 0,
        },
    )
}

#[tokio::test]
async fn note_texts_are_shown_in_full_while_they_fit_and_count_as_read() {
    let f = fixture();
    let with_inline = |chars: usize| {
        let mut ext = extension(&f, 2_000);
        ext.settings.inline_chars = chars;
        ext
    };
    let ext = with_inline(1_000);
    let mut ctx = ctx(config());
    ctx.messages.push(Message::user("the task"));
    ext.on_start(&mut ctx).await.unwrap();
    let list = ctx.messages[1].text().to_string();
    assert!(list.contains("Parse prices as Decimal."), "{list}");
    assert!(!list.contains("read_note"), "{list}");
    // Everything listed is shown whole: no tool is needed to read it.
    assert!(ext.tools().is_empty());
    let state = ctx.state.get_mut::<NotesState>();
    assert!(state.read.contains(&f.hindsight), "{:?}", state.read);

    // Cut at a line within the budget, with a pointer to the rest, and
    // then the tools are offered.
    let ext = with_inline(20);
    let mut ctx = crate::testutil::ctx(config());
    ctx.messages.push(Message::user("the task"));
    ext.on_start(&mut ctx).await.unwrap();
    let list = ctx.messages[1].text().to_string();
    assert!(list.contains("## Error\n\nTypeError"), "{list}");
    assert!(!list.contains("Parse prices"), "{list}");
    assert!(
        list.contains(&format!("read_note {} for the rest", f.hindsight)),
        "{list}"
    );
    assert_eq!(ext.tools(), RETRIEVAL_TOOLS.to_vec());
    assert!(
        !ctx.state
            .get_mut::<NotesState>()
            .read
            .contains(&f.hindsight)
    );

    // Off: titles only, nothing counts as read, the tools are offered.
    let ext = with_inline(0);
    let mut ctx = crate::testutil::ctx(config());
    ctx.messages.push(Message::user("the task"));
    ext.on_start(&mut ctx).await.unwrap();
    assert!(!ctx.messages[1].text().contains("Parse prices"));
    assert!(ctx.state.get_mut::<NotesState>().read.is_empty());
    assert_eq!(ext.tools(), RETRIEVAL_TOOLS.to_vec());
}

#[tokio::test]
async fn the_start_list_comes_once_after_the_task_within_budget() {
    let f = fixture();
    let ext = extension(&f, 2_000);
    let mut ctx = ctx(config());
    ctx.messages.push(Message::user("the task"));
    ext.on_start(&mut ctx).await.unwrap();
    assert_eq!(ctx.messages.len(), 2);
    let list = ctx.messages[1].text().to_string();
    let at = |id: &str| {
        list.find(id)
            .unwrap_or_else(|| panic!("{id} missing: {list}"))
    };
    assert!(at(&f.hindsight) < at(&f.shared), "project first: {list}");
    // A stale note (its file is gone) is left out: it would mislead.
    assert!(!list.contains(&f.stale), "{list}");
    assert!(!list.contains("other project"), "{list}");
    let fresh_line = list.lines().find(|l| l.contains(&f.hindsight)).unwrap();
    assert!(!fresh_line.contains("stale"), "{fresh_line}");
    assert_eq!(ctx.state.get_mut::<NotesState>().shown.len(), 2);

    // A tight budget keeps only what fits.
    let small = extension(&f, 160);
    let mut ctx2 = crate::testutil::ctx(config());
    ctx2.messages.push(Message::user("the task"));
    small.on_start(&mut ctx2).await.unwrap();
    let shown = ctx2.state.get_mut::<NotesState>().shown.len();
    assert_eq!(shown, 1, "{:?}", ctx2.messages);

    // A resumed session already has its list.
    let mut resumed = crate::testutil::ctx(config());
    resumed.messages.push(Message::user("the task"));
    resumed.messages.push(Message::assistant("", vec![]));
    ext.on_start(&mut resumed).await.unwrap();
    assert_eq!(resumed.messages.len(), 2);
}

#[tokio::test]
async fn search_and_read_pull_more_and_are_recorded() {
    let f = fixture();
    let ext = extension(&f, 2_000);
    let sink = std::sync::Arc::new(quire_core::MemorySink::default());
    let mut ctx = crate::testutil::ctx_with_sink(config(), sink.clone());
    let out = ext
        .execute(
            &mut ctx,
            &action(SEARCH_NOTES, serde_json::json!({"query": "Decimal float"})),
        )
        .await;
    assert!(
        !out.is_error && out.agent_view.contains(&f.shared),
        "{}",
        out.agent_view
    );
    let out = ext
        .execute(
            &mut ctx,
            &action(READ_NOTE, serde_json::json!({"id": f.hindsight})),
        )
        .await;
    assert!(
        out.agent_view.contains("Parse prices as Decimal."),
        "{}",
        out.agent_view
    );
    let stale = ext
        .execute(
            &mut ctx,
            &action(READ_NOTE, serde_json::json!({"id": f.stale})),
        )
        .await;
    assert!(
        stale.agent_view.contains("Stale: src/money.py"),
        "{}",
        stale.agent_view
    );
    let missing = ext
        .execute(
            &mut ctx,
            &action(READ_NOTE, serde_json::json!({"id": "NOPE"})),
        )
        .await;
    assert!(missing.is_error);
    let state = ctx.state.get_mut::<NotesState>();
    assert!(state.read.contains(&f.hindsight) && state.read.contains(&f.stale));
    assert_eq!(state.read.len(), 2);

    // What reached the session is in the trajectory, for crediting.
    let events: Vec<quire_types::Event> = sink.events();
    let facts = crate::SessionFacts::from_events(&events);
    assert_eq!(facts.read, vec![f.hindsight.clone(), f.stale.clone()]);
    assert!(facts.shown.contains(&f.shared));
    let vias: Vec<String> = events
        .iter()
        .filter_map(|e| match &e.kind {
            quire_types::EventKind::NotesRetrieved { via, .. } => Some(via.to_string()),
            _ => None,
        })
        .collect();
    assert_eq!(vias, vec!["search", "read", "read"]);
}

#[tokio::test]
async fn errors_and_failing_tests_get_one_hint_per_note() {
    let f = fixture();
    let ext = extension(&f, 2_000);
    let mut ctx = ctx(config());
    let error = "Traceback:\n  File \"/tmp/x/src/cart.py\", line 3\nTypeError: unsupported operand type(s) for +: 'Decimal' and 'float'";
    let mut out = ToolOutput::error(error);
    ext.offer_hint(&mut ctx, "edit_file", &mut out);
    assert!(out.agent_view.starts_with(error));
    assert!(out.agent_view.contains(&f.hindsight), "{}", out.agent_view);
    assert!(out.user_view.contains(&f.hindsight));

    // The same note is not offered twice.
    let mut again = ToolOutput::error(error);
    ext.offer_hint(&mut ctx, "edit_file", &mut again);
    assert_eq!(again.agent_view, error);

    // Failing tests are not tool errors, but get a hint too.
    let mut fresh = crate::testutil::ctx(config());
    fresh.facts.tested(quire_core::TestOutcome::Failed);
    let mut tests = ToolOutput::ok(format!("Tests failed.\n{error}"), "");
    ext.offer_hint(&mut fresh, "run_tests", &mut tests);
    assert!(
        tests.agent_view.contains(&f.hindsight),
        "{}",
        tests.agent_view
    );

    // Passing tests and unrelated errors get nothing.
    let mut other = crate::testutil::ctx(config());
    let mut ok = ToolOutput::ok(error, "");
    ext.offer_hint(&mut other, "read_file", &mut ok);
    assert_eq!(ok.agent_view, error);
    let mut unrelated = ToolOutput::error("No file `src/nothing.py`.");
    ext.offer_hint(&mut other, "read_file", &mut unrelated);
    assert_eq!(unrelated.agent_view, "No file `src/nothing.py`.");
}

/// The extension as sessions get it: the default threshold.
fn session(f: &Fixture, project: &str, task: &str) -> NotesExtension {
    session_with(f.paths.clone(), project, task, default_min_score(), &f.dir)
}

fn session_with(
    paths: NotesPaths,
    project: &str,
    task: &str,
    min_score: f32,
    dir: &tempfile::TempDir,
) -> NotesExtension {
    NotesExtension::new(
        paths,
        Redactor::new(),
        project,
        task,
        dir.path().join("ws"),
        RetrievalSettings {
            max_shown: 5,
            budget_chars: 2_000,
            inline_chars: 1_500,
            min_score,
            code_chars: 0,
        },
    )
}

/// A session whose start list shows titles only, so the tools are offered.
fn titles_only(f: &Fixture, project: &str, task: &str) -> NotesExtension {
    let mut ext = session(f, project, task);
    ext.settings.inline_chars = 0;
    ext
}

fn default_min_score() -> f32 {
    quire_config::NotesConfig::default().min_score as f32
}

/// Runs `on_start` on a fresh conversation; the messages it added.
async fn started(ext: &NotesExtension) -> (Vec<Message>, Ctx) {
    let mut ctx = ctx(config());
    ctx.messages.push(Message::user("the task"));
    ext.on_start(&mut ctx).await.unwrap();
    (ctx.messages[1..].to_vec(), ctx)
}

const RELATED_TASK: &str = "Cart totals crash with a TypeError when a coupon adds a float \
        discount to the Decimal total. Make cart totals work with coupons.";
const UNRELATED_TASK: &str = "Show the order history page with the newest orders first, \
        twenty per page.";

#[tokio::test]
async fn nothing_for_the_project_gives_no_tools_and_no_message() {
    let f = fixture();
    let ext = session(&f, "blog", "Add an RSS feed of the latest blog posts");
    assert!(ext.tools().is_empty());
    let (added, mut ctx) = started(&ext).await;
    assert!(added.is_empty(), "{added:?}");
    assert!(ctx.state.get_mut::<NotesState>().shown.is_empty());
    // A shared note that matches still counts for any project.
    let jinja = NoteTree::open(&f.paths.root)
        .unwrap()
        .create(
            NewNote::shared("web", Kind::Insight, "Jinja autoescapes HTML in templates")
                .description("mark trusted HTML with the safe filter instead of escaping twice")
                .keywords(["jinja", "autoescape", "safe filter"]),
        )
        .unwrap()
        .meta
        .id;
    let ext = session(
        &f,
        "blog",
        "Post titles show escaped HTML: the Jinja templates escape it twice",
    );
    // Listed, and shown whole (it has no text beyond its entry).
    assert!(ext.tools().is_empty());
    let (added, _) = started(&ext).await;
    assert!(added[0].text().contains(&jinja), "{added:?}");
}

#[tokio::test]
async fn an_unrelated_note_under_the_threshold_gives_no_tools_and_no_message() {
    let f = fixture();
    // The task matches the shop's cart notes a little ("order", "total").
    let task = "Show the order history with totals, the newest orders first";
    let everything = session_with(f.paths.clone(), "shop", task, 0.0, &f.dir);
    assert!(!everything.start_entries().is_empty(), "it does match");
    let (added, _) = started(&everything).await;
    assert_eq!(added.len(), 1);

    let ext = session(&f, "shop", task);
    assert!(ext.tools().is_empty());
    let (added, mut ctx) = started(&ext).await;
    assert!(added.is_empty(), "{added:?}");
    assert!(ctx.state.get_mut::<NotesState>().shown.is_empty());
}

#[tokio::test]
async fn a_related_note_is_listed_and_the_tools_come_when_a_text_is_not_shown() {
    let f = fixture();
    let ext = session(&f, "shop", RELATED_TASK);
    // Shown in full: nothing left to read.
    assert!(ext.tools().is_empty());
    let (added, mut ctx) = started(&ext).await;
    assert_eq!(added.len(), 1);
    let list = added[0].text();
    assert!(list.contains(&f.hindsight), "{list}");
    assert!(list.contains("Parse prices as Decimal."), "inline: {list}");
    assert!(!list.contains("read_note"), "no tool to name: {list}");
    assert!(
        ctx.state
            .get_mut::<NotesState>()
            .shown
            .contains(&f.hindsight)
    );
    // The same session again decides the same: what a resume relies on.
    assert_eq!(session(&f, "shop", RELATED_TASK).tools(), ext.tools());

    // Titles only: both tools, and the list says how to use them.
    let titles = titles_only(&f, "shop", RELATED_TASK);
    assert_eq!(titles.tools(), vec![SEARCH_NOTES, READ_NOTE]);
    let (added, _) = started(&titles).await;
    assert!(added[0].text().contains("read_note"), "{added:?}");
}

#[tokio::test]
async fn an_architecture_note_is_listed_for_any_task_of_its_project() {
    let f = fixture();
    let map = NoteTree::open(&f.paths.root)
        .unwrap()
        .create(
            NewNote::project(
                "shop",
                "layout",
                Kind::Architecture,
                "How the shop is laid out",
            )
            .description("src/cart.py and src/money.py; tests in tests/, run with pytest")
            .body("## Overview\n\nA small Python package."),
        )
        .unwrap()
        .meta
        .id;
    let ext = session(&f, "shop", UNRELATED_TASK);
    assert_eq!(ext.start_entries().len(), 1);
    let (added, _) = started(&ext).await;
    let list = added[0].text();
    assert!(list.contains(&map), "{list}");
    assert!(list.contains("A small Python package."), "{list}");
    // Its whole text follows the entry, so the description is left out.
    assert!(!list.contains("run with pytest"), "{list}");
    assert!(!list.contains(&f.hindsight), "{list}");
    // First among the project notes for a related task too.
    let (added, _) = started(&session(&f, "shop", RELATED_TASK)).await;
    let list = added[0].text();
    let at = |id: &str| list.find(id).unwrap_or_else(|| panic!("{id}: {list}"));
    assert!(at(&map) < at(&f.hindsight), "{list}");
    // Not for another project.
    assert!(
        session(&f, "blog", UNRELATED_TASK)
            .start_entries()
            .is_empty()
    );
}

#[tokio::test]
async fn the_hint_inlines_the_fix_when_the_tools_are_not_listed() {
    let f = fixture();
    let long_fix = (1..=40)
        .map(|i| format!("Step {i}: convert the price field number {i} to Decimal."))
        .collect::<Vec<_>>()
        .join("\n");
    let long = NoteTree::open(&f.paths.root)
            .unwrap()
            .create(
                NewNote::project("shop", "money", Kind::Hindsight, "Refunds crash on float prices")
                    .error_signatures(["KeyError: 'refund_total'"])
                    .body(format!("## Error\n\nKeyError: 'refund_total'\n\n## Cause\n\nold field\n\n## Fix\n\n{long_fix}")),
            )
            .unwrap()
            .meta
            .id;
    let error = "TypeError: unsupported operand type(s) for +: 'Decimal' and 'float'";
    let ext = session(&f, "shop", UNRELATED_TASK);
    assert!(ext.tools().is_empty());
    let sink = std::sync::Arc::new(quire_core::MemorySink::default());
    let mut ctx = crate::testutil::ctx_with_sink(config(), sink.clone());
    let mut out = ToolOutput::error(error);
    ext.offer_hint(&mut ctx, "edit_file", &mut out);
    let hint = &out.agent_view[error.len()..];
    assert!(hint.contains(&f.hindsight), "{hint}");
    assert!(hint.contains("Parse prices as Decimal."), "{hint}");
    assert!(!hint.contains("read_note"), "{hint}");
    assert!(
        !hint.contains("## Error"),
        "the error is right above: {hint}"
    );
    assert!(!hint.contains("[missing"), "{hint}");
    assert!(out.user_view.contains("Parse prices as Decimal."));
    let facts = crate::SessionFacts::from_events(&sink.events());
    assert!(facts.shown.contains(&f.hindsight), "{facts:?}");
    let vias: Vec<String> = sink
        .events()
        .iter()
        .filter_map(|e| match &e.kind {
            quire_types::EventKind::NotesRetrieved { via, .. } => Some(via.to_string()),
            _ => None,
        })
        .collect();
    assert_eq!(vias, vec!["error"]);

    // A long fix is cut at a line within a few hundred characters.
    let mut out = ToolOutput::error("KeyError: 'refund_total'");
    ext.offer_hint(&mut ctx, "edit_file", &mut out);
    assert!(out.agent_view.contains(&long), "{}", out.agent_view);
    assert!(
        out.agent_view.contains("Step 1: convert"),
        "{}",
        out.agent_view
    );
    assert!(!out.agent_view.contains("Step 40:"), "{}", out.agent_view);
    assert!(
        out.agent_view
            .lines()
            .all(|l| !l.starts_with("Step") || l.ends_with("Decimal."))
    );
    assert!(out.agent_view.chars().count() < 600, "{}", out.agent_view);

    // With the tools listed, the hint points to read_note instead.
    let listed = titles_only(&f, "shop", RELATED_TASK);
    let mut out = ToolOutput::error(error);
    listed.offer_hint(&mut crate::testutil::ctx(config()), "edit_file", &mut out);
    assert!(out.agent_view.contains("read_note"), "{}", out.agent_view);
    assert!(
        !out.agent_view.contains("Parse prices"),
        "{}",
        out.agent_view
    );
}

#[tokio::test]
async fn notes_that_cannot_be_opened_disable_notes_without_failing() {
    let f = fixture();
    let file = f.dir.path().join("not-a-folder");
    std::fs::write(&file, "x").unwrap();
    let paths = NotesPaths {
        root: file.clone(),
        index_dir: f.dir.path().join("index2"),
    };
    let ext = session_with(paths, "shop", RELATED_TASK, 0.0, &f.dir);
    assert!(ext.tools().is_empty());
    let (added, _) = started(&ext).await;
    assert!(added.is_empty());
    let mut out =
        ToolOutput::error("TypeError: unsupported operand type(s) for +: 'Decimal' and 'float'");
    let before = out.agent_view.clone();
    ext.offer_hint(&mut crate::testutil::ctx(config()), "edit_file", &mut out);
    assert_eq!(out.agent_view, before);
}

#[tokio::test]
async fn a_resumed_session_gets_no_new_list_and_its_history_is_recognised() {
    let f = fixture();
    let ext = session(&f, "shop", RELATED_TASK);
    let mut resumed = crate::testutil::ctx(config());
    resumed.messages.push(Message::user("the task"));
    resumed.messages.push(Message::assistant("", vec![]));
    ext.on_start(&mut resumed).await.unwrap();
    assert_eq!(resumed.messages.len(), 2);
    assert!(!history_uses_notes(&resumed.config, &resumed.messages));

    // The start list, or a call to a notes tool, is recognised.
    let (added, ctx) = started(&ext).await;
    assert!(history_uses_notes(&ctx.config, &added));
    let call = quire_types::ToolCall::new("c1", READ_NOTE, "{}");
    let calls = vec![Message::assistant("", vec![call])];
    assert!(history_uses_notes(&ctx.config, &calls));
    let other = vec![Message::assistant(
        "",
        vec![quire_types::ToolCall::new("c2", "read_file", "{}")],
    )];
    assert!(!history_uses_notes(&ctx.config, &other));
}

#[tokio::test]
async fn the_code_a_map_points_to_follows_the_notes_and_counts_as_read() {
    let f = fixture();
    let ws = f.dir.path().join("ws");
    std::fs::write(
        ws.join("src/coupons.py"),
        "class CouponBook:\n    def get(self, code):\n        return self._coupons[code]\n",
    )
    .unwrap();
    NoteTree::open(&f.paths.root)
        .unwrap()
        .create(
            NewNote::project("shop", "map", Kind::Architecture, "Shop map")
                .provenance(Provenance {
                    files: vec!["src/coupons.py".into()],
                    ..Provenance::default()
                })
                .body("- Coupons: `CouponBook.get` in src/coupons.py looks a code up"),
        )
        .unwrap();
    let task = "Coupon codes typed in lower case are not found in the coupon book";
    let mut ext = session(&f, "shop", task);
    ext.settings.code_chars = 4_000;
    let sink = Arc::new(quire_core::MemorySink::default());
    let mut ctx = crate::testutil::ctx_with_sink(config(), sink.clone());
    ctx.messages.push(Message::user(task));
    ext.on_start(&mut ctx).await.unwrap();
    let list = ctx.messages[1].text().to_string();
    let code_at = list
        .find("`src/coupons.py` (whole file, 3 lines):\n1| class CouponBook:")
        .unwrap_or_else(|| panic!("{list}"));
    assert!(
        list.find("Shop map").unwrap() < code_at,
        "after the notes: {list}"
    );
    assert!(
        list.contains("3|         return self._coupons[code]"),
        "{list}"
    );
    let state = ctx.state.get_mut::<WorkspaceState>();
    assert!(state.was_read("src/coupons.py"));
    assert!(!state.was_read("src/cart.py"));
    let shown: Vec<CodeShown> = sink
        .events()
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::Extension(p) => p.decode::<CodeShown>().and_then(Result::ok),
            _ => None,
        })
        .collect();
    assert_eq!(shown.len(), 1);
    assert_eq!(shown[0].excerpts[0].path, "src/coupons.py");
    assert!(shown[0].chars > 40);
    assert_eq!(shown[0].chars, shown[0].excerpts[0].chars);

    // Resumed: the list is in the conversation, the file is seen again.
    let mut resumed = crate::testutil::ctx(config());
    resumed.messages = ctx.messages.clone();
    resumed.messages.push(Message::assistant("", vec![]));
    ext.on_start(&mut resumed).await.unwrap();
    assert_eq!(resumed.messages.len(), 3, "no second list");
    assert!(
        resumed
            .state
            .get_mut::<WorkspaceState>()
            .was_read("src/coupons.py")
    );

    // Off: the notes, no code.
    let mut ext_off = session(&f, "shop", task);
    ext_off.settings.code_chars = 0;
    let (added, mut ctx) = started(&ext_off).await;
    assert!(
        !added[0].text().contains("class CouponBook"),
        "{}",
        added[0].text()
    );
    assert!(
        !ctx.state
            .get_mut::<WorkspaceState>()
            .was_read("src/coupons.py")
    );
}

#[test]
fn excerpt_headers_give_back_their_path() {
    let config = config();
    let file = config.message("notes_code_file");
    let def = config.message("notes_code_definition");
    assert_eq!(
        path_in_header(file, "`src/a.py` (whole file, 3 lines):"),
        Some("src/a.py")
    );
    assert_eq!(
        path_in_header(def, "`pkg/more.py` sliced (lines 3-9 of 90):"),
        Some("pkg/more.py")
    );
    assert_eq!(path_in_header(file, "1| class A:"), None);
    assert_eq!(path_in_header(file, "`` (whole file)"), None);
}

#[test]
fn fixes_come_from_the_fix_section_else_the_body_without_the_error() {
    let body = "## Error\n\nKeyError\n\n## Cause\n\nold\n\n## fix\n\nUse the new key.\n";
    assert_eq!(section(body, "fix").unwrap().trim(), "Use the new key.");
    assert_eq!(section("## Cause\n\nx", "fix"), None);
    let rest = without_section(
        "## Error\n\nKeyError\n\n## Why abandoned\n\nToo big.",
        "error",
    );
    assert_eq!(rest.trim(), "## Why abandoned\n\nToo big.");
    assert_eq!(
        cut_at_line("one\ntwo\nthree", 8),
        Some(("one\ntwo".to_string(), true))
    );
    assert_eq!(cut_at_line("  \n", 8), None);
}
