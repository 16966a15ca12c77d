//! The curated example tree at the repository's `notes/` folder.
//!
//! Set `QUIRE_BLESS_NOTES=1` to rewrite its READMEs after editing notes.

mod common;

use std::fs;
use std::path::{Path, PathBuf};

use quire_notes::{Kind, NoteIndex, NoteTree, Scope, parse_note_text};

fn curated_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../notes")
}

/// A copy in a temp dir, so tests never write into the repository.
fn copy_tree() -> (tempfile::TempDir, NoteTree) {
    let dir = tempfile::tempdir().unwrap();
    let dest = dir.path().join("notes");
    for rel in common::files(&curated_root()) {
        let to = dest.join(&rel);
        fs::create_dir_all(to.parent().unwrap()).unwrap();
        fs::copy(curated_root().join(&rel), to).unwrap();
    }
    let tree = NoteTree::open(&dest).unwrap();
    (dir, tree)
}

#[test]
fn curated_tree_loads_without_broken_notes() {
    let tree = NoteTree::open(curated_root()).unwrap();
    let report = tree.scan().unwrap();
    assert!(report.broken.is_empty(), "{:#?}", report.broken);
    assert_eq!(report.notes.len(), 6);
    let hindsight = report
        .notes
        .iter()
        .filter(|n| n.meta.kind == Kind::Hindsight)
        .count();
    assert_eq!(hindsight, 2);
    for note in &report.notes {
        // Files are in the canonical form the tree writes.
        let text = fs::read_to_string(tree.abs_path(note)).unwrap();
        assert_eq!(note.render(), text, "{}", note.path.display());
        let (meta, _) = parse_note_text(&text).unwrap();
        let expected_folder = match meta.scope {
            Scope::Project => format!(
                "projects/{}/{}",
                meta.project.as_deref().unwrap(),
                meta.topic
            ),
            Scope::Shared => format!("shared/{}", meta.topic),
        };
        assert!(
            note.path.starts_with(&expected_folder),
            "{}",
            note.path.display()
        );
    }
}

#[test]
fn curated_readmes_are_current() {
    let (_dir, copy) = copy_tree();
    copy.regenerate_readmes().unwrap();
    let bless = std::env::var_os("QUIRE_BLESS_NOTES").is_some();
    let generated = common::files(copy.root());
    for rel in generated.iter().filter(|p| p.ends_with("README.md")) {
        let fresh = fs::read_to_string(copy.root().join(rel)).unwrap();
        let target = curated_root().join(rel);
        if bless {
            fs::write(&target, &fresh).unwrap();
        } else {
            let current = fs::read_to_string(&target).unwrap_or_default();
            assert_eq!(
                current,
                fresh,
                "{} is stale; rerun with QUIRE_BLESS_NOTES=1",
                rel.display()
            );
        }
    }
    assert!(generated.contains(&PathBuf::from("README.md")));
    assert!(generated.contains(&PathBuf::from("projects/shop/testing/README.md")));
}

#[test]
fn curated_tree_answers_real_errors_and_tasks() {
    let (dir, tree) = copy_tree();
    let idx = NoteIndex::open(dir.path().join("index"), &tree).unwrap();
    assert_eq!(idx.len(), 6);

    let output = "tests/unit/test_checkout.py:3: in <module>\n    from src.checkout import checkout\nE   ModuleNotFoundError: No module named 'src'";
    let hits = idx.search_errors(output, 3).unwrap();
    assert_eq!(hits.len(), 1, "{hits:#?}");
    assert!(hits[0].title.contains("ModuleNotFoundError"));

    let output = ">       return self.subtotal() + fee\nE       TypeError: unsupported operand type(s) for +: 'Decimal' and 'float'\n\nsrc/checkout.py:88: TypeError";
    let hits = idx.search_errors(output, 3).unwrap();
    assert_eq!(hits.len(), 1, "{hits:#?}");
    assert_eq!(
        hits[0].path,
        "projects/shop/money/decimal-plus-float-typeerror-in-cart-totals.md"
    );

    let hits = idx
        .search_for_session(
            "Add a discount code to the cart total; keep money in Decimal",
            Some("shop"),
            4,
            4000,
        )
        .unwrap();
    assert!(!hits.is_empty());
    let first_shared = hits
        .iter()
        .position(|h| h.scope == Scope::Shared)
        .unwrap_or(hits.len());
    assert!(
        hits[..first_shared]
            .iter()
            .all(|h| h.scope == Scope::Project)
    );
    assert!(
        hits[first_shared..]
            .iter()
            .all(|h| h.scope == Scope::Shared)
    );
    let titles: Vec<&str> = hits.iter().map(|h| h.title.as_str()).collect();
    assert_eq!(
        titles,
        vec![
            "TypeError adding Decimal and float in cart totals",
            "How the shop codebase is laid out",
            "Never mix Decimal and float for money",
        ]
    );
}
