//! Addressable parts of an agent folder: the units the meta-agent may change,
//! one per round, each with a stable id:
//!
//! | id | where |
//! |---|---|
//! | `prompt:<section>` | a system prompt section file (`prompts.system`), `prompt:task`, or `prompt:note_taker` |
//! | `tool:<name>:description` | `tools/<name>.toml` `description` |
//! | `tool:<name>:error:<key>` | `tools/<name>.toml` `[errors]` |
//! | `message:<key>` | `messages.toml` |
//! | `reminder:<key>` | `reminders.toml` `[<key>] text` |
//! | `limit:<key>` | `agent.toml` `[limits]`; `limit:context.<key>`, `limit:guidance.<key>` and `limit:notes.<key>` for those numbers |
//! | `extensions` | `agent.toml` `extensions` (order only) |
//!
//! Edits are made in place on the file text (the value's byte span is
//! replaced), so comments and layout survive and a diff shows one change.

use std::collections::BTreeMap;
use std::fmt;
use std::ops::Range;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use toml::Spanned;

use crate::error::MetaError;

/// Sections of `agent.toml` whose numbers are `limit:` parts.
const LIMIT_SECTIONS: &[&str] = &["limits", "context", "guidance", "notes"];

/// The `[notes]` numbers that shape what sessions see and what learning
/// costs; the job queue's lease and attempts are plumbing, not tuning.
const NOTES_LIMITS: &[&str] = &[
    "retrieval_budget_chars",
    "max_notes_shown",
    "inline_chars",
    "code_chars",
    "min_score",
    "distill_max_iterations",
    "triage_max_calls",
];

/// The prompt section of the note-taker (`prompts.note_taker`).
const NOTE_TAKER: &str = "note_taker";

/// One changeable part.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Part {
    Prompt(String),
    ToolDescription(String),
    ToolError {
        tool: String,
        key: String,
    },
    Message(String),
    Reminder(String),
    /// `section` is `limits`, `context`, `guidance` or `notes`.
    Limit {
        section: String,
        key: String,
    },
    Extensions,
}

impl fmt::Display for Part {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Part::Prompt(s) => write!(f, "prompt:{s}"),
            Part::ToolDescription(t) => write!(f, "tool:{t}:description"),
            Part::ToolError { tool, key } => write!(f, "tool:{tool}:error:{key}"),
            Part::Message(k) => write!(f, "message:{k}"),
            Part::Reminder(k) => write!(f, "reminder:{k}"),
            Part::Limit { section, key } if section == "limits" => write!(f, "limit:{key}"),
            Part::Limit { section, key } => write!(f, "limit:{section}.{key}"),
            Part::Extensions => f.write_str("extensions"),
        }
    }
}

impl Part {
    /// A part that only matters when sessions see notes and a note-taker
    /// learns: the note-taker's prompt, its tools and the `[notes]` numbers.
    pub fn is_notes(&self) -> bool {
        match self {
            Part::Prompt(section) => section == NOTE_TAKER,
            Part::Limit { section, .. } => section == "notes",
            Part::ToolDescription(tool) | Part::ToolError { tool, .. } => {
                NOTE_TAKER_TOOLS.contains(&tool.as_str())
            }
            Part::Message(key) => key.starts_with("notes_"),
            _ => false,
        }
    }
}

/// The note-taker's own tools (`prompts/note_taker.md` drives them).
const NOTE_TAKER_TOOLS: &[&str] = &[
    "note_create",
    "note_done",
    "note_read",
    "note_search",
    "note_supersede",
    "note_update",
];

impl std::str::FromStr for Part {
    type Err = MetaError;

    fn from_str(id: &str) -> Result<Part, MetaError> {
        let unknown = || MetaError::UnknownPart(id.to_string());
        let id = id.trim();
        if id == "extensions" {
            return Ok(Part::Extensions);
        }
        let (kind, rest) = id.split_once(':').ok_or_else(unknown)?;
        let name_ok = |s: &str| !s.is_empty() && !s.contains(['/', '\\', ':']) && s != "..";
        let part = match kind {
            "prompt" if name_ok(rest) => Part::Prompt(rest.into()),
            "message" if name_ok(rest) => Part::Message(rest.into()),
            "reminder" if name_ok(rest) => Part::Reminder(rest.into()),
            "limit" => match rest.split_once('.') {
                Some((section, key)) if LIMIT_SECTIONS.contains(&section) && name_ok(key) => {
                    Part::Limit {
                        section: section.into(),
                        key: key.into(),
                    }
                }
                None if name_ok(rest) => Part::Limit {
                    section: "limits".into(),
                    key: rest.into(),
                },
                _ => return Err(unknown()),
            },
            "tool" => {
                let mut it = rest.splitn(3, ':');
                match (it.next(), it.next(), it.next()) {
                    (Some(t), Some("description"), None) if name_ok(t) => {
                        Part::ToolDescription(t.into())
                    }
                    (Some(t), Some("error"), Some(k)) if name_ok(t) && name_ok(k) => {
                        Part::ToolError {
                            tool: t.into(),
                            key: k.into(),
                        }
                    }
                    _ => return Err(unknown()),
                }
            }
            _ => return Err(unknown()),
        };
        Ok(part)
    }
}

/// A part's value: text, a number (limits) or an order (extensions).
#[derive(Debug, Clone, PartialEq)]
pub enum PartValue {
    Text(String),
    Number(toml::Value),
    Order(Vec<String>),
}

impl PartValue {
    /// As shown to the meta model and in diffs.
    pub fn display(&self) -> String {
        match self {
            PartValue::Text(t) => t.clone(),
            PartValue::Number(v) => v.to_string(),
            PartValue::Order(names) => names.join(", "),
        }
    }
}

#[derive(Debug, Deserialize)]
struct AgentSpans {
    extensions: Spanned<Vec<String>>,
    #[serde(default)]
    limits: BTreeMap<String, Spanned<toml::Value>>,
    #[serde(default)]
    context: BTreeMap<String, Spanned<toml::Value>>,
    #[serde(default)]
    guidance: BTreeMap<String, Spanned<toml::Value>>,
    #[serde(default)]
    notes: BTreeMap<String, Spanned<toml::Value>>,
    prompts: PromptPaths,
    #[serde(default)]
    tools_dir: Option<String>,
    #[serde(default)]
    messages: Option<String>,
    #[serde(default)]
    reminders: Option<String>,
}

#[derive(Debug, Deserialize)]
struct PromptPaths {
    system: Vec<String>,
    task: String,
    #[serde(default)]
    note_taker: Option<String>,
}

#[derive(Debug, Deserialize)]
struct ToolSpans {
    description: Spanned<String>,
    #[serde(default)]
    errors: BTreeMap<String, Spanned<String>>,
}

#[derive(Debug, Deserialize)]
struct ReminderSpans {
    text: Spanned<String>,
}

/// An agent folder read for its parts.
#[derive(Debug)]
pub struct AgentFiles {
    dir: PathBuf,
    agent: AgentSpans,
    agent_text: String,
}

fn read(path: &Path) -> Result<String, MetaError> {
    std::fs::read_to_string(path).map_err(|e| MetaError::io(path, e))
}

fn parse<T: serde::de::DeserializeOwned>(text: &str, path: &Path) -> Result<T, MetaError> {
    toml::from_str(text).map_err(|e| MetaError::File {
        path: path.to_path_buf(),
        message: e.message().trim().to_string(),
    })
}

/// Writes `text` to `path` through a temporary file and a rename, so a
/// reader never sees half a file.
pub fn write_atomic(path: &Path, text: &[u8]) -> Result<(), MetaError> {
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).map_err(|e| MetaError::io(dir, e))?;
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = dir.join(format!(".{name}.tmp-{}", std::process::id()));
    std::fs::write(&tmp, text).map_err(|e| MetaError::io(&tmp, e))?;
    std::fs::rename(&tmp, path).map_err(|e| MetaError::io(path, e))
}

fn splice(text: &str, span: Range<usize>, with: &str) -> String {
    format!("{}{with}{}", &text[..span.start], &text[span.end..])
}

/// A TOML literal for a string (escaped, valid anywhere a value goes).
fn toml_string(text: &str) -> String {
    toml::Value::String(text.to_string()).to_string()
}

impl AgentFiles {
    pub fn open(dir: &Path) -> Result<AgentFiles, MetaError> {
        let path = dir.join("agent.toml");
        let agent_text = read(&path)?;
        let agent = parse(&agent_text, &path)?;
        Ok(AgentFiles {
            dir: dir.to_path_buf(),
            agent,
            agent_text,
        })
    }

    fn tools_dir(&self) -> PathBuf {
        self.dir
            .join(self.agent.tools_dir.as_deref().unwrap_or("tools"))
    }

    fn messages_path(&self) -> PathBuf {
        self.dir
            .join(self.agent.messages.as_deref().unwrap_or("messages.toml"))
    }

    fn reminders_path(&self) -> PathBuf {
        self.dir
            .join(self.agent.reminders.as_deref().unwrap_or("reminders.toml"))
    }

    fn prompt_path(&self, section: &str) -> Option<PathBuf> {
        if section == "task" {
            return Some(self.dir.join(&self.agent.prompts.task));
        }
        if section == NOTE_TAKER {
            return self
                .agent
                .prompts
                .note_taker
                .as_ref()
                .map(|rel| self.dir.join(rel));
        }
        self.agent
            .prompts
            .system
            .iter()
            .find(|rel| Path::new(rel).file_stem().is_some_and(|s| s == section))
            .map(|rel| self.dir.join(rel))
    }

    fn tool(&self, name: &str) -> Result<(PathBuf, String, ToolSpans), MetaError> {
        let path = self.tools_dir().join(format!("{name}.toml"));
        let text = read(&path)?;
        let spans = parse(&text, &path)?;
        Ok((path, text, spans))
    }

    /// Every part of the folder, in a stable order.
    pub fn parts(&self) -> Result<Vec<Part>, MetaError> {
        let mut parts = Vec::new();
        for rel in &self.agent.prompts.system {
            if let Some(stem) = Path::new(rel).file_stem() {
                parts.push(Part::Prompt(stem.to_string_lossy().into_owned()));
            }
        }
        parts.push(Part::Prompt("task".into()));
        if self.agent.prompts.note_taker.is_some() {
            parts.push(Part::Prompt(NOTE_TAKER.into()));
        }
        let mut tools: Vec<String> = match std::fs::read_dir(self.tools_dir()) {
            Ok(entries) => entries
                .filter_map(Result::ok)
                .filter_map(|e| e.file_name().into_string().ok())
                .filter_map(|n| n.strip_suffix(".toml").map(str::to_string))
                .collect(),
            Err(_) => Vec::new(),
        };
        tools.sort();
        for tool in tools {
            let (_, _, spans) = self.tool(&tool)?;
            parts.push(Part::ToolDescription(tool.clone()));
            for key in spans.errors.keys() {
                parts.push(Part::ToolError {
                    tool: tool.clone(),
                    key: key.clone(),
                });
            }
        }
        let path = self.messages_path();
        let messages: BTreeMap<String, toml::Value> = parse(&read(&path)?, &path)?;
        parts.extend(
            messages
                .iter()
                .filter(|(_, v)| v.is_str())
                .map(|(k, _)| Part::Message(k.clone())),
        );
        let path = self.reminders_path();
        if path.is_file() {
            let reminders: BTreeMap<String, ReminderSpans> = parse(&read(&path)?, &path)?;
            parts.extend(reminders.keys().map(|k| Part::Reminder(k.clone())));
        }
        for section in LIMIT_SECTIONS {
            for (key, value) in self.limit_section(section) {
                let tunable = *section != "notes" || NOTES_LIMITS.contains(&key.as_str());
                if tunable && (value.get_ref().is_integer() || value.get_ref().is_float()) {
                    parts.push(Part::Limit {
                        section: (*section).into(),
                        key: key.clone(),
                    });
                }
            }
        }
        parts.push(Part::Extensions);
        Ok(parts)
    }

    fn limit_section(&self, section: &str) -> &BTreeMap<String, Spanned<toml::Value>> {
        match section {
            "context" => &self.agent.context,
            "guidance" => &self.agent.guidance,
            "notes" => &self.agent.notes,
            _ => &self.agent.limits,
        }
    }

    /// The current value of a part.
    pub fn get(&self, part: &Part) -> Result<PartValue, MetaError> {
        let missing = || MetaError::part(part, "not in this agent folder");
        Ok(match part {
            Part::Prompt(section) => {
                let path = self.prompt_path(section).ok_or_else(missing)?;
                PartValue::Text(read(&path)?)
            }
            Part::ToolDescription(tool) => {
                let (_, _, spans) = self.tool(tool).map_err(|_| missing())?;
                PartValue::Text(spans.description.into_inner())
            }
            Part::ToolError { tool, key } => {
                let (_, _, mut spans) = self.tool(tool).map_err(|_| missing())?;
                let text = spans.errors.remove(key).ok_or_else(missing)?;
                PartValue::Text(text.into_inner())
            }
            Part::Message(key) => {
                let path = self.messages_path();
                let mut all: BTreeMap<String, toml::Value> = parse(&read(&path)?, &path)?;
                match all.remove(key) {
                    Some(toml::Value::String(s)) => PartValue::Text(s),
                    _ => return Err(missing()),
                }
            }
            Part::Reminder(key) => {
                let path = self.reminders_path();
                let mut all: BTreeMap<String, ReminderSpans> = parse(&read(&path)?, &path)?;
                PartValue::Text(all.remove(key).ok_or_else(missing)?.text.into_inner())
            }
            Part::Limit { section, key } => {
                let value = self.limit_section(section).get(key).ok_or_else(missing)?;
                PartValue::Number(value.get_ref().clone())
            }
            Part::Extensions => PartValue::Order(self.agent.extensions.get_ref().clone()),
        })
    }

    /// Writes a new value of `part` into the folder (atomically per file).
    /// A limit must stay the same kind of number and positive; the
    /// extensions must form a list a session can run
    /// ([`quire_session::extension_list_problems`]).
    pub fn set(&self, part: &Part, value: &PartValue) -> Result<(), MetaError> {
        let missing = || MetaError::part(part, "not in this agent folder");
        let text_of = |v: &PartValue| match v {
            PartValue::Text(t) => Ok(t.clone()),
            _ => Err(MetaError::part(part, "expects text")),
        };
        match part {
            Part::Prompt(section) => {
                let path = self.prompt_path(section).ok_or_else(missing)?;
                write_atomic(&path, text_of(value)?.as_bytes())
            }
            Part::ToolDescription(tool) => {
                let (path, text, spans) = self.tool(tool).map_err(|_| missing())?;
                let new = splice(
                    &text,
                    spans.description.span(),
                    &toml_string(&text_of(value)?),
                );
                write_atomic(&path, new.as_bytes())
            }
            Part::ToolError { tool, key } => {
                let (path, text, spans) = self.tool(tool).map_err(|_| missing())?;
                let span = spans.errors.get(key).ok_or_else(missing)?.span();
                let new = splice(&text, span, &toml_string(&text_of(value)?));
                write_atomic(&path, new.as_bytes())
            }
            Part::Message(key) => {
                let path = self.messages_path();
                let text = read(&path)?;
                let spans: BTreeMap<String, Spanned<toml::Value>> = parse(&text, &path)?;
                let span = spans.get(key).ok_or_else(missing)?.span();
                let new = splice(&text, span, &toml_string(&text_of(value)?));
                write_atomic(&path, new.as_bytes())
            }
            Part::Reminder(key) => {
                let path = self.reminders_path();
                let text = read(&path)?;
                let spans: BTreeMap<String, ReminderSpans> = parse(&text, &path)?;
                let span = spans.get(key).ok_or_else(missing)?.text.span();
                let new = splice(&text, span, &toml_string(&text_of(value)?));
                write_atomic(&path, new.as_bytes())
            }
            Part::Limit { section, key } => {
                let old = self.limit_section(section).get(key).ok_or_else(missing)?;
                let PartValue::Number(new) = value else {
                    return Err(MetaError::part(part, "expects a number"));
                };
                let literal = match (old.get_ref(), new) {
                    (toml::Value::Integer(_), toml::Value::Integer(n)) if *n > 0 => n.to_string(),
                    (toml::Value::Integer(_), toml::Value::Float(f))
                        if *f > 0.0 && f.fract() == 0.0 && *f < 1e15 =>
                    {
                        (*f as i64).to_string()
                    }
                    (toml::Value::Float(_), toml::Value::Float(f)) if f.is_finite() && *f > 0.0 => {
                        toml::Value::Float(*f).to_string()
                    }
                    (toml::Value::Float(_), toml::Value::Integer(n)) if *n > 0 => {
                        format!("{n}.0")
                    }
                    _ => {
                        return Err(MetaError::part(
                            part,
                            format!(
                                "{new} is not a positive number of the same kind as {}",
                                old.get_ref()
                            ),
                        ));
                    }
                };
                let new = splice(&self.agent_text, old.span(), &literal);
                write_atomic(&self.dir.join("agent.toml"), new.as_bytes())
            }
            Part::Extensions => {
                let PartValue::Order(order) = value else {
                    return Err(MetaError::part(part, "expects a list of extension names"));
                };
                let problems = quire_session::extension_list_problems(order);
                if !problems.is_empty() {
                    return Err(MetaError::part(part, problems.join("; ")));
                }
                let literal = format!(
                    "[{}]",
                    order
                        .iter()
                        .map(|n| toml_string(n))
                        .collect::<Vec<_>>()
                        .join(", ")
                );
                let new = splice(&self.agent_text, self.agent.extensions.span(), &literal);
                write_atomic(&self.dir.join("agent.toml"), new.as_bytes())
            }
        }
    }
}

/// The `{placeholder}` names in a template (`{{` and `}}` are literal braces).
pub fn placeholders(text: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut rest = text;
    while let Some(pos) = rest.find(['{', '}']) {
        let tail = &rest[pos..];
        if tail.starts_with("{{") || tail.starts_with("}}") {
            rest = &tail[2..];
        } else if let Some(inner) = tail.strip_prefix('{') {
            match inner.find(['}', '{']) {
                Some(end) if inner[end..].starts_with('}') => {
                    let name = &inner[..end];
                    if !name.is_empty()
                        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                        && !found.iter().any(|f| f == name)
                    {
                        found.push(name.to_string());
                    }
                    rest = &inner[end + 1..];
                }
                _ => rest = inner,
            }
        } else {
            rest = &tail[1..];
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(crate) fn default_agent(dir: &Path) {
        for (rel, text) in quire_config::builtin_agent_files() {
            let path = dir.join(rel);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        }
    }

    #[test]
    fn ids_round_trip() {
        for id in [
            "prompt:workflow",
            "tool:edit_file:description",
            "tool:edit_file:error:no_match",
            "message:no_tool_call",
            "reminder:loop_detected",
            "limit:max_iterations",
            "limit:context.budget_tokens",
            "extensions",
        ] {
            let part: Part = id.parse().unwrap();
            assert_eq!(part.to_string(), id);
        }
        for bad in ["prompt:", "tool:x", "limit:models.x", "prompt:../x", "nope"] {
            assert!(bad.parse::<Part>().is_err(), "{bad}");
        }
    }

    #[test]
    fn notes_parts_are_addressable_and_marked() {
        let dir = tempfile::tempdir().unwrap();
        default_agent(dir.path());
        let files = AgentFiles::open(dir.path()).unwrap();
        let parts = files.parts().unwrap();
        for id in [
            "prompt:note_taker",
            "limit:notes.inline_chars",
            "limit:notes.min_score",
            "tool:note_create:description",
        ] {
            let part: Part = id.parse().unwrap();
            assert_eq!(part.to_string(), id);
            assert!(parts.contains(&part), "{id} missing");
            assert!(part.is_notes(), "{id} is a notes part");
        }
        // Plumbing of the job queue is not offered for tuning.
        assert!(!parts.contains(&"limit:notes.job_lease_secs".parse().unwrap()));
        assert!(!Part::Prompt("workflow".into()).is_notes());
        assert!(!"limit:max_iterations".parse::<Part>().unwrap().is_notes());

        let prompt = Part::Prompt("note_taker".into());
        let PartValue::Text(text) = files.get(&prompt).unwrap() else {
            panic!("the note-taker prompt is text")
        };
        assert!(text.contains("note"), "{text}");
        files
            .set(&prompt, &PartValue::Text("Write one map note.".into()))
            .unwrap();
        assert_eq!(
            std::fs::read_to_string(dir.path().join("prompts/note_taker.md")).unwrap(),
            "Write one map note."
        );
        let min_score: Part = "limit:notes.min_score".parse().unwrap();
        files
            .set(&min_score, &PartValue::Number(toml::Value::Float(25.5)))
            .unwrap();
        let files = AgentFiles::open(dir.path()).unwrap();
        assert_eq!(
            files.get(&min_score).unwrap(),
            PartValue::Number(toml::Value::Float(25.5))
        );
        // The edited folder still loads as an agent with the new number.
        let config = quire_config::Loader::default()
            .load(&quire_config::AgentSource::Dir(dir.path().to_path_buf()))
            .unwrap();
        assert_eq!(config.notes.min_score, 25.5);
    }

    #[test]
    fn every_part_reads_and_edits_in_place() {
        let dir = tempfile::tempdir().unwrap();
        default_agent(dir.path());
        let files = AgentFiles::open(dir.path()).unwrap();
        let parts = files.parts().unwrap();
        for id in [
            "prompt:identity",
            "prompt:task",
            "tool:edit_file:error:no_match",
            "message:no_tool_call",
            "reminder:loop_detected",
            "limit:max_iterations",
            "limit:guidance.loop_warn",
            "extensions",
        ] {
            assert!(parts.contains(&id.parse().unwrap()), "{id} missing");
        }
        let before = std::fs::read_to_string(dir.path().join("tools/edit_file.toml")).unwrap();
        let part: Part = "tool:edit_file:error:no_match".parse().unwrap();
        let new = "No match in `{path}`.\nClosest:\n{nearest}\n\"Quote\" it exactly.";
        files.set(&part, &PartValue::Text(new.into())).unwrap();
        let after = std::fs::read_to_string(dir.path().join("tools/edit_file.toml")).unwrap();
        assert_eq!(
            AgentFiles::open(dir.path()).unwrap().get(&part).unwrap(),
            PartValue::Text(new.into())
        );
        // Only that value changed: every other line (comments too) is kept.
        let lost: Vec<&str> = before
            .lines()
            .filter(|l| !after.lines().any(|a| a == *l))
            .collect();
        assert_eq!(lost.len(), 1, "{lost:?}");
        assert!(lost[0].starts_with("no_match = "), "{lost:?}");

        let limit: Part = "limit:max_iterations".parse().unwrap();
        files
            .set(&limit, &PartValue::Number(toml::Value::Integer(12)))
            .unwrap();
        let files = AgentFiles::open(dir.path()).unwrap();
        assert_eq!(
            files.get(&limit).unwrap(),
            PartValue::Number(toml::Value::Integer(12))
        );
        assert!(
            files
                .set(&limit, &PartValue::Number(toml::Value::Integer(-1)))
                .is_err()
        );
        let PartValue::Order(mut order) = files.get(&Part::Extensions).unwrap() else {
            panic!()
        };
        // Another order that keeps `context` before the request shapers.
        order.rotate_right(1);
        assert_eq!(order[0], "guidance");
        files
            .set(&Part::Extensions, &PartValue::Order(order.clone()))
            .unwrap();
        let files = AgentFiles::open(dir.path()).unwrap();
        assert_eq!(
            files.get(&Part::Extensions).unwrap(),
            PartValue::Order(order.clone())
        );
        // Which extensions run may change too, within what an agent needs.
        let fewer: Vec<String> = order.iter().filter(|e| *e != "memory").cloned().collect();
        files
            .set(&Part::Extensions, &PartValue::Order(fewer.clone()))
            .unwrap();
        let files = AgentFiles::open(dir.path()).unwrap();
        assert_eq!(
            files.get(&Part::Extensions).unwrap(),
            PartValue::Order(fewer)
        );
        for (bad, why) in [
            (vec!["context"], "`protocol` is required"),
            (
                vec!["protocol", "workspace_tools", "finish", "telepathy"],
                "unknown extension `telepathy`",
            ),
            (
                vec!["protocol", "workspace_tools", "finish", "finish"],
                "`finish` is listed twice",
            ),
            (
                vec!["memory", "context", "protocol", "workspace_tools", "finish"],
                "must come before `memory`",
            ),
        ] {
            let bad: Vec<String> = bad.into_iter().map(String::from).collect();
            let err = files
                .set(&Part::Extensions, &PartValue::Order(bad))
                .unwrap_err()
                .to_string();
            assert!(err.contains(why), "{err}");
        }
        let reminder: Part = "reminder:loop_detected".parse().unwrap();
        files
            .set(
                &reminder,
                &PartValue::Text("Stop looping on {tool}.".into()),
            )
            .unwrap();
        let message: Part = "message:no_tool_call".parse().unwrap();
        files
            .set(&message, &PartValue::Text("Call a tool.".into()))
            .unwrap();
        // Still a valid agent.
        let config = quire_config::Loader::default()
            .load(&quire_config::AgentSource::Dir(dir.path().to_path_buf()))
            .unwrap();
        assert_eq!(config.limits.max_iterations, 12);
        assert_eq!(config.message("no_tool_call"), "Call a tool.");
        assert_eq!(
            config.reminders["loop_detected"].text,
            "Stop looping on {tool}."
        );
        assert!(
            config
                .tool_error("edit_file", "no_match")
                .contains("\"Quote\"")
        );
    }

    #[test]
    fn placeholders_are_found() {
        assert_eq!(
            placeholders("a {path} b {{lit}} {nearest} {path} {bad name}"),
            vec!["path", "nearest"]
        );
    }
}
