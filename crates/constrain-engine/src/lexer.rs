//! The lexer: one Thompson NFA per terminal, and a lazily built DFA over them.
//!
//! A lexer state is the set of `(terminal, NFA state)` pairs still alive after the bytes read
//! since a lexeme started. States are interned, so two rows that expect the same terminals share
//! lexer states and their transitions. Every NFA state kept in a set can still reach a match, so
//! a non-empty lexer state always has a completion.

use regex_automata::nfa::thompson::{self, State, WhichCaptures, NFA};
use regex_automata::util::primitives::StateID;
use regex_syntax::hir::Hir;
use rustc_hash::{FxHashMap, FxHashSet};

use crate::error::{GrammarError, MatchError};
use crate::limits::{Deadline, Limits};
use crate::text_run::text_radius;
use crate::token_index::is_text_byte;

/// Index of a lexer state.
pub(crate) type LexId = u32;

/// The empty lexer state: nothing can follow.
pub(crate) const LEX_DEAD: LexId = 0;

const UNKNOWN: u32 = u32::MAX;

/// Most NFA states one [`Lexer::signature`] describes; a lexer state whose reachable graph is
/// larger has no signature.
const MAX_SIGNATURE_STATES: usize = 4096;

/// Terminal NFAs plus the lazily built lexer DFA.
pub(crate) struct Lexer {
    nfas: Vec<NFA>,
    /// Per terminal, per NFA state: can it still reach a match?
    live: Vec<Vec<bool>>,
    /// Byte -> equivalence class, over every terminal.
    byte_class: [u8; 256],
    /// One byte of every class.
    class_rep: Vec<u8>,
    states: Vec<Box<[(u32, u32)]>>,
    accepts: Vec<Box<[u32]>>,
    /// Whether any byte can extend the lexeme (some NFA state is not a match state).
    extends: Vec<bool>,
    ids: FxHashMap<Box<[(u32, u32)]>, LexId>,
    /// `states.len() * classes` transitions, `UNKNOWN` until computed.
    trans: Vec<u32>,
    starts: FxHashMap<Box<[u32]>, LexId>,
    max_states: usize,
    /// The classes of the text bytes (see `token_index::is_text_byte`).
    text_classes: Vec<usize>,
    /// Per state: its text radius (`None` until asked).
    text_radius: Vec<Option<u8>>,
}

impl Lexer {
    /// Compiles one NFA per terminal, within the NFA budgets of `limits`.
    pub(crate) fn new(
        terminals: &[Hir],
        limits: &Limits,
        deadline: &Deadline,
    ) -> Result<Lexer, GrammarError> {
        let config = thompson::Config::new()
            .nfa_size_limit(Some(limits.max_terminal_nfa_bytes))
            .shrink(false)
            .utf8(false)
            .which_captures(WhichCaptures::None);
        let mut nfas = Vec::with_capacity(terminals.len());
        let mut total = 0usize;
        for hir in terminals {
            deadline.check()?;
            if !hir.properties().look_set().is_empty() {
                return Err(GrammarError::Unsupported {
                    what: format!("look-around assertion in regular expression {hir}"),
                });
            }
            let nfa = thompson::Compiler::new()
                .configure(config.clone())
                .build_from_hir(hir)
                .map_err(|e| {
                    if e.size_limit().is_some() {
                        GrammarError::LimitExceeded {
                            what: "NFA size of one terminal (bytes)",
                            limit: limits.max_terminal_nfa_bytes,
                        }
                    } else {
                        GrammarError::Regex {
                            pattern: hir.to_string(),
                            message: e.to_string(),
                        }
                    }
                })?;
            total += nfa.memory_usage();
            if total > limits.max_total_nfa_bytes {
                return Err(GrammarError::LimitExceeded {
                    what: "NFA size of all terminals (bytes)",
                    limit: limits.max_total_nfa_bytes,
                });
            }
            nfas.push(nfa);
        }
        let live = nfas.iter().map(live_states).collect();
        let (byte_class, class_rep) = byte_classes(&nfas);
        let mut text_classes: Vec<usize> = (0..=255u8)
            .filter(|&b| is_text_byte(b))
            .map(|b| byte_class[b as usize] as usize)
            .collect();
        text_classes.dedup();
        let mut lexer = Lexer {
            nfas,
            live,
            byte_class,
            class_rep,
            states: Vec::new(),
            accepts: Vec::new(),
            extends: Vec::new(),
            ids: FxHashMap::default(),
            trans: Vec::new(),
            starts: FxHashMap::default(),
            max_states: limits.max_lexer_states,
            text_classes,
            text_radius: Vec::new(),
        };
        let dead = lexer
            .intern(Vec::new())
            .map_err(|_| GrammarError::LimitExceeded {
                what: "lexer states",
                limit: limits.max_lexer_states,
            })?;
        debug_assert_eq!(dead, LEX_DEAD);
        Ok(lexer)
    }

    /// The classes of the text bytes.
    pub(crate) fn text_classes(&self) -> &[usize] {
        &self.text_classes
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

    /// Whether a lexeme in `state` can still grow.
    pub(crate) fn extends(&self, state: LexId) -> bool {
        self.extends[state as usize]
    }

    /// The state at the start of a lexeme that may be any of `terminals` (sorted).
    pub(crate) fn start(&mut self, terminals: &[u32]) -> Result<LexId, MatchError> {
        if let Some(&id) = self.starts.get(terminals) {
            return Ok(id);
        }
        let mut set = Vec::new();
        let mut seen = FxHashSet::default();
        for &t in terminals {
            let start = self.nfas[t as usize].start_anchored();
            self.close(t, start, &mut set, &mut seen);
        }
        let id = self.intern(set)?;
        self.starts.insert(terminals.into(), id);
        Ok(id)
    }

    /// The state after reading a byte of class `class` in `state`.
    #[inline]
    pub(crate) fn next(&mut self, state: LexId, class: usize) -> Result<LexId, MatchError> {
        let slot = state as usize * self.class_rep.len() + class;
        let known = self.trans[slot];
        if known != UNKNOWN {
            return Ok(known);
        }
        let byte = self.class_rep[class];
        let mut set = Vec::new();
        let mut seen = FxHashSet::default();
        for i in 0..self.states[state as usize].len() {
            let (t, s) = self.states[state as usize][i];
            let next = match self.nfas[t as usize].state(StateID::new_unchecked(s as usize)) {
                State::ByteRange { trans } => trans.matches_byte(byte).then_some(trans.next),
                State::Sparse(sparse) => sparse.matches_byte(byte),
                State::Dense(dense) => dense.matches_byte(byte),
                _ => None,
            };
            if let Some(next) = next {
                self.close(t, next, &mut set, &mut seen);
            }
        }
        let id = self.intern(set)?;
        self.trans[slot] = id;
        Ok(id)
    }

    /// The text radius of `state` (see `text_run`): bad states are dead or accepting (where a
    /// lexeme walk stops).
    pub(crate) fn text_radius(&mut self, state: LexId) -> Result<u8, MatchError> {
        if let Some(known) = self.text_radius[state as usize] {
            return Ok(known);
        }
        let classes = std::mem::take(&mut self.text_classes);
        let radius = text_radius(state, &classes, |s, class| {
            let next = self.next(s, class)?;
            Ok((
                next,
                next == LEX_DEAD || !self.accepts[next as usize].is_empty(),
            ))
        });
        self.text_classes = classes;
        let radius = radius?;
        self.text_radius[state as usize] = Some(radius);
        Ok(radius)
    }

    /// What lexer state `state` can still read, with terminal and NFA state numbers left out:
    /// per terminal, the NFA graph reachable from its states, numbered in discovery order.
    ///
    /// Equal signatures mean that the same byte strings keep a lexeme alive and the same ones
    /// can end it, so the lexeme walks of the two states agree (see `mask::lexeme_mask`), in
    /// one grammar or across grammars. Concatenated terminals make this matter: the body of
    /// every `"key": "..."` is its own lexer state, but they all share one signature. `None`
    /// when the reachable graph has more than [`MAX_SIGNATURE_STATES`] states.
    pub(crate) fn signature(&self, state: LexId) -> Option<Box<[u32]>> {
        let set = &self.states[state as usize];
        let mut out = Vec::new();
        let mut local: FxHashMap<u32, u32> = FxHashMap::default();
        let mut queue: Vec<u32> = Vec::new();
        for group in set.chunk_by(|a, b| a.0 == b.0) {
            let nfa = &self.nfas[group[0].0 as usize];
            local.clear();
            queue.clear();
            for &(_, s) in group {
                local.insert(s, queue.len() as u32);
                queue.push(s);
            }
            out.extend([u32::MAX, group.len() as u32]);
            let mut at = 0;
            while at < queue.len() {
                if queue.len() > MAX_SIGNATURE_STATES {
                    return None;
                }
                let sid = StateID::new_unchecked(queue[at] as usize);
                at += 1;
                let mut id = |next: StateID| -> u32 {
                    let n = queue.len() as u32;
                    *local.entry(next.as_u32()).or_insert_with(|| {
                        queue.push(next.as_u32());
                        n
                    })
                };
                match nfa.state(sid) {
                    State::ByteRange { trans } => out.extend([
                        1,
                        u32::from(trans.start),
                        u32::from(trans.end),
                        id(trans.next),
                    ]),
                    State::Sparse(sparse) => {
                        out.extend([2, sparse.transitions.len() as u32]);
                        for t in sparse.transitions.iter() {
                            out.extend([u32::from(t.start), u32::from(t.end), id(t.next)]);
                        }
                    }
                    State::Dense(dense) => {
                        out.push(3);
                        for &next in dense.transitions.iter() {
                            // The zero state stands for "no transition" in a dense state.
                            out.push(if next == StateID::ZERO {
                                u32::MAX
                            } else {
                                id(next)
                            });
                        }
                    }
                    State::Look { look, next } => out.extend([4, look.as_repr(), id(*next)]),
                    State::Union { alternates } => {
                        out.extend([5, alternates.len() as u32]);
                        for &alt in alternates.iter() {
                            out.push(id(alt));
                        }
                    }
                    State::BinaryUnion { alt1, alt2 } => out.extend([6, id(*alt1), id(*alt2)]),
                    State::Capture { next, .. } => out.extend([7, id(*next)]),
                    State::Fail => out.push(8),
                    State::Match { .. } => out.push(9),
                }
            }
        }
        Some(out.into())
    }

    /// Adds the live byte-consuming and match states reachable from `start` by ε-moves.
    fn close(
        &self,
        t: u32,
        start: StateID,
        out: &mut Vec<(u32, u32)>,
        seen: &mut FxHashSet<(u32, u32)>,
    ) {
        let nfa = &self.nfas[t as usize];
        let live = &self.live[t as usize];
        let mut stack = vec![start];
        while let Some(sid) = stack.pop() {
            if !seen.insert((t, sid.as_u32())) || !live[sid.as_usize()] {
                continue;
            }
            match nfa.state(sid) {
                State::ByteRange { .. }
                | State::Sparse(_)
                | State::Dense(_)
                | State::Match { .. } => {
                    out.push((t, sid.as_u32()));
                }
                State::Union { alternates } => stack.extend(alternates.iter().rev().copied()),
                State::BinaryUnion { alt1, alt2 } => stack.extend([*alt2, *alt1]),
                State::Capture { next, .. } | State::Look { next, .. } => stack.push(*next),
                State::Fail => {}
            }
        }
    }

    fn intern(&mut self, mut set: Vec<(u32, u32)>) -> Result<LexId, MatchError> {
        set.sort_unstable();
        set.dedup();
        if let Some(&id) = self.ids.get(set.as_slice()) {
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
            .filter(|&&(t, s)| {
                matches!(
                    self.nfas[t as usize].state(StateID::new_unchecked(s as usize)),
                    State::Match { .. }
                )
            })
            .map(|&(t, _)| t)
            .collect();
        accepts.dedup();
        self.extends.push(accepts.len() < set.len());
        self.text_radius.push(None);
        let set: Box<[(u32, u32)]> = set.into();
        self.ids.insert(set.clone(), id);
        self.states.push(set);
        self.accepts.push(accepts.into());
        self.trans
            .extend(std::iter::repeat_n(UNKNOWN, self.class_rep.len()));
        Ok(id)
    }

    /// Number of lexer states built so far.
    pub(crate) fn state_count(&self) -> usize {
        self.states.len()
    }
}

/// NFA states from which a match state is reachable (reverse reachability from matches).
fn live_states(nfa: &NFA) -> Vec<bool> {
    let n = nfa.states().len();
    let mut preds: Vec<Vec<u32>> = vec![Vec::new(); n];
    let mut stack = Vec::new();
    for (i, state) in nfa.states().iter().enumerate() {
        let mut add = |to: StateID| preds[to.as_usize()].push(i as u32);
        match state {
            State::ByteRange { trans } => add(trans.next),
            State::Sparse(sparse) => sparse.transitions.iter().for_each(|t| add(t.next)),
            State::Dense(dense) => dense
                .transitions
                .iter()
                .filter(|&&s| s != StateID::ZERO)
                .for_each(|&s| add(s)),
            State::Union { alternates } => alternates.iter().for_each(|&s| add(s)),
            State::BinaryUnion { alt1, alt2 } => {
                add(*alt1);
                add(*alt2);
            }
            State::Capture { next, .. } | State::Look { next, .. } => add(*next),
            State::Match { .. } => stack.push(i as u32),
            State::Fail => {}
        }
    }
    let mut live = vec![false; n];
    while let Some(s) = stack.pop() {
        if std::mem::replace(&mut live[s as usize], true) {
            continue;
        }
        stack.extend(
            preds[s as usize]
                .iter()
                .copied()
                .filter(|&p| !live[p as usize]),
        );
    }
    live
}

/// The coarsest partition of bytes into classes that no terminal distinguishes within.
fn byte_classes(nfas: &[NFA]) -> ([u8; 256], Vec<u8>) {
    let mut boundary = [false; 256];
    for nfa in nfas {
        let classes = nfa.byte_classes();
        for (b, edge) in boundary.iter_mut().enumerate().skip(1) {
            if classes.get(b as u8) != classes.get(b as u8 - 1) {
                *edge = true;
            }
        }
    }
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
        Lexer::new(&hirs, &Limits::default(), &Deadline::after(None)).expect("builds")
    }

    fn read(lexer: &mut Lexer, terminal: u32, text: &[u8]) -> LexId {
        let mut state = lexer.start(&[terminal]).expect("starts");
        for &b in text {
            let class = lexer.byte_classes()[b as usize] as usize;
            state = lexer.next(state, class).expect("within limits");
        }
        state
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
        assert_eq!(lexer.signature(name), lexer.signature(city));
        assert_ne!(lexer.signature(name), lexer.signature(zip));
        let key = read(&mut lexer, 0, br#""na"#);
        assert_ne!(lexer.signature(key), lexer.signature(name));
    }
}
