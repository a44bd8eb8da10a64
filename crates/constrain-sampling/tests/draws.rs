//! Seeded draws: they follow the final distribution (chi-square) and a seed always means the
//! same tokens.

mod common;

use common::{assert_fits, chi_square, chi_square_critical, histogram, LOGITS};
use constrain_sampling::{draw, Funnel, History, PenaltyWindow, SamplerConfig, Xoshiro256StarStar};

const DRAWS: usize = 200_000;

/// Draws `DRAWS` tokens through the funnel and returns their counts and the funnel's final
/// distribution.
fn draw_many(
    config: SamplerConfig,
    logits: &[f32],
    mask: Option<&[u32]>,
    history: &History,
    seed: u64,
) -> (Vec<u64>, Vec<f64>) {
    let mut funnel = Funnel::new(config).unwrap();
    let mut rng = Xoshiro256StarStar::seed_from_u64(seed);
    let mut buffer = logits.to_vec();
    let expected: Vec<f64> = funnel
        .distribution(&mut buffer, mask, history)
        .unwrap()
        .to_dense(logits.len())
        .iter()
        .map(|&p| p as f64)
        .collect();
    let tokens = (0..DRAWS).map(|_| {
        buffer.copy_from_slice(logits);
        funnel.sample(&mut buffer, mask, history, &mut rng).unwrap() as usize
    });
    (histogram(tokens, logits.len()), expected)
}

#[test]
fn draws_follow_the_worked_example_under_every_setting() {
    let mut history = History::new();
    history.extend(&[0, 0, 3]);
    let configs = [
        SamplerConfig::default(),
        SamplerConfig {
            temperature: 0.5,
            ..Default::default()
        },
        SamplerConfig {
            temperature: 2.0,
            ..Default::default()
        },
        SamplerConfig {
            top_k: 3,
            ..Default::default()
        },
        SamplerConfig {
            top_p: 0.9,
            temperature: 1.5,
            ..Default::default()
        },
        SamplerConfig {
            min_p: 0.05,
            typical_p: 0.9,
            ..Default::default()
        },
        SamplerConfig {
            repetition_penalty: 1.25,
            frequency_penalty: 0.3,
            presence_penalty: 0.2,
            penalty_window: PenaltyWindow {
                last_n: None,
                include_prompt: true,
            },
            ..Default::default()
        },
    ];
    for (seed, config) in configs.into_iter().enumerate() {
        let what = format!("{config:?}");
        let (counts, expected) = draw_many(config, &LOGITS, None, &history, seed as u64);
        assert_fits(&counts, &expected, &what);
    }
}

#[test]
fn draws_respect_the_grammar_on_a_wider_vocabulary() {
    let mut rng = Xoshiro256StarStar::seed_from_u64(99);
    let logits: Vec<f32> = (0..80)
        .map(|_| (rng.next_f64() * 8.0 - 4.0) as f32)
        .collect();
    let mask = [0xF0F0_F0F0u32, 0x0000_FFFF, 0xFFFF_FFFF]; // ids 64..80 all allowed
    let config = SamplerConfig {
        temperature: 1.3,
        top_p: 0.95,
        ..Default::default()
    };
    let (counts, expected) = draw_many(config, &logits, Some(&mask), &History::new(), 7);
    assert_fits(&counts, &expected, "80 tokens, masked, top-p");
}

/// The chi-square test has the power to notice a draw from the wrong distribution: the
/// worked example at T = 1 does not fit its own distribution at T = 0.9.
#[test]
fn the_chi_square_test_rejects_a_slightly_wrong_distribution() {
    let (counts, _) = draw_many(SamplerConfig::default(), &LOGITS, None, &History::new(), 3);
    let mut funnel = Funnel::new(SamplerConfig {
        temperature: 0.9,
        ..Default::default()
    })
    .unwrap();
    let mut buffer = LOGITS.to_vec();
    let wrong: Vec<f64> = funnel
        .distribution(&mut buffer, None, &History::new())
        .unwrap()
        .to_dense(6)
        .iter()
        .map(|&p| p as f64)
        .collect();
    let (statistic, df) = chi_square(&counts, &wrong);
    assert!(
        statistic > 10.0 * chi_square_critical(df),
        "chi-square {statistic}"
    );
}

#[test]
fn draw_follows_arbitrary_weights() {
    let weights = [0.1f32, 0.0, 0.45, 0.2, 0.25];
    let mut rng = Xoshiro256StarStar::seed_from_u64(11);
    let counts = histogram((0..DRAWS).map(|_| draw(&weights, &mut rng).unwrap()), 5);
    let expected: Vec<f64> = weights.iter().map(|&w| w as f64).collect();
    assert_fits(&counts, &expected, "draw");
}

/// A seed is a promise: these tokens, on every run and every platform. The sequence was
/// checked against an independent computation (xoshiro256** from SplitMix64(42), each draw the
/// first token whose running probability exceeds the uniform).
#[test]
fn a_seed_always_gives_the_same_tokens() {
    let run = || {
        let mut funnel = Funnel::new(SamplerConfig::default()).unwrap();
        let mut rng = Xoshiro256StarStar::seed_from_u64(42);
        (0..24)
            .map(|_| {
                let mut logits = LOGITS.to_vec();
                funnel
                    .sample(&mut logits, None, &History::new(), &mut rng)
                    .unwrap()
            })
            .collect::<Vec<u32>>()
    };
    let first = run();
    assert_eq!(first, run());
    assert_eq!(first, GOLDEN_SEED_42);
}

const GOLDEN_SEED_42: [u32; 24] = [
    0, 0, 1, 2, 4, 1, 1, 2, 1, 0, 1, 0, 1, 0, 1, 2, 1, 2, 1, 1, 0, 0, 0, 1,
];
