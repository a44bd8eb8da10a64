//! The grammar mask: -inf for every token the grammar does not allow.

/// `BITS[j]` is the bit of token `j` within its mask word.
const BITS: [u32; 32] = {
    let mut bits = [0u32; 32];
    let mut j = 0;
    while j < 32 {
        bits[j] = 1 << j;
        j += 1;
    }
    bits
};

/// Sets the logit of every token the mask does not allow to -inf.
///
/// The mask is a bitset over token ids: bit `j % 32` of word `j / 32`, 1 = allowed (the layout
/// the engine's `Matcher::fill_mask` writes). The logits may be wider than the mask (the ids
/// beyond it are masked) or narrower (the extra bits are ignored).
///
/// ```
/// use constrain_sampling::apply_grammar_mask;
/// let mut logits = [1.0, 2.0, 3.0, 4.0];
/// apply_grammar_mask(&mut logits, &[0b0101]);
/// assert_eq!(logits, [1.0, f32::NEG_INFINITY, 3.0, f32::NEG_INFINITY]);
/// ```
pub fn apply_grammar_mask(logits: &mut [f32], mask: &[u32]) {
    for (word_index, chunk) in logits.chunks_mut(32).enumerate() {
        match mask.get(word_index).copied().unwrap_or(0) {
            u32::MAX => {}
            0 => chunk.fill(f32::NEG_INFINITY),
            word => {
                // A test against a constant bit per lane, then a select: no branch, and the
                // compiler keeps it in vector registers.
                for (logit, &bit) in chunk.iter_mut().zip(BITS.iter()) {
                    *logit = if word & bit != 0 {
                        *logit
                    } else {
                        f32::NEG_INFINITY
                    };
                }
            }
        }
    }
}

/// How many of the ids `0..width` the mask allows (for error messages).
pub fn count_allowed(mask: &[u32], width: usize) -> usize {
    let full_words = width / 32;
    let mut allowed: usize = mask
        .iter()
        .take(full_words)
        .map(|w| w.count_ones() as usize)
        .sum();
    let rest = width % 32;
    if rest > 0 {
        if let Some(&word) = mask.get(full_words) {
            allowed += (word & ((1u32 << rest) - 1)).count_ones() as usize;
        }
    }
    allowed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_beyond_the_mask_are_masked() {
        let mut logits = vec![0.5f32; 70];
        apply_grammar_mask(&mut logits, &[u32::MAX]);
        assert!(logits[..32].iter().all(|&v| v == 0.5));
        assert!(logits[32..].iter().all(|&v| v == f32::NEG_INFINITY));
    }

    #[test]
    fn a_mask_wider_than_the_logits_is_fine() {
        let mut logits = vec![0.5f32; 3];
        apply_grammar_mask(&mut logits, &[0b1010, u32::MAX, u32::MAX]);
        assert_eq!(logits, [f32::NEG_INFINITY, 0.5, f32::NEG_INFINITY]);
        assert_eq!(count_allowed(&[0b1010, u32::MAX], 3), 1);
        assert_eq!(count_allowed(&[0b1010, u32::MAX], 64), 34);
        assert_eq!(count_allowed(&[u32::MAX], 64), 32);
    }
}
