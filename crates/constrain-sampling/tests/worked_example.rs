//! The worked example of the sampling notes (logits 6.0, 5.0, 4.5, 3.5, 2.0, 0.0 for mat,
//! sofa, floor, bed, moon, banana) through each step, the funnel and its trace.

mod common;

use common::{assert_close, LOGITS};
use constrain_sampling::{
    apply_min_p, apply_repetition_penalty, apply_temperature, apply_top_k, apply_top_p, softmax,
    CutoffScratch, Funnel, History, PenaltyWindow, SamplerConfig, Stage, TokenCounts,
};

/// The funnel's final distribution by token, for these settings and this history.
fn final_probs(config: SamplerConfig, history: &History) -> Vec<f32> {
    let mut funnel = Funnel::new(config).unwrap();
    let mut logits = LOGITS.to_vec();
    let fast = funnel
        .distribution(&mut logits, None, history)
        .unwrap()
        .to_dense(LOGITS.len());
    let traced = funnel.trace(&LOGITS, None, history).unwrap();
    for (a, b) in fast.iter().zip(&traced.final_probs) {
        assert!(
            (a - b).abs() < 1e-6,
            "fast path {fast:?} vs trace {:?}",
            traced.final_probs
        );
    }
    fast
}

fn assert_probs(got: &[f32], want: &[f64], tolerance: f64, what: &str) {
    assert_eq!(got.len(), want.len());
    for (i, (&g, &w)) in got.iter().zip(want).enumerate() {
        assert_close(g, w, tolerance, &format!("{what}, token {i}"));
    }
}

#[test]
fn softmax_of_the_raw_logits() {
    let probs = final_probs(SamplerConfig::default(), &History::new());
    assert_probs(
        &probs,
        &[0.590, 0.217, 0.132, 0.048, 0.011, 0.0015],
        5e-4,
        "softmax",
    );
}

#[test]
fn temperature_half_sharpens() {
    let config = SamplerConfig {
        temperature: 0.5,
        ..Default::default()
    };
    let probs = final_probs(config, &History::new());
    assert_probs(&probs[..4], &[0.839, 0.114, 0.042, 0.006], 5e-4, "T = 0.5");
}

#[test]
fn temperature_two_flattens() {
    let config = SamplerConfig {
        temperature: 2.0,
        ..Default::default()
    };
    let probs = final_probs(config, &History::new());
    assert_probs(
        &probs,
        &[0.392, 0.238, 0.185, 0.112, 0.053, 0.020],
        5e-4,
        "T = 2",
    );
}

#[test]
fn top_k_three_renormalizes_the_survivors() {
    let config = SamplerConfig {
        top_k: 3,
        ..Default::default()
    };
    let probs = final_probs(config, &History::new());
    // The notes' .6286 divides the rounded .590 by .939; exactly it is 1 / (1 + e^-1 + e^-1.5)
    // = .62853, hence the tolerance of 1e-4.
    assert_probs(
        &probs,
        &[0.6286, 0.2312, 0.1402, 0.0, 0.0, 0.0],
        1e-4,
        "top-k 3",
    );
}

#[test]
fn top_p_and_min_p_keep_the_same_three() {
    let top_p = SamplerConfig {
        top_p: 0.9,
        ..Default::default()
    };
    let min_p = SamplerConfig {
        min_p: 0.1,
        ..Default::default()
    };
    for (config, what) in [(top_p, "top-p 0.9"), (min_p, "min-p 0.1")] {
        let probs = final_probs(config, &History::new());
        assert_probs(&probs, &[0.6286, 0.2312, 0.1402, 0.0, 0.0, 0.0], 1e-4, what);
    }
    // bed's .048 misses min-p's bar of .1 * .590 = .059, but passes a bar of .08 * .590 = .047.
    let looser = SamplerConfig {
        min_p: 0.08,
        ..Default::default()
    };
    assert!(final_probs(looser, &History::new())[3] > 0.0);
}

#[test]
fn repetition_penalty_flips_the_leader() {
    let config = SamplerConfig {
        repetition_penalty: 1.25,
        penalty_window: PenaltyWindow {
            last_n: None,
            include_prompt: true,
        },
        ..Default::default()
    };
    let mut history = History::new();
    history.push(0); // mat
    let probs = final_probs(config, &history);
    assert_close(probs[0], 0.303, 5e-4, "mat");
    assert_close(probs[1], 0.370, 5e-4, "sofa");
}

#[test]
fn the_penalty_window_can_leave_out_the_prompt() {
    let config = SamplerConfig {
        repetition_penalty: 1.25,
        penalty_window: PenaltyWindow {
            last_n: None,
            include_prompt: false,
        },
        ..Default::default()
    };
    // mat is only in the prompt: not penalized.
    let probs = final_probs(config.clone(), &History::from_prompt(&[0]));
    assert_close(probs[0], 0.590, 5e-4, "mat, prompt only");
    let mut history = History::from_prompt(&[0]);
    history.push(0);
    assert_close(
        final_probs(config, &history)[0],
        0.303,
        5e-4,
        "mat, generated",
    );
}

#[test]
fn the_steps_compose_by_hand_exactly_like_the_funnel() {
    let mut scratch = CutoffScratch::new();
    let mut logits = LOGITS.to_vec();
    apply_repetition_penalty(&mut logits, &TokenCounts::from_tokens(&[0]), 1.25).unwrap();
    apply_temperature(&mut logits, 0.5, &mut scratch);
    apply_top_k(&mut logits, 4, &mut scratch);
    apply_top_p(&mut logits, 0.95, &mut scratch);
    apply_min_p(&mut logits, 0.05, &mut scratch);
    softmax(&mut logits).unwrap();

    let config = SamplerConfig {
        repetition_penalty: 1.25,
        temperature: 0.5,
        top_k: 4,
        top_p: 0.95,
        min_p: 0.05,
        ..Default::default()
    };
    let mut history = History::new();
    history.push(0);
    let funnel = final_probs(config, &history);
    for (a, b) in logits.iter().zip(&funnel) {
        assert!(
            (a - b).abs() < 1e-6,
            "by hand {logits:?}, funnel {funnel:?}"
        );
    }
    // sofa leads after the penalty; T = 0.5 makes it .61 and leaves mat, floor above 5% of it.
    assert!(funnel[1] > funnel[0] && funnel[3] == 0.0);
}

#[test]
fn the_trace_records_every_active_stage() {
    let config = SamplerConfig {
        repetition_penalty: 1.25,
        temperature: 0.5,
        top_k: 3,
        ..Default::default()
    };
    let mut history = History::new();
    history.push(0);
    let mut funnel = Funnel::new(config).unwrap();
    let mask = [0b11_1011u32]; // floor (2) is not allowed
    let trace = funnel.trace(&LOGITS, Some(&mask), &history).unwrap();
    let names: Vec<&str> = trace.steps.iter().map(|s| s.name()).collect();
    assert_eq!(
        names,
        [
            "input",
            "grammar-mask",
            "repetition-penalty",
            "temperature",
            "top-k"
        ]
    );
    assert_close(trace.steps[0].probs[0], 0.590, 5e-4, "input");
    assert_eq!(trace.steps[1].probs[2], 0.0);
    assert_eq!(trace.steps[1].logits[2], f32::NEG_INFINITY);
    // After the mask, mat is 6.0 / 1.25 = 4.8.
    assert_eq!(trace.steps[2].logits[0], 4.8);
    assert_eq!(trace.final_probs, trace.steps[4].probs);
    assert_eq!(trace.final_probs.iter().filter(|&&p| p > 0.0).count(), 3);
    assert_eq!(trace.steps[4].stage, Some(Stage::TopK));
}

#[test]
fn greedy_is_one_hot_on_the_leader() {
    let probs = final_probs(SamplerConfig::greedy(), &History::new());
    assert_eq!(probs, [1.0, 0.0, 0.0, 0.0, 0.0, 0.0]);
}
