//! `metadata.json` of a task, validated field by field so every problem
//! names the file and the line it is on.

use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// What a task says about itself (the Ark benchmark's fields). Unknown keys
/// are kept in `extra`, so richer task formats load unchanged.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskMetadata {
    pub id: String,
    pub title: String,
    pub category: String,
    pub difficulty: String,
    pub language: String,
    /// The visible test command, run from the task root.
    pub test_command: String,
    pub dependencies: Vec<String>,
    #[serde(flatten)]
    pub extra: serde_json::Map<String, Value>,
}

const STRING_FIELDS: &[&str] = &[
    "id",
    "title",
    "category",
    "difficulty",
    "language",
    "test_command",
];

impl TaskMetadata {
    /// Reads and validates `<dir>/metadata.json`; `folder_id` is the task
    /// folder's name, which `id` must equal. Errors read
    /// `path:line:column: what is wrong`.
    pub fn load(path: &Path, folder_id: &str) -> Result<TaskMetadata, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|err| format!("{}: cannot read: {err}", path.display()))?;
        TaskMetadata::parse(&text, &path.display().to_string(), folder_id)
    }

    /// Validates metadata text; `label` names the file in errors.
    pub fn parse(text: &str, label: &str, folder_id: &str) -> Result<TaskMetadata, String> {
        let value: Value = serde_json::from_str(text)
            .map_err(|err| format!("{label}:{}:{}: {err}", err.line(), err.column()))?;
        let Value::Object(mut map) = value else {
            return Err(format!("{label}:1:1: must be a JSON object"));
        };
        let at = |key: &str| -> String {
            let (line, column) = key_position(text, key).unwrap_or((1, 1));
            format!("{label}:{line}:{column}")
        };
        let mut strings = Vec::with_capacity(STRING_FIELDS.len());
        for key in STRING_FIELDS {
            match map.remove(*key) {
                Some(Value::String(s)) if !s.trim().is_empty() => strings.push(s),
                Some(other) => {
                    return Err(format!(
                        "{}: `{key}` must be a non-empty string, found {other}",
                        at(key)
                    ));
                }
                None => return Err(format!("{label}:1:1: missing `{key}`")),
            }
        }
        let dependencies = match map.remove("dependencies") {
            Some(Value::Array(items)) => {
                let mut deps = Vec::with_capacity(items.len());
                for item in items {
                    match item {
                        Value::String(s) => deps.push(s),
                        other => {
                            return Err(format!(
                                "{}: `dependencies` must list strings, found {other}",
                                at("dependencies")
                            ));
                        }
                    }
                }
                deps
            }
            Some(other) => {
                return Err(format!(
                    "{}: `dependencies` must be an array of strings, found {other}",
                    at("dependencies")
                ));
            }
            None => return Err(format!("{label}:1:1: missing `dependencies`")),
        };
        let mut strings = strings.into_iter();
        let mut next = || strings.next().unwrap_or_default();
        let metadata = TaskMetadata {
            id: next(),
            title: next(),
            category: next(),
            difficulty: next(),
            language: next(),
            test_command: next(),
            dependencies,
            extra: map,
        };
        if metadata.id != folder_id {
            return Err(format!(
                "{}: `id` is \"{}\" but the task folder is `{folder_id}`",
                at("id"),
                metadata.id
            ));
        }
        Ok(metadata)
    }
}

/// 1-based line and column of the first `"key"` used as an object key.
fn key_position(text: &str, key: &str) -> Option<(usize, usize)> {
    let needle = format!("\"{key}\"");
    let mut from = 0;
    while let Some(found) = text[from..].find(&needle) {
        let start = from + found;
        let after = &text[start + needle.len()..];
        if after.trim_start().starts_with(':') {
            return Some(line_column(text, start));
        }
        from = start + needle.len();
    }
    None
}

/// 1-based line and column (in characters) of a byte offset.
pub(crate) fn line_column(text: &str, offset: usize) -> (usize, usize) {
    let offset = offset.min(text.len());
    let before = text.get(..offset).unwrap_or(text);
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let column = before[line_start..].chars().count() + 1;
    (line, column)
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = r#"{
  "id": "fix-add",
  "title": "Fix add",
  "category": "bugfix",
  "difficulty": "easy",
  "language": "python",
  "test_command": "python3 -m pytest -q tests",
  "dependencies": ["pytest"],
  "source": "ark"
}"#;

    #[test]
    fn good_metadata_parses_and_keeps_extra_keys() {
        let m = TaskMetadata::parse(GOOD, "t/metadata.json", "fix-add").unwrap();
        assert_eq!(m.test_command, "python3 -m pytest -q tests");
        assert_eq!(m.dependencies, vec!["pytest"]);
        assert_eq!(m.extra.get("source").and_then(Value::as_str), Some("ark"));
    }

    #[test]
    fn syntax_errors_name_file_and_line() {
        let err = TaskMetadata::parse("{\n  \"id\": ,\n}", "t/metadata.json", "t").unwrap_err();
        assert!(err.starts_with("t/metadata.json:2:"), "{err}");
    }

    #[test]
    fn wrong_types_point_at_the_key() {
        let text = GOOD.replace("\"difficulty\": \"easy\"", "\"difficulty\": 3");
        let err = TaskMetadata::parse(&text, "m.json", "fix-add").unwrap_err();
        assert!(err.starts_with("m.json:5:3: `difficulty`"), "{err}");
        let text = GOOD.replace("[\"pytest\"]", "\"pytest\"");
        let err = TaskMetadata::parse(&text, "m.json", "fix-add").unwrap_err();
        assert!(err.starts_with("m.json:8:3: `dependencies`"), "{err}");
    }

    #[test]
    fn missing_fields_and_wrong_id_are_named() {
        let text = GOOD.replace("  \"title\": \"Fix add\",\n", "");
        let err = TaskMetadata::parse(&text, "m.json", "fix-add").unwrap_err();
        assert!(err.contains("missing `title`"), "{err}");
        let err = TaskMetadata::parse(GOOD, "m.json", "other").unwrap_err();
        assert!(
            err.starts_with("m.json:2:3:") && err.contains("`other`"),
            "{err}"
        );
    }

    #[test]
    fn line_column_counts_characters() {
        assert_eq!(line_column("ab\ncdé", 5), (2, 3));
        assert_eq!(line_column("x", 0), (1, 1));
    }
}
