//! The cached default model for tests that need a real model.

use std::path::PathBuf;

use constrain_llama::model_store::{cached_model_path, DEFAULT_MODEL};
use constrain_llama::{LoadOptions, Model};

/// The default model, loaded; `None` (with a note) when it is missing and
/// `CONSTRAIN_SKIP_MODEL_TESTS=1`.
///
/// # Panics
///
/// When the model is missing otherwise: these tests must not pass by skipping silently.
pub fn model_or_skip(test: &str) -> Option<Model> {
    let path = model_path_or_skip(test)?;
    Some(Model::load(&path, &LoadOptions::default()).expect("the cached model loads"))
}

fn model_path_or_skip(test: &str) -> Option<PathBuf> {
    let path = cached_model_path(&DEFAULT_MODEL).expect("a cache directory");
    if path.is_file() {
        return Some(path);
    }
    if std::env::var("CONSTRAIN_SKIP_MODEL_TESTS").is_ok_and(|v| v == "1") {
        eprintln!(
            "note: {test} skipped: no model at {} (CONSTRAIN_SKIP_MODEL_TESTS=1)",
            path.display()
        );
        return None;
    }
    panic!(
        "{test} needs the default model at {}: run `constrain fetch-model` \
         (or set CONSTRAIN_SKIP_MODEL_TESTS=1 to skip the tests that need it)",
        path.display()
    );
}
