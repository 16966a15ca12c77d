//! Deterministic token accounting so clients' usage and cache bookkeeping can
//! be asserted exactly.
//!
//! The prompt text of a request is the canonical JSON (compact, object keys
//! sorted) of its `tools`, then `system`, then `messages`, each omitted when
//! absent. Prompt tokens are its characters / 4 (at least 1); cached tokens
//! are the longest common prefix, in characters, with the previous request of
//! the same protocol that reached the script, / 4.

use serde_json::Value;

/// Token counts for one answer, before mapping to a protocol's field names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Usage {
    /// Whole prompt, including the cached part.
    pub prompt: u64,
    pub completion: u64,
    pub cached: u64,
}

/// The text the usage numbers are computed from (see the module docs).
pub(crate) fn prompt_text(body: &Value) -> String {
    let mut out = String::new();
    for key in ["tools", "system", "messages"] {
        if let Some(v) = body.get(key) {
            write_canonical(v, &mut out);
        }
    }
    out
}

pub(crate) fn compute(prompt: &str, previous: Option<&str>, completion_chars: usize) -> Usage {
    let prompt_chars = prompt.chars().count() as u64;
    let common = previous.map_or(0, |prev| {
        prev.chars()
            .zip(prompt.chars())
            .take_while(|(a, b)| a == b)
            .count() as u64
    });
    Usage {
        prompt: (prompt_chars / 4).max(1),
        completion: completion_chars as u64 / 4,
        cached: common / 4,
    }
}

/// Compact JSON with object keys sorted, independent of whether
/// `serde_json/preserve_order` is enabled somewhere in the workspace.
pub(crate) fn write_canonical(v: &Value, out: &mut String) {
    match v {
        Value::Object(map) => {
            let mut entries: Vec<_> = map.iter().collect();
            entries.sort_by(|a, b| a.0.cmp(b.0));
            out.push('{');
            for (i, (k, val)) in entries.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(k.clone()).to_string());
                out.push(':');
                write_canonical(val, out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_canonical(item, out);
            }
            out.push(']');
        }
        scalar => out.push_str(&scalar.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn canonical_sorts_keys_and_is_compact() {
        let v = json!({"b": [1, {"z": null, "a": "x\"y"}], "a": true});
        let mut s = String::new();
        write_canonical(&v, &mut s);
        assert_eq!(s, r#"{"a":true,"b":[1,{"a":"x\"y","z":null}]}"#);
    }

    #[test]
    fn prompt_text_orders_tools_system_messages() {
        let body = json!({"messages": [], "system": "S", "tools": [], "model": "m"});
        assert_eq!(prompt_text(&body), r#"[]"S"[]"#);
    }

    #[test]
    fn usage_counts_chars_and_common_prefix() {
        let u = compute("abcdefghij", Some("abcdefgXYZ"), 9);
        assert_eq!(
            u,
            Usage {
                prompt: 2,
                completion: 2,
                cached: 1
            }
        );
        let first = compute("ab", None, 0);
        assert_eq!(
            first,
            Usage {
                prompt: 1,
                completion: 0,
                cached: 0
            }
        );
    }
}
