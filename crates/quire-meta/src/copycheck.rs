//! The copy check: an edit must teach the agent something general, not
//! smuggle a task's words into it. Any run of `n` consecutive words shared
//! with a task prompt or a test file of the suite (every split: the loop
//! must not leak even val or test text) refuses the edit. Words are
//! compared normalised: lowercase, punctuation stripped.

use std::collections::HashSet;
use std::path::Path;

use quire_evals::Suite;

/// The default run length, in words.
pub const DEFAULT_NGRAM: usize = 8;

/// Lowercased words with punctuation stripped (`add(a, b)` → `add a b`).
pub fn words(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect()
}

/// Every run of `n` words of the suite's task texts.
#[derive(Debug, Clone)]
pub struct CopyGuard {
    n: usize,
    shingles: HashSet<String>,
}

impl CopyGuard {
    pub fn new(n: usize) -> CopyGuard {
        CopyGuard {
            n: n.max(1),
            shingles: HashSet::new(),
        }
    }

    /// Task prompts and every file under `tests/` and `evaluation/`.
    pub fn from_suite(suite: &Suite, n: usize) -> CopyGuard {
        let mut guard = CopyGuard::new(n);
        for task in &suite.tasks {
            if let Ok(text) = std::fs::read_to_string(task.dir.join("prompt.txt")) {
                guard.add(&text);
            }
            for sub in ["tests", "evaluation"] {
                guard.add_dir(&task.dir.join(sub));
            }
        }
        guard
    }

    fn add_dir(&mut self, dir: &Path) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for entry in entries.filter_map(Result::ok) {
            let path = entry.path();
            if path.is_dir() {
                self.add_dir(&path);
            } else if let Ok(text) = std::fs::read_to_string(&path) {
                self.add(&text);
            }
        }
    }

    pub fn add(&mut self, text: &str) {
        let words = words(text);
        for run in words.windows(self.n) {
            self.shingles.insert(run.join(" "));
        }
    }

    /// The first copied run of words in `text`, if any.
    pub fn copied(&self, text: &str) -> Option<String> {
        let words = words(text);
        words
            .windows(self.n)
            .map(|run| run.join(" "))
            .find(|run| self.shingles.contains(run))
    }

    pub fn ngram(&self) -> usize {
        self.n
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_of_words_are_caught_after_normalising() {
        let mut guard = CopyGuard::new(5);
        guard.add("`add(a, b)` in the calculator returns the difference instead of the sum.");
        assert_eq!(
            guard.copied("Note: the Calculator RETURNS the difference, instead of x"),
            Some("the calculator returns the difference".into())
        );
        assert_eq!(guard.copied("returns the difference of two numbers"), None);
        assert_eq!(words("Hello, World! x_y"), vec!["hello", "world", "x", "y"]);
    }
}
