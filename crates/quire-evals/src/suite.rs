//! Suites: a folder of tasks in the Ark benchmark layout plus an optional
//! `suite.toml` naming the suite and splitting its tasks.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use toml::Spanned;

use crate::error::EvalError;
use crate::metadata::{TaskMetadata, line_column};

/// The splits a suite may have, in this order.
pub const SPLITS: &[&str] = &["train", "val", "test"];

/// How the hidden evaluation runs when `suite.toml` does not say: from the
/// task root, after `evaluation/` was copied into the resulting tree.
pub const DEFAULT_EVALUATION_COMMAND: &str = "python3 -m pytest -q -p no:cacheprovider evaluation";

/// The split a folder without `suite.toml` puts every task in.
pub const DEFAULT_SPLIT: &str = "test";

/// One task folder.
#[derive(Debug, Clone)]
pub struct Task {
    /// The folder name.
    pub id: String,
    pub dir: PathBuf,
    /// Validated `metadata.json`, or why it is unusable (`file:line:col: …`).
    pub metadata: Result<TaskMetadata, String>,
}

impl Task {
    pub fn evaluation_dir(&self) -> PathBuf {
        self.dir.join("evaluation")
    }

    /// The reference solution, when the task has one.
    pub fn solution(&self) -> Option<PathBuf> {
        Some(self.dir.join("solution.patch")).filter(|p| p.is_file())
    }

    /// Its place in the suite's sequence (`order` in metadata.json).
    pub fn order(&self) -> Option<i64> {
        self.metadata.as_ref().ok()?.extra.get("order")?.as_i64()
    }
}

/// A loaded suite.
#[derive(Debug, Clone)]
pub struct Suite {
    pub name: String,
    pub description: String,
    /// Absolute path of the suite folder.
    pub root: PathBuf,
    /// `suite.toml`, when the folder has one.
    pub manifest: Option<PathBuf>,
    /// Every task folder, sorted by id.
    pub tasks: Vec<Task>,
    /// Split name → task ids, in the order the manifest lists them.
    pub splits: BTreeMap<String, Vec<String>>,
    /// Run from the task root after `evaluation/` is copied in.
    pub evaluation_command: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct SuiteFile {
    name: Spanned<String>,
    #[serde(default)]
    description: String,
    #[serde(default)]
    splits: SplitsFile,
    #[serde(default)]
    evaluation: Option<EvaluationFile>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct SplitsFile {
    #[serde(default)]
    train: Vec<Spanned<String>>,
    #[serde(default)]
    val: Vec<Spanned<String>>,
    #[serde(default)]
    test: Vec<Spanned<String>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct EvaluationFile {
    command: Spanned<String>,
}

/// The split selection a run is made of.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Selection {
    pub split: String,
    pub tasks: Vec<String>,
}

impl Suite {
    /// Loads a suite folder. `suite.toml` problems (syntax, unknown keys, a
    /// split naming a task that is not there, a task in two splits) are
    /// errors worded `suite.toml:line:column: …`; a task's unusable
    /// metadata is not, it is kept on the task for `check` to report.
    pub fn load(path: &Path) -> Result<Suite, EvalError> {
        let root = path.canonicalize().map_err(|e| EvalError::io(path, e))?;
        if !root.is_dir() {
            return Err(EvalError::Suite {
                path: root,
                message: "not a folder".into(),
            });
        }
        let tasks = discover_tasks(&root)?;
        let manifest = root.join("suite.toml");
        let folder_name = root
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "suite".into());
        if !manifest.is_file() {
            if tasks.is_empty() {
                let message = if root.join("metadata.json").is_file() {
                    "this is a task folder; pass the suite folder that holds it".into()
                } else {
                    "no suite.toml and no task folders (a task has metadata.json or prompt.txt)"
                        .into()
                };
                return Err(EvalError::Suite {
                    path: root,
                    message,
                });
            }
            let mut splits = BTreeMap::new();
            splits.insert(
                DEFAULT_SPLIT.to_string(),
                tasks.iter().map(|t| t.id.clone()).collect(),
            );
            return Ok(Suite {
                name: folder_name,
                description: String::new(),
                root,
                manifest: None,
                tasks,
                splits,
                evaluation_command: DEFAULT_EVALUATION_COMMAND.to_string(),
            });
        }
        let text = std::fs::read_to_string(&manifest).map_err(|e| EvalError::io(&manifest, e))?;
        let label = manifest.display().to_string();
        let at = |span: std::ops::Range<usize>| {
            let (line, column) = line_column(&text, span.start);
            format!("{label}:{line}:{column}")
        };
        let file: SuiteFile = toml::from_str(&text).map_err(|err| {
            let place = err.span().map_or_else(|| format!("{label}:1:1"), at);
            EvalError::SuiteFile(format!("{place}: {}", err.message().trim()))
        })?;
        if file.name.get_ref().trim().is_empty() {
            return Err(EvalError::SuiteFile(format!(
                "{}: `name` must not be empty",
                at(file.name.span())
            )));
        }
        let known: HashMap<&str, &Task> = tasks.iter().map(|t| (t.id.as_str(), t)).collect();
        let mut seen: HashMap<String, &str> = HashMap::new();
        let mut splits = BTreeMap::new();
        for (split, entries) in [
            ("train", &file.splits.train),
            ("val", &file.splits.val),
            ("test", &file.splits.test),
        ] {
            let mut ids = Vec::with_capacity(entries.len());
            for entry in entries {
                let id = entry.get_ref();
                if !known.contains_key(id.as_str()) {
                    return Err(EvalError::SuiteFile(format!(
                        "{}: split `{split}` names task `{id}`, but {} has no such task folder \
                         (one with metadata.json or prompt.txt)",
                        at(entry.span()),
                        root.display()
                    )));
                }
                if let Some(first) = seen.insert(id.clone(), split) {
                    return Err(EvalError::SuiteFile(format!(
                        "{}: task `{id}` is listed twice (first in split `{first}`)",
                        at(entry.span())
                    )));
                }
                ids.push(id.clone());
            }
            if !ids.is_empty() {
                splits.insert(split.to_string(), ids);
            }
        }
        let evaluation_command = match &file.evaluation {
            Some(e) if e.command.get_ref().trim().is_empty() => {
                return Err(EvalError::SuiteFile(format!(
                    "{}: `evaluation.command` must not be empty",
                    at(e.command.span())
                )));
            }
            Some(e) => e.command.get_ref().clone(),
            None => DEFAULT_EVALUATION_COMMAND.to_string(),
        };
        Ok(Suite {
            name: file.name.into_inner(),
            description: file.description,
            root,
            manifest: Some(manifest),
            tasks,
            splits,
            evaluation_command,
        })
    }

    pub fn task(&self, id: &str) -> Option<&Task> {
        self.tasks.iter().find(|t| t.id == id)
    }

    /// Task folders that no split lists (only possible with a manifest).
    pub fn unlisted(&self) -> Vec<&str> {
        self.tasks
            .iter()
            .filter(|t| !self.splits.values().any(|ids| ids.contains(&t.id)))
            .map(|t| t.id.as_str())
            .collect()
    }

    /// The split a task is in.
    pub fn split_of(&self, id: &str) -> Option<&str> {
        self.splits
            .iter()
            .find(|(_, ids)| ids.iter().any(|t| t == id))
            .map(|(split, _)| split.as_str())
    }

    /// The tasks of `split`, in their `order` (metadata.json), else in
    /// manifest order, narrowed to `only` when it
    /// is not empty. Asking for a task of another split, or an unknown
    /// one, is an error that says where it is.
    pub fn select(&self, split: &str, only: &[String]) -> Result<Selection, EvalError> {
        if !SPLITS.contains(&split) {
            return Err(EvalError::Selection(format!(
                "unknown split `{split}` (splits are {})",
                SPLITS.join(", ")
            )));
        }
        let mut ids = self.splits.get(split).cloned().unwrap_or_default();
        // A task's `order` in metadata.json puts it in sequence (what a
        // learn run follows); tasks without one keep the split's order.
        ids.sort_by_key(|id| self.task(id).and_then(Task::order).unwrap_or(i64::MAX));
        if ids.is_empty() {
            return Err(EvalError::Selection(format!(
                "suite {} has no tasks in split `{split}`",
                self.name
            )));
        }
        if only.is_empty() {
            return Ok(Selection {
                split: split.to_string(),
                tasks: ids,
            });
        }
        for id in only {
            if ids.contains(id) {
                continue;
            }
            let message = match self.split_of(id) {
                Some(other) => format!(
                    "task `{id}` is in split `{other}`, not `{split}` (use --split {other})"
                ),
                None => format!(
                    "suite {} has no task `{id}` (split `{split}` has: {})",
                    self.name,
                    ids.join(", ")
                ),
            };
            return Err(EvalError::Selection(message));
        }
        Ok(Selection {
            split: split.to_string(),
            tasks: ids.into_iter().filter(|id| only.contains(id)).collect(),
        })
    }

    /// The tasks named in `only`, each from whichever split lists it (a task
    /// named explicitly runs wherever it is listed), in the suite's order.
    /// The selection's split is theirs, or `a+b` when they span several.
    pub fn select_named(&self, only: &[String]) -> Result<Selection, EvalError> {
        let mut splits: Vec<&str> = Vec::new();
        let mut ids: Vec<String> = Vec::new();
        for id in only {
            let Some(split) = self.split_of(id) else {
                let known: Vec<&str> = self.tasks.iter().map(|t| t.id.as_str()).collect();
                let why = if self.task(id).is_some() {
                    format!("task `{id}` is in no split of suite {}", self.name)
                } else {
                    format!(
                        "suite {} has no task `{id}` (it has: {})",
                        self.name,
                        known.join(", ")
                    )
                };
                return Err(EvalError::Selection(why));
            };
            if !splits.contains(&split) {
                splits.push(split);
            }
            if !ids.contains(id) {
                ids.push(id.clone());
            }
        }
        if ids.is_empty() {
            return Err(EvalError::Selection("no task named".into()));
        }
        // The suite's order: splits in SPLITS order, then `order`, then the
        // split's list order.
        let position = |id: &String| {
            SPLITS
                .iter()
                .filter_map(|s| self.splits.get(*s))
                .flatten()
                .position(|t| t == id)
                .unwrap_or(usize::MAX)
        };
        ids.sort_by_key(|id| {
            (
                self.task(id).and_then(Task::order).unwrap_or(i64::MAX),
                position(id),
            )
        });
        splits.sort_by_key(|s| SPLITS.iter().position(|k| k == s));
        Ok(Selection {
            split: splits.join("+"),
            tasks: ids,
        })
    }
}

/// Sub-folders holding `metadata.json` or `prompt.txt`, sorted by name.
fn discover_tasks(root: &Path) -> Result<Vec<Task>, EvalError> {
    let mut tasks = Vec::new();
    for entry in std::fs::read_dir(root).map_err(|e| EvalError::io(root, e))? {
        let entry = entry.map_err(|e| EvalError::io(root, e))?;
        let dir = entry.path();
        let id = entry.file_name().to_string_lossy().into_owned();
        if id.starts_with('.') || !dir.is_dir() {
            continue;
        }
        let metadata_path = dir.join("metadata.json");
        if !metadata_path.is_file() && !dir.join("prompt.txt").is_file() {
            continue;
        }
        let metadata = if metadata_path.is_file() {
            TaskMetadata::load(&metadata_path, &id)
        } else {
            Err(format!("{}: missing", metadata_path.display()))
        };
        tasks.push(Task { id, dir, metadata });
    }
    tasks.sort_by(|a, b| a.id.cmp(&b.id));
    Ok(tasks)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn task(root: &Path, id: &str) {
        let dir = root.join(id);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("prompt.txt"), "Do it.").unwrap();
        std::fs::write(
            dir.join("metadata.json"),
            format!(
                r#"{{"id": "{id}", "title": "t", "category": "bugfix", "difficulty": "easy",
"language": "python", "test_command": "pytest", "dependencies": []}}"#
            ),
        )
        .unwrap();
    }

    fn suite_with(manifest: &str) -> (tempfile::TempDir, Result<Suite, EvalError>) {
        let dir = tempfile::tempdir().unwrap();
        for id in ["a", "b", "c"] {
            task(dir.path(), id);
        }
        std::fs::write(dir.path().join("suite.toml"), manifest).unwrap();
        let suite = Suite::load(dir.path());
        (dir, suite)
    }

    #[test]
    fn metadata_order_sequences_a_split_and_the_rest_keep_list_order() {
        let dir = tempfile::tempdir().unwrap();
        for (id, order) in [("a", Some(3)), ("b", None), ("c", Some(1)), ("d", None)] {
            task(dir.path(), id);
            if let Some(order) = order {
                let path = dir.path().join(id).join("metadata.json");
                let text = std::fs::read_to_string(&path).unwrap();
                let text = text.replacen('{', &format!("{{\"order\": {order}, "), 1);
                std::fs::write(&path, text).unwrap();
            }
        }
        std::fs::write(
            dir.path().join("suite.toml"),
            "name = \"s\"\n[splits]\ntest = [\"d\", \"a\", \"b\", \"c\"]\n",
        )
        .unwrap();
        let suite = Suite::load(dir.path()).unwrap();
        let selection = suite.select("test", &[]).unwrap();
        assert_eq!(selection.tasks, vec!["c", "a", "d", "b"]);
        let only = suite.select("test", &["b".into(), "a".into()]).unwrap();
        assert_eq!(only.tasks, vec!["a", "b"]);
    }

    #[test]
    fn folder_without_manifest_is_all_test() {
        let dir = tempfile::tempdir().unwrap();
        task(dir.path(), "b");
        task(dir.path(), "a");
        std::fs::create_dir(dir.path().join("not-a-task")).unwrap();
        let suite = Suite::load(dir.path()).unwrap();
        assert_eq!(suite.splits.get("test").unwrap(), &vec!["a", "b"]);
        assert_eq!(suite.tasks.len(), 2);
        assert!(suite.manifest.is_none());
        assert_eq!(suite.evaluation_command, DEFAULT_EVALUATION_COMMAND);
    }

    #[test]
    fn manifest_splits_keep_their_order() {
        let (_d, suite) = suite_with(
            "name = \"mini\"\ndescription = \"x\"\n[splits]\ntrain = [\"b\"]\ntest = [\"c\", \"a\"]\n",
        );
        let suite = suite.unwrap();
        assert_eq!(suite.name, "mini");
        assert_eq!(suite.splits.get("test").unwrap(), &vec!["c", "a"]);
        let sel = suite.select("test", &[]).unwrap();
        assert_eq!(sel.tasks, vec!["c", "a"]);
        let sel = suite.select("test", &["a".into()]).unwrap();
        assert_eq!(sel.tasks, vec!["a"]);
        let err = suite.select("test", &["b".into()]).unwrap_err().to_string();
        assert!(err.contains("split `train`"), "{err}");
        let err = suite.select("val", &[]).unwrap_err().to_string();
        assert!(err.contains("no tasks in split `val`"), "{err}");
        // Named without a split, a task runs from wherever it is listed.
        let sel = suite.select_named(&["b".into()]).unwrap();
        assert_eq!(
            (sel.split.as_str(), sel.tasks.clone()),
            ("train", vec!["b".to_string()])
        );
        let sel = suite.select_named(&["a".into(), "b".into()]).unwrap();
        assert_eq!(sel.split, "train+test");
        assert_eq!(sel.tasks, vec!["b", "a"]);
        let err = suite.select_named(&["zzz".into()]).unwrap_err().to_string();
        assert!(err.contains("no task `zzz`"), "{err}");
    }

    #[test]
    fn unknown_task_in_a_split_points_at_its_line() {
        let (_d, suite) =
            suite_with("name = \"mini\"\n[splits]\ntest = [\n  \"a\",\n  \"zzz\",\n]\n");
        let err = suite.unwrap_err().to_string();
        assert!(err.contains("suite.toml:5:3:"), "{err}");
        assert!(err.contains("`zzz`"), "{err}");
    }

    #[test]
    fn duplicate_and_syntax_and_unknown_key_errors() {
        let (_d, suite) = suite_with("name = \"m\"\n[splits]\ntrain = [\"a\"]\ntest = [\"a\"]\n");
        let err = suite.unwrap_err().to_string();
        assert!(
            err.contains("suite.toml:4:9:") && err.contains("twice"),
            "{err}"
        );
        let (_d, suite) = suite_with("name = \"m\"\n[splits]\ntest = [\"a\"\n");
        let err = suite.unwrap_err().to_string();
        assert!(err.contains("suite.toml:3:"), "{err}");
        let (_d, suite) = suite_with("name = \"m\"\n[splits]\nholdout = [\"a\"]\n");
        let err = suite.unwrap_err().to_string();
        assert!(
            err.contains("suite.toml:3:1:") && err.contains("holdout"),
            "{err}"
        );
        let (_d, suite) = suite_with("description = \"no name\"\n");
        let err = suite.unwrap_err().to_string();
        assert!(err.contains("name"), "{err}");
    }

    #[test]
    fn unlisted_tasks_are_reported() {
        let (_d, suite) = suite_with("name = \"m\"\n[splits]\ntest = [\"a\"]\n");
        assert_eq!(suite.unwrap().unlisted(), vec!["b", "c"]);
    }
}
