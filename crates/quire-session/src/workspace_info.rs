use std::path::{Path, PathBuf};

use crate::error::SessionError;

/// What Quire learns about a workspace before a session starts.
#[derive(Debug, Clone)]
pub struct WorkspaceInfo {
    pub root: PathBuf,
    pub task: String,
    /// Contents of `AGENTS.md` at the root, when present.
    pub guidance: Option<String>,
    pub test_command: Option<String>,
    pub project: String,
}

/// Explicit choices from the command line; `None` means "work it out".
#[derive(Debug, Clone, Default)]
pub struct WorkspaceChoices {
    pub task: Option<String>,
    pub test_command: Option<String>,
    pub project: Option<String>,
}

impl WorkspaceInfo {
    /// Task: `--task`, else `prompt.txt`. Test command: `--test-cmd`, else the
    /// agent config's, else `metadata.json`'s `test_command`. Project: the
    /// override, else the git remote's repository name, else the folder name.
    pub fn discover(
        root: &Path,
        choices: &WorkspaceChoices,
        config_test_command: &str,
    ) -> Result<WorkspaceInfo, SessionError> {
        let root = root
            .canonicalize()
            .map_err(|source| SessionError::Workspace {
                path: root.to_path_buf(),
                message: format!("cannot open workspace: {source}"),
            })?;
        if !root.is_dir() {
            return Err(SessionError::Workspace {
                path: root,
                message: "not a directory".into(),
            });
        }
        let task = match &choices.task {
            Some(task) if !task.trim().is_empty() => task.trim().to_string(),
            _ => read_task(&root)?,
        };
        let guidance = read_optional(&root.join("AGENTS.md"))?.filter(|g| !g.trim().is_empty());
        let test_command = choices
            .test_command
            .clone()
            .filter(|c| !c.trim().is_empty())
            .or_else(|| Some(config_test_command.to_string()).filter(|c| !c.trim().is_empty()))
            .or(metadata_test_command(&root)?);
        let project = choices
            .project
            .clone()
            .filter(|p| !p.trim().is_empty())
            .unwrap_or_else(|| project_name(&root));
        Ok(WorkspaceInfo {
            root,
            task,
            guidance,
            test_command,
            project,
        })
    }
}

fn read_optional(path: &Path) -> Result<Option<String>, SessionError> {
    match std::fs::read_to_string(path) {
        Ok(text) => Ok(Some(text)),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(source) => Err(SessionError::Io {
            path: path.to_path_buf(),
            source,
        }),
    }
}

fn read_task(root: &Path) -> Result<String, SessionError> {
    let path = root.join("prompt.txt");
    match read_optional(&path)? {
        Some(text) if !text.trim().is_empty() => Ok(text.trim().to_string()),
        Some(_) => Err(SessionError::Workspace {
            path,
            message: "prompt.txt is empty; write the task there or pass --task".into(),
        }),
        None => Err(SessionError::Workspace {
            path: root.to_path_buf(),
            message:
                "no task: pass --task \"…\" or put the task in prompt.txt at the workspace root"
                    .into(),
        }),
    }
}

fn metadata_test_command(root: &Path) -> Result<Option<String>, SessionError> {
    let path = root.join("metadata.json");
    let Some(text) = read_optional(&path)? else {
        return Ok(None);
    };
    let value: serde_json::Value =
        serde_json::from_str(&text).map_err(|err| SessionError::Workspace {
            path: path.clone(),
            message: format!("line {}, column {}: {err}", err.line(), err.column()),
        })?;
    match value.get("test_command") {
        None | Some(serde_json::Value::Null) => Ok(None),
        Some(serde_json::Value::String(cmd)) if !cmd.trim().is_empty() => Ok(Some(cmd.clone())),
        Some(other) => Err(SessionError::Workspace {
            path,
            message: format!("`test_command` must be a non-empty string, found {other}"),
        }),
    }
}

/// The repository name from `.git/config`'s first remote URL, else the folder name.
fn project_name(root: &Path) -> String {
    let from_remote = std::fs::read_to_string(root.join(".git/config"))
        .ok()
        .and_then(|config| {
            config
                .lines()
                .map(str::trim)
                .find_map(|line| {
                    line.strip_prefix("url")
                        .map(|rest| rest.trim_start_matches([' ', '=']).trim().to_string())
                })
                .and_then(|url| {
                    let name = url
                        .trim_end_matches('/')
                        .rsplit(['/', ':'])
                        .next()?
                        .trim_end_matches(".git")
                        .to_string();
                    (!name.is_empty()).then_some(name)
                })
        });
    from_remote.unwrap_or_else(|| {
        root.file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "workspace".into())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ws() -> tempfile::TempDir {
        tempfile::tempdir().unwrap()
    }

    #[test]
    fn task_comes_from_flag_then_prompt_file() {
        let dir = ws();
        std::fs::write(dir.path().join("prompt.txt"), "  Fix the bug.\n").unwrap();
        let info = WorkspaceInfo::discover(dir.path(), &WorkspaceChoices::default(), "").unwrap();
        assert_eq!(info.task, "Fix the bug.");
        let choices = WorkspaceChoices {
            task: Some("Other".into()),
            ..Default::default()
        };
        assert_eq!(
            WorkspaceInfo::discover(dir.path(), &choices, "")
                .unwrap()
                .task,
            "Other"
        );
    }

    #[test]
    fn missing_task_is_a_clear_error() {
        let dir = ws();
        let err = WorkspaceInfo::discover(dir.path(), &WorkspaceChoices::default(), "")
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("prompt.txt") && err.contains("--task"),
            "{err}"
        );
    }

    #[test]
    fn test_command_precedence_flag_config_metadata() {
        let dir = ws();
        std::fs::write(dir.path().join("prompt.txt"), "t").unwrap();
        std::fs::write(
            dir.path().join("metadata.json"),
            r#"{"test_command": "pytest -q"}"#,
        )
        .unwrap();
        let info = WorkspaceInfo::discover(dir.path(), &WorkspaceChoices::default(), "").unwrap();
        assert_eq!(info.test_command.as_deref(), Some("pytest -q"));
        let info =
            WorkspaceInfo::discover(dir.path(), &WorkspaceChoices::default(), "make test").unwrap();
        assert_eq!(info.test_command.as_deref(), Some("make test"));
        let choices = WorkspaceChoices {
            test_command: Some("cargo test".into()),
            ..Default::default()
        };
        assert_eq!(
            WorkspaceInfo::discover(dir.path(), &choices, "make test")
                .unwrap()
                .test_command
                .as_deref(),
            Some("cargo test")
        );
    }

    #[test]
    fn malformed_metadata_names_file_and_line() {
        let dir = ws();
        std::fs::write(dir.path().join("prompt.txt"), "t").unwrap();
        std::fs::write(
            dir.path().join("metadata.json"),
            "{\n  \"test_command\": ,\n}",
        )
        .unwrap();
        let err = WorkspaceInfo::discover(dir.path(), &WorkspaceChoices::default(), "")
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("metadata.json") && err.contains("line 2"),
            "{err}"
        );
    }

    #[test]
    fn project_from_git_remote_then_folder() {
        let dir = ws();
        std::fs::write(dir.path().join("prompt.txt"), "t").unwrap();
        let folder = dir
            .path()
            .canonicalize()
            .unwrap()
            .file_name()
            .unwrap()
            .to_string_lossy()
            .into_owned();
        assert_eq!(
            WorkspaceInfo::discover(dir.path(), &WorkspaceChoices::default(), "")
                .unwrap()
                .project,
            folder
        );
        std::fs::create_dir(dir.path().join(".git")).unwrap();
        std::fs::write(
            dir.path().join(".git/config"),
            "[remote \"origin\"]\n\turl = git@github.com:acme/shop-app.git\n",
        )
        .unwrap();
        assert_eq!(
            WorkspaceInfo::discover(dir.path(), &WorkspaceChoices::default(), "")
                .unwrap()
                .project,
            "shop-app"
        );
    }

    #[test]
    fn agents_md_is_read_as_guidance() {
        let dir = ws();
        std::fs::write(dir.path().join("prompt.txt"), "t").unwrap();
        std::fs::write(dir.path().join("AGENTS.md"), "Use tabs.").unwrap();
        let info = WorkspaceInfo::discover(dir.path(), &WorkspaceChoices::default(), "").unwrap();
        assert_eq!(info.guidance.as_deref(), Some("Use tabs."));
    }
}
