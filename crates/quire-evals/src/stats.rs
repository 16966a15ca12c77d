//! The little statistics reports need: a Wilson interval for a resolve rate
//! and a paired bootstrap for the difference between two runs. Deterministic
//! (a fixed-seed PRNG), so the same runs always give the same report.

/// z for a two-sided 95% interval.
const Z95: f64 = 1.959_963_984_540_054;

/// Wilson score 95% interval for `successes` out of `n`. Unlike the normal
/// approximation it stays inside [0, 1] and is sensible for small suites
/// and rates near 0 or 1. `n == 0` knows nothing: (0, 1).
pub fn wilson_interval(successes: u32, n: u32) -> (f64, f64) {
    if n == 0 {
        return (0.0, 1.0);
    }
    let n = f64::from(n);
    let p = f64::from(successes.min(n as u32)) / n;
    let z2 = Z95 * Z95;
    let denom = 1.0 + z2 / n;
    let centre = (p + z2 / (2.0 * n)) / denom;
    let half = Z95 * ((p * (1.0 - p) / n) + z2 / (4.0 * n * n)).sqrt() / denom;
    ((centre - half).max(0.0), (centre + half).min(1.0))
}

/// SplitMix64: tiny, fast, and good enough to resample with.
#[derive(Debug, Clone)]
pub struct SplitMix64(u64);

impl SplitMix64 {
    pub fn new(seed: u64) -> Self {
        SplitMix64(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (`n > 0`), without modulo bias worth caring about
    /// at suite sizes (the multiply-shift method).
    pub fn below(&mut self, n: usize) -> usize {
        ((u128::from(self.next_u64()) * n as u128) >> 64) as usize
    }
}

/// Resamples used by [`paired_bootstrap`].
pub const BOOTSTRAP_RESAMPLES: usize = 10_000;
/// Fixed seed: the same pair of runs always yields the same interval.
pub const BOOTSTRAP_SEED: u64 = 0x5EED_0FE7_A15E;

/// 95% percentile-bootstrap interval for the mean paired difference
/// `b - a`. `clusters` groups the pairs that belong together (all repeats
/// of one task); whole clusters are resampled, so repeats of a task are not
/// treated as independent evidence. Returns `None` with no pairs.
pub fn paired_bootstrap(clusters: &[Vec<f64>], resamples: usize, seed: u64) -> Option<(f64, f64)> {
    let clusters: Vec<(f64, usize)> = clusters
        .iter()
        .filter(|c| !c.is_empty())
        .map(|c| (c.iter().sum::<f64>(), c.len()))
        .collect();
    if clusters.is_empty() || resamples == 0 {
        return None;
    }
    let mut rng = SplitMix64::new(seed);
    let mut means = Vec::with_capacity(resamples);
    for _ in 0..resamples {
        let (mut sum, mut count) = (0.0, 0usize);
        for _ in 0..clusters.len() {
            let (s, n) = clusters[rng.below(clusters.len())];
            sum += s;
            count += n;
        }
        means.push(sum / count as f64);
    }
    means.sort_by(f64::total_cmp);
    // `means` has `resamples > 0` entries, so every index below is in range.
    let at = |q: f64| means[((means.len() - 1) as f64 * q).round() as usize];
    Some((at(0.025), at(0.975)))
}

/// Mean of the values, `None` for none.
pub fn mean(values: impl IntoIterator<Item = f64>) -> Option<f64> {
    let (sum, n) = values
        .into_iter()
        .fold((0.0, 0usize), |(s, n), v| (s + v, n + 1));
    (n > 0).then(|| sum / n as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 5e-4
    }

    #[test]
    fn wilson_matches_known_values() {
        let (lo, hi) = wilson_interval(1, 3);
        assert!(close(lo, 0.0615) && close(hi, 0.7923), "{lo} {hi}");
        let (lo, hi) = wilson_interval(0, 10);
        assert!(close(lo, 0.0) && close(hi, 0.2775), "{lo} {hi}");
        let (lo, hi) = wilson_interval(10, 10);
        assert!(close(lo, 0.7225) && close(hi, 1.0), "{lo} {hi}");
        assert_eq!(wilson_interval(0, 0), (0.0, 1.0));
    }

    #[test]
    fn bootstrap_is_deterministic_and_brackets_the_mean() {
        let clusters: Vec<Vec<f64>> = [1.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0]
            .iter()
            .map(|d| vec![*d])
            .collect();
        let a = paired_bootstrap(&clusters, 2000, 7).unwrap();
        let b = paired_bootstrap(&clusters, 2000, 7).unwrap();
        assert_eq!(a, b);
        assert!(a.0 <= 0.3 && 0.3 <= a.1, "{a:?}");
        assert!(a.0 >= 0.0 && a.1 <= 1.0);
        let same = vec![vec![0.0]; 5];
        assert_eq!(paired_bootstrap(&same, 100, 1), Some((0.0, 0.0)));
        assert_eq!(paired_bootstrap(&[], 100, 1), None);
    }

    #[test]
    fn below_stays_in_range() {
        let mut rng = SplitMix64::new(1);
        let mut seen = [0usize; 3];
        for _ in 0..3000 {
            seen[rng.below(3)] += 1;
        }
        assert!(seen.iter().all(|&n| n > 800), "{seen:?}");
    }
}
