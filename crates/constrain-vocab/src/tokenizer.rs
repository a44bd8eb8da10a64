//! [`Tokenizer`]: a Hugging Face `tokenizer.json` as a [`Vocabulary`] plus the tokenizer's
//! own encoding.

use std::fmt;
use std::io::Read;
use std::path::Path;
use std::sync::Arc;

use crate::encoder::LazyEncoder;
use crate::eos::{self, ConfiguredEos, WELL_KNOWN_END_TOKENS};
use crate::spelling::TokenSpelling;
use crate::tokenizer_json::{self, TokenizerJson};
use crate::vocabulary::MAX_TOKEN_ID;
use crate::{TokenKind, VocabError, Vocabulary};

/// What [`VocabError::Load`] names when the JSON did not come from a file.
const IN_MEMORY: &str = "<tokenizer.json bytes>";

/// A Hugging Face tokenizer: the exact bytes and kind of every token id, and its encoder.
///
/// Token bytes follow the tokenizer's [`TokenSpelling`], detected from its decoder,
/// pre-tokenizer and model. Added tokens marked `special` are [`TokenKind::Special`]
/// (their bytes are their written form); other added tokens are text: spelled like any
/// vocabulary entry when the model's vocabulary holds the same string at the same id
/// (Gemma's `▁▁` is two spaces), else their content's own UTF-8 (Qwen's `<tool_call>`).
///
/// End-of-sequence tokens are the union of
/// 1. `eos_token` of `tokenizer_config.json` beside the file (a string, or an object with
///    `content`), if that file exists;
/// 2. `eos_token_id` of `generation_config.json` beside the file (an id or a list), if
///    that file exists;
/// 3. every added token marked special whose content is in [`WELL_KNOWN_END_TOKENS`].
///
/// A configured token missing from the vocabulary is an error; [`Tokenizer::set_eos_tokens`]
/// overrides the result.
///
/// Loading reads only the vocabulary; the full tokenizer, needed by [`Tokenizer::encode`],
/// is built on its first call (errors in the parts only it reads surface there), and the
/// JSON text is kept until then.
pub struct Tokenizer {
    vocab: Arc<Vocabulary>,
    spelling: TokenSpelling,
    encoder: LazyEncoder,
}

impl Tokenizer {
    /// Loads `tokenizer.json`, or a gzip-compressed one (`tokenizer.json.gz`, recognized by
    /// its content). `tokenizer_config.json` and `generation_config.json` beside it, when
    /// present, name the end-of-sequence tokens.
    pub fn from_file(path: impl AsRef<Path>) -> Result<Tokenizer, VocabError> {
        let path = path.as_ref();
        let json = read_maybe_gzip(path).map_err(|message| load_error(path, message))?;
        let configured = eos::read_configured(path)
            .map_err(|(path, message)| VocabError::Load { path, message })?;
        Tokenizer::build(json, &configured, path.display().to_string())
    }

    /// Loads a tokenizer from the text of a `tokenizer.json`. End-of-sequence tokens are
    /// the well-known ones only (no configuration file is at hand).
    pub fn from_json_bytes(json: &[u8]) -> Result<Tokenizer, VocabError> {
        Tokenizer::build(
            json.to_vec(),
            &ConfiguredEos::default(),
            IN_MEMORY.to_string(),
        )
    }

    /// The vocabulary: every id's bytes and kind.
    pub fn vocabulary(&self) -> &Arc<Vocabulary> {
        &self.vocab
    }

    /// How this tokenizer's vocabulary strings spell bytes.
    pub fn spelling(&self) -> TokenSpelling {
        self.spelling
    }

    /// Makes exactly `ids` the end-of-sequence tokens (see [`Vocabulary::set_eos_tokens`]).
    pub fn set_eos_tokens(&mut self, ids: &[u32]) -> Result<(), VocabError> {
        Arc::make_mut(&mut self.vocab).set_eos_tokens(ids)
    }

    /// The tokenizer's own encoding of `text`, without added special tokens (no BOS).
    ///
    /// The written form of a special token inside `text` is encoded as ordinary text, so
    /// every id is a text token and the ids' bytes spell the text exactly, with two
    /// exceptions that belong to the tokenizer itself: a normalizer that rewrites text
    /// (Qwen's NFC turns `e` + U+0301 into `é`), and, in SentencePiece-style tokenizers,
    /// a literal `▁` in the text, which is indistinguishable from a space.
    ///
    /// The first call builds the full tokenizer; if that fails, every call returns the
    /// [`VocabError::Load`] error.
    pub fn encode(&self, text: &str) -> Result<Vec<u32>, VocabError> {
        let encoding =
            self.encoder
                .get()?
                .encode_fast(text, false)
                .map_err(|e| VocabError::Encode {
                    message: e.to_string(),
                })?;
        Ok(encoding.get_ids().to_vec())
    }

    /// The concatenated bytes of `ids`; ids outside the vocabulary contribute nothing.
    pub fn decode_bytes(&self, ids: &[u32]) -> Vec<u8> {
        let mut out = Vec::new();
        for &id in ids {
            out.extend_from_slice(self.vocab.token_bytes(id).unwrap_or_default());
        }
        out
    }

    fn build(
        json: Vec<u8>,
        configured: &ConfiguredEos,
        origin: String,
    ) -> Result<Tokenizer, VocabError> {
        let fail = |message: String| VocabError::Load {
            path: origin.clone(),
            message,
        };
        let file = tokenizer_json::parse(&json).map_err(fail)?;
        let spelling =
            TokenSpelling::detect(&file.decoder, &file.pre_tokenizer, file.model.byte_fallback)
                .map_err(fail)?;
        let vocab = build_vocabulary(&file, spelling, configured, &origin)?;
        let added = file
            .added_tokens
            .into_iter()
            .filter(|t| !t.content.is_empty())
            .map(|t| (t.id, t.content))
            .collect();
        let encoder = LazyEncoder::new(origin, json, added);
        Ok(Tokenizer {
            vocab: Arc::new(vocab),
            spelling,
            encoder,
        })
    }
}

impl fmt::Debug for Tokenizer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Tokenizer")
            .field("spelling", &self.spelling)
            .field("len", &self.vocab.len())
            .field("eos_tokens", &self.vocab.eos_tokens())
            .finish_non_exhaustive()
    }
}

fn load_error(path: &Path, message: String) -> VocabError {
    VocabError::Load {
        path: path.display().to_string(),
        message,
    }
}

/// The file's bytes, gunzipped when they start with gzip's magic number.
fn read_maybe_gzip(path: &Path) -> Result<Vec<u8>, String> {
    let raw = std::fs::read(path).map_err(|e| e.to_string())?;
    if !raw.starts_with(&[0x1f, 0x8b]) {
        return Ok(raw);
    }
    let mut json = Vec::with_capacity(raw.len().saturating_mul(5));
    flate2::read::GzDecoder::new(raw.as_slice())
        .read_to_end(&mut json)
        .map_err(|e| format!("invalid gzip data: {e}"))?;
    Ok(json)
}

/// Every id's bytes and kind, in id order; `None` for ids no entry uses.
type Entries = Vec<Option<(Vec<u8>, TokenKind)>>;

fn build_vocabulary(
    file: &TokenizerJson,
    spelling: TokenSpelling,
    configured: &ConfiguredEos,
    origin: &str,
) -> Result<Vocabulary, VocabError> {
    let fail = |message: String| VocabError::Load {
        path: origin.to_string(),
        message,
    };
    let model_vocab = &file.model.vocab.0;
    let added = &file.added_tokens;
    let max_id = model_vocab
        .iter()
        .map(|(_, id)| *id)
        .chain(added.iter().map(|t| t.id))
        .max();
    let Some(max_id) = max_id else {
        return Err(fail("the vocabulary is empty".to_string()));
    };
    if max_id > MAX_TOKEN_ID {
        return Err(fail(format!(
            "token id {max_id} exceeds the largest supported id {MAX_TOKEN_ID}"
        )));
    }

    let mut entries: Entries = vec![None; max_id as usize + 1];
    // The model's own string for each id, to recognize added tokens that repeat it.
    let mut model_strings: Vec<Option<&str>> = vec![None; entries.len()];
    for (token, id) in model_vocab {
        let slot = &mut model_strings[*id as usize];
        if let Some(other) = slot {
            return Err(fail(format!(
                "vocabulary entries {other:?} and {token:?} share id {id}"
            )));
        }
        *slot = Some(token);
        entries[*id as usize] = Some((spelling.token_bytes(token), TokenKind::Text));
    }
    for token in added {
        let id = token.id as usize;
        if token.special {
            entries[id] = Some((token.content.as_bytes().to_vec(), TokenKind::Special));
        } else if model_strings[id] != Some(token.content.as_str()) {
            entries[id] = Some((token.content.as_bytes().to_vec(), TokenKind::Text));
        }
    }

    for id in end_of_sequence_ids(file, &entries, configured)? {
        if let Some((_, kind)) = &mut entries[id as usize] {
            *kind = TokenKind::EndOfSequence;
        }
    }

    Vocabulary::from_tokens(
        entries
            .into_iter()
            .enumerate()
            .filter_map(|(id, entry)| entry.map(|(bytes, kind)| (id as u32, bytes, kind))),
    )
    .map_err(|e| fail(e.to_string()))
}

/// The end-of-sequence ids, by the rule in [`Tokenizer`]'s documentation.
fn end_of_sequence_ids(
    file: &TokenizerJson,
    entries: &Entries,
    configured: &ConfiguredEos,
) -> Result<Vec<u32>, VocabError> {
    let mut ids: Vec<u32> = file
        .added_tokens
        .iter()
        .filter(|t| t.special && WELL_KNOWN_END_TOKENS.contains(&t.content.as_str()))
        .map(|t| t.id)
        .collect();
    for (content, config) in &configured.contents {
        // Added tokens take precedence over model entries, as in the tokenizer itself.
        let id = file
            .added_tokens
            .iter()
            .find(|t| &t.content == content)
            .map(|t| t.id)
            .or_else(|| {
                file.model
                    .vocab
                    .0
                    .iter()
                    .find(|(t, _)| t == content)
                    .map(|(_, id)| *id)
            });
        let Some(id) = id else {
            return Err(VocabError::Load {
                path: config.clone(),
                message: format!("eos_token {content:?} is not in the tokenizer's vocabulary"),
            });
        };
        ids.push(id);
    }
    for (id, config) in &configured.ids {
        if entries.get(*id as usize).is_none_or(Option::is_none) {
            return Err(VocabError::Load {
                path: config.clone(),
                message: format!("eos_token_id {id} is not in the tokenizer's vocabulary"),
            });
        }
        ids.push(*id);
    }
    Ok(ids)
}
