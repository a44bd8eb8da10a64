//! The end of the funnel: validation of the input, softmax and the seeded draw.

use crate::math::{exp_in_place, lane_sum, max_finite, max_if_valid};
use crate::{SamplingError, Xoshiro256StarStar};

/// Checks that the logits can enter the funnel: not empty, at most 2^32 of them (token ids
/// are `u32`), and no NaN or +inf (-inf is fine: an impossible token).
///
/// # Errors
///
/// [`SamplingError::EmptyLogits`], [`SamplingError::TooManyLogits`] or
/// [`SamplingError::NonFiniteLogit`] for the first bad logit.
pub fn check_logits(logits: &[f32]) -> Result<(), SamplingError> {
    checked_max(logits).map(|_| ())
}

/// [`check_logits`], returning the largest finite logit (-inf if there is none).
pub(crate) fn checked_max(logits: &[f32]) -> Result<f32, SamplingError> {
    if logits.is_empty() {
        return Err(SamplingError::EmptyLogits);
    }
    if logits.len() - 1 > u32::MAX as usize {
        return Err(SamplingError::TooManyLogits {
            width: logits.len(),
        });
    }
    if let Some(max) = max_if_valid(logits) {
        return Ok(max);
    }
    let token = logits
        .iter()
        .position(|v| v.is_nan() || *v == f32::INFINITY)
        .unwrap_or(0);
    Err(SamplingError::NonFiniteLogit {
        token: token as u32,
        value: logits[token],
    })
}

/// Turns logits into probabilities in place: `p_i = e^(z_i - max) / sum_j e^(z_j - max)`
/// (subtracting the maximum first, the log-sum-exp trick, so nothing overflows); -inf becomes
/// exactly 0. The normalizer is summed in `f64`.
///
/// # Errors
///
/// [`SamplingError::NoTokenLeft`] if every logit is -inf (there is no distribution).
///
/// ```
/// use constrain_sampling::softmax;
/// let mut values = [6.0, 5.0, 4.5, 3.5, 2.0, 0.0, f32::NEG_INFINITY];
/// softmax(&mut values).unwrap();
/// let rounded: Vec<f32> = values.iter().map(|p| (p * 1000.0).round() / 1000.0).collect();
/// assert_eq!(rounded, [0.590, 0.217, 0.132, 0.048, 0.011, 0.001, 0.0]);
/// ```
pub fn softmax(values: &mut [f32]) -> Result<(), SamplingError> {
    let max = max_finite(values);
    if max == f32::NEG_INFINITY {
        return Err(SamplingError::NoTokenLeft { after: "softmax" });
    }
    let total = exp_in_place(values, max);
    let scale = (1.0 / total) as f32;
    for v in values.iter_mut() {
        *v *= scale;
    }
    Ok(())
}

/// How many probabilities [`draw`] sums at a time: it first finds the block where the running
/// sum crosses the target, then walks that block one probability at a time.
const DRAW_BLOCK: usize = 1024;

/// Draws an index with probability proportional to `probs[i]`: one uniform `u` in `[0, 1)`
/// from the generator, then the first index where the running sum (in `f64`, by blocks of
/// 1024 then one by one) exceeds `u * total`. An index of probability 0 is never drawn.
///
/// # Errors
///
/// [`SamplingError::InvalidProbabilities`] if a probability is negative or not finite, or if
/// they are all 0.
pub fn draw(probs: &[f32], rng: &mut Xoshiro256StarStar) -> Result<usize, SamplingError> {
    let valid = |chunk: &[f32]| {
        chunk
            .iter()
            .fold(true, |ok, &p| ok & (0.0..f32::INFINITY).contains(&p))
    };
    if !probs.chunks(64).all(valid) {
        let (i, p) = probs
            .iter()
            .enumerate()
            .find(|&(_, &p)| !valid(&[p]))
            .map_or((0, 0.0), |(i, &p)| (i, p));
        return Err(SamplingError::InvalidProbabilities {
            what: "draw".into(),
            reason: format!("probability {i} is {p}"),
        });
    }
    draw_valid(probs, rng)
}

/// [`draw`] for probabilities known to be valid (the funnel's own).
pub(crate) fn draw_valid(
    probs: &[f32],
    rng: &mut Xoshiro256StarStar,
) -> Result<usize, SamplingError> {
    let total: f64 = probs.chunks(DRAW_BLOCK).map(lane_sum).sum();
    if total <= 0.0 {
        return Err(SamplingError::InvalidProbabilities {
            what: "draw".into(),
            reason: format!("the {} probabilities sum to 0", probs.len()),
        });
    }
    let target = rng.next_f64() * total;
    // The block where the running sum crosses the target.
    let mut running = 0.0f64;
    let mut start = 0;
    for block in probs.chunks(DRAW_BLOCK) {
        let after = running + lane_sum(block);
        if after > target {
            break;
        }
        running = after;
        start += block.len();
    }
    let mut last_possible = None;
    for (i, &p) in probs.iter().enumerate().skip(start) {
        if p > 0.0 {
            running += p as f64;
            last_possible = Some(i);
            if running > target {
                return Ok(i);
            }
        }
    }
    // Only reachable through rounding of the running sum against the total.
    match last_possible.or_else(|| probs.iter().rposition(|&p| p > 0.0)) {
        Some(i) => Ok(i),
        None => Err(SamplingError::InvalidProbabilities {
            what: "draw".into(),
            reason: "no positive probability".into(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_logits_are_named() {
        assert_eq!(check_logits(&[]), Err(SamplingError::EmptyLogits));
        let mut logits = vec![0.0f32; 300];
        logits[217] = f32::NAN;
        match check_logits(&logits) {
            Err(SamplingError::NonFiniteLogit { token: 217, value }) => assert!(value.is_nan()),
            other => panic!("{other:?}"),
        }
        logits[217] = f32::INFINITY;
        logits[5] = f32::NEG_INFINITY;
        assert_eq!(
            check_logits(&logits),
            Err(SamplingError::NonFiniteLogit {
                token: 217,
                value: f32::INFINITY
            })
        );
    }

    #[test]
    fn softmax_is_stable_for_huge_logits() {
        let mut values = [1e30f32, 1e30, f32::NEG_INFINITY];
        softmax(&mut values).unwrap();
        assert_eq!(values, [0.5, 0.5, 0.0]);
        assert!(softmax(&mut [f32::NEG_INFINITY; 2]).is_err());
    }

    #[test]
    fn draw_never_returns_zero_probability_indices() {
        let mut rng = Xoshiro256StarStar::seed_from_u64(1);
        let probs = [0.0, 0.25, 0.0, 0.75, 0.0];
        for _ in 0..10_000 {
            let i = draw(&probs, &mut rng).unwrap();
            assert!(i == 1 || i == 3);
        }
        assert!(draw(&[0.0, 0.0], &mut rng).is_err());
        assert!(draw(&[0.5, f32::NAN], &mut rng).is_err());
        assert!(draw(&[0.5, -0.1], &mut rng).is_err());
    }
}
