//! Where the tokens that keep a lexeme going end: for a lexer state, the tokens a lexeme walk
//! from it allows in any context, grouped by the lexer state their last byte reaches.
//!
//! A token that keeps the lexeme of scan `(row, lex)` going leaves the row as it was, so the
//! automaton state after it is `Automaton::after_lexeme_bytes(row, end)` for its end `end`:
//! the token budget, where it must refuse some of these tokens, reads one completion per end
//! and refuses their groups whole, instead of walking the trie through the automaton from
//! every state it meets inside a string.

use rustc_hash::FxHashMap;

use crate::error::MatchError;
use crate::lexeme_masks::Inside;
use crate::lexer::{LexId, Lexer, LEX_DEAD};
use crate::token_index::TokenIndex;

/// The tokens that keep the lexeme of one lexer state going, by the lexer state they end in.
#[derive(Debug)]
pub(crate) struct InsideEnds {
    pub by_end: Vec<(LexId, Inside)>,
}

impl InsideEnds {
    /// Approximate memory held.
    pub(crate) fn bytes(&self) -> usize {
        self.by_end
            .iter()
            .map(|(_, tokens)| 8 + tokens.bytes())
            .sum()
    }
}

/// [`InsideEnds`] of `lex`, by a walk of the trie through the lexer alone: a token is inside
/// when no state its bytes pass before the last one lets the lexeme end (as
/// `completion::token_ends` lists ends, and as the lexeme walk puts boundaries). `None` when
/// the tokens end in more than `most_ends` states.
pub(crate) fn inside_ends(
    lexer: &mut Lexer,
    index: &TokenIndex,
    lex: LexId,
    most_ends: usize,
) -> Result<Option<InsideEnds>, MatchError> {
    let nodes = index.nodes();
    let classes = *lexer.byte_classes();
    let mut groups: FxHashMap<LexId, Vec<u32>> = FxHashMap::default();
    let end = nodes[0].subtree_end as usize;
    let mut stack: Vec<(u32, LexId)> = vec![(end as u32, lex)];
    let mut i = 1;
    while i < end {
        while stack.last().is_some_and(|&(e, _)| e as usize <= i) {
            stack.pop();
        }
        let parent = stack.last().map_or(LEX_DEAD, |&(_, s)| s);
        let node = nodes[i];
        let next = lexer.next(parent, classes[node.byte as usize] as usize)?;
        if next == LEX_DEAD {
            i = node.subtree_end as usize;
            continue;
        }
        let tokens = index.tokens_of(i);
        if !tokens.is_empty() {
            groups.entry(next).or_default().extend_from_slice(tokens);
            if groups.len() > most_ends {
                return Ok(None);
            }
        }
        let goes_on = !lexer.can_end(next) && lexer.extends(next);
        if goes_on && node.subtree_end as usize > i + 1 {
            stack.push((node.subtree_end, next));
            i += 1;
        } else {
            i = node.subtree_end as usize;
        }
    }
    let words = index.mask_words();
    let mut by_end: Vec<(LexId, Inside)> = groups
        .into_iter()
        .map(|(at, tokens)| (at, Inside::from_tokens(tokens, words)))
        .collect();
    by_end.sort_unstable_by_key(|e| e.0);
    Ok(Some(InsideEnds { by_end }))
}
