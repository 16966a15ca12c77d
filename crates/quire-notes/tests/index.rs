mod common;

use std::fs;
use std::time::{Duration, Instant};

use quire_notes::{Error, Kind, NewNote, NoteIndex, NoteTree, Scope, SearchQuery};

use common::{hindsight_decimal, hindsight_src, tree};

fn index(dir: &tempfile::TempDir, tree: &NoteTree) -> NoteIndex {
    NoteIndex::open(dir.path().join("index"), tree).unwrap()
}

fn ids(hits: &[quire_notes::Hit]) -> Vec<&str> {
    hits.iter().map(|h| h.id.as_str()).collect()
}

#[test]
fn builds_from_files_and_title_beats_body() {
    let (dir, tree) = tree();
    let in_title = tree
        .create(
            NewNote::shared("db", Kind::Insight, "Postgres vacuum tuning")
                .body("Autovacuum thresholds matter for large tables."),
        )
        .unwrap();
    let in_body = tree
        .create(
            NewNote::shared("db", Kind::Insight, "Table bloat")
                .body("Bloat grows when dead rows pile up. Run vacuum or tune autovacuum. Nothing else here to see, just padding words."),
        )
        .unwrap();
    let idx = index(&dir, &tree);
    assert_eq!(idx.len(), 2);
    let hits = idx.search(&SearchQuery::new("vacuum")).unwrap();
    assert_eq!(ids(&hits), vec![in_title.id(), in_body.id()]);
    assert!(hits[0].score > hits[1].score);
    assert_eq!(hits[1].title, "Table bloat");
    assert_eq!(hits[1].path, "shared/db/table-bloat.md");
    assert!(
        hits[1].snippet.to_lowercase().contains("vacuum"),
        "{:?}",
        hits[1].snippet
    );
    assert_eq!(hits[1].kind, Kind::Insight);
    assert_eq!(hits[1].scope, Scope::Shared);
}

#[test]
fn filters_by_project_kind_scope_and_status() {
    let (dir, tree) = tree();
    let src = hindsight_src(&tree);
    let dec = hindsight_decimal(&tree);
    let howto = tree
        .create(NewNote::project(
            "shop",
            "testing",
            Kind::HowTo,
            "Run pytest quickly",
        ))
        .unwrap();
    let other = tree
        .create(NewNote::project(
            "blog",
            "testing",
            Kind::HowTo,
            "Run pytest in the blog",
        ))
        .unwrap();
    let idx = index(&dir, &tree);
    let search = |q: SearchQuery| {
        let mut v: Vec<String> = idx.search(&q).unwrap().into_iter().map(|h| h.id).collect();
        v.sort();
        v
    };
    let sorted = |mut v: Vec<&str>| {
        v.sort();
        v.into_iter().map(String::from).collect::<Vec<_>>()
    };
    let pytest = || SearchQuery::new("pytest");
    assert_eq!(
        search(pytest()),
        sorted(vec![src.id(), howto.id(), other.id()])
    );
    assert_eq!(
        search(SearchQuery {
            project: Some("Shop".into()),
            ..pytest()
        }),
        sorted(vec![src.id(), howto.id()])
    );
    assert_eq!(
        search(SearchQuery {
            kind: Some(Kind::HowTo),
            ..pytest()
        }),
        sorted(vec![howto.id(), other.id()])
    );
    assert_eq!(
        search(SearchQuery {
            scope: Some(Scope::Shared),
            ..SearchQuery::new("decimal")
        }),
        sorted(vec![dec.id()])
    );

    // Superseded notes leave active search but stay findable on request.
    let old = tree.supersede(src.id(), howto.id()).unwrap();
    idx.upsert(&old).unwrap();
    assert_eq!(search(pytest()), sorted(vec![howto.id(), other.id()]));
    assert_eq!(
        search(SearchQuery {
            status_active_only: false,
            ..pytest()
        }),
        sorted(vec![src.id(), howto.id(), other.id()])
    );
}

#[test]
fn upsert_and_remove_are_visible_at_once() {
    let (dir, tree) = tree();
    let idx = index(&dir, &tree);
    assert!(idx.is_empty());
    let note = hindsight_decimal(&tree);
    let start = Instant::now();
    idx.upsert(&note).unwrap();
    assert_eq!(
        ids(&idx.search(&SearchQuery::new("decimal")).unwrap()),
        vec![note.id()]
    );
    assert!(
        start.elapsed() < Duration::from_secs(1),
        "{:?}",
        start.elapsed()
    );

    let changed = tree
        .update(note.id(), |n| n.meta.title = "Quantize rounding".into())
        .unwrap();
    idx.upsert(&changed).unwrap();
    let hits = idx.search(&SearchQuery::new("quantize")).unwrap();
    assert_eq!(ids(&hits), vec![note.id()]);
    assert_eq!(idx.len(), 1);

    tree.delete(note.id()).unwrap();
    idx.remove(note.id()).unwrap();
    assert!(
        idx.search(&SearchQuery::new("quantize"))
            .unwrap()
            .is_empty()
    );
    assert!(idx.is_empty());
}

#[test]
fn sync_picks_up_hand_edits_creations_and_deletions() {
    let (dir, tree) = tree();
    let a = hindsight_src(&tree);
    let b = hindsight_decimal(&tree);
    let idx = index(&dir, &tree);
    let report = idx.sync().unwrap();
    assert_eq!((report.added, report.updated, report.removed), (0, 0, 0));

    // Edit a by hand.
    let path = tree.abs_path(&a);
    let text = fs::read_to_string(&path).unwrap();
    fs::write(
        &path,
        text.replace(
            "Ran pytest from the tests folder.",
            "Ran pytest from a zeppelin.",
        ),
    )
    .unwrap();
    // Create one by hand (copy of b with a new id and title).
    let text_b = fs::read_to_string(tree.abs_path(&b)).unwrap();
    let hand = text_b
        .replace(b.id(), "01HANDMADE00000000000000000")
        .replace("Decimal plus float TypeError", "Handmade walrus note");
    fs::write(tree.root().join("shared/python/handmade.md"), hand).unwrap();
    // Delete b by hand.
    fs::remove_file(tree.abs_path(&b)).unwrap();
    // And break nothing else.
    let report = idx.sync().unwrap();
    assert_eq!(
        (report.added, report.updated, report.removed),
        (1, 1, 1),
        "{report:?}"
    );
    assert_eq!(
        ids(&idx.search(&SearchQuery::new("zeppelin")).unwrap()),
        vec![a.id()]
    );
    assert_eq!(
        ids(&idx.search(&SearchQuery::new("walrus")).unwrap()),
        vec!["01HANDMADE00000000000000000"]
    );
    assert!(
        idx.search(&SearchQuery::new("decimal plus float"))
            .unwrap()
            .iter()
            .all(|h| h.id != b.id())
    );
    assert_eq!(idx.len(), 2);

    // A note broken by hand is reported and dropped from the index.
    let text = fs::read_to_string(&path).unwrap();
    fs::write(&path, text.replacen("title:", "title: [", 1)).unwrap();
    let report = idx.sync().unwrap();
    assert_eq!(report.removed, 1);
    assert_eq!(report.broken.len(), 1);
    assert!(
        idx.search(&SearchQuery::new("zeppelin"))
            .unwrap()
            .is_empty()
    );
    assert_eq!(idx.sync().unwrap().removed, 0);
}

#[test]
fn broken_notes_do_not_stop_the_index() {
    let (dir, tree) = tree();
    let a = hindsight_src(&tree);
    fs::write(tree.root().join("bad.md"), "---\ntitle: [\n---\nvacuum\n").unwrap();
    let idx = index(&dir, &tree);
    assert_eq!(idx.len(), 1);
    assert_eq!(
        ids(&idx.search(&SearchQuery::new("pytest")).unwrap()),
        vec![a.id()]
    );
    let report = idx.reindex().unwrap();
    assert_eq!(report.added, 1);
    assert_eq!(report.broken.len(), 1);
    assert_eq!(report.broken[0].line, 2);
}

#[test]
fn corrupt_index_is_rebuilt() {
    let (dir, tree) = tree();
    let a = hindsight_src(&tree);
    let index_dir = dir.path().join("index");
    let check = || {
        let idx = NoteIndex::open(&index_dir, &tree).unwrap();
        assert_eq!(
            ids(&idx.search(&SearchQuery::new("pytest")).unwrap()),
            vec![a.id()]
        );
    };
    check();

    // Garbage meta.json.
    fs::write(index_dir.join("meta.json"), "{ not json").unwrap();
    check();

    // Garbage files and no meta.json.
    fs::remove_dir_all(&index_dir).unwrap();
    fs::create_dir_all(&index_dir).unwrap();
    fs::write(index_dir.join("00000000.idx"), [0u8, 159, 146, 150]).unwrap();
    check();

    // Segment files truncated.
    for entry in fs::read_dir(&index_dir).unwrap() {
        let p = entry.unwrap().path();
        if p.extension()
            .is_some_and(|e| e == "store" || e == "idx" || e == "term")
        {
            fs::write(&p, b"x").unwrap();
        }
    }
    check();

    // An index of another schema.
    fs::remove_dir_all(&index_dir).unwrap();
    fs::create_dir_all(&index_dir).unwrap();
    let mut b = tantivy::schema::Schema::builder();
    b.add_text_field("title", tantivy::schema::TEXT);
    tantivy::Index::create_in_dir(&index_dir, b.build()).unwrap();
    check();
}

#[test]
fn refuses_index_dir_holding_notes() {
    let (_dir, tree) = tree();
    let err = NoteIndex::open(tree.root(), &tree).unwrap_err();
    assert!(matches!(err, Error::BadIndexDir { .. }), "{err}");
    let err = NoteIndex::open(tree.root().parent().unwrap(), &tree).unwrap_err();
    assert!(matches!(err, Error::BadIndexDir { .. }), "{err}");
    // A hidden folder inside the tree is fine: scans skip it.
    let idx = NoteIndex::open(tree.root().join(".index"), &tree).unwrap();
    assert!(idx.is_empty());
    assert!(tree.scan().unwrap().broken.is_empty());
}

#[test]
fn weird_queries_never_error() {
    let (dir, tree) = tree();
    hindsight_src(&tree);
    hindsight_decimal(&tree);
    let idx = index(&dir, &tree);
    for q in [
        "",
        " ",
        "\"",
        ":",
        "(",
        ")",
        "[",
        "]",
        "{",
        "AND",
        "OR NOT",
        "title:",
        "title:(x",
        "\"unterminated",
        "a AND (b OR",
        "*",
        "?",
        "~2",
        "^3",
        "\\",
        "+-!",
        "🚀",
        "\0",
        "ModuleNotFoundError: No module named 'src'",
        "id:01J*",
        &"x".repeat(10_000),
    ] {
        idx.search(&SearchQuery::new(q))
            .unwrap_or_else(|e| panic!("{q:?}: {e}"));
        idx.search_errors(q, 5)
            .unwrap_or_else(|e| panic!("{q:?}: {e}"));
        idx.search_for_session(q, Some("shop"), 5, 1000)
            .unwrap_or_else(|e| panic!("{q:?}: {e}"));
        idx.search(&SearchQuery {
            limit: 0,
            ..SearchQuery::new(q)
        })
        .unwrap();
    }
    let hits = idx
        .search(&SearchQuery::new(
            "ModuleNotFoundError: No module named 'src'",
        ))
        .unwrap();
    assert!(!hits.is_empty());
}

#[test]
fn errors_match_across_paths_and_line_numbers() {
    let (dir, tree) = tree();
    let src = hindsight_src(&tree);
    let dec = hindsight_decimal(&tree);
    // A non-hindsight note mentioning the same words is not an error match.
    tree.create(
        NewNote::shared("python", Kind::Insight, "Decimal and float")
            .body("TypeError: unsupported operand type(s) for +: 'Decimal' and 'float' is common."),
    )
    .unwrap();
    let idx = index(&dir, &tree);

    let pytest_output = r#"
============================= test session starts ==============================
platform linux -- Python 3.12.3, pytest-8.3.2, pluggy-1.5.0
rootdir: /srv/ci/build-4411/shop
collected 0 items / 1 error

==================================== ERRORS ====================================
_____________________ ERROR collecting tests/test_orders.py _____________________
ImportError while importing test module '/srv/ci/build-4411/shop/tests/test_orders.py'.
Traceback:
/usr/lib/python3.12/importlib/__init__.py:90: in import_module
    return _bootstrap._gcd_import(name[level:], package, level)
tests/test_orders.py:7: in <module>
    from src.orders import Order
E   ModuleNotFoundError: No module named 'src'
=========================== short test summary info ============================
ERROR tests/test_orders.py
!!!!!!!!!!!!!!!!!!!! Interrupted: 1 error during collection !!!!!!!!!!!!!!!!!!!!!
"#;
    let hits = idx.search_errors(pytest_output, 5).unwrap();
    assert_eq!(ids(&hits), vec![src.id()], "{hits:#?}");

    let decimal = "  File \"/home/bo/work/api/billing.py\", line 212, in invoice_total\n    return net + 0.19 * net\nTypeError: unsupported operand type(s) for +: 'Decimal' and 'float'";
    assert_eq!(ids(&idx.search_errors(decimal, 5).unwrap()), vec![dec.id()]);

    // Unrelated errors match nothing.
    assert!(
        idx.search_errors("KeyError: 'sku' at src/cart.py:10", 5)
            .unwrap()
            .is_empty()
    );
    assert!(
        idx.search_errors("TypeError: 'NoneType' object is not subscriptable", 5)
            .unwrap()
            .is_empty()
    );

    // Superseded hindsight is no longer offered.
    let newer = tree
        .create(NewNote::shared("python", Kind::Insight, "newer"))
        .unwrap();
    let old = tree.supersede(dec.id(), newer.id()).unwrap();
    idx.upsert(&old).unwrap();
    assert!(idx.search_errors(decimal, 5).unwrap().is_empty());
}

#[test]
fn session_search_puts_project_notes_first_within_budget() {
    let (dir, tree) = tree();
    let shared = tree
        .create(
            NewNote::shared(
                "python",
                Kind::Insight,
                "pytest fixtures and pytest markers for pytest",
            )
            .body("pytest pytest pytest"),
        )
        .unwrap();
    let project = tree
        .create(
            NewNote::project("shop", "testing", Kind::HowTo, "Shop pytest setup")
                .body("Run pytest from the root."),
        )
        .unwrap();
    tree.create(NewNote::project("blog", "testing", Kind::HowTo, "Blog pytest").body("pytest"))
        .unwrap();
    // A weak project match (one common word once in a long body) is
    // dropped rather than crowding out the strong shared note.
    let filler =
        "Releases need tags, changelog entries, a version bump and a smoke test. ".repeat(8);
    tree.create(
        NewNote::project("shop", "misc", Kind::Insight, "Release checklist")
            .body(format!("{filler} Then run pytest.")),
    )
    .unwrap();
    let idx = index(&dir, &tree);
    let hits = idx
        .search_for_session("make pytest pass", Some("shop"), 5, 10_000)
        .unwrap();
    assert_eq!(ids(&hits), vec![project.id(), shared.id()]);

    let no_project = idx
        .search_for_session("make pytest pass", None, 5, 10_000)
        .unwrap();
    assert_eq!(ids(&no_project), vec![shared.id()]);

    // Budget: snippets go first, then whole hits.
    let full: usize = hits.iter().map(|h| h.prompt_chars()).sum();
    let tight = idx
        .search_for_session("make pytest pass", Some("shop"), 5, full - 1)
        .unwrap();
    assert_eq!(tight.len(), 2);
    assert!(tight[1].snippet.is_empty());
    let tiny = idx
        .search_for_session("make pytest pass", Some("shop"), 5, hits[0].prompt_chars())
        .unwrap();
    assert_eq!(ids(&tiny), vec![project.id()]);
    assert!(
        idx.search_for_session("make pytest pass", Some("shop"), 5, 3)
            .unwrap()
            .is_empty()
    );
    assert_eq!(
        idx.search_for_session("make pytest pass", Some("shop"), 1, 10_000)
            .unwrap()
            .len(),
        1
    );
}

#[test]
fn busy_writer_lock_is_retried_then_reported() {
    let (dir, tree) = tree();
    let idx = index(&dir, &tree).with_lock_timeout(Duration::from_millis(300));
    let note = hindsight_src(&tree);

    // Another "process" holds the writer lock.
    let other = tantivy::Index::open_in_dir(idx.dir()).unwrap();
    let held: tantivy::IndexWriter = other.writer(15_000_000).unwrap();
    let start = Instant::now();
    let err = idx.upsert(&note).unwrap_err();
    assert!(matches!(err, Error::Locked { .. }), "{err}");
    assert!(start.elapsed() >= Duration::from_millis(300));
    assert!(
        err.to_string().contains("locked by another writer"),
        "{err}"
    );
    // Readers are not blocked.
    idx.search(&SearchQuery::new("pytest")).unwrap();

    // Released while we wait: the write goes through.
    let idx = idx.with_lock_timeout(Duration::from_secs(10));
    let releaser = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(200));
        drop(held);
    });
    idx.upsert(&note).unwrap();
    releaser.join().unwrap();
    assert_eq!(
        ids(&idx.search(&SearchQuery::new("pytest")).unwrap()),
        vec![note.id()]
    );
}

#[test]
fn other_processes_commits_are_seen_after_reload_interval() {
    let (dir, tree) = tree();
    let idx = index(&dir, &tree);
    let second = NoteIndex::open(idx.dir(), &tree).unwrap();
    let note = hindsight_decimal(&tree);
    second.upsert(&note).unwrap();
    std::thread::sleep(Duration::from_millis(1100));
    assert_eq!(
        ids(&idx.search(&SearchQuery::new("decimal")).unwrap()),
        vec![note.id()]
    );
}

#[test]
fn secrets_never_reach_the_index() {
    let (dir, tree) = tree();
    let key = "sk-proj-Zyxw9876543210AbCdEfGh";
    tree.create(NewNote::shared("ops", Kind::HowTo, "Deploy").body(format!("token {key}")))
        .unwrap();
    let idx = index(&dir, &tree);
    assert!(idx.search(&SearchQuery::new(key)).unwrap().is_empty());
    assert!(
        idx.search(&SearchQuery::new("Zyxw9876543210AbCdEfGh"))
            .unwrap()
            .is_empty()
    );
    assert_eq!(idx.search(&SearchQuery::new("redacted")).unwrap().len(), 1);
}

#[test]
fn handles_can_be_shared_across_threads() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<NoteIndex>();
    assert_send_sync::<NoteTree>();
}

/// A writer killed after writing a segment's delete file but before its
/// commit leaves `<segment>.<opstamp>.del` behind, listed as managed; the
/// next writer starts from the same opstamp and must not trip over it.
/// Replayed here without a kill: the same update is made on a copy of the
/// index, whose leftover file is then copied into the original.
#[test]
fn a_killed_writers_uncommitted_delete_file_does_not_block_the_next() {
    fn copy_dir(from: &std::path::Path, to: &std::path::Path) {
        fs::create_dir_all(to).unwrap();
        for entry in fs::read_dir(from).unwrap().flatten() {
            if entry.path().is_file() {
                fs::copy(entry.path(), to.join(entry.file_name())).unwrap();
            }
        }
    }
    let (dir, tree) = tree();
    let note = hindsight_decimal(&tree);
    hindsight_src(&tree);
    // Segments of several notes each, so an update deletes from one that
    // lives on (and writes its delete file).
    for i in 0..12 {
        tree.create(NewNote::shared(
            "misc",
            Kind::Insight,
            format!("Filler note {i}"),
        ))
        .unwrap();
    }
    let main = dir.path().join("index");
    NoteIndex::open(&main, &tree).unwrap();
    let before: Vec<String> = fs::read_dir(&main)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();

    // The "killed" writer's work: the update, done on a copy.
    let copy = dir.path().join("copy");
    copy_dir(&main, &copy);
    let changed = tree
        .update(note.id(), |n| n.meta.title = "Quantize rounding".into())
        .unwrap();
    NoteIndex::open(&copy, &tree)
        .unwrap()
        .upsert(&changed)
        .unwrap();
    let mut left = 0;
    for entry in fs::read_dir(&copy).unwrap().flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.ends_with(".del") && !before.contains(&name) {
            fs::copy(entry.path(), main.join(&name)).unwrap();
            left += 1;
        }
    }
    let listing: Vec<String> = fs::read_dir(&copy)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert!(
        left > 0,
        "the update wrote a delete file: {listing:?} before {before:?}"
    );
    fs::copy(copy.join(".managed.json"), main.join(".managed.json")).unwrap();

    // The next writer makes the same update: no FileAlreadyExists.
    let idx = NoteIndex::open(&main, &tree).unwrap();
    idx.upsert(&changed).unwrap();
    assert_eq!(
        ids(&idx.search(&SearchQuery::new("quantize")).unwrap()),
        vec![note.id()]
    );
    assert_eq!(idx.len(), 14);
}
