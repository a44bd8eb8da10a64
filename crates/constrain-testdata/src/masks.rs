//! Reading token masks in tests: a mask is 32-bit words, bit `id % 32` of word `id / 32`, the
//! layout `Matcher::fill_mask` writes.

/// Whether `mask` allows token `id` (ids past the mask's words are not allowed).
pub fn is_allowed(mask: &[u32], id: u32) -> bool {
    mask.get((id / 32) as usize)
        .is_some_and(|word| word >> (id % 32) & 1 == 1)
}

/// The ids below `width` that `mask` allows, in increasing order.
pub fn allowed_ids(mask: &[u32], width: usize) -> Vec<u32> {
    (0..width as u32)
        .filter(|&id| is_allowed(mask, id))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bits_are_read_low_first_within_each_word() {
        let mask = [0b1010, 1 << 31];
        assert_eq!(allowed_ids(&mask, 64), vec![1, 3, 63]);
        assert!(!is_allowed(&mask, 64));
        assert_eq!(allowed_ids(&mask, 3), vec![1]);
    }
}
