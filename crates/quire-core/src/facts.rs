//! What the tools found out about the work, published in core so the
//! extensions above them (guidance, notes) and the finish check read one
//! fact each instead of rescanning the conversation or another crate's
//! state.

/// How the last test run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TestOutcome {
    Passed,
    /// Ran to the end with a nonzero exit code (or died by a signal).
    Failed,
    TimedOut,
}

impl TestOutcome {
    pub fn passed(self) -> bool {
        self == TestOutcome::Passed
    }
}

/// The facts of one session's work, in [`crate::Ctx::facts`]. Written by
/// the tools that change files and run tests; read by everyone else.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct WorkFacts {
    /// Files a tool changed (or deleted), workspace-relative, in the order
    /// first changed.
    pub touched: Vec<String>,
    /// A tool changed a file after the last test run (or none ran since
    /// the first change): the one answer to "tested since the last edit?".
    pub edited_since_test: bool,
    /// How the last test run of this session ended; `None` before one.
    pub last_test: Option<TestOutcome>,
    /// Every call of a file-changing tool, in order: the files it aimed at
    /// and whether it changed them, so the crates above know what a call
    /// did without reading its arguments' format (a patch).
    pub edits: Vec<EditCall>,
}

/// The files one call of a file-changing tool aimed at.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EditCall {
    /// The id of the tool call.
    pub call_id: String,
    /// Workspace-relative, in the order the call names them, once each.
    pub paths: Vec<String>,
    /// The call succeeded (its files changed); `false`: it was refused.
    pub applied: bool,
}

impl WorkFacts {
    /// A file-changing tool call `call_id` aimed at `paths`; `applied`: it
    /// succeeded.
    pub fn edit_call(&mut self, call_id: &str, paths: Vec<String>, applied: bool) {
        self.edits.push(EditCall {
            call_id: call_id.to_string(),
            paths,
            applied,
        });
    }

    /// The files call `call_id` aimed at; empty for a call that changes no
    /// file (or one this session's tools never saw).
    pub fn edit_paths(&self, call_id: &str) -> &[String] {
        self.edits
            .iter()
            .rev()
            .find(|e| e.call_id == call_id)
            .map_or(&[], |e| e.paths.as_slice())
    }

    /// A tool changed `path`.
    pub fn touched(&mut self, path: &str) {
        if !self.touched.iter().any(|p| p == path) {
            self.touched.push(path.to_string());
        }
        self.edited_since_test = true;
    }

    /// The tests ran and ended with `outcome`. A run that timed out counts
    /// too: the model has seen what the tests do with its change.
    pub fn tested(&mut self, outcome: TestOutcome) {
        self.last_test = Some(outcome);
        self.edited_since_test = false;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_edit_after_the_tests_is_untested_until_they_run_again() {
        let mut facts = WorkFacts::default();
        assert!(!facts.edited_since_test);
        facts.touched("a.py");
        facts.touched("b.py");
        facts.touched("a.py");
        assert_eq!(facts.touched, vec!["a.py".to_string(), "b.py".into()]);
        assert!(facts.edited_since_test);
        facts.tested(TestOutcome::TimedOut);
        assert!(!facts.edited_since_test);
        assert!(!facts.last_test.unwrap().passed());
        facts.touched("b.py");
        assert!(facts.edited_since_test);
        facts.tested(TestOutcome::Passed);
        assert!(facts.last_test.unwrap().passed());
    }

    #[test]
    fn an_edit_call_is_found_by_its_id() {
        let mut facts = WorkFacts::default();
        facts.edit_call("c1", vec!["a.py".into()], true);
        facts.edit_call("c2", vec!["b.py".into(), "c.py".into()], false);
        assert_eq!(facts.edit_paths("c2"), ["b.py", "c.py"]);
        assert_eq!(facts.edit_paths("c1"), ["a.py"]);
        assert!(facts.edit_paths("c3").is_empty());
    }
}
