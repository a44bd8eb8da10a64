//! Log-probabilities: how likely a distribution found a token, and its best alternatives.
//!
//! One implementation for every reader: the server's and the CLI's `logprobs` (the model's own
//! distribution, no mask), and beam search, which scores sequences by the distribution masked
//! to the grammar's tokens and renormalized over them. The sums use the funnel's portable
//! `exp` and `ln`, so a score is the same on every platform.

use crate::math::{exp_sum, ln};
use crate::steps::check_logits;
use crate::{SamplingError, TokenOrigin};

/// A token's log-probability and the most likely tokens at the same step.
#[derive(Debug, Clone, PartialEq)]
pub struct TokenLogprobs {
    /// The token.
    pub token: u32,
    /// Its natural log-probability (`-inf` if the distribution excludes it).
    pub logprob: f32,
    /// The most likely tokens `(id, log-probability)`, most likely first (lower id first among
    /// equals).
    pub top: Vec<(u32, f32)>,
}

/// `ln sum_i e^(logit_i)` over the tokens `mask` allows (all without a mask): a token's
/// log-probability in the renormalized distribution is its logit minus this.
///
/// # Errors
///
/// [`SamplingError::EmptyLogits`] or [`SamplingError::NonFiniteLogit`] for bad input;
/// [`SamplingError::NoAllowedToken`] if no allowed token has a finite logit.
pub fn log_normalizer(logits: &[f32], mask: Option<&[u32]>) -> Result<f64, SamplingError> {
    check_logits(logits)?;
    let allowed: Vec<f32> = match mask {
        Some(mask) => allowed_ids(mask, logits.len())
            .map(|id| logits[id as usize])
            .collect(),
        None => logits.to_vec(),
    };
    let max = allowed.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    if max == f32::NEG_INFINITY {
        return Err(SamplingError::NoAllowedToken {
            allowed: allowed.len(),
            width: logits.len(),
        });
    }
    Ok(f64::from(max) + ln(exp_sum(&allowed, max)))
}

/// The `k` allowed tokens with the highest logits `(id, logit)`, highest first, lower id first
/// among equals; tokens with a logit of `-inf` never appear.
pub fn top_tokens(logits: &[f32], mask: Option<&[u32]>, k: usize) -> Vec<(u32, f32)> {
    let mut best: Vec<(u32, f32)> = Vec::with_capacity(k + 1);
    if k == 0 {
        return best;
    }
    let mut consider = |id: u32, logit: f32| {
        if logit == f32::NEG_INFINITY || logit.is_nan() {
            return;
        }
        if best.len() < k || logit > best[best.len() - 1].1 {
            // Ids come in increasing order, so an equal logit goes after its equals.
            let at = best.partition_point(|&(_, b)| b >= logit);
            best.insert(at, (id, logit));
            best.truncate(k);
        }
    };
    match mask {
        Some(mask) => {
            for id in allowed_ids(mask, logits.len()) {
                consider(id, logits[id as usize]);
            }
        }
        None => {
            for (id, &logit) in logits.iter().enumerate() {
                consider(id as u32, logit);
            }
        }
    }
    best
}

/// The log-probability of `token` and of the `top` most likely tokens, in the distribution
/// `softmax(logits)` restricted to the tokens `mask` allows (the model's own distribution
/// without a mask).
///
/// ```
/// use constrain_sampling::token_logprobs;
/// let logits = [0.0f32, 2f32.ln(), 0.0];
/// let lp = token_logprobs(&logits, None, 1, 2).unwrap();
/// assert!((lp.logprob - 0.5f32.ln()).abs() < 1e-6);
/// assert_eq!(lp.top[0].0, 1);
/// // Masked to tokens 0 and 1, token 1 has probability 2/3.
/// let lp = token_logprobs(&logits, Some(&[0b011]), 1, 0).unwrap();
/// assert!((lp.logprob - (2f32 / 3.0).ln()).abs() < 1e-6);
/// ```
///
/// # Errors
///
/// As [`log_normalizer`]; [`SamplingError::TokenOutOfRange`] for a token beyond the logits.
pub fn token_logprobs(
    logits: &[f32],
    mask: Option<&[u32]>,
    token: u32,
    top: usize,
) -> Result<TokenLogprobs, SamplingError> {
    let width = logits.len();
    if token as usize >= width {
        return Err(SamplingError::TokenOutOfRange {
            token,
            width,
            origin: TokenOrigin::Chosen,
        });
    }
    let normalizer = log_normalizer(logits, mask)?;
    let allowed = mask.is_none_or(|mask| is_allowed(mask, token));
    let logprob = if allowed {
        (f64::from(logits[token as usize]) - normalizer) as f32
    } else {
        f32::NEG_INFINITY
    };
    let top = top_tokens(logits, mask, top)
        .into_iter()
        .map(|(id, logit)| (id, (f64::from(logit) - normalizer) as f32))
        .collect();
    Ok(TokenLogprobs {
        token,
        logprob,
        top,
    })
}

fn is_allowed(mask: &[u32], token: u32) -> bool {
    mask.get((token >> 5) as usize)
        .is_some_and(|word| word & (1 << (token & 31)) != 0)
}

/// The ids below `width` whose bit is set in `mask`, increasing.
pub fn allowed_ids(mask: &[u32], width: usize) -> impl Iterator<Item = u32> + '_ {
    mask.iter()
        .enumerate()
        .flat_map(move |(word_index, &word)| {
            let mut bits = word;
            std::iter::from_fn(move || {
                if bits == 0 {
                    return None;
                }
                let id = word_index * 32 + bits.trailing_zeros() as usize;
                bits &= bits - 1;
                Some(id)
            })
            .filter(move |&id| id < width)
            .map(|id| id as u32)
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn masked_log_probabilities_renormalize_over_the_allowed_tokens() {
        let logits = [1.0f32, 2.0, 3.0, f32::NEG_INFINITY, 0.5];
        let mask = [0b10110u32];
        let lse = log_normalizer(&logits, Some(&mask)).unwrap();
        let expected = (2f64.exp() + 3f64.exp() + 0.5f64.exp()).ln();
        assert!((lse - expected).abs() < 1e-6, "{lse} vs {expected}");
        let lp = token_logprobs(&logits, Some(&mask), 2, 5).unwrap();
        assert!((f64::from(lp.logprob) - (3.0 - expected)).abs() < 1e-6);
        // Only the allowed, finite tokens are listed, best first.
        let ids: Vec<u32> = lp.top.iter().map(|&(id, _)| id).collect();
        assert_eq!(ids, [2, 1, 4]);
        let total: f64 = lp.top.iter().map(|&(_, l)| f64::from(l).exp()).sum();
        assert!((total - 1.0).abs() < 1e-6);
        // A token the mask forbids has probability 0.
        let forbidden = token_logprobs(&logits, Some(&mask), 0, 0).unwrap();
        assert_eq!(forbidden.logprob, f32::NEG_INFINITY);
    }

    #[test]
    fn ties_list_the_lower_id_first_and_bad_input_is_an_error() {
        assert_eq!(
            top_tokens(&[1.0, 3.0, 3.0, 2.0], None, 3),
            [(1, 3.0), (2, 3.0), (3, 2.0)]
        );
        assert!(matches!(
            log_normalizer(&[1.0, 2.0], Some(&[0b100])),
            Err(SamplingError::NoAllowedToken { .. })
        ));
        assert!(log_normalizer(&[f32::NAN], None).is_err());
        assert!(matches!(
            token_logprobs(&[1.0], None, 1, 0),
            Err(SamplingError::TokenOutOfRange { token: 1, .. })
        ));
    }
}
