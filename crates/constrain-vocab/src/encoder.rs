//! The tokenizer's own encoder, built on first use.
//!
//! Building the full Hugging Face tokenizer (its merges, its added-token matcher) costs
//! most of a load, and only encoding needs it; masks need just the vocabulary.

use std::sync::{Mutex, OnceLock};

use serde_json::Value;
use tokenizers::{NormalizerWrapper, PreTokenizerWrapper};

use crate::prefix::{disable_prefix_space, strip_prepend_normalizers};
use crate::VocabError;

/// A `tokenizers::Tokenizer` built from the retained JSON when first needed.
pub(crate) struct LazyEncoder {
    /// Names the JSON's origin in errors.
    origin: String,
    /// The `tokenizer.json` text, until the encoder is built.
    json: Mutex<Option<Vec<u8>>>,
    /// `(id, content)` of every added token, as the vocabulary has them.
    added: Vec<(u32, String)>,
    built: OnceLock<Result<tokenizers::Tokenizer, String>>,
}

impl LazyEncoder {
    pub(crate) fn new(origin: String, json: Vec<u8>, added: Vec<(u32, String)>) -> LazyEncoder {
        LazyEncoder {
            origin,
            json: Mutex::new(Some(json)),
            added,
            built: OnceLock::new(),
        }
    }

    /// The encoder, built on the first call; a build failure is reported on every call.
    pub(crate) fn get(&self) -> Result<&tokenizers::Tokenizer, VocabError> {
        let built = self.built.get_or_init(|| {
            let json = self
                .json
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner())
                .take();
            let json = json.ok_or("the tokenizer.json text is gone")?;
            build(&json, &self.added)
        });
        built.as_ref().map_err(|message| VocabError::Load {
            path: self.origin.clone(),
            message: message.clone(),
        })
    }
}

fn build(json: &[u8], added: &[(u32, String)]) -> Result<tokenizers::Tokenizer, String> {
    let mut inner = tokenizers::Tokenizer::from_bytes(json)
        .map_err(|e| format!("cannot build the tokenizer: {e}"))?;
    configure_for_exact_text(&mut inner)?;
    // The vocabulary takes added-token ids from the file; the tokenizer assigns its own and
    // only warns when they differ. Encoded ids must mean what the vocabulary says.
    for (id, content) in added {
        let assigned = inner.token_to_id(content);
        if assigned != Some(*id) {
            return Err(format!(
                "added token {content:?} has id {id} in the file but the tokenizer assigns {assigned:?}"
            ));
        }
    }
    Ok(inner)
}

/// Makes `encode` return ids that spell exactly the text: no inserted prefix space,
/// special tokens' written forms read as text, no truncation or padding.
fn configure_for_exact_text(inner: &mut tokenizers::Tokenizer) -> Result<(), String> {
    let mut normalizer = to_json(inner.get_normalizer())?;
    if strip_prepend_normalizers(&mut normalizer) {
        let normalizer: Option<NormalizerWrapper> = serde_json::from_value(normalizer)
            .map_err(|e| format!("cannot rebuild the normalizer: {e}"))?;
        inner.with_normalizer(normalizer);
    }
    let mut pre_tokenizer = to_json(inner.get_pre_tokenizer())?;
    if disable_prefix_space(&mut pre_tokenizer) {
        let pre_tokenizer: Option<PreTokenizerWrapper> = serde_json::from_value(pre_tokenizer)
            .map_err(|e| format!("cannot rebuild the pre-tokenizer: {e}"))?;
        inner.with_pre_tokenizer(pre_tokenizer);
    }
    inner.set_encode_special_tokens(true);
    inner.with_padding(None);
    inner.with_truncation(None).map_err(|e| e.to_string())?;
    Ok(())
}

fn to_json<T: serde::Serialize>(component: Option<&T>) -> Result<Value, String> {
    serde_json::to_value(component).map_err(|e| format!("cannot inspect the tokenizer: {e}"))
}
