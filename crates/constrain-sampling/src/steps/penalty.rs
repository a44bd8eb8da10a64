//! The penalties that read the history, and the logit bias.

use crate::{SamplingError, TokenCounts, TokenOrigin};

/// Fails unless every token (of which `max_token` is the largest) is below `width`.
pub(crate) fn check_in_range(
    max_token: Option<u32>,
    width: usize,
    origin: TokenOrigin,
) -> Result<(), SamplingError> {
    match max_token {
        Some(token) if token as usize >= width => Err(SamplingError::TokenOutOfRange {
            token,
            width,
            origin,
        }),
        _ => Ok(()),
    }
}

/// CTRL's repetition penalty (Keskar et al. 2019, section 4.1): for every distinct token of the
/// window, a positive logit is divided by `penalty` and a negative one multiplied by it, so
/// both move away from being picked when `penalty > 1`.
///
/// # Errors
///
/// [`SamplingError::TokenOutOfRange`] (and no logit changed) if a counted token is not below
/// `logits.len()`.
///
/// ```
/// use constrain_sampling::{apply_repetition_penalty, TokenCounts};
/// let mut logits = [6.0, -2.0, 1.0];
/// apply_repetition_penalty(&mut logits, &TokenCounts::from_tokens(&[0, 1, 0]), 1.25).unwrap();
/// assert_eq!(logits, [4.8, -2.5, 1.0]);
/// ```
pub fn apply_repetition_penalty(
    logits: &mut [f32],
    counts: &TokenCounts,
    penalty: f32,
) -> Result<(), SamplingError> {
    check_in_range(counts.max_token(), logits.len(), TokenOrigin::History)?;
    for &(token, _) in counts.entries() {
        let logit = &mut logits[token as usize];
        *logit = repetition_penalized(*logit, penalty);
    }
    Ok(())
}

/// One logit under the repetition penalty.
pub(crate) fn repetition_penalized(logit: f32, penalty: f32) -> f32 {
    if logit > 0.0 {
        logit / penalty
    } else {
        logit * penalty
    }
}

/// One logit under the frequency and presence penalties, for a token seen `count` times.
pub(crate) fn frequency_presence_penalized(
    logit: f32,
    count: u32,
    frequency: f32,
    presence: f32,
) -> f32 {
    logit - (count as f32 * frequency + presence)
}

/// The additive penalties of OpenAI's API: `z_i -= count_i * frequency + presence` for every
/// token that occurs in the window.
///
/// # Errors
///
/// [`SamplingError::TokenOutOfRange`] (and no logit changed) if a counted token is not below
/// `logits.len()`.
pub fn apply_frequency_presence_penalty(
    logits: &mut [f32],
    counts: &TokenCounts,
    frequency: f32,
    presence: f32,
) -> Result<(), SamplingError> {
    check_in_range(counts.max_token(), logits.len(), TokenOrigin::History)?;
    for &(token, count) in counts.entries() {
        let logit = &mut logits[token as usize];
        *logit = frequency_presence_penalized(*logit, count, frequency, presence);
    }
    Ok(())
}

/// Adds each `(token, bias)` to the token's logit.
///
/// # Errors
///
/// [`SamplingError::TokenOutOfRange`] (and no logit changed) if a token is not below
/// `logits.len()`.
pub fn apply_logit_bias(logits: &mut [f32], bias: &[(u32, f32)]) -> Result<(), SamplingError> {
    check_in_range(
        bias.iter().map(|&(t, _)| t).max(),
        logits.len(),
        TokenOrigin::LogitBias,
    )?;
    for &(token, b) in bias {
        logits[token as usize] += b;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn penalties_follow_their_formulas_and_keep_masked_tokens_masked() {
        let counts = TokenCounts::from_tokens(&[0, 0, 2, 3]);
        let mut logits = [2.0, 1.0, -1.0, f32::NEG_INFINITY];
        apply_frequency_presence_penalty(&mut logits, &counts, 0.5, 0.25).unwrap();
        assert_eq!(logits, [0.75, 1.0, -1.75, f32::NEG_INFINITY]);
        apply_repetition_penalty(&mut logits, &counts, 2.0).unwrap();
        assert_eq!(logits, [0.375, 1.0, -3.5, f32::NEG_INFINITY]);
        apply_logit_bias(&mut logits, &[(1, -1.0), (3, 5.0), (1, 0.5)]).unwrap();
        assert_eq!(logits, [0.375, 0.5, -3.5, f32::NEG_INFINITY]);
    }

    #[test]
    fn out_of_range_tokens_are_errors_and_change_nothing() {
        let mut logits = [1.0, 2.0];
        let err = apply_logit_bias(&mut logits, &[(0, 1.0), (2, 1.0)]).unwrap_err();
        assert_eq!(
            err,
            SamplingError::TokenOutOfRange {
                token: 2,
                width: 2,
                origin: TokenOrigin::LogitBias
            }
        );
        assert_eq!(logits, [1.0, 2.0]);
        let counts = TokenCounts::from_tokens(&[0, 5]);
        assert!(apply_repetition_penalty(&mut logits, &counts, 1.5).is_err());
        assert!(apply_frequency_presence_penalty(&mut logits, &counts, 1.0, 1.0).is_err());
        assert_eq!(logits, [1.0, 2.0]);
    }
}
