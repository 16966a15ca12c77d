use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// Which wire protocol the model speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Provider {
    /// OpenAI-compatible chat completions: OpenAI, OpenRouter, Ollama, vLLM,
    /// llama.cpp server, LM Studio.
    #[serde(rename = "openai")]
    OpenAi,
    Anthropic,
}

/// How tool calls travel: the provider's native tool calling, or tagged
/// blocks in plain text for models without it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum ToolCalling {
    #[default]
    Native,
    Text,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelConfig {
    pub provider: Provider,
    pub model: String,
    pub base_url: String,
    /// Name of the environment variable holding the key (never the key).
    #[serde(default)]
    pub api_key_env: String,
    #[serde(default)]
    pub temperature: Option<f32>,
    #[serde(default = "defaults::max_output_tokens")]
    pub max_output_tokens: u32,
    /// The overall limit of one model request (a whole stream included).
    #[serde(default = "defaults::request_timeout_secs")]
    pub request_timeout_secs: u64,
    /// For streams: how long to wait for the answer to start and between
    /// two chunks before the attempt is cut and retried.
    #[serde(default = "defaults::stream_idle_timeout_secs")]
    pub stream_idle_timeout_secs: u64,
    #[serde(default = "defaults::yes")]
    pub stream: bool,
    #[serde(default)]
    pub tool_calling: ToolCalling,
    #[serde(default = "defaults::max_attempts")]
    pub max_attempts: u32,
    #[serde(default = "defaults::retry_base_delay_ms")]
    pub retry_base_delay_ms: u64,
    #[serde(default = "defaults::retry_max_delay_ms")]
    pub retry_max_delay_ms: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Limits {
    /// Model calls per session before the run stops.
    #[serde(default = "defaults::max_iterations")]
    pub max_iterations: u32,
    /// Consecutive protocol repairs before the session fails.
    #[serde(default = "defaults::max_protocol_repairs")]
    pub max_protocol_repairs: u32,
    /// Attempts after failing post-apply tests before giving up.
    #[serde(default = "defaults::max_post_apply_attempts")]
    pub max_post_apply_attempts: u32,
    #[serde(default = "defaults::read_max_lines")]
    pub read_max_lines: u32,
    #[serde(default = "defaults::list_max_entries")]
    pub list_max_entries: u32,
    #[serde(default = "defaults::search_max_hits")]
    pub search_max_hits: u32,
    /// Hard cap on any tool result the model reads.
    #[serde(default = "defaults::tool_output_max_chars")]
    pub tool_output_max_chars: u32,
}

/// Context management (the `context` extension). Thresholds are fractions
/// of `budget_tokens`, the working budget a request should stay under;
/// `window_tokens` is the model's hard limit and is never exceeded.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ContextConfig {
    /// Off: requests grow with the conversation (the bench's baseline).
    #[serde(default = "defaults::yes")]
    pub enabled: bool,
    /// The model's context window in tokens (prompt plus output).
    #[serde(default = "defaults::window_tokens")]
    pub window_tokens: u64,
    /// The request size compaction aims to stay under.
    #[serde(default = "defaults::budget_tokens")]
    pub budget_tokens: u64,
    /// Stage 1: replace reads of a file that was read again or edited later.
    #[serde(default = "defaults::supersede_at")]
    pub supersede_at: f64,
    /// Stage 2: replace old tool results with one-line pointers.
    #[serde(default = "defaults::fade_at")]
    pub fade_at: f64,
    /// Stage 3: an architect call summarises the older history.
    #[serde(default = "defaults::summary_at")]
    pub summary_at: f64,
    /// A stage runs only if it frees at least this fraction of the budget
    /// (unless the request would not fit the window): compacting in bigger,
    /// rarer steps keeps the cached prefix stable for longer.
    #[serde(default = "defaults::min_gain")]
    pub min_gain: f64,
    /// Assistant turns (with their results) always kept verbatim.
    #[serde(default = "defaults::keep_recent_turns")]
    pub keep_recent_turns: u32,
    /// Errors and long-lived results (test digests) fade only once older
    /// than this many assistant turns.
    #[serde(default = "defaults::keep_error_turns")]
    pub keep_error_turns: u32,
    /// Model for the summary call; empty: the session's model.
    #[serde(default)]
    pub summary_model: String,
    #[serde(default = "defaults::summary_max_tokens")]
    pub summary_max_tokens: u32,
}

/// Run-time guidance (the `guidance` extension): loop detection limits.
/// The reminder texts and their caps are in `reminders.toml`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GuidanceConfig {
    /// How many recent tool calls loop detection looks at.
    #[serde(default = "defaults::loop_window")]
    pub loop_window: u32,
    /// Identical calls (same tool, arguments and result) in the window that
    /// trigger the `loop_detected` reminder.
    #[serde(default = "defaults::loop_warn")]
    pub loop_warn: u32,
    /// Identical calls in the window that stop the run.
    #[serde(default = "defaults::loop_stop")]
    pub loop_stop: u32,
    /// Consecutive failed edits of one file that trigger `edit_failures`.
    #[serde(default = "defaults::edit_failure_threshold")]
    pub edit_failure_threshold: u32,
}

/// What the tools do, by name, for the extensions that reason about tool
/// results without knowing the tools (compaction, guidance).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolRoles {
    /// Tools that show a file (argument `path`; optional `offset`, `limit`).
    #[serde(default = "defaults::read_tools")]
    pub reads: Vec<String>,
    /// Tools that change files (argument `path`, or a unified diff in `patch`).
    #[serde(default = "defaults::edit_tools")]
    pub edits: Vec<String>,
    /// Tools that run the tests; their digests are kept longer.
    #[serde(default = "defaults::test_tools")]
    pub tests: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TestsConfig {
    /// Empty: take it from `--test-cmd` or the workspace's metadata.json.
    #[serde(default)]
    pub command: String,
    #[serde(default = "defaults::test_timeout_secs")]
    pub timeout_secs: u64,
    #[serde(default = "defaults::output_cap_bytes")]
    pub output_cap_bytes: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FinishConfig {
    /// Refuse `finish` when the session copy has no change.
    #[serde(default = "defaults::yes")]
    pub require_change: bool,
    /// Refuse `finish` when files changed after the last test run.
    #[serde(default = "defaults::yes")]
    pub require_tests_after_edit: bool,
}

/// Cross-session notes (the `notes` extension and the note-taker).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NotesConfig {
    /// Off: no notes are shown to sessions and no distillation is queued.
    #[serde(default = "defaults::yes")]
    pub enabled: bool,
    /// The notes folder; empty: `<data home>/notes`. A team may point it at
    /// a git repository of notes. Relative paths are from the current folder.
    #[serde(default)]
    pub root: String,
    /// Characters the notes listed at session start may take.
    #[serde(default = "defaults::retrieval_budget_chars")]
    pub retrieval_budget_chars: u32,
    /// Notes listed at session start at most.
    #[serde(default = "defaults::max_notes_shown")]
    pub max_notes_shown: u32,
    /// Characters of note text shown in the start list, over all notes in
    /// rank order (0: titles and descriptions only). When every listed
    /// note is shown in full, the notes tools are not offered.
    #[serde(default = "defaults::inline_chars")]
    pub inline_chars: u32,
    /// Characters of code the listed notes point to that is shown after
    /// them, read from the session copy (0: none): the definitions the task
    /// names or that a note names on a line about the task, in the files the
    /// notes cite, so the first reply can be the change instead of a read.
    #[serde(default = "defaults::code_chars")]
    pub code_chars: u32,
    /// Relevance a note needs to be listed at session start: its BM25
    /// score in units of one match of a word found in a single note (about
    /// that field's boost: title 3, keywords 2.5, description 2, body 1),
    /// so it does not drift with the size of the tree, and scaled up for
    /// short tasks. When no note reaches it, the session gets no notes
    /// list and no notes tools. The project's architecture notes are always
    /// listed. 0: every match counts.
    #[serde(default = "defaults::min_score")]
    pub min_score: f64,
    /// Model calls the note-taker may make per session it distills.
    #[serde(default = "defaults::distill_max_iterations")]
    pub distill_max_iterations: u32,
    /// Once the project has notes, a session that went right in at most
    /// this many model calls, without a tool error or protocol repair, is
    /// not distilled: it found its way, so a note could not have saved it
    /// a call, and distilling costs one (0: only the files rule applies).
    #[serde(default = "defaults::triage_max_calls")]
    pub triage_max_calls: u32,
    /// `quire run` starts the note-taker in the background when a session ends.
    #[serde(default = "defaults::yes")]
    pub auto_distill: bool,
    /// The note-taker's model; empty: the session's model (same provider,
    /// endpoint and key).
    #[serde(default)]
    pub model: String,
    /// A distillation job whose worker sent no heartbeat for this long (a
    /// dead process) may be claimed by another worker.
    #[serde(default = "defaults::job_lease_secs")]
    pub job_lease_secs: u64,
    /// Attempts at one job before it is marked failed.
    #[serde(default = "defaults::job_max_attempts")]
    pub job_max_attempts: u32,
    /// Environment variables whose values never reach a note (besides
    /// `model.api_key_env`), e.g. ["GITHUB_TOKEN", "DATABASE_URL"].
    #[serde(default)]
    pub secret_env: Vec<String>,
}

/// How `run_command` asks before running a command.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum CommandApproval {
    /// Ask for every command that is not denied.
    Ask,
    /// Run allowlisted commands; ask for the rest.
    #[default]
    AskUnlisted,
    /// Never ask: run allowlisted commands, deny the rest (eval runs always
    /// behave like this, since nobody is there to answer).
    Never,
}

/// The `run_command` tool's policy (the `commands` extension, off unless
/// listed in `extensions`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CommandsConfig {
    /// Commands that run without asking: patterns where `*` matches any
    /// text, against the whole trimmed command (e.g. "cargo check*").
    #[serde(default)]
    pub allow: Vec<String>,
    /// Commands that are always refused, same pattern syntax. Checked first.
    #[serde(default)]
    pub deny: Vec<String>,
    #[serde(default)]
    pub approval: CommandApproval,
    /// Default wall-clock limit; a call may ask for less, never more.
    #[serde(default = "defaults::command_timeout_secs")]
    pub timeout_secs: u64,
    #[serde(default = "defaults::command_output_cap_bytes")]
    pub output_cap_bytes: u64,
}

/// When a call to an MCP server's tool is put to the user. Nobody can be
/// asked in an eval run or under `--yes`: there a call that would ask is
/// refused, as `run_command` refuses an unlisted command.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum McpApproval {
    /// Never ask: the server is trusted with every call (the only setting
    /// under which an eval run or `--yes` calls it).
    Never,
    /// Ask before the first call of each tool in a session.
    #[default]
    FirstUse,
    /// Ask before every call.
    Always,
}

/// One MCP tool server started over stdio (the `mcp` extension).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct McpServerConfig {
    /// The program to start (looked up on `PATH`).
    pub command: String,
    #[serde(default)]
    pub args: Vec<String>,
    /// Names of environment variables passed through to the server (their
    /// values never go in the file; they are redacted like the model key).
    /// Besides these the server sees only a few basics (`PATH`, `HOME`, …).
    #[serde(default)]
    pub env: Vec<String>,
    /// The server's tools offered to the model; empty: all of them.
    #[serde(default)]
    pub enabled_tools: Vec<String>,
    /// Tools never offered, even when the server lists them.
    #[serde(default)]
    pub disabled_tools: Vec<String>,
    /// Starting, the handshake and listing the tools, together.
    #[serde(default = "defaults::mcp_startup_timeout_secs")]
    pub startup_timeout_secs: u64,
    /// One tool call; past it the model is told the call timed out.
    #[serde(default = "defaults::mcp_call_timeout_secs")]
    pub call_timeout_secs: u64,
    #[serde(default)]
    pub approval: McpApproval,
}

/// `[mcp]`: the MCP tool servers, by name (used as the tools' prefix).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct McpConfig {
    #[serde(default)]
    pub servers: BTreeMap<String, McpServerConfig>,
}

/// Confinement of the processes the agent starts (tests, `run_command`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SandboxConfig {
    /// Landlock on Linux where the kernel has it: writes only in the
    /// session copy (the original during post-apply tests) and temp.
    #[serde(default = "defaults::yes")]
    pub enabled: bool,
    /// Allow TCP connect/bind (blocked by default where the kernel can).
    #[serde(default)]
    pub network: bool,
    /// More folders processes may write to (e.g. a build cache).
    #[serde(default)]
    pub writable: Vec<String>,
}

/// Prices per million tokens, for cost estimates.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct Pricing {
    #[serde(default)]
    pub input_per_mtok: f64,
    #[serde(default)]
    pub cached_input_per_mtok: f64,
    #[serde(default)]
    pub output_per_mtok: f64,
}

impl Pricing {
    /// Estimated cost in USD; cached prompt tokens are billed at the cached rate.
    pub fn cost(&self, prompt_tokens: u64, cached_tokens: u64, completion_tokens: u64) -> f64 {
        let fresh = prompt_tokens.saturating_sub(cached_tokens) as f64;
        (fresh * self.input_per_mtok
            + cached_tokens as f64 * self.cached_input_per_mtok
            + completion_tokens as f64 * self.output_per_mtok)
            / 1_000_000.0
    }
}

/// One section of the system prompt, named after its file so the
/// meta-agent and `config check` can point at it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PromptSection {
    pub name: String,
    pub text: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Prompts {
    pub system: Vec<PromptSection>,
    /// The first user message; placeholders `{task}`, `{guidance}`, `{project}`, `{test_command}`.
    pub task: String,
    /// Instructions for the text tool protocol; placeholder `{tools}`.
    pub text_protocol: String,
    pub compaction: String,
    pub note_taker: String,
}

/// A tool's words: description, argument schema and error templates.
/// Both may be left out of an MCP tool's file (`<server>__<tool>.toml`),
/// whose server supplies them; every other tool's file must have them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolText {
    #[serde(default)]
    pub description: String,
    #[serde(default)]
    pub parameters: serde_json::Value,
    #[serde(default)]
    pub errors: BTreeMap<String, String>,
}

/// A text injected as a user message when a condition is met, at most
/// `max_fires` times per session.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Reminder {
    pub text: String,
    #[serde(default = "defaults::max_fires")]
    pub max_fires: u32,
}

/// A fully resolved agent: settings plus every text, ready to run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AgentConfig {
    pub name: String,
    pub description: String,
    /// The folder it was loaded from; `None` for the built-in default.
    pub dir: Option<PathBuf>,
    /// sha256 over the resolved config, so runs can be grouped by it.
    pub hash: String,
    pub model: ModelConfig,
    pub limits: Limits,
    pub context: ContextConfig,
    pub guidance: GuidanceConfig,
    pub tool_roles: ToolRoles,
    pub tests: TestsConfig,
    pub finish: FinishConfig,
    pub notes: NotesConfig,
    pub commands: CommandsConfig,
    pub sandbox: SandboxConfig,
    pub mcp: McpConfig,
    /// Extension names in the order their callbacks run.
    pub extensions: Vec<String>,
    pub prompts: Prompts,
    pub tools: BTreeMap<String, ToolText>,
    /// Loop-level texts: protocol repairs, feedback framing, guidance header.
    pub messages: BTreeMap<String, String>,
    pub reminders: BTreeMap<String, Reminder>,
    pub pricing: Pricing,
}

impl AgentConfig {
    /// The system prompt: sections joined by blank lines.
    pub fn system_prompt(&self) -> String {
        self.prompts
            .system
            .iter()
            .map(|s| s.text.trim_end())
            .collect::<Vec<_>>()
            .join("\n\n")
    }

    /// A loop-level message template, or a visible marker naming the missing
    /// key (a config check catches these before a run).
    pub fn message(&self, key: &str) -> &str {
        self.messages
            .get(key)
            .map(String::as_str)
            .unwrap_or("[missing message text]")
    }

    /// Names of the environment variables whose values are secrets: the
    /// model's key variable and `notes.secret_env`.
    pub fn secret_env_names(&self) -> Vec<&str> {
        let mut names: Vec<&str> = Vec::new();
        if !self.model.api_key_env.is_empty() {
            names.push(&self.model.api_key_env);
        }
        names.extend(
            self.notes
                .secret_env
                .iter()
                .map(String::as_str)
                .filter(|n| !n.is_empty()),
        );
        // What an MCP server is given may be a token it was given for.
        names.extend(
            self.mcp
                .servers
                .values()
                .flat_map(|s| s.env.iter().map(String::as_str))
                .filter(|n| !n.is_empty()),
        );
        names
    }

    /// A redactor masking the values of [`Self::secret_env_names`]: the one
    /// constructor every part that writes what a model saw (store, notes,
    /// logs) builds its masking from, so none of them misses a secret.
    pub fn secret_redactor(&self) -> quire_types::Redactor {
        let mut redactor = quire_types::Redactor::new();
        redactor.add_env_secrets(self.secret_env_names());
        redactor
    }

    /// A tool's error template.
    pub fn tool_error(&self, tool: &str, key: &str) -> &str {
        self.tools
            .get(tool)
            .and_then(|t| t.errors.get(key))
            .map(String::as_str)
            .unwrap_or("[missing tool error text]")
    }
}

pub(crate) mod defaults {
    pub fn yes() -> bool {
        true
    }
    pub fn max_output_tokens() -> u32 {
        4096
    }
    pub fn request_timeout_secs() -> u64 {
        1800
    }
    pub fn stream_idle_timeout_secs() -> u64 {
        300
    }
    pub fn max_attempts() -> u32 {
        5
    }
    pub fn retry_base_delay_ms() -> u64 {
        500
    }
    pub fn retry_max_delay_ms() -> u64 {
        20_000
    }
    pub fn max_iterations() -> u32 {
        40
    }
    pub fn max_protocol_repairs() -> u32 {
        3
    }
    pub fn max_post_apply_attempts() -> u32 {
        2
    }
    pub fn read_max_lines() -> u32 {
        300
    }
    pub fn list_max_entries() -> u32 {
        300
    }
    pub fn search_max_hits() -> u32 {
        60
    }
    pub fn tool_output_max_chars() -> u32 {
        12_000
    }
    pub fn window_tokens() -> u64 {
        128_000
    }
    pub fn budget_tokens() -> u64 {
        24_000
    }
    pub fn supersede_at() -> f64 {
        0.5
    }
    pub fn fade_at() -> f64 {
        0.6
    }
    pub fn summary_at() -> f64 {
        0.85
    }
    pub fn min_gain() -> f64 {
        0.2
    }
    pub fn keep_recent_turns() -> u32 {
        3
    }
    pub fn keep_error_turns() -> u32 {
        8
    }
    pub fn summary_max_tokens() -> u32 {
        1500
    }
    pub fn loop_window() -> u32 {
        12
    }
    pub fn loop_warn() -> u32 {
        3
    }
    pub fn loop_stop() -> u32 {
        6
    }
    pub fn edit_failure_threshold() -> u32 {
        3
    }
    pub fn read_tools() -> Vec<String> {
        vec!["read_file".into()]
    }
    pub fn edit_tools() -> Vec<String> {
        vec![
            "edit_file".into(),
            "write_file".into(),
            "apply_patch".into(),
        ]
    }
    pub fn test_tools() -> Vec<String> {
        vec!["run_tests".into()]
    }
    pub fn command_timeout_secs() -> u64 {
        120
    }
    pub fn command_output_cap_bytes() -> u64 {
        100_000
    }
    pub fn test_timeout_secs() -> u64 {
        300
    }
    pub fn output_cap_bytes() -> u64 {
        200_000
    }
    pub fn mcp_startup_timeout_secs() -> u64 {
        30
    }
    pub fn mcp_call_timeout_secs() -> u64 {
        120
    }
    pub fn max_fires() -> u32 {
        2
    }
    pub fn retrieval_budget_chars() -> u32 {
        2_000
    }
    pub fn max_notes_shown() -> u32 {
        5
    }
    /// A project map the note-taker keeps under ~2k characters fits whole,
    /// so no `read_note`/`search_notes` schemas ride along for its rest.
    pub fn inline_chars() -> u32 {
        2_500
    }
    /// Measured on the more-itertools eval prompts against notes of the
    /// kind the note-taker writes: related notes 19-72, unrelated ones of
    /// the same project up to 19 (most under 17); see the quire-notes
    /// `search` tests.
    /// About 2.5k tokens: a 160-line class with its tests' first method
    /// and stub, or three small modules and a method; a read it saves
    /// costs a whole request.
    pub fn code_chars() -> u32 {
        10_000
    }
    pub fn min_score() -> f64 {
        18.0
    }
    pub fn distill_max_iterations() -> u32 {
        12
    }
    /// Live learn runs (shop, more-itertools): sessions of 2-3 calls were
    /// distilled for about 4k prompt tokens each and taught the next ones
    /// nothing that changed their call count.
    pub fn triage_max_calls() -> u32 {
        3
    }
    pub fn job_lease_secs() -> u64 {
        120
    }
    pub fn job_max_attempts() -> u32 {
        3
    }
}
