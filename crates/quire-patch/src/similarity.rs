//! Finding the region of a file that looks most like a hunk's old lines, so a
//! failed hunk can be reported with "did you mean lines 40-45?".

/// Above this many line comparisons, only exact (trimmed) equality is scored.
const FUZZY_BUDGET: usize = 2_000_000;

/// The best window: 0-based start, length, similarity in percent.
pub(crate) struct Closest {
    pub start: usize,
    pub len: usize,
    pub percent: u8,
}

/// Slide a window of `expected.len()` lines over `file` and return the one
/// with the highest mean line similarity, or `None` when nothing is alike.
pub(crate) fn closest_region(file: &[&str], expected: &[&str]) -> Option<Closest> {
    let k = expected.len();
    let n = file.len();
    if k == 0 || n == 0 {
        return None;
    }
    let window = k.min(n);
    let fuzzy = n.saturating_mul(k) <= FUZZY_BUDGET;
    let grams = |lines: &[&str]| -> Vec<Vec<u64>> {
        if fuzzy {
            lines.iter().map(|l| bigrams(l.trim())).collect()
        } else {
            Vec::new()
        }
    };
    let file_grams = grams(file);
    let exp_grams = grams(expected);
    let mut best: Option<(usize, f64)> = None;
    for p in 0..=(n - window) {
        let mut score = 0.0;
        for j in 0..window {
            let (a, b) = (file[p + j].trim(), expected[j].trim());
            score += if a == b {
                1.0
            } else if fuzzy {
                dice(&file_grams[p + j], &exp_grams[j])
            } else {
                0.0
            };
        }
        if best.is_none_or(|(_, s)| score > s) {
            best = Some((p, score));
        }
    }
    let (start, score) = best?;
    let mean = score / k as f64;
    if mean <= 0.0 {
        return None;
    }
    // `mean` is within (0, 1], so the rounded percentage fits in a u8.
    let percent = (mean * 100.0).round().clamp(0.0, 100.0) as u8;
    Some(Closest {
        start,
        len: window,
        percent,
    })
}

/// Sorted character bigrams of a line, packed into integers.
fn bigrams(s: &str) -> Vec<u64> {
    let chars: Vec<char> = s.chars().collect();
    let mut out: Vec<u64> = chars
        .windows(2)
        .map(|w| ((w[0] as u64) << 32) | w[1] as u64)
        .collect();
    out.sort_unstable();
    out
}

/// Sørensen–Dice coefficient of two sorted bigram multisets.
fn dice(a: &[u64], b: &[u64]) -> f64 {
    if a.is_empty() || b.is_empty() {
        return 0.0;
    }
    let (mut i, mut j, mut common) = (0, 0, 0usize);
    while i < a.len() && j < b.len() {
        match a[i].cmp(&b[j]) {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => {
                common += 1;
                i += 1;
                j += 1;
            }
        }
    }
    (2 * common) as f64 / (a.len() + b.len()) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_similar_window() {
        let file = [
            "fn a() {",
            "    let x = 1;",
            "}",
            "fn b() {",
            "    let y = 2;",
            "}",
        ];
        let expected = ["fn b() {", "    let y = 3;", "}"];
        let c = closest_region(&file, &expected).unwrap();
        assert_eq!(c.start, 3);
        assert_eq!(c.len, 3);
        assert!(c.percent > 80 && c.percent < 100);
    }

    #[test]
    fn nothing_alike() {
        assert!(closest_region(&["aaaa"], &["zzzz"]).is_none());
        assert!(closest_region(&[], &["x"]).is_none());
    }
}
