//! Property tests: on random logits, masks, settings and histories, the funnel and each step
//! keep their guarantees.

mod common;

use common::{is_rank_prefix, kept, probabilities, rank_order};
use constrain_sampling::{
    apply_frequency_presence_penalty, apply_grammar_mask, apply_logit_bias, apply_min_p,
    apply_repetition_penalty, apply_top_k, apply_top_p, apply_typical_p, CutoffScratch, Funnel,
    History, PenaltyWindow, SamplerConfig, SamplingError, Stage, TokenCounts,
};
use proptest::prelude::*;
use proptest::test_runner::{Config, RngSeed};

const NINF: f32 = f32::NEG_INFINITY;

fn config() -> Config {
    Config {
        cases: 512,
        failure_persistence: None,
        rng_seed: RngSeed::Fixed(0x5eed),
        ..Config::default()
    }
}

fn logit() -> impl Strategy<Value = f32> {
    prop_oneof![
        8 => -30.0f32..30.0,
        2 => (-3i32..3).prop_map(|i| i as f32), // ties
        1 => Just(NINF),
    ]
}

fn logits() -> impl Strategy<Value = Vec<f32>> {
    prop::collection::vec(logit(), 1..120)
}

fn unit_or(neutral: f32) -> impl Strategy<Value = f32> {
    prop_oneof![Just(neutral), 0.0f32..=1.0]
}

fn sampler_config(width: usize) -> impl Strategy<Value = SamplerConfig> {
    let shape = (
        prop_oneof![Just(0.0f32), Just(1.0), 0.05f32..4.0],
        prop_oneof![Just(0usize), 1usize..20],
        unit_or(1.0),
        unit_or(0.0),
        unit_or(1.0),
    );
    let history = (
        prop_oneof![Just(1.0f32), 0.5f32..2.0],
        -1.0f32..1.0,
        -1.0f32..1.0,
        prop::option::of(0usize..10),
        any::<bool>(),
        prop::collection::vec((0..width as u32, -5.0f32..5.0), 0..4),
    );
    (shape, history).prop_map(
        |(
            (temperature, top_k, top_p, min_p, typical_p),
            (rep, freq, pres, last_n, prompt, bias),
        )| {
            SamplerConfig {
                temperature,
                top_k,
                top_p,
                min_p,
                typical_p,
                repetition_penalty: rep,
                frequency_penalty: freq,
                presence_penalty: pres,
                penalty_window: PenaltyWindow {
                    last_n,
                    include_prompt: prompt,
                },
                logit_bias: bias,
            }
        },
    )
}

/// A case for the whole funnel: logits, an optional mask, settings and a history.
fn funnel_case() -> impl Strategy<Value = (Vec<f32>, Option<Vec<u32>>, SamplerConfig, History)> {
    logits().prop_flat_map(|logits| {
        let width = logits.len();
        let words = width.div_ceil(32);
        let mask = prop::option::of(prop::collection::vec(
            prop_oneof![Just(u32::MAX), any::<u32>(), Just(0u32)],
            words.saturating_sub(1)..=words + 1,
        ));
        let history = (
            prop::collection::vec(0..width as u32, 0..6),
            prop::collection::vec(0..width as u32, 0..12),
        )
            .prop_map(|(prompt, generated)| {
                let mut history = History::from_prompt(&prompt);
                history.extend(&generated);
                history
            });
        (Just(logits), mask, sampler_config(width), history)
    })
}

#[test]
fn stage_orders_must_name_every_stage_once() {
    let mut twice = Stage::CANONICAL_ORDER.to_vec();
    twice[8] = Stage::TopK;
    let missing = &Stage::CANONICAL_ORDER[..8];
    for order in [&twice[..], missing] {
        assert!(matches!(
            Funnel::with_order(SamplerConfig::default(), order),
            Err(SamplingError::InvalidStageOrder { .. })
        ));
    }
    // llama.cpp's order: penalties, then the cutoffs, then the temperature.
    let llama = [
        Stage::GrammarMask,
        Stage::RepetitionPenalty,
        Stage::FrequencyPresencePenalty,
        Stage::LogitBias,
        Stage::TopK,
        Stage::TypicalP,
        Stage::TopP,
        Stage::MinP,
        Stage::Temperature,
    ];
    assert!(Funnel::with_order(SamplerConfig::default(), &llama).is_ok());
}

/// The logits after the stages that read token ids (mask, penalties, bias), by hand.
fn before_shaping(
    logits: &[f32],
    mask: Option<&[u32]>,
    config: &SamplerConfig,
    history: &History,
) -> Vec<f32> {
    let mut values = logits.to_vec();
    if let Some(mask) = mask {
        apply_grammar_mask(&mut values, mask);
    }
    let counts = TokenCounts::from_tokens(history.window(&config.penalty_window));
    apply_repetition_penalty(&mut values, &counts, config.repetition_penalty).unwrap();
    apply_frequency_presence_penalty(
        &mut values,
        &counts,
        config.frequency_penalty,
        config.presence_penalty,
    )
    .unwrap();
    apply_logit_bias(&mut values, &config.logit_bias).unwrap();
    values
}

/// The most likely token (lowest id on ties), if any.
fn argmax(values: &[f32]) -> Option<usize> {
    let max = values.iter().copied().fold(NINF, f32::max);
    (max > NINF).then(|| values.iter().position(|&v| v == max).unwrap())
}

fn allowed(mask: Option<&[u32]>, token: usize) -> bool {
    mask.is_none_or(|mask| {
        mask.get(token / 32)
            .is_some_and(|w| (w >> (token % 32)) & 1 == 1)
    })
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn the_funnel_keeps_its_guarantees(case in funnel_case()) {
        let (logits, mask, config, history) = case;
        let mask = mask.as_deref();
        let mut funnel = Funnel::new(config.clone()).unwrap();
        let mut buffer = logits.clone();
        let result = funnel.distribution(&mut buffer, mask, &history).cloned();

        let possible: Vec<usize> = (0..logits.len())
            .filter(|&i| logits[i] > NINF && allowed(mask, i))
            .collect();
        let distribution = match result {
            Err(SamplingError::NoAllowedToken { .. }) if mask.is_some() && possible.is_empty() => return Ok(()),
            Err(SamplingError::NoTokenLeft { after: "input" }) if mask.is_none() && possible.is_empty() => return Ok(()),
            Err(other) => panic!("unexpected error {other:?} ({} possible tokens)", possible.len()),
            Ok(distribution) => distribution,
        };
        prop_assert!(!possible.is_empty());

        // Masked or impossible ids never come back.
        for &token in distribution.ids() {
            prop_assert!(possible.binary_search(&(token as usize)).is_ok(), "token {token} resurrected");
        }
        // A distribution.
        let total: f64 = distribution.probs().iter().map(|&p| p as f64).sum();
        prop_assert!((total - 1.0).abs() < 1e-5, "sums to {total}");
        prop_assert!(distribution.probs().iter().all(|&p| (0.0..=1.0).contains(&p)));
        // The most likely token after the id-reading stages survives every later stage.
        let leader = argmax(&before_shaping(&logits, mask, &config, &history)).unwrap();
        prop_assert!(distribution.probability(leader as u32) > 0.0, "argmax {leader} was cut");
        if config.temperature == 0.0 {
            prop_assert_eq!(distribution.ids(), &[leader as u32]);
        }
        // The traced (never compacted) run gives the same distribution.
        let trace = funnel.trace(&logits, mask, &history).unwrap();
        let dense = distribution.to_dense(logits.len());
        for (i, (&a, &b)) in dense.iter().zip(&trace.final_probs).enumerate() {
            prop_assert!((a - b).abs() < 1e-6, "token {i}: fast {a}, traced {b}");
            prop_assert_eq!(a > 0.0, b > 0.0);
        }
        for step in &trace.steps {
            let step_total: f64 = step.probs.iter().map(|&p| p as f64).sum();
            prop_assert!((step_total - 1.0).abs() < 1e-5, "{} sums to {step_total}", step.name());
        }
        // The same input gives the same output.
        let mut again = logits.clone();
        prop_assert_eq!(funnel.distribution(&mut again, mask, &history).unwrap(), &distribution);
    }

    #[test]
    fn any_stage_order_keeps_the_fast_path_exact(
        case in funnel_case(),
        order in Just(Stage::CANONICAL_ORDER.to_vec()).prop_shuffle(),
    ) {
        let (logits, mask, config, history) = case;
        let mask = mask.as_deref();
        let mut funnel = Funnel::with_order(config, &order).unwrap();
        let mut buffer = logits.clone();
        let Ok(distribution) = funnel.distribution(&mut buffer, mask, &history).cloned() else {
            return Ok(());
        };
        let total: f64 = distribution.probs().iter().map(|&p| p as f64).sum();
        prop_assert!((total - 1.0).abs() < 1e-5, "sums to {total}");
        for &token in distribution.ids() {
            let token = token as usize;
            prop_assert!(logits[token] > NINF && allowed(mask, token), "token {token} resurrected");
        }
        let trace = funnel.trace(&logits, mask, &history).unwrap();
        let dense = distribution.to_dense(logits.len());
        for (i, (&a, &b)) in dense.iter().zip(&trace.final_probs).enumerate() {
            prop_assert!((a - b).abs() < 1e-6, "token {i}: fast {a}, traced {b}");
            prop_assert_eq!(a > 0.0, b > 0.0);
        }
    }

    #[test]
    fn top_k_keeps_the_k_best(values in logits(), k in 1usize..30) {
        let mut cut = values.clone();
        apply_top_k(&mut cut, k, &mut CutoffScratch::new());
        let survivors = kept(&cut);
        prop_assert_eq!(survivors.len(), k.min(kept(&values).len()));
        prop_assert!(is_rank_prefix(&values, &survivors));
        for &i in &survivors {
            prop_assert_eq!(cut[i], values[i]);
        }
    }

    #[test]
    fn top_p_keeps_the_smallest_nucleus(values in logits(), p in 0.0f32..1.0) {
        prop_assume!(argmax(&values).is_some());
        let mut cut = values.clone();
        apply_top_p(&mut cut, p, &mut CutoffScratch::new());
        let survivors = kept(&cut);
        prop_assert!(survivors.contains(&argmax(&values).unwrap()));
        prop_assert!(is_rank_prefix(&values, &survivors));
        let probs = probabilities(&values);
        let mass: f64 = survivors.iter().map(|&i| probs[i]).sum();
        prop_assert!(mass >= p as f64 - 1e-5, "mass {mass} < {p}");
        // Smallest: without its least likely member the set would fall short.
        let least = *rank_order(&values)[..survivors.len()].last().unwrap();
        prop_assert!(mass - probs[least] < p as f64 + 1e-5);
    }

    #[test]
    fn min_p_keeps_what_is_within_a_factor_of_the_best(values in logits(), min_p in 0.001f32..1.0) {
        prop_assume!(argmax(&values).is_some());
        let mut cut = values.clone();
        apply_min_p(&mut cut, min_p, &mut CutoffScratch::new());
        let probs = probabilities(&values);
        let best = probs.iter().copied().fold(0.0, f64::max);
        for i in 0..values.len() {
            let ratio = probs[i] / best;
            if (ratio - min_p as f64).abs() < 1e-5 {
                continue; // on the bar: rounding decides
            }
            prop_assert_eq!(cut[i] > NINF, ratio >= min_p as f64, "token {} ratio {}", i, ratio);
        }
    }

    #[test]
    fn typical_p_keeps_the_most_typical_and_the_argmax(values in logits(), p in 0.0f32..1.0) {
        prop_assume!(argmax(&values).is_some());
        let mut cut = values.clone();
        apply_typical_p(&mut cut, p, &mut CutoffScratch::new());
        let survivors = kept(&cut);
        let leader = argmax(&values).unwrap();
        prop_assert!(survivors.contains(&leader));
        let probs = probabilities(&values);
        let entropy: f64 = probs.iter().filter(|&&q| q > 0.0).map(|&q| -q * q.ln()).sum();
        let distance = |i: usize| (-probs[i].ln() - entropy).abs();
        // Every kept token (but the argmax) is at least as typical as every dropped one.
        let worst_kept = survivors.iter().filter(|&&i| i != leader).map(|&i| distance(i)).fold(0.0, f64::max);
        for i in kept(&values) {
            if !survivors.contains(&i) {
                prop_assert!(distance(i) >= worst_kept - 1e-4, "dropped {i} is more typical");
            }
        }
        let mass: f64 = survivors.iter().map(|&i| probs[i]).sum();
        prop_assert!(mass >= p as f64 - 1e-5);
    }
}
