//! Fuzzing the text tool-call parser: the corpus in `tests/fuzz/text_protocol`
//! and a few hundred deterministic mutants. No input panics; every rejection
//! is an error that says where (`line N`).

use std::path::Path;

use quire_llm::text_protocol::parse_tool_calls;

#[test]
fn the_text_protocol_parser_never_panics_and_explains_rejections() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fuzz/text_protocol");
    quire_testkit::fuzz::run(&dir, 0x7e57_0001, 2000, |input| {
        let mut counter = 0;
        match parse_tool_calls(input, "t", &mut counter) {
            Ok(out) => {
                for call in &out.calls {
                    assert!(!call.name.is_empty());
                    // Arguments handed on are always a JSON object.
                    let value: serde_json::Value =
                        serde_json::from_str(&call.arguments).expect("arguments are JSON");
                    assert!(value.is_object(), "{}", call.arguments);
                }
                assert_eq!(counter as usize, out.calls.len());
            }
            Err(err) => {
                let message = err.to_string();
                assert!(message.contains("line "), "{message}");
                assert_eq!(counter, 0, "the counter moves only on success");
            }
        }
    });
}
