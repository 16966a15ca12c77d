//! A small deterministic mutation fuzzer for parsers, run as ordinary tests
//! (`cargo test`): seeds from a corpus folder in the repo, mutated a few
//! hundred times with a fixed PRNG, so a failure reproduces exactly and its
//! input can be saved back into the corpus as a regression case.

use std::path::{Path, PathBuf};

use crate::rng::Rng;

/// Fragments that tend to break parsers: delimiters, quotes, escapes,
/// odd whitespace and non-ASCII.
const TOKENS: &[&str] = &[
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

/// One random mutation of `input`: delete, duplicate or move a span, insert
/// a token, truncate, or splice in a span of `other`. Always valid UTF-8.
pub fn mutate(rng: &mut Rng, input: &str, other: &str) -> String {
    let chars: Vec<char> = input.chars().collect();
    let n = chars.len();
    let span = |rng: &mut Rng| {
        let a = rng.below(n + 1);
        let b = (a + rng.below(16)).min(n);
        (a, b)
    };
    let mut out: Vec<char> = chars.clone();
    match rng.below(7) {
        0 => {
            let (a, b) = span(rng);
            out.drain(a..b);
        }
        1 => {
            let (a, b) = span(rng);
            let piece: Vec<char> = chars[a..b].to_vec();
            let at = rng.below(n + 1);
            out.splice(at..at, piece);
        }
        2 | 3 => {
            let token = TOKENS[rng.below(TOKENS.len())];
            let at = rng.below(n + 1);
            out.splice(at..at, token.chars());
        }
        4 => out.truncate(rng.below(n + 1)),
        5 => {
            let o: Vec<char> = other.chars().collect();
            let a = rng.below(o.len() + 1);
            let b = (a + rng.below(64)).min(o.len());
            let at = rng.below(n + 1);
            out.splice(at..at, o[a..b].iter().copied());
        }
        _ => {
            if n > 0 {
                let at = rng.below(n);
                out[at] = TOKENS[rng.below(TOKENS.len())]
                    .chars()
                    .next()
                    .unwrap_or('x');
            }
        }
    }
    out.into_iter().collect()
}

/// The files of a corpus folder, sorted, with their text (lossy UTF-8).
pub fn corpus(dir: &Path) -> Vec<(PathBuf, String)> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|entries| entries.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    files.retain(|p| p.is_file());
    files.sort();
    files
        .into_iter()
        .map(|p| {
            let text = String::from_utf8_lossy(&std::fs::read(&p).unwrap_or_default()).into_owned();
            (p, text)
        })
        .collect()
}

/// Runs `check` on every corpus file and on `cases` mutants of them (one to
/// four stacked mutations each). On a panic the failing input is printed
/// (Debug-escaped) so it can be added to the corpus.
pub fn run(dir: &Path, seed: u64, cases: usize, mut check: impl FnMut(&str)) {
    let seeds = corpus(dir);
    assert!(!seeds.is_empty(), "empty corpus: {}", dir.display());
    for (path, text) in &seeds {
        with_report(&format!("corpus file {}", path.display()), text, &mut check);
    }
    let mut rng = Rng::new(seed);
    for case in 0..cases {
        let (_, base) = &seeds[rng.below(seeds.len())];
        let (_, other) = &seeds[rng.below(seeds.len())];
        let mut input = base.clone();
        for _ in 0..=rng.below(4) {
            input = mutate(&mut rng, &input, other);
        }
        with_report(&format!("case {case} (seed {seed})"), &input, &mut check);
    }
}

fn with_report(label: &str, input: &str, check: &mut impl FnMut(&str)) {
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| check(input)));
    if let Err(panic) = result {
        eprintln!("fuzz failure on {label}; input:\n{input:?}");
        std::panic::resume_unwind(panic);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mutation_is_deterministic_and_keeps_utf8() {
        let mut a = Rng::new(7);
        let mut b = Rng::new(7);
        for _ in 0..200 {
            let x = mutate(&mut a, "héllo → wörld", "other {\"k\": 1}");
            let y = mutate(&mut b, "héllo → wörld", "other {\"k\": 1}");
            assert_eq!(x, y);
        }
    }
}
