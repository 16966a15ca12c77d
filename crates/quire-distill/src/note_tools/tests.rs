use super::*;
use crate::testutil::{action, config, ctx};
use quire_notes::{NoteFilter, Status};

struct Fixture {
    _dir: tempfile::TempDir,
    tree: NoteTree,
    tools: NoteTools,
}

fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let mut redactor = quire_types::Redactor::new();
    redactor.add_secret("s3cr3t-value-from-env");
    let tree = NoteTree::open(dir.path().join("notes"))
        .unwrap()
        .with_redactor(redactor);
    let index = Arc::new(NoteIndex::open(dir.path().join("index"), &tree).unwrap());
    let tools = NoteTools::new(tree.clone(), index, "Shop", "01SESSION");
    Fixture {
        _dir: dir,
        tree,
        tools,
    }
}

async fn run(f: &Fixture, ctx: &mut Ctx, name: &str, args: serde_json::Value) -> ToolOutput {
    f.tools.execute(ctx, &action(name, args)).await
}

fn hindsight_args() -> serde_json::Value {
    serde_json::json!({
        "title": "Tests fail with ModuleNotFoundError: No module named 'src'",
        "kind": "hindsight",
        "scope": "project",
        "topic": "testing",
        "description": "pytest cannot import src when run from tests/",
        "body": "## Error\n\n```\nModuleNotFoundError: No module named 'src'\n```\n\n## Cause\n\nNo pythonpath.\n\n## Fix\n\nSet pythonpath = . in pytest.ini (token s3cr3t-value-from-env).",
        "error_signatures": ["ModuleNotFoundError: No module named 'src'"],
        "keywords": ["pytest", "imports"],
        "files": ["pytest.ini"],
    })
}

#[tokio::test]
async fn create_search_read_update_supersede_done() {
    let f = fixture();
    let mut ctx = ctx(config());
    let out = run(&f, &mut ctx, CREATE, hindsight_args()).await;
    assert!(!out.is_error, "{}", out.agent_view);
    let notes = f.tree.list(&NoteFilter::default()).unwrap();
    assert_eq!(notes.len(), 1);
    let note = &notes[0];
    assert_eq!(note.meta.project.as_deref(), Some("shop"));
    assert_eq!(note.meta.provenance.sessions, vec!["01SESSION"]);
    assert_eq!(note.meta.provenance.files, vec!["pytest.ini"]);
    assert!(
        !note.body.contains("s3cr3t"),
        "secrets redacted: {}",
        note.body
    );
    assert!(out.agent_view.contains(note.id()));

    // A duplicate title is refused.
    let dup = run(&f, &mut ctx, CREATE, hindsight_args()).await;
    assert!(
        dup.is_error && dup.agent_view.contains(note.id()),
        "{}",
        dup.agent_view
    );

    let found = run(
        &f,
        &mut ctx,
        SEARCH,
        serde_json::json!({"query": "No module named src"}),
    )
    .await;
    assert!(found.agent_view.contains(note.id()), "{}", found.agent_view);
    let read = run(&f, &mut ctx, READ, serde_json::json!({"id": note.id()})).await;
    assert!(
        read.agent_view.contains("error_signatures:"),
        "{}",
        read.agent_view
    );

    let upd = run(
            &f,
            &mut ctx,
            UPDATE,
            serde_json::json!({"id": note.id(), "old": "No pythonpath.", "new": "pytest.ini sets no pythonpath."}),
        )
        .await;
    assert!(!upd.is_error, "{}", upd.agent_view);
    let sig = run(
            &f,
            &mut ctx,
            UPDATE,
            serde_json::json!({"id": note.id(), "field": "error_signatures", "old": "", "new": "ImportError: cannot import name 'Cart'"}),
        )
        .await;
    assert!(!sig.is_error, "{}", sig.agent_view);
    // Files and symbols can be corrected when the code moves.
    let files_before = f
        .tree
        .get(note.id())
        .unwrap()
        .unwrap()
        .meta
        .provenance
        .files;
    let moved = run(
            &f,
            &mut ctx,
            UPDATE,
            serde_json::json!({"id": note.id(), "field": "files", "old": files_before[0], "new": "src/moved.py"}),
        )
        .await;
    assert!(!moved.is_error, "{}", moved.agent_view);
    let symbol = run(
        &f,
        &mut ctx,
        UPDATE,
        serde_json::json!({"id": note.id(), "field": "symbols", "old": "", "new": "Cart.total"}),
    )
    .await;
    assert!(!symbol.is_error, "{}", symbol.agent_view);
    let after = f.tree.get(note.id()).unwrap().unwrap();
    // Every update says how long the body now is.
    let chars = after.body.trim().chars().count();
    assert!(
        symbol.agent_view.contains(&format!("{chars} characters")),
        "{}",
        symbol.agent_view
    );
    assert!(after.body.contains("pytest.ini sets no pythonpath."));
    assert_eq!(after.meta.error_signatures.len(), 2);
    assert!(
        after
            .meta
            .provenance
            .files
            .contains(&"src/moved.py".to_string())
    );
    assert!(!after.meta.provenance.files.contains(&files_before[0]));
    assert!(
        after
            .meta
            .provenance
            .symbols
            .contains(&"Cart.total".to_string())
    );
    assert_eq!(
        f.tree.list(&NoteFilter::default()).unwrap().len(),
        1,
        "in place"
    );

    let mut other = hindsight_args();
    other["title"] = "Use python -m pytest from the root".into();
    other["kind"] = "how-to".into();
    let second = run(&f, &mut ctx, CREATE, other).await;
    assert!(!second.is_error, "{}", second.agent_view);
    let new_id = f
        .tree
        .list(&NoteFilter::default())
        .unwrap()
        .into_iter()
        .find(|n| n.id() != note.id())
        .unwrap()
        .meta
        .id;
    let sup = run(
        &f,
        &mut ctx,
        SUPERSEDE,
        serde_json::json!({"old_id": note.id(), "new_id": new_id}),
    )
    .await;
    assert!(!sup.is_error, "{}", sup.agent_view);
    assert_eq!(
        f.tree.get(note.id()).unwrap().unwrap().meta.status,
        Status::Superseded
    );

    let done = run(
        &f,
        &mut ctx,
        DONE,
        serde_json::json!({"summary": "two notes"}),
    )
    .await;
    assert!(matches!(done.control, Control::Finish { .. }));
    let state = ctx.state.get_mut::<NoteTakerState>();
    let actions: Vec<NoteAction> = state.written.iter().map(|w| w.action).collect();
    assert_eq!(
        actions,
        vec![
            NoteAction::Created,
            NoteAction::Updated,
            NoteAction::Updated,
            NoteAction::Updated,
            NoteAction::Updated,
            NoteAction::Created,
            NoteAction::Superseded
        ]
    );
    assert_eq!(state.summary.as_deref(), Some("two notes"));
}

#[tokio::test]
async fn bad_inputs_get_precise_errors() {
    let f = fixture();
    let mut ctx = ctx(config());
    let mut no_sig = hindsight_args();
    no_sig["error_signatures"] = serde_json::json!([]);
    let out = run(&f, &mut ctx, CREATE, no_sig).await;
    assert!(
        out.is_error && out.agent_view.contains("error_signatures"),
        "{}",
        out.agent_view
    );
    let mut bad_kind = hindsight_args();
    bad_kind["kind"] = "rumour".into();
    let out = run(&f, &mut ctx, CREATE, bad_kind).await;
    assert!(
        out.is_error && out.agent_view.contains("rumour"),
        "{}",
        out.agent_view
    );

    run(&f, &mut ctx, CREATE, hindsight_args()).await;
    let id = f.tree.list(&NoteFilter::default()).unwrap()[0]
        .meta
        .id
        .clone();
    let missing = run(
        &f,
        &mut ctx,
        UPDATE,
        serde_json::json!({"id": id, "old": "nowhere", "new": "x"}),
    )
    .await;
    assert!(
        missing.is_error && missing.agent_view.contains("does not occur"),
        "{}",
        missing.agent_view
    );
    let twice = run(
        &f,
        &mut ctx,
        UPDATE,
        serde_json::json!({"id": id, "old": "##", "new": "#"}),
    )
    .await;
    assert!(
        twice.is_error && twice.agent_view.contains("3 times"),
        "{}",
        twice.agent_view
    );
    let big = run(
        &f,
        &mut ctx,
        UPDATE,
        serde_json::json!({"id": id, "old": "", "new": "x".repeat(MAX_EDIT_CHARS + 1)}),
    )
    .await;
    assert!(
        big.is_error && big.agent_view.contains("too large"),
        "{}",
        big.agent_view
    );
    let nobody = run(
        &f,
        &mut ctx,
        UPDATE,
        serde_json::json!({"id": "NOPE", "old": "a", "new": "b"}),
    )
    .await;
    assert!(
        nobody.is_error && nobody.agent_view.contains("NOPE"),
        "{}",
        nobody.agent_view
    );
    let sup = run(
        &f,
        &mut ctx,
        SUPERSEDE,
        serde_json::json!({"old_id": id, "new_id": "NOPE"}),
    )
    .await;
    assert!(
        sup.is_error && sup.agent_view.contains("NOPE"),
        "{}",
        sup.agent_view
    );
    assert!(ctx.state.get_mut::<NoteTakerState>().written.len() == 1);
}

#[test]
fn entry_edits() {
    let mut v = vec!["a".to_string()];
    assert!(edit_entries(&mut v, "", "b").is_ok());
    assert!(edit_entries(&mut v, "a", "").is_ok());
    assert!(edit_entries(&mut v, "b", "c").is_ok());
    assert_eq!(v, vec!["c"]);
    assert!(edit_entries(&mut v, "zz", "y").is_err());
}

#[test]
fn an_old_with_a_line_break_the_body_does_not_end_with_still_replaces_once() {
    let body = "- map line one\n- Run: pytest tests";
    assert_eq!(
        replace_once(
            body,
            "- Run: pytest tests\n",
            "- Run: pytest -q tests\n",
            true
        )
        .ok(),
        Some("- map line one\n- Run: pytest -q tests".to_string())
    );
    // Still exact where it matters: text that is not there is refused.
    assert!(matches!(
        replace_once(body, "- Run: cargo test\n", "x\n", true),
        Err(Edit::Missing)
    ));
}
