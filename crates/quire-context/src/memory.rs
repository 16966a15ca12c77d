//! The `memory` extension: a per-session tree of Markdown notes the agent
//! keeps with four tools, indexed at the end of every request so what it
//! learnt survives compaction.

use std::collections::BTreeMap;
use std::path::{Component, Path, PathBuf};

use async_trait::async_trait;
use quire_config::{AgentConfig, ToolTexts, render};
use quire_core::{Action, CoreError, Ctx, Extension, ToolOutput};
use quire_types::{Message, ModelRequest};

use crate::error::ContextError;

const WRITE: &str = "memory_write";
const READ: &str = "memory_read";
const LIST: &str = "memory_list";
const DELETE: &str = "memory_delete";
/// The tools of [`MemoryExtension`], for config checks.
pub const MEMORY_TOOLS: &[&str] = &[WRITE, READ, LIST, DELETE];
/// The `[errors]` keys each memory tool renders (checked when a config loads).
pub const MEMORY_TEXTS: &[ToolTexts] = &[
    ToolTexts {
        tool: WRITE,
        errors: &["saved", "bad_path", "empty", "io"],
    },
    ToolTexts {
        tool: READ,
        errors: &["bad_path", "not_found", "io"],
    },
    ToolTexts {
        tool: LIST,
        errors: &["empty", "io"],
    },
    ToolTexts {
        tool: DELETE,
        errors: &["deleted", "bad_path", "not_found", "io"],
    },
];

/// Descriptions given to `memory_write`, keyed by note path. Hidden from the
/// tree (a leading dot).
const DESCRIPTIONS: &str = ".descriptions.json";
/// Index descriptions are cut here: one line each.
const DESCRIPTION_MAX: usize = 100;

/// One note in the index.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemoryEntry {
    /// Relative, `/`-separated.
    pub path: String,
    pub description: String,
}

/// The notes folder of one session (`<data home>/sessions/<id>/memory/`).
#[derive(Debug, Clone)]
pub struct MemoryStore {
    dir: PathBuf,
}

impl MemoryStore {
    pub fn new(dir: impl Into<PathBuf>) -> MemoryStore {
        MemoryStore { dir: dir.into() }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The guard: a relative path of plain names, no `..`, no absolute or
    /// hidden parts, so a note can never land outside the folder.
    fn resolve(&self, raw: &str) -> Result<(String, PathBuf), ContextError> {
        let bad = || ContextError::BadPath(raw.to_string());
        let trimmed = raw.trim().trim_start_matches("./");
        if trimmed.is_empty() || trimmed.contains('\\') {
            return Err(bad());
        }
        let mut parts = Vec::new();
        for component in Path::new(trimmed).components() {
            match component {
                Component::Normal(name) => {
                    let name = name.to_str().ok_or_else(bad)?;
                    if name.starts_with('.') {
                        return Err(bad());
                    }
                    parts.push(name.to_string());
                }
                _ => return Err(bad()),
            }
        }
        let rel = parts.join("/");
        let abs = parts.iter().fold(self.dir.clone(), |p, n| p.join(n));
        Ok((rel, abs))
    }

    fn io(path: &str, source: std::io::Error) -> ContextError {
        ContextError::Io {
            path: path.to_string(),
            source,
        }
    }

    fn descriptions(&self) -> BTreeMap<String, String> {
        std::fs::read_to_string(self.dir.join(DESCRIPTIONS))
            .ok()
            .and_then(|text| serde_json::from_str(&text).ok())
            .unwrap_or_default()
    }

    fn save_descriptions(&self, map: &BTreeMap<String, String>) -> Result<(), ContextError> {
        let text = serde_json::to_string_pretty(map).unwrap_or_else(|_| "{}".into());
        write_atomic(&self.dir.join(DESCRIPTIONS), &text).map_err(|e| Self::io(DESCRIPTIONS, e))
    }

    /// Writes a note (replacing it) and its index description.
    pub fn write(
        &self,
        raw: &str,
        content: &str,
        description: Option<&str>,
    ) -> Result<String, ContextError> {
        let (rel, abs) = self.resolve(raw)?;
        if abs.is_dir() {
            return Err(ContextError::BadPath(raw.to_string()));
        }
        write_atomic(&abs, content).map_err(|e| Self::io(&rel, e))?;
        let mut map = self.descriptions();
        let given = description.map(str::trim).filter(|d| !d.is_empty());
        let changed = match given {
            Some(d) => map.insert(rel.clone(), one_line(d)).as_deref() != Some(&one_line(d)),
            None => map.remove(&rel).is_some(),
        };
        if changed {
            self.save_descriptions(&map)?;
        }
        Ok(rel)
    }

    /// A note's text; `None` when there is no such note.
    pub fn read(&self, raw: &str) -> Result<Option<String>, ContextError> {
        let (rel, abs) = self.resolve(raw)?;
        match std::fs::read_to_string(&abs) {
            Ok(text) => Ok(Some(text)),
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(err) => Err(Self::io(&rel, err)),
        }
    }

    /// Deletes a note; `false` when there was none.
    pub fn delete(&self, raw: &str) -> Result<bool, ContextError> {
        let (rel, abs) = self.resolve(raw)?;
        if !abs.is_file() {
            return Ok(false);
        }
        std::fs::remove_file(&abs).map_err(|e| Self::io(&rel, e))?;
        let mut map = self.descriptions();
        if map.remove(&rel).is_some() {
            self.save_descriptions(&map)?;
        }
        // Empty folders left behind would only clutter the tree.
        let mut parent = abs.parent();
        while let Some(dir) = parent {
            if dir == self.dir || std::fs::remove_dir(dir).is_err() {
                break;
            }
            parent = dir.parent();
        }
        Ok(true)
    }

    /// Every note, sorted by path, with its description (the one given, else
    /// its first non-empty line). A missing folder is an empty memory.
    pub fn entries(&self) -> Result<Vec<MemoryEntry>, ContextError> {
        let mut files = Vec::new();
        collect(&self.dir, "", &mut files).map_err(|e| Self::io(".", e))?;
        files.sort();
        let given = self.descriptions();
        Ok(files
            .into_iter()
            .map(|path| {
                let description = given.get(&path).cloned().unwrap_or_else(|| {
                    let abs = path.split('/').fold(self.dir.clone(), |p, n| p.join(n));
                    std::fs::read_to_string(abs)
                        .map(|text| first_line(&text))
                        .unwrap_or_default()
                });
                MemoryEntry { path, description }
            })
            .collect())
    }

    /// Unchecked Markdown task items (`- [ ] …`) across all notes, as
    /// `path: item` lines.
    pub fn open_items(&self) -> Vec<String> {
        let Ok(entries) = self.entries() else {
            return Vec::new();
        };
        let mut items = Vec::new();
        for entry in entries {
            let Ok(Some(text)) = self.read(&entry.path) else {
                continue;
            };
            for line in text.lines() {
                let t = line.trim_start();
                if let Some(item) = t.strip_prefix("- [ ]").or_else(|| t.strip_prefix("* [ ]")) {
                    items.push(format!("{}: {}", entry.path, item.trim()));
                }
            }
        }
        items
    }
}

fn collect(dir: &Path, prefix: &str, out: &mut Vec<String>) -> std::io::Result<()> {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(err) => return Err(err),
    };
    for entry in entries {
        let entry = entry?;
        let Ok(name) = entry.file_name().into_string() else {
            continue;
        };
        if name.starts_with('.') {
            continue;
        }
        let rel = if prefix.is_empty() {
            name.clone()
        } else {
            format!("{prefix}/{name}")
        };
        let kind = entry.file_type()?;
        if kind.is_dir() {
            collect(&entry.path(), &rel, out)?;
        } else if kind.is_file() {
            out.push(rel);
        }
    }
    Ok(())
}

fn one_line(text: &str) -> String {
    let line = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if line.chars().count() <= DESCRIPTION_MAX {
        return line;
    }
    let cut: String = line.chars().take(DESCRIPTION_MAX).collect();
    format!("{cut}…")
}

/// The first non-empty line, without Markdown heading marks.
fn first_line(text: &str) -> String {
    text.lines()
        .map(|l| l.trim().trim_start_matches('#').trim())
        .find(|l| !l.is_empty())
        .map(one_line)
        .unwrap_or_default()
}

fn write_atomic(path: &Path, text: &str) -> std::io::Result<()> {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)?;
    }
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".tmp");
    let tmp = PathBuf::from(tmp);
    std::fs::write(&tmp, text)?;
    std::fs::rename(&tmp, path)
}

/// The index as the model reads it, or `None` when memory is empty.
pub fn render_index(config: &AgentConfig, entries: &[MemoryEntry]) -> Option<String> {
    if entries.is_empty() {
        return None;
    }
    let lines: Vec<String> = entries
        .iter()
        .map(|e| {
            render(
                config.message("memory_index_entry"),
                &[("path", &e.path), ("description", &e.description)],
            )
        })
        .collect();
    Some(
        render(
            config.message("memory_index"),
            &[("entries", &lines.join("\n"))],
        )
        .trim()
        .to_string(),
    )
}

/// `memory_write`, `memory_read`, `memory_list`, `memory_delete`, and the
/// index at the end of every request.
pub struct MemoryExtension {
    store: MemoryStore,
}

impl MemoryExtension {
    /// The extension name used in agent.toml `extensions`.
    pub const NAME: &'static str = "memory";

    pub fn new(store: MemoryStore) -> MemoryExtension {
        MemoryExtension { store }
    }

    fn text(config: &AgentConfig, tool: &str, key: &str, vars: &[(&str, &str)]) -> String {
        render(config.tool_error(tool, key), vars)
    }

    fn failure(config: &AgentConfig, tool: &str, raw: &str, err: &ContextError) -> ToolOutput {
        let message = match err {
            ContextError::BadPath(_) => Self::text(config, tool, "bad_path", &[("path", raw)]),
            ContextError::Io { source, .. } => Self::text(
                config,
                tool,
                "io",
                &[("path", raw), ("error", &source.to_string())],
            ),
        };
        ToolOutput::error(message)
    }

    fn note_names(&self) -> String {
        let names: Vec<String> = self
            .store
            .entries()
            .unwrap_or_default()
            .into_iter()
            .map(|e| e.path)
            .collect();
        if names.is_empty() {
            "none".into()
        } else {
            names.join(", ")
        }
    }
}

fn str_arg<'a>(action: &'a Action, key: &str) -> Option<&'a str> {
    action.args.get(key).and_then(|v| v.as_str())
}

#[async_trait]
impl Extension for MemoryExtension {
    fn name(&self) -> &str {
        Self::NAME
    }

    fn tools(&self) -> Vec<&'static str> {
        MEMORY_TOOLS.to_vec()
    }

    /// The index goes last, as a user message of this request only: the
    /// conversation before it (the cached prefix) stays as it was.
    async fn on_input_messages(
        &self,
        ctx: &mut Ctx,
        request: &mut ModelRequest,
    ) -> Result<(), CoreError> {
        let entries = match self.store.entries() {
            Ok(entries) => entries,
            Err(err) => {
                tracing::warn!(%err, "working memory could not be listed");
                return Ok(());
            }
        };
        if let Some(index) = render_index(&ctx.config, &entries) {
            request.messages.push(Message::user(index));
        }
        Ok(())
    }

    async fn execute(&self, ctx: &mut Ctx, action: &Action) -> ToolOutput {
        let config = ctx.config.clone();
        let tool = action.call.name.as_str();
        let path = str_arg(action, "path").unwrap_or("");
        match tool {
            WRITE => {
                let content = str_arg(action, "content").unwrap_or("");
                if content.trim().is_empty() {
                    return ToolOutput::error(Self::text(&config, tool, "empty", &[]));
                }
                match self
                    .store
                    .write(path, content, str_arg(action, "description"))
                {
                    Ok(rel) => {
                        let chars = content.chars().count().to_string();
                        let text = Self::text(
                            &config,
                            tool,
                            "saved",
                            &[("path", &rel), ("chars", &chars)],
                        );
                        ToolOutput::ok(text.clone(), format!("{text}\n{content}"))
                    }
                    Err(err) => Self::failure(&config, tool, path, &err),
                }
            }
            READ => match self.store.read(path) {
                Ok(Some(text)) => ToolOutput::ok(text.clone(), text),
                Ok(None) => ToolOutput::error(Self::text(
                    &config,
                    tool,
                    "not_found",
                    &[("path", path), ("notes", &self.note_names())],
                )),
                Err(err) => Self::failure(&config, tool, path, &err),
            },
            LIST => match self.store.entries() {
                Ok(entries) => match render_index(&config, &entries) {
                    Some(index) => ToolOutput::ok(index.clone(), index),
                    None => {
                        let text = Self::text(&config, tool, "empty", &[]);
                        ToolOutput::ok(text.clone(), text)
                    }
                },
                Err(err) => Self::failure(&config, tool, path, &err),
            },
            DELETE => match self.store.delete(path) {
                Ok(true) => {
                    let text = Self::text(&config, tool, "deleted", &[("path", path)]);
                    ToolOutput::ok(text.clone(), text)
                }
                Ok(false) => ToolOutput::error(Self::text(
                    &config,
                    tool,
                    "not_found",
                    &[("path", path), ("notes", &self.note_names())],
                )),
                Err(err) => Self::failure(&config, tool, path, &err),
            },
            other => ToolOutput::error(render(
                config.message("unknown_tool"),
                &[("name", other), ("tools", &MEMORY_TOOLS.join(", "))],
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn notes_are_written_listed_described_and_deleted() {
        let dir = tempfile::tempdir().unwrap();
        let store = MemoryStore::new(dir.path().join("memory"));
        assert!(store.entries().unwrap().is_empty());
        store
            .write(
                "plan.md",
                "# Plan\n\n- [ ] fix parser\n- [x] read code\n",
                None,
            )
            .unwrap();
        store
            .write("notes/api.md", "long text", Some("What the API\n returns"))
            .unwrap();
        let entries = store.entries().unwrap();
        assert_eq!(
            entries,
            vec![
                MemoryEntry {
                    path: "notes/api.md".into(),
                    description: "What the API returns".into()
                },
                MemoryEntry {
                    path: "plan.md".into(),
                    description: "Plan".into()
                },
            ]
        );
        assert_eq!(store.open_items(), vec!["plan.md: fix parser".to_string()]);
        assert_eq!(
            store.read("./plan.md").unwrap().as_deref(),
            Some("# Plan\n\n- [ ] fix parser\n- [x] read code\n")
        );
        assert!(store.delete("notes/api.md").unwrap());
        assert!(!store.delete("notes/api.md").unwrap());
        assert!(!dir.path().join("memory/notes").exists());
        assert_eq!(store.entries().unwrap().len(), 1);
        assert_eq!(store.read("missing.md").unwrap(), None);
    }

    #[test]
    fn paths_cannot_escape_the_folder() {
        let dir = tempfile::tempdir().unwrap();
        let store = MemoryStore::new(dir.path().join("memory"));
        for bad in [
            "../x.md",
            "/etc/passwd",
            "a/../../x",
            "",
            ".descriptions.json",
            "a\\b",
        ] {
            assert!(
                matches!(store.write(bad, "x", None), Err(ContextError::BadPath(_))),
                "{bad}"
            );
        }
        assert!(!dir.path().join("x.md").exists());
    }
}
