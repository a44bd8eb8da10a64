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

/// The length of a sequence's next draft, from how its last drafts went.
///
/// Each drafted token costs a row of the model's next evaluation whether it is kept or not;
/// where rows are not free (a CPU), drafts that keep failing make decoding slower than without
/// them. So: drafts of the full length while they are kept whole; after a draft kept in part,
/// one token longer than what was kept; after a draft of which less than half was kept, no
/// draft for a while, a wait that doubles with each such draft in a row (up to
/// [`DraftLength::MAX_WAIT`] draws) and ends at the first draft kept at least half. Which
/// lengths are drafted never changes what verification outputs, only how fast.
#[derive(Clone, Debug)]
pub struct DraftLength {
    max: usize,
    next: usize,
    /// Draw points left before the next draft.
    wait: usize,
    /// The wait after the next draft of which nothing is kept.
    backoff: usize,
}

impl DraftLength {
    /// The longest wait, in draw points, after drafts of which nothing was kept.
    pub const MAX_WAIT: usize = 32;

    /// Drafts of up to `max` tokens (0: never).
    pub fn new(max: usize) -> DraftLength {
        DraftLength {
            max,
            next: max,
            wait: 0,
            backoff: 1,
        }
    }

    /// The longest draft to make at this draw point (0: none); counts the point.
    pub fn at_draw_point(&mut self) -> usize {
        if self.wait > 0 {
            self.wait -= 1;
            return 0;
        }
        self.next
    }

    /// Records a verified draft of `drafted` tokens of which the first `accepted` were kept.
    pub fn record(&mut self, drafted: usize, accepted: usize) {
        if drafted == 0 {
            return;
        }
        if 2 * accepted < drafted {
            self.wait = self.backoff;
            self.backoff = (self.backoff * 2).min(Self::MAX_WAIT);
        } else {
            self.backoff = 1;
        }
        self.next = if accepted >= drafted {
            self.max
        } else {
            (accepted + 1).min(self.max)
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failed_drafts_back_off_and_kept_ones_restore_the_length() {
        let mut d = DraftLength::new(8);
        assert_eq!(d.at_draw_point(), 8);
        // Less than half kept: one draw point without a draft, then one longer than was kept.
        d.record(8, 3);
        assert_eq!(d.at_draw_point(), 0);
        assert_eq!(d.at_draw_point(), 4);
        // Half kept: no wait.
        d.record(4, 2);
        assert_eq!(d.at_draw_point(), 3);
        // Kept whole: the full length again.
        d.record(3, 3);
        assert_eq!(d.at_draw_point(), 8);
        // Nothing kept, twice in a row: a wait of 1, then of 2 draw points; one-token probes.
        d.record(8, 0);
        assert_eq!(d.at_draw_point(), 0);
        assert_eq!(d.at_draw_point(), 1);
        d.record(1, 0);
        assert_eq!([d.at_draw_point(), d.at_draw_point()], [0, 0]);
        assert_eq!(d.at_draw_point(), 1);
        // A probe kept restores the full length and the short wait.
        d.record(1, 1);
        assert_eq!(d.at_draw_point(), 8);
        d.record(8, 0);
        assert_eq!(d.at_draw_point(), 0);
        assert_eq!(d.at_draw_point(), 1);
        // The wait is bounded; nothing is drafted with a maximum of 0.
        for _ in 0..20 {
            d.record(8, 0);
        }
        assert_eq!(
            (0..40).filter(|_| d.at_draw_point() == 0).count(),
            DraftLength::MAX_WAIT
        );
        assert_eq!(DraftLength::new(0).at_draw_point(), 0);
    }

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
