//! What tracing costs: whole greedy generations of a JSON document under the JSON grammar,
//! with a real tokenizer's vocabulary and a fake model that favours the document's next token,
//! with the trace off (the default) and on (five candidates per distribution).
//!
//! `cargo bench --bench trace` prints the time per token of both, side by side, then runs
//! criterion on whole generations.

// `criterion_group!` defines a public function without documentation.
#![allow(missing_docs)]

use std::sync::Arc;
use std::time::Instant;

use constrain::{CompiledGrammar, ConstrainedSampler, SamplerConfig, TokenIndex, Tokenizer};
use criterion::{criterion_group, criterion_main, Criterion};

fn tokenizer() -> (String, Tokenizer) {
    for name in ["llama3_1", "gemma3"] {
        if let Some(path) = constrain_testdata::shared_tokenizer(name) {
            return (
                name.into(),
                Tokenizer::from_file(path).expect("tokenizer loads"),
            );
        }
    }
    let path = constrain_testdata::fixture_tokenizer();
    (
        "fixture".into(),
        Tokenizer::from_file(path).expect("fixture loads"),
    )
}

/// One greedy generation of `document` (the fake model's favourite at each position).
fn generate(grammar: &Arc<CompiledGrammar>, document: &[u32], noise: &[f32], trace: bool) -> usize {
    let mut sampler =
        ConstrainedSampler::new(grammar.clone(), SamplerConfig::greedy(), 0).expect("a sampler");
    sampler.set_trace(trace.then_some(5));
    let mut model = |tokens: &[u32]| {
        let mut logits = noise.to_vec();
        if let Some(&next) = document.get(tokens.len()) {
            logits[next as usize] += 30.0;
        }
        logits
    };
    let out = sampler
        .generate(&mut model, document.len() + 8)
        .expect("the document is generated");
    assert_eq!(out.trace.len(), if trace { out.tokens.len() } else { 0 });
    out.tokens.len()
}

fn bench(c: &mut Criterion) {
    let (name, tokenizer) = tokenizer();
    let path = constrain_testdata::workspace_root().join("grammars/json.gbnf");
    let text = std::fs::read_to_string(&path).expect("grammars/json.gbnf");
    let grammar = constrain::Constraint::Gbnf(text)
        .compile(TokenIndex::new(tokenizer.vocabulary().clone()))
        .expect("json.gbnf compiles");
    let doc = std::fs::read_to_string(constrain_testdata::fixture("documents/order.json"))
        .expect("fixture document");
    let document = tokenizer.encode(doc.trim_end()).expect("encodes");
    let width = tokenizer.vocabulary().logits_width();
    let noise: Vec<f32> = constrain_testdata::hashed_logits(&[], 1, width);
    // Warm the grammar's states, then time both side by side.
    generate(&grammar, &document, &noise, false);
    for round in 0..3 {
        for trace in [false, true] {
            let start = Instant::now();
            let tokens = generate(&grammar, &document, &noise, trace);
            let per_token = start.elapsed().as_secs_f64() * 1e6 / tokens as f64;
            println!(
                "trace/{name}/round {round}: trace {:<3}  {tokens} tokens  {per_token:>8.1} us per token",
                if trace { "on" } else { "off" }
            );
        }
    }
    c.bench_function(&format!("trace/{name}/document, trace off"), |b| {
        b.iter(|| generate(&grammar, &document, &noise, false))
    });
    c.bench_function(&format!("trace/{name}/document, trace on"), |b| {
        b.iter(|| generate(&grammar, &document, &noise, true))
    });
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(10);
    targets = bench
}
criterion_main!(benches);
