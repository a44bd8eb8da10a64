//! The verification step of speculative decoding.
//!
//! A cheap draft model proposes tokens `x_1..x_g`, each drawn from its distribution `p_i`; the
//! target model scores all positions at once, giving `q_1..q_{g+1}`. Draft token `x_i` is
//! accepted with probability `min(1, q_i(x_i) / p_i(x_i))`; at the first rejection a token is
//! drawn from the residual `normalize(max(0, q_i - p_i))` and the rest of the draft is
//! discarded; if every draft token is accepted, a bonus token is drawn from `q_{g+1}`. The
//! tokens that come out are distributed exactly as if the target alone had sampled them
//! (Leviathan, Kalman and Matias 2023; Chen et al. 2023).

use crate::{draw, SamplingError, TokenOrigin, Xoshiro256StarStar};

/// How far a row of probabilities may sum from 1 (they come from a softmax in `f32`).
const NORMALIZATION_TOLERANCE: f64 = 1e-3;

/// What [`Funnel::verify_token`](crate::Funnel::verify_token) decided about one drafted
/// token.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DraftCheck {
    /// The token stays; verification goes on with the next one.
    Accepted,
    /// The token and the rest of the draft are dropped; `replacement` comes instead.
    Rejected {
        /// The token drawn from the residual distribution.
        replacement: u32,
    },
}

/// What verification kept of a draft.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verification {
    /// How many draft tokens were accepted (a prefix of the draft).
    pub accepted: usize,
    /// The tokens to append: the accepted draft tokens, then one more (the residual draw at
    /// the first rejection, or the bonus token). Always `accepted + 1` long.
    pub tokens: Vec<u32>,
}

/// Verifies draft tokens against the target model.
///
/// * `draft_tokens`: the `g` tokens the draft proposed.
/// * `draft_probs`: `g` rows of the draft's probabilities, row-major (`g * width`); row `i` is
///   the distribution `draft_tokens[i]` was drawn from.
/// * `target_probs`: `g + 1` rows of the target's probabilities at the same positions, plus
///   the one after the last draft token.
///
/// The probabilities should be the final distributions of each model's funnel (same
/// settings, same grammar mask), so the output follows the target's whole funnel.
///
/// If the residual `max(0, q - p)` is zero everywhere (the rows agree up to rounding), the
/// replacement is drawn from `q` itself, its limit.
///
/// # Errors
///
/// [`SamplingError::InvalidProbabilities`] if the shapes do not match, a probability is
/// negative or not finite, a row does not sum to 1 (within 1e-3), or a draft token has
/// probability 0 under its own draft row; [`SamplingError::TokenOutOfRange`] for a draft token
/// beyond the width.
///
/// ```
/// use constrain_sampling::{verify_draft, Xoshiro256StarStar};
/// // The draft and the target agree: every draft token is accepted, plus a bonus token.
/// let p = [0.5, 0.5, 0.5, 0.5];
/// let q = [0.5, 0.5, 0.5, 0.5, 0.0, 1.0];
/// let mut rng = Xoshiro256StarStar::seed_from_u64(1);
/// let verdict = verify_draft(&[0, 1], &p, &q, &mut rng).unwrap();
/// assert_eq!(verdict.accepted, 2);
/// assert_eq!(verdict.tokens, [0, 1, 1]);
/// ```
pub fn verify_draft(
    draft_tokens: &[u32],
    draft_probs: &[f32],
    target_probs: &[f32],
    rng: &mut Xoshiro256StarStar,
) -> Result<Verification, SamplingError> {
    let drafted = draft_tokens.len();
    let width = row_width(drafted, draft_probs.len(), target_probs.len())?;
    let draft_row = |i: usize| &draft_probs[i * width..(i + 1) * width];
    let target_row = |i: usize| &target_probs[i * width..(i + 1) * width];
    for i in 0..drafted {
        check_row(draft_row(i), || format!("draft row {i}"))?;
        check_row(target_row(i), || format!("target row {i}"))?;
    }
    check_row(target_row(drafted), || format!("target row {drafted}"))?;

    let mut tokens = Vec::with_capacity(drafted + 1);
    for (i, &token) in draft_tokens.iter().enumerate() {
        let index = token as usize;
        if index >= width {
            return Err(SamplingError::TokenOutOfRange {
                token,
                width,
                origin: TokenOrigin::Draft,
            });
        }
        let (p, q) = (draft_row(i)[index] as f64, target_row(i)[index] as f64);
        if p <= 0.0 {
            return Err(SamplingError::InvalidProbabilities {
                what: format!("draft row {i}"),
                reason: format!("the drafted token {token} has probability 0 under it"),
            });
        }
        // Accept with probability min(1, q / p): u < q / p, written without the division.
        if rng.next_f64() * p < q {
            tokens.push(token);
            continue;
        }
        let residual: Vec<f32> = target_row(i)
            .iter()
            .zip(draft_row(i))
            .map(|(&q, &p)| (q - p).max(0.0))
            .collect();
        let replacement = if residual.iter().any(|&r| r > 0.0) {
            draw(&residual, rng)?
        } else {
            draw(target_row(i), rng)?
        };
        tokens.push(replacement as u32);
        return Ok(Verification {
            accepted: i,
            tokens,
        });
    }
    tokens.push(draw(target_row(drafted), rng)? as u32);
    Ok(Verification {
        accepted: drafted,
        tokens,
    })
}

fn row_width(drafted: usize, draft_len: usize, target_len: usize) -> Result<usize, SamplingError> {
    let shape_error = |reason: String| SamplingError::InvalidProbabilities {
        what: "verify_draft".into(),
        reason,
    };
    let rows = drafted + 1;
    if target_len == 0 || target_len % rows != 0 {
        return Err(shape_error(format!(
            "{target_len} target probabilities are not {rows} rows of a common width"
        )));
    }
    let width = target_len / rows;
    if draft_len != drafted * width {
        return Err(shape_error(format!(
            "{draft_len} draft probabilities are not {drafted} rows of width {width}"
        )));
    }
    Ok(width)
}

fn check_row(row: &[f32], what: impl Fn() -> String) -> Result<(), SamplingError> {
    let mut total = 0.0f64;
    for (token, &p) in row.iter().enumerate() {
        if !(p >= 0.0 && p.is_finite()) {
            return Err(SamplingError::InvalidProbabilities {
                what: what(),
                reason: format!("the probability of token {token} is {p}"),
            });
        }
        total += p as f64;
    }
    if (total - 1.0).abs() > NORMALIZATION_TOLERANCE {
        return Err(SamplingError::InvalidProbabilities {
            what: what(),
            reason: format!("the probabilities sum to {total}, not 1"),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes_and_values_are_checked() {
        let mut rng = Xoshiro256StarStar::seed_from_u64(3);
        let p = [0.5, 0.5];
        let q = [0.5, 0.5, 1.0, 0.0];
        assert!(verify_draft(&[0], &p, &q[..3], &mut rng).is_err());
        assert!(verify_draft(&[0, 1], &p, &q, &mut rng).is_err());
        assert!(matches!(
            verify_draft(&[2], &p, &q, &mut rng),
            Err(SamplingError::TokenOutOfRange {
                token: 2,
                width: 2,
                ..
            })
        ));
        assert!(verify_draft(&[0], &[1.0, 0.0], &[0.5, 0.5, 0.5, 0.5], &mut rng).is_ok());
        assert!(verify_draft(&[1], &[1.0, 0.0], &[0.5, 0.5, 0.5, 0.5], &mut rng).is_err());
        assert!(verify_draft(&[0], &[0.9, 0.3], &q, &mut rng).is_err());
        assert!(verify_draft(&[0], &[f32::NAN, 1.0], &q, &mut rng).is_err());
    }

    #[test]
    fn a_token_the_target_forbids_is_always_rejected() {
        let mut rng = Xoshiro256StarStar::seed_from_u64(4);
        let p = [0.5, 0.5, 0.0];
        let q = [0.0, 0.25, 0.75, 0.1, 0.2, 0.7];
        for _ in 0..1000 {
            let verdict = verify_draft(&[0], &p, &q, &mut rng).unwrap();
            assert_eq!(verdict.accepted, 0);
            // The residual max(0, q - p) is (0, 0, .75): only token 2.
            assert_eq!(verdict.tokens, [2]);
        }
    }
}
