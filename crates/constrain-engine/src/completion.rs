//! Shortest completions: for a matcher state, the fewest bytes that lead it to an accepting
//! state, read off the grammar, and a tokenization of them.
//!
//! A token budget needs to know, before each token, whether the output can still end in time.
//! The answer combines three levels, each computed once and remembered:
//! - a *terminal*'s shortest lexeme, and from a lexer state the fewest bytes to end one of its
//!   terminals (a breadth-first search over lexer states, one representative byte per class);
//! - a *nonterminal*'s shortest derivation (a fixpoint over the productions; a family, items in
//!   any order, by its required members);
//! - a *row*'s completion after each nonterminal waited for there: the rest of the waiting
//!   item, then whatever completes the row that item began in. Items point at earlier rows, so
//!   this recursion follows the parse stack down to the start symbol.
//!
//! The completion of a state is the least, over its scans, of ending the lexeme in flight with
//! some terminal and completing what the scan's row expects after it. It is exact in bytes: the
//! automaton accepts exactly the grammar's language, and every choice above is the cheapest.
//! Its tokens are the longest-match tokenization of those bytes, a sound bound on the fewest
//! tokens (any tokenization of a valid text is accepted), not always the least.

use std::collections::VecDeque;
use std::sync::Arc;

use rustc_hash::FxHashMap;

use crate::automaton::{Automaton, StateId};
use crate::error::{Budget, MatchError};
use crate::lexer::{LexId, Lexer, LEX_DEAD};
use crate::parser::{Parser, RowId, SymAt};
use crate::token_index::TokenIndex;

/// Length of no completion.
const NONE: u64 = u64::MAX;

/// Lexer states one search for the end of a lexeme may visit.
const MAX_SEARCH_STATES: usize = 50_000;

/// Lexer states one search for a bound on the bytes to the end of a lexeme visits.
const MAX_BOUND_SEARCH_STATES: usize = 4096;

/// Bytes a completion may have: longer ones are refused as a budget (no output that long is
/// generated under a token budget anyway).
const MAX_COMPLETION_BYTES: u64 = 1 << 22;

/// The shortest completion of a state: its bytes, and their longest-match tokens.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Completion {
    /// The fewest bytes that complete the input.
    pub bytes: Arc<[u8]>,
    /// The bytes as tokens, each the longest vocabulary token that fits: a completion that
    /// takes `tokens.len()` tokens.
    pub tokens: Arc<[u32]>,
}

/// How a nonterminal's shortest derivation goes.
#[derive(Clone, Copy, Debug)]
enum Derivation {
    /// Not derived yet (or deriving nothing).
    Unknown,
    /// The production at this position.
    Production(u32),
    /// A family nonterminal: its required members in order, or its cheapest single item.
    Family,
}

/// How the completion after a nonterminal waited for in a row goes: the rest of the waiting
/// item at `pos`, then the completion after its left-hand side in row `origin` (nothing when
/// that is the start symbol).
#[derive(Clone, Copy, Debug)]
struct After {
    len: u64,
    pos: u32,
    origin: RowId,
}

/// What completing a row costs after each terminal it expects: the fewest bytes, and the
/// item whose rest they are (its position and origin row).
type Tails = FxHashMap<u32, (u64, u32, RowId)>;

/// A breadth-first search over lexer states from one state for the ends of its lexeme (bytes
/// read after it, at least one), kept between questions and taken deeper only as far as one
/// needs. Every row that scans the state asks it (the inside of a string is one lexer state
/// for every string of the grammar), each for the end that costs least with its own tails.
#[derive(Default)]
struct EndSearch {
    /// How each state reached was first reached: the state before and a byte.
    parent: FxHashMap<LexId, (LexId, u8)>,
    /// The states `depth` bytes away, in the order found: the next to expand.
    frontier: Vec<LexId>,
    /// Bytes read to the states of `frontier`: every end within them is found.
    depth: u64,
    /// The first end found of each terminal, in the order found: terminal, state, bytes.
    ends: Vec<(u32, LexId, u64)>,
    /// The terminals of `ends`.
    ended: rustc_hash::FxHashSet<u32>,
}

/// Every completion computed so far for one grammar; lives beside the automaton.
#[derive(Default)]
pub(crate) struct Completions {
    /// Representative byte of every byte class: printable where the class has one.
    class_bytes: Vec<u8>,
    /// The classes in the order searches try them: first those whose byte is a token of its
    /// own, so that where several bytes lead alike the completion takes one it can spell.
    class_order: Vec<usize>,
    /// Each terminal's shortest lexeme (`None`: none found).
    terminals: FxHashMap<u32, Option<Arc<[u8]>>>,
    /// Shortest derivation length of each nonterminal, and how.
    nonterminals: Vec<(u64, Derivation)>,
    /// Whether `nonterminals` has been computed for the grammar's base nonterminals.
    derived: bool,
    /// The grammar's widest completion, once computed (see [`widest`]).
    widest_completion: Option<Option<u64>>,
    nonterminal_text: FxHashMap<u32, Arc<[u8]>>,
    /// Per row: the completion after each nonterminal some item there waits for.
    after: FxHashMap<RowId, Arc<FxHashMap<u32, After>>>,
    after_text: FxHashMap<(RowId, u32), Arc<[u8]>>,
    /// Per state: its completion, `None` where there is none.
    states: FxHashMap<StateId, Option<Completion>>,
    /// The completions above by their bytes.
    by_text: FxHashMap<Arc<[u8]>, Completion>,
    /// Per lexer state: the search for the ends of its lexeme so far (see [`EndSearch`]).
    end_searches: FxHashMap<LexId, EndSearch>,
    /// Per lexer state: at most how many bytes end its lexeme (see
    /// [`Completions::bytes_to_end_bound`]).
    to_end: FxHashMap<LexId, u64>,
    /// Per row: the completion after each terminal it expects (see [`Completions::tails`]).
    tails: FxHashMap<RowId, Arc<Tails>>,
    /// Per row: the most bytes that complete the input after any terminal it expects, where
    /// every one of them has a completion (see [`Completions::widest_tail`]).
    widest_tail: FxHashMap<RowId, Option<u64>>,
    /// Bytes held by the texts above, to bound the memory of a long-lived grammar.
    bytes: usize,
}

/// Bytes of texts kept before the completions of rows and states are dropped.
const MAX_KEPT_BYTES: usize = 64 << 20;

impl Completions {
    /// The shortest completion of `state`, or `None` when no input completes it.
    pub(crate) fn of_state(
        &mut self,
        a: &mut Automaton,
        index: &TokenIndex,
        state: StateId,
    ) -> Result<Option<Completion>, MatchError> {
        if let Some(known) = self.states.get(&state) {
            return Ok(known.clone());
        }
        if self.bytes > MAX_KEPT_BYTES {
            self.states.clear();
            self.after_text.clear();
            self.by_text.clear();
            self.end_searches.clear();
            self.bytes = 0;
        }
        let completion = match self.bytes_of_state(a, index, state)? {
            // Many states complete alike (the prefixes of a key, the positions of a string):
            // their completion is tokenized once.
            Some(bytes) => match self.by_text.get(&bytes[..]) {
                Some(known) => Some(known.clone()),
                None => {
                    let completion = tokenize(index, &bytes).map(|tokens| Completion {
                        bytes: bytes.into(),
                        tokens: tokens.into(),
                    });
                    if let Some(c) = &completion {
                        self.bytes += 2 * c.bytes.len() + 4 * c.tokens.len();
                        self.by_text.insert(c.bytes.clone(), c.clone());
                    }
                    completion
                }
            },
            None => None,
        };
        self.states.insert(state, completion.clone());
        Ok(completion)
    }

    /// The fewest bytes that complete `state`.
    fn bytes_of_state(
        &mut self,
        a: &mut Automaton,
        index: &TokenIndex,
        state: StateId,
    ) -> Result<Option<Vec<u8>>, MatchError> {
        if a.is_accepting(state) {
            return Ok(Some(Vec::new()));
        }
        self.prepare(a, index)?;
        let mut best: Option<Vec<u8>> = None;
        for (row, lex) in a.scans(state).to_vec() {
            let bound = best.as_ref().map_or(NONE, |b| b.len() as u64);
            if let Some(text) = self.complete_scan(a, row, lex, bound)? {
                if best.as_ref().is_none_or(|b| text.len() < b.len()) {
                    best = Some(text);
                }
            }
        }
        Ok(best)
    }

    /// Computes what does not depend on the input: class bytes, terminals, nonterminals.
    fn prepare(&mut self, a: &mut Automaton, index: &TokenIndex) -> Result<(), MatchError> {
        if self.class_bytes.is_empty() {
            self.class_bytes = class_bytes(a.lexer.byte_classes(), a.classes(), index);
            let mut order: Vec<usize> = (0..self.class_bytes.len()).collect();
            order.sort_by_key(|&c| !is_token(index, self.class_bytes[c]));
            self.class_order = order;
        }
        if !self.derived {
            self.derive_nonterminals(a)?;
            self.derived = true;
        }
        Ok(())
    }

    /// The fewest bytes that end the lexeme of scan `(row, lex)` and complete what `row`
    /// expects after it, if fewer than `bound`.
    fn complete_scan(
        &mut self,
        a: &mut Automaton,
        row: RowId,
        lex: LexId,
        bound: u64,
    ) -> Result<Option<Vec<u8>>, MatchError> {
        let tails = self.tails(a, row)?;
        let Some(least_tail) = tails.values().map(|t| t.0).min() else {
            return Ok(None);
        };
        let found = self.end_lexeme(&mut a.lexer, lex, &tails, least_tail, bound)?;
        let Some((path, (_, pos, origin))) = found else {
            return Ok(None);
        };
        let mut text = path;
        self.item_rest_text(a, pos, origin, &mut text)?;
        Ok(Some(text))
    }

    /// What completing `row` costs after each terminal it expects ([`Tails`]); kept per row.
    fn tails(&mut self, a: &mut Automaton, row: RowId) -> Result<Arc<Tails>, MatchError> {
        if let Some(known) = self.tails.get(&row) {
            return Ok(known.clone());
        }
        let mut tails = Tails::default();
        let expected: Vec<u32> = a.parser.row(row).expected().to_vec();
        for t in expected {
            let waiting: Vec<(u32, RowId)> = a.parser.waiting_for_terminal(row, t).collect();
            for (pos, origin) in waiting {
                let len = self.item_rest_len(a, pos + 1, origin)?;
                let known = tails.get(&t).map_or(NONE, |k| k.0);
                if len < known {
                    tails.insert(t, (len, pos + 1, origin));
                }
            }
        }
        let tails = Arc::new(tails);
        self.tails.insert(row, tails.clone());
        Ok(tails)
    }

    /// The most bytes that complete the input after any terminal `row` expects, or `None`
    /// where one of them has no completion; kept per row.
    pub(crate) fn widest_tail(
        &mut self,
        a: &mut Automaton,
        index: &TokenIndex,
        row: RowId,
    ) -> Result<Option<u64>, MatchError> {
        if let Some(&known) = self.widest_tail.get(&row) {
            return Ok(known);
        }
        self.prepare(a, index)?;
        let tails = self.tails(a, row)?;
        let expected = a.parser.row(row).expected().len();
        let widest = (tails.len() == expected)
            .then(|| tails.values().map(|t| t.0).max().unwrap_or(0))
            .filter(|&w| w < NONE);
        self.widest_tail.insert(row, widest);
        Ok(widest)
    }

    /// At most how many bytes from any of the lexer states `ends` reach a state where its
    /// lexeme may end (none from one where it may end), `None` where a bound is not found;
    /// each state's bound is kept.
    ///
    /// One shortest-path search over the states and their successors, from those where a
    /// lexeme may end or whose bound is known, backwards: every state is expanded once,
    /// however many share their way to the end (a counted string's positions). A state
    /// that leads out of them alone is searched forwards ([`Completions::bytes_to_end_from`]).
    pub(crate) fn bytes_to_end_bound(
        &mut self,
        lexer: &mut Lexer,
        ends: &[LexId],
    ) -> Result<Option<u64>, MatchError> {
        let mut index: FxHashMap<LexId, usize> = FxHashMap::default();
        let mut nodes: Vec<LexId> = Vec::new();
        let mut preds: Vec<Vec<usize>> = Vec::new();
        let mut node_of = |x: LexId, nodes: &mut Vec<LexId>, preds: &mut Vec<Vec<usize>>| {
            *index.entry(x).or_insert_with(|| {
                nodes.push(x);
                preds.push(Vec::new());
                nodes.len() - 1
            })
        };
        let unknown: Vec<LexId> = ends
            .iter()
            .copied()
            .filter(|x| !self.to_end.contains_key(x))
            .collect();
        for &x in &unknown {
            node_of(x, &mut nodes, &mut preds);
        }
        // Every state reached, up to the ends of lexemes or known bounds, is expanded once.
        let mut expanded = 0;
        while expanded < nodes.len() && nodes.len() <= MAX_BOUND_SEARCH_STATES {
            let x = nodes[expanded];
            let from = expanded;
            expanded += 1;
            if lexer.can_end(x) || !lexer.extends(x) || self.to_end.contains_key(&x) {
                continue;
            }
            for class in 0..lexer.classes() {
                let y = lexer.next(x, class)?;
                if y != LEX_DEAD {
                    let to = node_of(y, &mut nodes, &mut preds);
                    preds[to].push(from);
                }
            }
        }
        let mut dist = vec![NONE; nodes.len()];
        let mut queue = std::collections::BinaryHeap::new();
        for (i, &x) in nodes.iter().enumerate() {
            let known = if lexer.can_end(x) {
                Some(0)
            } else {
                self.to_end.get(&x).copied()
            };
            if let Some(d) = known.filter(|&d| d < NONE) {
                dist[i] = d;
                queue.push(std::cmp::Reverse((d, i)));
            }
        }
        while let Some(std::cmp::Reverse((d, i))) = queue.pop() {
            if d > dist[i] {
                continue;
            }
            for &p in &preds[i] {
                if d + 1 < dist[p] {
                    dist[p] = d + 1;
                    queue.push(std::cmp::Reverse((d + 1, p)));
                }
            }
        }
        for &x in &unknown {
            let d = dist[index[&x]];
            let d = if d < NONE {
                d
            } else {
                self.bytes_to_end_from(lexer, x)?
            };
            self.to_end.insert(x, d);
        }
        let mut widest = 0u64;
        for x in ends {
            match self.to_end.get(x) {
                Some(&d) if d < NONE => widest = widest.max(d),
                _ => return Ok(None),
            }
        }
        Ok(Some(widest))
    }

    /// The fewest bytes from lexer state `lex` to a state where its lexeme may end (at least
    /// one), `NONE` where none is found within [`MAX_BOUND_SEARCH_STATES`].
    fn bytes_to_end_from(&mut self, lexer: &mut Lexer, lex: LexId) -> Result<u64, MatchError> {
        let mut seen: FxHashMap<LexId, ()> = FxHashMap::default();
        let mut level = vec![lex];
        let mut depth = 0u64;
        while !level.is_empty() {
            depth += 1;
            let mut next_level = Vec::new();
            for &x in &level {
                for class in 0..lexer.classes() {
                    let y = lexer.next(x, class)?;
                    if y == LEX_DEAD || seen.insert(y, ()).is_some() {
                        continue;
                    }
                    if lexer.can_end(y) {
                        return Ok(depth);
                    }
                    if seen.len() > MAX_BOUND_SEARCH_STATES {
                        return Ok(NONE);
                    }
                    next_level.push(y);
                }
            }
            level = next_level;
        }
        Ok(NONE)
    }

    /// The bytes that end the lexeme at `lex` (at least one) as the terminal whose end plus
    /// its tail costs least, below `bound`, and that tail; ties go to the end found first.
    /// The search from `lex` is [`EndSearch`]'s, shared by every row.
    #[allow(clippy::type_complexity)]
    fn end_lexeme(
        &mut self,
        lexer: &mut Lexer,
        lex: LexId,
        tails: &Tails,
        least_tail: u64,
        bound: u64,
    ) -> Result<Option<(Vec<u8>, (u64, u32, RowId))>, MatchError> {
        let mut search = self.end_searches.remove(&lex).unwrap_or_else(|| EndSearch {
            frontier: vec![lex],
            ..EndSearch::default()
        });
        let before = search.parent.len();
        // A search stopped by an error is dropped: it is not whole to its depth.
        let found = self.search_ends(&mut search, lexer, lex, tails, least_tail, bound)?;
        let found = found.map(|(end, tail)| (search.path(lex, end), tail));
        self.bytes += 16 * (search.parent.len() - before);
        self.end_searches.insert(lex, search);
        Ok(found)
    }

    /// Takes `search` deeper, a whole depth at a time, while an end further down could still
    /// cost less than the best found; returns that end's state and tail.
    #[allow(clippy::type_complexity)]
    fn search_ends(
        &self,
        search: &mut EndSearch,
        lexer: &mut Lexer,
        lex: LexId,
        tails: &Tails,
        least_tail: u64,
        bound: u64,
    ) -> Result<Option<(LexId, (u64, u32, RowId))>, MatchError> {
        let mut best: Option<(u64, LexId, (u64, u32, RowId))> = None;
        let mut read = 0;
        loop {
            for &(t, end, depth) in &search.ends[read..] {
                if let Some(&tail) = tails.get(&t) {
                    let len = depth.saturating_add(tail.0);
                    if len < best.map_or(bound, |b| b.0) {
                        best = Some((len, end, tail));
                    }
                }
            }
            read = search.ends.len();
            let limit = best.map_or(bound, |b| b.0);
            if search.frontier.is_empty() || search.depth + 1 + least_tail >= limit {
                return Ok(best.map(|(_, end, tail)| (end, tail)));
            }
            search.deepen(lexer, lex, &self.class_order, &self.class_bytes)?;
        }
    }

    /// The length of the rest of the item at `pos` (begun in row `origin`) and of what
    /// completes the input after it.
    fn item_rest_len(
        &mut self,
        a: &mut Automaton,
        pos: u32,
        origin: RowId,
    ) -> Result<u64, MatchError> {
        let (rest, lhs) = self.suffix_len(&a.parser, pos);
        if rest == NONE {
            return Ok(NONE);
        }
        if lhs == a.parser.start_nonterminal() {
            return Ok(rest);
        }
        let after = self.after_row(a, origin)?;
        Ok(after.get(&lhs).map_or(NONE, |x| rest.saturating_add(x.len)))
    }

    /// Appends the text of [`Completions::item_rest_len`].
    fn item_rest_text(
        &mut self,
        a: &mut Automaton,
        pos: u32,
        origin: RowId,
        out: &mut Vec<u8>,
    ) -> Result<(), MatchError> {
        let lhs = self.suffix_text(&a.parser, pos, out);
        if lhs != a.parser.start_nonterminal() {
            let text = self.after_text(a, origin, lhs)?;
            out.extend_from_slice(&text);
        }
        Ok(())
    }

    /// The completion after each nonterminal waited for in `row`.
    fn after_row(
        &mut self,
        a: &mut Automaton,
        row: RowId,
    ) -> Result<Arc<FxHashMap<u32, After>>, MatchError> {
        if let Some(known) = self.after.get(&row) {
            return Ok(known.clone());
        }
        let start = a.parser.start_nonterminal();
        let mut best: FxHashMap<u32, After> = FxHashMap::default();
        // Items begun in this row wait on each other: those are relaxed until nothing
        // changes; the others lead to earlier rows.
        let mut same_row: Vec<(u32, u64, u32, u32)> = Vec::new();
        let waited: Vec<u32> = a.parser.waited_nonterminals(row).collect();
        for &nt in &waited {
            let items: Vec<(u32, RowId)> = a.parser.waiting_for_nonterminal(row, nt).collect();
            for (pos, origin) in items {
                let (rest, lhs) = self.suffix_len(&a.parser, pos + 1);
                if rest == NONE {
                    continue;
                }
                let len = if lhs == start {
                    rest
                } else if origin == row {
                    same_row.push((nt, rest, lhs, pos + 1));
                    continue;
                } else {
                    let earlier = self.after_row(a, origin)?;
                    match earlier.get(&lhs) {
                        Some(x) => rest.saturating_add(x.len),
                        None => continue,
                    }
                };
                if best.get(&nt).is_none_or(|b| len < b.len) {
                    best.insert(
                        nt,
                        After {
                            len,
                            pos: pos + 1,
                            origin,
                        },
                    );
                }
            }
        }
        loop {
            let mut changed = false;
            for &(nt, rest, lhs, pos) in &same_row {
                let Some(via) = best.get(&lhs) else { continue };
                let len = rest.saturating_add(via.len);
                if best.get(&nt).is_none_or(|b| len < b.len) {
                    best.insert(
                        nt,
                        After {
                            len,
                            pos,
                            origin: row,
                        },
                    );
                    changed = true;
                }
            }
            if !changed {
                break;
            }
        }
        let best = Arc::new(best);
        self.after.insert(row, best.clone());
        Ok(best)
    }

    /// The text of the completion after `nt` waited for in `row`.
    fn after_text(
        &mut self,
        a: &mut Automaton,
        row: RowId,
        nt: u32,
    ) -> Result<Arc<[u8]>, MatchError> {
        if let Some(t) = self.after_text.get(&(row, nt)) {
            return Ok(t.clone());
        }
        let Some(&via) = self.after_row(a, row)?.get(&nt) else {
            return Ok(Arc::from(&[][..]));
        };
        let mut text = Vec::new();
        self.item_rest_text(a, via.pos, via.origin, &mut text)?;
        let text: Arc<[u8]> = text.into();
        self.bytes += text.len();
        self.after_text.insert((row, nt), text.clone());
        Ok(text)
    }

    /// The shortest length of the symbols from `pos` to the end of their production, and
    /// the production's left-hand side.
    fn suffix_len(&mut self, p: &Parser, mut pos: u32) -> (u64, u32) {
        let mut len = 0u64;
        loop {
            let add = match p.sym_at(pos) {
                SymAt::End => return (len, p.lhs_at(pos)),
                SymAt::Terminal(t) => self.terminal_len(p, t),
                SymAt::Nonterminal(nt) => self.nonterminal_len(p, nt),
            };
            len = len.saturating_add(add);
            pos += 1;
        }
    }

    /// Appends the shortest text of the symbols from `pos` to the end of their production;
    /// returns the production's left-hand side.
    fn suffix_text(&mut self, p: &Parser, mut pos: u32, out: &mut Vec<u8>) -> u32 {
        loop {
            match p.sym_at(pos) {
                SymAt::End => return p.lhs_at(pos),
                SymAt::Terminal(t) => {
                    if let Some(Some(text)) = self.terminals.get(&t) {
                        out.extend_from_slice(text);
                    }
                }
                SymAt::Nonterminal(nt) => {
                    let text = self.nonterminal_text(p, nt);
                    out.extend_from_slice(&text);
                }
            }
            pos += 1;
        }
    }

    fn terminal_len(&self, p: &Parser, t: u32) -> u64 {
        if p.terminal_is_nullable(t) {
            return 0;
        }
        match self.terminals.get(&t) {
            Some(Some(text)) => text.len() as u64,
            _ => NONE,
        }
    }

    /// The shortest derivation length of `nt`; a family nonterminal created after the
    /// fixpoint (families grow as inputs reach them) is derived from its members then.
    fn nonterminal_len(&mut self, p: &Parser, nt: u32) -> u64 {
        let known = self.nonterminals.get(nt as usize).copied();
        match known {
            Some((len, Derivation::Unknown)) if p.family_shape(nt).is_none() => return len,
            Some((len, Derivation::Production(_) | Derivation::Family)) => return len,
            _ => {}
        }
        let len = self.family_len(p, nt);
        if self.nonterminals.len() <= nt as usize {
            self.nonterminals
                .resize(nt as usize + 1, (NONE, Derivation::Unknown));
        }
        self.nonterminals[nt as usize] = (len, Derivation::Family);
        len
    }

    /// The shortest derivation of a family nonterminal from its members' (see
    /// [`Completions::family_items`]).
    fn family_len(&self, p: &Parser, nt: u32) -> u64 {
        let len_of = |n: u32| self.nonterminals.get(n as usize).map_or(NONE, |x| x.0);
        match self.family_items(p, nt, &len_of) {
            Some((items, separators)) => {
                let sep = p
                    .family_shape(nt)
                    .and_then(|f| f.family.separator)
                    .map_or(0, len_of);
                items
                    .iter()
                    .fold(sep.saturating_mul(separators), |acc, &m| {
                        acc.saturating_add(len_of(m))
                    })
            }
            None => NONE,
        }
    }

    /// The items of a family nonterminal's shortest derivation, in order, and how many
    /// separators go between (and before, after an earlier item): its required members not
    /// used yet, or, when none is left but one item is needed, the cheapest single one.
    fn family_items(
        &self,
        p: &Parser,
        nt: u32,
        len_of: &dyn Fn(u32) -> u64,
    ) -> Option<(Vec<u32>, u64)> {
        let shape = p.family_shape(nt)?;
        let family = shape.family;
        let mut items: Vec<u32> = (0..family.members.len())
            .filter(|&j| shape.is_required(j) && !shape.is_used(j))
            .map(|j| family.members[j].0)
            .collect();
        if items.is_empty() && !shape.started && !family.allow_empty {
            let cheapest = (0..family.members.len())
                .filter(|&j| !shape.is_used(j))
                .map(|j| family.members[j].0)
                .chain(family.extra)
                .min_by_key(|&m| len_of(m))?;
            items.push(cheapest);
        }
        if items.len() > 1 && family.separator.is_none() {
            return None;
        }
        let separators = if items.is_empty() {
            0
        } else {
            (items.len() - 1 + usize::from(shape.started)) as u64
        };
        if separators > 0 && family.separator.is_none() {
            return None;
        }
        Some((items, separators))
    }

    /// The shortest text `nt` derives.
    fn nonterminal_text(&mut self, p: &Parser, nt: u32) -> Arc<[u8]> {
        if let Some(t) = self.nonterminal_text.get(&nt) {
            return t.clone();
        }
        let _ = self.nonterminal_len(p, nt);
        let mut text = Vec::new();
        match self.nonterminals[nt as usize].1 {
            Derivation::Unknown => {}
            Derivation::Production(pos) => {
                self.suffix_text(p, pos, &mut text);
            }
            Derivation::Family => {
                let lens: Vec<u64> = self.nonterminals.iter().map(|x| x.0).collect();
                let len_of = |n: u32| lens.get(n as usize).copied().unwrap_or(NONE);
                if let Some((items, _)) = self.family_items(p, nt, &len_of) {
                    let shape = p.family_shape(nt);
                    let started = shape.as_ref().is_some_and(|s| s.started);
                    let separator = shape.and_then(|s| s.family.separator);
                    for (i, m) in items.into_iter().enumerate() {
                        if i > 0 || started {
                            if let Some(sep) = separator {
                                let s = self.nonterminal_text(p, sep);
                                text.extend_from_slice(&s);
                            }
                        }
                        let t = self.nonterminal_text(p, m);
                        text.extend_from_slice(&t);
                    }
                }
            }
        }
        let text: Arc<[u8]> = text.into();
        self.nonterminal_text.insert(nt, text.clone());
        text
    }

    /// Shortest lexemes of every terminal, then the shortest derivation of every
    /// nonterminal, by a fixpoint: a length only ever goes down, and only strictly, so the
    /// derivations it records never loop.
    fn derive_nonterminals(&mut self, a: &mut Automaton) -> Result<(), MatchError> {
        let count = a.parser.nonterminal_count();
        let mut terminals = Vec::new();
        for nt in 0..count as u32 {
            for &first in a.parser.productions_of(nt) {
                terminals.extend(a.parser.production(first).filter_map(|sym| match sym {
                    SymAt::Terminal(t) => Some(t),
                    _ => None,
                }));
            }
        }
        terminals.sort_unstable();
        terminals.dedup();
        for t in terminals {
            self.shortest_lexeme(a, t)?;
        }
        self.nonterminals = vec![(NONE, Derivation::Unknown); count];
        loop {
            let mut changed = false;
            for nt in 0..count as u32 {
                let mut best = self.nonterminals[nt as usize];
                if a.parser.family_shape(nt).is_some() {
                    let len = self.family_len(&a.parser, nt);
                    if len < best.0 {
                        best = (len, Derivation::Family);
                    }
                } else {
                    for &first in a.parser.productions_of(nt) {
                        let (len, _) = self.suffix_len_fixed(&a.parser, first);
                        if len < best.0 {
                            best = (len, Derivation::Production(first));
                        }
                    }
                }
                if best.0 < self.nonterminals[nt as usize].0 {
                    if best.0 > MAX_COMPLETION_BYTES {
                        continue;
                    }
                    self.nonterminals[nt as usize] = best;
                    changed = true;
                }
            }
            if !changed {
                return Ok(());
            }
        }
    }

    /// As [`Completions::suffix_len`] during the fixpoint, reading lengths as they stand.
    fn suffix_len_fixed(&self, p: &Parser, mut pos: u32) -> (u64, u32) {
        let mut len = 0u64;
        loop {
            let add = match p.sym_at(pos) {
                SymAt::End => return (len, p.lhs_at(pos)),
                SymAt::Terminal(t) => self.terminal_len(p, t),
                SymAt::Nonterminal(nt) => self.nonterminals.get(nt as usize).map_or(NONE, |x| x.0),
            };
            len = len.saturating_add(add);
            pos += 1;
        }
    }

    /// The shortest lexeme of terminal `t`, by a search from its start state.
    fn shortest_lexeme(&mut self, a: &mut Automaton, t: u32) -> Result<(), MatchError> {
        if self.terminals.contains_key(&t) {
            return Ok(());
        }
        if a.parser.terminal_is_nullable(t) {
            self.terminals.insert(t, Some(Arc::from(&[][..])));
            return Ok(());
        }
        let start = a.lexer.start(&[t])?;
        let tails = FxHashMap::from_iter([(t, (0u64, 0u32, 0 as RowId))]);
        let found = self.end_lexeme(&mut a.lexer, start, &tails, 0, NONE)?;
        self.terminals
            .insert(t, found.map(|(path, _)| Arc::from(path)));
        Ok(())
    }
}

impl EndSearch {
    /// Expands every state of the frontier: the states one byte further, and the ends among
    /// them, in the order a breadth-first search from `lex` trying classes in `order` finds them.
    fn deepen(
        &mut self,
        lexer: &mut Lexer,
        lex: LexId,
        order: &[usize],
        class_bytes: &[u8],
    ) -> Result<(), MatchError> {
        let frontier = std::mem::take(&mut self.frontier);
        self.depth += 1;
        for state in frontier {
            for &class in order {
                let next = lexer.next(state, class)?;
                if next == LEX_DEAD || next == lex || self.parent.contains_key(&next) {
                    continue;
                }
                self.parent.insert(next, (state, class_bytes[class]));
                if self.parent.len() > MAX_SEARCH_STATES {
                    return Err(MatchError::LimitExceeded {
                        budget: Budget::CompletionSearch,
                        limit: MAX_SEARCH_STATES,
                    });
                }
                for &t in lexer.accepts(next) {
                    if self.ended.insert(t) {
                        self.ends.push((t, next, self.depth));
                    }
                }
                if lexer.extends(next) {
                    self.frontier.push(next);
                }
            }
        }
        Ok(())
    }

    /// The bytes from `lex` to `end`, a state the search reached.
    fn path(&self, lex: LexId, end: LexId) -> Vec<u8> {
        let mut path = Vec::new();
        let mut at = end;
        while at != lex {
            let (from, byte) = self.parent[&at];
            path.push(byte);
            at = from;
        }
        path.reverse();
        path
    }
}

/// A byte of every class, the first of: space, `a`, `0`, another printable ASCII byte, any;
/// and among those, one the vocabulary has as a token of its own where the class holds one,
/// so that the texts made of them can be tokenized (a vocabulary may spell only some
/// continuation bytes of UTF-8 alone). Texts made of them stay readable and take few tokens.
fn class_bytes(byte_class: &[u8; 256], classes: usize, index: &TokenIndex) -> Vec<u8> {
    let mut rep: Vec<Option<u8>> = vec![None; classes];
    let preferred = || {
        [b' ', b'a', b'0']
            .into_iter()
            .chain(0x21..0x7f)
            .chain(0..=255u8)
    };
    for b in preferred()
        .filter(|&b| is_token(index, b))
        .chain(preferred())
    {
        let class = byte_class[b as usize] as usize;
        if rep[class].is_none() {
            rep[class] = Some(b);
        }
    }
    rep.into_iter().map(|b| b.unwrap_or(0)).collect()
}

/// Whether the vocabulary has `byte` alone as a token.
fn is_token(index: &TokenIndex, byte: u8) -> bool {
    index
        .child(0, byte)
        .is_some_and(|node| !index.tokens_of(node).is_empty())
}

/// `text` as the longest vocabulary token at each position, or `None` where no token
/// spells the next byte.
fn tokenize(index: &TokenIndex, text: &[u8]) -> Option<Vec<u32>> {
    let mut tokens = Vec::new();
    let mut at = 0;
    while at < text.len() {
        let mut node = 0usize;
        let mut best: Option<(usize, u32)> = None;
        for (i, &b) in text[at..].iter().enumerate() {
            match index.child(node, b) {
                Some(child) => {
                    node = child;
                    if let Some(&t) = index.tokens_of(node).first() {
                        best = Some((i + 1, t));
                    }
                }
                None => break,
            }
        }
        let (len, token) = best?;
        tokens.push(token);
        at += len;
    }
    Some(tokens)
}

/// Lexer states [`token_ends`] may list: beyond them (the key position of an object of
/// thousands of members) it gives up, and the budget walks the trie.
const MAX_TOKEN_ENDS: usize = 4096;

/// The lexer states a token of at most `longest` bytes read from `lex` can end in while its
/// lexeme goes on: reached without passing a state where the lexeme may end (one where it may
/// end is listed, and not gone past). Whatever the vocabulary: a superset of where its tokens
/// end. `None` past [`MAX_TOKEN_ENDS`].
///
/// From a state of one scan `(row, lex)`, a token that ends in such a state `x` leads to the
/// same automaton state as every other token ending there (its row is unchanged until its
/// last byte, see `Automaton::after_lexeme_bytes`), so the completions after the bulk of the
/// vocabulary (a string's inside) are read off a handful of states.
pub(crate) fn token_ends(
    lexer: &mut Lexer,
    lex: LexId,
    longest: u32,
) -> Result<Option<Vec<LexId>>, MatchError> {
    let classes = lexer.classes();
    let mut seen: FxHashMap<LexId, ()> = FxHashMap::default();
    let mut ends: Vec<LexId> = Vec::new();
    let mut queue: VecDeque<(LexId, u32)> = VecDeque::from([(lex, 0)]);
    while let Some((x, depth)) = queue.pop_front() {
        if depth >= longest {
            continue;
        }
        for class in 0..classes {
            let y = lexer.next(x, class)?;
            if y == LEX_DEAD || seen.insert(y, ()).is_some() {
                continue;
            }
            ends.push(y);
            if ends.len() > MAX_TOKEN_ENDS {
                return Ok(None);
            }
            if !lexer.can_end(y) && lexer.extends(y) {
                queue.push_back((y, depth + 1));
            }
        }
    }
    Ok(Some(ends))
}

#[cfg(test)]
mod tests;
mod widest;
