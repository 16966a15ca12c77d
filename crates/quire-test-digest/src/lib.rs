//! Condensing test-runner output into what matters: counts, the failing
//! tests, the first error lines.
//!
//! Understands pytest well, cargo test, Jest, node's test runner and go test
//! cheaply, and falls back to the exit code and the last lines.

/// At most this many failing test names are kept.
const MAX_FAILING: usize = 15;
/// At most this many error lines are kept.
const MAX_ERROR_LINES: usize = 20;
/// Longer lines are cut to this many characters.
const MAX_LINE_CHARS: usize = 300;

/// Which test framework (runner) the output came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TestFramework {
    Pytest,
    Cargo,
    Jest,
    NodeTest,
    GoTest,
    /// Unrecognised: only the exit code and the last lines are meaningful
    /// (counts come from a plain `N passed, M failed` line if there is one).
    Unknown,
}

/// A compact summary of a test run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TestDigest {
    pub framework: TestFramework,
    pub exit_code: Option<i32>,
    pub passed: Option<u32>,
    pub failed: Option<u32>,
    pub errors: Option<u32>,
    pub skipped: Option<u32>,
    /// Failing (or erroring) tests, in order of appearance, deduplicated.
    pub failing_tests: Vec<String>,
    /// How many more failing tests were left out of `failing_tests`.
    pub more_failing: usize,
    /// The first assertion/error lines (or, for an unknown runner that
    /// failed, the last lines of output).
    pub first_error_lines: Vec<String>,
    /// The runner's own closing summary line, if found.
    pub summary_line: Option<String>,
}

impl TestDigest {
    /// True when the exit code is 0 and no failures or errors were counted.
    pub fn success(&self) -> bool {
        self.exit_code == Some(0) && self.failed.unwrap_or(0) == 0 && self.errors.unwrap_or(0) == 0
    }

    /// A few plain lines: exit code and counts, the summary line, failing
    /// tests, error lines.
    pub fn render(&self) -> String {
        let mut out = String::new();
        let code = self
            .exit_code
            .map_or_else(|| "none (killed)".to_string(), |c| c.to_string());
        let mut counts = Vec::new();
        for (n, label) in [
            (self.passed, "passed"),
            (self.failed, "failed"),
            (self.errors, "errors"),
            (self.skipped, "skipped"),
        ] {
            if let Some(n) = n {
                counts.push(format!("{n} {label}"));
            }
        }
        out.push_str(&format!("exit code {code}"));
        if !counts.is_empty() {
            out.push_str(&format!("; {}", counts.join(", ")));
        }
        out.push('\n');
        if let Some(s) = &self.summary_line {
            out.push_str(&format!("summary: {s}\n"));
        }
        if !self.failing_tests.is_empty() {
            let more = if self.more_failing > 0 {
                format!(" (+{} more)", self.more_failing)
            } else {
                String::new()
            };
            out.push_str(&format!("failing{more}:\n"));
            for t in &self.failing_tests {
                out.push_str(&format!("  {t}\n"));
            }
        }
        if !self.first_error_lines.is_empty() {
            out.push_str("errors:\n");
            for l in &self.first_error_lines {
                out.push_str(&format!("  {l}\n"));
            }
        }
        out
    }
}

/// Summarise test output given the command's exit code.
pub fn digest_test_output(output: &str, exit_code: Option<i32>) -> TestDigest {
    let clean = strip_ansi(output);
    let lines: Vec<&str> = clean.lines().map(|l| l.trim_end_matches('\r')).collect();
    let mut d = cargo(&lines)
        .or_else(|| pytest(&lines))
        .or_else(|| jest(&lines))
        .or_else(|| node(&lines))
        .or_else(|| go(&lines))
        .unwrap_or_else(|| generic(&lines, exit_code));
    d.exit_code = exit_code;
    d.finish();
    d
}

impl TestDigest {
    fn empty(framework: TestFramework) -> Self {
        TestDigest {
            framework,
            exit_code: None,
            passed: None,
            failed: None,
            errors: None,
            skipped: None,
            failing_tests: Vec::new(),
            more_failing: 0,
            first_error_lines: Vec::new(),
            summary_line: None,
        }
    }

    fn fail(&mut self, name: &str) {
        let name = clip(name.trim());
        if !name.is_empty() && !self.failing_tests.contains(&name) {
            self.failing_tests.push(name);
        }
    }

    fn error_line(&mut self, line: &str) {
        if self.first_error_lines.len() < MAX_ERROR_LINES * 2 {
            let l = clip(line.trim());
            if !l.is_empty() {
                self.first_error_lines.push(l);
            }
        }
    }

    /// Apply the caps.
    fn finish(&mut self) {
        if self.failing_tests.len() > MAX_FAILING {
            self.more_failing = self.failing_tests.len() - MAX_FAILING;
            self.failing_tests.truncate(MAX_FAILING);
        }
        self.first_error_lines.truncate(MAX_ERROR_LINES);
    }
}

fn clip(s: &str) -> String {
    if s.chars().count() <= MAX_LINE_CHARS {
        s.to_string()
    } else {
        let mut t: String = s.chars().take(MAX_LINE_CHARS).collect();
        t.push('…');
        t
    }
}

/// Remove ANSI escape sequences (colours, cursor moves).
fn strip_ansi(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\u{1b}' {
            out.push(c);
            continue;
        }
        if chars.peek() == Some(&'[') {
            chars.next();
            for c in chars.by_ref() {
                if ('@'..='~').contains(&c) {
                    break;
                }
            }
        } else {
            chars.next();
        }
    }
    out
}

#[derive(Default)]
struct Counts {
    passed: Option<u32>,
    failed: Option<u32>,
    errors: Option<u32>,
    skipped: Option<u32>,
}

fn add(slot: &mut Option<u32>, n: u32) {
    *slot = Some(slot.unwrap_or(0).saturating_add(n));
}

/// Parse `1 failed, 2 passed, 1 error` (separators `,` or `;`). Every item
/// must be `N word` with a known word.
fn parse_counts(list: &str) -> Option<Counts> {
    let mut c = Counts::default();
    let mut any = false;
    for item in list.split([',', ';']) {
        let item = item.trim();
        if item.is_empty() {
            continue;
        }
        let (num, word) = item.split_once(' ')?;
        let n: u32 = num.trim().parse().ok()?;
        match word.trim() {
            "passed" | "pass" | "passing" => add(&mut c.passed, n),
            "failed" | "fail" | "failing" => add(&mut c.failed, n),
            "error" | "errors" => add(&mut c.errors, n),
            "skipped" | "ignored" | "pending" | "todo" => add(&mut c.skipped, n),
            "xfailed" | "xpassed" | "warning" | "warnings" | "deselected" | "rerun"
            | "measured" | "filtered out" | "total" => {}
            // pytest's subtests (Python 3.11+ `self.subTest` under pytest 9):
            // counted apart; a failing one also fails its test, counted above.
            w if w.starts_with("subtests ") => {}
            _ => return None,
        }
        any = true;
    }
    any.then_some(c)
}

fn set_counts(d: &mut TestDigest, c: Counts) {
    d.passed = c.passed.or(Some(0));
    d.failed = c.failed.or(Some(0));
    d.errors = c.errors.or(Some(0));
    d.skipped = c.skipped.or(Some(0));
}

/// pytest's closing line: `==== 1 failed, 2 passed in 0.12s ====`.
fn pytest_summary(line: &str) -> Option<Counts> {
    let t = line.trim().trim_matches('=').trim();
    if t.starts_with("no tests ran") {
        return Some(Counts::default());
    }
    let (list, time) = t.rsplit_once(" in ")?;
    let time = time.trim();
    if !(time.ends_with('s') || time.ends_with(')')) {
        return None;
    }
    parse_counts(list)
}

/// The test id in `FAILED tests/x.py::test_y[p - q] - AssertionError: …`.
fn pytest_id(rest: &str) -> &str {
    let search_from = match (rest.find('['), rest.find(" - ")) {
        (Some(open), Some(dash)) if open < dash => rest[open..].find(']').map_or(0, |c| open + c),
        _ => 0,
    };
    match rest[search_from..].find(" - ") {
        Some(i) => &rest[..search_from + i],
        None => rest,
    }
}

fn pytest(lines: &[&str]) -> Option<TestDigest> {
    let mut d = TestDigest::empty(TestFramework::Pytest);
    let mut seen = false;
    for line in lines {
        if line.contains("test session starts") {
            seen = true;
        }
        if let Some(c) = pytest_summary(line) {
            // The last summary wins (e.g. with reruns).
            set_counts(&mut d, c);
            d.summary_line = Some(clip(line.trim()));
            seen = true;
        }
        if let Some(rest) = line.strip_prefix("FAILED ") {
            d.fail(pytest_id(rest));
            seen = true;
        } else if let Some(rest) = line.strip_prefix("ERROR ") {
            d.fail(pytest_id(rest));
            seen = true;
        } else if let Some(i) = line.find(" ERROR collecting ") {
            let name = line[i + " ERROR collecting ".len()..].trim_end_matches(['_', ' ']);
            d.fail(name);
            seen = true;
        } else if line.contains("::") && (line.contains(" FAILED") || line.contains(" ERROR")) {
            // Verbose mode: `tests/x.py::test_y FAILED [ 50%]`.
            if let Some(id) = line.split_whitespace().next().filter(|s| s.contains("::")) {
                d.fail(id);
            }
        }
        let trimmed = line.trim_start();
        if trimmed.starts_with("E ")
            || *line == "E"
            || is_location_line(trimmed)
            || trimmed.starts_with("ImportError while importing")
        {
            d.error_line(line);
        }
    }
    seen.then_some(d)
}

/// `tests/test_x.py:12: AssertionError`-style lines.
fn is_location_line(line: &str) -> bool {
    let Some((path, rest)) = line.split_once(':') else {
        return false;
    };
    let Some((num, what)) = rest.split_once(": ") else {
        return false;
    };
    path.ends_with(".py")
        && !path.contains(' ')
        && !num.is_empty()
        && num.chars().all(|c| c.is_ascii_digit())
        && !what.trim().is_empty()
}

fn cargo(lines: &[&str]) -> Option<TestDigest> {
    let mut d = TestDigest::empty(TestFramework::Cargo);
    let mut seen = false;
    let mut counts = Counts::default();
    let mut panic_lines = 0usize;
    for line in lines {
        if let Some(rest) = line.strip_prefix("test result: ") {
            // `FAILED. 3 passed; 1 failed; 0 ignored; …; finished in 0.00s`
            let list = rest.split_once(". ").map_or(rest, |(_, l)| l);
            let list = list.split("; finished").next().unwrap_or(list);
            if let Some(c) = parse_counts(list) {
                for (slot, n) in [
                    (&mut counts.passed, c.passed),
                    (&mut counts.failed, c.failed),
                    (&mut counts.skipped, c.skipped),
                ] {
                    if let Some(n) = n {
                        add(slot, n);
                    }
                }
                seen = true;
                d.summary_line = Some(clip(line.trim()));
            }
        }
        if let Some(name) = line
            .strip_prefix("test ")
            .and_then(|r| r.strip_suffix(" ... FAILED"))
        {
            d.fail(name);
        }
        if panic_lines > 0 {
            if line.trim().is_empty() || line.starts_with("note:") {
                panic_lines = 0;
            } else {
                d.error_line(line);
                panic_lines -= 1;
            }
        }
        if line.starts_with("thread '") && line.contains("panicked at") {
            d.error_line(line);
            panic_lines = 4;
        } else if line.starts_with("error[E")
            || line.starts_with("error: ")
            || line.starts_with("  --> ")
        {
            d.error_line(line);
            if line.starts_with("error: could not compile") {
                seen = true;
            }
        }
    }
    if !seen {
        return None;
    }
    if counts.passed.is_some() || counts.failed.is_some() {
        d.passed = counts.passed.or(Some(0));
        d.failed = counts.failed.or(Some(0));
        d.skipped = counts.skipped.or(Some(0));
        d.errors = Some(0);
    }
    Some(d)
}

fn jest(lines: &[&str]) -> Option<TestDigest> {
    let mut d = TestDigest::empty(TestFramework::Jest);
    let mut seen = false;
    for line in lines {
        let t = line.trim();
        if let Some(c) = t.strip_prefix("Tests:").and_then(parse_counts) {
            set_counts(&mut d, c);
            d.summary_line = Some(clip(t));
            seen = true;
        }
        if let Some(name) = t.strip_prefix("● ") {
            if !name.starts_with("Console") {
                d.fail(name);
            }
        } else if t.starts_with("Expected:")
            || t.starts_with("Received:")
            || t.starts_with("expect(")
            || t.starts_with("Error:")
            || t.starts_with("TypeError:")
        {
            d.error_line(t);
        }
    }
    seen.then_some(d)
}

fn node(lines: &[&str]) -> Option<TestDigest> {
    let mut d = TestDigest::empty(TestFramework::NodeTest);
    let mut seen = false;
    let mut c = Counts::default();
    for line in lines {
        let t = line.trim();
        let stat = t.strip_prefix("# ").or_else(|| t.strip_prefix("ℹ "));
        let stat = stat
            .and_then(|s| s.split_once(' '))
            .and_then(|(word, n)| Some((word, n.trim().parse::<u32>().ok()?)));
        if let Some((word, n)) = stat {
            match word {
                "pass" => c.passed = Some(n),
                "fail" => c.failed = Some(n),
                "skipped" => c.skipped = Some(n),
                "tests" => {}
                _ => continue,
            }
            seen = true;
            if word == "fail" {
                d.summary_line = Some(clip(t));
            }
        }
        if let Some(rest) = t.strip_prefix("not ok ") {
            let name = rest.split_once(" - ").map_or(rest, |(_, n)| n);
            d.fail(name.split(" # ").next().unwrap_or(name));
        } else if let Some(rest) = t.strip_prefix("✖ ") {
            let name = rest.rsplit_once(" (").map_or(rest, |(n, _)| n);
            if !name.starts_with("failing tests") {
                d.fail(name);
            }
        } else if t.starts_with("error:") || t.starts_with("AssertionError") {
            d.error_line(t);
        }
    }
    if !seen {
        return None;
    }
    set_counts(&mut d, c);
    Some(d)
}

fn go(lines: &[&str]) -> Option<TestDigest> {
    let mut d = TestDigest::empty(TestFramework::GoTest);
    let mut seen = false;
    let (mut passed, mut failed) = (0u32, 0u32);
    for line in lines {
        let t = line.trim();
        if let Some(rest) = t.strip_prefix("--- FAIL: ") {
            failed += 1;
            d.fail(rest.split(" (").next().unwrap_or(rest));
            seen = true;
        } else if t.starts_with("--- PASS: ") {
            passed += 1;
            seen = true;
        } else if t.starts_with("ok  \t") || t.starts_with("ok \t") || t.starts_with("FAIL\t") {
            seen = true;
            d.summary_line = Some(clip(t));
        } else if line.starts_with("    ")
            && t.split_once(':').is_some_and(|(f, _)| f.ends_with(".go"))
        {
            d.error_line(t);
        }
    }
    if !seen {
        return None;
    }
    d.failed = Some(failed);
    if passed > 0 {
        d.passed = Some(passed);
    }
    Some(d)
}

fn generic(lines: &[&str], exit_code: Option<i32>) -> TestDigest {
    let mut d = TestDigest::empty(TestFramework::Unknown);
    // A plain closing line `N passed, M failed` counts in any language.
    for line in lines.iter().rev().take(50) {
        let t = line.trim();
        let t = t.split_once(": ").map_or(t, |(_, r)| r);
        if let Some(c) = parse_counts(t) {
            set_counts(&mut d, c);
            d.summary_line = Some(clip(line.trim()));
            break;
        }
    }
    if d.summary_line.is_none() {
        d.summary_line = lines
            .iter()
            .rev()
            .find(|l| !l.trim().is_empty())
            .map(|l| clip(l.trim()));
    }
    if exit_code != Some(0) {
        let tail: Vec<&&str> = lines
            .iter()
            .rev()
            .filter(|l| !l.trim().is_empty())
            .take(MAX_ERROR_LINES)
            .collect();
        for l in tail.into_iter().rev() {
            d.error_line(l);
        }
    }
    d
}

#[cfg(test)]
mod tests;
