//! The [`Vocabulary`] type: token id -> (bytes, kind), plus the logits width.

use thiserror::Error;

/// What a token is, as far as constrained decoding cares.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum TokenKind {
    /// Ordinary text: its bytes are part of the output.
    Text,
    /// A special or control token (`<|im_start|>`, `<start_of_image>`, ...): not text.
    Special,
    /// Ends generation (end of sequence, end of turn, ...). A model may have several.
    EndOfSequence,
}

/// Why a vocabulary could not be built or loaded.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum VocabError {
    /// Two entries for the same id.
    #[error("token id {0} appears twice")]
    DuplicateId(u32),
    /// An id refers to no token.
    #[error("token id {id} is outside the vocabulary of {len} ids")]
    UnknownId {
        /// The id.
        id: u32,
        /// The vocabulary's size.
        len: usize,
    },
    /// The logits width is narrower than the vocabulary.
    #[error("logits width {width} is smaller than the vocabulary's {len} ids")]
    WidthTooSmall {
        /// The requested width.
        width: usize,
        /// The vocabulary's size.
        len: usize,
    },
    /// An id too large to be a real token id (see [`MAX_TOKEN_ID`]).
    #[error("token id {id} is larger than the largest supported id {MAX_TOKEN_ID}")]
    IdTooLarge {
        /// The id.
        id: u32,
    },
    /// A tokenizer could not encode a text.
    #[error("cannot encode text: {message}")]
    Encode {
        /// What went wrong.
        message: String,
    },
    /// A tokenizer file could not be read or understood.
    #[error("{path}: {message}")]
    Load {
        /// The file.
        path: String,
        /// What went wrong.
        message: String,
    },
}

/// The largest token id a [`Vocabulary`] accepts. Real vocabularies stay below a few
/// million ids; the bound keeps a corrupt id from allocating gigabytes.
pub const MAX_TOKEN_ID: u32 = (1 << 24) - 1;

/// Every token id's bytes and kind, and the width of the model's logits.
///
/// Ids below [`Vocabulary::len`] without an entry, and ids from `len` up to
/// [`Vocabulary::logits_width`] (padding), are never allowed by any mask.
#[derive(Clone, Debug, Default)]
pub struct Vocabulary {
    bytes: Vec<Option<Box<[u8]>>>,
    kinds: Vec<TokenKind>,
    eos: Vec<u32>,
    logits_width: usize,
}

impl Vocabulary {
    /// Builds a vocabulary from `(id, bytes, kind)` triples (the form llama.cpp models give).
    ///
    /// Ids may come in any order and leave gaps; [`Vocabulary::len`] is the largest id plus one.
    pub fn from_tokens<I>(tokens: I) -> Result<Vocabulary, VocabError>
    where
        I: IntoIterator<Item = (u32, Vec<u8>, TokenKind)>,
    {
        let mut vocab = Vocabulary::default();
        for (id, bytes, kind) in tokens {
            if id > MAX_TOKEN_ID {
                return Err(VocabError::IdTooLarge { id });
            }
            let i = id as usize;
            if i >= vocab.bytes.len() {
                vocab.bytes.resize(i + 1, None);
                vocab.kinds.resize(i + 1, TokenKind::Special);
            }
            if vocab.bytes[i].is_some() {
                return Err(VocabError::DuplicateId(id));
            }
            vocab.bytes[i] = Some(bytes.into_boxed_slice());
            vocab.kinds[i] = kind;
            if kind == TokenKind::EndOfSequence {
                vocab.eos.push(id);
            }
        }
        vocab.eos.sort_unstable();
        vocab.logits_width = vocab.bytes.len();
        Ok(vocab)
    }

    /// The same vocabulary for a model whose logits are `width` wide (`width >= len`).
    pub fn with_logits_width(mut self, width: usize) -> Result<Vocabulary, VocabError> {
        if width < self.bytes.len() {
            return Err(VocabError::WidthTooSmall {
                width,
                len: self.bytes.len(),
            });
        }
        self.logits_width = width;
        Ok(self)
    }

    /// Number of token ids (the largest id plus one).
    pub fn len(&self) -> usize {
        self.bytes.len()
    }

    /// Whether there are no tokens at all.
    pub fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }

    /// Width of the model's logits (at least [`Vocabulary::len`]); masks have this many bits.
    pub fn logits_width(&self) -> usize {
        self.logits_width
    }

    /// The bytes of token `id` (for special tokens: their written form), if it exists.
    pub fn token_bytes(&self, id: u32) -> Option<&[u8]> {
        self.bytes.get(id as usize)?.as_deref()
    }

    /// The kind of token `id`, if it exists.
    pub fn kind(&self, id: u32) -> Option<TokenKind> {
        self.bytes.get(id as usize)?.as_ref()?;
        self.kinds.get(id as usize).copied()
    }

    /// The tokens that end generation, sorted.
    pub fn eos_tokens(&self) -> &[u32] {
        &self.eos
    }

    /// Makes exactly `ids` the end-of-sequence tokens; former ones become [`TokenKind::Special`].
    pub fn set_eos_tokens(&mut self, ids: &[u32]) -> Result<(), VocabError> {
        for &id in ids {
            if self.token_bytes(id).is_none() {
                return Err(VocabError::UnknownId {
                    id,
                    len: self.len(),
                });
            }
        }
        for &id in &self.eos {
            self.kinds[id as usize] = TokenKind::Special;
        }
        for &id in ids {
            self.kinds[id as usize] = TokenKind::EndOfSequence;
        }
        self.eos = ids.to_vec();
        self.eos.sort_unstable();
        self.eos.dedup();
        Ok(())
    }

    /// Every existing token as `(id, bytes, kind)`, in id order.
    pub fn iter(&self) -> impl Iterator<Item = (u32, &[u8], TokenKind)> + '_ {
        self.bytes
            .iter()
            .zip(&self.kinds)
            .enumerate()
            .filter_map(|(i, (b, &k))| Some((i as u32, b.as_deref()?, k)))
    }
}
