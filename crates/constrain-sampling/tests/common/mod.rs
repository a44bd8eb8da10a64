//! Helpers shared by the integration tests: the worked example and a chi-square test.

#![allow(dead_code)]

/// The worked example of the sampling notes: "The cat sat on the ___".
pub const LABELS: [&str; 6] = ["mat", "sofa", "floor", "bed", "moon", "banana"];
pub const LOGITS: [f32; 6] = [6.0, 5.0, 4.5, 3.5, 2.0, 0.0];

/// Pearson's chi-square statistic of observed counts against expected probabilities, and its
/// degrees of freedom (cells with positive probability, minus one).
///
/// # Panics
///
/// If a cell of probability 0 was observed: that is never a sampling fluctuation.
pub fn chi_square(observed: &[u64], expected: &[f64]) -> (f64, usize) {
    assert_eq!(observed.len(), expected.len());
    let n: u64 = observed.iter().sum();
    let mut statistic = 0.0;
    let mut cells = 0usize;
    for (i, (&o, &p)) in observed.iter().zip(expected).enumerate() {
        if p <= 0.0 {
            assert_eq!(
                o, 0,
                "cell {i} has probability 0 but was observed {o} times"
            );
            continue;
        }
        let e = p * n as f64;
        statistic += (o as f64 - e).powi(2) / e;
        cells += 1;
    }
    (statistic, cells.saturating_sub(1))
}

/// The chi-square value exceeded with probability 1e-4 under the null hypothesis
/// (Wilson–Hilferty approximation, z = 3.719).
pub fn chi_square_critical(df: usize) -> f64 {
    let k = df.max(1) as f64;
    let z = 3.719;
    let a = 2.0 / (9.0 * k);
    k * (1.0 - a + z * a.sqrt()).powi(3)
}

/// Asserts that `observed` counts fit `expected` probabilities.
pub fn assert_fits(observed: &[u64], expected: &[f64], what: &str) {
    let (statistic, df) = chi_square(observed, expected);
    let critical = chi_square_critical(df);
    assert!(
        statistic < critical,
        "{what}: chi-square {statistic:.1} >= {critical:.1} (df {df}); observed {observed:?}, expected {expected:?}"
    );
}

/// Counts of each index in `draws` over `width` cells.
pub fn histogram(draws: impl IntoIterator<Item = usize>, width: usize) -> Vec<u64> {
    let mut counts = vec![0u64; width];
    for d in draws {
        counts[d] += 1;
    }
    counts
}

/// Asserts that two probabilities agree to `tolerance`.
pub fn assert_close(got: f32, want: f64, tolerance: f64, what: &str) {
    assert!(
        (got as f64 - want).abs() <= tolerance,
        "{what}: got {got}, want {want} (tolerance {tolerance})"
    );
}

/// Positions of the finite values.
pub fn kept(values: &[f32]) -> Vec<usize> {
    (0..values.len())
        .filter(|&i| values[i] > f32::NEG_INFINITY)
        .collect()
}

/// Probabilities of the finite values, in f64.
pub fn probabilities(values: &[f32]) -> Vec<f64> {
    let max = values.iter().copied().fold(f32::NEG_INFINITY, f32::max) as f64;
    let weights: Vec<f64> = values.iter().map(|&v| (v as f64 - max).exp()).collect();
    let total: f64 = weights.iter().sum();
    weights.iter().map(|w| w / total).collect()
}

/// Positions ordered by decreasing logit, ties by increasing position.
pub fn rank_order(values: &[f32]) -> Vec<usize> {
    let mut order = kept(values);
    order.sort_by(|&a, &b| values[b].total_cmp(&values[a]).then(a.cmp(&b)));
    order
}

/// Whether `subset` (of `values`) is the first `subset.len()` of the rank order.
pub fn is_rank_prefix(values: &[f32], subset: &[usize]) -> bool {
    let mut prefix = rank_order(values)[..subset.len()].to_vec();
    prefix.sort_unstable();
    prefix == subset
}

/// Logits shaped like a language model's over a 262,144-token vocabulary (Gemma 3's): most
/// tokens in a broad normal band, a few dozen plausible ones well above it.
pub fn model_like_logits(width: usize, seed: u64) -> Vec<f32> {
    let mut rng = constrain_sampling::Xoshiro256StarStar::seed_from_u64(seed);
    let mut logits: Vec<f32> = (0..width)
        .map(|_| {
            // Box–Muller: a standard normal from two uniforms.
            let (u, v) = (1.0 - rng.next_f64(), rng.next_f64());
            ((-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos() * 2.0) as f32
        })
        .collect();
    for rank in 0..40 {
        let token = (rng.next_u64() % width as u64) as usize;
        logits[token] = 16.0 - rank as f32 * 0.2;
    }
    logits
}
