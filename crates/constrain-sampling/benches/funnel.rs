//! The sampling funnel on 262,144 logits (Gemma 3's vocabulary): the whole chain under
//! realistic settings, then each stage on its own.
//!
//! `cargo bench -p constrain-sampling --bench funnel`

// `criterion_group!` writes a public function without a doc comment.
#![allow(missing_docs)]

use std::hint::black_box;
use std::time::Duration;

use constrain_sampling::{
    apply_grammar_mask, apply_min_p, apply_repetition_penalty, apply_temperature, apply_top_k,
    apply_top_p, apply_typical_p, check_logits, draw, softmax, CutoffScratch, Funnel, History,
    SamplerConfig, TokenCounts, Xoshiro256StarStar,
};
use criterion::{criterion_group, criterion_main, BatchSize, Criterion};

const WIDTH: usize = 262_144;

/// Logits shaped like a language model's: a broad normal band and a few dozen plausible
/// tokens well above it.
fn model_like_logits(seed: u64) -> Vec<f32> {
    let mut rng = Xoshiro256StarStar::seed_from_u64(seed);
    let mut logits: Vec<f32> = (0..WIDTH)
        .map(|_| {
            let (u, v) = (1.0 - rng.next_f64(), rng.next_f64());
            ((-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos() * 2.0) as f32
        })
        .collect();
    for rank in 0..40 {
        let token = (rng.next_u64() % WIDTH as u64) as usize;
        logits[token] = 16.0 - rank as f32 * 0.2;
    }
    logits
}

/// A grammar state that allows about half the vocabulary (e.g. inside a JSON string).
fn half_mask() -> Vec<u32> {
    (0..WIDTH / 32)
        .map(|i| if i % 3 == 0 { 0x5555_5555 } else { 0xFFFF_00FF })
        .collect()
}

/// A grammar state that allows a few hundred tokens (e.g. where a JSON value or key starts).
fn sparse_mask() -> Vec<u32> {
    (0..WIDTH / 32)
        .map(|i| if i % 40 == 0 { 0x0101_0101 } else { 0 })
        .collect()
}

/// 64 recent tokens, as the default penalty window sees them.
fn recent_history() -> History {
    let mut rng = Xoshiro256StarStar::seed_from_u64(3);
    let tokens: Vec<u32> = (0..200)
        .map(|_| (rng.next_u64() % WIDTH as u64) as u32)
        .collect();
    History::from_prompt(&tokens)
}

fn realistic() -> SamplerConfig {
    SamplerConfig {
        temperature: 0.8,
        top_k: 40,
        top_p: 0.95,
        min_p: 0.05,
        repetition_penalty: 1.1,
        ..SamplerConfig::default()
    }
}

fn whole_funnel(c: &mut Criterion) {
    let logits = model_like_logits(1);
    let mask = half_mask();
    let history = recent_history();
    let cases: Vec<(&str, SamplerConfig, Option<&[u32]>)> = vec![
        ("realistic+mask", realistic(), Some(&mask)),
        ("realistic", realistic(), None),
        (
            "top-p 0.95, T 0.8",
            SamplerConfig {
                temperature: 0.8,
                top_p: 0.95,
                ..Default::default()
            },
            None,
        ),
        (
            "min-p 0.05, T 1.5",
            SamplerConfig {
                temperature: 1.5,
                min_p: 0.05,
                ..Default::default()
            },
            None,
        ),
        (
            "typical-p 0.9",
            SamplerConfig {
                typical_p: 0.9,
                ..Default::default()
            },
            None,
        ),
        ("T 1 (full softmax)", SamplerConfig::default(), None),
        ("greedy+mask", SamplerConfig::greedy(), Some(&mask)),
    ];
    let mut group = c.benchmark_group("funnel");
    for (name, config, mask) in cases {
        let mut funnel = Funnel::new(config).expect("valid settings");
        let mut rng = Xoshiro256StarStar::seed_from_u64(42);
        group.bench_function(name, |b| {
            b.iter_batched_ref(
                || logits.clone(),
                |buffer| {
                    black_box(
                        funnel
                            .sample(buffer, mask, &history, &mut rng)
                            .expect("a token"),
                    )
                },
                BatchSize::LargeInput,
            )
        });
    }
    group.finish();
}

/// [`Funnel::sample_from`], which reads a model's logits in place: a sparse mask's tokens are
/// gathered without copying or masking the vector.
fn read_in_place(c: &mut Criterion) {
    let logits = model_like_logits(1);
    let (half, sparse) = (half_mask(), sparse_mask());
    let history = recent_history();
    let mut group = c.benchmark_group("sample_from");
    for (name, mask) in [
        ("realistic", None),
        ("realistic+mask", Some(&half[..])),
        ("realistic+sparse mask", Some(&sparse[..])),
    ] {
        let mut funnel = Funnel::new(realistic()).expect("valid settings");
        let mut rng = Xoshiro256StarStar::seed_from_u64(42);
        group.bench_function(name, |b| {
            b.iter(|| {
                black_box(
                    funnel
                        .sample_from(&logits, mask, &history, &mut rng)
                        .expect("a token"),
                )
            })
        });
    }
    group.finish();
}

fn stages(c: &mut Criterion) {
    let logits = model_like_logits(1);
    let mask = half_mask();
    let counts = TokenCounts::from_tokens(&recent_history().tokens()[136..]);
    let mut scratch = CutoffScratch::new();
    let mut group = c.benchmark_group("stage");
    let mut bench = |name: &str, step: &mut dyn FnMut(&mut Vec<f32>)| {
        group.bench_function(name, |b| {
            b.iter_batched_ref(
                || logits.clone(),
                |buffer| step(buffer),
                BatchSize::LargeInput,
            )
        });
    };
    bench("check-logits", &mut |v| check_logits(v).expect("finite"));
    bench("grammar-mask", &mut |v| apply_grammar_mask(v, &mask));
    bench("repetition-penalty (64)", &mut |v| {
        apply_repetition_penalty(v, &counts, 1.1).expect("in range")
    });
    bench("temperature", &mut |v| {
        apply_temperature(v, 0.8, &mut scratch)
    });
    bench("top-k 40", &mut |v| apply_top_k(v, 40, &mut scratch));
    bench("top-p 0.95", &mut |v| apply_top_p(v, 0.95, &mut scratch));
    bench("min-p 0.05", &mut |v| apply_min_p(v, 0.05, &mut scratch));
    bench("typical-p 0.9", &mut |v| {
        apply_typical_p(v, 0.9, &mut scratch)
    });
    bench("softmax", &mut |v| softmax(v).expect("a distribution"));
    let mut probs = logits.clone();
    softmax(&mut probs).expect("a distribution");
    let mut rng = Xoshiro256StarStar::seed_from_u64(42);
    group.bench_function("draw (full vocabulary)", |b| {
        b.iter(|| black_box(draw(&probs, &mut rng).expect("a token")))
    });
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3));
    targets = whole_funnel, read_in_place, stages
}
criterion_main!(benches);
