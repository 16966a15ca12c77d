//! The parsers against real output of each test runner.

use super::*;

const PYTEST_FAILURES: &str = r#"============================= test session starts ==============================
platform linux -- Python 3.11.2, pytest-7.4.0, pluggy-1.2.0
rootdir: /tmp/proj
collected 5 items

tests/test_calc.py .F.E.                                                 [100%]

==================================== ERRORS ====================================
__________________ ERROR at setup of test_with_fixture ___________________
file /tmp/proj/tests/test_calc.py, line 12
  def test_with_fixture(missing):
E       fixture 'missing' not found
>       available fixtures: cache, capfd
/tmp/proj/tests/test_calc.py:12
=================================== FAILURES ===================================
___________________________________ test_add ___________________________________

def test_add():
>       assert add(1, 2) == 4
E       assert 3 == 4
E        +  where 3 = add(1, 2)

tests/test_calc.py:5: AssertionError
=========================== short test summary info ============================
FAILED tests/test_calc.py::test_add - assert 3 == 4
FAILED tests/test_calc.py::test_param[a - b] - ValueError: bad
ERROR tests/test_calc.py::test_with_fixture
=================== 2 failed, 2 passed, 1 error in 0.05s ====================
"#;

#[test]
fn pytest_subtests_do_not_hide_the_counts() {
    let out = "....                                      [100%]\n720 passed, 19896 subtests passed in 18.09s\n";
    let d = digest_test_output(out, Some(0));
    assert_eq!((d.passed, d.failed), (Some(720), Some(0)));
    let out = "F...\nFAILED tests/test_more.py::ChunkedTests::test_neg - AssertionError\n1 failed, 3 passed, 2 subtests failed, 40 subtests passed in 1.2s\n";
    let d = digest_test_output(out, Some(1));
    assert_eq!((d.passed, d.failed), (Some(3), Some(1)));
}

#[test]
fn pytest_failures() {
    let d = digest_test_output(PYTEST_FAILURES, Some(1));
    assert_eq!(d.framework, TestFramework::Pytest);
    assert_eq!(d.passed, Some(2));
    assert_eq!(d.failed, Some(2));
    assert_eq!(d.errors, Some(1));
    assert_eq!(
        d.failing_tests,
        vec![
            "tests/test_calc.py::test_add",
            "tests/test_calc.py::test_param[a - b]",
            "tests/test_calc.py::test_with_fixture"
        ]
    );
    assert_eq!(
        d.summary_line.as_deref(),
        Some("=================== 2 failed, 2 passed, 1 error in 0.05s ====================")
    );
    assert!(
        d.first_error_lines
            .iter()
            .any(|l| l == "E       assert 3 == 4")
    );
    assert!(
        d.first_error_lines
            .iter()
            .any(|l| l == "tests/test_calc.py:5: AssertionError")
    );
    assert!(!d.success());
    let r = d.render();
    assert!(r.contains("2 failed"));
    assert!(r.contains("tests/test_calc.py::test_add"));
}

#[test]
fn pytest_collection_error() {
    let out = r#"============================= test session starts ==============================
collected 0 items / 1 error

==================================== ERRORS ====================================
____________________ ERROR collecting tests/test_broken.py _____________________
ImportError while importing test module '/tmp/proj/tests/test_broken.py'.
Hint: make sure your test modules/packages have valid Python names.
Traceback:
/usr/lib/python3.11/importlib/__init__.py:126: in import_module
return _bootstrap._gcd_import(name[level:], package, level)
tests/test_broken.py:1: in <module>
import foo
E   ModuleNotFoundError: No module named 'foo'
=========================== short test summary info ============================
ERROR tests/test_broken.py
!!!!!!!!!!!!!!!!!!!! Interrupted: 1 error during collection !!!!!!!!!!!!!!!!!!!!
=============================== 1 error in 0.07s ===============================
"#;
    let d = digest_test_output(out, Some(2));
    assert_eq!(d.framework, TestFramework::Pytest);
    assert_eq!(d.errors, Some(1));
    assert_eq!(d.passed, Some(0));
    assert_eq!(d.failing_tests, vec!["tests/test_broken.py"]);
    assert!(
        d.first_error_lines
            .iter()
            .any(|l| l.contains("ModuleNotFoundError: No module named 'foo'"))
    );
}

#[test]
fn pytest_quiet_pass_with_colour() {
    let out = "..........                                      [100%]\n\u{1b}[32m\u{1b}[1m10 passed\u{1b}[0m\u{1b}[32m in 0.02s\u{1b}[0m\n";
    let d = digest_test_output(out, Some(0));
    assert_eq!(d.framework, TestFramework::Pytest);
    assert_eq!(d.passed, Some(10));
    assert_eq!(d.failed, Some(0));
    assert!(d.success());
    assert!(d.failing_tests.is_empty());
}

#[test]
fn pytest_verbose_and_cap() {
    let mut out = String::from(
        "============================= test session starts ==============================\n",
    );
    for i in 0..30 {
        out.push_str(&format!(
            "tests/test_x.py::test_{i} FAILED                [ {i}%]\n"
        ));
    }
    for i in 0..40 {
        out.push_str(&format!("E       assert {i} == 0\n"));
    }
    out.push_str(
        "============================== 30 failed in 1.00s ==============================\n",
    );
    let d = digest_test_output(&out, Some(1));
    assert_eq!(d.failed, Some(30));
    assert_eq!(d.failing_tests.len(), 15);
    assert_eq!(d.more_failing, 15);
    assert_eq!(d.first_error_lines.len(), 20);
    assert!(d.render().contains("(+15 more)"));
}

#[test]
fn cargo_test_output() {
    let out = r#"   Compiling demo v0.1.0 (/tmp/demo)
Finished `test` profile [unoptimized + debuginfo] target(s) in 0.50s
 Running unittests src/lib.rs (target/debug/deps/demo-123)

running 3 tests
test tests::ok_one ... ok
test tests::bad ... FAILED
test tests::ok_two ... ok

failures:

---- tests::bad stdout ----

thread 'tests::bad' panicked at src/lib.rs:12:9:
assertion `left == right` failed
  left: 1
 right: 2
note: run with `RUST_BACKTRACE=1` environment variable to display a backtrace


failures:
tests::bad

test result: FAILED. 2 passed; 1 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.00s

error: test failed, to rerun pass `--lib`
"#;
    let d = digest_test_output(out, Some(101));
    assert_eq!(d.framework, TestFramework::Cargo);
    assert_eq!(d.passed, Some(2));
    assert_eq!(d.failed, Some(1));
    assert_eq!(d.failing_tests, vec!["tests::bad"]);
    assert_eq!(
        d.first_error_lines[..4],
        [
            "thread 'tests::bad' panicked at src/lib.rs:12:9:",
            "assertion `left == right` failed",
            "left: 1",
            "right: 2"
        ]
    );
}

#[test]
fn cargo_compile_error() {
    let out = "error[E0425]: cannot find value `x` in this scope\n  --> src/lib.rs:3:5\n   |\nerror: could not compile `demo` (lib test) due to 1 previous error\n";
    let d = digest_test_output(out, Some(101));
    assert_eq!(d.framework, TestFramework::Cargo);
    assert_eq!(d.passed, None);
    assert_eq!(d.first_error_lines.len(), 3);
}

#[test]
fn jest_output() {
    let out = r#" FAIL  src/sum.test.js
  sum
✓ adds positive (2 ms)
✕ adds negative (3 ms)

  ● sum › adds negative

expect(received).toBe(expected) // Object.is equality

Expected: -3
Received: 3

Test Suites: 1 failed, 1 total
Tests:       1 failed, 1 passed, 2 total
Snapshots:   0 total
Time:        0.5 s
"#;
    let d = digest_test_output(out, Some(1));
    assert_eq!(d.framework, TestFramework::Jest);
    assert_eq!((d.passed, d.failed), (Some(1), Some(1)));
    assert_eq!(d.failing_tests, vec!["sum › adds negative"]);
    assert!(d.first_error_lines.contains(&"Expected: -3".to_string()));
}

#[test]
fn node_and_go() {
    let node_out =
        "TAP version 13\nok 1 - works\nnot ok 2 - breaks\n# tests 2\n# pass 1\n# fail 1\n";
    let d = digest_test_output(node_out, Some(1));
    assert_eq!(d.framework, TestFramework::NodeTest);
    assert_eq!((d.passed, d.failed), (Some(1), Some(1)));
    assert_eq!(d.failing_tests, vec!["breaks"]);

    let go_out = "=== RUN   TestAdd\n--- FAIL: TestAdd (0.00s)\n    add_test.go:8: got 3, want 4\nFAIL\nFAIL\texample.com/add\t0.002s\n";
    let d = digest_test_output(go_out, Some(1));
    assert_eq!(d.framework, TestFramework::GoTest);
    assert_eq!(d.failed, Some(1));
    assert_eq!(d.failing_tests, vec!["TestAdd"]);
    assert_eq!(d.first_error_lines, vec!["add_test.go:8: got 3, want 4"]);
}

#[test]
fn generic_fallback() {
    let out = "building...\nsomething broke\nfatal: it failed\n";
    let d = digest_test_output(out, Some(2));
    assert_eq!(d.framework, TestFramework::Unknown);
    assert_eq!(d.passed, None);
    assert_eq!(d.summary_line.as_deref(), Some("fatal: it failed"));
    assert_eq!(d.first_error_lines.len(), 3);
    let d = digest_test_output("results: 4 passed, 1 failed\n", Some(1));
    assert_eq!((d.passed, d.failed), (Some(4), Some(1)));
    let d = digest_test_output("", None);
    assert!(!d.success());
    assert!(d.render().starts_with("exit code none"));
}
