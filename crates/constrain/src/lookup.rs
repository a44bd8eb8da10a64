//! Drafts for speculative decoding by prompt lookup, and the grammar's cut of a draft.
//!
//! Output that copies from the prompt (names, emails, dates, numbers in an extraction) repeats
//! token runs the context already holds. The draft is what followed the latest earlier
//! occurrence of the context's last n-gram (the longest n that occurs); the model then scores
//! every drafted position in one batch, and verification
//! ([`Funnel::verify_token`](crate::Funnel::verify_token)) keeps the output distribution
//! exactly that of plain decoding.

use constrain_engine::{MatchError, Matcher};
use constrain_vocab::TokenKind;

/// The n-gram lengths a lookup tries, longest first: a single token matches too often to be
/// worth a draft.
pub const LOOKUP_NGRAMS: std::ops::RangeInclusive<usize> = 2..=6;

/// Up to `max_len` tokens that followed the latest earlier occurrence of the longest n-gram
/// (n in [`LOOKUP_NGRAMS`]) that ends `context`; empty when none occurs.
///
/// ```
/// use constrain::prompt_lookup;
/// // "... 7 8 9 4 ... 7 8" → the 2-gram 7 8 occurred before, followed by 9 4.
/// assert_eq!(prompt_lookup(&[1, 7, 8, 9, 4, 5, 7, 8], 3), [9, 4, 5]);
/// assert!(prompt_lookup(&[1, 2, 3], 3).is_empty());
/// ```
pub fn prompt_lookup(context: &[u32], max_len: usize) -> &[u32] {
    let len = context.len();
    if max_len == 0 {
        return &[];
    }
    for n in LOOKUP_NGRAMS.rev() {
        if n >= len {
            continue;
        }
        let tail = &context[len - n..];
        // Latest start first; the occurrence must leave at least one token after it.
        for start in (0..len - n).rev() {
            if &context[start..start + n] == tail {
                let from = start + n;
                return &context[from..(from + max_len).min(len)];
            }
        }
    }
    &[]
}

/// Whether plain decoding draws a token in the matcher's state: not when the grammar is
/// finished, the token budget spent, or (with `fast_forward`) the grammar forces tokens, which
/// the decode loop appends without drawing.
///
/// # Errors
///
/// The matcher's errors.
pub fn is_draw_point(matcher: &mut Matcher, fast_forward: bool) -> Result<bool, MatchError> {
    if matcher.is_finished() || matcher.tokens_left() == Some(0) {
        return Ok(false);
    }
    Ok(!fast_forward || matcher.forced_tokens()?.is_empty())
}

/// How much of a draft speculative decoding may verify.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DraftCut {
    /// Leading draft tokens that each come at a draw point (see [`is_draw_point`]) and that
    /// the matcher accepts one after another (end tokens are never drafted).
    pub tokens: usize,
    /// Whether the state after them is a draw point too (then a token is drawn there when the
    /// whole draft is accepted).
    pub then_draw: bool,
}

/// The part of `draft` verification may go through: where plain decoding would draw every
/// token, so that verified output is the output plain decoding gives. The matcher is left as
/// it was.
///
/// # Errors
///
/// The matcher's errors other than a refused token.
pub fn grammar_prefix(
    matcher: &mut Matcher,
    draft: &[u32],
    fast_forward: bool,
) -> Result<DraftCut, MatchError> {
    let vocabulary = matcher.grammar().vocabulary().clone();
    let mut accepted = 0;
    let outcome = (|| {
        for &token in draft {
            if !is_draw_point(matcher, fast_forward)? {
                return Ok(false);
            }
            if vocabulary.kind(token) == Some(TokenKind::EndOfSequence) {
                return Ok(true);
            }
            match matcher.accept_token(token) {
                Ok(()) => accepted += 1,
                Err(MatchError::TokenNotAllowed { .. }) => return Ok(true),
                Err(other) => return Err(other),
            }
        }
        is_draw_point(matcher, fast_forward)
    })();
    matcher.rollback(accepted)?;
    Ok(DraftCut {
        tokens: accepted,
        then_draw: outcome?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_longest_latest_match_gives_the_draft() {
        // The 3-gram 1 2 3 wins over the later 2-gram 2 3.
        let context = [1, 2, 3, 10, 11, 9, 2, 3, 20, 1, 2, 3];
        assert_eq!(prompt_lookup(&context, 2), [10, 11]);
        // Among equal n-grams, the latest occurrence.
        let context = [5, 6, 1, 5, 6, 2, 5, 6];
        assert_eq!(prompt_lookup(&context, 4), [2, 5, 6]);
        // Single tokens do not count; nothing to draft.
        assert!(prompt_lookup(&[4, 1, 4], 4).is_empty());
        assert!(prompt_lookup(&[5, 6, 5, 6], 0).is_empty());
    }
}
