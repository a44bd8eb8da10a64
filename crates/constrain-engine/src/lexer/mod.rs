//! The lexer: a lazily built DFA over the terminals' NFAs (see `terminal`).
//!
//! A lexer state is the set of `(terminal, NFA state)` pairs still alive after the bytes read
//! since a lexeme started. States are interned, so two rows that expect the same terminals share
//! lexer states and their transitions. Every NFA state kept in a set can still reach a match, so
//! a non-empty lexer state always has a completion. The byte classes, which every terminal must
//! agree with from the start, come from the regular expressions themselves.

mod classes;
mod radius;
mod signature;
#[cfg(test)]
mod tests;

use rustc_hash::{FxHashMap, FxHashSet};

use crate::bytes::{alphabet_of, BYTE_ALPHABETS, TEXT};
use crate::error::{Budget, GrammarError, MatchError};
use crate::grammar::Terminal;
use crate::interner::IdsByHash;
use crate::limits::{Deadline, Limits};
use crate::terminal::{ByteSet, Terminals};
use crate::transitions::TransitionTable;

use classes::{byte_classes, mark_byte_boundaries, CharClasses};
use radius::{AfterSymbol, Alphabet, Group};
use signature::Renumbering;

/// Index of a lexer state.
pub(crate) type LexId = u32;

/// The empty lexer state: nothing can follow.
pub(crate) const LEX_DEAD: LexId = 0;

pub(super) const UNKNOWN: u32 = u32::MAX;

/// Terminal NFAs plus the lazily built lexer DFA.
pub(crate) struct Lexer {
    terminals: Terminals,
    /// Byte -> equivalence class, over every terminal.
    byte_class: [u8; 256],
    /// One byte of every class.
    class_rep: Vec<u8>,
    states: Vec<Box<[(u32, u32)]>>,
    accepts: Vec<Box<[u32]>>,
    /// Per state: whether a lexeme may end there (`accepts` is not empty), kept apart for the
    /// walks, which ask at every trie node.
    can_end: Vec<bool>,
    /// Whether any byte can extend the lexeme (some NFA state is not a match state).
    extends: Vec<bool>,
    ids: IdsByHash,
    /// Per state and byte class: the next state, `UNKNOWN` until computed.
    trans: TransitionTable,
    starts: FxHashMap<Box<[u32]>, LexId>,
    max_states: usize,
    /// Per byte alphabet: the classes of its bytes.
    alphabet_classes: [Vec<usize>; BYTE_ALPHABETS],
    /// What the walks asked about each state, kept once found.
    memo: Memo,
    /// The string characters as byte classes (`None` until first asked).
    char_classes: Option<CharClasses>,
    /// The string characters beyond ASCII as byte classes (`None` until first asked).
    non_ascii_char_classes: Option<CharClasses>,
    /// See `Automaton::set_deadline`.
    deadline: Option<Deadline>,
    /// Reused by [`Lexer::signature`].
    renumbering: Renumbering,
    /// Reused for the members of the next state.
    scratch: Vec<(u32, u32)>,
}

/// The lexer's memo tables: what the mask walks asked about a lexer state (or an NFA state),
/// kept once found, since the same states are asked about from every automaton state that
/// holds them. Per-state tables have one entry per lexer state, `None` until asked.
#[derive(Default)]
struct Memo {
    /// Per state and byte alphabet: its radius.
    byte_radius: Vec<[Option<u8>; BYTE_ALPHABETS]>,
    /// Per state: whether it is free in strings.
    free_in_strings: Vec<Option<bool>>,
    /// Per state: whether it is free in string characters beyond ASCII.
    free_in_non_ascii: Vec<Option<bool>>,
    /// Per state: whether a control byte after string characters kills it.
    controls_die: Vec<Option<bool>>,
    /// Per state: its string radius.
    string_radius: Vec<Option<u8>>,
    /// Per state: its string radius when exact (the outer `None` until asked).
    exact_string_radius: Vec<Option<Option<u8>>>,
    /// Per state: the bytes where some member's transitions begin or end (see
    /// [`Lexer::cuts`]).
    cuts: Vec<Option<ByteSet>>,
    /// Per NFA state `(terminal, state)`: whether it comes back to itself after every string
    /// character (see [`Lexer::loops_on_string_chars`]), or, where the key's third field is
    /// true, after every one beyond ASCII.
    loops_in_strings: FxHashMap<(u32, u32, bool), bool>,
    /// Per NFA state `(terminal, state)`: the states it lives through string characters
    /// with, if any (see [`Lexer::surviving_group`]).
    surviving_groups: FxHashMap<(u32, u32), Option<Group>>,
}

impl Memo {
    /// Room for one more lexer state, nothing known about it yet.
    fn add_state(&mut self) {
        self.byte_radius.push([None; BYTE_ALPHABETS]);
        self.free_in_strings.push(None);
        self.free_in_non_ascii.push(None);
        self.controls_die.push(None);
        self.string_radius.push(None);
        self.exact_string_radius.push(None);
        self.cuts.push(None);
    }
}

impl Lexer {
    /// A lexer over `terminals`, whose NFAs are built within the NFA budgets of `limits` as
    /// they are first needed.
    pub(crate) fn new(
        terminals: Vec<Terminal>,
        limits: &Limits,
        deadline: &Deadline,
    ) -> Result<Lexer, GrammarError> {
        let mut boundary = [false; 256];
        let mut spelled = FxHashSet::default();
        for terminal in &terminals {
            deadline.check()?;
            let mut look = None;
            terminal.for_each_hir(|hir| {
                if !hir.properties().look_set().is_empty() {
                    look.get_or_insert_with(|| hir.to_string());
                }
                mark_byte_boundaries(hir, &mut boundary, &mut spelled);
            });
            if let Some(hir) = look {
                return Err(GrammarError::Unsupported {
                    what: format!("look-around assertion in regular expression {hir}"),
                });
            }
        }
        let (byte_class, class_rep) = byte_classes(&boundary);
        let alphabet_classes = std::array::from_fn(|a| {
            let mut classes: Vec<usize> = (0..=255u8)
                .filter(|&b| usize::from(alphabet_of(b)) <= a)
                .map(|b| byte_class[b as usize] as usize)
                .collect();
            classes.sort_unstable();
            classes.dedup();
            classes
        });
        let classes = class_rep.len();
        let mut lexer = Lexer {
            terminals: Terminals::new(terminals, limits, byte_class),
            byte_class,
            class_rep,
            states: Vec::new(),
            accepts: Vec::new(),
            can_end: Vec::new(),
            extends: Vec::new(),
            ids: IdsByHash::default(),
            trans: TransitionTable::new(classes, UNKNOWN),
            starts: FxHashMap::default(),
            max_states: limits.max_lexer_states,
            alphabet_classes,
            memo: Memo::default(),
            char_classes: None,
            non_ascii_char_classes: None,
            deadline: None,
            renumbering: Renumbering::default(),
            scratch: Vec::new(),
        };
        let dead = lexer
            .intern(&mut Vec::new())
            .map_err(|_| GrammarError::LimitExceeded {
                budget: Budget::LexerStates,
                limit: limits.max_lexer_states,
            })?;
        debug_assert_eq!(dead, LEX_DEAD);
        Ok(lexer)
    }

    pub(crate) fn set_deadline(&mut self, deadline: Option<Deadline>) {
        self.terminals.set_deadline(deadline);
        self.deadline = deadline;
    }

    /// The classes of the text bytes.
    pub(crate) fn text_classes(&self) -> &[usize] {
        &self.alphabet_classes[TEXT]
    }

    /// Number of byte equivalence classes.
    pub(crate) fn classes(&self) -> usize {
        self.class_rep.len()
    }

    /// The equivalence class of every byte.
    pub(crate) fn byte_classes(&self) -> &[u8; 256] {
        &self.byte_class
    }

    /// The byte of `class` if the class has exactly one.
    pub(crate) fn single_byte_of_class(&self, class: usize) -> Option<u8> {
        let byte = self.class_rep[class];
        let next = self.class_rep.get(class + 1).map_or(256, |&b| b as usize);
        (next == byte as usize + 1).then_some(byte)
    }

    /// Terminals whose lexeme may end in `state`.
    pub(crate) fn accepts(&self, state: LexId) -> &[u32] {
        &self.accepts[state as usize]
    }

    /// Whether a lexeme walk stops at `state`: the lexeme is dead there, or may end.
    fn stops_walk(&self, state: LexId) -> bool {
        state == LEX_DEAD || self.can_end[state as usize]
    }

    /// Whether a lexeme may end in `state`.
    #[inline]
    pub(crate) fn can_end(&self, state: LexId) -> bool {
        self.can_end[state as usize]
    }

    /// Whether a lexeme in `state` can still grow.
    pub(crate) fn extends(&self, state: LexId) -> bool {
        self.extends[state as usize]
    }

    /// The state at the start of a lexeme that may be any of `terminals` (sorted).
    pub(crate) fn start(&mut self, terminals: &[u32]) -> Result<LexId, MatchError> {
        if let Some(&id) = self.starts.get(terminals) {
            return Ok(id);
        }
        let mut set = std::mem::take(&mut self.scratch);
        set.clear();
        self.terminals.new_set();
        for &t in terminals {
            self.terminals.start(t, &mut set)?;
        }
        self.terminals.enter_rests(&mut set)?;
        let id = self.intern(&mut set);
        self.scratch = set;
        let id = id?;
        self.starts.insert(terminals.into(), id);
        Ok(id)
    }

    /// The state after reading a byte of class `class` in `state`.
    #[inline]
    pub(crate) fn next(&mut self, state: LexId, class: usize) -> Result<LexId, MatchError> {
        let known = self.trans.get(state as usize, class);
        if known != UNKNOWN {
            return Ok(known);
        }
        self.build_next(state, class)
    }

    /// [`Lexer::next`] for a transition not built yet (kept out of line: the lookup above
    /// runs for every byte of every walk, and is worth inlining on its own).
    #[inline(never)]
    fn build_next(&mut self, state: LexId, class: usize) -> Result<LexId, MatchError> {
        if let Some(deadline) = &self.deadline {
            deadline.check_match()?;
        }
        let mut set = std::mem::take(&mut self.scratch);
        let id = self
            .step_members(state, class, &mut set)
            .and_then(|()| self.intern(&mut set));
        self.scratch = set;
        let id = id?;
        self.share_with_run(state, class, id);
        Ok(id)
    }

    /// Fills `set` with the members that the members of `state` step to on `class`, each
    /// once (unsorted), with the rests of the heads read to their end entered.
    fn step_members(
        &mut self,
        state: LexId,
        class: usize,
        set: &mut Vec<(u32, u32)>,
    ) -> Result<(), MatchError> {
        let byte = self.class_rep[class];
        set.clear();
        self.terminals.new_set();
        for &(t, s) in self.states[state as usize].iter() {
            self.terminals.step_and_close(t, s, byte, set);
        }
        self.terminals.enter_rests(set)
    }

    /// Records transition `id` of `state` on `class`, and on the classes around it that no
    /// member of `state` tells apart from it (no member's byte range begins or ends between
    /// them): a string body steps alike on every letter, digit and punctuation class the
    /// grammar's keys and literals cut the bytes into, and builds that step once, not per
    /// class.
    fn share_with_run(&mut self, state: LexId, class: usize, id: LexId) {
        let cuts = self.cuts(state);
        let run = self.run_around(class, &cuts);
        self.trans.row_mut(state as usize)[run].fill(id);
    }

    /// The bytes where some member of `state` may step differently than on the byte before
    /// (the ends of its transitions' byte ranges).
    fn cuts(&mut self, state: LexId) -> ByteSet {
        if let Some(cuts) = self.memo.cuts[state as usize] {
            return cuts;
        }
        let mut cuts = ByteSet::default();
        for &(t, s) in self.states[state as usize].iter() {
            self.terminals.mark_cuts(t, s, &mut cuts);
        }
        self.memo.cuts[state as usize] = Some(cuts);
        cuts
    }

    /// The classes next to `class`, itself included, with no byte of `cuts` between them and
    /// it.
    fn run_around(&self, class: usize, cuts: &ByteSet) -> std::ops::Range<usize> {
        let mut start = class;
        while start > 0 && !cuts.contains(self.class_rep[start]) {
            start -= 1;
        }
        let mut end = class + 1;
        while end < self.class_rep.len() && !cuts.contains(self.class_rep[end]) {
            end += 1;
        }
        start..end
    }

    /// How many terminals `state` has members of.
    pub(crate) fn terminals_in(&self, state: LexId) -> usize {
        self.states[state as usize]
            .chunk_by(|a, b| a.0 == b.0)
            .count()
    }

    /// The states holding the members of `state` of one terminal each, when it has members of
    /// at least `min_terminals` terminals (none otherwise). A member steps alone, so what a
    /// lexeme walk finds from `state` is the union of what it finds from each part; the parts
    /// of the key position of an object (one per member that may come next) recur in every
    /// state of that object whatever members came before.
    ///
    /// Members that survive any text byte (keys of `patternProperties` regions such as
    /// "holds `hipchat` and not `github`") are one part together: each would read most of the
    /// vocabulary in a walk of its own, where together they read it once. A state of only such
    /// members is not split.
    pub(crate) fn parts_by_terminal(
        &mut self,
        state: LexId,
        min_terminals: usize,
    ) -> Result<Vec<LexId>, MatchError> {
        if self.terminals_in(state) < min_terminals {
            return Ok(Vec::new());
        }
        let members = &self.states[state as usize];
        let groups: Vec<Vec<(u32, u32)>> = members
            .chunk_by(|a, b| a.0 == b.0)
            .map(<[(u32, u32)]>::to_vec)
            .collect();
        let mut parts = Vec::with_capacity(groups.len());
        let mut long_lived: Vec<(u32, u32)> = Vec::new();
        for mut group in groups {
            let part = self.intern(&mut group)?;
            let after_text = self.after_any_symbol(part, Alphabet::Bytes(TEXT))?;
            if !matches!(after_text, AfterSymbol::Bad) {
                long_lived.extend_from_slice(&group);
            } else {
                parts.push(part);
            }
        }
        if !long_lived.is_empty() {
            if parts.is_empty() {
                return Ok(Vec::new());
            }
            parts.push(self.intern(&mut long_lived)?);
        }
        Ok(parts)
    }

    fn intern(&mut self, set: &mut Vec<(u32, u32)>) -> Result<LexId, MatchError> {
        // Mostly sorted runs already (members come in order, each step's closure sorted):
        // the stable sort merges runs.
        set.sort();
        set.dedup();
        let hash = IdsByHash::hash_of(set.as_slice());
        if let Some(id) = self
            .ids
            .find(hash, |id| self.states[id as usize][..] == set[..])
        {
            return Ok(id);
        }
        if self.states.len() >= self.max_states {
            return Err(MatchError::LimitExceeded {
                budget: Budget::LexerStates,
                limit: self.max_states,
            });
        }
        let id = self.states.len() as LexId;
        let mut accepts: Vec<u32> = set
            .iter()
            .filter(|&&(t, s)| self.terminals.is_match(t, s))
            .map(|&(t, _)| t)
            .collect();
        accepts.dedup();
        self.extends.push(accepts.len() < set.len());
        self.memo.add_state();
        self.ids.insert(hash, id);
        self.states.push(set.as_slice().into());
        self.can_end.push(!accepts.is_empty());
        self.accepts.push(accepts.into());
        self.trans.push_row();
        Ok(id)
    }

    /// Number of lexer states built so far.
    pub(crate) fn state_count(&self) -> usize {
        self.states.len()
    }
}
