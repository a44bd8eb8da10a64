//! Computing token masks by walking the token trie against the automaton.
//!
//! Two walks share the work. A *lexeme walk* runs the lexer alone from a lexer state: tokens
//! that stay inside the lexeme are allowed whatever the parse stack is, and tokens that die
//! before any lexeme could end are rejected whatever it is; only the subtrees below points where
//! a lexeme can end ("boundaries") depend on the parser. Its result is cached per lexer state and
//! shared by every automaton state that scans from it (say, every JSON string body in every
//! context). A *state walk* then visits just those boundary subtrees with the full automaton.
//! States with several lexemes in flight use the state walk over the whole trie. A lexer state
//! of members of many terminals has, as its lexeme walk, the union of the walks of its members
//! grouped by terminal (see `CompiledGrammar::shared_or_walked`).
//!
//! Both walks take a subtree in one step when every byte below it is a text byte and the state
//! reached survives any text that long (a string body, or one with characters left before its
//! `maxLength`; see `text_run`): all its tokens are then allowed. The lexeme walk also does so
//! when everything below is string characters of any script (the last one of a token possibly
//! cut short by its end, as byte-level vocabularies split characters) and the lexer state can
//! neither die nor end on them (`Lexer::free_in_strings`), and when every token below is
//! string characters, no more of them than the walk's start survives (`Lexer::string_radius`).
//! When that count is exact (a string body with a `maxLength`), every token of string
//! characters is decided at once from a mask per count (`Lexer::exact_string_radius`,
//! `TokenIndex::allow_string_runs`), and only subtrees holding other tokens are walked.

use std::sync::Arc;

use rustc_hash::FxHashMap;

use crate::automaton::{Automaton, StateId, DEAD};
use crate::error::MatchError;
use crate::lexer::{LexId, LEX_DEAD};
use crate::token_index::{set_bits, TokenIndex, SHORT_STRING};

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

    fn bytes(&self) -> usize {
        match self {
            Inside::Mask(words) | Inside::Tokens(words) => words.len() * 4,
        }
    }
}

/// The lexeme walk from `lex`.
pub(crate) fn lexeme_mask(
    auto: &mut Automaton,
    index: &TokenIndex,
    lex: LexId,
) -> Result<LexemeMask, MatchError> {
    let nodes = index.nodes();
    let classes = *auto.lexer.byte_classes();
    let mut inside = vec![0u32; index.mask_words()].into_boxed_slice();
    let mut boundaries = Vec::new();
    let mut path: Vec<u8> = Vec::new();
    // How many string characters `lex` survives (at most `MAX_RADIUS`, so never a subtree's
    // `u8::MAX`): a subtree of string tokens no longer than that is inside the lexeme.
    let string_radius = auto.lexer.string_radius(lex)?;
    // When that count is exact, every token of string characters is decided at once: those no
    // longer are allowed, the others die on the character after it. The walk then skips every
    // subtree of such tokens, whatever their length, and visits only those holding others.
    let string_runs_decided = match auto.lexer.exact_string_radius(lex)? {
        Some(chars) => index.allow_string_runs(&mut inside, chars),
        None => false,
    };
    let skip_string_runs_up_to = if string_runs_decided {
        u8::MAX - 1
    } else {
        string_radius
    };
    // Whether a control byte after string characters kills `lex` (inside any JSON string it
    // does): then a subtree of runs and of tokens that break off at a control byte within
    // that many characters is decided too, its runs allowed and the others dead. Most of a
    // vocabulary's tokens that are not runs are such (code with its newlines and tabs).
    let controls_die =
        (string_runs_decided || string_radius > 0) && auto.lexer.controls_die_in_strings(lex);
    // Whether the short string tokens below a node are allowed already: then a subtree of
    // them is skipped, not walked (see `TokenIndex::allow_short_strings`). Decided runs hold
    // them already.
    let short_strings_from_root = !string_runs_decided
        && string_radius >= SHORT_STRING
        && index.has_short_strings(0)
        && index.allow_short_strings(&mut inside, 0);
    // (end of subtree, lexer state at its root, short string tokens below allowed)
    let mut stack: Vec<(u32, LexId, bool)> =
        vec![(nodes[0].subtree_end, lex, short_strings_from_root)];
    let mut i = 1usize;
    let end = nodes[0].subtree_end as usize;
    while i < end {
        while stack.last().is_some_and(|&(e, _, _)| e as usize <= i) {
            stack.pop();
            path.pop();
        }
        let node = nodes[i];
        let chars = index.string_tokens(i);
        let (parent, short_strings_allowed) =
            stack.last().map_or((LEX_DEAD, false), |&(_, l, s)| (l, s));
        if short_strings_allowed {
            let past = if controls_die {
                index.past_short_or_broken(i)
            } else {
                index.past_short_strings(i)
            };
            if let Some(past) = past {
                i = past;
                continue;
            }
        }
        if chars <= skip_string_runs_up_to {
            // Every token here is at most `string_radius` string characters read from `lex`,
            // or all of them are decided already.
            if !string_runs_decided {
                index.allow_subtree(&mut inside, i);
            }
            i = node.subtree_end as usize;
            continue;
        }
        if controls_die && index.runs_or_broken(i) <= skip_string_runs_up_to {
            if !string_runs_decided {
                index.allow_runs_below(&mut inside, i);
            }
            i = node.subtree_end as usize;
            continue;
        }
        let next = auto
            .lexer
            .next(parent, classes[node.byte as usize] as usize)?;
        if next == LEX_DEAD {
            i = node.subtree_end as usize;
            continue;
        }
        if !auto.lexer.can_end(next)
            && index.has_children(i)
            && (match index.alphabet_below(i) {
                Some(alphabet) => index.subtree_height(i) <= auto.lexer.radius(next, alphabet)?,
                None => false,
            } || (index.string_below(i) && auto.lexer.free_in_strings(next)))
        {
            // Every token below keeps the lexeme alive, and none can end it: inside.
            index.allow_subtree(&mut inside, i);
            i = node.subtree_end as usize;
            continue;
        }
        set_bits(&mut inside, index.tokens_of(i));
        if auto.lexer.can_end(next) {
            if index.has_children(i) {
                let mut bytes = path.clone();
                bytes.push(node.byte);
                boundaries.push((i as u32, bytes.into_boxed_slice()));
            }
            i = node.subtree_end as usize;
            continue;
        }
        let short_strings_below = short_strings_allowed
            || (string_radius >= SHORT_STRING
                && index.has_short_strings(i)
                && index.allow_short_strings(&mut inside, i));
        stack.push((node.subtree_end, next, short_strings_below));
        path.push(node.byte);
        i += 1;
    }
    Ok(LexemeMask {
        inside: Inside::from_mask(inside),
        boundaries,
    })
}

/// The state walk over the subtree of trie node `root`, entered in automaton state `state`:
/// sets the bits of the tokens allowed there.
pub(crate) fn walk_subtree(
    auto: &mut Automaton,
    index: &TokenIndex,
    root: usize,
    state: StateId,
    mask: &mut [u32],
) -> Result<(), MatchError> {
    walk_subtree_into(auto, index, root, state, |allowed| match allowed {
        Allowed::Tokens(tokens) => set_bits(mask, tokens),
        Allowed::Subtree(node) => index.allow_subtree(mask, node),
    })
}

/// What a state walk allows at one trie node.
enum Allowed<'a> {
    /// The tokens the node spells.
    Tokens(&'a [u32]),
    /// Every token of the node's subtree.
    Subtree(usize),
}

/// The state walk, handing what it allows to `allow`.
fn walk_subtree_into(
    auto: &mut Automaton,
    index: &TokenIndex,
    root: usize,
    state: StateId,
    mut allow: impl FnMut(Allowed<'_>),
) -> Result<(), MatchError> {
    let nodes = index.nodes();
    let classes = *auto.lexer.byte_classes();
    let end = nodes[root].subtree_end as usize;
    let mut stack: Vec<(u32, StateId)> = vec![(end as u32, state)];
    let mut i = root + 1;
    while i < end {
        while stack.last().is_some_and(|&(e, _)| e as usize <= i) {
            stack.pop();
        }
        let parent = stack.last().map_or(DEAD, |&(_, s)| s);
        let node = nodes[i];
        let next = auto.next(parent, classes[node.byte as usize] as usize)?;
        if next == DEAD {
            i = node.subtree_end as usize;
            continue;
        }
        if index.has_children(i)
            && index.text_below(i)
            && index.subtree_height(i) <= auto.text_radius(next)?
        {
            // Every token below leads to a live state.
            allow(Allowed::Subtree(i));
            i = node.subtree_end as usize;
            continue;
        }
        allow(Allowed::Tokens(index.tokens_of(i)));
        if node.subtree_end as usize > i + 1 {
            stack.push((node.subtree_end, next));
        }
        i += 1;
    }
    Ok(())
}

/// Tokens allowed below a boundary node once the lexeme ended there, by (node, automaton
/// state after the node). States that differ only inside the lexeme (the characters left of a
/// `maxLength`, say) end in the same state, so their boundary walks are done once.
#[derive(Default)]
pub(crate) struct BoundaryCache {
    allowed: FxHashMap<(u32, StateId), Box<[u32]>>,
    bytes: usize,
}

/// Memory kept by one grammar's [`BoundaryCache`]; it is emptied beyond that.
const BOUNDARY_CACHE_BYTES: usize = 64 << 20;

/// The mask of `state` given the lexeme mask of its only scan: `mask` holds `lexeme.inside`
/// on entry and gains the tokens its boundaries allow from `state`.
pub(crate) fn state_mask_from_lexeme(
    auto: &mut Automaton,
    index: &TokenIndex,
    state: StateId,
    lexeme: &LexemeMask,
    boundaries: &mut BoundaryCache,
    mask: &mut [u32],
) -> Result<(), MatchError> {
    for (node, path) in &lexeme.boundaries {
        let mut s = state;
        for &b in path.iter() {
            s = auto.next_byte(s, b)?;
            if s == DEAD {
                break;
            }
        }
        if s == DEAD {
            continue;
        }
        if let Some(tokens) = boundaries.allowed.get(&(*node, s)) {
            set_bits(mask, tokens);
            continue;
        }
        let mut tokens = Vec::new();
        walk_subtree_into(auto, index, *node as usize, s, |allowed| match allowed {
            Allowed::Tokens(t) => tokens.extend_from_slice(t),
            Allowed::Subtree(below) => tokens.extend_from_slice(index.subtree_tokens(below)),
        })?;
        set_bits(mask, &tokens);
        boundaries.bytes += 16 + tokens.len() * 4;
        if boundaries.bytes > BOUNDARY_CACHE_BYTES {
            boundaries.allowed.clear();
            boundaries.bytes = 16 + tokens.len() * 4;
        }
        boundaries
            .allowed
            .insert((*node, s), tokens.into_boxed_slice());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mask_of(words: usize, tokens: &[u32]) -> Box<[u32]> {
        let mut mask = vec![0u32; words];
        set_bits(&mut mask, tokens);
        mask.into_boxed_slice()
    }

    #[test]
    fn few_inside_tokens_are_kept_as_ids_and_give_back_the_same_mask() {
        let few = [3, 64, 100, 4095];
        let inside = Inside::from_mask(mask_of(128, &few));
        assert!(matches!(&inside, Inside::Tokens(ids) if ids[..] == few));
        assert_eq!(inside.to_shared_mask(128)[..], mask_of(128, &few)[..]);
        let mut mask = mask_of(128, &[5]);
        inside.add_to(&mut mask);
        assert_eq!(mask, mask_of(128, &[3, 5, 64, 100, 4095]));

        let many: Vec<u32> = (0..64).map(|i| i * 7).collect();
        let inside = Inside::from_mask(mask_of(128, &many));
        assert!(matches!(inside, Inside::Mask(_)), "64 tokens in 128 words");
        assert_eq!(inside.to_shared_mask(128)[..], mask_of(128, &many)[..]);
    }
}
