//! Time to load a tokenizer into a [`Tokenizer`] (read, parse the vocabulary, detect the
//! spelling, read the end tokens), and to load it and encode a first text (which builds
//! the full tokenizer): the committed fixture, then every shared tokenizer when the shared
//! reference data is present.

// `criterion_group!` defines a public function without documentation.
#![allow(missing_docs)]

use std::path::Path;
use std::time::Duration;

use constrain_vocab::Tokenizer;
use criterion::{criterion_group, criterion_main, Criterion};

fn bench_tokenizer(c: &mut Criterion, name: &str, path: &Path) {
    c.bench_function(&format!("load/{name}"), |b| {
        b.iter(|| Tokenizer::from_file(path).expect("tokenizer loads"))
    });
    c.bench_function(&format!("load_and_encode/{name}"), |b| {
        b.iter(|| {
            let tokenizer = Tokenizer::from_file(path).expect("tokenizer loads");
            tokenizer.encode("Hello world").expect("encodes")
        })
    });
}

fn load(c: &mut Criterion) {
    bench_tokenizer(
        c,
        "fixture_qwen3_gz",
        &constrain_testdata::fixture_tokenizer(),
    );
    if constrain_testdata::require_shared_or_skip("load benchmarks of shared tokenizers").is_none()
    {
        return;
    }
    for name in constrain_testdata::SHARED_TOKENIZERS {
        if let Some(path) = constrain_testdata::shared_tokenizer(name) {
            bench_tokenizer(c, name, &path);
        }
    }
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(10).measurement_time(Duration::from_secs(8));
    targets = load
}
criterion_main!(benches);
