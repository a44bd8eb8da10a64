//! Which repetitions a grammar may ask for.
//!
//! llama.cpp expands `S{m,n}` by copying `S` and generating helper rules, and refuses
//! repetitions whose expansion would be too large. Grammars are shared between tools, so the
//! same ones are refused here, by the same measure:
//!
//! * a minimum above [`REPETITION_LIMIT`] (`"a"{5000}`, `"a"{5000,}`);
//! * an item that stands for `r` rules, repeated `t` times, with `r * t` above the limit, where
//!   `t` is the maximum (or the minimum when unbounded, or 1) and `r` is 1 for a plain item,
//!   the number of rules generated while reading a group, and the product of the counts for a
//!   repeated item (`((([^x]*){0,99}){0,99}){0,99}`).
//!
//! llama.cpp counts a maximum above the limit as "unbounded", so `"a"{0,5000}` and
//! `"a"{3,5000}` are accepted. Here they are accepted the same way, but the maximum is kept:
//! `"a"{0,5000}` matches at most 5000 `a`s (llama.cpp would allow any number).

use crate::error::ErrorKind;

/// llama.cpp's `MAX_REPETITION_THRESHOLD`.
pub(crate) const REPETITION_LIMIT: u64 = 2000;

/// Counts the helper rules llama.cpp would generate, to weigh groups.
#[derive(Debug, Default)]
pub(crate) struct RuleCounter {
    generated: u64,
}

impl RuleCounter {
    /// The number of rules generated so far.
    pub fn mark(&self) -> u64 {
        self.generated
    }

    /// One more rule (a group becomes one).
    pub fn add_group(&mut self) {
        self.generated += 1;
    }

    /// The weight of a group whose reading started at `mark`.
    pub fn group_weight(&self, mark: u64) -> u64 {
        (self.generated - mark).max(1)
    }

    /// Checks the repetition `{min,max}` of an item of weight `rules` and returns the
    /// repeated item's weight.
    pub fn repeat(&mut self, rules: u64, min: u32, max: Option<u32>) -> Result<u64, ErrorKind> {
        if u64::from(min) > REPETITION_LIMIT {
            return Err(ErrorKind::TooManyRepetitions {
                count: min,
                limit: REPETITION_LIMIT,
            });
        }
        let counted_max = max.map(u64::from).filter(|&m| m <= REPETITION_LIMIT);
        let times = match counted_max {
            Some(m) if m > 0 => m,
            _ => u64::from(min).max(1),
        };
        let weight = rules.saturating_mul(times);
        if weight > REPETITION_LIMIT {
            return Err(ErrorKind::RepetitionTooComplex {
                rules,
                times,
                limit: REPETITION_LIMIT,
            });
        }
        self.generated += match counted_max {
            Some(m) => m - u64::from(min),
            None => 1,
        };
        Ok(weight)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thresholds() {
        let mut c = RuleCounter::default();
        assert!(c.repeat(1, 5000, Some(5000)).is_err());
        assert!(c.repeat(1, 5000, None).is_err());
        assert!(c.repeat(1, 2000, Some(2000)).is_ok());
        assert_eq!(c.repeat(1, 0, Some(5000)), Ok(1));
        assert_eq!(c.repeat(1, 3, Some(5000)), Ok(3));
        assert_eq!(c.repeat(2, 0, Some(99)), Ok(198));
        assert!(c.repeat(102, 0, Some(99)).is_err());
    }
}
