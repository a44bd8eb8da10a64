//! The parts of a Hugging Face `tokenizer.json` that define the vocabulary.
//!
//! Reading only these (and skipping the merges) is several times faster than building the
//! full tokenizer, which matters for a 262k-token vocabulary that a test or a CLI run
//! loads just to compute masks; the full tokenizer is built only when text is encoded.

use std::fmt;

use serde::de::{self, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;
use serde_json::Value;

/// What the vocabulary is made of.
#[derive(Debug, Deserialize)]
pub(crate) struct TokenizerJson {
    #[serde(default)]
    pub added_tokens: Vec<AddedToken>,
    #[serde(default)]
    pub pre_tokenizer: Value,
    #[serde(default)]
    pub decoder: Value,
    pub model: ModelJson,
}

/// An entry of `added_tokens`.
#[derive(Debug, Deserialize)]
pub(crate) struct AddedToken {
    pub id: u32,
    pub content: String,
    #[serde(default)]
    pub special: bool,
}

/// The `model` section, without its merges.
#[derive(Debug, Deserialize)]
pub(crate) struct ModelJson {
    pub vocab: ModelVocab,
    #[serde(default)]
    pub byte_fallback: bool,
}

/// The model's `(string, id)` pairs: a `{string: id}` map (BPE, WordPiece, WordLevel) or
/// a list of `[string, score]` pairs whose position is the id (Unigram).
#[derive(Debug, Default)]
pub(crate) struct ModelVocab(pub Vec<(String, u32)>);

/// Parses the vocabulary-defining parts of `json`.
pub(crate) fn parse(json: &[u8]) -> Result<TokenizerJson, String> {
    serde_json::from_slice(json).map_err(|e| format!("invalid tokenizer.json: {e}"))
}

impl<'de> Deserialize<'de> for ModelVocab {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(ModelVocabVisitor)
    }
}

struct ModelVocabVisitor;

impl<'de> Visitor<'de> for ModelVocabVisitor {
    type Value = ModelVocab;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a map from token to id, or a list of [token, score] pairs")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<ModelVocab, A::Error> {
        let mut tokens = Vec::with_capacity(map.size_hint().unwrap_or(0));
        while let Some((token, id)) = map.next_entry::<String, u32>()? {
            tokens.push((token, id));
        }
        Ok(ModelVocab(tokens))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<ModelVocab, A::Error> {
        let mut tokens = Vec::with_capacity(seq.size_hint().unwrap_or(0));
        while let Some((token, _score)) = seq.next_element::<(String, f64)>()? {
            let id = u32::try_from(tokens.len())
                .map_err(|_| de::Error::custom("more than 2^32 tokens"))?;
            tokens.push((token, id));
        }
        Ok(ModelVocab(tokens))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bpe_and_unigram_vocabularies() {
        let bpe = parse(
            br#"{"model": {"type": "BPE", "vocab": {"a": 1, "b": 0}, "merges": [["a", "b"]]}}"#,
        )
        .unwrap();
        assert_eq!(
            bpe.model.vocab.0,
            [("a".to_string(), 1), ("b".to_string(), 0)]
        );
        assert!(bpe.added_tokens.is_empty());
        assert!(bpe.decoder.is_null());

        let unigram = parse(
            br#"{"model": {"type": "Unigram", "unk_id": 0, "byte_fallback": true,
                 "vocab": [["<unk>", 0.0], ["\u2581a", -1.5]]}}"#,
        )
        .unwrap();
        assert_eq!(
            unigram.model.vocab.0,
            [("<unk>".to_string(), 0), ("▁a".to_string(), 1)]
        );
        assert!(unigram.model.byte_fallback);
    }

    #[test]
    fn errors_have_positions() {
        let message = parse(br#"{"model": {"vocab": {"a": -1}}}"#).unwrap_err();
        assert!(message.contains("line 1 column"), "{message}");
        assert!(parse(br#"{"added_tokens": []}"#)
            .unwrap_err()
            .contains("model"));
        assert!(parse(b"[]").is_err());
    }
}
