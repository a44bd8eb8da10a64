//! Mask time per token for the JSON grammar over a real JSON document, with real tokenizers.
//!
//! `cargo bench -p constrain-engine --bench mask` prints, per tokenizer, the distribution of the
//! time to fill one mask on first visit of a state (fresh grammar) and on a revisit (every state
//! already cached), each also under a token budget of the document's tokens plus 8 (as a
//! server's `max_tokens` sets one), then runs criterion on whole-document passes.

// `criterion_group!` defines a public function without documentation.
#![allow(missing_docs)]

use std::sync::Arc;
use std::time::Instant;

use constrain_engine::{CompiledGrammar, Grammar, Limits, Matcher, TokenIndex};
use constrain_vocab::Tokenizer;
use criterion::{criterion_group, criterion_main, Criterion};

fn json_grammar() -> Grammar {
    let path = constrain_testdata::workspace_root().join("grammars/json.gbnf");
    let text = std::fs::read_to_string(&path).expect("grammars/json.gbnf");
    constrain_gbnf::parse(&text).expect("json.gbnf parses")
}

fn tokenizers() -> Vec<(String, Tokenizer)> {
    let mut list = Vec::new();
    for name in ["llama3_1", "gemma3"] {
        if let Some(path) = constrain_testdata::shared_tokenizer(name) {
            list.push((
                name.to_string(),
                Tokenizer::from_file(path).expect("tokenizer loads"),
            ));
        }
    }
    if list.is_empty() {
        let path = constrain_testdata::fixture_tokenizer();
        list.push((
            "fixture".to_string(),
            Tokenizer::from_file(path).expect("fixture loads"),
        ));
    }
    list
}

fn document() -> String {
    std::fs::read_to_string(constrain_testdata::fixture("documents/order.json"))
        .expect("fixture document")
        .trim_end()
        .to_string()
}

/// Tokens a budgeted pass allows over the document's own.
const BUDGET_SLACK: usize = 8;

/// Time of `fill_mask` for every token of `tokens`, in microseconds, with a token budget of
/// `budget` tokens when given.
fn pass(grammar: &Arc<CompiledGrammar>, tokens: &[u32], budget: Option<usize>) -> Vec<f64> {
    let mut m = Matcher::new(grammar.clone());
    m.set_token_budget(budget).expect("the document fits");
    let mut mask = vec![0u32; grammar.mask_words()];
    let mut times = Vec::with_capacity(tokens.len());
    for &t in tokens {
        let start = Instant::now();
        m.fill_mask(&mut mask).expect("mask");
        times.push(start.elapsed().as_secs_f64() * 1e6);
        assert!(
            mask[(t / 32) as usize] >> (t % 32) & 1 == 1,
            "document token {t} rejected"
        );
        m.accept_token(t).expect("document token accepted");
    }
    times
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    let rank = ((p / 100.0) * sorted.len() as f64).ceil().max(1.0) as usize;
    sorted[rank.min(sorted.len()) - 1]
}

fn report(label: &str, mut times: Vec<f64>) {
    times.sort_by(f64::total_cmp);
    println!(
        "{label:<34} tokens {:>4}  p50 {:>8.2} us  p99 {:>8.2} us  max {:>8.2} us  mean {:>8.2} us",
        times.len(),
        percentile(&times, 50.0),
        percentile(&times, 99.0),
        times[times.len() - 1],
        times.iter().sum::<f64>() / times.len() as f64
    );
}

fn bench(c: &mut Criterion) {
    let grammar = json_grammar();
    let doc = document();
    for (name, tokenizer) in tokenizers() {
        let tokens = tokenizer.encode(&doc).expect("encodes");
        let index = TokenIndex::new(tokenizer.vocabulary().clone());
        let compile =
            || CompiledGrammar::new(&grammar, index.clone(), Limits::default()).expect("compiles");
        let warm = compile();
        let budget = Some(tokens.len() + BUDGET_SLACK);
        report(
            &format!("json.gbnf/{name}/first visit"),
            pass(&warm, &tokens, None),
        );
        report(
            &format!("json.gbnf/{name}/revisit"),
            pass(&warm, &tokens, None),
        );
        report(
            &format!("json.gbnf/{name}/first visit, budget"),
            pass(&compile(), &tokens, budget),
        );
        report(
            &format!("json.gbnf/{name}/revisit, budget"),
            pass(&warm, &tokens, budget),
        );
        c.bench_function(&format!("json.gbnf/{name}/document, cached states"), |b| {
            b.iter(|| pass(&warm, &tokens, None))
        });
        c.bench_function(&format!("json.gbnf/{name}/document, fresh grammar"), |b| {
            b.iter(|| pass(&compile(), &tokens, None))
        });
        c.bench_function(
            &format!("json.gbnf/{name}/document, fresh grammar, budget"),
            |b| b.iter(|| pass(&compile(), &tokens, budget)),
        );
    }
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(10);
    targets = bench
}
criterion_main!(benches);
