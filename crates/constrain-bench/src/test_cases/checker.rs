//! Running one string through a compiled grammar: at byte level, and token by token through a
//! tokenizer's own encoding when there is one.

use std::fmt;
use std::path::Path;
use std::sync::Arc;

use anyhow::Context;
use constrain_engine::{
    CompiledGrammar, Grammar, GrammarError, Limits, MatchError, Matcher, TokenIndex,
    SPECIAL_TOKEN_MARKER,
};
use constrain_gbnf::ParseOptions;
use constrain_vocab::{TokenKind, Tokenizer, Vocabulary};

use super::report::Report;

/// The id of the end-of-sequence token of the byte vocabulary.
const BYTE_VOCAB_EOS: u32 = 256;

/// Compiles grammars for one vocabulary and checks strings against them.
pub struct Checker {
    index: Arc<TokenIndex>,
    tokenizer: Option<(String, Tokenizer)>,
    /// The written forms of the vocabulary's special tokens, for grammars that name them.
    special_tokens: Vec<(String, u32)>,
}

/// What a string is expected to do.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Expect {
    /// Be accepted completely: every byte or token, then the end.
    Accept,
    /// Not be accepted completely.
    Reject,
}

/// One string of one case.
pub struct Subject<'a> {
    /// The case's id.
    pub case: &'a str,
    /// Which string of the case, e.g. `passing[2] "1+2"`.
    pub label: &'a str,
    /// The string's bytes; special tokens are `0xFF` and the big-endian id.
    pub bytes: &'a [u8],
}

/// How a string fared.
enum Outcome {
    /// Consumed completely, and the end is allowed there.
    Accepted,
    /// Consumed completely, but the end is not allowed there.
    Incomplete,
    /// Refused at this position (`"byte 3"`, `"token 2 (id 1234, \"ab\")"`).
    Refused(String),
    /// The engine contradicted itself or failed; always a failure.
    Broken(String),
}

impl Checker {
    /// A checker for the vocabulary of the 256 single bytes (plus an end-of-sequence token):
    /// byte-level checks only.
    pub fn bytes_only() -> anyhow::Result<Checker> {
        let bytes = (0..=255u8).map(|b| (u32::from(b), vec![b], TokenKind::Text));
        let eos = std::iter::once((BYTE_VOCAB_EOS, b"</s>".to_vec(), TokenKind::EndOfSequence));
        let vocab =
            Vocabulary::from_tokens(bytes.chain(eos)).context("building the byte vocabulary")?;
        Ok(Checker {
            index: TokenIndex::new(Arc::new(vocab)),
            tokenizer: None,
            special_tokens: Vec::new(),
        })
    }

    /// A checker for the tokenizer at `path`: byte-level and token-level checks.
    pub fn with_tokenizer(path: &Path) -> anyhow::Result<Checker> {
        let tokenizer = Tokenizer::from_file(path)
            .with_context(|| format!("loading tokenizer {}", path.display()))?;
        let index = TokenIndex::new(tokenizer.vocabulary().clone());
        let special_tokens = tokenizer
            .vocabulary()
            .iter()
            .filter(|&(_, _, kind)| kind != TokenKind::Text)
            .filter_map(|(id, bytes, _)| Some((std::str::from_utf8(bytes).ok()?.to_string(), id)))
            .collect();
        Ok(Checker {
            index,
            tokenizer: Some((tokenizer_name(path), tokenizer)),
            special_tokens,
        })
    }

    /// The tokenizer's name (its directory, or the file's stem), if there is a tokenizer.
    pub fn tokenizer_name(&self) -> Option<&str> {
        self.tokenizer.as_ref().map(|(name, _)| name.as_str())
    }

    /// How many checks one string gets when it can be tokenized: 1 (bytes) or 2 (and tokens).
    pub fn checks_per_string(&self) -> usize {
        1 + usize::from(self.tokenizer.is_some())
    }

    /// GBNF parse options that know the tokenizer's special tokens by name (`<|im_end|>`).
    pub fn gbnf_options(&self, root: &str) -> ParseOptions {
        let mut options = ParseOptions::new().root(root);
        for (text, id) in &self.special_tokens {
            options = options.special_token(text, *id);
        }
        options
    }

    /// Compiles `grammar` for this checker's vocabulary.
    pub fn compile(&self, grammar: &Grammar) -> Result<Arc<CompiledGrammar>, GrammarError> {
        CompiledGrammar::new(grammar, self.index.clone(), Limits::default())
    }

    /// Checks `subject` at every level and records each check in `report`. Returns whether
    /// the token-level check was skipped because the string holds special tokens or is not
    /// UTF-8 (when there is a tokenizer).
    pub fn check(
        &self,
        grammar: &Arc<CompiledGrammar>,
        subject: &Subject<'_>,
        expect: Expect,
        report: &mut Report,
    ) -> bool {
        let outcome = check_bytes(grammar, subject.bytes);
        record(report, subject, "bytes", expect, outcome);
        let Some((name, tokenizer)) = &self.tokenizer else {
            return false;
        };
        let text = match std::str::from_utf8(subject.bytes) {
            Ok(text) if !subject.bytes.contains(&SPECIAL_TOKEN_MARKER) => text,
            _ => return true,
        };
        let outcome = match tokenizer.encode(text) {
            Ok(ids) => check_tokens(grammar, &ids),
            Err(e) => Outcome::Broken(format!("the tokenizer cannot encode it: {e}")),
        };
        record(report, subject, &format!("tokens, {name}"), expect, outcome);
        false
    }
}

fn record(
    report: &mut Report,
    subject: &Subject<'_>,
    level: &str,
    expect: Expect,
    outcome: Outcome,
) {
    let problem = match (expect, outcome) {
        (Expect::Accept, Outcome::Accepted)
        | (Expect::Reject, Outcome::Incomplete | Outcome::Refused(_)) => None,
        (Expect::Accept, Outcome::Incomplete) => {
            Some("not accepted: the end is not allowed after it".to_string())
        }
        (Expect::Accept, Outcome::Refused(at)) => Some(format!("not accepted: refused at {at}")),
        (Expect::Reject, Outcome::Accepted) => Some("accepted, but must be rejected".to_string()),
        (_, Outcome::Broken(what)) => Some(what),
    };
    match problem {
        None => report.pass(),
        Some(what) => report.fail(
            subject.case,
            format_args!("{} [{level}]: {what}", subject.label),
        ),
    }
}

/// Feeds all of `bytes`, then asks whether the end is allowed.
fn check_bytes(grammar: &Arc<CompiledGrammar>, bytes: &[u8]) -> Outcome {
    let mut matcher = Matcher::new(grammar.clone());
    match matcher.accept_bytes(bytes) {
        Ok(()) if matcher.is_accepting() => Outcome::Accepted,
        Ok(()) => Outcome::Incomplete,
        Err(MatchError::BytesRejected { offset }) => Outcome::Refused(format!("byte {offset}")),
        Err(e) => Outcome::Broken(format!("engine error: {e}")),
    }
}

/// Feeds `ids` one by one, checking before each that the mask agrees with the matcher, then
/// checks the end-of-sequence bit the same way.
fn check_tokens(grammar: &Arc<CompiledGrammar>, ids: &[u32]) -> Outcome {
    let vocab = grammar.vocabulary().clone();
    let mut matcher = Matcher::new(grammar.clone());
    let mut mask = vec![0u32; grammar.mask_words()];
    for (position, &id) in ids.iter().enumerate() {
        if let Err(e) = matcher.fill_mask(&mut mask) {
            return Outcome::Broken(format!(
                "engine error computing the mask before token {position}: {e}"
            ));
        }
        let in_mask = mask_has(&mask, id);
        let token = TokenAt {
            position,
            id,
            vocab: &vocab,
        };
        match (matcher.accept_token(id), in_mask) {
            (Ok(()), true) => {}
            (Err(MatchError::TokenNotAllowed { .. }), false) => {
                return Outcome::Refused(token.to_string())
            }
            (Ok(()), false) => {
                return Outcome::Broken(format!("{token} is accepted but not in the mask"))
            }
            (Err(MatchError::TokenNotAllowed { .. }), true) => {
                return Outcome::Broken(format!("{token} is in the mask but refused"))
            }
            (Err(e), _) => return Outcome::Broken(format!("engine error at {token}: {e}")),
        }
    }
    let accepting = matcher.is_accepting();
    if let Some(&eos) = vocab.eos_tokens().first() {
        if let Err(e) = matcher.fill_mask(&mut mask) {
            return Outcome::Broken(format!("engine error computing the final mask: {e}"));
        }
        if mask_has(&mask, eos) != accepting {
            return Outcome::Broken(format!(
                "the end-of-sequence bit (id {eos}) is {} but the matcher is {}accepting",
                if accepting { "clear" } else { "set" },
                if accepting { "" } else { "not " },
            ));
        }
    }
    if accepting {
        Outcome::Accepted
    } else {
        Outcome::Incomplete
    }
}

fn mask_has(mask: &[u32], id: u32) -> bool {
    mask.get(id as usize / 32)
        .is_some_and(|word| word & (1 << (id % 32)) != 0)
}

/// A token of an encoded string, for messages: `token 2 (id 1234, "ab")`.
struct TokenAt<'a> {
    position: usize,
    id: u32,
    vocab: &'a Vocabulary,
}

impl fmt::Display for TokenAt<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let bytes = self.vocab.token_bytes(self.id).unwrap_or_default();
        write!(
            f,
            "token {} (id {}, {:?})",
            self.position,
            self.id,
            String::from_utf8_lossy(bytes)
        )
    }
}

/// `shared/tokenizers/qwen3/tokenizer.json` is `qwen3`; `my-tokenizer.json` is `my-tokenizer`.
fn tokenizer_name(path: &Path) -> String {
    let stem = path
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or_default();
    let is_generic = stem.starts_with("tokenizer.json");
    let parent = path
        .parent()
        .and_then(|p| p.file_name())
        .and_then(|n| n.to_str());
    match parent {
        Some(dir) if is_generic => dir.to_string(),
        _ => stem
            .trim_end_matches(".gz")
            .trim_end_matches(".json")
            .to_string(),
    }
}
