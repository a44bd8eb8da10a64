//! Sets of Unicode scalar values as sorted, disjoint, non-adjacent inclusive ranges.

/// The surrogate block: code points that are not scalar values and never part of a set.
const SURROGATES: (u32, u32) = (0xD800, 0xDFFF);
/// The largest code point.
pub(crate) const MAX_CHAR: u32 = 0x10FFFF;

/// A set of Unicode scalar values.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) struct CharSet {
    ranges: Vec<(u32, u32)>,
}

impl CharSet {
    /// The empty set.
    pub(crate) fn empty() -> CharSet {
        CharSet { ranges: Vec::new() }
    }

    /// Every scalar value.
    pub(crate) fn any() -> CharSet {
        CharSet::from_ranges([(0, MAX_CHAR)])
    }

    /// One character.
    pub(crate) fn single(c: char) -> CharSet {
        CharSet {
            ranges: vec![(c as u32, c as u32)],
        }
    }

    /// The union of inclusive ranges (in any order, overlapping or not); surrogates are dropped.
    pub(crate) fn from_ranges(ranges: impl IntoIterator<Item = (u32, u32)>) -> CharSet {
        let mut v: Vec<(u32, u32)> = ranges
            .into_iter()
            .map(|(a, b)| (a.min(b), a.max(b).min(MAX_CHAR)))
            .filter(|&(a, b)| a <= b)
            .collect();
        v.sort_unstable();
        let mut merged: Vec<(u32, u32)> = Vec::with_capacity(v.len());
        for (a, b) in v {
            match merged.last_mut() {
                Some(last) if a <= last.1.saturating_add(1) => last.1 = last.1.max(b),
                _ => merged.push((a, b)),
            }
        }
        let mut set = CharSet { ranges: merged };
        set.remove_surrogates();
        set
    }

    fn remove_surrogates(&mut self) {
        if !self
            .ranges
            .iter()
            .any(|&(a, b)| a <= SURROGATES.1 && b >= SURROGATES.0)
        {
            return;
        }
        let mut out = Vec::with_capacity(self.ranges.len() + 1);
        for &(a, b) in &self.ranges {
            if b < SURROGATES.0 || a > SURROGATES.1 {
                out.push((a, b));
                continue;
            }
            if a < SURROGATES.0 {
                out.push((a, SURROGATES.0 - 1));
            }
            if b > SURROGATES.1 {
                out.push((SURROGATES.1 + 1, b));
            }
        }
        self.ranges = out;
    }

    /// The ranges, sorted and disjoint.
    pub(crate) fn ranges(&self) -> &[(u32, u32)] {
        &self.ranges
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.ranges.is_empty()
    }

    /// The only member, if there is exactly one.
    pub(crate) fn single_char(&self) -> Option<char> {
        match self.ranges[..] {
            [(a, b)] if a == b => char::from_u32(a),
            _ => None,
        }
    }

    pub(crate) fn contains(&self, c: char) -> bool {
        let c = c as u32;
        self.ranges
            .binary_search_by(|&(a, b)| {
                if b < c {
                    std::cmp::Ordering::Less
                } else if a > c {
                    std::cmp::Ordering::Greater
                } else {
                    std::cmp::Ordering::Equal
                }
            })
            .is_ok()
    }

    pub(crate) fn union(&self, other: &CharSet) -> CharSet {
        CharSet::from_ranges(self.ranges.iter().chain(&other.ranges).copied())
    }

    pub(crate) fn intersect(&self, other: &CharSet) -> CharSet {
        let (mut i, mut j) = (0, 0);
        let mut out = Vec::new();
        while i < self.ranges.len() && j < other.ranges.len() {
            let (a1, b1) = self.ranges[i];
            let (a2, b2) = other.ranges[j];
            let (a, b) = (a1.max(a2), b1.min(b2));
            if a <= b {
                out.push((a, b));
            }
            if b1 < b2 {
                i += 1;
            } else {
                j += 1;
            }
        }
        CharSet { ranges: out }
    }

    /// Every scalar value not in the set.
    pub(crate) fn complement(&self) -> CharSet {
        let mut out = Vec::with_capacity(self.ranges.len() + 1);
        let mut next = 0u32;
        for &(a, b) in &self.ranges {
            if a > next {
                out.push((next, a - 1));
            }
            next = b + 1;
        }
        if next <= MAX_CHAR {
            out.push((next, MAX_CHAR));
        }
        let mut set = CharSet { ranges: out };
        set.remove_surrogates();
        set
    }

    pub(crate) fn difference(&self, other: &CharSet) -> CharSet {
        self.intersect(&other.complement())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_merge_and_skip_surrogates() {
        let s = CharSet::from_ranges([(5, 10), (0, 4), (20, 30), (0xD000, 0xE000)]);
        assert_eq!(
            s.ranges(),
            &[(0, 10), (20, 30), (0xD000, 0xD7FF), (0xE000, 0xE000)]
        );
        assert_eq!(CharSet::empty().complement(), CharSet::any());
        assert!(CharSet::any().complement().is_empty());
    }

    #[test]
    fn set_algebra() {
        let a = CharSet::from_ranges([(b'a' as u32, b'z' as u32)]);
        let b = CharSet::from_ranges([(b'm' as u32, b'q' as u32)]);
        assert_eq!(a.intersect(&b), b);
        assert_eq!(a.difference(&b).ranges(), &[(97, 108), (114, 122)]);
        assert!(a.contains('c') && !a.contains('C'));
        assert_eq!(CharSet::single('x').single_char(), Some('x'));
    }
}
