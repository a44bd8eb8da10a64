//! Temperature: one knob for the sharpness of the distribution.

use super::cutoff::{argmax_kept, retain, CutoffScratch};
use crate::math::max_finite;

/// Whether this temperature means greedy decoding: 0, or so small that `1 / T` overflows.
pub(crate) fn is_greedy(temperature: f32) -> bool {
    temperature == 0.0 || ((1.0 / temperature as f64) as f32).is_infinite()
}

/// Divides the logits by `temperature` (`softmax(z / T)`, computed as a multiplication by
/// `1 / T`); below 1 sharpens, above 1 flattens.
///
/// `temperature == 0` is greedy decoding: only the most likely token keeps its logit (the
/// lowest id among equal maxima), every other becomes -inf. If dividing would overflow `f32`
/// (a temperature so small that `max / T` is infinite), the logits are first shifted so the
/// largest is 0, which leaves the softmax unchanged. A temperature so small that `1 / T` overflows
/// acts like greedy decoding.
///
/// ```
/// use constrain_sampling::{apply_temperature, CutoffScratch};
/// let mut logits = [6.0, 5.0, 4.5];
/// apply_temperature(&mut logits, 0.5, &mut CutoffScratch::new());
/// assert_eq!(logits, [12.0, 10.0, 9.0]);
/// apply_temperature(&mut logits, 0.0, &mut CutoffScratch::new());
/// assert_eq!(logits, [12.0, f32::NEG_INFINITY, f32::NEG_INFINITY]);
/// ```
pub fn apply_temperature(logits: &mut [f32], temperature: f32, scratch: &mut CutoffScratch) {
    if temperature == 1.0 {
        return;
    }
    if is_greedy(temperature) {
        if argmax_kept(logits, scratch) {
            retain(logits, scratch);
        }
        return;
    }
    let max = max_finite(logits);
    if max == f32::NEG_INFINITY {
        return;
    }
    let inverse = (1.0 / temperature as f64) as f32;
    // A multiplication by the reciprocal is several times faster than a division over the
    // whole vocabulary, and differs from it by at most a rounding.
    if (max * inverse).is_finite() {
        for logit in logits.iter_mut() {
            *logit *= inverse;
        }
    } else {
        for logit in logits.iter_mut() {
            *logit = (*logit - max) * inverse;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tiny_temperatures_do_not_overflow() {
        let mut logits = [100.0, 99.0, f32::NEG_INFINITY];
        apply_temperature(&mut logits, 1e-37, &mut CutoffScratch::new());
        assert_eq!(logits[0], 0.0);
        assert!(logits[1] < -1e36);
        assert_eq!(logits[2], f32::NEG_INFINITY);
        let mut logits = [1.0, 2.0, f32::NEG_INFINITY];
        apply_temperature(&mut logits, 1e-45, &mut CutoffScratch::new());
        assert_eq!(logits, [f32::NEG_INFINITY, 2.0, f32::NEG_INFINITY]);
    }

    #[test]
    fn greedy_keeps_the_lowest_id_among_ties() {
        let mut logits = [1.0, 3.0, 3.0, f32::NEG_INFINITY];
        apply_temperature(&mut logits, 0.0, &mut CutoffScratch::new());
        assert_eq!(
            logits,
            [f32::NEG_INFINITY, 3.0, f32::NEG_INFINITY, f32::NEG_INFINITY]
        );
    }
}
