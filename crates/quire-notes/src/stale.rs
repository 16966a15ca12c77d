//! Is a note still about code that exists? A note names the files and
//! symbols it is about (its provenance); when one of them is gone from the
//! workspace, the note is flagged stale where it is shown, so the model
//! checks it before relying on it.

use std::path::{Component, Path};

use crate::note::{Note, Scope};

/// Most workspace files searched for a symbol when the note lists no file.
const MAX_FILES: usize = 5_000;
/// Files larger than this are not searched for symbols.
const MAX_FILE_BYTES: u64 = 1_000_000;

/// Why `note` no longer matches the workspace at `root`, or `None` when
/// every file it names exists and every symbol occurs in them (in the
/// workspace when it names no file).
pub fn stale_reason(note: &Note, root: &Path) -> Option<String> {
    // A shared note is about code in general (a library, a language): its
    // provenance names the project it was learnt on, not this one.
    if note.meta.scope == Scope::Shared {
        return None;
    }
    let prov = &note.meta.provenance;
    let mut missing_files = Vec::new();
    let mut present = Vec::new();
    for file in &prov.files {
        match workspace_path(root, file) {
            Some(abs) if abs.is_file() => present.push(abs),
            Some(abs) if abs.is_dir() => {}
            _ => missing_files.push(file.as_str()),
        }
    }
    if !missing_files.is_empty() {
        return Some(format!("{} no longer exist", missing_files.join(", ")));
    }
    if prov.symbols.is_empty() {
        return None;
    }
    let mut missing: Vec<&str> = prov.symbols.iter().map(String::as_str).collect();
    let check = |missing: &mut Vec<&str>, text: &str| missing.retain(|s| !mentions(text, s));
    // The note's own files first; a symbol it names may live elsewhere
    // (a caller's note naming the callee), so the rest of the workspace next.
    for path in &present {
        if let Ok(text) = std::fs::read_to_string(path) {
            check(&mut missing, &text);
        }
    }
    if !missing.is_empty() {
        let walker = ignore::WalkBuilder::new(root).build();
        for entry in walker.filter_map(Result::ok).take(MAX_FILES) {
            if missing.is_empty() {
                break;
            }
            let small = entry
                .metadata()
                .is_ok_and(|m| m.is_file() && m.len() <= MAX_FILE_BYTES);
            if small
                && !present.iter().any(|p| p == entry.path())
                && let Ok(text) = std::fs::read_to_string(entry.path())
            {
                check(&mut missing, &text);
            }
        }
    }
    (!missing.is_empty()).then(|| format!("{} no longer found", missing.join(", ")))
}

/// Whether `text` mentions `symbol`: every identifier in it occurs as a
/// whole word. Notes name symbols qualified (`Inventory.reserve`,
/// `OrderService::place_order()`), while code spells them apart
/// (`class Inventory:` … `def reserve`).
fn mentions(text: &str, symbol: &str) -> bool {
    let mut parts = symbol
        .split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .filter(|p| !p.is_empty())
        .peekable();
    if parts.peek().is_none() {
        return text.contains(symbol.trim());
    }
    parts.all(|part| has_word(text, part))
}

fn has_word(text: &str, word: &str) -> bool {
    let is_ident = |c: char| c.is_alphanumeric() || c == '_';
    text.match_indices(word).any(|(at, _)| {
        let before = text[..at].chars().next_back();
        let after = text[at + word.len()..].chars().next();
        !before.is_some_and(is_ident) && !after.is_some_and(is_ident)
    })
}

/// The file a provenance entry names, only when it stays inside `root`.
fn workspace_path(root: &Path, rel: &str) -> Option<std::path::PathBuf> {
    let rel = Path::new(rel.trim().trim_start_matches("./"));
    if rel.as_os_str().is_empty() || rel.components().any(|c| !matches!(c, Component::Normal(_))) {
        return None;
    }
    Some(root.join(rel))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Kind, NewNote, NoteTree, Provenance};

    fn note(tree: &NoteTree, files: &[&str], symbols: &[&str]) -> Note {
        tree.create(
            NewNote::project("p", "t", Kind::Insight, format!("n {files:?} {symbols:?}"))
                .provenance(Provenance {
                    files: files.iter().map(|s| s.to_string()).collect(),
                    symbols: symbols.iter().map(|s| s.to_string()).collect(),
                    ..Provenance::default()
                }),
        )
        .unwrap()
    }

    #[test]
    fn notes_are_stale_when_files_or_symbols_are_gone() {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path().join("ws");
        std::fs::create_dir_all(ws.join("src")).unwrap();
        std::fs::write(ws.join("src/cart.py"), "def total(items):\n    pass\n").unwrap();
        let tree = NoteTree::open(dir.path().join("notes")).unwrap();

        assert_eq!(stale_reason(&note(&tree, &[], &[]), &ws), None);
        assert_eq!(
            stale_reason(&note(&tree, &["src/cart.py"], &["total"]), &ws),
            None
        );
        assert_eq!(stale_reason(&note(&tree, &[], &["def total"]), &ws), None);
        let gone = stale_reason(&note(&tree, &["src/cart.py", "src/gone.py"], &[]), &ws);
        assert_eq!(gone.as_deref(), Some("src/gone.py no longer exist"));
        let renamed = stale_reason(&note(&tree, &["src/cart.py"], &["subtotal"]), &ws);
        assert_eq!(renamed.as_deref(), Some("subtotal no longer found"));
        let anywhere = stale_reason(&note(&tree, &[], &["grand_total"]), &ws);
        assert!(anywhere.is_some());
        // Qualified names match identifiers spelled apart, in any file.
        std::fs::write(
            ws.join("src/inventory.py"),
            "class Inventory:\n    def reserve(self, sku):\n        pass\n",
        )
        .unwrap();
        let qualified = note(
            &tree,
            &["src/cart.py"],
            &["Inventory.reserve", "Inventory::reserve()", "total"],
        );
        assert_eq!(stale_reason(&qualified, &ws), None);
        let part_gone = stale_reason(&note(&tree, &[], &["Inventory.release"]), &ws);
        assert_eq!(
            part_gone.as_deref(),
            Some("Inventory.release no longer found")
        );
        // Whole words only: `reserve` is not `reserved`.
        let prefix = stale_reason(&note(&tree, &[], &["reserv"]), &ws);
        assert!(prefix.is_some());
        // Shared notes are about code in general, never stale here.
        let shared = tree
            .create(
                NewNote::shared("python", Kind::Insight, "quantize").provenance(Provenance {
                    symbols: vec!["decimal.localcontext".into()],
                    ..Provenance::default()
                }),
            )
            .unwrap();
        assert_eq!(stale_reason(&shared, &ws), None);
        let escape = stale_reason(&note(&tree, &["../outside.py"], &[]), &ws);
        assert!(escape.is_some(), "paths outside the workspace never count");
    }
}
