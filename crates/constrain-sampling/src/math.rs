//! The floating-point kernels of the funnel.
//!
//! `exp` and `ln` are written here from basic IEEE-754 operations (no platform `libm`, no fused
//! multiply-add), so a seed gives the same tokens on every platform. The loops over the whole
//! vocabulary are written lane by lane over fixed-size chunks so that the compiler can keep
//! them in vector registers without reordering any floating-point sum.

/// Below this, `e^x` is under the smallest normal `f32` and is flushed to zero.
const EXP_MIN_ARG: f32 = -87.0;
/// Above this, `e^x` would overflow `f32`.
const EXP_MAX_ARG: f32 = 88.0;
/// Adding this rounds a float of magnitude below 2^22 to an integer (ties to even) and leaves
/// the integer in the low mantissa bits.
const ROUND_MAGIC: f32 = 12_582_912.0; // 1.5 * 2^23
/// ln 2 split in two so that `n * LN2_HI` is exact for |n| < 2^8 (Cody and Waite).
const LN2_HI: f32 = 0.693_145_75;
const LN2_LO: f32 = 1.428_606_8e-6;
/// How many lanes the vocabulary-wide loops keep side by side.
const LANES: usize = 8;

/// `e^x` in single precision, accurate to about one unit in the last place on
/// `[-87, 88]`; 0 below (including -inf), and `e^88` above.
///
/// Cody–Waite range reduction `x = n ln 2 + r`, `|r| <= ln 2 / 2`, then the degree-7 Taylor
/// polynomial of `e^r` (truncation error below 2^-27) scaled by `2^n` built from its bits.
/// Relative error below 2e-7 (measured in the tests).
#[inline]
pub(crate) fn exp(x: f32) -> f32 {
    let clamped = x.clamp(EXP_MIN_ARG, EXP_MAX_ARG);
    let shifted = clamped * std::f32::consts::LOG2_E + ROUND_MAGIC;
    let n = shifted - ROUND_MAGIC;
    let r = clamped - n * LN2_HI - n * LN2_LO;
    // The degree-7 Taylor polynomial of e^r in Estrin's form: short dependency chains, so
    // the vector units overlap the multiplications.
    let r2 = r * r;
    let r4 = r2 * r2;
    let low = (1.0 + r) + r2 * (1.0 / 2.0 + r * (1.0 / 6.0));
    let high = (1.0 / 24.0 + r * (1.0 / 120.0)) + r2 * (1.0 / 720.0 + r * (1.0 / 5040.0));
    let poly = low + r4 * high;
    let n_int = shifted.to_bits() as i32 - ROUND_MAGIC.to_bits() as i32;
    let scale = f32::from_bits(((n_int + 127) << 23) as u32);
    if x < EXP_MIN_ARG {
        0.0
    } else {
        poly * scale
    }
}

/// Natural logarithm in double precision, accurate to a few units in the last place.
///
/// `x = 2^e m` with `m` in `[sqrt(1/2), sqrt(2))`, then `ln m = 2 atanh(s)`,
/// `s = (m - 1) / (m + 1)`, summed as the odd series up to `s^21` (`|s| < 0.172`, so the
/// remainder is below 1e-17).
pub(crate) fn ln(x: f64) -> f64 {
    if x.is_nan() || x < 0.0 {
        return f64::NAN;
    }
    if x == 0.0 {
        return f64::NEG_INFINITY;
    }
    if x.is_infinite() {
        return f64::INFINITY;
    }
    let (mut x, mut exponent) = (x, 0i64);
    if x < f64::MIN_POSITIVE {
        x *= (1u64 << 54) as f64;
        exponent -= 54;
    }
    let bits = x.to_bits();
    exponent += ((bits >> 52) & 0x7ff) as i64 - 1023;
    let mut m = f64::from_bits((bits & ((1u64 << 52) - 1)) | (1023u64 << 52));
    if m > std::f64::consts::SQRT_2 {
        m *= 0.5;
        exponent += 1;
    }
    let s = (m - 1.0) / (m + 1.0);
    let s2 = s * s;
    let mut series = 1.0 / 21.0;
    for k in (0..10).rev() {
        series = series * s2 + 1.0 / (2 * k + 1) as f64;
    }
    exponent as f64 * std::f64::consts::LN_2 + 2.0 * s * series
}

/// The largest value that is not -inf, or -inf when there is none.
///
/// Expects no NaN (the funnel rejects NaN logits before any step runs).
pub(crate) fn max_finite(values: &[f32]) -> f32 {
    let mut lanes = [f32::NEG_INFINITY; LANES];
    let chunks = values.chunks_exact(LANES);
    let tail = chunks.remainder();
    for chunk in chunks {
        for (lane, &v) in lanes.iter_mut().zip(chunk) {
            *lane = if v > *lane { v } else { *lane };
        }
    }
    let mut max = f32::NEG_INFINITY;
    for &v in lanes.iter().chain(tail) {
        max = if v > max { v } else { max };
    }
    max
}

/// The position of the first value equal to `max` (the argmax, ties going to the lowest id).
pub(crate) fn first_position_of(values: &[f32], max: f32) -> Option<usize> {
    values.iter().position(|&v| v == max)
}

/// How many values the vocabulary-wide sums exponentiate at a time: a map loop over a fixed
/// block (which the compiler vectorizes), then a lane-wise sum of the block in `f32`, then the
/// block's total in `f64`. Keeps the relative rounding error of a full-vocabulary sum near 1e-6.
const SUM_BLOCK: usize = 256;

/// The sum of a block in `LANES` independent `f32` lanes (an order the compiler can keep in
/// vector registers), folded into `f64`.
pub(crate) fn lane_sum(block: &[f32]) -> f64 {
    let mut lanes = [0.0f32; LANES];
    let chunks = block.chunks_exact(LANES);
    let tail = chunks.remainder();
    for chunk in chunks {
        for (lane, &v) in lanes.iter_mut().zip(chunk) {
            *lane += v;
        }
    }
    let mut total = 0.0f64;
    for &v in lanes.iter().chain(tail) {
        total += v as f64;
    }
    total
}

/// Replaces every value by `e^(v - shift)` (-inf becomes 0) and returns their sum in `f64`.
pub(crate) fn exp_in_place(values: &mut [f32], shift: f32) -> f64 {
    let mut total = 0.0f64;
    for block in values.chunks_mut(SUM_BLOCK) {
        for v in block.iter_mut() {
            *v = exp(*v - shift);
        }
        total += lane_sum(block);
    }
    total
}

/// `sum_i e^(v_i - shift)` over all values (-inf contributes 0), accumulated in `f64`.
pub(crate) fn exp_sum(values: &[f32], shift: f32) -> f64 {
    let mut weights = [0.0f32; SUM_BLOCK];
    let mut total = 0.0f64;
    for block in values.chunks(SUM_BLOCK) {
        let weights = &mut weights[..block.len()];
        for (w, &v) in weights.iter_mut().zip(block) {
            *w = exp(v - shift);
        }
        total += lane_sum(weights);
    }
    total
}

/// `(sum_i w_i, sum_i w_i (shift - v_i))` with `w_i = e^(v_i - shift)` over the finite values:
/// the normalizer and the unnormalized mean surprisal, for the entropy.
pub(crate) fn exp_sum_and_moment(values: &[f32], shift: f32) -> (f64, f64) {
    let mut weights = [0.0f32; SUM_BLOCK];
    let mut moments = [0.0f32; SUM_BLOCK];
    let (mut total, mut moment) = (0.0f64, 0.0f64);
    for block in values.chunks(SUM_BLOCK) {
        let weights = &mut weights[..block.len()];
        let moments = &mut moments[..block.len()];
        for ((w, m), &v) in weights.iter_mut().zip(moments.iter_mut()).zip(block) {
            *w = exp(v - shift);
            // -inf has weight 0; its surprisal is infinite, and 0 * inf would be NaN.
            *m = if v > f32::NEG_INFINITY {
                *w * (shift - v)
            } else {
                0.0
            };
        }
        total += lane_sum(weights);
        moment += lane_sum(moments);
    }
    (total, moment)
}

/// The largest value that is not -inf (-inf when there is none), or `None` if some value is
/// NaN or +inf: the input check and the first maximum of the funnel in one pass.
///
/// The pass keeps, beside the maxima, the lanes' sums of `v * 0`: zero while every value is
/// finite, NaN from the first NaN or infinity on. Only then does a second, exact pass tell an
/// allowed -inf from a NaN or +inf; a model's logits never need it.
pub(crate) fn max_if_valid(values: &[f32]) -> Option<f32> {
    let mut lanes = [f32::NEG_INFINITY; LANES];
    let mut poison = [0.0f32; LANES];
    let chunks = values.chunks_exact(LANES);
    let tail = chunks.remainder();
    for chunk in chunks {
        for ((lane, p), &v) in lanes.iter_mut().zip(poison.iter_mut()).zip(chunk) {
            *lane = if v > *lane { v } else { *lane };
            *p += v * 0.0;
        }
    }
    let mut max = f32::NEG_INFINITY;
    let mut finite = poison.iter().all(|&p| p == 0.0);
    for &v in lanes.iter().chain(tail) {
        max = if v > max { v } else { max };
        finite &= v.is_finite();
    }
    if finite {
        return Some(max);
    }
    // Some value is not finite: valid only if every such value is -inf.
    let bad = values.iter().any(|&v| v.is_nan() || v == f32::INFINITY);
    (!bad).then_some(max)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exp_is_accurate_over_the_useful_range() {
        let mut worst = 0.0f64;
        let mut x = -87.0f32;
        while x <= 88.0 {
            let want = (x as f64).exp();
            let got = exp(x) as f64;
            worst = worst.max(((got - want) / want).abs());
            x += 0.001_37;
        }
        assert!(worst < 3e-7, "worst relative error {worst}");
    }

    #[test]
    fn exp_edges() {
        assert_eq!(exp(0.0), 1.0);
        assert_eq!(exp(f32::NEG_INFINITY), 0.0);
        assert_eq!(exp(-1000.0), 0.0);
        assert!(exp(-86.9) > 0.0);
    }

    #[test]
    fn ln_is_accurate() {
        for &x in &[
            1e-310, 1e-300, 1e-10, 0.05, 0.5, 0.99, 1.0, 1.5, 2.0, 10.0, 262_144.0, 1e300,
        ] {
            let want = f64::ln(x);
            let got = ln(x);
            assert!(
                (got - want).abs() <= 4.0 * f64::EPSILON * want.abs().max(1.0),
                "{x}: {got} vs {want}"
            );
        }
        assert_eq!(ln(0.0), f64::NEG_INFINITY);
        assert!(ln(-1.0).is_nan());
        assert_eq!(ln(1.0), 0.0);
    }

    #[test]
    fn max_and_sums_skip_minus_infinity() {
        let values: Vec<f32> = (0..1000)
            .map(|i| {
                if i % 3 == 0 {
                    f32::NEG_INFINITY
                } else {
                    (i % 17) as f32 * 0.25
                }
            })
            .collect();
        assert_eq!(max_finite(&values), 4.0);
        let want: f64 = values.iter().map(|&v| (v as f64 - 4.0).exp()).sum();
        assert!((exp_sum(&values, 4.0) - want).abs() < 1e-5 * want);
        let want_moment: f64 = values
            .iter()
            .filter(|v| v.is_finite())
            .map(|&v| (v as f64 - 4.0).exp() * (4.0 - v as f64))
            .sum();
        let (sum, moment) = exp_sum_and_moment(&values, 4.0);
        assert!((sum - want).abs() < 1e-5 * want);
        assert!((moment - want_moment).abs() < 1e-5 * want_moment);
        assert_eq!(max_finite(&[f32::NEG_INFINITY; 3]), f32::NEG_INFINITY);
    }

    #[test]
    fn the_checked_maximum_rejects_nan_and_infinity() {
        let mut values = vec![1.0f32; 37];
        values[3] = f32::NEG_INFINITY;
        values[20] = 4.0;
        assert_eq!(max_if_valid(&values), Some(4.0));
        for (at, bad) in [(5, f32::NAN), (36, f32::NAN), (11, f32::INFINITY)] {
            let mut with_bad = values.clone();
            with_bad[at] = bad;
            assert_eq!(max_if_valid(&with_bad), None);
        }
        assert_eq!(max_if_valid(&[f32::NEG_INFINITY]), Some(f32::NEG_INFINITY));
    }
}
