use super::*;

use quire_config::{AgentSource, Loader};

fn builtin() -> AgentConfig {
    Loader::new(Vec::new()).load(&AgentSource::Builtin).unwrap()
}

#[test]
fn the_default_agent_has_every_message_this_extension_renders() {
    let config = builtin();
    for key in MESSAGES {
        assert!(config.messages.contains_key(*key), "messages.toml: {key}");
    }
}

#[test]
fn tool_names_are_prefixed_and_made_safe_for_providers() {
    assert_eq!(exposed_name("git", "log"), "git__log");
    assert_eq!(exposed_name("fs", "read.file/v2"), "fs__read_file_v2");
}

#[test]
fn a_tool_file_overrides_an_error_text_and_the_message_is_the_fallback() {
    let mut config = builtin();
    assert_eq!(
        text(&config, "srv__echo", "declined"),
        config.messages["mcp_declined"]
    );
    config.tools.insert(
        "srv__echo".into(),
        quire_config::ToolText {
            description: String::new(),
            parameters: serde_json::Value::Null,
            errors: [("declined".to_string(), "no {tool}".to_string())].into(),
        },
    );
    assert_eq!(text(&config, "srv__echo", "declined"), "no {tool}");
}
