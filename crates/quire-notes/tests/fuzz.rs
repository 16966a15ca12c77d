//! Fuzzing note frontmatter parsing: the corpus in `tests/fuzz/frontmatter`
//! and a few hundred deterministic mutants. No input panics; every rejection
//! is an error with a message.

use std::path::Path;

#[test]
fn frontmatter_parsing_never_panics_and_explains_rejections() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fuzz/frontmatter");
    quire_testkit::fuzz::run(
        &dir,
        0x7e57_0002,
        2000,
        |input| match quire_notes::parse_note_text(input) {
            Ok(_) => {}
            Err(err) => {
                assert!(!err.message.trim().is_empty(), "{err:?}");
                assert!(err.line >= 1 || err.to_string().contains("line"), "{err:?}");
            }
        },
    );
}
