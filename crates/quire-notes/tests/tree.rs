mod common;

use std::fs;
use std::path::Path;

use gray_matter::engine::YAML;
use gray_matter::{Matter, ParsedEntity};
use quire_notes::{
    Error, Frontmatter, Kind, NewNote, NoteFilter, NoteTree, Provenance, Scope, Status,
};
use quire_types::Redactor;

use common::{files, hindsight_decimal, hindsight_src, tree};

fn gray(text: &str) -> ParsedEntity<Frontmatter> {
    Matter::<YAML>::new().parse(text).unwrap()
}

#[test]
fn create_update_supersede_delete_round_trip() {
    let (_dir, tree) = tree();
    let a = hindsight_src(&tree);
    assert_eq!(
        a.path,
        Path::new("projects/shop/testing/tests-fail-with-modulenotfounderror.md")
    );
    let text = fs::read_to_string(tree.abs_path(&a)).unwrap();
    let parsed = gray(&text);
    assert_eq!(parsed.data.as_ref().unwrap(), &a.meta);
    assert_eq!(parsed.content.trim_end(), a.body);
    assert_eq!(tree.get(a.id()).unwrap().unwrap(), a);

    // Update in place: same path, new title, bumped `updated`.
    let aged = text.replace(
        &format!(
            "updated: \"{}\"",
            a.meta.updated.format("%Y-%m-%dT%H:%M:%SZ")
        ),
        "updated: \"2020-01-01T00:00:00Z\"",
    );
    fs::write(tree.abs_path(&a), aged).unwrap();
    let b = tree
        .update(a.id(), |n| {
            n.meta.title = "Tests fail: no module named src".into();
            n.meta.id = "hijack".into();
            n.body.push_str("\n\nAlso check `rootdir`.");
        })
        .unwrap();
    assert_eq!(b.id(), a.id());
    assert_eq!(b.path, a.path);
    assert!(b.meta.updated.timestamp() > 1_577_836_800);
    assert_eq!(tree.get(a.id()).unwrap().unwrap(), b);

    // Supersede.
    let c = tree
        .create(NewNote::project(
            "shop",
            "testing",
            Kind::Hindsight,
            "Better note on imports",
        ))
        .unwrap();
    let old = tree.supersede(a.id(), c.id()).unwrap();
    assert_eq!(old.meta.status, Status::Superseded);
    assert_eq!(old.meta.superseded_by.as_deref(), Some(c.id()));
    let active = tree
        .list(&NoteFilter {
            status: Some(Status::Active),
            ..NoteFilter::default()
        })
        .unwrap();
    assert_eq!(
        active.iter().map(|n| n.id()).collect::<Vec<_>>(),
        vec![c.id()]
    );
    assert!(matches!(
        tree.supersede(a.id(), "nope"),
        Err(Error::NotFound(_))
    ));

    // Delete.
    tree.delete(a.id()).unwrap();
    assert!(tree.get(a.id()).unwrap().is_none());
    assert!(!tree.abs_path(&a).exists());
    assert!(matches!(tree.delete(a.id()), Err(Error::NotFound(_))));
    tree.delete(c.id()).unwrap();
    // Emptied folders are pruned, the root README stays.
    assert!(!tree.root().join("projects").exists());
    assert_eq!(files(tree.root()), vec![Path::new("README.md")]);
}

#[test]
fn slugs_are_unique_within_a_folder() {
    let (_dir, tree) = tree();
    let mk = |t: &str| tree.create(NewNote::shared("git", Kind::HowTo, t)).unwrap();
    let a = mk("Rebase onto main");
    let b = mk("Rebase onto main!");
    let c = mk("☃");
    let d = mk("README");
    assert_eq!(a.path, Path::new("shared/git/rebase-onto-main.md"));
    assert_eq!(b.path, Path::new("shared/git/rebase-onto-main-2.md"));
    assert_eq!(c.path, Path::new("shared/git/note.md"));
    assert_eq!(d.path, Path::new("shared/git/readme-2.md"));
    assert_eq!(tree.scan().unwrap().notes.len(), 4);
}

#[test]
fn yaml_special_characters_survive() {
    let (_dir, tree) = tree();
    let titles = [
        "key: value # not a comment",
        "\"Quoted\" and 'single' quotes",
        "- leading dash",
        "# starts with a hash",
        "ünïcödé → 日本語 🚀",
        "null",
        "[brackets] {braces} & *star* !bang %pct @at `tick`",
        "back\\slash",
    ];
    for title in titles {
        let note = tree
            .create(
                NewNote::shared("yaml", Kind::Insight, title)
                    .description(format!("line one: {title}\nline two\r\n  indented"))
                    .keywords([title, "  ", title]),
            )
            .unwrap();
        assert_eq!(note.meta.title, title);
        assert_eq!(
            note.meta.description,
            format!("line one: {title} line two indented")
        );
        assert_eq!(note.meta.keywords, vec![title.to_string()]);
        let text = fs::read_to_string(tree.abs_path(&note)).unwrap();
        let parsed = gray(&text);
        assert_eq!(parsed.data.unwrap(), note.meta, "{title}\n{text}");
        assert_eq!(tree.find_by_path(&note.path).unwrap().unwrap(), note);
    }
    assert!(tree.scan().unwrap().broken.is_empty());
}

#[test]
fn invalid_notes_are_rejected() {
    let (_dir, tree) = tree();
    let empty_title = tree.create(NewNote::shared("x", Kind::Insight, " \n "));
    assert!(matches!(empty_title, Err(Error::Invalid(_))));
    let no_project = tree.create(NewNote::project("☃", "x", Kind::Insight, "t"));
    assert!(matches!(no_project, Err(Error::Invalid(_))));
    let no_topic = tree.create(NewNote::shared("", Kind::Insight, "t"));
    assert!(matches!(no_topic, Err(Error::Invalid(_))));
}

#[test]
fn atomic_writes_leave_no_temp_files() {
    let (_dir, tree) = tree();
    let a = hindsight_src(&tree);
    let b = hindsight_decimal(&tree);
    for _ in 0..5 {
        tree.credit(a.id(), true).unwrap();
        tree.update(b.id(), |n| n.body.push_str("\nmore")).unwrap();
    }
    tree.update(b.id(), |n| n.meta.topic = "money".into())
        .unwrap();
    let leftovers: Vec<_> = files(tree.root())
        .into_iter()
        .filter(|p| {
            p.components()
                .any(|c| c.as_os_str().to_string_lossy().starts_with('.'))
        })
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
    assert_eq!(tree.get(a.id()).unwrap().unwrap().meta.helpful, 5);
}

#[test]
fn changing_topic_moves_the_file() {
    let (_dir, tree) = tree();
    let b = hindsight_decimal(&tree);
    let moved = tree
        .update(b.id(), |n| {
            n.meta.scope = Scope::Project;
            n.meta.project = Some("Shop".into());
            n.meta.topic = "Money Handling".into();
        })
        .unwrap();
    assert_eq!(
        moved.path,
        Path::new("projects/shop/money-handling/decimal-plus-float-typeerror.md")
    );
    assert!(!tree.abs_path(&b).exists());
    assert!(!tree.root().join("shared").exists());
    assert_eq!(tree.get(b.id()).unwrap().unwrap(), moved);
}

#[test]
fn credit_counts_without_bumping_updated() {
    let (_dir, tree) = tree();
    let a = hindsight_src(&tree);
    tree.credit(a.id(), true).unwrap();
    let n = tree.credit(a.id(), false).unwrap();
    assert_eq!((n.meta.helpful, n.meta.harmful), (1, 1));
    assert_eq!(n.meta.updated, a.meta.updated);
    assert_eq!(tree.get(a.id()).unwrap().unwrap(), n);
}

#[test]
fn broken_frontmatter_is_reported_with_line_and_skipped() {
    let (_dir, tree) = tree();
    let good = hindsight_src(&tree);
    let bad = hindsight_decimal(&tree);
    let path = tree.abs_path(&bad);
    let text = fs::read_to_string(&path).unwrap();
    let broken = text.replace("kind: hindsight", "kind: [oops");
    fs::write(&path, &broken).unwrap();
    let no_front = tree.root().join("shared/python/plain.md");
    fs::write(&no_front, "# Just markdown\n").unwrap();

    let report = tree.scan().unwrap();
    assert_eq!(
        report.notes.iter().map(|n| n.id()).collect::<Vec<_>>(),
        vec![good.id()]
    );
    assert_eq!(report.broken.len(), 2, "{:?}", report.broken);
    let b = report.broken.iter().find(|b| b.path == bad.path).unwrap();
    let kind_line = broken.lines().position(|l| l.starts_with("kind:")).unwrap() + 1;
    assert!(
        b.line == kind_line || b.line == kind_line + 1,
        "line {} vs kind at {kind_line}: {}",
        b.line,
        b.message
    );
    let p = report
        .broken
        .iter()
        .find(|b| b.path.ends_with("plain.md"))
        .unwrap();
    assert_eq!(p.line, 1);

    match tree.find_by_path(&path) {
        Err(Error::Parse { path: p, line, .. }) => {
            assert_eq!(p, path);
            assert!(line > 1);
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(tree.list(&NoteFilter::default()).unwrap().len(), 1);
    // A README refresh around a broken note still works.
    tree.regenerate_readmes().unwrap();
}

#[test]
fn duplicate_ids_are_reported() {
    let (_dir, tree) = tree();
    let a = hindsight_src(&tree);
    let copy = tree.root().join("projects/shop/testing/copy.md");
    fs::copy(tree.abs_path(&a), &copy).unwrap();
    let report = tree.scan().unwrap();
    assert_eq!(report.notes.len(), 1);
    assert_eq!(report.broken.len(), 1);
    assert!(
        report.broken[0].message.contains("duplicate id"),
        "{:?}",
        report.broken
    );
}

#[test]
fn secrets_are_redacted_everywhere() {
    let dir = tempfile::tempdir().unwrap();
    let mut redactor = Redactor::new();
    redactor.add_secret("hunter2-very-secret");
    let tree = NoteTree::open(dir.path()).unwrap().with_redactor(redactor);
    let key = "sk-proj-AbCdEf0123456789xyzwQRST";
    let note = tree
        .create(
            NewNote::shared("ops", Kind::HowTo, format!("Use key {key}"))
                .description("password hunter2-very-secret")
                .keywords([key])
                .provenance(Provenance {
                    files: vec![format!("{key}.env")],
                    ..Provenance::default()
                })
                .body(format!(
                    "Export OPENAI_API_KEY={key} then run.\nPassword: hunter2-very-secret"
                )),
        )
        .unwrap();
    let updated = tree
        .update(note.id(), |n| n.body.push_str(&format!("\nagain {key}")))
        .unwrap();
    for f in files(tree.root()) {
        let text = fs::read_to_string(tree.root().join(&f)).unwrap();
        assert!(!text.contains("AbCdEf0123456789"), "{f:?}: {text}");
        assert!(!text.contains("hunter2"), "{f:?}: {text}");
    }
    assert!(updated.body.contains("[REDACTED]"));
    assert!(updated.meta.title.contains("[REDACTED]"));
}

#[test]
fn readmes_list_notes_and_folders() {
    let (_dir, tree) = tree();
    let a = hindsight_src(&tree);
    hindsight_decimal(&tree);
    let root = fs::read_to_string(tree.root().join("README.md")).unwrap();
    assert!(root.contains("[projects/](projects/README.md)"), "{root}");
    assert!(root.contains("[shared/](shared/README.md)"), "{root}");
    let folder = fs::read_to_string(tree.root().join("projects/shop/testing/README.md")).unwrap();
    assert!(
        folder.contains(
            "- [Tests fail with ModuleNotFoundError](tests-fail-with-modulenotfounderror.md) (hindsight): pytest run from tests/ cannot import src"
        ),
        "{folder}"
    );
    tree.update(a.id(), |n| n.meta.description = "new words".into())
        .unwrap();
    let folder = fs::read_to_string(tree.root().join("projects/shop/testing/README.md")).unwrap();
    assert!(folder.contains("(hindsight): new words"), "{folder}");
    // READMEs are never notes.
    assert_eq!(tree.scan().unwrap().broken, vec![]);
}

#[test]
fn find_by_path_accepts_relative_and_absolute_and_rejects_outside() {
    let (dir, tree) = tree();
    let a = hindsight_src(&tree);
    assert_eq!(tree.find_by_path(&a.path).unwrap().unwrap(), a);
    assert_eq!(tree.find_by_path(tree.abs_path(&a)).unwrap().unwrap(), a);
    assert!(tree.find_by_path("shared/none.md").unwrap().is_none());
    assert!(matches!(
        tree.find_by_path("../x.md"),
        Err(Error::OutsideTree { .. })
    ));
    assert!(matches!(
        tree.find_by_path(dir.path().join("elsewhere.md")),
        Err(Error::OutsideTree { .. })
    ));
}

#[test]
fn list_filters() {
    let (_dir, tree) = tree();
    hindsight_src(&tree);
    hindsight_decimal(&tree);
    tree.create(NewNote::project("other", "x", Kind::HowTo, "Other how-to"))
        .unwrap();
    let count = |f: NoteFilter| tree.list(&f).unwrap().len();
    assert_eq!(count(NoteFilter::default()), 3);
    assert_eq!(
        count(NoteFilter {
            project: Some("shop".into()),
            ..Default::default()
        }),
        1
    );
    assert_eq!(
        count(NoteFilter {
            kind: Some(Kind::Hindsight),
            ..Default::default()
        }),
        2
    );
    assert_eq!(
        count(NoteFilter {
            scope: Some(Scope::Shared),
            ..Default::default()
        }),
        1
    );
    assert_eq!(
        count(NoteFilter {
            status: Some(Status::Superseded),
            ..Default::default()
        }),
        0
    );
}

#[test]
fn hand_edits_are_seen_by_get() {
    let (_dir, tree) = tree();
    let a = hindsight_src(&tree);
    // Move the file by hand: the id cache goes stale, get() rescans.
    let new_path = tree.root().join("shared/moved.md");
    fs::create_dir_all(new_path.parent().unwrap()).unwrap();
    fs::rename(tree.abs_path(&a), &new_path).unwrap();
    let found = tree.get(a.id()).unwrap().unwrap();
    assert_eq!(found.path, Path::new("shared/moved.md"));
}

#[test]
fn a_hand_written_note_is_filled_from_its_place_and_a_skeleton_is_complete() {
    let (_dir, tree) = tree();
    let by_hand = tree.root().join("projects/shop/money/decimal.md");
    fs::create_dir_all(by_hand.parent().unwrap()).unwrap();
    fs::write(
        &by_hand,
        "---\ntitle: Money is Decimal\n---\nNever float.\n",
    )
    .unwrap();
    let report = tree.scan().unwrap();
    assert!(report.broken.is_empty(), "{:?}", report.broken);
    let note = &report.notes[0];
    assert_eq!(note.meta.id, "projects/shop/money/decimal");
    assert_eq!(
        (note.meta.scope, note.meta.project.as_deref()),
        (Scope::Project, Some("shop"))
    );
    assert_eq!(
        (note.meta.kind, note.meta.topic.as_str()),
        (Kind::Insight, "money")
    );
    assert_eq!(report.filled.len(), 1);
    assert_eq!(
        report.filled[0].path,
        Path::new("projects/shop/money/decimal.md")
    );
    // Found by id and path; a credit writes the filled fields into the file.
    assert!(tree.get("projects/shop/money/decimal").unwrap().is_some());
    tree.credit("projects/shop/money/decimal", true).unwrap();
    let text = fs::read_to_string(&by_hand).unwrap();
    assert!(
        text.contains("kind: insight") && text.contains("helpful: 1"),
        "{text}"
    );
    assert!(tree.scan().unwrap().filled.is_empty());

    let skeleton = tree
        .write_skeleton(Path::new("shared/python/rounding"), "Rounding", Kind::HowTo)
        .unwrap();
    assert_eq!(skeleton.path, Path::new("shared/python/rounding.md"));
    let text = fs::read_to_string(tree.abs_path(&skeleton)).unwrap();
    let (strict, _) = quire_notes::parse_note_text(&text).expect("complete without filling");
    assert_eq!(
        (strict.scope, strict.topic.as_str()),
        (Scope::Shared, "python")
    );
    assert!(text.contains("## Steps"), "{text}");
    for bad in [
        "shared/python/rounding.md",
        "../out",
        ".hidden/x",
        "shared/README.md",
    ] {
        assert!(
            tree.write_skeleton(Path::new(bad), "T", Kind::Insight)
                .is_err(),
            "{bad}"
        );
    }
    assert_eq!(tree.scan().unwrap().notes.len(), 2);
}
