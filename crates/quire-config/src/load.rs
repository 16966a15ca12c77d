use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use sha2::{Digest, Sha256};

use crate::error::ConfigError;
use crate::schema::{
    AgentConfig, CommandsConfig, ContextConfig, FinishConfig, GuidanceConfig, Limits, McpConfig,
    McpServerConfig, ModelConfig, NotesConfig, Pricing, PromptSection, Prompts, Reminder,
    SandboxConfig, TestsConfig, ToolRoles, ToolText,
};

mod builtin {
    include!(concat!(env!("OUT_DIR"), "/builtin.rs"));
}

/// The files of the built-in `default` agent (compiled from `agents/default/`).
pub fn builtin_agent_files() -> &'static [(&'static str, &'static str)] {
    builtin::DEFAULT_AGENT
}

/// Where an agent's files come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AgentSource {
    Dir(PathBuf),
    /// The copy of `agents/default/` compiled into the binary.
    Builtin,
}

/// Finds an agent by path or name: a folder holding `agent.toml`, else
/// `<dir>/<name>` for each search dir, else the built-in default.
pub fn locate_agent(
    name_or_path: &str,
    search_dirs: &[PathBuf],
) -> Result<AgentSource, ConfigError> {
    let direct = Path::new(name_or_path);
    if direct.join("agent.toml").is_file() {
        return Ok(AgentSource::Dir(direct.to_path_buf()));
    }
    if direct.file_name().is_some_and(|n| n == "agent.toml") && direct.is_file() {
        let dir = direct.parent().map(Path::to_path_buf).unwrap_or_default();
        return Ok(AgentSource::Dir(dir));
    }
    let is_name = !name_or_path.contains(['/', '\\']) && !name_or_path.is_empty();
    if is_name {
        for dir in search_dirs {
            let candidate = dir.join(name_or_path);
            if candidate.join("agent.toml").is_file() {
                return Ok(AgentSource::Dir(candidate));
            }
        }
        if name_or_path == "default" {
            return Ok(AgentSource::Builtin);
        }
    }
    let mut searched: Vec<String> = vec![direct.display().to_string()];
    if is_name {
        searched.extend(
            search_dirs
                .iter()
                .map(|d| d.join(name_or_path).display().to_string()),
        );
    }
    Err(ConfigError::AgentNotFound {
        name: name_or_path.to_string(),
        searched: searched.join(", "),
    })
}

/// One `key=value` override; the value is a TOML value, or a bare string.
#[derive(Debug, Clone, PartialEq)]
pub struct Override {
    pub key: String,
    pub value: String,
    /// Where it came from, for error messages (`-c`, an env var name).
    pub origin: String,
}

impl Override {
    /// Parses `key=value` as given to `-c`.
    pub fn parse(spec: &str) -> Result<Override, ConfigError> {
        let Some((key, value)) = spec.split_once('=') else {
            return Err(ConfigError::Override {
                key: spec.to_string(),
                message: "expected key=value (for example model.temperature=0.2)".into(),
            });
        };
        Ok(Override {
            key: key.trim().to_string(),
            value: value.trim().to_string(),
            origin: "-c".into(),
        })
    }

    pub fn new(key: &str, value: &str, origin: &str) -> Override {
        Override {
            key: key.into(),
            value: value.into(),
            origin: origin.into(),
        }
    }

    /// Overrides from `QUIRE__SECTION__KEY=value` variables (double
    /// underscores separate path segments; names are lower-cased).
    pub fn from_env() -> Vec<Override> {
        let mut found: Vec<Override> = std::env::vars()
            .filter_map(|(name, value)| {
                let rest = name.strip_prefix("QUIRE__")?;
                let key = rest
                    .split("__")
                    .map(str::to_ascii_lowercase)
                    .collect::<Vec<_>>()
                    .join(".");
                Some(Override {
                    key,
                    value,
                    origin: name,
                })
            })
            .collect();
        found.sort_by(|a, b| a.key.cmp(&b.key));
        found
    }

    fn toml_value(&self) -> toml::Value {
        let doc = format!("v = {}", self.value);
        match toml::from_str::<toml::Table>(&doc) {
            Ok(mut table) => table
                .remove("v")
                .unwrap_or_else(|| toml::Value::String(self.value.clone())),
            Err(_) => toml::Value::String(self.value.clone()),
        }
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct AgentFile {
    name: String,
    #[serde(default)]
    description: String,
    extensions: Vec<String>,
    model: ModelConfig,
    #[serde(default)]
    limits: Limits,
    #[serde(default)]
    context: ContextConfig,
    #[serde(default)]
    guidance: GuidanceConfig,
    #[serde(default)]
    tool_roles: ToolRoles,
    #[serde(default)]
    tests: TestsConfig,
    #[serde(default)]
    finish: FinishConfig,
    #[serde(default)]
    notes: NotesConfig,
    #[serde(default)]
    commands: CommandsConfig,
    #[serde(default)]
    sandbox: SandboxConfig,
    #[serde(default)]
    mcp: McpConfig,
    #[serde(default)]
    pricing: Pricing,
    prompts: PromptFiles,
    #[serde(default = "default_tools_dir")]
    tools_dir: String,
    #[serde(default = "default_messages")]
    messages: String,
    #[serde(default = "default_reminders")]
    reminders: String,
}

fn default_tools_dir() -> String {
    "tools".into()
}
fn default_messages() -> String {
    "messages.toml".into()
}
fn default_reminders() -> String {
    "reminders.toml".into()
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct PromptFiles {
    system: Vec<String>,
    task: String,
    text_protocol: String,
    compaction: String,
    note_taker: String,
}

/// Reads agent files from a folder or from the built-in copy.
enum Files {
    Dir(PathBuf),
    Builtin,
}

impl Files {
    fn display(&self, rel: &str) -> PathBuf {
        match self {
            Files::Dir(dir) => dir.join(rel),
            Files::Builtin => PathBuf::from(format!("<builtin default>/{rel}")),
        }
    }

    fn read(&self, rel: &str) -> Result<Option<String>, ConfigError> {
        match self {
            Files::Dir(dir) => {
                let path = dir.join(rel);
                match std::fs::read_to_string(&path) {
                    Ok(text) => Ok(Some(text)),
                    Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(None),
                    Err(source) => Err(ConfigError::Io { path, source }),
                }
            }
            Files::Builtin => Ok(builtin_agent_files()
                .iter()
                .find(|(name, _)| *name == rel)
                .map(|(_, text)| (*text).to_string())),
        }
    }

    /// Relative paths of the `.toml` files directly inside `dir`.
    fn list_toml(&self, dir: &str) -> Result<Vec<String>, ConfigError> {
        let mut names = match self {
            Files::Dir(root) => {
                let path = root.join(dir);
                let entries = match std::fs::read_dir(&path) {
                    Ok(entries) => entries,
                    Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
                    Err(source) => return Err(ConfigError::Io { path, source }),
                };
                entries
                    .filter_map(Result::ok)
                    .filter_map(|e| e.file_name().into_string().ok())
                    .filter(|n| n.ends_with(".toml"))
                    .map(|n| format!("{dir}/{n}"))
                    .collect::<Vec<_>>()
            }
            Files::Builtin => builtin_agent_files()
                .iter()
                .filter_map(|(name, _)| {
                    let rest = name.strip_prefix(dir)?.strip_prefix('/')?;
                    (!rest.contains('/') && rest.ends_with(".toml")).then(|| (*name).to_string())
                })
                .collect(),
        };
        names.sort();
        Ok(names)
    }
}

/// Loads agents with a fixed set of overrides.
#[derive(Debug, Clone, Default)]
pub struct Loader {
    overrides: Vec<Override>,
}

impl Loader {
    pub fn new(overrides: Vec<Override>) -> Loader {
        Loader { overrides }
    }

    pub fn load(&self, source: &AgentSource) -> Result<AgentConfig, ConfigError> {
        let files = match source {
            AgentSource::Dir(dir) => Files::Dir(dir.clone()),
            AgentSource::Builtin => Files::Builtin,
        };
        let agent_path = files.display("agent.toml");
        let text = files
            .read("agent.toml")?
            .ok_or_else(|| ConfigError::InvalidFile {
                path: agent_path.clone(),
                message: "agent.toml not found".into(),
            })?;
        // First with spans, so mistakes in the file are located precisely.
        let _: AgentFile = parse_located(&text, &agent_path)?;
        let mut table: toml::Table = parse_located(&text, &agent_path)?;
        for ov in &self.overrides {
            set_path(&mut table, ov)?;
            if let Err(err) = toml::Value::Table(table.clone()).try_into::<AgentFile>() {
                return Err(ConfigError::Override {
                    key: format!("{} ({})", ov.key, ov.origin),
                    message: err.message().to_string(),
                });
            }
        }
        let file: AgentFile =
            toml::Value::Table(table)
                .try_into()
                .map_err(|err: toml::de::Error| ConfigError::InvalidFile {
                    path: agent_path.clone(),
                    message: err.message().to_string(),
                })?;
        resolve(file, &files, &agent_path, source)
    }
}

fn set_path(table: &mut toml::Table, ov: &Override) -> Result<(), ConfigError> {
    let parts: Vec<&str> = ov.key.split('.').collect();
    if parts.iter().any(|p| p.is_empty()) {
        return Err(ConfigError::Override {
            key: ov.key.clone(),
            message: "empty key segment".into(),
        });
    }
    let (last, parents) = parts.split_last().ok_or_else(|| ConfigError::Override {
        key: ov.key.clone(),
        message: "empty key".into(),
    })?;
    let mut current = table;
    for part in parents {
        let entry = current
            .entry((*part).to_string())
            .or_insert_with(|| toml::Value::Table(toml::Table::new()));
        current = match entry {
            toml::Value::Table(t) => t,
            _ => {
                return Err(ConfigError::Override {
                    key: ov.key.clone(),
                    message: format!("`{part}` is a value, not a section"),
                });
            }
        };
    }
    current.insert((*last).to_string(), ov.toml_value());
    Ok(())
}

/// Parses TOML, turning errors into file:line:column.
fn parse_located<T: serde::de::DeserializeOwned>(
    text: &str,
    path: &Path,
) -> Result<T, ConfigError> {
    toml::from_str(text).map_err(|err: toml::de::Error| {
        let (line, column) = err
            .span()
            .map(|span| line_col(text, span.start))
            .unwrap_or((1, 1));
        ConfigError::Invalid {
            path: path.to_path_buf(),
            line,
            column,
            message: err.message().trim().to_string(),
        }
    })
}

fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..offset.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, column)
}

/// Reads a file named by `key` in `from`. A path that cannot be read (empty,
/// a folder, not UTF-8) is reported against `from` and `key`, since a bare
/// "Is a directory" would not say which setting is wrong.
fn read_required(files: &Files, rel: &str, key: &str, from: &Path) -> Result<String, ConfigError> {
    if rel.trim().is_empty() {
        return Err(ConfigError::InvalidFile {
            path: from.to_path_buf(),
            message: format!("`{key}` is empty: it must name a file in the agent folder"),
        });
    }
    check_inside_agent(rel, key, from)?;
    let text = files.read(rel).map_err(|err| match err {
        ConfigError::Io { path, source } => ConfigError::InvalidFile {
            path: from.to_path_buf(),
            message: format!(
                "`{key}` = {rel:?}: cannot read {}: {source}",
                path.display()
            ),
        },
        other => other,
    })?;
    text.ok_or_else(|| ConfigError::MissingFile {
        path: files.display(rel),
        key: key.to_string(),
        from: from.to_path_buf(),
    })
}

/// An agent folder is self-contained (generations copy it whole, the
/// binary embeds it): its file settings must stay inside it.
fn check_inside_agent(rel: &str, key: &str, from: &Path) -> Result<(), ConfigError> {
    let path = Path::new(rel.trim());
    let escapes = path.is_absolute()
        || path
            .components()
            .any(|c| matches!(c, std::path::Component::ParentDir));
    if rel.trim().is_empty() || escapes {
        return Err(ConfigError::InvalidFile {
            path: from.to_path_buf(),
            message: format!(
                "`{key}` = {rel:?}: it must be a relative path inside the agent folder"
            ),
        });
    }
    Ok(())
}

fn resolve(
    file: AgentFile,
    files: &Files,
    agent_path: &Path,
    source: &AgentSource,
) -> Result<AgentConfig, ConfigError> {
    if file.extensions.is_empty() {
        return Err(ConfigError::InvalidFile {
            path: agent_path.to_path_buf(),
            message: "`extensions` is empty: an agent needs at least one extension".into(),
        });
    }
    if let Some(message) = notes_problem(&file.notes) {
        return Err(ConfigError::InvalidFile {
            path: agent_path.to_path_buf(),
            message,
        });
    }
    if let Some(message) = context_problem(&file.context, &file.guidance) {
        return Err(ConfigError::InvalidFile {
            path: agent_path.to_path_buf(),
            message,
        });
    }
    if let Some(message) = mcp_problem(&file.mcp) {
        return Err(ConfigError::InvalidFile {
            path: agent_path.to_path_buf(),
            message,
        });
    }
    if file.model.model.trim().is_empty() {
        return Err(ConfigError::InvalidFile {
            path: agent_path.to_path_buf(),
            message: "`model.model` is empty".into(),
        });
    }
    let mut system = Vec::new();
    for (i, rel) in file.prompts.system.iter().enumerate() {
        let text = read_required(files, rel, &format!("prompts.system[{i}]"), agent_path)?;
        let name = Path::new(rel)
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| rel.clone());
        system.push(PromptSection { name, text });
    }
    let prompts = Prompts {
        system,
        task: read_required(files, &file.prompts.task, "prompts.task", agent_path)?,
        text_protocol: read_required(
            files,
            &file.prompts.text_protocol,
            "prompts.text_protocol",
            agent_path,
        )?,
        compaction: read_required(
            files,
            &file.prompts.compaction,
            "prompts.compaction",
            agent_path,
        )?,
        note_taker: read_required(
            files,
            &file.prompts.note_taker,
            "prompts.note_taker",
            agent_path,
        )?,
    };

    let mut tools = BTreeMap::new();
    check_inside_agent(&file.tools_dir, "tools_dir", agent_path)?;
    for rel in files.list_toml(&file.tools_dir)? {
        let text = read_required(files, &rel, "tools_dir", agent_path)?;
        let tool: ToolText = parse_located(&text, &files.display(&rel))?;
        let name = Path::new(&rel)
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        // An MCP tool's file overrides words its server supplies: the
        // schema stays the server's, a missing description is the server's.
        let mcp_tool = name.contains(MCP_TOOL_SEPARATOR);
        if mcp_tool && !tool.parameters.is_null() {
            return Err(ConfigError::InvalidFile {
                path: files.display(&rel),
                message: "`parameters`: an MCP tool's schema is its server's; this file may set only `description` and `[errors]`".into(),
            });
        }
        if !mcp_tool
            && (!tool.parameters.is_object()
                || tool.parameters.get("type").and_then(|t| t.as_str()) != Some("object"))
        {
            return Err(ConfigError::InvalidFile {
                path: files.display(&rel),
                message: "`parameters` must be a JSON schema table with type = \"object\"".into(),
            });
        }
        if !mcp_tool && tool.description.trim().is_empty() {
            return Err(ConfigError::InvalidFile {
                path: files.display(&rel),
                message: "`description` is missing or empty".into(),
            });
        }
        tools.insert(name, tool);
    }

    let messages_text = read_required(files, &file.messages, "messages", agent_path)?;
    let messages: BTreeMap<String, String> =
        parse_located(&messages_text, &files.display(&file.messages))?;
    check_inside_agent(&file.reminders, "reminders", agent_path)?;
    let reminders: BTreeMap<String, Reminder> = match files.read(&file.reminders)? {
        Some(text) => parse_located(&text, &files.display(&file.reminders))?,
        None => BTreeMap::new(),
    };

    let mut config = AgentConfig {
        name: file.name,
        description: file.description,
        dir: match source {
            AgentSource::Dir(dir) => Some(dir.clone()),
            AgentSource::Builtin => None,
        },
        hash: String::new(),
        model: file.model,
        limits: file.limits,
        context: file.context,
        guidance: file.guidance,
        tool_roles: file.tool_roles,
        tests: file.tests,
        finish: file.finish,
        notes: file.notes,
        commands: file.commands,
        sandbox: file.sandbox,
        mcp: file.mcp,
        extensions: file.extensions,
        prompts,
        tools,
        messages,
        reminders,
        pricing: file.pricing,
    };
    config.hash = config_hash(&config);
    Ok(config)
}

/// Settings that parse but cannot work together.
fn context_problem(context: &ContextConfig, guidance: &GuidanceConfig) -> Option<String> {
    let c = context;
    let fractions = [
        ("supersede_at", c.supersede_at),
        ("fade_at", c.fade_at),
        ("summary_at", c.summary_at),
    ];
    if !(c.min_gain.is_finite() && c.min_gain >= 0.0) {
        return Some(format!(
            "`context.min_gain` is {}: a fraction of context.budget_tokens, 0 or more",
            c.min_gain
        ));
    }
    if let Some((name, value)) = fractions.iter().find(|(_, v)| !(v.is_finite() && *v > 0.0)) {
        return Some(format!(
            "`context.{name}` is {value}: thresholds are positive fractions of context.budget_tokens"
        ));
    }
    if c.budget_tokens == 0 || c.budget_tokens > c.window_tokens {
        return Some(format!(
            "`context.budget_tokens` ({}) must be between 1 and context.window_tokens ({})",
            c.budget_tokens, c.window_tokens
        ));
    }
    if c.keep_recent_turns == 0 {
        return Some("`context.keep_recent_turns` must be at least 1".into());
    }
    if guidance.loop_warn == 0 || guidance.loop_stop < guidance.loop_warn {
        return Some(format!(
            "`guidance.loop_warn` ({}) must be at least 1 and at most guidance.loop_stop ({})",
            guidance.loop_warn, guidance.loop_stop
        ));
    }
    None
}

/// Joins an MCP server's name and its tool's into the name the model sees
/// (`<server>__<tool>`), so a server's name may not hold it.
pub const MCP_TOOL_SEPARATOR: &str = "__";

/// An `[mcp.servers.<name>]` setting that parses but cannot work, named by
/// its full key.
fn mcp_problem(mcp: &McpConfig) -> Option<String> {
    mcp.servers
        .iter()
        .find_map(|(name, server)| mcp_server_problem(name, server))
}

fn mcp_server_problem(name: &str, server: &McpServerConfig) -> Option<String> {
    let key = format!("mcp.servers.{name}");
    let name_ok = !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        && !name.contains(MCP_TOOL_SEPARATOR)
        && !name.ends_with('_');
    if !name_ok {
        return Some(format!(
            "`{key}`: a server name is letters, digits, `-` and single `_` (it prefixes its tools as `{name}__<tool>`)"
        ));
    }
    if server.command.trim().is_empty() {
        return Some(format!(
            "`{key}.command` is empty: it names the program to start"
        ));
    }
    if let Some(bad) = server.env.iter().find(|n| !is_env_name(n)) {
        return Some(format!(
            "`{key}.env` holds {bad:?}: list the NAMES of variables to pass through (e.g. \"GITHUB_TOKEN\"), never values"
        ));
    }
    for (field, secs) in [
        ("startup_timeout_secs", server.startup_timeout_secs),
        ("call_timeout_secs", server.call_timeout_secs),
    ] {
        if secs == 0 {
            return Some(format!("`{key}.{field}` is 0: it must be at least 1"));
        }
    }
    if let Some(both) = server
        .enabled_tools
        .iter()
        .find(|t| server.disabled_tools.contains(t))
    {
        return Some(format!(
            "`{key}`: tool `{both}` is in both enabled_tools and disabled_tools"
        ));
    }
    None
}

fn is_env_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// A `[notes]` setting that parses but cannot work.
fn notes_problem(notes: &NotesConfig) -> Option<String> {
    let m = notes.min_score;
    (!(m.is_finite() && m >= 0.0))
        .then(|| format!("`notes.min_score` is {m}: a relevance threshold, 0 or more"))
}

/// Hash over everything that shapes behaviour (not where it was loaded from).
fn config_hash(config: &AgentConfig) -> String {
    let mut hashed = config.clone();
    hashed.dir = None;
    hashed.hash = String::new();
    // Serializing plain data structures cannot fail; fall back to Debug anyway.
    let bytes = serde_json::to_vec(&hashed).unwrap_or_else(|_| format!("{hashed:?}").into_bytes());
    let digest = Sha256::digest(&bytes);
    digest.iter().take(8).map(|b| format!("{b:02x}")).collect()
}

macro_rules! default_from_serde {
    ($($ty:ty),*) => {$(
        impl Default for $ty {
            fn default() -> Self {
                // An empty table deserializes through the field defaults.
                match toml::Value::Table(toml::Table::new()).try_into() {
                    Ok(v) => v,
                    Err(err) => unreachable!("every field of {} has a default: {err}", stringify!($ty)),
                }
            }
        }
    )*};
}
default_from_serde!(
    Limits,
    ContextConfig,
    GuidanceConfig,
    ToolRoles,
    TestsConfig,
    FinishConfig,
    NotesConfig,
    CommandsConfig,
    SandboxConfig,
    McpConfig
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn notes_min_score_has_a_default_and_is_checked() {
        let config = Loader::default().load(&AgentSource::Builtin).unwrap();
        assert_eq!(config.notes.min_score, 18.0);
        // The file and the serde default agree, so an agent without the key
        // gets the same threshold.
        assert_eq!(NotesConfig::default().min_score, config.notes.min_score);
        let zero = Loader::new(vec![Override::parse("notes.min_score=0").unwrap()]);
        assert_eq!(
            zero.load(&AgentSource::Builtin).unwrap().notes.min_score,
            0.0
        );
        for bad in ["notes.min_score=-1.0", "notes.min_score=nan"] {
            let loader = Loader::new(vec![Override::parse(bad).unwrap()]);
            let err = loader.load(&AgentSource::Builtin).unwrap_err().to_string();
            assert!(err.contains("notes.min_score"), "{bad}: {err}");
        }
    }
}
