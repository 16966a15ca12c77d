#![allow(dead_code)]

use std::path::{Path, PathBuf};

use quire_notes::{Kind, NewNote, Note, NoteTree};

pub fn tree() -> (tempfile::TempDir, NoteTree) {
    let dir = tempfile::tempdir().unwrap();
    let tree = NoteTree::open(dir.path().join("notes")).unwrap();
    (dir, tree)
}

pub fn hindsight_src(tree: &NoteTree) -> Note {
    tree.create(
        NewNote::project("shop", "testing", Kind::Hindsight, "Tests fail with ModuleNotFoundError")
            .description("pytest run from tests/ cannot import src")
            .keywords(["pytest", "imports"])
            .error_signatures(["ModuleNotFoundError: No module named 'src'"])
            .body("## Error\n\n```\nE   ModuleNotFoundError: No module named 'src'\n```\n\n## Cause\n\nRan pytest from the tests folder.\n\n## Fix\n\nRun python -m pytest from the root."),
    )
    .unwrap()
}

pub fn hindsight_decimal(tree: &NoteTree) -> Note {
    tree.create(
        NewNote::shared("python", Kind::Hindsight, "Decimal plus float TypeError")
            .description("money totals crash when a float sneaks in")
            .error_signatures(["TypeError: unsupported operand type(s) for +: 'Decimal' and 'float'"])
            .body("## Error\n\nTypeError when adding.\n\n## Cause\n\nA float setting.\n\n## Fix\n\nParse as Decimal."),
    )
    .unwrap()
}

/// All files under `dir`, relative, sorted.
pub fn files(dir: &Path) -> Vec<PathBuf> {
    fn walk(dir: &Path, root: &Path, out: &mut Vec<PathBuf>) {
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                walk(&p, root, out);
            } else {
                out.push(p.strip_prefix(root).unwrap().to_path_buf());
            }
        }
    }
    let mut out = Vec::new();
    walk(dir, dir, &mut out);
    out.sort();
    out
}
