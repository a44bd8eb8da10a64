//! Small synthetic vocabularies for tests that must see every byte as its own token.

use std::sync::Arc;

use constrain_vocab::{TokenKind, Vocabulary};

/// The id of the end-of-sequence token of [`byte_vocabulary`].
pub const BYTE_VOCABULARY_EOS: u32 = 256;

/// The 256 single bytes as tokens `0..=255`, and end-of-sequence (`</s>`) as token 256: every
/// text has exactly one tokenization, so masks over it read as byte sets.
pub fn byte_vocabulary() -> Arc<Vocabulary> {
    let tokens = (0..=255u8)
        .map(|b| (u32::from(b), vec![b], TokenKind::Text))
        .chain(std::iter::once((
            BYTE_VOCABULARY_EOS,
            b"</s>".to_vec(),
            TokenKind::EndOfSequence,
        )));
    Arc::new(Vocabulary::from_tokens(tokens).expect("the byte vocabulary is well formed"))
}

/// A vocabulary whose token `i` is `pieces[i]`, the piece `"<eos>"` being end-of-sequence: the
/// few tokens a fake model speaks in, small enough to check every token at every step.
pub fn pieces_vocabulary(pieces: &[&str]) -> Arc<Vocabulary> {
    let tokens = pieces.iter().zip(0u32..).map(|(piece, id)| {
        let kind = if *piece == "<eos>" {
            TokenKind::EndOfSequence
        } else {
            TokenKind::Text
        };
        (id, piece.as_bytes().to_vec(), kind)
    });
    Arc::new(Vocabulary::from_tokens(tokens).expect("the pieces are distinct"))
}

/// Logits of a fake model: `width` values in `[0, 3)` drawn from a hash of `history` (and
/// `salt`), so the same tokens so far always give the same logits, whatever ran beside them.
pub fn hashed_logits(history: &[u32], salt: u64, width: usize) -> Vec<f32> {
    let mut state = 0x2545_f491_4f6c_dd1du64 ^ salt;
    for &t in history {
        state = (state ^ u64::from(t) ^ 0x55).wrapping_mul(0x1000_0000_01b3);
    }
    (0..width)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state % 3000) as f32 / 1000.0
        })
        .collect()
}
