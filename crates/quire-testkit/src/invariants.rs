//! Conversation invariants the real providers enforce (and reject with 400).
//! Checking them here makes a client that builds a broken history fail in
//! tests instead of in front of a user.

use std::collections::HashSet;

use serde_json::Value;

/// Problems with an OpenAI Chat Completions request body.
pub(crate) fn check_openai(body: &Value) -> Vec<String> {
    let mut out = Vec::new();
    if body.get("model").and_then(Value::as_str).is_none() {
        out.push("`model` is missing or not a string".to_string());
    }
    let Some(msgs) = body.get("messages").and_then(Value::as_array) else {
        out.push("`messages` is missing or not an array".to_string());
        return out;
    };
    if msgs.is_empty() {
        out.push("`messages` is empty".to_string());
    }

    let mut called: HashSet<String> = HashSet::new();
    let mut answered: HashSet<String> = HashSet::new();
    // The assistant message whose tool calls the following `tool` messages
    // must answer: (its index, its call ids).
    let mut pending: Option<(usize, Vec<String>)> = None;

    for (i, m) in msgs.iter().enumerate() {
        let Some(role) = m.get("role").and_then(Value::as_str) else {
            out.push(format!("messages[{i}] has no `role`"));
            continue;
        };
        if role == "tool" {
            check_openai_tool_message(i, m, &pending, &called, &mut answered, &mut out);
            continue;
        }
        if let Some((at, ids)) = pending.take() {
            for id in ids.iter().filter(|id| !answered.contains(*id)) {
                out.push(format!(
                    "tool call `{id}` (messages[{at}]) has no tool result before messages[{i}] \
                     (role {role}); every tool call needs a `tool` message right after the \
                     assistant message that made it"
                ));
            }
        }
        match role {
            "assistant" => {
                let calls = m.get("tool_calls").and_then(Value::as_array);
                let has_calls = calls.is_some_and(|c| !c.is_empty());
                let has_text = m
                    .get("content")
                    .is_some_and(|c| !c.is_null() && !content_is_empty(c));
                if !has_text && !has_calls {
                    out.push(format!(
                        "messages[{i}] (assistant) has neither content nor tool_calls"
                    ));
                }
                let mut ids = Vec::new();
                for (j, c) in calls.into_iter().flatten().enumerate() {
                    let Some(id) = c.get("id").and_then(Value::as_str) else {
                        out.push(format!("messages[{i}].tool_calls[{j}] has no `id`"));
                        continue;
                    };
                    if c.get("type").and_then(Value::as_str) != Some("function") {
                        out.push(format!(
                            "messages[{i}].tool_calls[{j}] `type` must be \"function\""
                        ));
                    }
                    let f = c.get("function");
                    if f.and_then(|f| f.get("name"))
                        .and_then(Value::as_str)
                        .is_none()
                    {
                        out.push(format!(
                            "messages[{i}].tool_calls[{j}] has no function.name"
                        ));
                    }
                    if f.and_then(|f| f.get("arguments"))
                        .and_then(Value::as_str)
                        .is_none()
                    {
                        out.push(format!(
                            "messages[{i}].tool_calls[{j}] function.arguments must be a string"
                        ));
                    }
                    if !called.insert(id.to_string()) {
                        out.push(format!("messages[{i}] repeats tool call id `{id}`"));
                    }
                    ids.push(id.to_string());
                }
                if !ids.is_empty() {
                    pending = Some((i, ids));
                }
            }
            "user" | "system" | "developer" => match m.get("content") {
                None | Some(Value::Null) => {
                    out.push(format!("messages[{i}] ({role}) has no content"))
                }
                Some(c) if content_is_empty(c) => {
                    out.push(format!("messages[{i}] ({role}) has empty content"))
                }
                Some(_) => {}
            },
            other => out.push(format!("messages[{i}] has unknown role `{other}`")),
        }
    }
    if let Some((at, ids)) = pending {
        for id in ids.iter().filter(|id| !answered.contains(*id)) {
            out.push(format!(
                "tool call `{id}` (messages[{at}]) has no tool result: the conversation ends \
                 before it is answered"
            ));
        }
    }
    out
}

fn check_openai_tool_message(
    i: usize,
    m: &Value,
    pending: &Option<(usize, Vec<String>)>,
    called: &HashSet<String>,
    answered: &mut HashSet<String>,
    out: &mut Vec<String>,
) {
    if m.get("content").is_none_or(Value::is_null) {
        out.push(format!("messages[{i}] (tool) has no content"));
    }
    let Some(id) = m.get("tool_call_id").and_then(Value::as_str) else {
        out.push(format!("messages[{i}] (tool) has no `tool_call_id`"));
        return;
    };
    let in_block = pending
        .as_ref()
        .is_some_and(|(_, ids)| ids.iter().any(|x| x == id));
    if answered.contains(id) {
        out.push(format!(
            "messages[{i}] is a duplicate tool result for `{id}`"
        ));
    } else if in_block {
        // Answers the assistant message directly before this block.
    } else if called.contains(id) {
        out.push(format!(
            "messages[{i}] answers tool call `{id}`, but is not in the run of `tool` messages \
             directly after the assistant message that made it"
        ));
    } else {
        out.push(format!(
            "orphan tool result: messages[{i}] answers tool_call_id `{id}`, but no earlier \
             assistant message made that call"
        ));
    }
    answered.insert(id.to_string());
}

/// Problems with an Anthropic Messages request body.
pub(crate) fn check_anthropic(body: &Value) -> Vec<String> {
    let mut out = Vec::new();
    if body.get("model").and_then(Value::as_str).is_none() {
        out.push("`model` is missing or not a string".to_string());
    }
    if body.get("max_tokens").and_then(Value::as_u64).is_none() {
        out.push("`max_tokens` is required and must be a positive integer".to_string());
    }
    match body.get("system") {
        None | Some(Value::String(_)) => {}
        Some(Value::Array(blocks)) => {
            for (j, b) in blocks.iter().enumerate() {
                let ok = b.get("type").and_then(Value::as_str) == Some("text")
                    && b.get("text").is_some_and(Value::is_string);
                if !ok {
                    out.push(format!("system[{j}] must be a text block"));
                }
            }
        }
        Some(_) => out.push("`system` must be a string or an array of text blocks".to_string()),
    }
    for (j, t) in body
        .get("tools")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
    {
        // Server tools (web search etc.) carry a `type` and no schema.
        if t.get("type").is_none() && !t.get("input_schema").is_some_and(Value::is_object) {
            out.push(format!("tools[{j}] has no `input_schema` object"));
        }
        if t.get("name").and_then(Value::as_str).is_none() {
            out.push(format!("tools[{j}] has no `name`"));
        }
    }
    let Some(msgs) = body.get("messages").and_then(Value::as_array) else {
        out.push("`messages` is missing or not an array".to_string());
        return out;
    };
    if msgs.is_empty() {
        out.push("`messages` is empty".to_string());
    }

    let mut used: HashSet<String> = HashSet::new();
    let mut answered: HashSet<String> = HashSet::new();
    let mut pending: Option<(usize, Vec<String>)> = None;
    let mut prev_role: Option<&str> = None;

    for (i, m) in msgs.iter().enumerate() {
        let role = m.get("role").and_then(Value::as_str).unwrap_or("<none>");
        match role {
            "user" | "assistant" => {}
            "system" => out.push(format!(
                "messages[{i}] has role `system`; the system prompt goes in the top-level \
                 `system` field"
            )),
            other => out.push(format!("messages[{i}] has invalid role `{other}`")),
        }
        match prev_role {
            None if role != "user" => {
                out.push(format!("messages[0] must have role `user`, found `{role}`"))
            }
            Some(prev) if prev == role => out.push(format!(
                "roles must alternate user/assistant, but messages[{}] and messages[{i}] are \
                 both `{role}`",
                i - 1
            )),
            _ => {}
        }
        prev_role = Some(role);

        let is_last = i + 1 == msgs.len();
        let blocks: &[Value] = match m.get("content") {
            Some(Value::String(s)) => {
                if s.trim().is_empty() && !(is_last && role == "assistant") {
                    out.push(format!("messages[{i}] ({role}) has empty content"));
                }
                &[]
            }
            Some(Value::Array(blocks)) => {
                if blocks.is_empty() {
                    out.push(format!("messages[{i}] ({role}) has an empty content array"));
                }
                blocks
            }
            _ => {
                out.push(format!(
                    "messages[{i}] content must be a string or an array of blocks"
                ));
                &[]
            }
        };

        let expected: Vec<String> = match pending.take() {
            Some((at, ids)) => {
                let here: HashSet<&str> = blocks
                    .iter()
                    .filter(|b| block_type(b) == Some("tool_result"))
                    .filter_map(|b| b.get("tool_use_id").and_then(Value::as_str))
                    .collect();
                for id in ids.iter().filter(|id| !here.contains(id.as_str())) {
                    out.push(format!(
                        "tool_use `{id}` (messages[{at}]) has no tool_result in messages[{i}]; \
                         the user message right after a tool_use must answer every call"
                    ));
                }
                ids
            }
            None => Vec::new(),
        };

        let mut new_calls = Vec::new();
        let mut seen_other_block = false;
        for (j, b) in blocks.iter().enumerate() {
            let at = format!("messages[{i}].content[{j}]");
            match block_type(b) {
                Some("text") => {
                    seen_other_block = true;
                    match b.get("text").and_then(Value::as_str) {
                        Some(t) if t.trim().is_empty() => {
                            out.push(format!("{at} is an empty text block"))
                        }
                        Some(_) => {}
                        None => out.push(format!("{at} text block has no `text` string")),
                    }
                }
                Some("tool_use") => {
                    seen_other_block = true;
                    if role != "assistant" {
                        out.push(format!("{at} is a tool_use block in a `{role}` message"));
                    }
                    if b.get("name").and_then(Value::as_str).is_none() {
                        out.push(format!("{at} tool_use has no `name`"));
                    }
                    if !b.get("input").is_some_and(Value::is_object) {
                        out.push(format!("{at} tool_use `input` must be an object"));
                    }
                    let Some(id) = b.get("id").and_then(Value::as_str) else {
                        out.push(format!("{at} tool_use has no `id`"));
                        continue;
                    };
                    if !used.insert(id.to_string()) {
                        out.push(format!("{at} repeats tool_use id `{id}`"));
                    }
                    new_calls.push(id.to_string());
                }
                Some("tool_result") => {
                    if role != "user" {
                        out.push(format!("{at} is a tool_result block in a `{role}` message"));
                    }
                    if seen_other_block {
                        out.push(format!(
                            "{at}: tool_result blocks must come before any other content in \
                             the message"
                        ));
                    }
                    let Some(id) = b.get("tool_use_id").and_then(Value::as_str) else {
                        out.push(format!("{at} tool_result has no `tool_use_id`"));
                        continue;
                    };
                    if answered.contains(id) {
                        out.push(format!("{at} is a duplicate tool_result for `{id}`"));
                    } else if expected.iter().any(|x| x == id) {
                        // Answers the assistant message right before.
                    } else if used.contains(id) {
                        out.push(format!(
                            "{at} answers tool_use `{id}`, but is not in the user message \
                             right after the assistant message that made it"
                        ));
                    } else {
                        out.push(format!(
                            "orphan tool result: {at} answers tool_use_id `{id}`, but no \
                             earlier assistant message has that tool_use"
                        ));
                    }
                    answered.insert(id.to_string());
                }
                Some(_) => seen_other_block = true,
                None => out.push(format!("{at} has no `type`")),
            }
        }
        if role == "assistant" && !new_calls.is_empty() {
            pending = Some((i, new_calls));
        }
    }
    if let Some((at, ids)) = pending {
        for id in ids {
            out.push(format!(
                "tool_use `{id}` (messages[{at}]) has no tool_result: the conversation ends \
                 right after it"
            ));
        }
    }
    out
}

fn block_type(b: &Value) -> Option<&str> {
    b.get("type").and_then(Value::as_str)
}

fn content_is_empty(c: &Value) -> bool {
    match c {
        Value::String(s) => s.trim().is_empty(),
        Value::Array(a) => a.is_empty(),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn assistant_calls(ids: &[&str]) -> Value {
        let calls: Vec<Value> = ids
            .iter()
            .map(|id| json!({"id": id, "type": "function", "function": {"name": "read", "arguments": "{}"}}))
            .collect();
        json!({"role": "assistant", "content": null, "tool_calls": calls})
    }

    fn tool(id: &str) -> Value {
        json!({"role": "tool", "tool_call_id": id, "content": "out"})
    }

    fn openai(messages: Vec<Value>) -> Vec<String> {
        check_openai(&json!({"model": "m", "messages": messages}))
    }

    #[test]
    fn openai_valid_parallel_calls_pass() {
        let v = openai(vec![
            json!({"role": "system", "content": "sys"}),
            json!({"role": "user", "content": "hi"}),
            assistant_calls(&["a", "b"]),
            tool("b"),
            tool("a"),
            json!({"role": "assistant", "content": "done"}),
            json!({"role": "user", "content": [{"type": "text", "text": "more"}]}),
        ]);
        assert!(v.is_empty(), "{v:?}");
    }

    #[test]
    fn openai_detects_missing_late_duplicate_and_orphan() {
        let v = openai(vec![
            json!({"role": "user", "content": "hi"}),
            assistant_calls(&["a", "b"]),
            tool("a"),
            json!({"role": "user", "content": "next"}),
            tool("b"),
            tool("a"),
            tool("zzz"),
        ]);
        assert_eq!(v.len(), 4, "{v:#?}");
        assert!(
            v[0].contains("`b`") && v[0].contains("no tool result"),
            "{}",
            v[0]
        );
        assert!(v[1].contains("not in the run"), "{}", v[1]);
        assert!(v[2].contains("duplicate"), "{}", v[2]);
        assert!(v[3].contains("orphan") && v[3].contains("zzz"), "{}", v[3]);
    }

    #[test]
    fn openai_detects_unanswered_call_at_end_and_empty_messages() {
        let v = openai(vec![
            json!({"role": "user", "content": "hi"}),
            assistant_calls(&["a"]),
        ]);
        assert_eq!(v.len(), 1);
        assert!(v[0].contains("conversation ends"));
        assert_eq!(openai(vec![]), vec!["`messages` is empty".to_string()]);
    }

    fn anthropic(messages: Vec<Value>) -> Vec<String> {
        check_anthropic(&json!({"model": "m", "max_tokens": 100, "messages": messages}))
    }

    fn tool_use(id: &str) -> Value {
        json!({"type": "tool_use", "id": id, "name": "read", "input": {}})
    }

    fn tool_result(id: &str) -> Value {
        json!({"type": "tool_result", "tool_use_id": id, "content": "out"})
    }

    #[test]
    fn anthropic_valid_round_trip_passes() {
        let v = anthropic(vec![
            json!({"role": "user", "content": "hi"}),
            json!({"role": "assistant", "content": [{"type": "text", "text": "let me look"}, tool_use("t1"), tool_use("t2")]}),
            json!({"role": "user", "content": [tool_result("t2"), tool_result("t1"), {"type": "text", "text": "also"}]}),
            json!({"role": "assistant", "content": "done"}),
        ]);
        assert!(v.is_empty(), "{v:?}");
    }

    #[test]
    fn anthropic_detects_alternation_order_and_missing_results() {
        let v = anthropic(vec![
            json!({"role": "assistant", "content": "first"}),
            json!({"role": "user", "content": "hi"}),
            json!({"role": "user", "content": "again"}),
            json!({"role": "assistant", "content": [tool_use("t1"), tool_use("t2")]}),
            json!({"role": "user", "content": [{"type": "text", "text": "x"}, tool_result("t1")]}),
        ]);
        assert_eq!(v.len(), 4, "{v:#?}");
        assert!(v[0].contains("messages[0] must have role `user`"));
        assert!(v[1].contains("alternate"));
        assert!(v[2].contains("`t2`") && v[2].contains("no tool_result"));
        assert!(v[3].contains("must come before"));
    }

    #[test]
    fn anthropic_detects_orphan_duplicate_and_shape_errors() {
        let v = check_anthropic(&json!({
            "model": "m",
            "system": 5,
            "messages": [
                {"role": "user", "content": [tool_result("nope")]},
                {"role": "assistant", "content": [tool_use("t1")]},
                {"role": "user", "content": [tool_result("t1"), tool_result("t1")]},
                {"role": "assistant", "content": [{"type": "text", "text": "  "}]},
            ]
        }));
        assert_eq!(v.len(), 5, "{v:#?}");
        assert!(v[0].contains("max_tokens"));
        assert!(v[1].contains("`system`"));
        assert!(v[2].contains("orphan") && v[2].contains("nope"));
        assert!(v[3].contains("duplicate"));
        assert!(v[4].contains("empty text block"));
    }
}
