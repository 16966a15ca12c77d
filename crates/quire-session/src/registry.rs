use std::path::PathBuf;
use std::sync::Arc;

use quire_config::{AgentConfig, MissingText, ToolTexts};
use quire_context::{
    ContextExtension, GuidanceExtension, MemoryExtension, MemoryStore, TokenCounter,
};
use quire_core::Extension;
use quire_core::extensions::ProtocolExtension;
use quire_llm::ModelClient;
use quire_mcp::McpExtension;
use quire_notes::NotesPaths;
use quire_recall::{NotesExtension, RETRIEVAL_TEXTS, RetrievalSettings};
use quire_tools::{CommandApprover, CommandRunner, Finisher, TestRunner, WorkspaceTools};
use quire_types::Redactor;
use quire_workspace::SessionCopy;

use crate::error::SessionError;

/// Extension names an agent config may list, in no particular order.
pub const KNOWN_EXTENSIONS: &[&str] = &[
    "context",
    "protocol",
    "workspace_tools",
    "tests",
    "finish",
    "memory",
    "notes",
    "guidance",
    "commands",
    quire_mcp::NAME,
];

/// Extensions that reshape each request; `context` must come before them,
/// because it rebuilds the request from the (compacted) conversation.
const REQUEST_SHAPERS: &[&str] = &["protocol", "memory"];

/// The tools each known extension declares, with the texts their code
/// renders, so a config can be checked without building a session.
pub fn texts_by_extension() -> Vec<(&'static str, Vec<ToolTexts>)> {
    quire_tools::texts_by_extension()
        .iter()
        .chain(quire_context::texts_by_extension())
        .chain(&[(NotesExtension::NAME, RETRIEVAL_TEXTS)])
        .map(|(extension, texts)| (*extension, texts.to_vec()))
        .collect()
}

/// Everything that would stop an agent config from working, each naming
/// what to fix: the extension list (unknown, repeated, required, order),
/// and the tool texts the listed extensions render (file and key). Checked
/// by `quire config check` and before every session.
pub fn config_problems(config: &AgentConfig) -> Vec<String> {
    let mut problems = extension_list_problems(&config.extensions);
    problems.extend(missing_texts(config).iter().map(ToString::to_string));
    problems.extend(missing_messages(config));
    // The note-taker is an agent of its own: its tools are not listed in
    // `extensions`, but it needs their words whenever notes are on.
    if config.notes.enabled {
        for missing in config.missing_tool_texts(quire_distill::NOTE_TAKER_TEXTS) {
            problems.push(match missing.key {
                None => format!(
                    "{}: missing (the note-taker needs it)",
                    missing.file.display()
                ),
                Some(_) => format!("{missing} (the note-taker)"),
            });
        }
        if config.prompts.note_taker.trim().is_empty() {
            problems.push("the note-taker prompt (prompts.note_taker) is empty".into());
        }
    }
    problems
}

/// The tool texts the config's extensions render and it lacks.
fn missing_texts(config: &AgentConfig) -> Vec<MissingText> {
    texts_by_extension()
        .into_iter()
        .filter(|(extension, _)| config.extensions.iter().any(|e| e == extension))
        .flat_map(|(_, texts)| config.missing_tool_texts(&texts))
        .collect()
}

/// The loop-level messages the listed extensions render and the config's
/// `messages.toml` lacks (the `mcp` extension's tools are not known before
/// their servers start, so its words are messages).
fn missing_messages(config: &AgentConfig) -> Vec<String> {
    let file = match &config.dir {
        Some(dir) => dir.join("messages.toml"),
        None => PathBuf::from("<builtin default>/messages.toml"),
    };
    let notes_on = config.notes.enabled;
    [
        (quire_mcp::NAME, quire_mcp::MESSAGES, true),
        (NotesExtension::NAME, quire_recall::MESSAGES, notes_on),
    ]
    .into_iter()
    .filter(|(extension, _, on)| *on && config.extensions.iter().any(|e| e == extension))
    .flat_map(|(extension, keys, _)| {
        keys.iter()
            .filter(|key| !config.messages.contains_key(**key))
            .map(move |key| (extension, *key))
    })
    .map(|(extension, key)| {
        format!(
            "{}: no `{key}` (extension `{extension}` renders it)",
            file.display()
        )
    })
    .collect()
}

/// Refuses a config whose extensions would render a text it lacks: a
/// session would otherwise show the model a marker in its place.
pub fn check_texts(config: &AgentConfig) -> Result<(), SessionError> {
    let missing = missing_texts(config);
    if missing.is_empty() {
        Ok(())
    } else {
        Err(SessionError::MissingTexts(missing))
    }
}

/// What the extensions of one session are built from.
pub struct SessionParts {
    pub copy: Arc<SessionCopy>,
    /// `None` (or blank): the project has no tests.
    pub test_command: Option<String>,
    /// `<data home>/sessions/<id>`: working memory lives in `memory/`.
    pub session_dir: PathBuf,
    /// Answers the context extension's summary call.
    pub summary_client: Arc<dyn ModelClient>,
    /// The task text: what the `notes` extension retrieves notes for.
    pub task: String,
    /// The project name notes are filed under.
    pub project: String,
    /// The notes folder and its index.
    pub notes: NotesPaths,
    /// Secrets never written into notes.
    pub redactor: Redactor,
    /// Asked about `run_command` calls the policy does not settle, and
    /// about MCP calls whose server's `approval` asks.
    pub command_approver: Arc<dyn CommandApprover>,
    /// The session's MCP servers, started before the extensions are built
    /// (starting is async; building is not). `None`: `mcp` is not listed.
    pub mcp: Option<Arc<McpExtension>>,
}

/// Starts the MCP servers when the config lists the `mcp` extension, in
/// the session copy; a server that fails is warned about, never fatal.
pub async fn start_mcp(
    config: &AgentConfig,
    copy: &SessionCopy,
    approver: Arc<dyn CommandApprover>,
    redactor: Redactor,
) -> Option<Arc<McpExtension>> {
    if !config.extensions.iter().any(|e| e == quire_mcp::NAME) {
        return None;
    }
    Some(Arc::new(
        McpExtension::start(config, copy.root(), approver, redactor).await,
    ))
}

/// Builds the extensions an agent config lists, in its order.
pub fn build_extensions(
    config: &AgentConfig,
    parts: &SessionParts,
) -> Result<Vec<Arc<dyn Extension>>, SessionError> {
    check_order(config)?;
    let memory = MemoryStore::new(parts.session_dir.join("memory"));
    let has_memory = config.extensions.iter().any(|e| e == "memory");
    let has_tests = parts
        .test_command
        .as_deref()
        .is_some_and(|c| !c.trim().is_empty());
    config
        .extensions
        .iter()
        // `notes.enabled = false` turns retrieval off without editing the list.
        .filter(|name| name.as_str() != NotesExtension::NAME || config.notes.enabled)
        .map(|name| -> Result<Arc<dyn Extension>, SessionError> {
            let copy = parts.copy.clone();
            Ok(match name.as_str() {
                "context" => Arc::new(ContextExtension::new(
                    Arc::new(TokenCounter::new()),
                    parts.summary_client.clone(),
                )),
                "protocol" => Arc::new(ProtocolExtension::new()),
                "workspace_tools" => Arc::new(WorkspaceTools::new(copy)),
                "tests" => Arc::new(TestRunner::new(copy, parts.test_command.clone())),
                "finish" => Arc::new(Finisher::new(copy)),
                "commands" => Arc::new(CommandRunner::new(copy, parts.command_approver.clone())),
                quire_mcp::NAME => match &parts.mcp {
                    Some(mcp) => mcp.clone(),
                    None => Arc::new(McpExtension::empty(
                        parts.command_approver.clone(),
                        parts.redactor.clone(),
                    )),
                },
                "memory" => Arc::new(MemoryExtension::new(memory.clone())),
                "notes" => Arc::new(NotesExtension::new(
                    parts.notes.clone(),
                    parts.redactor.clone(),
                    &parts.project,
                    parts.task.clone(),
                    copy.root(),
                    retrieval_settings(config),
                )),
                "guidance" => Arc::new(GuidanceExtension::new(
                    has_memory.then(|| memory.clone()),
                    has_tests,
                )),
                other => {
                    return Err(SessionError::UnknownExtension {
                        name: other.to_string(),
                        known: KNOWN_EXTENSIONS.join(", "),
                    });
                }
            })
        })
        .collect()
}

/// Extensions every agent needs: without them it cannot act or finish.
pub const REQUIRED_EXTENSIONS: &[&str] = &["protocol", "workspace_tools", "finish"];

/// Problems with the order of `extensions` (also reported by `config check`).
pub fn order_problems(config: &AgentConfig) -> Vec<String> {
    order_problems_in(&config.extensions)
}

/// Everything wrong with an extension list someone else wrote (the meta
/// model): unknown or repeated names, a required one missing, the order.
pub fn extension_list_problems(names: &[String]) -> Vec<String> {
    let mut problems = Vec::new();
    for (i, name) in names.iter().enumerate() {
        if !KNOWN_EXTENSIONS.contains(&name.as_str()) {
            problems.push(format!(
                "unknown extension `{name}` (known: {})",
                KNOWN_EXTENSIONS.join(", ")
            ));
        } else if names[..i].contains(name) {
            problems.push(format!("extension `{name}` is listed twice"));
        }
    }
    for required in REQUIRED_EXTENSIONS {
        if !names.iter().any(|n| n == required) {
            problems.push(format!("extension `{required}` is required"));
        }
    }
    problems.extend(order_problems_in(names));
    problems
}

fn order_problems_in(extensions: &[String]) -> Vec<String> {
    let position = |name: &str| extensions.iter().position(|e| e == name);
    let Some(context) = position("context") else {
        return Vec::new();
    };
    REQUEST_SHAPERS
        .iter()
        .filter(|shaper| position(shaper).is_some_and(|at| at < context))
        .map(|shaper| {
            format!("extension `context` must come before `{shaper}` (it rebuilds the request)")
        })
        .collect()
}

fn check_order(config: &AgentConfig) -> Result<(), SessionError> {
    match order_problems(config).into_iter().next() {
        Some(problem) => Err(SessionError::ExtensionOrder(problem)),
        None => Ok(()),
    }
}

/// What the `notes` extension may add to a session, from `[notes]`.
pub fn retrieval_settings(config: &AgentConfig) -> RetrievalSettings {
    RetrievalSettings {
        max_shown: config.notes.max_notes_shown as usize,
        budget_chars: config.notes.retrieval_budget_chars as usize,
        inline_chars: config.notes.inline_chars as usize,
        code_chars: config.notes.code_chars as usize,
        min_score: config.notes.min_score as f32,
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use quire_config::{AgentSource, Loader};

    use super::*;

    fn builtin() -> AgentConfig {
        Loader::new(Vec::new()).load(&AgentSource::Builtin).unwrap()
    }

    #[test]
    fn the_default_agent_has_no_problems() {
        assert_eq!(config_problems(&builtin()), Vec::<String>::new());
        assert!(check_texts(&builtin()).is_ok());
    }

    #[test]
    fn a_missing_error_text_is_refused_with_file_and_key() {
        let mut config = builtin();
        config.dir = Some(PathBuf::from("/agents/custom"));
        config.extensions.push("commands".into());
        let errors = &mut config.tools.get_mut("run_command").unwrap().errors;
        errors.remove("denylisted");
        let problems = config_problems(&config);
        assert_eq!(
            problems,
            vec![
                "/agents/custom/tools/run_command.toml: [errors] has no `denylisted` (tool `run_command` renders it)"
            ]
        );
        let err = check_texts(&config).unwrap_err().to_string();
        assert!(
            err.contains("run_command.toml") && err.contains("`denylisted`"),
            "{err}"
        );
        // Not listed, not needed: without `commands` the text is not rendered.
        config.extensions.retain(|e| e != "commands");
        assert!(check_texts(&config).is_ok());
    }

    #[test]
    fn a_missing_notes_text_is_reported_with_file_and_key() {
        let mut config = builtin();
        config.dir = Some(PathBuf::from("/agents/custom"));
        config
            .tools
            .get_mut("search_notes")
            .unwrap()
            .errors
            .remove("unavailable");
        config
            .tools
            .get_mut("note_update")
            .unwrap()
            .errors
            .remove("too_large");
        config.tools.remove("note_done");
        let problems = config_problems(&config);
        assert_eq!(
            problems,
            vec![
                "/agents/custom/tools/search_notes.toml: [errors] has no `unavailable` (tool `search_notes` renders it)",
                "/agents/custom/tools/note_update.toml: [errors] has no `too_large` (tool `note_update` renders it) (the note-taker)",
                "/agents/custom/tools/note_done.toml: missing (the note-taker needs it)",
            ]
        );
        assert!(check_texts(&config).is_err());
        // Notes off: neither the retrieval tools nor the note-taker run.
        config.notes.enabled = false;
        config.extensions.retain(|e| e != "notes");
        assert_eq!(config_problems(&config), Vec::<String>::new());
    }

    #[test]
    fn the_extension_list_is_checked_like_the_meta_agent_does() {
        let mut config = builtin();
        config.extensions.retain(|e| e != "finish");
        config.extensions.push("memory".into());
        let problems = config_problems(&config);
        assert!(
            problems.contains(&"extension `finish` is required".to_string()),
            "{problems:?}"
        );
        assert!(
            problems.contains(&"extension `memory` is listed twice".to_string()),
            "{problems:?}"
        );
    }
}
