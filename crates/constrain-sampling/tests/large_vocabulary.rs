//! The funnel on a real vocabulary size (262,144 logits): the compacting fast path agrees with
//! the step-by-step trace, and the cutoffs agree with a full sort.

mod common;

use common::{is_rank_prefix, kept, model_like_logits, probabilities, rank_order};
use constrain_sampling::{
    apply_top_k, apply_top_p, CutoffScratch, Funnel, History, PenaltyWindow, SamplerConfig,
};

const WIDTH: usize = 262_144;

fn history() -> History {
    let mut history = History::from_prompt(&[17, 99, 4096, 17]);
    history.extend(&[5, 262_143, 17, 1000]);
    history
}

fn configs() -> Vec<SamplerConfig> {
    vec![
        SamplerConfig {
            temperature: 0.8,
            top_k: 40,
            top_p: 0.95,
            min_p: 0.05,
            repetition_penalty: 1.1,
            ..Default::default()
        },
        SamplerConfig {
            temperature: 1.2,
            top_p: 0.9,
            ..Default::default()
        },
        SamplerConfig {
            typical_p: 0.8,
            ..Default::default()
        },
        SamplerConfig {
            temperature: 2.0,
            min_p: 0.01,
            ..Default::default()
        },
        SamplerConfig {
            frequency_penalty: 0.5,
            presence_penalty: 0.5,
            penalty_window: PenaltyWindow {
                last_n: None,
                include_prompt: false,
            },
            logit_bias: vec![(3, 20.0), (4, f32::NEG_INFINITY)],
            ..Default::default()
        },
        SamplerConfig::greedy(),
    ]
}

#[test]
fn the_fast_path_agrees_with_the_trace() {
    let logits = model_like_logits(WIDTH, 1);
    // Half the vocabulary allowed, in stripes.
    let mask: Vec<u32> = (0..WIDTH / 32)
        .map(|i| if i % 2 == 0 { 0x5555_5555 } else { u32::MAX })
        .collect();
    // One token in 97 allowed: the funnel reads only those.
    let sparse: Vec<u32> = (0..WIDTH / 32)
        .map(|i| {
            (0..32)
                .filter(|j| (i * 32 + j) % 97 == 0)
                .fold(0, |word, j| word | 1 << j)
        })
        .collect();
    for config in configs() {
        for mask in [None, Some(mask.as_slice()), Some(sparse.as_slice())] {
            let mut funnel = Funnel::new(config.clone()).unwrap();
            let mut buffer = logits.clone();
            let fast = funnel
                .distribution(&mut buffer, mask, &history())
                .unwrap()
                .to_dense(WIDTH);
            let traced = funnel.trace(&logits, mask, &history()).unwrap().final_probs;
            for (token, (&a, &b)) in fast.iter().zip(&traced).enumerate() {
                assert!(
                    (a - b).abs() < 1e-6 && (a > 0.0) == (b > 0.0),
                    "{config:?}, masked {}: token {token}: fast {a}, traced {b}",
                    mask.is_some()
                );
            }
        }
    }
}

#[test]
fn cutoffs_agree_with_a_full_sort() {
    let logits = model_like_logits(WIDTH, 2);
    let mut scratch = CutoffScratch::new();

    let mut top_k = logits.clone();
    apply_top_k(&mut top_k, 40, &mut scratch);
    let mut want = rank_order(&logits)[..40].to_vec();
    want.sort_unstable();
    assert_eq!(kept(&top_k), want);

    let probs = probabilities(&logits);
    for p in [0.5f32, 0.9, 0.95, 0.999] {
        let mut top_p = logits.clone();
        apply_top_p(&mut top_p, p, &mut scratch);
        let survivors = kept(&top_p);
        assert!(is_rank_prefix(&logits, &survivors), "top-p {p}");
        let mass: f64 = survivors.iter().map(|&i| probs[i]).sum();
        let least = rank_order(&logits)[survivors.len() - 1];
        assert!(
            mass >= p as f64 - 1e-5 && mass - probs[least] < p as f64 + 1e-5,
            "top-p {p}: {mass}"
        );
    }
}
