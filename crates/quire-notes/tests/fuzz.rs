//! Fuzzing note frontmatter parsing with proptest: the corpus in
//! `tests/fuzz/frontmatter` as is, then mutants of it (see
//! `quire_testkit::fuzz`). No input panics; every rejection has a message
//! and a line. Failures are kept in the corpus folder's
//! `proptest-regressions.txt` and replayed first.

use proptest::prelude::*;

const TARGET: &str = "frontmatter";

/// About 1–3 s in a debug build; `PROPTEST_CASES` overrides.
const CASES: u32 = 10_000;

fn check(input: &str) -> Result<(), TestCaseError> {
    if let Err(err) = quire_notes::parse_note_text(input) {
        prop_assert!(!err.message.trim().is_empty(), "empty message: {:?}", err);
        prop_assert!(
            err.line >= 1 || err.to_string().contains("line"),
            "no line: {:?}",
            err
        );
    }
    Ok(())
}

quire_testkit::fuzz_target!(
    TARGET,
    CASES,
    frontmatter_parsing_never_panics_and_explains_rejections,
    check
);
