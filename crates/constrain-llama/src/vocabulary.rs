//! The token vocabulary of a GGUF model, read from the model itself.
//!
//! The masks must agree bit for bit with what the model can emit, so the bytes come from
//! llama.cpp's own detokenizer rather than from a separate tokenizer file: `▁` is already a
//! space, byte tokens `<0xNN>` are already the single byte `NN`, and user-defined tokens are
//! their literal text.

use constrain_vocab::{TokenKind, Vocabulary};
use llama_cpp_2::model::LlamaModel;
use llama_cpp_2::token::LlamaToken;
use llama_cpp_2::token_type::LlamaTokenAttr;

use crate::LlamaError;

/// Builds the [`Vocabulary`] of `model`: every token's exact output bytes and its kind, with the
/// logits width of the model.
///
/// - Tokens that end generation (`<eos>`, `<end_of_turn>`, ...) are
///   [`TokenKind::EndOfSequence`].
/// - Control and unknown tokens, and tokens that render as nothing, are [`TokenKind::Special`];
///   their bytes are their written form (`<start_of_turn>`).
/// - Everything else is [`TokenKind::Text`], with the bytes llama.cpp writes for it.
pub fn vocabulary_from_model(model: &LlamaModel) -> Result<Vocabulary, LlamaError> {
    let vocab = model.vocab();
    let n_tokens = vocab.n_tokens();
    let mut tokens = Vec::with_capacity(usize::try_from(n_tokens).unwrap_or(0));
    let mut piece = Vec::with_capacity(64);
    for id in 0..n_tokens {
        let token = LlamaToken::new(id);
        let attrs = vocab.attr(token);
        let written_form = || {
            vocab
                .text(token)
                .map(|t| t.to_bytes().to_vec())
                .unwrap_or_default()
        };
        let entry = if vocab.is_eog(token) {
            (written_form(), TokenKind::EndOfSequence)
        } else if vocab.is_control(token)
            || attrs.contains(LlamaTokenAttr::Control)
            || attrs.contains(LlamaTokenAttr::Unknown)
        {
            (written_form(), TokenKind::Special)
        } else {
            piece.clear();
            vocab.token_to_piece_into(token, &mut piece, false, None);
            if piece.is_empty() {
                // A text token that writes nothing would be allowed everywhere and never advance.
                (written_form(), TokenKind::Special)
            } else {
                (piece.clone(), TokenKind::Text)
            }
        };
        // `id` is in 0..n_tokens, so it is non-negative.
        tokens.push((id as u32, entry.0, entry.1));
    }
    let width = usize::try_from(n_tokens).unwrap_or(0);
    Ok(Vocabulary::from_tokens(tokens)?.with_logits_width(width)?)
}
