//! Fuzzing the patch parser, repairer and applier on the corpus in
//! `tests/fuzz/patch` and deterministic mutants: no panic, every rejection
//! an error with a message.

use std::path::Path;

use quire_patch::{ApplyOptions, apply_patch, parse, repair};

const FILE: &str = "def f():\n    return 1\n\nx\n";

#[test]
fn patch_parsing_repair_and_apply_never_panic() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fuzz/patch");
    quire_testkit::fuzz::run(&dir, 0x7e57_0004, 2000, |input| {
        if let Err(err) = parse(input) {
            assert!(!err.to_string().trim().is_empty());
        }
        let repaired = repair(input);
        let _ = parse(&repaired.patch_text);
        match apply_patch(input, |_| Some(FILE.to_string()), &ApplyOptions::default()) {
            Ok(_) => {}
            Err(err) => assert!(!err.to_string().trim().is_empty()),
        }
    });
}
