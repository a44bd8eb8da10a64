//! `Vocabulary`: a tokenizer's token bytes and kinds, with the token index every grammar
//! compiled for it shares.
//!
//! The index (a trie of the vocabulary) is built once here, so compiling many grammars for one
//! tokenizer pays for it once, and grammars share lexeme masks through it.

use std::sync::Arc;

use constrain_engine::TokenIndex;
use constrain_vocab::{TokenKind, Tokenizer, Vocabulary};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyBytes;

use crate::errors::vocab_error;

/// A model's vocabulary: every token id's bytes and kind, and the width of its logits.
///
/// Build it once per tokenizer and compile every grammar against it.
#[pyclass(module = "constrain", name = "Vocabulary", frozen)]
pub struct PyVocabulary {
    pub index: Arc<TokenIndex>,
}

impl PyVocabulary {
    fn new(vocab: Vocabulary, width: Option<usize>) -> PyResult<PyVocabulary> {
        let vocab = match width {
            Some(width) => vocab
                .with_logits_width(width)
                .map_err(|e| vocab_error(&e))?,
            None => vocab,
        };
        Ok(PyVocabulary {
            index: TokenIndex::new(Arc::new(vocab)),
        })
    }

    fn vocab(&self) -> &Vocabulary {
        self.index.vocabulary()
    }
}

/// `tokenizer`'s vocabulary with `extra_eos` added to its end-of-sequence tokens.
fn with_extra_eos(mut tokenizer: Tokenizer, extra_eos: &[u32]) -> PyResult<Vocabulary> {
    if !extra_eos.is_empty() {
        let mut ids = tokenizer.vocabulary().eos_tokens().to_vec();
        ids.extend_from_slice(extra_eos);
        tokenizer
            .set_eos_tokens(&ids)
            .map_err(|e| vocab_error(&e))?;
    }
    Ok(tokenizer.vocabulary().as_ref().clone())
}

#[pymethods]
impl PyVocabulary {
    /// Loads a Hugging Face ``tokenizer.json`` (or a gzip-compressed one).
    ///
    /// End-of-sequence tokens: ``eos_token`` of ``tokenizer_config.json`` and
    /// ``eos_token_id`` of ``generation_config.json`` beside the file, the well-known end
    /// tokens of common model families, and ``eos_ids``. ``width`` is the model's logits
    /// width when it is larger than the vocabulary (padding ids are never allowed).
    #[staticmethod]
    #[pyo3(signature = (path, *, eos_ids=Vec::new(), width=None))]
    fn from_tokenizer_json(
        py: Python<'_>,
        path: std::path::PathBuf,
        eos_ids: Vec<u32>,
        width: Option<usize>,
    ) -> PyResult<PyVocabulary> {
        py.detach(|| {
            let tokenizer = Tokenizer::from_file(&path).map_err(|e| vocab_error(&e))?;
            PyVocabulary::new(with_extra_eos(tokenizer, &eos_ids)?, width)
        })
    }

    /// The vocabulary of the text of a ``tokenizer.json`` (what
    /// ``Vocabulary.from_huggingface`` passes on): the well-known end tokens and ``eos_ids``
    /// end generation.
    #[staticmethod]
    #[pyo3(signature = (json, *, eos_ids=Vec::new(), width=None))]
    fn from_tokenizer_json_str(
        py: Python<'_>,
        json: &str,
        eos_ids: Vec<u32>,
        width: Option<usize>,
    ) -> PyResult<PyVocabulary> {
        let json = json.as_bytes().to_vec();
        py.detach(|| {
            let tokenizer = Tokenizer::from_json_bytes(&json).map_err(|e| vocab_error(&e))?;
            PyVocabulary::new(with_extra_eos(tokenizer, &eos_ids)?, width)
        })
    }

    /// A vocabulary from each id's bytes: ``tokens[i]`` is the text of token ``i`` (``None``
    /// for an unused id). Ids in ``eos_ids`` end generation; ids in ``special_ids`` are
    /// control tokens that are never text. ``width`` is the logits width, when larger.
    #[staticmethod]
    #[pyo3(signature = (tokens, eos_ids, *, special_ids=Vec::new(), width=None))]
    fn from_tokens(
        tokens: Vec<Option<Vec<u8>>>,
        eos_ids: Vec<u32>,
        special_ids: Vec<u32>,
        width: Option<usize>,
    ) -> PyResult<PyVocabulary> {
        let len = tokens.len();
        let mut kinds = vec![TokenKind::Text; len];
        for (ids, kind, what) in [
            (&special_ids, TokenKind::Special, "special_ids"),
            (&eos_ids, TokenKind::EndOfSequence, "eos_ids"),
        ] {
            for &id in ids.iter() {
                let slot = kinds
                    .get_mut(id as usize)
                    .filter(|_| tokens[id as usize].is_some());
                match slot {
                    Some(k) => *k = kind,
                    None => {
                        return Err(PyValueError::new_err(format!(
                            "{what} holds {id}, which is not a token of this vocabulary \
                             ({len} ids)"
                        )))
                    }
                }
            }
        }
        let entries = tokens
            .into_iter()
            .zip(kinds)
            .enumerate()
            .filter_map(|(id, (bytes, kind))| Some((id as u32, bytes?, kind)));
        let vocab = Vocabulary::from_tokens(entries).map_err(|e| vocab_error(&e))?;
        PyVocabulary::new(vocab, width)
    }

    /// Number of token ids (the largest id plus one).
    #[getter]
    fn size(&self) -> usize {
        self.vocab().len()
    }

    /// The width of the model's logits (at least ``size``); bitmasks have this many bits.
    #[getter]
    fn width(&self) -> usize {
        self.vocab().logits_width()
    }

    /// The ids that end generation, sorted.
    #[getter]
    fn eos_ids(&self) -> Vec<u32> {
        self.vocab().eos_tokens().to_vec()
    }

    /// The bytes of token ``id`` (a special token's written form), or ``None`` for an id
    /// without a token.
    fn token_bytes<'py>(&self, py: Python<'py>, id: u32) -> Option<Bound<'py, PyBytes>> {
        self.vocab().token_bytes(id).map(|b| PyBytes::new(py, b))
    }

    /// The kind of token ``id``: ``"text"``, ``"special"``, ``"eos"``, or ``None``.
    fn token_kind(&self, id: u32) -> Option<&'static str> {
        self.vocab().kind(id).map(|k| match k {
            TokenKind::Text => "text",
            TokenKind::Special => "special",
            TokenKind::EndOfSequence => "eos",
        })
    }

    fn __len__(&self) -> usize {
        self.vocab().len()
    }

    fn __repr__(&self) -> String {
        format!(
            "Vocabulary(size={}, width={}, eos_ids={:?})",
            self.vocab().len(),
            self.vocab().logits_width(),
            self.vocab().eos_tokens()
        )
    }
}
