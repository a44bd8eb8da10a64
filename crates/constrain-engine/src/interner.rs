//! [`IdsByHash`]: the ids of interned values, found by hash, the values kept once by their
//! owner.

use std::hash::{Hash, Hasher};

use rustc_hash::{FxHashMap, FxHasher};
use smallvec::SmallVec;

/// Ids by the hash of what they name. A map keyed by the values themselves (the sets of a
/// lexer state, the items of a parser row) keeps a second copy of each, and hashes every one
/// of them again whenever it grows: with tens of thousands of sets of thousands of members,
/// that was a pause of milliseconds inside one mask. Here a growing map rehashes numbers.
#[derive(Debug, Default)]
pub(crate) struct IdsByHash {
    ids: FxHashMap<u64, SmallVec<[u32; 1]>>,
}

impl IdsByHash {
    /// The hash a value is filed under.
    pub fn hash_of<T: Hash + ?Sized>(value: &T) -> u64 {
        let mut hasher = FxHasher::default();
        value.hash(&mut hasher);
        hasher.finish()
    }

    /// The id filed under `hash` that `is` accepts (it compares the value the id names with
    /// the one looked for).
    pub fn find(&self, hash: u64, mut is: impl FnMut(u32) -> bool) -> Option<u32> {
        self.ids.get(&hash)?.iter().copied().find(|&id| is(id))
    }

    /// Files `id` under `hash`.
    pub fn insert(&mut self, hash: u64, id: u32) {
        self.ids.entry(hash).or_default().push(id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_with_one_hash_are_told_apart_by_their_owner() {
        let values = ["a", "b", "c"];
        let mut ids = IdsByHash::default();
        // Every value under one hash: the owner's comparison decides.
        for id in 0..values.len() as u32 {
            ids.insert(7, id);
        }
        for (id, value) in values.iter().enumerate() {
            assert_eq!(
                ids.find(7, |i| values[i as usize] == *value),
                Some(id as u32)
            );
        }
        assert_eq!(ids.find(7, |i| values[i as usize] == "d"), None);
        assert_eq!(ids.find(8, |_| true), None);
        assert_eq!(IdsByHash::hash_of("a"), IdsByHash::hash_of("a"));
    }
}
