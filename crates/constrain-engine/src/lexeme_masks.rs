//! Lexeme masks as data: what a lexeme walk decides about the vocabulary ([`LexemeMask`]), and
//! the cache that shares them between every grammar compiled for one token index, by the
//! lexer state's [`Signature`] (see `mask` for the walk, `token_index` for the owner).

use std::hash::{Hash, Hasher};
use std::sync::Arc;

use rustc_hash::FxHashMap;

use crate::interner::IdsByHash;

/// What a lexer state alone decides about the vocabulary.
#[derive(Debug)]
pub(crate) struct LexemeMask {
    /// Tokens allowed in any context.
    pub inside: Inside,
    /// Trie nodes (with their byte path) below which validity depends on the parser.
    pub boundaries: Vec<(u32, Box<[u8]>)>,
}

impl LexemeMask {
    /// Approximate memory held.
    pub fn bytes(&self) -> usize {
        self.inside.bytes()
            + self
                .boundaries
                .iter()
                .map(|(_, path)| 8 + path.len())
                .sum::<usize>()
    }
}

/// The tokens a lexeme walk allows in any context: a mask, or their ids when they are few.
/// The key of one member of an object allows a handful of tokens, and the key position of an
/// object of hundreds of members joins hundreds of such walks: their masks would be megabytes
/// to allocate, keep and read.
#[derive(Debug)]
pub(crate) enum Inside {
    Mask(Box<[u32]>),
    Tokens(Box<[u32]>),
}

/// A walk's tokens are kept as ids when they number at most a mask's words over this: the ids
/// then take a quarter of the mask's memory at most.
const IDS_PER_MASK_WORDS: usize = 4;

impl Inside {
    /// `mask`, as ids when it allows few tokens: read up to where it holds too many for
    /// that, so a full mask costs a few words.
    pub fn from_mask(mask: Box<[u32]>) -> Inside {
        let most = mask.len() / IDS_PER_MASK_WORDS;
        let mut ids = Vec::new();
        for (i, &word) in mask.iter().enumerate() {
            let mut bits = word;
            while bits != 0 {
                ids.push((i as u32) << 5 | bits.trailing_zeros());
                bits &= bits - 1;
            }
            if ids.len() > most {
                return Inside::Mask(mask);
            }
        }
        Inside::Tokens(ids.into_boxed_slice())
    }

    /// `tokens` (distinct ids), as a mask of `words` words where they are many.
    pub fn from_tokens(tokens: Vec<u32>, words: usize) -> Inside {
        if tokens.len() > words / IDS_PER_MASK_WORDS {
            let mut mask = vec![0u32; words].into_boxed_slice();
            set_bits(&mut mask, &tokens);
            Inside::Mask(mask)
        } else {
            Inside::Tokens(tokens.into_boxed_slice())
        }
    }

    /// Clears these tokens from `mask`, but `keep`; returns whether one of them was set.
    pub fn remove_from(&self, mask: &mut [u32], keep: Option<u32>) -> bool {
        let mut removed = false;
        match self {
            Inside::Mask(words) => {
                let kept = |i: usize| {
                    keep.filter(|&k| (k >> 5) as usize == i)
                        .map_or(0, |k| 1u32 << (k & 31))
                };
                for (i, (m, w)) in mask.iter_mut().zip(words.iter()).enumerate() {
                    let cleared = *m & w & !kept(i);
                    removed |= cleared != 0;
                    *m &= !cleared;
                }
            }
            Inside::Tokens(ids) => {
                for &t in ids.iter().filter(|&&t| Some(t) != keep) {
                    let bit = 1u32 << (t & 31);
                    removed |= mask[(t >> 5) as usize] & bit != 0;
                    mask[(t >> 5) as usize] &= !bit;
                }
            }
        }
        removed
    }

    /// Adds these tokens to `mask`.
    pub fn add_to(&self, mask: &mut [u32]) {
        match self {
            Inside::Mask(words) => mask.iter_mut().zip(words.iter()).for_each(|(a, b)| *a |= b),
            Inside::Tokens(ids) => set_bits(mask, ids),
        }
    }

    /// These tokens as a mask of `words` words, in a new shared allocation.
    pub fn to_shared_mask(&self, words: usize) -> Arc<[u32]> {
        match self {
            Inside::Mask(mask) => Arc::from(&mask[..]),
            Inside::Tokens(ids) => {
                let mut mask: Arc<[u32]> = vec![0u32; words].into();
                let words = Arc::get_mut(&mut mask).expect("a new Arc is not shared");
                set_bits(words, ids);
                mask
            }
        }
    }

    pub fn bytes(&self) -> usize {
        match self {
            Inside::Mask(words) | Inside::Tokens(words) => words.len() * 4,
        }
    }
}

/// Lexeme masks by [`Lexer::signature`](crate::lexer::Lexer::signature) in two generations:
/// when the recent one fills its half of the budget it becomes the older one, whose previous
/// masks are dropped (on a thread of their own). A mask found in the older generation moves
/// back to the recent one, so the lexemes every grammar has (a string body, a number) outlive
/// a stream of grammars with lexemes of their own, at the cost of one move per generation.
#[derive(Debug, Default)]
pub(crate) struct SharedLexemeMasks {
    recent: FxHashMap<Signature, Arc<LexemeMask>>,
    older: FxHashMap<Signature, Arc<LexemeMask>>,
    /// Memory held by `recent`.
    bytes: usize,
}

impl SharedLexemeMasks {
    pub(crate) fn get(&mut self, signature: &Signature) -> Option<Arc<LexemeMask>> {
        if let Some(mask) = self.recent.get(signature) {
            return Some(mask.clone());
        }
        let (signature, mask) = self.older.remove_entry(signature)?;
        self.insert(signature, mask.clone());
        Some(mask)
    }

    pub(crate) fn insert(&mut self, signature: Signature, mask: Arc<LexemeMask>) {
        let bytes = signature.words.len() * 4 + mask.bytes();
        if self.bytes + bytes > SHARED_LEXEME_MASK_BYTES / 2 {
            // Thousands of masks: not freed on the thread waiting for this one.
            let recent = std::mem::take(&mut self.recent);
            crate::free_in_background(std::mem::replace(&mut self.older, recent));
            self.bytes = 0;
        }
        self.bytes += bytes;
        self.recent.insert(signature, mask);
    }
}

/// A lexer state's signature (see [`Lexer::signature`](crate::lexer::Lexer::signature)) with
/// its hash, computed once: the shared masks number tens of thousands, and a map that grows
/// hashes every key again, which for signatures of hundreds of words took a millisecond
/// inside one mask.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Signature {
    hash: u64,
    words: Box<[u32]>,
}

impl Signature {
    pub(crate) fn new(words: Box<[u32]>) -> Signature {
        Signature {
            hash: IdsByHash::hash_of(&words[..]),
            words,
        }
    }
}

impl Hash for Signature {
    fn hash<H: Hasher>(&self, state: &mut H) {
        state.write_u64(self.hash);
    }
}

/// Memory for the lexeme masks shared through one [`TokenIndex`] (both generations).
const SHARED_LEXEME_MASK_BYTES: usize = 64 << 20;

/// Sets the bits of `tokens` in `mask`.
#[inline]
pub(crate) fn set_bits(mask: &mut [u32], tokens: &[u32]) {
    for &t in tokens {
        mask[(t >> 5) as usize] |= 1 << (t & 31);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shared_lexeme_masks_keep_what_is_used_and_stay_within_budget() {
        // A mask of 1 MB: 32 fill a generation.
        let mask = || {
            Arc::new(LexemeMask {
                inside: Inside::Mask(vec![0u32; 1 << 18].into_boxed_slice()),
                boundaries: Vec::new(),
            })
        };
        let signature = |i: u32| Signature::new(vec![i].into());
        let hot = signature(u32::MAX);
        let mut shared = SharedLexemeMasks::default();
        shared.insert(hot.clone(), mask());
        for i in 0..100u32 {
            shared.insert(signature(i), mask());
            assert!(shared.get(&hot).is_some(), "used after every grammar");
            let held = shared.recent.len() + shared.older.len();
            assert!(held <= 2 * 32, "{held} masks held");
        }
        assert!(shared.get(&signature(0)).is_none(), "unused masks go");
        assert!(shared.get(&signature(99)).is_some(), "the latest stays");
    }
}
