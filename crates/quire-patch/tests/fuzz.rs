//! Fuzzing the patch parser, repairer and applier with proptest: the corpus
//! in `tests/fuzz/patch` as is, then mutants of it (see
//! `quire_testkit::fuzz`). No input panics; every rejection has a message.
//! Failures are kept in the corpus folder's `proptest-regressions.txt` and
//! replayed first.

use proptest::prelude::*;
use quire_patch::{ApplyOptions, apply_patch, parse, repair};

const TARGET: &str = "patch";

/// About 1–3 s in a debug build; `PROPTEST_CASES` overrides.
const CASES: u32 = 10_000;

/// The file every mutant is applied to (matches the corpus's paths loosely,
/// so some hunks apply and some are rejected).
const FILE: &str = "def f():\n    return 1\n\nx\n";

fn check(input: &str) -> Result<(), TestCaseError> {
    if let Err(err) = parse(input) {
        prop_assert!(!err.to_string().trim().is_empty(), "empty parse error");
    }
    let repaired = repair(input);
    if let Err(err) = parse(&repaired.patch_text) {
        prop_assert!(
            !err.to_string().trim().is_empty(),
            "empty parse error after repair"
        );
    }
    if let Err(err) = apply_patch(input, |_| Some(FILE.to_string()), &ApplyOptions::default()) {
        prop_assert!(!err.to_string().trim().is_empty(), "empty apply error");
    }
    Ok(())
}

quire_testkit::fuzz_target!(
    TARGET,
    CASES,
    patch_parsing_repair_and_apply_never_panic,
    check
);
