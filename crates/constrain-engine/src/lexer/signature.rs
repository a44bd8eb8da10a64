//! Names for what a lexer state can still read: its *signature*, valid across grammars,
//! and its cheaper *identity*, valid within one; lexeme masks are cached under both.

use regex_automata::nfa::thompson::State;
use regex_automata::util::primitives::StateID;

use super::{LexId, Lexer};

/// Most NFA states one [`Lexer::signature`] describes; a lexer state whose reachable graph is
/// larger has no signature.
pub(super) const MAX_SIGNATURE_STATES: usize = 4096;

/// NFA state ids renumbered in discovery order, for [`Lexer::signature`]: a slot per NFA
/// state, valid while its stamp is the current round's, so no map is hashed or cleared.
#[derive(Debug, Default)]
pub(super) struct Renumbering {
    number: Vec<u32>,
    stamp: Vec<u32>,
    round: u32,
}

impl Renumbering {
    /// Forgets every number, for an NFA of `states` states.
    pub(super) fn start(&mut self, states: usize) {
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

    pub(super) fn get(&self, state: u32) -> Option<u32> {
        let i = state as usize;
        (self.stamp[i] == self.round).then(|| self.number[i])
    }

    pub(super) fn set(&mut self, state: u32, number: u32) {
        let i = state as usize;
        self.stamp[i] = self.round;
        self.number[i] = number;
    }
}

impl Lexer {
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
    pub(super) fn signature_with(
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
}
