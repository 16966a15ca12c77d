//! What the tools remember during a session, shared through `ctx.state` so
//! reminders, the finish check and the session driver can read it.

use std::collections::BTreeMap;

/// Per-session workspace facts, kept in [`quire_core::StateMap`].
#[derive(Debug, Clone, Default)]
pub struct WorkspaceState {
    /// Files the model has seen, by workspace-relative path (`/`-separated),
    /// with the sha256 of their content when last read or written by a tool.
    pub files_read: BTreeMap<String, String>,
    /// The latest `run_tests` result in full (the files changed and whether
    /// the tests ran since are published in [`quire_core::WorkFacts`]).
    pub last_test: Option<TestSummary>,
    /// How many times `run_tests` ran; the session driver compares it with
    /// what it has recorded to emit one `TestRun` event per run.
    pub test_runs: u32,
    /// Consecutive failed `edit_file`/`apply_patch` attempts per path, reset
    /// by a successful change of that path (reminders key off it).
    pub edit_failures: BTreeMap<String, u32>,
    /// The command `run_tests` runs, set by the `tests` extension when it
    /// starts; `None` when tests cannot be run, so `finish` does not demand
    /// them.
    pub test_command: Option<String>,
}

impl WorkspaceState {
    /// Whether `path` was read (or written) in this session.
    pub fn was_read(&self, path: &str) -> bool {
        self.files_read.contains_key(path)
    }

    /// Records that `path` was seen with content hash `hash`.
    pub(crate) fn mark_read(&mut self, path: &str, hash: String) {
        self.files_read.insert(path.to_string(), hash);
    }

    /// Records a successful change to `path` with its new content hash
    /// (the caller publishes it in `ctx.facts`).
    pub(crate) fn mark_edited(&mut self, path: &str, hash: String) {
        self.mark_read(path, hash);
        self.edit_failures.remove(path);
    }

    /// Counts a failed change attempt on `path`.
    pub(crate) fn note_edit_failure(&mut self, path: &str) {
        *self.edit_failures.entry(path.to_string()).or_insert(0) += 1;
    }

    /// Forgets a file (deleted by a patch).
    pub(crate) fn mark_deleted(&mut self, path: &str) {
        self.files_read.remove(path);
        self.edit_failures.remove(path);
    }
}

/// One `run_tests` result: everything a `TestRun` event records.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct TestSummary {
    pub command: String,
    /// `None` when the process was killed (timeout) or died by a signal.
    pub exit_code: Option<i32>,
    pub passed: Option<u32>,
    pub failed: Option<u32>,
    pub errors: Option<u32>,
    pub timed_out: bool,
    pub failing_tests: Vec<String>,
    /// The compact digest the model read.
    pub digest: String,
    /// The full (capped) output the user sees.
    pub output: String,
    pub duration_ms: u64,
}

impl TestSummary {
    /// Exit code 0 and not timed out.
    pub fn succeeded(&self) -> bool {
        self.exit_code == Some(0) && !self.timed_out
    }
}

fn is_edit(tool: &str) -> bool {
    matches!(
        tool,
        crate::edit::TOOL | crate::write::TOOL | crate::patch::TOOL
    )
}

/// [`crate::util::edit_targets`] of a call's raw arguments.
fn targets(arguments: &str) -> Vec<String> {
    match serde_json::from_str::<serde_json::Value>(arguments) {
        Ok(serde_json::Value::Object(args)) => crate::util::edit_targets(&args),
        _ => Vec::new(),
    }
}

/// Rebuilds what the tools knew from a resumed conversation: files read or
/// changed by successful calls, and whether an edit followed the last test
/// run. Hashes are taken from the session copy as it is now.
pub(crate) fn rebuild(
    copy: &quire_workspace::SessionCopy,
    messages: &[quire_types::Message],
) -> (WorkspaceState, quire_core::WorkFacts) {
    use quire_types::Message;
    let mut state = WorkspaceState::default();
    let mut facts = quire_core::WorkFacts::default();
    let mut calls = std::collections::HashMap::new();
    let hash_of = |rel: &str| {
        copy.resolve(rel)
            .ok()
            .and_then(|p| std::fs::read(p).ok())
            .map(|bytes| crate::util::content_hash(&bytes))
    };
    for message in messages {
        match message {
            Message::Assistant { tool_calls, .. } => {
                for call in tool_calls {
                    calls.insert(call.id.clone(), call.clone());
                }
            }
            Message::Tool {
                call_id,
                is_error: true,
                ..
            } => {
                if let Some(call) = calls.get(call_id)
                    && is_edit(&call.name)
                {
                    facts.edit_call(call_id, targets(&call.arguments), false);
                }
            }
            Message::Tool {
                call_id,
                is_error: false,
                content,
                ..
            } => {
                let Some(call) = calls.get(call_id) else {
                    continue;
                };
                if is_edit(&call.name) {
                    facts.edit_call(call_id, targets(&call.arguments), true);
                }
                let args: serde_json::Value =
                    serde_json::from_str(&call.arguments).unwrap_or_default();
                let path = args
                    .get("path")
                    .and_then(|p| p.as_str())
                    .unwrap_or_default();
                match call.name.as_str() {
                    crate::read::TOOL => {
                        if let Some(hash) = hash_of(path) {
                            state.mark_read(path, hash);
                        }
                    }
                    crate::edit::TOOL | crate::write::TOOL => {
                        if let Some(hash) = hash_of(path) {
                            state.mark_edited(path, hash);
                            facts.touched(path);
                        }
                    }
                    crate::patch::TOOL => {
                        let text = args
                            .get("patch")
                            .and_then(|p| p.as_str())
                            .unwrap_or_default();
                        let repaired = quire_patch::repair(text);
                        let paths: Vec<String> = match quire_patch::parse(&repaired.patch_text) {
                            Ok(patch) => patch.files.iter().map(|f| f.path().to_string()).collect(),
                            // Compaction fades a big patch to its `---`/`+++` lines.
                            Err(_) => quire_patch::header_paths(text),
                        };
                        for path in paths {
                            match hash_of(&path) {
                                Some(hash) => state.mark_edited(&path, hash),
                                None => state.mark_deleted(&path),
                            }
                            facts.touched(&path);
                        }
                    }
                    // What the run found is not in the conversation's
                    // facts; only that the tests ran after the edits.
                    crate::run_tests::TOOL => {
                        facts.edited_since_test = false;
                        state.test_runs += 1;
                    }
                    // The files that hits show were seen.
                    crate::search::TOOL => {
                        for line in content.lines() {
                            if let Some((path, _)) = crate::search::hit_location(line)
                                && !state.was_read(path)
                                && let Some(hash) = hash_of(path)
                            {
                                state.mark_read(path, hash);
                            }
                        }
                    }
                    _ => {}
                }
            }
            _ => {}
        }
    }
    (state, facts)
}

#[cfg(test)]
mod tests {
    use quire_types::{Message, ToolCall};

    #[test]
    fn a_resumed_session_remembers_files_seen_through_search() {
        let dir = tempfile::tempdir().unwrap();
        let original = dir.path().join("original");
        std::fs::create_dir_all(original.join("src")).unwrap();
        std::fs::write(original.join("src/a.py"), "import lookup\n").unwrap();
        std::fs::write(original.join("src/b.py"), "x = 1\n").unwrap();
        let copy =
            quire_workspace::SessionCopy::create(&original, &dir.path().join("copy")).unwrap();
        let messages = vec![
            Message::user("task"),
            Message::assistant(
                "",
                vec![ToolCall::new("c1", "search", r#"{"pattern":"lookup"}"#)],
            ),
            Message::tool(
                "c1",
                "search",
                "src/a.py:1:import lookup\n(showing 1 of 2 matches in 2 files; narrow it)",
                false,
            ),
        ];
        let (state, _) = super::rebuild(&copy, &messages);
        assert!(state.was_read("src/a.py"));
        assert!(!state.was_read("src/b.py"));
    }

    #[test]
    fn a_resumed_session_knows_what_each_edit_call_aimed_at() {
        let dir = tempfile::tempdir().unwrap();
        let original = dir.path().join("original");
        std::fs::create_dir_all(&original).unwrap();
        std::fs::write(original.join("a.py"), "x = 2\n").unwrap();
        let copy =
            quire_workspace::SessionCopy::create(&original, &dir.path().join("copy")).unwrap();
        let faded = r#"{"patch":"[900 chars faded]\n--- a/a.py\n+++ b/a.py"}"#;
        let messages = vec![
            Message::user("task"),
            Message::assistant("", vec![ToolCall::new("p1", "apply_patch", faded)]),
            Message::tool("p1", "apply_patch", "Patch applied: M a.py.", false),
            Message::assistant(
                "",
                vec![ToolCall::new("e1", "edit_file", r#"{"path":"./b.py"}"#)],
            ),
            Message::tool("e1", "edit_file", "no match", true),
        ];
        let (_, facts) = super::rebuild(&copy, &messages);
        let edits: Vec<(&str, &[String], bool)> = facts
            .edits
            .iter()
            .map(|e| (e.call_id.as_str(), e.paths.as_slice(), e.applied))
            .collect();
        assert_eq!(
            edits,
            vec![
                ("p1", &["a.py".to_string()][..], true),
                ("e1", &["b.py".to_string()][..], false),
            ]
        );
    }

    #[test]
    fn a_faded_patch_still_names_the_files_it_changed() {
        let faded = "[900 characters faded]\n--- a/src/a.py\n+++ b/src/a.py\n--- a/gone.py\n+++ /dev/null\n--- /dev/null\n+++ b/new.py";
        assert_eq!(
            quire_patch::header_paths(faded),
            vec!["src/a.py".to_string(), "gone.py".into(), "new.py".into()]
        );
    }
}
