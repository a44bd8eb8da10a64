//! Speculative decoding by prompt lookup leaves the output distribution unchanged: many seeded
//! generations with and without it, on a small fake model under a grammar mask, for several
//! funnel settings, pass a two-sample chi-square test; greedy outputs are identical.

use std::collections::BTreeMap;
use std::sync::Arc;

use constrain::{ConstrainedSampler, Constraint, SamplerConfig, TokenIndex};
use constrain_sampling::PenaltyWindow;

const PIECES: [&str; 6] = ["a", "b", "c", "ab", "ca", "<eos>"];

/// A prompt whose runs the lookup finds again and again.
const PROMPT: [u32; 9] = [0, 1, 2, 3, 0, 1, 2, 3, 0];

fn grammar() -> Arc<constrain::CompiledGrammar> {
    let index = TokenIndex::new(constrain_testdata::pieces_vocabulary(&PIECES));
    // The first letter is a or b; then up to five letters: the mask changes along the way.
    Constraint::Regex("[ab][abc]{1,5}".into())
        .compile(index)
        .unwrap()
}

/// Logits that depend on the whole output so far.
fn model(output: &[u32], salt: u64) -> Vec<f32> {
    constrain_testdata::hashed_logits(output, salt, PIECES.len())
}

fn generate(config: &SamplerConfig, seed: u64, lookup: usize) -> (Vec<u32>, constrain::Generation) {
    generate_salted(config, seed, lookup, 0)
}

fn generate_salted(
    config: &SamplerConfig,
    seed: u64,
    lookup: usize,
    salt: u64,
) -> (Vec<u32>, constrain::Generation) {
    let mut sampler = ConstrainedSampler::new(grammar(), config.clone(), seed)
        .unwrap()
        .with_prompt(&PROMPT);
    sampler.set_lookup(lookup);
    let generation = sampler
        .generate(&mut |output| model(output, salt), 6)
        .unwrap();
    (generation.tokens.clone(), generation)
}

fn settings() -> Vec<(&'static str, SamplerConfig)> {
    vec![
        ("plain", SamplerConfig::default()),
        (
            "temperature and top-k",
            SamplerConfig {
                temperature: 0.7,
                top_k: 3,
                ..SamplerConfig::default()
            },
        ),
        (
            "top-p and repetition penalty",
            SamplerConfig {
                top_p: 0.8,
                repetition_penalty: 1.5,
                penalty_window: PenaltyWindow {
                    last_n: None,
                    include_prompt: true,
                },
                ..SamplerConfig::default()
            },
        ),
        (
            "min-p, frequency penalty and bias",
            SamplerConfig {
                temperature: 1.3,
                min_p: 0.1,
                frequency_penalty: 0.6,
                logit_bias: vec![(3, 1.0), (2, -0.5)],
                ..SamplerConfig::default()
            },
        ),
    ]
}

/// The chi-square statistic of two samples of equal size over their categories (categories
/// seen fewer than 10 times in both together pooled into one), and its degrees of freedom.
fn two_sample_chi_square(a: &BTreeMap<Vec<u32>, u64>, b: &BTreeMap<Vec<u32>, u64>) -> (f64, usize) {
    let mut keys: Vec<&Vec<u32>> = a.keys().chain(b.keys()).collect();
    keys.sort();
    keys.dedup();
    let (mut stat, mut cells) = (0.0, 0usize);
    let (mut rare_a, mut rare_b) = (0u64, 0u64);
    for key in keys {
        let (x, y) = (
            a.get(key).copied().unwrap_or(0),
            b.get(key).copied().unwrap_or(0),
        );
        if x + y < 10 {
            rare_a += x;
            rare_b += y;
            continue;
        }
        stat += (x as f64 - y as f64).powi(2) / (x + y) as f64;
        cells += 1;
    }
    if rare_a + rare_b > 0 {
        stat += (rare_a as f64 - rare_b as f64).powi(2) / (rare_a + rare_b) as f64;
        cells += 1;
    }
    (stat, cells.saturating_sub(1))
}

/// The chi-square quantile for `z` standard deviations (Wilson and Hilferty).
fn critical_value(df: usize, z: f64) -> f64 {
    let k = df as f64;
    let h = 2.0 / (9.0 * k);
    k * (1.0 - h + z * h.sqrt()).powi(3)
}

#[test]
fn lookup_sampling_follows_the_plain_distribution_under_every_setting() {
    const DRAWS: u64 = 6000;
    for (name, config) in settings() {
        let mut plain = BTreeMap::new();
        let mut speculative = BTreeMap::new();
        let (mut drafted, mut accepted) = (0, 0);
        for seed in 0..DRAWS {
            *plain.entry(generate(&config, seed, 0).0).or_insert(0) += 1;
            let (tokens, generation) = generate(&config, 1_000_000 + seed, 4);
            drafted += generation.drafted;
            accepted += generation.accepted;
            *speculative.entry(tokens).or_insert(0) += 1;
        }
        let (stat, df) = two_sample_chi_square(&plain, &speculative);
        assert!(df >= 5, "{name}: only {df} degrees of freedom");
        // About 1 in 30,000 for a correct sampler; the seeds are fixed, so this never flakes.
        let limit = critical_value(df, 4.0);
        eprintln!("{name}: chi-square {stat:.1}, {df} df, limit {limit:.1}; {accepted}/{drafted} drafts accepted");
        assert!(
            stat < limit,
            "{name}: chi-square {stat:.1} over {df} degrees of freedom (limit {limit:.1})"
        );
        assert!(
            accepted > 0 && accepted < drafted,
            "{name}: {accepted} of {drafted} drafted tokens accepted"
        );
    }
}

#[test]
fn a_sampler_that_ignores_the_residual_rule_fails_the_test() {
    // The test has power: plain sampling against outputs with every draft accepted (a
    // biased "speculation") is far over the limit.
    const DRAWS: u64 = 6000;
    let config = SamplerConfig::default();
    let mut plain = BTreeMap::new();
    let mut biased = BTreeMap::new();
    for seed in 0..DRAWS {
        *plain.entry(generate(&config, seed, 0).0).or_insert(0) += 1;
        let mut tokens = generate(&config, 1_000_000 + seed, 0).0;
        // Bias: the first token is always "a" when the output allows its replacement.
        if tokens.first() == Some(&1) {
            tokens[0] = 0;
        }
        *biased.entry(tokens).or_insert(0) += 1;
    }
    let (stat, df) = two_sample_chi_square(&plain, &biased);
    eprintln!("biased: chi-square {stat:.1}, {df} df");
    assert!(
        stat > critical_value(df, 4.0),
        "chi-square {stat:.1} over {df}"
    );
}

#[test]
fn greedy_outputs_are_identical_with_and_without_lookup() {
    let mut accepted = 0;
    for max_draft in [1, 2, 4, 8] {
        for salt in 0..40 {
            let config = SamplerConfig {
                repetition_penalty: 1.2,
                ..SamplerConfig::greedy()
            };
            let (plain, _) = generate_salted(&config, 1, 0, salt);
            let (fast, generation) = generate_salted(&config, 2, max_draft, salt);
            assert_eq!(plain, fast, "max draft {max_draft}, model {salt}");
            accepted += generation.accepted;
        }
    }
    assert!(accepted > 0, "no draft was ever accepted");
}
