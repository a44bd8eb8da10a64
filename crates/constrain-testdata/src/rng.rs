//! A tiny deterministic generator for tests that want varied inputs reproducibly: the same
//! seed gives the same sequence on every run and platform, and a failure can be replayed.

/// Marsaglia's xorshift64 generator (shifts 13, 7, 17). Not for statistics: tests use it to
/// pick tokens, characters and texts, where any spread is enough and reproducibility matters.
#[derive(Clone, Debug)]
pub struct XorShift64(u64);

impl XorShift64 {
    /// A generator started at `seed`; a zero seed, which xorshift never leaves, becomes 1.
    pub fn new(seed: u64) -> XorShift64 {
        XorShift64(if seed == 0 { 1 } else { seed })
    }

    /// The next 64 bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// A number in `0..n` (slightly biased toward small values, which no test minds).
    ///
    /// # Panics
    ///
    /// When `n` is 0.
    pub fn below(&mut self, n: u64) -> u64 {
        assert!(n > 0, "XorShift64::below(0) has no value to give");
        self.next_u64() % n
    }

    /// An index into a slice of `len` elements.
    ///
    /// # Panics
    ///
    /// When `len` is 0.
    pub fn index(&mut self, len: usize) -> usize {
        self.below(len as u64) as usize
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sequence_is_xorshift64_with_shifts_13_7_17() {
        let mut rng = XorShift64::new(1);
        // x = 1: x ^= x << 13 -> 0x2001; x ^= x >> 7 -> 0x2041; x ^= x << 17 -> 0x4082_2041.
        assert_eq!(rng.next_u64(), 0x4082_2041);
    }

    #[test]
    fn a_zero_seed_still_moves() {
        let mut rng = XorShift64::new(0);
        assert_ne!(rng.next_u64(), 0);
    }

    #[test]
    fn below_stays_below() {
        let mut rng = XorShift64::new(7);
        assert!((0..1000).all(|_| rng.below(3) < 3));
    }
}
