//! Fuzzing the text tool-call parser with proptest: the corpus in
//! `tests/fuzz/text_protocol` as is, then mutants of it (see
//! `quire_testkit::fuzz`). No input panics; every rejection says where
//! (`line N`); accepted arguments are JSON objects; the id counter moves
//! only on success. Failures are kept in the corpus folder's
//! `proptest-regressions.txt` and replayed first.

use proptest::prelude::*;
use quire_llm::text_protocol::parse_tool_calls;

const TARGET: &str = "text_protocol";

/// About 1–3 s in a debug build; `PROPTEST_CASES` overrides.
const CASES: u32 = 10_000;

fn check(input: &str) -> Result<(), TestCaseError> {
    let mut counter = 0;
    match parse_tool_calls(input, "t", &mut counter) {
        Ok(out) => {
            for call in &out.calls {
                prop_assert!(!call.name.is_empty());
                // Arguments handed on are always a JSON object.
                let value: Result<serde_json::Value, _> = serde_json::from_str(&call.arguments);
                prop_assert!(
                    value.as_ref().is_ok_and(serde_json::Value::is_object),
                    "arguments are not a JSON object: {}",
                    call.arguments
                );
            }
            prop_assert_eq!(counter as usize, out.calls.len());
        }
        Err(err) => {
            let message = err.to_string();
            prop_assert!(message.contains("line "), "no line in: {}", message);
            prop_assert_eq!(counter, 0, "the counter moves only on success");
        }
    }
    Ok(())
}

quire_testkit::fuzz_target!(
    TARGET,
    CASES,
    the_text_protocol_parser_never_panics_and_explains_rejections,
    check
);
