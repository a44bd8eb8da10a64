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
//! neither die nor end on them (`Lexer::free_in_strings`; for characters beyond ASCII only,
//! `Lexer::free_in_non_ascii`), and when every token below is string characters, no more of
//! them than the walk's start survives (`Lexer::string_radius`): those are allowed at once
//! from a mask per count (`TokenIndex::allow_string_runs`). When that count is exact (a string
//! body with a `maxLength`), every other token of string characters dies too, and only
//! subtrees holding other tokens are walked (`Lexer::exact_string_radius`). A node below where
//! the count becomes exact (a pattern met inside a `maxLength`) decides the runs of string
//! characters of its subtree in one pass over its tokens (`TokenIndex::allow_runs_up_to`).

use rustc_hash::FxHashMap;

use crate::automaton::{Automaton, StateId, DEAD};
use crate::error::MatchError;
use crate::lexeme_masks::set_bits;
use crate::lexer::{LexId, LEX_DEAD};
use crate::token_index::{TokenIndex, SHORT_STRING};

pub(crate) use crate::lexeme_masks::{Inside, LexemeMask};

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
    // Every token of at most that many string characters is allowed, at once from the mask of
    // that count. When the count is exact, every other token of string characters dies on
    // the character after it: every token of string characters is then decided, and the walk
    // skips every subtree of them, whatever their length, and visits only those holding
    // others. Otherwise it skips the subtrees of runs no longer than the count.
    let exact_radius = auto.lexer.exact_string_radius(lex)?;
    let runs_allowed = (exact_radius.is_some() || string_radius > 0)
        && index.allow_string_runs(&mut inside, string_radius);
    let string_runs_decided = runs_allowed && exact_radius.is_some();
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
    // them is skipped, not walked (see `TokenIndex::allow_short_strings`). Allowed runs
    // hold them when they are long enough.
    let short_strings_from_root = string_radius >= SHORT_STRING
        && (runs_allowed
            || (index.has_short_strings(0) && index.allow_short_strings(&mut inside, 0)));
    let mut stack: Vec<Frame> = vec![Frame {
        end: nodes[0].subtree_end,
        lex,
        short_strings: short_strings_from_root,
        runs: match (string_runs_decided, controls_die) {
            (false, _) => DecidedRuns::No,
            (true, false) => DecidedRuns::Runs,
            (true, true) => DecidedRuns::AndBroken,
        },
        chars: PathChars::default(),
    }];
    let mut i = 1usize;
    let end = nodes[0].subtree_end as usize;
    while i < end {
        while stack.last().is_some_and(|frame| frame.end as usize <= i) {
            stack.pop();
            path.pop();
        }
        let node = nodes[i];
        let chars = index.string_tokens(i);
        let Some(&frame) = stack.last() else {
            break;
        };
        if frame.short_strings {
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
            if !runs_allowed {
                index.allow_subtree(&mut inside, i);
            }
            i = node.subtree_end as usize;
            continue;
        }
        if controls_die && index.runs_or_broken(i) <= skip_string_runs_up_to {
            if !runs_allowed {
                index.allow_runs_below(&mut inside, i);
            }
            i = node.subtree_end as usize;
            continue;
        }
        if frame.runs.decides(index, i) {
            i = node.subtree_end as usize;
            continue;
        }
        let next = auto
            .lexer
            .next(frame.lex, classes[node.byte as usize] as usize)?;
        if next == LEX_DEAD {
            i = node.subtree_end as usize;
            continue;
        }
        if !auto.lexer.can_end(next)
            && index.has_children(i)
            && (match index.alphabet_below(i) {
                Some(alphabet) => index.subtree_height(i) <= auto.lexer.radius(next, alphabet)?,
                None => false,
            } || (index.string_below(i) && auto.lexer.free_in_strings(next))
                || (index.non_ascii_below(i) && auto.lexer.free_in_non_ascii(next)))
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
        let path_chars = frame.chars.after(node.byte);
        let mut runs = frame.runs;
        if runs == DecidedRuns::No && node.subtree_end as usize - i >= DECIDED_RUNS_LEAST_NODES {
            // Where the path has whole characters and the state reached survives an exact
            // count of them (a string body with characters left before its `maxLength`, once
            // a pattern is met), the runs below are decided by their length: one pass over
            // the subtree's tokens instead of a walk over its nodes.
            if let Some(limit) = decided_runs_limit(auto, path_chars, next)? {
                index.allow_runs_up_to(&mut inside, i, limit);
                runs = if auto.lexer.controls_die_in_strings(next) {
                    DecidedRuns::AndBroken
                } else {
                    DecidedRuns::Runs
                };
                if runs.decides(index, i) {
                    i = node.subtree_end as usize;
                    continue;
                }
            }
        }
        let short_strings_below = frame.short_strings
            || (string_radius >= SHORT_STRING
                && index.has_short_strings(i)
                && index.allow_short_strings(&mut inside, i));
        stack.push(Frame {
            end: node.subtree_end,
            lex: next,
            short_strings: short_strings_below,
            runs,
            chars: path_chars,
        });
        path.push(node.byte);
        i += 1;
    }
    Ok(LexemeMask {
        inside: Inside::from_mask(inside),
        boundaries,
    })
}

/// The most string characters of the runs allowed below a node whose path is `chars` and
/// leads to `lex`, when `lex` decides every run below (an exact string radius, not zero: a
/// walk leaves such a state at once anyway).
fn decided_runs_limit(
    auto: &mut Automaton,
    chars: PathChars,
    lex: LexId,
) -> Result<Option<u8>, MatchError> {
    let Some(whole) = chars.whole() else {
        return Ok(None);
    };
    Ok(match auto.lexer.exact_string_radius(lex)? {
        Some(radius) if radius > 0 => whole.checked_add(radius).filter(|&l| l < u8::MAX - 1),
        _ => None,
    })
}

/// The fewest nodes in a subtree for the lexeme walk to decide its runs by their length: a
/// state's exact radius can take more steps to find than walking a few nodes.
const DECIDED_RUNS_LEAST_NODES: usize = 64;

/// A node on the lexeme walk's current path.
#[derive(Clone, Copy)]
struct Frame {
    /// Where the node's subtree ends.
    end: u32,
    /// The lexer state after the node's bytes.
    lex: LexId,
    /// Whether the short string tokens below are allowed already.
    short_strings: bool,
    /// Which tokens below are decided already, without walking them.
    runs: DecidedRuns,
    /// The node's bytes counted as characters.
    chars: PathChars,
}

/// Tokens below a node of the lexeme walk decided already, by their string characters (see
/// `TokenIndex::allow_runs_up_to`).
#[derive(Clone, Copy, PartialEq, Eq)]
enum DecidedRuns {
    No,
    /// The runs of string characters.
    Runs,
    /// Those and the tokens breaking off at a control byte, which die.
    AndBroken,
}

impl DecidedRuns {
    /// Whether every token below `node` is decided.
    fn decides(self, index: &TokenIndex, node: usize) -> bool {
        match self {
            DecidedRuns::No => false,
            DecidedRuns::Runs => index.string_tokens(node) < u8::MAX,
            DecidedRuns::AndBroken => index.runs_or_broken(node) < u8::MAX,
        }
    }
}

/// The bytes of a path from the trie's root as string characters (see
/// `bytes::is_string_char`, here not telling the line separators apart): how many whole
/// ones, and how many continuation bytes the last one still needs.
#[derive(Clone, Copy, Default)]
struct PathChars {
    whole: u8,
    pending: u8,
}

impl PathChars {
    /// Not string characters (or too many to count): `whole` is never read.
    const UNKNOWN: PathChars = PathChars {
        whole: u8::MAX,
        pending: 0,
    };

    fn after(self, byte: u8) -> PathChars {
        if self.whole == u8::MAX {
            return self;
        }
        let (whole, pending) = match (self.pending, byte) {
            // Not string characters: no run goes on from here.
            (_, 0x00..=0x1F | b'"' | b'\\') => return PathChars::UNKNOWN,
            (0, 0x20..=0x7F) => (self.whole + 1, 0),
            (0, 0xC0..=0xDF) => (self.whole, 1),
            (0, 0xE0..=0xEF) => (self.whole, 2),
            (0, 0xF0..=0xF7) => (self.whole, 3),
            (1, 0x80..=0xBF) => (self.whole + 1, 0),
            (p, 0x80..=0xBF) if p > 1 => (self.whole, p - 1),
            _ => return PathChars::UNKNOWN,
        };
        PathChars { whole, pending }
    }

    /// How many characters the path is, when it ends at the end of one.
    fn whole(self) -> Option<u8> {
        (self.pending == 0 && self.whole < u8::MAX).then_some(self.whole)
    }
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
    fn paths_count_whole_string_characters() {
        let read = |bytes: &[u8]| bytes.iter().fold(PathChars::default(), |c, &b| c.after(b));
        assert_eq!(read(b"ab").whole(), Some(2));
        assert_eq!(read("a\u{e9}\u{4e16}".as_bytes()).whole(), Some(3));
        assert_eq!(
            read(&"a\u{e9}".as_bytes()[..2]).whole(),
            None,
            "a character cut short"
        );
        assert_eq!(
            read(b"a\"b").whole(),
            None,
            "a quote is no string character"
        );
        assert_eq!(read(b"a\nb").whole(), None, "nor a control");
        assert_eq!(
            read(&[b'a', 0x80]).whole(),
            None,
            "a stray continuation byte"
        );
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
