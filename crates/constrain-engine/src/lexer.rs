//! The lexer: a lazily built DFA over the terminals' NFAs (see `terminal`).
//!
//! A lexer state is the set of `(terminal, NFA state)` pairs still alive after the bytes read
//! since a lexeme started. States are interned, so two rows that expect the same terminals share
//! lexer states and their transitions. Every NFA state kept in a set can still reach a match, so
//! a non-empty lexer state always has a completion. The byte classes, which every terminal must
//! agree with from the start, come from the regular expressions themselves.

use std::sync::Arc;

use regex_automata::nfa::thompson::State;
use regex_automata::util::primitives::StateID;
use regex_syntax::hir::{Class, Hir, HirKind};
use regex_syntax::utf8::Utf8Sequences;
use rustc_hash::{FxHashMap, FxHashSet};

use crate::error::{GrammarError, MatchError};
use crate::grammar::Terminal;
use crate::interner::IdsByHash;
use crate::limits::{Deadline, Limits};
use crate::terminal::{ByteSet, Terminals};
use crate::text_run::{
    radius_by_successors, radius_within, MAX_EXPLORED as MAX_TEXT_EXPLORED, MAX_RADIUS,
};
use crate::token_index::{alphabet_of, BYTE_ALPHABETS, TEXT};
use crate::transitions::TransitionTable;

/// NFA states `(terminal, state)` that live through string characters together (see
/// [`Lexer::surviving_group`]), sorted.
type Group = Arc<[(u32, u32)]>;

/// Index of a lexer state.
pub(crate) type LexId = u32;

/// The empty lexer state: nothing can follow.
pub(crate) const LEX_DEAD: LexId = 0;

const UNKNOWN: u32 = u32::MAX;

/// NFA states of one terminal in a lexer state above which [`Lexer::radius`] does not look
/// for a radius (it is 0): every state it would explore is a set about as large, built for
/// each symbol, which costs more than the walk a radius saves (an unanchored `pattern` under
/// a `maxLength` makes sets of hundreds of states of one terminal). The key position of an
/// object has many terminals with a few states each, and keeps its radius.
const LARGE_SET: usize = 32;

/// Printable ASCII bytes but `"` and `\`: the string characters of one byte that every JSON
/// string may hold unescaped.
const ASCII_STRING_BYTES: u32 = 93;

/// Most NFA states one [`Lexer::signature`] describes; a lexer state whose reachable graph is
/// larger has no signature.
const MAX_SIGNATURE_STATES: usize = 4096;

/// Lexer states one [`Lexer::string_radius`] explores where characters lead to different
/// states before settling for the depth reached. The key position of an object that allows
/// undeclared keys has a state per prefix of its declared keys, all surviving any string;
/// exploring them all gives it the full radius, so its lexeme walk takes the short string
/// tokens at once (see `mask`).
const MAX_STRING_EXPLORED: usize = 128;

/// Characters a counted member has left before its count matters (see
/// `Terminals::survives_as_its_nfa_for`) under which its radius is found by following its
/// counted states to their end rather than capped there: exact, so the last characters of a
/// string with a `maxLength` are decided by one mask of that count (see
/// [`Lexer::exact_string_radius`]), for at most this many more lexer states.
const NEAR_COUNT_LIMIT: u8 = 16;

/// Whether a counted state's radius, capped at `room` where its uncounted state's is `free`,
/// is a cap farther from the count's limit than [`NEAR_COUNT_LIMIT`]: more characters may
/// follow, and the radius is not followed to the limit.
fn capped_far_from_limit(free: u8, room: u8) -> bool {
    free > room && room >= NEAR_COUNT_LIMIT
}

/// The last transition [`Lexer::next_alike`] built: from which state, to which, and where each
/// member stepped.
#[derive(Default)]
struct StepMemo {
    last: Option<(LexId, LexId)>,
    last_targets: Vec<u32>,
    /// Scratch for the targets of the class at hand.
    targets: Vec<u32>,
}

/// What a radius counts: the bytes of one byte alphabet (see `token_index::alphabet_of`), or
/// whole string characters.
#[derive(Clone, Copy)]
enum Alphabet {
    Bytes(usize),
    String,
}

/// Where every symbol of an [`Alphabet`] leads from a lexer state.
enum AfterSymbol {
    /// Some symbol kills or ends the lexeme on the way.
    Bad,
    /// Every symbol leads to this state.
    Same(LexId),
    /// Symbols lead to different states.
    Various,
}

/// Whether sorted `set` holds every member of `group`.
fn holds_all(set: &[(u32, u32)], group: &[(u32, u32)]) -> bool {
    group.iter().all(|member| set.binary_search(member).is_ok())
}

/// The string characters as byte classes: per UTF-8 sequence of [`STRING_CHAR_SEQUENCES`], per
/// byte of it, the classes its range spans. Stepping a set of states through them byte by
/// byte reaches every state some character leads to without spelling out every sequence of
/// classes, which multiply where patterns split the UTF-8 ranges finely.
type CharClasses = std::sync::Arc<[Box<[Box<[usize]>]>]>;

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
    /// Per state and byte alphabet: its radius (`None` until asked).
    byte_radius: Vec<[Option<u8>; BYTE_ALPHABETS]>,
    /// Per state: whether it is free in strings (`None` until asked).
    free_in_strings: Vec<Option<bool>>,
    /// Per NFA state `(terminal, state)`: whether it comes back to itself after every string
    /// character (see [`Lexer::loops_on_string_chars`]), or, where the key's third field is
    /// true, after every one beyond ASCII.
    loops_in_strings: FxHashMap<(u32, u32, bool), bool>,
    /// Per state: whether it is free in string characters beyond ASCII (`None` until asked).
    free_in_non_ascii: Vec<Option<bool>>,
    /// Per NFA state `(terminal, state)`: the states it lives through string characters
    /// with, if any (see [`Lexer::surviving_group`]).
    surviving_groups: FxHashMap<(u32, u32), Option<Group>>,
    /// Per state: whether a control byte after string characters kills it (`None` until
    /// asked).
    controls_die: Vec<Option<bool>>,
    /// Per state: its string radius (`None` until asked).
    string_radius: Vec<Option<u8>>,
    /// Per state: its string radius when exact (the outer `None` until asked).
    exact_string_radius: Vec<Option<Option<u8>>>,
    /// Per state: the bytes where some member's transitions begin or end (`None` until
    /// asked; see [`Lexer::cuts`]).
    cuts: Vec<Option<ByteSet>>,
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

/// NFA state ids renumbered in discovery order, for [`Lexer::signature`]: a slot per NFA
/// state, valid while its stamp is the current round's, so no map is hashed or cleared.
#[derive(Debug, Default)]
struct Renumbering {
    number: Vec<u32>,
    stamp: Vec<u32>,
    round: u32,
}

impl Renumbering {
    /// Forgets every number, for an NFA of `states` states.
    fn start(&mut self, states: usize) {
        if self.stamp.len() < states {
            self.stamp.resize(states, 0);
            self.number.resize(states, 0);
        }
        self.round = self.round.wrapping_add(1);
        if self.round == 0 {
            self.stamp.fill(0);
            self.round = 1;
        }
    }

    fn get(&self, state: u32) -> Option<u32> {
        let i = state as usize;
        (self.stamp[i] == self.round).then(|| self.number[i])
    }

    fn set(&mut self, state: u32, number: u32) {
        let i = state as usize;
        self.stamp[i] = self.round;
        self.number[i] = number;
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
            byte_radius: Vec::new(),
            free_in_strings: Vec::new(),
            loops_in_strings: FxHashMap::default(),
            free_in_non_ascii: Vec::new(),
            surviving_groups: FxHashMap::default(),
            controls_die: Vec::new(),
            string_radius: Vec::new(),
            exact_string_radius: Vec::new(),
            cuts: Vec::new(),
            char_classes: None,
            non_ascii_char_classes: None,
            deadline: None,
            renumbering: Renumbering::default(),
            scratch: Vec::new(),
        };
        let dead = lexer
            .intern(&mut Vec::new())
            .map_err(|_| GrammarError::LimitExceeded {
                what: "lexer states",
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
        if let Some(cuts) = self.cuts[state as usize] {
            return cuts;
        }
        let mut cuts = ByteSet::default();
        for &(t, s) in self.states[state as usize].iter() {
            self.terminals.mark_cuts(t, s, &mut cuts);
        }
        self.cuts[state as usize] = Some(cuts);
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

    /// The radius of `state` over byte alphabet `alphabet` (see `text_run` and
    /// `token_index::alphabet_of`): bad states are dead or accepting (where a lexeme walk
    /// stops).
    pub(crate) fn radius(&mut self, state: LexId, alphabet: usize) -> Result<u8, MatchError> {
        if let Some(known) = self.byte_radius[state as usize][alphabet] {
            return Ok(known);
        }
        if let Some(radius) = self.counted_radius(state, Alphabet::Bytes(alphabet))? {
            return Ok(radius);
        }
        if alphabet == TEXT {
            if let Some(radius) = self.looping_radius(state) {
                self.byte_radius[state as usize][TEXT] = Some(radius);
                return Ok(radius);
            }
        }
        self.chain_radius(state, Alphabet::Bytes(alphabet))
    }

    /// [`Self::next`], reusing the state the last computed class of `memo` led to when every
    /// member of `state` steps alike on `class` (as most classes in a row do in a string
    /// body): one step per member instead of building and interning the set again.
    fn next_alike(
        &mut self,
        state: LexId,
        class: usize,
        memo: &mut StepMemo,
    ) -> Result<LexId, MatchError> {
        let known = self.trans.get(state as usize, class);
        if known != UNKNOWN {
            return Ok(known);
        }
        let byte = self.class_rep[class];
        memo.targets.clear();
        memo.targets.extend(
            self.states[state as usize]
                .iter()
                .map(|&(t, s)| self.terminals.step_target(t, s, byte)),
        );
        if memo.last.is_some_and(|(from, _)| from == state) && memo.targets == memo.last_targets {
            let next = memo.last.map_or(LEX_DEAD, |(_, next)| next);
            self.share_with_run(state, class, next);
            return Ok(next);
        }
        let next = self.next(state, class)?;
        std::mem::swap(&mut memo.targets, &mut memo.last_targets);
        memo.last = Some((state, next));
        Ok(next)
    }

    /// The text radius of `state` read off the NFAs when one of its NFA states loops on every
    /// text byte (a string body, free text): the lexeme then never dies on text, and the
    /// radius is one less than the fewest text bytes after which some NFA state of the set
    /// can match (per NFA state, computed once per terminal, so many keys in one set cost
    /// little). `None` without such a loop.
    fn looping_radius(&mut self, state: LexId) -> Option<u8> {
        let bytes: Vec<u8> = self.alphabet_classes[TEXT]
            .iter()
            .map(|&c| self.class_rep[c])
            .collect();
        let set = &self.states[state as usize];
        if !set
            .iter()
            .any(|&(t, s)| self.terminals.loops_on_text(t, s, &bytes))
        {
            return None;
        }
        let nearest = set
            .iter()
            .map(|&(t, s)| self.terminals.text_distance(t, s))
            .min()
            .unwrap_or(u8::MAX);
        Some(nearest.saturating_sub(1).min(MAX_RADIUS))
    }

    /// Whether any run of whole string characters (see `token_index::is_string_char`) read
    /// from `state` keeps the lexeme alive and never lets it end: one of its NFA states, or a
    /// group of them (see [`Self::surviving_group`]), lives through every such run, and no
    /// match state is reachable through their bytes. A lexeme walk then takes a whole subtree
    /// of such characters at once, in any script.
    pub(crate) fn free_in_strings(&mut self, state: LexId) -> bool {
        if let Some(known) = self.free_in_strings[state as usize] {
            return known;
        }
        let chars = self.char_classes();
        let set = self.states[state as usize].clone();
        let free = set.iter().any(|&(t, s)| {
            self.loops_on_string_chars(t, s, &chars)
                || self
                    .surviving_group(t, s, &chars)
                    .is_some_and(|group| holds_all(&set, &group))
        }) && !self.match_reachable_in_strings(&set);
        self.free_in_strings[state as usize] = Some(free);
        free
    }

    /// As [`Self::free_in_strings`], for runs of string characters beyond ASCII only: a
    /// lexeme walk then takes a whole subtree of them at once from a state that some ASCII
    /// characters end or kill (the keys an object leaves to a pattern that lists ASCII
    /// characters, say), which most of a multilingual vocabulary is.
    pub(crate) fn free_in_non_ascii(&mut self, state: LexId) -> bool {
        if let Some(known) = self.free_in_non_ascii[state as usize] {
            return known;
        }
        let free = self.free_in_strings(state) || {
            let chars = self.non_ascii_char_classes();
            let set = self.states[state as usize].clone();
            set.iter()
                .any(|&(t, s)| self.loops_on_non_ascii_chars(t, s, &chars))
                && !self.match_reachable_in_strings(&set)
        };
        self.free_in_non_ascii[state as usize] = Some(free);
        free
    }

    /// The string radius of `state`: like the text radius (see `text_run`), counted in whole
    /// string characters of any script (see `token_index::is_string_char`), every byte of
    /// which must keep the lexeme alive and not ended. A string body with `maxLength` has the
    /// characters it has left, whatever their script.
    pub(crate) fn string_radius(&mut self, state: LexId) -> Result<u8, MatchError> {
        if let Some(known) = self.string_radius[state as usize] {
            return Ok(known);
        }
        if let Some(radius) = self.counted_radius(state, Alphabet::String)? {
            return Ok(radius);
        }
        let radius = if self.free_in_strings(state) {
            MAX_RADIUS
        } else {
            match self.radius_of_one_terminal(state)? {
                Some(radius) => radius,
                None => return self.chain_radius(state, Alphabet::String),
            }
        };
        self.string_radius[state as usize] = Some(radius);
        Ok(radius)
    }

    /// The string radius of `state` when it is exact: every run of that many string
    /// characters leads to one state, where no further string character can begin (a string
    /// body with `maxLength`, counting what it has left). A token of string characters (a cut
    /// last one counting as one: not even its first byte can follow the last) is then
    /// allowed from `state` exactly when it has no more characters than that, and a
    /// lexeme walk decides all of them at once (see `mask::lexeme_mask`).
    pub(crate) fn exact_string_radius(&mut self, state: LexId) -> Result<Option<u8>, MatchError> {
        if let Some(known) = self.exact_string_radius[state as usize] {
            return Ok(known);
        }
        let radius = self.find_exact_string_radius(state)?;
        self.exact_string_radius[state as usize] = Some(radius);
        Ok(radius)
    }

    /// [`Self::exact_string_radius`], not cached.
    fn find_exact_string_radius(&mut self, state: LexId) -> Result<Option<u8>, MatchError> {
        // A few characters leading apart rule it out at once, before every character is
        // stepped through (the states of a counted pattern are costly to build).
        let mut first = None;
        for &byte in b"a0 Z-" {
            let next = self.next(state, self.byte_class[byte as usize] as usize)?;
            if first.is_some_and(|first| first != next) {
                return Ok(None);
            }
            first = Some(next);
        }
        let radius = self.string_radius(state)?;
        if radius >= MAX_RADIUS {
            return Ok(None);
        }
        if let Some((free, room)) = self.uncounted_radius(state, Alphabet::String)? {
            if capped_far_from_limit(free, room) {
                // More characters can follow.
                return Ok(None);
            }
        }
        let mut at = state;
        for _ in 0..radius {
            match self.after_any_symbol(at, Alphabet::String)? {
                AfterSymbol::Same(next) => at = next,
                AfterSymbol::Bad | AfterSymbol::Various => return Ok(None),
            }
        }
        // No string character may begin: every class of a first byte leads nowhere.
        let chars = self.char_classes();
        for &class in chars.iter().flat_map(|sequence| sequence[0].iter()) {
            if self.next(at, class)? != LEX_DEAD {
                return Ok(None);
            }
        }
        Ok(Some(radius))
    }

    /// The radius over `alphabet` of a state with members that count edges (`None` for
    /// others): that of the same state without counts, within the room its counts leave;
    /// within [`NEAR_COUNT_LIMIT`] of their limit, that of the few counted states left,
    /// followed to their end where they form a chain.
    fn counted_radius(
        &mut self,
        state: LexId,
        alphabet: Alphabet,
    ) -> Result<Option<u8>, MatchError> {
        let Some((free, room)) = self.uncounted_radius(state, alphabet)? else {
            return Ok(None);
        };
        let capped = free.min(room);
        if free <= room || capped_far_from_limit(free, room) {
            *self.cached_radius(state, alphabet) = Some(capped);
            return Ok(Some(capped));
        }
        self.chain_radius_or(state, alphabet, Some(capped))
            .map(Some)
    }

    /// For a state with members that count edges: the radius over `alphabet` of the same
    /// state without counts, and the room its counts leave (see [`Self::without_counts`]).
    fn uncounted_radius(
        &mut self,
        state: LexId,
        alphabet: Alphabet,
    ) -> Result<Option<(u8, u8)>, MatchError> {
        let Some((uncounted, room)) = self.without_counts(state)? else {
            return Ok(None);
        };
        let free = match alphabet {
            Alphabet::Bytes(a) => self.radius(uncounted, a)?,
            Alphabet::String => self.string_radius(uncounted)?,
        };
        Ok(Some((free, room)))
    }

    /// `state` with the counts of its members that count edges dropped, and how many
    /// characters it survives as that state does (see `Terminals::survives_as_its_nfa_for`),
    /// when it has such members. Its radii are those of that state within that room:
    /// exploring the counted states would meet new ones at every count, the uncounted ones
    /// recur.
    fn without_counts(&mut self, state: LexId) -> Result<Option<(LexId, u8)>, MatchError> {
        let members = &self.states[state as usize];
        if !members
            .iter()
            .any(|&(t, s)| self.terminals.uncounted(t, s).is_some())
        {
            return Ok(None);
        }
        let room = members
            .iter()
            .map(|&(t, s)| self.terminals.survives_as_its_nfa_for(t, s))
            .min()
            .unwrap_or(0)
            .min(u32::from(MAX_RADIUS)) as u8;
        let mut uncounted: Vec<(u32, u32)> = members
            .iter()
            .map(|&(t, s)| (t, self.terminals.uncounted(t, s).unwrap_or(s)))
            .collect();
        Ok(Some((self.intern(&mut uncounted)?, room)))
    }

    /// The largest string radius of the NFA states of one terminal of `state`, as a lexer
    /// state of their own, when no other member can end on string characters: `state`
    /// survives at least as long. `None` for a state of one terminal, when that radius is 0
    /// or when another member can end.
    ///
    /// The key position of an object that allows undeclared keys is such a state: the
    /// undeclared key (any string but the declared ones) never dies, but it has a state per
    /// prefix of a declared key, and exploring them beside every declared key's progress
    /// would build the same states many times over.
    fn radius_of_one_terminal(&mut self, state: LexId) -> Result<Option<u8>, MatchError> {
        let set = self.states[state as usize].clone();
        if set.first().map(|m| m.0) == set.last().map(|m| m.0) {
            return Ok(None);
        }
        let mut best: Option<(u8, usize, usize)> = None;
        let mut start = 0;
        for group in set.chunk_by(|a, b| a.0 == b.0) {
            let end = start + group.len();
            let mut members = group.to_vec();
            let alone = self.intern(&mut members)?;
            let radius = self.string_radius(alone)?;
            if best.is_none_or(|(r, _, _)| radius > r) {
                best = Some((radius, start, end));
            }
            if radius == MAX_RADIUS {
                break;
            }
            start = end;
        }
        let Some((radius, start, end)) = best.filter(|&(radius, _, _)| radius > 0) else {
            return Ok(None);
        };
        let others: Vec<(u32, u32)> = set[..start].iter().chain(&set[end..]).copied().collect();
        Ok((!self.match_reachable_in_strings(&others)).then_some(radius))
    }

    /// The radius of `state` over `alphabet`, following the chain of states every symbol
    /// leads to alike (a body counting what it has left) and numbering it back from where it
    /// ends: one step per state for the whole chain, where exploring from each of its states
    /// would cost one per state and depth. Where symbols lead apart (the keys of an object),
    /// a little breadth-first exploration decides.
    fn chain_radius(&mut self, state: LexId, alphabet: Alphabet) -> Result<u8, MatchError> {
        self.chain_radius_or(state, alphabet, None)
    }

    /// [`Self::chain_radius`], except that where symbols lead apart, `state` gets `apart`
    /// when given, without exploring: near the most edges of a counted pattern whose
    /// characters lead apart, an exploration at every count would build lexer states by the
    /// thousand (a pattern's automaton times the counts left times its spellings).
    fn chain_radius_or(
        &mut self,
        state: LexId,
        alphabet: Alphabet,
        apart: Option<u8>,
    ) -> Result<u8, MatchError> {
        if self.largest_group(state) > LARGE_SET {
            *self.cached_radius(state, alphabet) = Some(0);
            return Ok(0);
        }
        let mut chain = vec![state];
        let last = loop {
            let at = chain[chain.len() - 1];
            match self.after_any_symbol(at, alphabet)? {
                AfterSymbol::Bad => break 0,
                AfterSymbol::Same(next) if chain.contains(&next) => break MAX_RADIUS,
                AfterSymbol::Same(next) => {
                    if let Some(known) = *self.cached_radius(next, alphabet) {
                        break known.saturating_add(1).min(MAX_RADIUS);
                    }
                    if chain.len() > MAX_RADIUS as usize {
                        // `state` survives the most asked for; the states after it are left
                        // to find theirs (a bound from this chain would be lower).
                        *self.cached_radius(state, alphabet) = Some(MAX_RADIUS);
                        return Ok(MAX_RADIUS);
                    }
                    chain.push(next);
                }
                AfterSymbol::Various => match apart {
                    Some(radius) => {
                        *self.cached_radius(state, alphabet) = Some(radius);
                        return Ok(radius);
                    }
                    None => break self.explored_radius(at, alphabet)?,
                },
            }
        };
        let mut radius = last;
        for &at in chain.iter().rev() {
            *self.cached_radius(at, alphabet) = Some(radius);
            radius = radius.saturating_add(1).min(MAX_RADIUS);
        }
        Ok(self.cached_radius(state, alphabet).unwrap_or(0))
    }

    /// The most NFA states of one terminal in lexer state `state`.
    fn largest_group(&self, state: LexId) -> usize {
        self.states[state as usize]
            .chunk_by(|a, b| a.0 == b.0)
            .map(<[_]>::len)
            .max()
            .unwrap_or(0)
    }

    fn cached_radius(&mut self, state: LexId, alphabet: Alphabet) -> &mut Option<u8> {
        match alphabet {
            Alphabet::Bytes(a) => &mut self.byte_radius[state as usize][a],
            Alphabet::String => &mut self.string_radius[state as usize],
        }
    }

    /// Where every symbol of `alphabet` leads from `state`.
    fn after_any_symbol(
        &mut self,
        state: LexId,
        alphabet: Alphabet,
    ) -> Result<AfterSymbol, MatchError> {
        let mut same = None;
        match alphabet {
            Alphabet::Bytes(a) => {
                let mut memo = StepMemo::default();
                for i in 0..self.alphabet_classes[a].len() {
                    let next = self.next_alike(state, self.alphabet_classes[a][i], &mut memo)?;
                    if self.stops_walk(next) {
                        return Ok(AfterSymbol::Bad);
                    }
                    if same.is_some_and(|s| s != next) {
                        return Ok(AfterSymbol::Various);
                    }
                    same = Some(next);
                }
            }
            Alphabet::String => {
                let mut after = Vec::new();
                if self.after_any_char(state, &mut after, &mut StepMemo::default())? {
                    return Ok(AfterSymbol::Bad);
                }
                match after[..] {
                    [next] => same = Some(next),
                    _ => return Ok(AfterSymbol::Various),
                }
            }
        }
        Ok(same.map_or(AfterSymbol::Bad, AfterSymbol::Same))
    }

    /// The radius of `state` over `alphabet` by breadth-first exploration (see `text_run`).
    /// An exploration that closes (every state reachable survives forever) gives each state
    /// it saw the full radius: a walk goes on into those states and would explore again.
    fn explored_radius(&mut self, state: LexId, alphabet: Alphabet) -> Result<u8, MatchError> {
        let mut closed = Vec::new();
        let radius = match alphabet {
            Alphabet::Bytes(a) => {
                let classes = std::mem::take(&mut self.alphabet_classes[a]);
                let mut memo = StepMemo::default();
                let radius = radius_within(
                    state,
                    &classes,
                    MAX_TEXT_EXPLORED,
                    |s, class| {
                        let next = self.next_alike(s, class, &mut memo)?;
                        Ok((next, self.stops_walk(next)))
                    },
                    &mut closed,
                );
                self.alphabet_classes[a] = classes;
                radius?
            }
            Alphabet::String => {
                let mut memo = StepMemo::default();
                radius_by_successors(
                    state,
                    MAX_STRING_EXPLORED,
                    |s, out| self.after_any_char(s, out, &mut memo),
                    &mut closed,
                )?
            }
        };
        for s in closed {
            *self.cached_radius(s, alphabet) = Some(MAX_RADIUS);
        }
        Ok(radius)
    }

    /// Adds to `after` every state one string character leads to from `state` (each once);
    /// returns whether some character ends or kills the lexeme on the way (`after` is then
    /// incomplete).
    fn after_any_char(
        &mut self,
        state: LexId,
        after: &mut Vec<LexId>,
        memo: &mut StepMemo,
    ) -> Result<bool, MatchError> {
        let chars = self.char_classes();
        let whole = through_each_char(
            &chars,
            state,
            |&at, class| {
                let to = self.next_alike(at, class, memo)?;
                Ok((!self.stops_walk(to)).then_some(to))
            },
            |reached| {
                for &to in reached {
                    if !after.contains(&to) {
                        after.push(to);
                    }
                }
                true
            },
        )?;
        Ok(!whole)
    }

    /// The string characters as byte classes (see [`CharClasses`]).
    fn char_classes(&mut self) -> CharClasses {
        if let Some(chars) = &self.char_classes {
            return chars.clone();
        }
        let chars = self.classes_of(&STRING_CHAR_SEQUENCES);
        self.char_classes = Some(chars.clone());
        chars
    }

    /// As [`Self::char_classes`], for the characters beyond ASCII.
    fn non_ascii_char_classes(&mut self) -> CharClasses {
        if let Some(chars) = &self.non_ascii_char_classes {
            return chars.clone();
        }
        let sequences: Vec<Vec<(u8, u8)>> = STRING_CHAR_SEQUENCES
            .iter()
            .filter(|sequence| sequence[0].0 >= 0x80)
            .cloned()
            .collect();
        let chars = self.classes_of(&sequences);
        self.non_ascii_char_classes = Some(chars.clone());
        chars
    }

    /// `sequences` of UTF-8 byte ranges as byte classes, per byte the classes its range spans.
    fn classes_of(&self, sequences: &[Vec<(u8, u8)>]) -> CharClasses {
        let classes_in = |lo: u8, hi: u8| -> Box<[usize]> {
            let mut out = vec![self.byte_class[lo as usize] as usize];
            while let Some(&next) = self.class_rep.get(out[out.len() - 1] + 1) {
                if next > hi {
                    break;
                }
                out.push(out[out.len() - 1] + 1);
            }
            out.into_boxed_slice()
        };
        sequences
            .iter()
            .map(|sequence| {
                sequence
                    .iter()
                    .map(|&(lo, hi)| classes_in(lo, hi))
                    .collect()
            })
            .collect()
    }

    /// Whether a match state is reachable from `set` through bytes of string characters
    /// (any byte from 0x80 on: more paths than UTF-8 allows, which only errs towards "yes"),
    /// read off each member's NFA (see `Terminals::reaches_match_in_strings`).
    fn match_reachable_in_strings(&mut self, set: &[(u32, u32)]) -> bool {
        // A terminal that counts its edges may reach a match its counts forbid, or not one
        // they allow; "yes" is the cautious answer.
        set.iter().any(|&(t, s)| {
            self.terminals.uncounted(t, s).is_some()
                || self.terminals.reaches_match_in_strings(t, s)
        })
    }

    /// Whether a control byte (U+0000 to U+001F, which JSON strings escape) kills `state`
    /// after any run of string characters: none of its NFA states reaches, through bytes of
    /// string characters, one that reads a control byte or is a match (see
    /// `Terminals::reaches_control_in_strings`). A token of string characters and then a
    /// control byte, read from a state with the string radius for them, is then rejected
    /// whatever follows (see `mask::lexeme_mask`).
    pub(crate) fn controls_die_in_strings(&mut self, state: LexId) -> bool {
        if let Some(known) = self.controls_die[state as usize] {
            return known;
        }
        let members = &self.states[state as usize];
        let die = !members
            .iter()
            .any(|&(t, s)| self.terminals.reaches_control_in_strings(t, s));
        self.controls_die[state as usize] = Some(die);
        die
    }

    /// The NFA states around `s` of terminal `t` that live through any run of string
    /// characters together, when there are such: the set the first printable ASCII byte `s`
    /// reads leads it back into, from which every character leads back into a set holding
    /// all of it or one holding a state that loops on every character (see
    /// [`Self::loops_on_string_chars`]). A lexer state holding all of them lives through any
    /// run too. The undeclared key of an object has such a set: a loop over the characters
    /// its declared keys use, with the way out to any string on every other character; no one
    /// of its states lives alone. Remembered per NFA state.
    fn surviving_group(&mut self, t: u32, s: u32, chars: &CharClasses) -> Option<Group> {
        if let Some(known) = self.surviving_groups.get(&(t, s)) {
            return known.clone();
        }
        let group = self.surviving_group_uncached(t, s, chars);
        self.surviving_groups.insert((t, s), group.clone());
        group
    }

    fn surviving_group_uncached(&mut self, t: u32, s: u32, chars: &CharClasses) -> Option<Group> {
        // Only a state reading most of ASCII is looked at (a key's letters are not). A member
        // that counts its edges is new at every count, and runs out at its bound.
        if self.terminals.uncounted(t, s).is_some() {
            return None;
        }
        let (read, first) = self.terminals.ascii_string_bytes_read(t, s);
        if read < ASCII_STRING_BYTES / 2 {
            return None;
        }
        let byte = first?;
        let group = self.terminals.step_set(&[(t, s)], byte);
        if group.binary_search(&(t, s)).is_err() {
            return None;
        }
        let step = |set: &Vec<(u32, u32)>, class: usize| Ok(self.set_after_class(set, class));
        let mut after: Vec<Vec<(u32, u32)>> = Vec::new();
        let collect = |reached: &[Vec<(u32, u32)>]| {
            after.extend(reached.iter().cloned());
            true
        };
        if !through_each_char(chars, group.clone(), step, collect).unwrap_or(false) {
            return None;
        }
        let survives = after.iter().all(|set| {
            holds_all(set, &group)
                || set
                    .iter()
                    .any(|&(tt, ss)| self.loops_on_string_chars(tt, ss, chars))
        });
        survives.then(|| group.into())
    }

    /// The NFA states one byte of `class` leads the members of `set` to, sorted; `None` when
    /// it leads none anywhere.
    fn set_after_class(&mut self, set: &[(u32, u32)], class: usize) -> Option<Vec<(u32, u32)>> {
        let next = self.terminals.step_set(set, self.class_rep[class]);
        (!next.is_empty()).then_some(next)
    }

    /// Whether NFA state `s` of terminal `t` comes back to itself after every string character
    /// (`chars`, from [`Self::char_classes`]): every NFA set a character leads to holds it.
    /// Remembered per NFA state: the same states recur in many lexer states.
    fn loops_on_string_chars(&mut self, t: u32, s: u32, chars: &CharClasses) -> bool {
        self.loops_on(t, s, chars, false)
    }

    /// As [`Self::loops_on_string_chars`], for the characters beyond ASCII (`chars`, from
    /// [`Self::non_ascii_char_classes`]).
    fn loops_on_non_ascii_chars(&mut self, t: u32, s: u32, chars: &CharClasses) -> bool {
        self.loops_on(t, s, chars, true)
    }

    /// Whether `(t, s)` loops on every character of `chars`, remembered by whether those are
    /// the characters beyond ASCII only.
    fn loops_on(&mut self, t: u32, s: u32, chars: &CharClasses, beyond_ascii: bool) -> bool {
        if let Some(&loops) = self.loops_in_strings.get(&(t, s, beyond_ascii)) {
            return loops;
        }
        let loops = self.loops_through(t, s, chars);
        self.loops_in_strings.insert((t, s, beyond_ascii), loops);
        loops
    }

    /// Whether every NFA set a character of `chars` leads `(t, s)` to holds it.
    fn loops_through(&mut self, t: u32, s: u32, chars: &CharClasses) -> bool {
        let step = |set: &Vec<(u32, u32)>, class: usize| Ok(self.set_after_class(set, class));
        let holds = |sets: &[Vec<(u32, u32)>]| sets.iter().all(|set| set.contains(&(t, s)));
        through_each_char(chars, vec![(t, s)], step, holds).unwrap_or(false)
    }

    /// What lexer state `state` can still read within `depth` bytes, with terminal and NFA
    /// state numbers left out: per terminal, the NFA graph reachable from its states by at
    /// most `depth` bytes, numbered in discovery order.
    ///
    /// Equal signatures mean that the same byte strings of up to `depth` bytes keep a lexeme
    /// alive and the same ones can end it, so the lexeme walks of the two states agree when
    /// no token is longer (see `mask::lexeme_mask`), in one grammar or across grammars.
    /// Concatenated terminals make this matter: the body of every `"key": "..."` is its own
    /// lexer state, but they all share one signature. The bound makes it matter for counted
    /// bodies too: a string with a `maxLength` is a lexer state per count, but all those
    /// farther from the limit than the longest token read alike. `None` when more than
    /// [`MAX_SIGNATURE_STATES`] states are within reach, in a head (see `terminal`) and in a
    /// graph that counts its edges near its bounds (far from them, a count reads as any other
    /// within `depth`, as a `maxLength` body does).
    pub(crate) fn signature(&mut self, state: LexId, depth: u32) -> Option<Box<[u32]>> {
        let mut renumbering = std::mem::take(&mut self.renumbering);
        let signature = self.signature_with(state, depth, &mut renumbering);
        self.renumbering = renumbering;
        signature
    }

    /// The states are described level by level, a level being the states first reached after
    /// as many bytes (a state reached by fewer bytes through a later path is moved up to its
    /// level before it is described), so that the states described are exactly those within
    /// `depth` bytes; states one byte further are numbered but not described.
    fn signature_with(
        &self,
        state: LexId,
        depth: u32,
        local: &mut Renumbering,
    ) -> Option<Box<[u32]>> {
        let set = &self.states[state as usize];
        let mut out = Vec::new();
        // Per state number: its NFA state.
        let mut states: Vec<u32> = Vec::new();
        let mut described: Vec<bool> = Vec::new();
        let (mut level, mut next): (Vec<u32>, Vec<u32>) = (Vec::new(), Vec::new());
        for group in set.chunk_by(|a, b| a.0 == b.0) {
            // A head's graph goes on into a rest that may not be compiled yet; a graph that
            // counts its edges reads as its NFA only far enough from its bounds.
            if group.iter().any(|&(t, s)| {
                self.terminals.in_head(t, s) || self.terminals.reads_as_its_nfa_for(t, s) < depth
            }) {
                return None;
            }
            let (t, s) = group[0];
            let (nfa, _) = self.terminals.nfa_of(t, s);
            local.start(nfa.states().len());
            states.clear();
            described.clear();
            level.clear();
            next.clear();
            for &(t, s) in group {
                let (_, sid) = self.terminals.nfa_of(t, s);
                local.set(sid.as_u32(), states.len() as u32);
                level.push(states.len() as u32);
                states.push(sid.as_u32());
                described.push(false);
            }
            out.extend([u32::MAX, group.len() as u32]);
            let mut bytes = 0u32;
            loop {
                let mut at = 0;
                while at < level.len() {
                    if states.len() > MAX_SIGNATURE_STATES {
                        return None;
                    }
                    let n = level[at];
                    at += 1;
                    if std::mem::replace(&mut described[n as usize], true) {
                        continue;
                    }
                    let sid = StateID::new_unchecked(states[n as usize] as usize);
                    // The number of `next_sid`, reached by `cost` more bytes (0 or 1). Levels
                    // are described in order, so a state not described yet is on this level
                    // or the next: reached without a byte, it belongs to this one.
                    let mut id = |next_sid: StateID, cost: u32| -> u32 {
                        match local.get(next_sid.as_u32()) {
                            Some(m) => {
                                if cost == 0 && !described[m as usize] {
                                    level.push(m);
                                }
                                m
                            }
                            None => {
                                let m = states.len() as u32;
                                local.set(next_sid.as_u32(), m);
                                states.push(next_sid.as_u32());
                                described.push(false);
                                if cost == 0 { &mut level } else { &mut next }.push(m);
                                m
                            }
                        }
                    };
                    out.push(n);
                    match nfa.state(sid) {
                        State::ByteRange { trans } => out.extend([
                            1,
                            u32::from(trans.start),
                            u32::from(trans.end),
                            id(trans.next, 1),
                        ]),
                        State::Sparse(sparse) => {
                            out.extend([2, sparse.transitions.len() as u32]);
                            for t in sparse.transitions.iter() {
                                out.extend([u32::from(t.start), u32::from(t.end), id(t.next, 1)]);
                            }
                        }
                        State::Dense(dense) => {
                            out.push(3);
                            for &next in dense.transitions.iter() {
                                // The zero state stands for "no transition" in a dense state.
                                out.push(if next == StateID::ZERO {
                                    u32::MAX
                                } else {
                                    id(next, 1)
                                });
                            }
                        }
                        State::Look { look, next } => out.extend([4, look.as_repr(), id(*next, 0)]),
                        State::Union { alternates } => {
                            out.extend([5, alternates.len() as u32]);
                            for &alt in alternates.iter() {
                                out.push(id(alt, 0));
                            }
                        }
                        State::BinaryUnion { alt1, alt2 } => {
                            out.extend([6, id(*alt1, 0), id(*alt2, 0)])
                        }
                        State::Capture { next, .. } => out.extend([7, id(*next, 0)]),
                        State::Fail => out.push(8),
                        State::Match { .. } => out.push(9),
                    }
                }
                level.clear();
                if next.is_empty() || bytes >= depth {
                    break;
                }
                std::mem::swap(&mut level, &mut next);
                bytes += 1;
            }
            // Where the description stops: the same graph cut at another depth reads apart.
            out.push(bytes);
        }
        Some(out.into())
    }

    /// The state of the members in `set` (in any order, repeats allowed; left sorted).
    /// What lexer state `state` can still read, named by the compiled NFAs and their states:
    /// terminals whose rests share one expression (members of different objects ending in
    /// the same value) give equal identities, so their lexeme walks agree (see
    /// `mask::lexeme_mask`). Unlike [`Self::signature`], it holds within this lexer only, and
    /// it costs one step per member however large the NFAs are. `None` in a head. A member
    /// that counts edges but reads as its NFA for `depth` more bytes is named without its
    /// count (see `Terminals::reads_as_its_nfa_for`): the counts of a long string body share
    /// one walk.
    pub(crate) fn identity(&self, state: LexId, depth: u32) -> Option<Box<[u32]>> {
        let set = &self.states[state as usize];
        let mut groups: Vec<Vec<u32>> = Vec::new();
        for group in set.chunk_by(|a, b| a.0 == b.0) {
            let mut states = vec![0, group.len() as u32];
            for &(t, s) in group {
                let s = match self.terminals.uncounted(t, s) {
                    Some(free) if self.terminals.reads_as_its_nfa_for(t, s) >= depth => free,
                    _ => s,
                };
                let (nfa, sid) = self.terminals.compiled_state(t, s)?;
                states[0] = nfa;
                states.push(sid);
            }
            groups.push(states);
        }
        // The same NFA states in two terminals read as one.
        groups.sort_unstable();
        groups.dedup();
        Some(groups.concat().into())
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
                what: "lexer states",
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
        self.byte_radius.push([None; BYTE_ALPHABETS]);
        self.free_in_strings.push(None);
        self.free_in_non_ascii.push(None);
        self.controls_die.push(None);
        self.string_radius.push(None);
        self.exact_string_radius.push(None);
        self.cuts.push(None);
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

/// Steps `start` through one string character per UTF-8 sequence of `chars`, byte by byte,
/// the values reached so far moving together (each kept once): where patterns split the UTF-8
/// ranges finely this costs the sum of the classes, not their product. `step` gives the value
/// after a byte class, or `None` where that ends the walk; `reached` gets each sequence's
/// values after its last byte and says whether to go on. `Ok(false)` when either stopped.
fn through_each_char<S: PartialEq>(
    chars: &CharClasses,
    start: S,
    mut step: impl FnMut(&S, usize) -> Result<Option<S>, MatchError>,
    mut reached: impl FnMut(&[S]) -> bool,
) -> Result<bool, MatchError> {
    let start = [start];
    let mut values: Vec<S> = Vec::new();
    let mut next: Vec<S> = Vec::new();
    for sequence in chars.iter() {
        for (position, classes) in sequence.iter().enumerate() {
            let from: &[S] = if position == 0 { &start } else { &values };
            for value in from {
                for &class in classes.iter() {
                    let Some(to) = step(value, class)? else {
                        return Ok(false);
                    };
                    if !next.contains(&to) {
                        next.push(to);
                    }
                }
            }
            std::mem::swap(&mut values, &mut next);
            next.clear();
        }
        if !reached(&values) {
            return Ok(false);
        }
    }
    Ok(true)
}

/// The UTF-8 byte ranges of string characters (see `token_index::is_string_char`), one
/// sequence of ranges per character length and lead-byte range; ASCII first, where most
/// states that do not loop fail.
static STRING_CHAR_SEQUENCES: std::sync::LazyLock<Vec<Vec<(u8, u8)>>> =
    std::sync::LazyLock::new(|| {
        let mut sequences: Vec<Vec<(u8, u8)>> = [(b'#', b'['), (b' ', b'!'), (b']', 0x7F)]
            .iter()
            .map(|&r| vec![r])
            .collect();
        // Around the line separators, U+2028 and U+2029 (`token_index::LINE_SEPARATORS`).
        for (lo, hi) in [('\u{80}', '\u{2027}'), ('\u{202A}', char::MAX)] {
            for seq in Utf8Sequences::new(lo, hi) {
                sequences.push(seq.as_slice().iter().map(|r| (r.start, r.end)).collect());
            }
        }
        sequences
    });

/// Marks where byte classes must split for `hir`: around every literal byte, at the ends of
/// every byte range, and at the ends of the UTF-8 byte ranges of every Unicode range (as its
/// NFA will spell them).
///
/// Unicode ranges in `spelled` are already marked (the same ones recur in every string of a
/// grammar); the rest are added to it.
fn mark_byte_boundaries(
    hir: &Hir,
    boundary: &mut [bool; 256],
    spelled: &mut FxHashSet<(char, char)>,
) {
    let mut mark = |start: u8, end: u8| {
        boundary[start as usize] = true;
        if end < 255 {
            boundary[end as usize + 1] = true;
        }
    };
    let mut stack = vec![hir];
    while let Some(h) = stack.pop() {
        match h.kind() {
            HirKind::Empty | HirKind::Look(_) => {}
            HirKind::Literal(lit) => lit.0.iter().for_each(|&b| mark(b, b)),
            HirKind::Class(Class::Bytes(class)) => {
                class.ranges().iter().for_each(|r| mark(r.start(), r.end()))
            }
            HirKind::Class(Class::Unicode(class)) => {
                for r in class.ranges() {
                    if !spelled.insert((r.start(), r.end())) {
                        continue;
                    }
                    for seq in Utf8Sequences::new(r.start(), r.end()) {
                        seq.as_slice().iter().for_each(|r| mark(r.start, r.end));
                    }
                }
            }
            HirKind::Repetition(rep) => stack.push(&rep.sub),
            HirKind::Capture(cap) => stack.push(&cap.sub),
            HirKind::Concat(parts) | HirKind::Alternation(parts) => stack.extend(parts),
        }
    }
}

/// The partition of bytes into classes given where classes begin (byte 0 always does).
fn byte_classes(boundary: &[bool; 256]) -> ([u8; 256], Vec<u8>) {
    let mut map = [0u8; 256];
    let mut reps = vec![0u8];
    for b in 1..256 {
        if boundary[b] {
            reps.push(b as u8);
        }
        map[b] = (reps.len() - 1) as u8;
    }
    (map, reps)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lexer(patterns: &[&str]) -> Lexer {
        let hirs: Vec<Hir> = patterns
            .iter()
            .map(|p| regex_syntax::parse(p).expect("valid pattern"))
            .collect();
        let terminals = hirs.into_iter().map(Terminal::Regex).collect();
        Lexer::new(terminals, &Limits::default(), &Deadline::after(None)).expect("builds")
    }

    fn read(lexer: &mut Lexer, terminal: u32, text: &[u8]) -> LexId {
        let mut state = lexer.start(&[terminal]).expect("starts");
        for &b in text {
            let class = lexer.byte_classes()[b as usize] as usize;
            state = lexer.next(state, class).expect("within limits");
        }
        state
    }

    /// The members `state` steps to on `class`, built for that class alone, without looking
    /// at or filling the transition table.
    fn stepped(lexer: &mut Lexer, state: LexId, class: usize) -> Vec<(u32, u32)> {
        let mut set = Vec::new();
        lexer
            .step_members(state, class, &mut set)
            .expect("within limits");
        set.sort_unstable();
        set.dedup();
        set
    }

    #[test]
    fn a_step_is_shared_only_with_classes_no_member_tells_apart() {
        let mut lexer = lexer(&[
            r#""[^"\\\x00-\x1F]*""#,
            r#""(apple|zebra|mango)""#,
            r#"[a-m]+[0-9]{2}"#,
            r#"[^\x00-\x1F]*"#,
            r#""[^"\\\x00-\x1F]{0,3}x""#,
        ]);
        let classes = lexer.classes();
        let mut states = Vec::new();
        for (terminal, text) in [
            (0, &b"\"ab"[..]),
            (1, b"\"ma"),
            (2, b"abc"),
            (3, b"q\xc3"),
            (4, b"\"a"),
        ] {
            states.push(read(&mut lexer, terminal, text));
        }
        states.push(lexer.start(&[0, 1, 2, 3, 4]).expect("starts"));
        for (i, state) in states.into_iter().enumerate() {
            // From the middle on, up or down: most classes are then reached through a
            // neighbour's run before they are asked for.
            let mut order: Vec<usize> = (0..classes).collect();
            order.rotate_left(classes / 2);
            if i % 2 == 1 {
                order.reverse();
            }
            for class in order {
                let next = lexer.next(state, class).expect("within limits");
                let expected = stepped(&mut lexer, state, class);
                assert_eq!(
                    lexer.states[next as usize].as_ref(),
                    expected.as_slice(),
                    "state {state}, class {class} (byte {})",
                    lexer.class_rep[class]
                );
            }
        }
    }

    #[test]
    fn free_in_strings_needs_a_loop_and_no_end_on_string_characters() {
        let mut lexer = lexer(&[
            r#""[^"\\\x00-\x1F]*""#,
            r#""[a-z]*""#,
            r#""[^"\\\x00-\x1F]{0,3}""#,
            r#"[^\x00-\x1F]*"#,
        ]);
        let body = read(&mut lexer, 0, br#""ab"#);
        assert!(
            lexer.free_in_strings(body),
            "a string body loops on every character"
        );
        let ascii = read(&mut lexer, 1, br#""ab"#);
        assert!(!lexer.free_in_strings(ascii), "[a-z] does not loop on 'é'");
        let counted = read(&mut lexer, 2, br#""ab"#);
        assert!(!lexer.free_in_strings(counted), "a counted body runs out");
        let text = read(&mut lexer, 3, b"ab");
        assert!(
            !lexer.free_in_strings(text),
            "free text may end after any character"
        );
        let both = lexer.start(&[0, 1]).expect("starts");
        let both = lexer
            .next(both, lexer.byte_classes()[b'"' as usize] as usize)
            .expect("steps");
        assert!(lexer.free_in_strings(both), "one looping member is enough");
    }

    #[test]
    fn free_in_non_ascii_needs_a_loop_on_every_character_beyond_ascii() {
        let mut lexer = lexer(&[
            r#""[^adilosw"\\\x00-\x1F]*""#,
            r#""[a-zé]*""#,
            r#"[^adilosw\x00-\x1F]*"#,
        ]);
        let without_letters = read(&mut lexer, 0, br#""xyz"#);
        assert!(!lexer.free_in_strings(without_letters), "'a' kills it");
        assert!(
            lexer.free_in_non_ascii(without_letters),
            "it loops on every character beyond ASCII"
        );
        let some_beyond = read(&mut lexer, 1, br#""ab"#);
        assert!(!lexer.free_in_non_ascii(some_beyond), "'ü' kills it");
        let text = read(&mut lexer, 2, b"xyz");
        assert!(
            !lexer.free_in_non_ascii(text),
            "free text may end after any character"
        );
    }

    #[test]
    fn exact_string_radius_needs_every_character_to_lead_alike() {
        let mut lexer = lexer(&[
            r#""[^"\\\x00-\x1F]{0,3}""#,
            r#""[a-z]*[0-9][^"\\\x00-\x1F]{2}""#,
        ]);
        let counted = read(&mut lexer, 0, br#""a"#);
        assert_eq!(lexer.exact_string_radius(counted), Ok(Some(2)));
        let before_digit = read(&mut lexer, 1, br#""ab"#);
        assert_eq!(
            lexer.exact_string_radius(before_digit),
            Ok(None),
            "a digit and a letter lead apart"
        );
        let after_digit = read(&mut lexer, 1, br#""ab7"#);
        assert_eq!(lexer.exact_string_radius(after_digit), Ok(Some(2)));
    }

    #[test]
    fn controls_die_in_strings_only_where_no_string_path_reads_one() {
        let mut lexer = lexer(&[
            r#""[^"\\\x00-\x1F]*"[\t\n ]*,"#,
            r#""[^"\\]*""#,
            r#""[a-z]*\n?""#,
            r#""(?:[^"\\\x00-\x1F]|\\n)*""#,
        ]);
        let body = read(&mut lexer, 0, br#""ab"#);
        assert!(
            lexer.controls_die_in_strings(body),
            "a JSON string body: the newline after its quote is out of reach"
        );
        let raw = read(&mut lexer, 1, br#""ab"#);
        assert!(
            !lexer.controls_die_in_strings(raw),
            "a body that takes raw control bytes"
        );
        let later = read(&mut lexer, 2, br#""ab"#);
        assert!(
            !lexer.controls_die_in_strings(later),
            "a newline some characters on"
        );
        let escaped = read(&mut lexer, 3, br#""ab"#);
        assert!(
            lexer.controls_die_in_strings(escaped),
            "an escape spells a newline with string characters"
        );
        let both = lexer.start(&[0, 1]).expect("starts");
        let both = lexer
            .next(both, lexer.byte_classes()[b'"' as usize] as usize)
            .expect("steps");
        assert!(
            !lexer.controls_die_in_strings(both),
            "one member that reads them is enough"
        );
    }

    /// A class of scattered three-byte characters: its byte boundaries split the UTF-8
    /// continuation range into dozens of classes, so that string characters span thousands
    /// of class sequences.
    fn scattered_chars() -> String {
        let chars: String = (0..40u32)
            .filter_map(|i| char::from_u32(0x1000 + i * 0x41))
            .collect();
        format!("[{chars}]x")
    }

    /// The string radius an unbounded exploration of lexer states finds.
    fn fully_explored_string_radius(lexer: &mut Lexer, state: LexId) -> u8 {
        let mut memo = StepMemo::default();
        radius_by_successors(
            state,
            usize::MAX,
            |s, out| lexer.after_any_char(s, out, &mut memo),
            &mut Vec::new(),
        )
        .expect("within limits")
    }

    #[test]
    fn a_key_position_takes_the_radius_of_its_undeclared_key() {
        // Declared keys, and an undeclared key that no single NFA state keeps alive (its
        // first character picks a branch), as an object's key position holds them.
        let keys: Vec<String> = (0..30).map(|i| format!(r#""k{i:02}bcdef": 1"#)).collect();
        let undeclared = r#""(?:k[^"\\\x00-\x1F]*|[^"\\\x00-\x1Fk][^"\\\x00-\x1F]*)": 2"#;
        let free_text = r#"[^\x00-\x1F]*"#;
        let mut patterns: Vec<&str> = keys.iter().map(String::as_str).collect();
        patterns.push(undeclared);
        patterns.push(free_text);
        let quote = |lexer: &mut Lexer, terminals: &[u32]| {
            let start = lexer.start(terminals).expect("starts");
            let class = lexer.byte_classes()[b'"' as usize] as usize;
            lexer.next(start, class).expect("steps")
        };
        let declared: Vec<u32> = (0..keys.len() as u32).collect();
        let with_undeclared: Vec<u32> = (0..=keys.len() as u32).collect();

        let mut lexer = lexer(&patterns);
        let position = quote(&mut lexer, &with_undeclared);
        assert!(!lexer.free_in_strings(position), "no member loops alone");
        assert_eq!(lexer.string_radius(position), Ok(MAX_RADIUS));
        let mut fresh = super::tests::lexer(&patterns);
        let position = quote(&mut fresh, &with_undeclared);
        assert_eq!(
            fully_explored_string_radius(&mut fresh, position),
            MAX_RADIUS
        );

        let only_declared = quote(&mut lexer, &declared);
        assert_eq!(lexer.string_radius(only_declared), Ok(0));

        // A member that may end on string characters bounds the state, whatever the others.
        let mut with_text = with_undeclared.clone();
        with_text.push(keys.len() as u32 + 1);
        let position = quote(&mut lexer, &with_text);
        let radius = lexer.string_radius(position).expect("within limits");
        let mut fresh = super::tests::lexer(&patterns);
        let position = quote(&mut fresh, &with_text);
        assert_eq!(radius, fully_explored_string_radius(&mut fresh, position));
        assert!(radius < MAX_RADIUS);
    }

    #[test]
    fn an_exact_string_radius_is_the_characters_a_counted_body_has_left() {
        let mut lexer = lexer(&[
            r#""[^"\\\x00-\x1F]{0,5}""#,
            r#""[a-z]{0,5}""#,
            r#""(?:[^"\\\x00-\x1F]{0,3}|[0-9]{0,9})""#,
            r#""[^"\\\x00-\x1F]*""#,
        ]);
        for (text, left) in [(&br#"""#[..], 5), (br#""ab"#, 3), (br#""abcde"#, 0)] {
            let body = read(&mut lexer, 0, text);
            assert_eq!(
                lexer.exact_string_radius(body),
                Ok(Some(left)),
                "after {text:?}"
            );
        }
        let letters = read(&mut lexer, 1, br#""ab"#);
        assert_eq!(
            lexer.exact_string_radius(letters),
            Ok(None),
            "'é' kills it at once"
        );
        let either = read(&mut lexer, 2, br#""1"#);
        assert_eq!(
            lexer.exact_string_radius(either),
            Ok(None),
            "digits go on after 3"
        );
        let endless = read(&mut lexer, 3, br#""ab"#);
        assert_eq!(lexer.exact_string_radius(endless), Ok(None));
    }

    #[test]
    fn string_radii_do_not_depend_on_how_finely_classes_split_characters() {
        let bodies = [
            r#""[^"\\\x00-\x1F]*""#,
            r#""[^"\\\x00-\x1F]{0,3}""#,
            r#""(?:[a-z]|[^"\\\x00-\x1F]{2}){0,5}""#,
        ];
        let splitter = scattered_chars();
        let mut split = lexer(&[bodies[0], bodies[1], bodies[2], &splitter]);
        assert!(
            split.classes() > 40,
            "the splitter makes {} classes",
            split.classes()
        );
        let mut plain = lexer(&bodies);
        for t in 0..bodies.len() as u32 {
            for text in [&br#"""#[..], br#""a"#, br#""ab"#] {
                let (a, b) = (read(&mut split, t, text), read(&mut plain, t, text));
                assert_eq!(
                    split.string_radius(a).expect("within limits"),
                    plain.string_radius(b).expect("within limits"),
                    "{} after {text:?}",
                    bodies[t as usize]
                );
                assert_eq!(split.free_in_strings(a), plain.free_in_strings(b));
            }
        }
        let body = read(&mut split, 0, br#""ab"#);
        assert!(split.free_in_strings(body), "a string body loops");
        assert_eq!(split.string_radius(body), Ok(MAX_RADIUS));
    }

    /// The radius the generic exploration of lexer states finds.
    fn explored_radius(lexer: &mut Lexer, state: LexId) -> u8 {
        let classes = lexer.text_classes().to_vec();
        let step = |s, class| {
            let next = lexer.next(s, class)?;
            Ok((next, next == LEX_DEAD || !lexer.accepts(next).is_empty()))
        };
        radius_within(state, &classes, MAX_TEXT_EXPLORED, step, &mut Vec::new())
            .expect("within limits")
    }

    #[test]
    fn looping_radius_agrees_with_exploring() {
        let patterns = [
            r#""[^"\\\x00-\x1F]*""#,
            r#"[a-z ]*x{3}[a-z]{0,2}"#,
            r#"(?:[ -~]*|ab{5}c)"#,
            r#"[ -~]*(?:"|[0-9]{3}z)"#,
            r#"[ -~]*abc"#,
            r#""key": "[^"]*""#,
        ];
        let mut checked = 0;
        for (t, _) in patterns.iter().enumerate() {
            for text in [
                &b""[..],
                b"\"",
                b"\"ke",
                b"ab",
                b"abx",
                b"xx",
                b"a1",
                b"a12",
            ] {
                let mut lexer = lexer(&patterns);
                let state = read(&mut lexer, t as u32, text);
                if state == LEX_DEAD || !lexer.accepts(state).is_empty() {
                    continue;
                }
                if let Some(radius) = lexer.looping_radius(state) {
                    let explored = explored_radius(&mut lexer, state);
                    assert_eq!(radius, explored, "{} after {text:?}", patterns[t]);
                    checked += 1;
                }
            }
        }
        assert!(checked >= 10, "only {checked} looping states checked");
    }

    #[test]
    fn chain_radii_agree_with_exploring() {
        let patterns = [
            r#""[a-z ]{0,100}""#,
            r#""[ -~]{2,20}""#,
            r#"[a-z]{3,40}x"#,
            r#"(?:ab){0,30}c"#,
            r#""(?:[a-z]{0,5}|[0-9]{0,50})""#,
            // Letters and other text lead to different states, all surviving forever.
            r#""(?:[a-z][ -~]|[ -`{-~][ -~]){0,1000}""#,
        ];
        let mut checked = 0;
        for (t, pattern) in patterns.iter().enumerate() {
            for depth in [0usize, 1, 2, 5, 17, 19, 39, 45, 70, 99, 100] {
                let text: Vec<u8> = std::iter::once(b'"')
                    .chain(std::iter::repeat_n(b'a', depth))
                    .collect();
                // From the start, after the quote, and after `depth` letters.
                for prefix in [&text[..0], &text[..1], &text[..]] {
                    let mut chained = lexer(&patterns);
                    let state = read(&mut chained, t as u32, prefix);
                    if chained.stops_walk(state) {
                        continue;
                    }
                    // Ask a later state first too, so chains meet radii already known.
                    let later = read(&mut chained, t as u32, &text[..text.len().min(3)]);
                    if !chained.stops_walk(later) {
                        chained.radius(later, TEXT).expect("within limits");
                    }
                    let radius = chained.radius(state, TEXT).expect("within limits");
                    let mut fresh = lexer(&patterns);
                    let state = read(&mut fresh, t as u32, prefix);
                    let explored = explored_radius(&mut fresh, state);
                    assert_eq!(radius, explored, "{pattern} after {prefix:?}");
                    checked += 1;
                }
            }
        }
        assert!(checked >= 60, "only {checked} states checked");
    }

    #[test]
    fn signatures_within_a_depth_read_alike_far_from_a_count_limit() {
        let mut lexer = lexer(&[r#"[a-z]{0,40}""#, r#"[a-z]*""#]);
        let after = |lexer: &mut Lexer, n: usize| read(lexer, 0, "a".repeat(n).as_bytes());
        let (five, ten, thirty_five) = (
            after(&mut lexer, 5),
            after(&mut lexer, 10),
            after(&mut lexer, 35),
        );
        assert_ne!(five, ten, "a lexer state per count");
        // Within 8 bytes, 35 and 30 characters left read alike; 5 left end sooner.
        assert_eq!(lexer.signature(five, 8), lexer.signature(ten, 8));
        assert_ne!(lexer.signature(five, 8), lexer.signature(thirty_five, 8));
        // The whole graphs differ, and so do the graphs within as many bytes as they count.
        assert_ne!(
            lexer.signature(five, u32::MAX),
            lexer.signature(ten, u32::MAX)
        );
        assert_ne!(lexer.signature(five, 31), lexer.signature(ten, 31));
        // A cut graph never reads like the whole one, nor like one cut elsewhere.
        let open = read(&mut lexer, 1, b"ab");
        assert_ne!(lexer.signature(open, 8), lexer.signature(five, 8));
        assert_ne!(lexer.signature(five, 8), lexer.signature(five, 9));
    }

    #[test]
    fn signatures_see_the_future_not_the_past() {
        let mut lexer = lexer(&[
            r#""name": "[a-z ]*""#,
            r#""city": "[a-z ]*""#,
            r#""zip": "[0-9]*""#,
        ]);
        let name = read(&mut lexer, 0, br#""name": "al"#);
        let city = read(&mut lexer, 1, br#""city": "par"#);
        let zip = read(&mut lexer, 2, br#""zip": "75"#);
        assert_ne!(name, city, "different terminals, different lexer states");
        assert_eq!(
            lexer.signature(name, u32::MAX),
            lexer.signature(city, u32::MAX)
        );
        assert_ne!(
            lexer.signature(name, u32::MAX),
            lexer.signature(zip, u32::MAX)
        );
        let key = read(&mut lexer, 0, br#""na"#);
        assert_ne!(
            lexer.signature(key, u32::MAX),
            lexer.signature(name, u32::MAX)
        );
    }

    #[test]
    fn an_undeclared_key_is_free_in_strings_though_no_one_state_loops() {
        // The shape of the keys an object leaves open: a run of printable ASCII (the
        // characters of its declared keys and more), then, on any other character, anything.
        let mut lexer = lexer(&[
            r#""[ !#-\[\]-~]*([^ -~][^"\\\x00-\x1F]*)?""#,
            r#""[ !#-\[\]-~]*""#,
            r#""[ !#-\[\]-~]*([^ -~][^"\\\x00-\x1F]*)?"x"#,
        ]);
        let key = read(&mut lexer, 0, br#""ab"#);
        let chars = lexer.char_classes();
        let members = lexer.states[key as usize].clone();
        assert!(
            members
                .iter()
                .all(|&(t, s)| !lexer.loops_on_string_chars(t, s, &chars)),
            "no one state loops on every character"
        );
        assert!(
            lexer.free_in_strings(key),
            "the ASCII loop and its way out live through any run together"
        );
        assert_eq!(lexer.string_radius(key).expect("within limits"), MAX_RADIUS);
        let ascii = read(&mut lexer, 1, br#""ab"#);
        assert!(
            !lexer.free_in_strings(ascii),
            "without a way out, 'é' kills it"
        );
        let ending = read(&mut lexer, 2, br#""ab"#);
        assert!(
            lexer.free_in_strings(ending),
            "a match after the quote is not reached through string characters"
        );
    }

    #[test]
    fn a_dot_that_leaves_out_the_line_separators_is_free_in_strings() {
        // `^.+@.+$` as JSON text: ECMA-262's `.` matches neither U+2028 nor U+2029.
        let dot = r#"[^"\\\x00-\x1F\x{2028}\x{2029}]"#;
        let mut lexer = lexer(&[
            &format!(r#""{dot}+@{dot}+""#),
            r#""[^"\\\x00-\x1F\x{2029}]*""#,
        ]);
        let address = read(&mut lexer, 0, br#""user@ex"#);
        assert!(lexer.free_in_strings(address));
        assert_eq!(
            lexer.string_radius(address).expect("within limits"),
            MAX_RADIUS
        );
        let one_left_out = read(&mut lexer, 1, br#""ab"#);
        assert!(
            lexer.free_in_strings(one_left_out),
            "U+2029 is not a string character"
        );
        assert!(!crate::token_index::is_string_char('\u{2028}'));
        assert!(
            crate::token_index::is_string_char('\u{2027}')
                && crate::token_index::is_string_char('\u{202A}')
        );
    }

    #[test]
    fn members_living_through_any_text_are_one_part() {
        let mut lexer = lexer(&[
            r#""name": [a-z]+"#,
            r#""nick": [a-z]+"#,
            r#""[^"]*hipchat[^"]*""#,
            r#""[^"]*github[^"]*""#,
            r#""[^"]*jira[^"]*""#,
        ]);
        let quote = lexer.byte_classes()[b'"' as usize] as usize;
        let all = lexer.start(&[0, 1, 2, 3, 4]).expect("starts");
        let key = lexer.next(all, quote).expect("steps");
        let parts = lexer.parts_by_terminal(key, 4).expect("splits");
        let terminals: Vec<Vec<u32>> = parts
            .iter()
            .map(|&part| {
                let mut ts: Vec<u32> = lexer.states[part as usize].iter().map(|m| m.0).collect();
                ts.dedup();
                ts
            })
            .collect();
        assert_eq!(terminals, [vec![0], vec![1], vec![2, 3, 4]]);
        let patterns = lexer.start(&[2, 3, 4]).expect("starts");
        let patterns = lexer.next(patterns, quote).expect("steps");
        assert!(
            lexer
                .parts_by_terminal(patterns, 3)
                .expect("splits")
                .is_empty(),
            "a state of only such members is walked whole"
        );
    }

    #[test]
    fn a_state_of_many_terminals_splits_into_one_part_per_terminal() {
        let mut lexer = lexer(&[r#""name": [a-z]+"#, r#""nick": [a-z]+"#, "[0-9]+", "[a-z]+"]);
        let all = lexer.start(&[0, 1, 2, 3]).expect("starts");
        assert!(lexer.parts_by_terminal(all, 5).expect("splits").is_empty());
        let parts = lexer.parts_by_terminal(all, 4).expect("splits");
        assert_eq!(parts.len(), 4);
        for (t, &part) in parts.iter().enumerate() {
            assert!(lexer.states[part as usize]
                .iter()
                .all(|&(u, _)| u == t as u32));
            assert_eq!(
                part,
                lexer.start(&[t as u32]).expect("starts"),
                "terminal {t}"
            );
        }
        // After `"n`, two terminals are left: fewer than asked for.
        let quote = lexer
            .next(all, lexer.byte_class[usize::from(b'"')] as usize)
            .expect("steps");
        let n = lexer
            .next(quote, lexer.byte_class[usize::from(b'n')] as usize)
            .expect("steps");
        assert!(lexer.parts_by_terminal(n, 3).expect("splits").is_empty());
        assert_eq!(lexer.parts_by_terminal(n, 2).expect("splits").len(), 2);
    }
}
