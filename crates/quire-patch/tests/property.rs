//! Randomised round-trip and robustness tests with the testkit's deterministic PRNG.

use quire_patch::{ApplyOptions, apply, apply_patch, parse, repair, unified_diff};
use quire_testkit::rng::Rng;

/// Lines chosen to be awkward: repeats, blanks, diff syntax as content.
const VOCAB: &[&str] = &[
    "fn main() {",
    "}",
    "",
    "    let x = 1;",
    "    return x;",
    "-- sql comment",
    "++ weird",
    "@@ not a header",
    "--- a/f",
    "+++ b/f",
    "diff --git a/f b/f",
    "\\ backslash",
    "```",
    "  trailing  ",
    "\ttab",
    "é ünïcode ✓",
    " ",
];

fn random_lines(rng: &mut Rng, max: usize, unique: bool) -> Vec<String> {
    let n = rng.below(max + 1);
    (0..n)
        .map(|i| {
            let base = VOCAB[rng.below(VOCAB.len())];
            if unique {
                format!("{base} #{i}-{}", rng.below(1000))
            } else {
                base.to_string()
            }
        })
        .collect()
}

fn join(lines: &[String], trailing_newline: bool) -> String {
    let mut s = lines.join("\n");
    if trailing_newline && !lines.is_empty() {
        s.push('\n');
    }
    s
}

fn edit(rng: &mut Rng, lines: &[String], unique: bool) -> Vec<String> {
    let mut out = lines.to_vec();
    for _ in 0..rng.below(6) {
        let pos = rng.below(out.len() + 1);
        match rng.below(3) {
            0 if pos < out.len() => {
                out.remove(pos);
            }
            1 if pos < out.len() => {
                out[pos] = format!("changed {}", rng.below(100));
            }
            _ => {
                let extra = random_lines(rng, 3, unique);
                for (k, l) in extra.into_iter().enumerate() {
                    out.insert(pos + k, format!("new {l}"));
                }
            }
        }
    }
    out
}

fn diff(old: &str, new: &str, radius: usize) -> String {
    unified_diff(Some("f"), Some("f"), old, new, radius)
}

#[test]
fn random_edits_round_trip() {
    let mut rng = Rng::new(0x1234_5678_9abc_def1);
    let mut checked = 0;
    for round in 0..3000 {
        let old_lines = random_lines(&mut rng, 30, false);
        let new_lines = edit(&mut rng, &old_lines, false);
        let old = join(&old_lines, rng.chance(80));
        let new = join(&new_lines, rng.chance(80));
        if old == new {
            continue;
        }
        let radius = [0, 1, 3][rng.below(3)];
        let patch_text = diff(&old, &new, radius);
        let patch = parse(&patch_text).unwrap_or_else(|e| {
            panic!("round {round}: {e}\n{patch_text}\nold={old:?}\nnew={new:?}")
        });
        assert_eq!(patch.files.len(), 1);
        let applied = apply(&old, &patch.files[0])
            .unwrap_or_else(|e| panic!("round {round}: {e:?}\n{patch_text}\nold={old:?}"));
        assert_eq!(
            applied.text, new,
            "round {round}\n{patch_text}\nold={old:?}"
        );
        assert!(applied.is_clean(), "round {round}: {:?}", applied.hunks);
        // A clean diff needs no repair.
        let repaired = repair(&patch_text);
        assert_eq!(repaired.patch_text, patch_text, "round {round}");
        assert!(
            repaired.fixes.is_empty(),
            "round {round}: {:?}",
            repaired.fixes
        );
        checked += 1;
    }
    assert!(checked > 2000);
}

#[test]
fn drifted_files_still_apply() {
    let mut rng = Rng::new(0xdead_beef_cafe_f00d);
    for round in 0..1000 {
        let old_lines = random_lines(&mut rng, 40, true);
        let new_lines = edit(&mut rng, &old_lines, true);
        let old = join(&old_lines, true);
        let new = join(&new_lines, true);
        // A hunk on an empty file has no context to find it by.
        if old == new || old.is_empty() {
            continue;
        }
        let patch_text = diff(&old, &new, 3);
        // The file gained lines at the top since the diff was made.
        let prefix: String = (0..rng.below(20))
            .map(|i| format!("inserted {i}\n"))
            .collect();
        let files = std::collections::HashMap::from([("f".to_string(), format!("{prefix}{old}"))]);
        let out = apply_patch(
            &patch_text,
            |p| files.get(p).cloned(),
            &ApplyOptions::default(),
        )
        .unwrap_or_else(|e| panic!("round {round}: {e:?}\n{patch_text}"));
        assert_eq!(
            out.files[0].content.as_deref(),
            Some(format!("{prefix}{new}").as_str())
        );
    }
}

#[test]
fn crlf_files_round_trip() {
    let mut rng = Rng::new(42);
    for _ in 0..300 {
        let old_lines = random_lines(&mut rng, 20, true);
        let new_lines = edit(&mut rng, &old_lines, true);
        let old = join(&old_lines, true);
        let new = join(&new_lines, true);
        if old == new || old.is_empty() {
            continue;
        }
        let patch_text = diff(&old, &new, 3);
        let patch = parse(&patch_text).unwrap();
        let applied = apply(&old.replace('\n', "\r\n"), &patch.files[0]).unwrap();
        assert_eq!(applied.text, new.replace('\n', "\r\n"));
    }
}

const GARBAGE: &[&str] = &[
    "@@",
    " -",
    " +",
    "-",
    "+",
    " ",
    "\n",
    "\n",
    "\n",
    "--- ",
    "+++ ",
    "a/",
    "b/",
    "/dev/null",
    "1",
    "0",
    ",",
    "99999999999999999999999",
    "18446744073709551615",
    "9223372036854775808",
    "\\",
    "```",
    "\r",
    "diff --git ",
    "x",
    "é",
    "\t",
    "@@ -1,2 +1,3 @@",
    "new file mode 100644",
    "rename from ",
    "rename to ",
    "Binary files ",
];

fn garbage(rng: &mut Rng) -> String {
    (0..rng.below(80))
        .map(|_| GARBAGE[rng.below(GARBAGE.len())])
        .collect()
}

#[test]
fn garbage_never_panics() {
    let mut rng = Rng::new(7);
    for _ in 0..20000 {
        let text = garbage(&mut rng);
        let content = garbage(&mut rng);
        let _ = repair(&text);
        if let Ok(p) = parse(&text) {
            for f in &p.files {
                let _ = apply(&content, f);
            }
        }
        let _ = apply_patch(&text, |_| Some(content.clone()), &ApplyOptions::default());
        let _ = apply_patch(&text, |_| None, &ApplyOptions::default());
    }
}

#[test]
fn mutated_diffs_never_panic() {
    let mut rng = Rng::new(99);
    for _ in 0..3000 {
        let old_lines = random_lines(&mut rng, 15, false);
        let new_lines = edit(&mut rng, &old_lines, false);
        let old = join(&old_lines, true);
        let new = join(&new_lines, true);
        let mut bytes: Vec<char> = diff(&old, &new, 2).chars().collect();
        for _ in 0..rng.below(8) {
            let pos = rng.below(bytes.len() + 1);
            match rng.below(3) {
                0 if pos < bytes.len() => {
                    bytes.remove(pos);
                }
                1 => bytes.insert(pos, ['\n', ' ', '-', '+', '@', '\\', '9'][rng.below(7)]),
                _ => {}
            }
        }
        let text: String = bytes.into_iter().collect();
        let _ = apply_patch(&text, |_| Some(old.clone()), &ApplyOptions::default());
    }
}

/// Damage a correct diff the way models do: lost context prefixes, wrong
/// counts, code fences, prose around it, CRLF.
fn damage(rng: &mut Rng, patch: &str) -> String {
    let mut out = Vec::new();
    if rng.chance(50) {
        out.push("Here is the patch you asked for:".to_string());
        out.push(String::new());
    }
    let fenced = rng.chance(50);
    if fenced {
        out.push("```diff".to_string());
    }
    for line in patch.lines() {
        let garble = line.strip_prefix("@@ -").filter(|_| rng.chance(50));
        if let Some(rest) = garble {
            // Keep the starts, garble the counts.
            let starts: Vec<&str> = rest
                .split(' ')
                .take(2)
                .map(|r| r.trim_start_matches('+').split(',').next().unwrap_or("1"))
                .collect();
            out.push(format!(
                "@@ -{},{} +{},{} @@",
                starts[0],
                rng.below(40),
                starts.get(1).unwrap_or(&"1"),
                rng.below(40)
            ));
            continue;
        }
        let strippable = line.strip_prefix(' ').is_some_and(|t| {
            t.starts_with(|c: char| c.is_ascii_alphabetic()) && !t.starts_with("diff")
        });
        if strippable && rng.chance(30) {
            out.push(line[1..].to_string());
        } else {
            out.push(line.to_string());
        }
    }
    if fenced {
        out.push("```".to_string());
    }
    if rng.chance(50) {
        out.push(String::new());
        out.push("This renames the variable.".to_string());
    }
    let eol = if rng.chance(20) { "\r\n" } else { "\n" };
    let mut s = out.join(eol);
    s.push_str(eol);
    s
}

#[test]
fn model_mistakes_are_repaired() {
    let mut rng = Rng::new(2024);
    let mut ok = 0;
    let mut total = 0;
    for round in 0..2000 {
        let old_lines: Vec<String> = (0..rng.below(30) + 1)
            .map(|i| format!("line {i} {}", ["alpha", "beta", "", "  x"][rng.below(4)]))
            .collect();
        let new_lines = edit(&mut rng, &old_lines, true);
        let old = join(&old_lines, true);
        let new = join(&new_lines, true);
        if old == new {
            continue;
        }
        let clean = diff(&old, &new, 3);
        let damaged = damage(&mut rng, &clean);
        total += 1;
        let read = |p: &str| (p == "f").then(|| old.clone());
        match apply_patch(&damaged, read, &ApplyOptions::default()) {
            Ok(out) => {
                assert_eq!(
                    out.files[0].content.as_deref(),
                    Some(new.as_str()),
                    "round {round}\n{damaged}"
                );
                ok += 1;
            }
            Err(e) => panic!("round {round}: {e:?}\n--- damaged:\n{damaged}\n--- clean:\n{clean}"),
        }
    }
    assert_eq!(ok, total);
}
