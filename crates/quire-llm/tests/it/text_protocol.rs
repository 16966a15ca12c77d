use quire_llm::text_protocol::{
    TextProtocolError, encode_assistant, encode_tool_result, parse_tool_calls, render_tool_catalog,
};
use quire_types::{ToolCall, ToolSpec};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::{Value, json};

const VALID: &str = "I'll read the file first.\n\n<tool_call name=\"read_file\">\n{\"path\": \"src/app.py\"}\n</tool_call>\n\nand then\n<tool_call name='grep'>\n```json\n{\"pattern\": \"def \\\\w+\", \"glob\": \"*.py\"}\n```\n</tool_call>\n";

#[test]
fn parses_the_documented_format() {
    let mut counter = 0;
    let out = parse_tool_calls(VALID, "tc_", &mut counter).unwrap();
    assert_eq!(out.calls.len(), 2);
    assert_eq!(
        out.calls[0],
        ToolCall::new("tc_1", "read_file", r#"{"path":"src/app.py"}"#)
    );
    assert_eq!(out.calls[1].name, "grep");
    let args: Value = serde_json::from_str(&out.calls[1].arguments).unwrap();
    assert_eq!(args["pattern"], "def \\w+");
    assert_eq!(
        out.text_without_calls,
        "I'll read the file first.\n\nand then"
    );
    // A second parse continues the ids.
    let again =
        parse_tool_calls("<tool_call name=\"x\"></tool_call>", "tc_", &mut counter).unwrap();
    assert_eq!(again.calls[0].id, "tc_3");
}

#[test]
fn errors_name_the_line() {
    let cases: &[(&str, usize, &str)] = &[
        (
            "ok\nok\n<tool_call name=\"a\">\n{\"x\": 1}\n",
            3,
            "never closed",
        ),
        ("<tool_call id=\"1\">{}</tool_call>", 1, "no name"),
        (
            "a\n<tool_call name=\"a\">\n{\"x\": 1,}\n</tool_call>",
            3,
            "not valid JSON",
        ),
        (
            "<tool_call name=\"a\">\n\"just a string\"\n</tool_call>",
            2,
            "a string",
        ),
        ("\n\n</tool_call>", 3, "without a matching"),
    ];
    for (text, line, phrase) in cases {
        let err = parse_tool_calls(text, "c", &mut 0).unwrap_err();
        assert_eq!(err.line(), *line, "{text:?}: {err}");
        let msg = err.to_string();
        assert!(msg.contains(phrase), "{text:?}: {msg}");
        assert!(msg.contains(&format!("line {line}")), "{msg}");
    }
    let err = parse_tool_calls("x", "c", &mut 0);
    assert!(err.is_ok());
    let err = parse_tool_calls(
        "<tool_call name=\"o\">\n<tool_call name=\"i\">{}</tool_call>\n</tool_call>",
        "c",
        &mut 0,
    )
    .unwrap_err();
    assert!(
        matches!(
            err,
            TextProtocolError::NestedBlock {
                line: 2,
                outer_line: 1
            }
        ),
        "{err:?}"
    );
}

#[test]
fn failed_parse_does_not_advance_the_counter() {
    let mut counter = 7;
    let text = "<tool_call name=\"a\">{}</tool_call>\n<tool_call name=\"b\">[</tool_call>";
    assert!(parse_tool_calls(text, "c", &mut counter).is_err());
    assert_eq!(counter, 7);
}

#[test]
fn encoding_history_round_trips() {
    let calls = vec![
        ToolCall::new(
            "c1",
            "write_file",
            r#"{"path":"x.md","content":"use <tool_call name=\"y\"> then </tool_call>"}"#,
        ),
        ToolCall::new("c2", "run_tests", "{}"),
    ];
    let text = encode_assistant("Writing docs.", &calls);
    let out = parse_tool_calls(&text, "r", &mut 0).unwrap();
    assert_eq!(out.text_without_calls, "Writing docs.");
    let names: Vec<_> = out.calls.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["write_file", "run_tests"]);
    for (orig, back) in calls.iter().zip(&out.calls) {
        let a: Value = serde_json::from_str(&orig.arguments).unwrap();
        let b: Value = serde_json::from_str(&back.arguments).unwrap();
        assert_eq!(a, b);
    }
    let result = encode_tool_result("run_tests", "c2", "2 passed", false);
    assert_eq!(
        result,
        "<tool_result name=\"run_tests\" id=\"c2\">\n2 passed\n</tool_result>"
    );
    assert!(encode_tool_result("x", "c", "boom", true).contains("status=\"error\""));
}

#[test]
fn catalog_lists_each_tool_compactly() {
    let tools = vec![
        ToolSpec {
            name: "read_file".into(),
            description: "Read a file.".into(),
            parameters: json!({"type": "object", "properties": {"path": {"type": "string"}}}),
        },
        ToolSpec {
            name: "finish".into(),
            description: String::new(),
            parameters: json!({"type": "object"}),
        },
    ];
    let catalog = render_tool_catalog(&tools);
    assert!(
        catalog.starts_with("### read_file\nRead a file.\n"),
        "{catalog}"
    );
    assert!(
        catalog.contains("### finish\nArguments (JSON schema): {\"type\":\"object\"}"),
        "{catalog}"
    );
    assert!(!catalog.contains("  "), "not compact: {catalog}");
    assert_eq!(render_tool_catalog(&[]), "");
}

/// Characters that stress the parser: tag pieces, quotes, braces, fences,
/// newlines and multi-byte text.
const ALPHABET: &[&str] = &[
    "<",
    ">",
    "/",
    "\"",
    "'",
    "{",
    "}",
    "[",
    "]",
    ":",
    ",",
    "\n",
    " ",
    "=",
    "`",
    "```",
    "json",
    "<tool_call",
    "</tool_call>",
    "name=",
    "name=\"x\"",
    "é",
    "→",
    "\\",
    "0",
    "a",
    "\u{0}",
];

fn mutate(rng: &mut StdRng, text: &str) -> String {
    let mut chars: Vec<String> = text.chars().map(String::from).collect();
    for _ in 0..rng.random_range(1..6) {
        let at = rng.random_range(0..=chars.len());
        match rng.random_range(0..3) {
            0 if at < chars.len() => {
                chars.remove(at);
            }
            1 => {
                let piece = ALPHABET[rng.random_range(0..ALPHABET.len())];
                chars.insert(at, piece.to_string());
            }
            _ if at < chars.len() => {
                let end = rng
                    .random_range(at..chars.len().min(at + 20) + 1)
                    .min(chars.len());
                let dup: Vec<String> = chars[at..end].to_vec();
                chars.splice(at..at, dup);
            }
            _ => {}
        }
    }
    chars.concat()
}

/// The parser is total: random bytes and mutated valid inputs give a value
/// or an error, never a panic, and every call it returns carries a JSON
/// object as arguments and a non-empty name.
#[test]
fn fuzz_never_panics() {
    let mut rng = StdRng::seed_from_u64(0x5eed_c0de);
    let check = |text: &str| {
        let mut counter = 0;
        match parse_tool_calls(text, "f", &mut counter) {
            Ok(out) => {
                assert_eq!(counter as usize, out.calls.len());
                for c in &out.calls {
                    assert!(!c.name.is_empty(), "{text:?}");
                    let v: Value = serde_json::from_str(&c.arguments)
                        .unwrap_or_else(|e| panic!("{text:?} gave args {:?}: {e}", c.arguments));
                    assert!(v.is_object(), "{text:?}");
                }
            }
            Err(e) => {
                let lines = text.matches('\n').count() + 1;
                assert!(e.line() >= 1 && e.line() <= lines, "{text:?}: {e:?}");
                assert!(!e.to_string().is_empty());
            }
        }
    };
    for _ in 0..3000 {
        let len = rng.random_range(0..200);
        let bytes: Vec<u8> = (0..len).map(|_| rng.random()).collect();
        check(&String::from_utf8_lossy(&bytes));
    }
    for _ in 0..3000 {
        let len = rng.random_range(0..40);
        let text: String = (0..len)
            .map(|_| ALPHABET[rng.random_range(0..ALPHABET.len())])
            .collect();
        check(&text);
    }
    let encoded = encode_assistant(
        "prose",
        &[ToolCall::new(
            "1",
            "write",
            r#"{"a":"</tool_call>","b":[1,2]}"#,
        )],
    );
    for seed in [VALID, encoded.as_str()] {
        for _ in 0..3000 {
            check(&mutate(&mut rng, seed));
        }
    }
}

/// Encoding never panics either, whatever the arguments hold.
#[test]
fn fuzz_encoders() {
    let mut rng = StdRng::seed_from_u64(42);
    for _ in 0..500 {
        let len = rng.random_range(0..60);
        let junk: String = (0..len)
            .map(|_| ALPHABET[rng.random_range(0..ALPHABET.len())])
            .collect();
        let text = encode_assistant(&junk, &[ToolCall::new(&junk, "t", &junk)]);
        let _ = parse_tool_calls(&text, "x", &mut 0);
        let _ = encode_tool_result(&junk, &junk, &junk, rng.random());
    }
}
