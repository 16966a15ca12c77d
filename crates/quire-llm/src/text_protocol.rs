//! Tool calling for models without native support: tool calls written as
//! text blocks, and native history turned back into text.
//!
//! ```text
//! <tool_call name="read_file">
//! {"path": "src/app.py"}
//! </tool_call>
//! ```
//!
//! Only the mechanics live here; the instructions shown to the model and the
//! repair messages come from the agent configuration. Every function is
//! total: any input gives a value or a [`TextProtocolError`], never a panic.

use quire_types::{ToolCall, ToolSpec};
use serde_json::Value;

const OPEN: &str = "<tool_call";
const CLOSE: &str = "</tool_call>";

/// A model answer split into prose and tool calls.
#[derive(Debug, Clone, PartialEq)]
pub struct ParsedOutput {
    /// The answer with the tool-call blocks removed, trimmed.
    pub text_without_calls: String,
    pub calls: Vec<ToolCall>,
}

/// Why a model's tool-call text could not be read. Lines count from 1 in
/// the text given to [`parse_tool_calls`], so repair messages can point at
/// the exact place.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TextProtocolError {
    #[error("line {line}: the <tool_call tag is not closed with '>'")]
    UnterminatedTag { line: usize },
    #[error(
        r#"line {line}: <tool_call> has no name attribute; write <tool_call name="tool_name">"#
    )]
    MissingName { line: usize },
    #[error(
        r#"line {line}: the <tool_call name="{name}"> block is never closed with </tool_call>"#
    )]
    UnclosedBlock { line: usize, name: String },
    #[error("line {line}, column {column}: the arguments of {name} are not valid JSON: {error}")]
    ArgumentsNotJson {
        line: usize,
        column: usize,
        name: String,
        error: String,
    },
    #[error("line {line}: the arguments of {name} must be a JSON object, not {found}")]
    ArgumentsNotObject {
        line: usize,
        name: String,
        found: String,
    },
    #[error(
        "line {line}: a <tool_call> block opens inside the block opened at line {outer_line}; close each block before opening the next"
    )]
    NestedBlock { line: usize, outer_line: usize },
    #[error("line {line}: </tool_call> without a matching <tool_call name=\"...\">")]
    UnexpectedClose { line: usize },
}

impl TextProtocolError {
    /// The 1-based line the problem is on.
    pub fn line(&self) -> usize {
        match self {
            TextProtocolError::UnterminatedTag { line }
            | TextProtocolError::MissingName { line }
            | TextProtocolError::UnclosedBlock { line, .. }
            | TextProtocolError::ArgumentsNotJson { line, .. }
            | TextProtocolError::ArgumentsNotObject { line, .. }
            | TextProtocolError::NestedBlock { line, .. }
            | TextProtocolError::UnexpectedClose { line } => *line,
        }
    }
}

/// The tools as text: name, description and the compact JSON schema of the
/// arguments, one section per tool.
pub fn render_tool_catalog(tools: &[ToolSpec]) -> String {
    tools
        .iter()
        .map(|t| {
            let description = t.description.trim();
            let mut section = format!("### {}\n", t.name);
            if !description.is_empty() {
                section.push_str(description);
                section.push('\n');
            }
            section.push_str(&format!("Arguments (JSON schema): {}", t.parameters));
            section
        })
        .collect::<Vec<_>>()
        .join("\n\n")
}

/// Extracts the `<tool_call>` blocks of `text`.
///
/// Ids are `{id_prefix}{n}`, with `n` taken from `*counter + 1` onwards;
/// the counter advances only on success, so a caller can keep one counter
/// for a whole session and ids stay unique.
pub fn parse_tool_calls(
    text: &str,
    id_prefix: &str,
    counter: &mut u64,
) -> Result<ParsedOutput, TextProtocolError> {
    let mut next_id = *counter;
    let mut calls = Vec::new();
    let mut prose = String::new();
    let mut pos = 0;

    while pos < text.len() {
        let open = find_open(text, pos);
        let close = find_from(text, pos, CLOSE);
        match (open, close) {
            (_, Some(c)) if open.is_none_or(|o| c < o) => {
                return Err(TextProtocolError::UnexpectedClose {
                    line: line_of(text, c),
                });
            }
            (None, _) => break,
            (Some(o), _) => {
                prose.push_str(&text[pos..o]);
                let block = parse_block(text, o)?;
                next_id += 1;
                calls.push(ToolCall::new(
                    format!("{id_prefix}{next_id}"),
                    block.name,
                    block.arguments,
                ));
                pos = block.end;
            }
        }
    }
    if pos < text.len() {
        prose.push_str(&text[pos..]);
    }
    *counter = next_id;
    Ok(ParsedOutput {
        text_without_calls: tidy(&prose),
        calls,
    })
}

struct Block {
    name: String,
    arguments: String,
    /// Byte offset just past the block.
    end: usize,
}

/// Parses the block whose tag starts at `start` (`text[start..]` begins
/// with a real `<tool_call` tag).
fn parse_block(text: &str, start: usize) -> Result<Block, TextProtocolError> {
    let line = line_of(text, start);
    let after_open = start + OPEN.len();
    // The tag ends at the first '>' unless another tag starts first.
    let gt = text[after_open..]
        .find(['>', '<'])
        .map(|i| after_open + i)
        .filter(|&i| text[i..].starts_with('>'))
        .ok_or(TextProtocolError::UnterminatedTag { line })?;
    let inner = &text[after_open..gt];
    let name = attribute(inner, "name")
        .map(|n| n.trim().to_string())
        .filter(|n| !n.is_empty())
        .ok_or(TextProtocolError::MissingName { line })?;
    let body_start = gt + 1;

    if inner.trim_end().ends_with('/') {
        // <tool_call name="x"/>: no arguments.
        return Ok(Block {
            name,
            arguments: "{}".to_string(),
            end: body_start,
        });
    }

    let close = find_from(text, body_start, CLOSE);
    let inner_open = find_open(text, body_start);
    let Some(close) = close else {
        return Err(match inner_open {
            Some(o) => TextProtocolError::NestedBlock {
                line: line_of(text, o),
                outer_line: line,
            },
            None => TextProtocolError::UnclosedBlock { line, name },
        });
    };
    if let Some(o) = inner_open.filter(|&o| o < close) {
        // Nested when the inner block's close is followed by another close
        // (the outer one) before any new block; otherwise the outer block
        // simply lacks its close.
        let after = close + CLOSE.len();
        let second_close = find_from(text, after, CLOSE);
        let next_open = find_open(text, after);
        let nested = second_close.is_some_and(|c2| next_open.is_none_or(|o2| c2 < o2));
        return Err(if nested {
            TextProtocolError::NestedBlock {
                line: line_of(text, o),
                outer_line: line,
            }
        } else {
            TextProtocolError::UnclosedBlock { line, name }
        });
    }

    let json = strip_fence(&text[body_start..close]);
    let arguments = if json.is_empty() {
        "{}".to_string()
    } else {
        let value: Value = serde_json::from_str(json).map_err(|e| {
            let json_start = body_start + offset_in(&text[body_start..close], json);
            TextProtocolError::ArgumentsNotJson {
                line: line_of(text, json_start) + e.line().saturating_sub(1),
                column: e.column(),
                name: name.clone(),
                error: serde_message(&e),
            }
        })?;
        if !value.is_object() {
            return Err(TextProtocolError::ArgumentsNotObject {
                line: line_of(text, body_start + offset_in(&text[body_start..close], json)),
                name,
                found: json_kind(&value).to_string(),
            });
        }
        value.to_string()
    };
    Ok(Block {
        name,
        arguments,
        end: close + CLOSE.len(),
    })
}

/// Next real `<tool_call` tag at or after `from` (not `<tool_calls>` or
/// `<tool_call_x`).
fn find_open(text: &str, from: usize) -> Option<usize> {
    let mut at = from;
    while let Some(o) = find_from(text, at, OPEN) {
        let next = text[o + OPEN.len()..].chars().next();
        if next.is_none_or(|c| c.is_whitespace() || c == '>' || c == '/') {
            return Some(o);
        }
        at = o + OPEN.len();
    }
    None
}

fn find_from(text: &str, from: usize, needle: &str) -> Option<usize> {
    text.get(from..)?.find(needle).map(|i| from + i)
}

fn line_of(text: &str, offset: usize) -> usize {
    text.get(..offset)
        .map_or(1, |t| t.matches('\n').count() + 1)
}

/// Byte offset of `sub` (a subslice of `outer`) within `outer`.
fn offset_in(outer: &str, sub: &str) -> usize {
    (sub.as_ptr() as usize).saturating_sub(outer.as_ptr() as usize)
}

/// The value of `key` in tag attributes: `key="v"`, `key='v'` or `key=v`.
fn attribute<'a>(inner: &'a str, key: &str) -> Option<&'a str> {
    let mut at = 0;
    while let Some(i) = find_from(inner, at, key) {
        at = i + key.len();
        let starts_word = inner[..i]
            .chars()
            .next_back()
            .is_none_or(char::is_whitespace);
        let rest = inner[at..].trim_start();
        let Some(value) = rest.strip_prefix('=').map(str::trim_start) else {
            continue;
        };
        if !starts_word {
            continue;
        }
        return match value.chars().next() {
            Some(q @ ('"' | '\'')) => {
                let quoted = &value[q.len_utf8()..];
                quoted.find(q).map(|end| &quoted[..end])
            }
            Some(_) => {
                let end = value
                    .find(|c: char| c.is_whitespace() || c == '/')
                    .unwrap_or(value.len());
                Some(&value[..end])
            }
            None => None,
        };
    }
    None
}

/// The JSON inside a block body, without a surrounding code fence.
fn strip_fence(body: &str) -> &str {
    let trimmed = body.trim();
    let Some(after) = trimmed.strip_prefix("```") else {
        return trimmed;
    };
    // Language tag (```json), ASCII so bytes equal chars.
    let lang = after
        .bytes()
        .take_while(|b| b.is_ascii_alphanumeric())
        .count();
    let inner = &after[lang..];
    inner.trim_end().strip_suffix("```").unwrap_or(inner).trim()
}

fn serde_message(e: &serde_json::Error) -> String {
    let text = e.to_string();
    match text.rfind(" at line ") {
        Some(i) => text[..i].to_string(),
        None => text,
    }
}

fn json_kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// Prose left after removing blocks: empty code fences that wrapped a block
/// are dropped and runs of blank lines collapse.
fn tidy(prose: &str) -> String {
    let lines: Vec<&str> = prose.lines().collect();
    let mut kept: Vec<&str> = Vec::with_capacity(lines.len());
    let mut in_fence = false;
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i].trim();
        if line.starts_with("```") {
            // An opening fence whose next non-blank line closes it wrapped a
            // removed block: drop the pair.
            let next = (i + 1..lines.len()).find(|&j| !lines[j].trim().is_empty());
            if let Some(j) = next.filter(|&j| !in_fence && lines[j].trim() == "```") {
                i = j + 1;
                continue;
            }
            in_fence = !in_fence;
        }
        let blank = line.is_empty();
        if !(blank && kept.last().is_some_and(|l| l.trim().is_empty())) {
            kept.push(lines[i]);
        }
        i += 1;
    }
    kept.join("\n").trim().to_string()
}

/// An assistant turn as text: its prose, then one block per call.
pub fn encode_assistant(content: &str, calls: &[ToolCall]) -> String {
    let mut out = content.trim_end().to_string();
    for call in calls {
        if !out.is_empty() {
            out.push_str("\n\n");
        }
        out.push_str(&format!(
            "<tool_call name=\"{}\">\n{}\n</tool_call>",
            call.name,
            encode_arguments(&call.arguments)
        ));
    }
    out
}

/// Arguments safe to put inside a block. In valid JSON `<` only occurs in
/// strings, where `\u003c` means the same, so tags inside values cannot end
/// or nest the block.
fn encode_arguments(arguments: &str) -> String {
    let trimmed = arguments.trim();
    if trimmed.is_empty() {
        return "{}".to_string();
    }
    if serde_json::from_str::<Value>(trimmed).is_ok() {
        trimmed.replace('<', "\\u003c")
    } else {
        trimmed.to_string()
    }
}

/// A tool result as text, answering the call with id `call_id`.
pub fn encode_tool_result(name: &str, call_id: &str, content: &str, is_error: bool) -> String {
    let status = if is_error { " status=\"error\"" } else { "" };
    format!(
        "<tool_result name=\"{}\" id=\"{}\"{status}>\n{}\n</tool_result>",
        attr_escape(name),
        attr_escape(call_id),
        content.trim_end()
    )
}

fn attr_escape(value: &str) -> String {
    value.replace('&', "&amp;").replace('"', "&quot;")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn parse(text: &str) -> Result<ParsedOutput, TextProtocolError> {
        parse_tool_calls(text, "call_", &mut 0)
    }

    #[test]
    fn parses_blocks_and_keeps_prose() {
        let text = "I will read it.\n<tool_call name=\"read_file\">\n{\"path\": \"src/app.py\"}\n</tool_call>\nThen list.\n<tool_call name='ls'>\n</tool_call>";
        let mut counter = 4;
        let out = parse_tool_calls(text, "t", &mut counter).unwrap();
        assert_eq!(out.text_without_calls, "I will read it.\n\nThen list.");
        assert_eq!(
            out.calls,
            vec![
                ToolCall::new("t5", "read_file", r#"{"path":"src/app.py"}"#),
                ToolCall::new("t6", "ls", "{}"),
            ]
        );
        assert_eq!(counter, 6);
    }

    #[test]
    fn tolerates_fences_spacing_and_self_closing() {
        let text = "```xml\n<tool_call   name = \"edit\" >\n```json\n{\"a\": [1, 2]}\n```\n</tool_call>\n```\n<tool_call name=done/>";
        let out = parse(text).unwrap();
        assert_eq!(out.text_without_calls, "");
        assert_eq!(out.calls[0].arguments, r#"{"a":[1,2]}"#);
        assert_eq!(out.calls[1].name, "done");
        assert_eq!(out.calls[1].arguments, "{}");
    }

    #[test]
    fn real_code_fences_survive() {
        let text = "```python\na\n```\n```\nb\n```\n<tool_call name=\"x\"></tool_call>";
        assert_eq!(
            parse(text).unwrap().text_without_calls,
            "```python\na\n```\n```\nb\n```"
        );
    }

    #[test]
    fn no_blocks_is_plain_text() {
        let out = parse("  just <tool_calls> talk  ").unwrap();
        assert!(out.calls.is_empty());
        assert_eq!(out.text_without_calls, "just <tool_calls> talk");
    }

    #[test]
    fn precise_errors() {
        let e = parse("a\n<tool_call name=\"x\">\n{}\n").unwrap_err();
        assert_eq!(
            e,
            TextProtocolError::UnclosedBlock {
                line: 2,
                name: "x".into()
            }
        );
        let e = parse("a\n\n<tool_call>\n{}\n</tool_call>").unwrap_err();
        assert_eq!(e, TextProtocolError::MissingName { line: 3 });
        let e = parse("<tool_call name=\"x\">\n{\"a\": 1,\n \"b\": }\n</tool_call>").unwrap_err();
        assert!(
            matches!(e, TextProtocolError::ArgumentsNotJson { line: 3, .. }),
            "{e:?}"
        );
        assert!(e.to_string().contains("line 3"), "{e}");
        let e = parse("<tool_call name=\"x\">[1]</tool_call>").unwrap_err();
        assert!(
            matches!(e, TextProtocolError::ArgumentsNotObject { line: 1, .. }),
            "{e:?}"
        );
        let e = parse("<tool_call name=\"a\">\n<tool_call name=\"b\">{}</tool_call>\n</tool_call>")
            .unwrap_err();
        assert_eq!(
            e,
            TextProtocolError::NestedBlock {
                line: 2,
                outer_line: 1
            }
        );
        let e =
            parse("<tool_call name=\"a\">\n{}\n<tool_call name=\"b\">{}</tool_call>").unwrap_err();
        assert_eq!(
            e,
            TextProtocolError::UnclosedBlock {
                line: 1,
                name: "a".into()
            }
        );
        let e = parse("x\n</tool_call>").unwrap_err();
        assert_eq!(e, TextProtocolError::UnexpectedClose { line: 2 });
        let e = parse("<tool_call name=\"a\"\n{}").unwrap_err();
        assert_eq!(e, TextProtocolError::UnterminatedTag { line: 1 });
        assert_eq!(e.line(), 1);
    }

    #[test]
    fn encode_round_trips_through_parse() {
        let calls = vec![
            ToolCall::new(
                "c1",
                "write_file",
                r#"{"path":"a","content":"</tool_call> <tool_call name=\"x\">"}"#,
            ),
            ToolCall::new("c2", "ls", ""),
        ];
        let text = encode_assistant("Writing.", &calls);
        let out = parse(&text).unwrap();
        assert_eq!(out.text_without_calls, "Writing.");
        assert_eq!(out.calls.len(), 2);
        let args: Value = serde_json::from_str(&out.calls[0].arguments).unwrap();
        assert_eq!(args["content"], "</tool_call> <tool_call name=\"x\">");
        assert_eq!(out.calls[1].arguments, "{}");
    }

    #[test]
    fn encodes_tool_results_and_catalog() {
        let r = encode_tool_result("read", "c\"1", "oops\n", true);
        assert_eq!(
            r,
            "<tool_result name=\"read\" id=\"c&quot;1\" status=\"error\">\noops\n</tool_result>"
        );
        let catalog = render_tool_catalog(&[ToolSpec {
            name: "read".into(),
            description: "Read a file.".into(),
            parameters: json!({"type":"object","properties":{"path":{"type":"string"}}}),
        }]);
        assert!(catalog.contains("### read\nRead a file.\n"), "{catalog}");
        assert!(
            catalog.contains(r#"{"type":"object","properties":{"path":{"type":"string"}}}"#)
                || catalog.contains(r#""properties":{"path":{"type":"string"}}"#)
        );
    }
}
