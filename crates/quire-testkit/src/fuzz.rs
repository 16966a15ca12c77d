//! Proptest strategies for fuzzing parsers as ordinary tests (`cargo test`,
//! so CI stays offline): seeds come from a corpus folder in the repo
//! (`tests/fuzz/<target>/`), are mutated by index-based edits that shrink
//! well, and failures are kept in that folder's `proptest-regressions.txt`
//! so they are replayed on every later run.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use proptest::prelude::*;
use proptest::sample::Index;
use proptest::test_runner::{Config, FileFailurePersistence, RngSeed};

/// Name of the regressions file proptest keeps in each corpus folder; it is
/// not a seed.
pub const REGRESSIONS: &str = "proptest-regressions.txt";

/// Most mutations stacked on one seed.
pub const MAX_MUTATIONS: usize = 6;

/// Fragments that tend to break parsers: delimiters, quotes, escapes,
/// odd whitespace and non-ASCII.
pub const TOKENS: &[&str] = &[
    "\n",
    "\r\n",
    "\t",
    " ",
    "\"",
    "'",
    "\\",
    "{",
    "}",
    "[",
    "]",
    ":",
    ",",
    "=",
    "---",
    "---\n",
    "<tool_call>",
    "</tool_call>",
    "<tool_call name=\"x\">",
    "@@ -1 +1 @@",
    "\n+",
    "\n-",
    "\n ",
    "null",
    "true",
    "-1",
    "99999999999999999999",
    "1e999",
    "é",
    "→",
    "\u{0}",
    "\u{feff}",
    "#",
    "[[",
    "]]",
    "\"\"\"",
    "&",
    "*",
    "|",
    ">",
    "%",
    "$",
    "```",
    "{\"a\":",
    "\\u00",
];

/// One seed of a corpus: where it came from and its text.
#[derive(Clone, Debug)]
pub struct Seed {
    pub path: PathBuf,
    pub text: String,
}

/// `tests/fuzz/<target>` at the workspace root.
pub fn corpus_dir(target: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fuzz")
        .join(target)
}

/// The seed files of `tests/fuzz/<target>`, sorted, as lossy UTF-8; the
/// regressions file is skipped. Panics on an empty corpus, which would make
/// the fuzz test meaningless.
pub fn corpus(target: &str) -> Vec<Seed> {
    let dir = corpus_dir(target);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .map(|entries| entries.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    files.retain(|p| p.is_file() && p.file_name().is_some_and(|n| n != REGRESSIONS));
    files.sort();
    assert!(!files.is_empty(), "empty corpus: {}", dir.display());
    files
        .into_iter()
        .map(|path| {
            let bytes = std::fs::read(&path)
                .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
            let text = String::from_utf8_lossy(&bytes).into_owned();
            Seed { path, text }
        })
        .collect()
}

/// Runs `check` on every seed unmutated, naming the file on failure.
pub fn check_corpus(seeds: &[Seed], mut check: impl FnMut(&str)) {
    for seed in seeds {
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| check(&seed.text)));
        if let Err(panic) = result {
            eprintln!("fuzz failure on corpus file {}", seed.path.display());
            std::panic::resume_unwind(panic);
        }
    }
}

/// Proptest config for a target: `default_cases` unless `PROPTEST_CASES` is
/// set (an explicit `cases` would otherwise hide the variable), failures
/// persisted next to the corpus so they are kept in the repo and replayed.
pub fn config(target: &str, default_cases: u32) -> Config {
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(default_cases);
    let path = corpus_dir(target).join(REGRESSIONS);
    // `Direct` wants a &'static str; one small leak per test run.
    let path: &'static str = Box::leak(path.to_string_lossy().into_owned().into_boxed_str());
    let defaults = Config::default();
    // A fixed seed unless PROPTEST_RNG_SEED asks for another: CI must not
    // fail on a submission that did not touch the parsers. Longer, random
    // hunts: PROPTEST_RNG_SEED=$RANDOM PROPTEST_CASES=200000.
    let rng_seed = if std::env::var_os("PROPTEST_RNG_SEED").is_some() {
        defaults.rng_seed
    } else {
        RngSeed::Fixed(0x7e57_0000)
    };
    Config {
        cases,
        rng_seed,
        failure_persistence: Some(Box::new(FileFailurePersistence::Direct(path))),
        ..defaults
    }
}

/// One edit of the input. Positions are [`Index`]es resolved against the
/// current length, so every mutation applies to any input and shrinks
/// toward the start and toward the simplest variant.
#[derive(Clone, Debug)]
pub enum Mutation {
    /// Insert one of [`TOKENS`].
    Token { at: Index, token: Index },
    /// Insert arbitrary chars (any Unicode scalar, control chars included).
    Chars { at: Index, chars: String },
    /// Delete up to `len` chars.
    Delete { at: Index, len: usize },
    /// Repeat a line right after itself.
    DuplicateLine { line: Index },
    /// Exchange two lines.
    SwapLines { a: Index, b: Index },
    /// Cut the input short.
    Truncate { at: Index },
    /// Insert a chunk of another seed.
    Splice {
        seed: Index,
        from: Index,
        len: usize,
        at: Index,
    },
    /// Flip one bit of one byte; invalid UTF-8 is replaced by U+FFFD.
    FlipBit { at: Index, bit: u8 },
}

/// A weighted mix of [`Mutation`]s, parser-breaking tokens most often.
pub fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        4 => (any::<Index>(), any::<Index>())
            .prop_map(|(at, token)| Mutation::Token { at, token }),
        2 => (any::<Index>(), proptest::collection::vec(any::<char>(), 1..8))
            .prop_map(|(at, chars)| Mutation::Chars { at, chars: chars.into_iter().collect() }),
        2 => (any::<Index>(), 1usize..32).prop_map(|(at, len)| Mutation::Delete { at, len }),
        1 => any::<Index>().prop_map(|line| Mutation::DuplicateLine { line }),
        1 => (any::<Index>(), any::<Index>()).prop_map(|(a, b)| Mutation::SwapLines { a, b }),
        1 => any::<Index>().prop_map(|at| Mutation::Truncate { at }),
        2 => (any::<Index>(), any::<Index>(), 1usize..64, any::<Index>())
            .prop_map(|(seed, from, len, at)| Mutation::Splice { seed, from, len, at }),
        2 => (any::<Index>(), 0u8..8).prop_map(|(at, bit)| Mutation::FlipBit { at, bit }),
    ]
}

/// Applies one mutation; `seeds` feeds [`Mutation::Splice`]. Always valid
/// UTF-8.
pub fn apply(input: &str, mutation: &Mutation, seeds: &[String]) -> String {
    let mut chars: Vec<char> = input.chars().collect();
    let n = chars.len();
    match mutation {
        Mutation::Token { at, token } => {
            let at = at.index(n + 1);
            chars.splice(at..at, token.get(TOKENS).chars());
        }
        Mutation::Chars { at, chars: new } => {
            let at = at.index(n + 1);
            chars.splice(at..at, new.chars());
        }
        Mutation::Delete { at, len } => {
            let a = at.index(n + 1);
            let b = a.saturating_add(*len).min(n);
            chars.drain(a..b);
        }
        Mutation::DuplicateLine { line } => {
            let lines = lines(input);
            if !lines.is_empty() {
                let i = line.index(lines.len());
                let copy = with_newline(lines[i]);
                let mut out = String::with_capacity(input.len() + copy.len() * 2);
                out.push_str(&lines[..i].concat());
                out.push_str(&copy);
                out.push_str(&copy);
                out.push_str(&lines[i + 1..].concat());
                return out;
            }
        }
        Mutation::SwapLines { a, b } => {
            let mut lines: Vec<String> = lines(input).into_iter().map(with_newline).collect();
            if !lines.is_empty() {
                let (a, b) = (a.index(lines.len()), b.index(lines.len()));
                lines.swap(a, b);
                return lines.concat();
            }
        }
        Mutation::Truncate { at } => chars.truncate(at.index(n + 1)),
        Mutation::Splice {
            seed,
            from,
            len,
            at,
        } => {
            if !seeds.is_empty() {
                let other: Vec<char> = seed.get(seeds).chars().collect();
                let a = from.index(other.len() + 1);
                let b = a.saturating_add(*len).min(other.len());
                let at = at.index(n + 1);
                chars.splice(at..at, other[a..b].iter().copied());
            }
        }
        Mutation::FlipBit { at, bit } => {
            let mut bytes = input.as_bytes().to_vec();
            if !bytes.is_empty() {
                let i = at.index(bytes.len());
                bytes[i] ^= 1 << (bit % 8);
                return String::from_utf8_lossy(&bytes).into_owned();
            }
        }
    }
    chars.into_iter().collect()
}

/// Lines with their endings kept, so concatenating gives the input back.
fn lines(input: &str) -> Vec<&str> {
    input.split_inclusive('\n').collect()
}

/// A line that ends in `\n`, so moving it never glues two lines together.
fn with_newline(line: &str) -> String {
    if line.ends_with('\n') {
        line.to_string()
    } else {
        format!("{line}\n")
    }
}

/// A corpus seed with 1..=[`MAX_MUTATIONS`] mutations stacked on it.
/// Shrinks toward the first seed and fewer, simpler mutations.
pub fn mutated(seeds: &[Seed]) -> impl Strategy<Value = String> + use<> {
    let texts: Arc<Vec<String>> = Arc::new(seeds.iter().map(|s| s.text.clone()).collect());
    (
        any::<Index>(),
        proptest::collection::vec(mutation(), 1..=MAX_MUTATIONS),
    )
        .prop_map(move |(seed, mutations)| {
            let mut text = if texts.is_empty() {
                String::new()
            } else {
                seed.get(&texts).clone()
            };
            for m in &mutations {
                text = apply(&text, m, &texts);
            }
            text
        })
}

/// What the fuzz tests feed a parser: mostly [`mutated`] seeds, sometimes a
/// soup of [`TOKENS`], sometimes a fully arbitrary string.
pub fn inputs(seeds: &[Seed]) -> impl Strategy<Value = String> + use<> {
    prop_oneof![
        8 => mutated(seeds),
        1 => proptest::collection::vec(proptest::sample::select(TOKENS), 0..24)
            .prop_map(|tokens| tokens.concat()),
        1 => any::<String>(),
    ]
}

/// The two tests of a parser fuzz target: every corpus file as is, then
/// `cases` generated inputs. `check` takes `&str` and returns
/// `Result<(), TestCaseError>`; the calling crate depends on proptest.
#[macro_export]
macro_rules! fuzz_target {
    ($target:expr, $cases:expr, $name:ident, $check:path) => {
        #[test]
        fn every_corpus_file_passes() {
            $crate::fuzz::check_corpus(&$crate::fuzz::corpus($target), |input| {
                $check(input).unwrap_or_else(|e| panic!("{e}"))
            });
        }

        proptest::proptest! {
            #![proptest_config($crate::fuzz::config($target, $cases))]
            #[test]
            fn $name(input in $crate::fuzz::inputs(&$crate::fuzz::corpus($target))) {
                $check(&input)?;
            }
        }
    };
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;

    fn seeds() -> Vec<Seed> {
        ["héllo → wörld\nsecond\n", "other {\"k\": 1}"]
            .iter()
            .map(|t| Seed {
                path: PathBuf::from("mem"),
                text: t.to_string(),
            })
            .collect()
    }

    #[test]
    fn mutations_apply_to_any_input_including_empty() {
        let texts: Vec<String> = seeds().into_iter().map(|s| s.text).collect();
        let mut runner = TestRunner::deterministic();
        for _ in 0..2000 {
            let m = mutation().new_tree(&mut runner).unwrap().current();
            for input in ["", "x", "a\nb", "héllo → wörld\n\n"] {
                let _ = apply(input, &m, &texts);
                let _ = apply(input, &m, &[]);
            }
        }
    }

    #[test]
    fn corpus_skips_the_regressions_file_and_is_not_empty() {
        let seeds = corpus("text_protocol");
        assert!(seeds.iter().all(|s| !s.path.ends_with(REGRESSIONS)));
    }

    #[test]
    fn config_honours_proptest_cases() {
        // The variable may be set by whoever runs the tests; both ways agree.
        let expected = std::env::var("PROPTEST_CASES")
            .ok()
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(123);
        assert_eq!(config("patch", 123).cases, expected);
    }

    proptest! {
        #![proptest_config(Config { cases: 300, failure_persistence: None, ..Config::default() })]
        #[test]
        fn generated_inputs_shrink_and_stay_utf8(input in inputs(&seeds())) {
            // A String is valid UTF-8 by construction; this exercises the
            // strategy end to end, shrinking included if anything panics.
            prop_assert!(input.len() < 10_000);
        }

        #[test]
        fn line_mutations_keep_every_line(line in any::<Index>(), a in any::<Index>(), b in any::<Index>()) {
            let input = "one\ntwo\nthree";
            let sorted = |text: &str| {
                let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
                lines.sort();
                lines
            };
            let swapped = apply(input, &Mutation::SwapLines { a, b }, &[]);
            prop_assert_eq!(sorted(&swapped), sorted(input));
            let duplicated = apply(input, &Mutation::DuplicateLine { line }, &[]);
            prop_assert_eq!(duplicated.lines().count(), 4);
        }
    }
}
