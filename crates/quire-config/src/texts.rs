//! The texts a tool's code renders, published by the crate that owns the
//! tool, so an agent folder that lacks one is refused when it loads rather
//! than showing the model a marker in the middle of a session.

use std::fmt;
use std::path::PathBuf;

use crate::AgentConfig;

/// The `[errors]` keys one tool's code renders.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ToolTexts {
    pub tool: &'static str,
    pub errors: &'static [&'static str],
}

/// A text a tool needs that the agent's `tools/<tool>.toml` lacks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MissingText {
    /// The file that should hold it.
    pub file: PathBuf,
    pub tool: String,
    /// `None`: the whole file is missing.
    pub key: Option<String>,
}

impl fmt::Display for MissingText {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.key {
            None => write!(
                f,
                "{}: missing (tool `{}` needs it)",
                self.file.display(),
                self.tool
            ),
            Some(key) => write!(
                f,
                "{}: [errors] has no `{key}` (tool `{}` renders it)",
                self.file.display(),
                self.tool
            ),
        }
    }
}

impl AgentConfig {
    /// The file a tool's texts come from: in the agent's folder, or in the
    /// built-in default.
    pub fn tool_file(&self, tool: &str) -> PathBuf {
        let relative = PathBuf::from("tools").join(format!("{tool}.toml"));
        match &self.dir {
            Some(dir) => dir.join(relative),
            None => PathBuf::from("<builtin default>").join(relative),
        }
    }

    /// Every text of `needed` that this config lacks, file and key named.
    pub fn missing_tool_texts(&self, needed: &[ToolTexts]) -> Vec<MissingText> {
        let mut missing = Vec::new();
        for texts in needed {
            let file = self.tool_file(texts.tool);
            let Some(tool) = self.tools.get(texts.tool) else {
                missing.push(MissingText {
                    file,
                    tool: texts.tool.to_string(),
                    key: None,
                });
                continue;
            };
            for key in texts.errors {
                if !tool.errors.contains_key(*key) {
                    missing.push(MissingText {
                        file: file.clone(),
                        tool: texts.tool.to_string(),
                        key: Some((*key).to_string()),
                    });
                }
            }
        }
        missing
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{AgentSource, Loader};

    #[test]
    fn a_missing_key_and_a_missing_file_are_named() {
        let mut config = Loader::new(Vec::new()).load(&AgentSource::Builtin).unwrap();
        config.dir = Some(PathBuf::from("/agents/mine"));
        config
            .tools
            .get_mut("edit_file")
            .unwrap()
            .errors
            .remove("no_match");
        let needed = [
            ToolTexts {
                tool: "edit_file",
                errors: &["not_read", "no_match"],
            },
            ToolTexts {
                tool: "no_such_tool",
                errors: &["x"],
            },
        ];
        let missing: Vec<String> = config
            .missing_tool_texts(&needed)
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(
            missing,
            vec![
                "/agents/mine/tools/edit_file.toml: [errors] has no `no_match` (tool `edit_file` renders it)",
                "/agents/mine/tools/no_such_tool.toml: missing (tool `no_such_tool` needs it)",
            ]
        );
    }
}
