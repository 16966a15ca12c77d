use std::path::{Path, PathBuf};

use quire_config::{
    AgentSource, ConfigError, Loader, Override, Provider, ToolCalling, locate_agent,
};

fn repo_default() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../agents/default")
}

/// Copies the repo's default agent into a temp dir so a test can break it.
fn scratch_agent() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    copy_dir(&repo_default(), dir.path());
    dir
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

#[test]
fn default_agent_loads_with_every_text() {
    let config = Loader::default()
        .load(&AgentSource::Dir(repo_default()))
        .unwrap();
    assert_eq!(config.name, "default");
    assert_eq!(config.model.provider, Provider::OpenAi);
    assert!(config.system_prompt().contains("Quire"));
    for tool in [
        "list_files",
        "read_file",
        "search",
        "edit_file",
        "write_file",
        "apply_patch",
        "run_tests",
        "finish",
    ] {
        let text = config
            .tools
            .get(tool)
            .unwrap_or_else(|| panic!("tool {tool} has no text"));
        assert!(!text.description.is_empty());
        assert_eq!(text.parameters["type"], "object");
    }
    assert!(config.message("unknown_tool").contains("{name}"));
    assert_eq!(config.hash.len(), 16);
}

#[test]
fn builtin_copy_matches_the_repo_folder() {
    let from_dir = Loader::default()
        .load(&AgentSource::Dir(repo_default()))
        .unwrap();
    let builtin = Loader::default().load(&AgentSource::Builtin).unwrap();
    assert_eq!(
        from_dir.hash, builtin.hash,
        "the embedded default agent is stale"
    );
    assert_eq!(builtin.dir, None);
}

#[test]
fn overrides_change_values_and_the_hash() {
    let base = Loader::default().load(&AgentSource::Builtin).unwrap();
    let loader = Loader::new(vec![
        Override::parse("model.base_url=http://127.0.0.1:9/v1").unwrap(),
        Override::parse("model.provider=\"anthropic\"").unwrap(),
        Override::parse("limits.max_iterations=7").unwrap(),
        Override::parse("model.tool_calling=text").unwrap(),
    ]);
    let config = loader.load(&AgentSource::Builtin).unwrap();
    assert_eq!(config.model.base_url, "http://127.0.0.1:9/v1");
    assert_eq!(config.model.provider, Provider::Anthropic);
    assert_eq!(config.limits.max_iterations, 7);
    assert_eq!(config.model.tool_calling, ToolCalling::Text);
    assert_ne!(config.hash, base.hash);
}

#[test]
fn unknown_override_key_is_named_with_expected_keys() {
    let loader = Loader::new(vec![Override::parse("model.bse_url=x").unwrap()]);
    let err = loader.load(&AgentSource::Builtin).unwrap_err();
    let text = err.to_string();
    assert!(matches!(err, ConfigError::Override { .. }), "{text}");
    assert!(text.contains("model.bse_url"), "{text}");
    assert!(
        text.contains("base_url"),
        "should list what was expected: {text}"
    );
}

#[test]
fn wrong_type_override_fails() {
    let loader = Loader::new(vec![Override::parse("limits.max_iterations=lots").unwrap()]);
    let err = loader.load(&AgentSource::Builtin).unwrap_err().to_string();
    assert!(err.contains("limits.max_iterations"), "{err}");
}

#[test]
fn unknown_key_in_file_reports_line_and_column() {
    let dir = scratch_agent();
    let path = dir.path().join("agent.toml");
    let text = std::fs::read_to_string(&path).unwrap();
    let text = text.replace("temperature = 0.0", "temprature = 0.0");
    std::fs::write(&path, &text).unwrap();
    let expected_line = text
        .lines()
        .position(|l| l.starts_with("temprature"))
        .unwrap()
        + 1;
    let err = Loader::default()
        .load(&AgentSource::Dir(dir.path().into()))
        .unwrap_err();
    match &err {
        ConfigError::Invalid {
            path: p,
            line,
            column,
            message,
        } => {
            assert_eq!(p, &path);
            assert_eq!(*line, expected_line);
            assert_eq!(*column, 1);
            assert!(
                message.contains("temprature") && message.contains("temperature"),
                "{message}"
            );
        }
        other => panic!("expected a located error, got {other}"),
    }
    assert!(
        err.to_string()
            .starts_with(&format!("{}:{expected_line}:1:", path.display()))
    );
}

#[test]
fn malformed_toml_in_a_tool_file_is_located() {
    let dir = scratch_agent();
    let path = dir.path().join("tools/read_file.toml");
    std::fs::write(
        &path,
        "description = \"x\"\n[parameters\ntype = \"object\"\n",
    )
    .unwrap();
    let err = Loader::default()
        .load(&AgentSource::Dir(dir.path().into()))
        .unwrap_err();
    match err {
        ConfigError::Invalid { path: p, line, .. } => {
            assert_eq!(p, path);
            assert_eq!(line, 2);
        }
        other => panic!("expected a located error, got {other}"),
    }
}

#[test]
fn missing_referenced_file_names_the_path() {
    let dir = scratch_agent();
    std::fs::remove_file(dir.path().join("prompts/workflow.md")).unwrap();
    let err = Loader::default()
        .load(&AgentSource::Dir(dir.path().into()))
        .unwrap_err();
    assert!(matches!(err, ConfigError::MissingFile { .. }));
    let text = err.to_string();
    assert!(
        text.contains("prompts/workflow.md") && text.contains("prompts.system[1]"),
        "{text}"
    );
}

#[test]
fn locate_agent_prefers_paths_then_search_dirs_then_builtin() {
    let dir = scratch_agent();
    assert_eq!(
        locate_agent(dir.path().to_str().unwrap(), &[]).unwrap(),
        AgentSource::Dir(dir.path().into())
    );
    let parent = tempfile::tempdir().unwrap();
    copy_dir(&repo_default(), &parent.path().join("mine"));
    assert_eq!(
        locate_agent("mine", &[parent.path().into()]).unwrap(),
        AgentSource::Dir(parent.path().join("mine"))
    );
    assert_eq!(
        locate_agent("default", &[parent.path().into()]).unwrap(),
        AgentSource::Builtin
    );
    let err = locate_agent("nope", &[parent.path().into()])
        .unwrap_err()
        .to_string();
    assert!(err.contains("nope"), "{err}");
}

#[test]
fn env_overrides_map_double_underscores_to_dots() {
    // Unique variable name so parallel tests don't interfere.
    // SAFETY of set_var: tests in this file do not read this variable concurrently.
    unsafe { std::env::set_var("QUIRE__LIMITS__READ_MAX_LINES", "99") };
    let found = Override::from_env();
    unsafe { std::env::remove_var("QUIRE__LIMITS__READ_MAX_LINES") };
    let ov = found
        .iter()
        .find(|o| o.key == "limits.read_max_lines")
        .expect("override from env");
    assert_eq!(ov.value, "99");
    let config = Loader::new(vec![ov.clone()])
        .load(&AgentSource::Builtin)
        .unwrap();
    assert_eq!(config.limits.read_max_lines, 99);
}

#[test]
fn pricing_bills_cached_tokens_at_the_cached_rate() {
    let config = Loader::default().load(&AgentSource::Builtin).unwrap();
    let cost = config.pricing.cost(1_000_000, 500_000, 100_000);
    let expected = 0.5 * 0.40 + 0.5 * 0.10 + 0.1 * 1.60;
    assert!((cost - expected).abs() < 1e-9, "{cost} vs {expected}");
}

#[test]
fn context_guidance_and_tool_roles_have_defaults_and_are_checked() {
    let config = Loader::default().load(&AgentSource::Builtin).unwrap();
    let c = &config.context;
    assert!(c.enabled);
    assert_eq!(c.budget_tokens, 24_000);
    assert!(c.supersede_at < c.fade_at && c.fade_at < c.summary_at);
    assert_eq!(c.summary_model, "");
    assert!(config.guidance.loop_warn < config.guidance.loop_stop);
    assert_eq!(config.tool_roles.tests, vec!["run_tests".to_string()]);
    for bad in [
        "context.budget_tokens=200000",
        "context.fade_at=-0.5",
        "context.keep_recent_turns=0",
        "guidance.loop_warn=9",
    ] {
        let loader = Loader::new(vec![Override::parse(bad).unwrap()]);
        let err = loader.load(&AgentSource::Builtin).unwrap_err().to_string();
        let key = bad.split(['=', '.']).nth(1).unwrap();
        assert!(err.contains(key), "{bad}: {err}");
    }
}

#[test]
fn file_settings_cannot_leave_the_agent_folder() {
    // `tools_dir = ""` once listed `/*.toml`: the root of the filesystem.
    for (key, value) in [
        ("tools_dir", "\"\""),
        ("tools_dir", "\"/etc\""),
        ("messages", "\"../outside.toml\""),
        ("reminders", "\"/etc/hostname\""),
    ] {
        let agent = scratch_agent();
        let path = agent.path().join("agent.toml");
        let text = std::fs::read_to_string(&path).unwrap();
        std::fs::write(&path, format!("{key} = {value}\n{text}")).unwrap();
        let err = Loader::default()
            .load(&AgentSource::Dir(agent.path().to_path_buf()))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("agent.toml")
                && err.contains(key)
                && err.contains("inside the agent folder"),
            "{key} = {value}: {err}"
        );
    }
}

/// The scratch agent with `section` appended to its agent.toml; the load's
/// error as text, and the line `needle` is on.
fn load_with_mcp(section: &str, needle: &str) -> (PathBuf, String, usize) {
    let dir = scratch_agent();
    let path = dir.path().join("agent.toml");
    let mut text = std::fs::read_to_string(&path).unwrap();
    text.push_str(section);
    std::fs::write(&path, &text).unwrap();
    let line = text.lines().position(|l| l.contains(needle)).unwrap() + 1;
    let err = Loader::default()
        .load(&AgentSource::Dir(dir.path().into()))
        .unwrap_err()
        .to_string();
    // The folder goes with `dir`; the message keeps its path.
    (path, err, line)
}

#[test]
fn an_mcp_server_loads_with_its_defaults() {
    let dir = scratch_agent();
    let path = dir.path().join("agent.toml");
    let mut text = std::fs::read_to_string(&path).unwrap();
    text.push_str(
        "\n[mcp.servers.github]\ncommand = \"github-mcp\"\nargs = [\"stdio\"]\nenv = [\"GITHUB_TOKEN\"]\napproval = \"always\"\n",
    );
    std::fs::write(&path, &text).unwrap();
    let config = Loader::default()
        .load(&AgentSource::Dir(dir.path().into()))
        .unwrap();
    let server = &config.mcp.servers["github"];
    assert_eq!(server.command, "github-mcp");
    assert_eq!(server.approval, quire_config::McpApproval::Always);
    assert_eq!(server.startup_timeout_secs, 30);
    assert_eq!(server.call_timeout_secs, 120);
    assert!(config.secret_env_names().contains(&"GITHUB_TOKEN"));
    let default = Loader::default().load(&AgentSource::Builtin).unwrap();
    assert!(default.mcp.servers.is_empty());
}

#[test]
fn a_malformed_mcp_server_names_the_file_and_the_key() {
    // Parse errors: located at the line, naming the key.
    for (section, needle, words) in [
        (
            "\n[mcp.servers.x]\ncommand = \"srv\"\ncomand = \"srv\"\n",
            "comand =",
            &["comand"][..],
        ),
        (
            "\n[mcp.servers.x]\ncommand = \"srv\"\napproval = \"sometimes\"\n",
            "approval = \"sometimes",
            &["sometimes", "first_use"][..],
        ),
        (
            "\n[mcp.servers.x]\ncommand = \"srv\"\ncall_timeout_secs = \"soon\"\n",
            "call_timeout_secs = \"soon",
            &["\"soon\"", "u64"][..],
        ),
        (
            "\n[mcp.servers.x]\nargs = []\n",
            "[mcp.servers.x]",
            &["command"][..],
        ),
    ] {
        let (path, err, line) = load_with_mcp(section, needle);
        assert!(
            err.starts_with(&format!("{}:{line}:", path.display())),
            "{section}: {err}"
        );
        for word in words {
            assert!(err.contains(word), "{section}: {err}");
        }
    }
    // Settings that parse but cannot work: the file and the full key.
    for (section, key) in [
        (
            "\n[mcp.servers.x]\ncommand = \"  \"\n",
            "`mcp.servers.x.command` is empty",
        ),
        (
            "\n[mcp.servers.x]\ncommand = \"srv\"\nenv = [\"TOKEN=abc\"]\n",
            "`mcp.servers.x.env` holds \"TOKEN=abc\"",
        ),
        (
            "\n[mcp.servers.x]\ncommand = \"srv\"\nstartup_timeout_secs = 0\n",
            "`mcp.servers.x.startup_timeout_secs` is 0",
        ),
        (
            "\n[mcp.servers.a__b]\ncommand = \"srv\"\n",
            "`mcp.servers.a__b`: a server name",
        ),
        (
            "\n[mcp.servers.x]\ncommand = \"srv\"\nenabled_tools = [\"t\"]\ndisabled_tools = [\"t\"]\n",
            "tool `t` is in both",
        ),
    ] {
        let (path, err, _) = load_with_mcp(section, "[mcp.servers.");
        assert!(
            err.starts_with(&format!("{}: ", path.display())) && err.contains(key),
            "{section}: {err}"
        );
    }
}

#[test]
fn an_mcp_tool_file_may_override_only_words() {
    let dir = scratch_agent();
    let tool = dir.path().join("tools/github__create_issue.toml");
    std::fs::write(
        &tool,
        "description = \"File an issue.\"\n[errors]\ntimeout = \"too slow\"\n",
    )
    .unwrap();
    let config = Loader::default()
        .load(&AgentSource::Dir(dir.path().into()))
        .unwrap();
    let text = &config.tools["github__create_issue"];
    assert_eq!(text.description, "File an issue.");
    assert_eq!(text.errors["timeout"], "too slow");

    std::fs::write(
        &tool,
        "description = \"x\"\n[parameters]\ntype = \"object\"\n",
    )
    .unwrap();
    let err = Loader::default()
        .load(&AgentSource::Dir(dir.path().into()))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("github__create_issue.toml") && err.contains("its server's"),
        "{err}"
    );

    // A built-in tool's file still needs its description.
    std::fs::remove_file(&tool).unwrap();
    let read = dir.path().join("tools/read_file.toml");
    let text = std::fs::read_to_string(&read).unwrap();
    let without: String = text
        .lines()
        .filter(|l| !l.starts_with("description"))
        .map(|l| format!("{l}\n"))
        .collect();
    std::fs::write(&read, without).unwrap();
    let err = Loader::default()
        .load(&AgentSource::Dir(dir.path().into()))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("read_file.toml") && err.contains("`description`"),
        "{err}"
    );
}
