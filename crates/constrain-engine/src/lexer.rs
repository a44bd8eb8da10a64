//! The lexer: one Thompson NFA per terminal, and a lazily built DFA over them.
//!
//! A terminal's NFA is compiled when a lexeme first may be that terminal: most terminals of a
//! large grammar are never needed by a given output, and none but the first is needed for the
//! first mask. The byte classes, which every terminal must agree with from the start, come
//! from the regular expressions themselves.
//!
//! A lexer state is the set of `(terminal, NFA state)` pairs still alive after the bytes read
//! since a lexeme started. States are interned, so two rows that expect the same terminals share
//! lexer states and their transitions. Every NFA state kept in a set can still reach a match, so
//! a non-empty lexer state always has a completion.

use regex_automata::nfa::thompson::{self, State, WhichCaptures, NFA};
use regex_automata::util::primitives::StateID;
use regex_syntax::hir::{Class, Hir, HirKind};
use regex_syntax::utf8::Utf8Sequences;
use rustc_hash::{FxHashMap, FxHashSet};

use crate::error::{GrammarError, MatchError};
use crate::limits::{Deadline, Limits};
use crate::text_run::{text_radius, MAX_RADIUS};
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
    /// The terminals' regular expressions, until their NFA is built.
    terminals: Vec<Option<Hir>>,
    /// Per terminal: its NFA once built (until then, one that never matches).
    nfas: Vec<NFA>,
    /// Per terminal, per NFA state: can it still reach a match? (Empty until built.)
    live: Vec<Vec<bool>>,
    compiler: thompson::Compiler,
    nfa_bytes: usize,
    max_terminal_nfa_bytes: usize,
    max_total_nfa_bytes: usize,
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
    /// Per state: whether it is free in strings (`None` until asked).
    free_in_strings: Vec<Option<bool>>,
    /// See `Automaton::set_deadline`.
    deadline: Option<Deadline>,
}

impl Lexer {
    /// A lexer over `terminals`, whose NFAs are built within the NFA budgets of `limits` as
    /// they are first needed.
    pub(crate) fn new(
        terminals: Vec<Hir>,
        limits: &Limits,
        deadline: &Deadline,
    ) -> Result<Lexer, GrammarError> {
        let mut boundary = [false; 256];
        for hir in &terminals {
            deadline.check()?;
            if !hir.properties().look_set().is_empty() {
                return Err(GrammarError::Unsupported {
                    what: format!("look-around assertion in regular expression {hir}"),
                });
            }
            mark_byte_boundaries(hir, &mut boundary);
        }
        let (byte_class, class_rep) = byte_classes(&boundary);
        let mut text_classes: Vec<usize> = (0..=255u8)
            .filter(|&b| is_text_byte(b))
            .map(|b| byte_class[b as usize] as usize)
            .collect();
        text_classes.dedup();
        let config = thompson::Config::new()
            .nfa_size_limit(Some(limits.max_terminal_nfa_bytes))
            .shrink(false)
            .utf8(false)
            .which_captures(WhichCaptures::None);
        let mut compiler = thompson::Compiler::new();
        compiler.configure(config);
        let never = NFA::never_match();
        let mut lexer = Lexer {
            nfas: vec![never; terminals.len()],
            live: vec![Vec::new(); terminals.len()],
            terminals: terminals.into_iter().map(Some).collect(),
            compiler,
            nfa_bytes: 0,
            max_terminal_nfa_bytes: limits.max_terminal_nfa_bytes,
            max_total_nfa_bytes: limits.max_total_nfa_bytes,
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
            free_in_strings: Vec::new(),
            deadline: None,
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

    pub(crate) fn set_deadline(&mut self, deadline: Option<Deadline>) {
        self.deadline = deadline;
    }

    /// Builds the NFA of terminal `t` if it is not built yet.
    fn build_nfa(&mut self, t: u32) -> Result<(), MatchError> {
        if let Some(deadline) = &self.deadline {
            deadline.check_match()?;
        }
        let Some(hir) = self.terminals[t as usize].take() else {
            return Ok(());
        };
        let nfa = self.compiler.build_from_hir(&hir).map_err(|e| {
            if e.size_limit().is_some() {
                MatchError::LimitExceeded {
                    what: "NFA size of one terminal (bytes)",
                    limit: self.max_terminal_nfa_bytes,
                }
            } else {
                MatchError::Terminal {
                    pattern: hir.to_string(),
                    message: e.to_string(),
                }
            }
        })?;
        self.nfa_bytes += nfa.memory_usage();
        if self.nfa_bytes > self.max_total_nfa_bytes {
            return Err(MatchError::LimitExceeded {
                what: "NFA size of all terminals (bytes)",
                limit: self.max_total_nfa_bytes,
            });
        }
        debug_assert!(
            (1..256).all(|b| self.byte_class[b] != self.byte_class[b - 1]
                || nfa.byte_classes().get(b as u8) == nfa.byte_classes().get(b as u8 - 1)),
            "the byte classes separate every pair of bytes the NFA of {hir} separates"
        );
        self.live[t as usize] = live_states(&nfa);
        self.nfas[t as usize] = nfa;
        Ok(())
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
            self.build_nfa(t)?;
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
        if let Some(deadline) = &self.deadline {
            deadline.check_match()?;
        }
        let byte = self.class_rep[class];
        let mut set = Vec::new();
        let mut seen = FxHashSet::default();
        for i in 0..self.states[state as usize].len() {
            let (t, s) = self.states[state as usize][i];
            if let Some(next) = self.step_nfa(t, s, byte) {
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
        if let Some(radius) = self.looping_radius(state) {
            self.text_radius[state as usize] = Some(radius);
            return Ok(radius);
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

    /// The text radius of `state` read off the NFAs when one of its NFA states loops on every
    /// text byte (a string body, free text): the lexeme then never dies on text, and the
    /// radius is one less than the fewest text bytes after which some NFA state of the set
    /// can match (levels of NFA states, not lexer states, so many keys in one set cost
    /// little). `None` without such a loop.
    fn looping_radius(&self, state: LexId) -> Option<u8> {
        let set = &self.states[state as usize];
        let bytes: Vec<u8> = self
            .text_classes
            .iter()
            .map(|&c| self.class_rep[c])
            .collect();
        let mut out = Vec::new();
        let mut seen = FxHashSet::default();
        let loops = set.iter().any(|&(t, s)| {
            bytes.iter().all(|&b| {
                out.clear();
                seen.clear();
                if let Some(next) = self.step_nfa(t, s, b) {
                    self.close(t, next, &mut out, &mut seen);
                }
                out.contains(&(t, s))
            })
        });
        if !loops {
            return None;
        }
        let mut levels: FxHashSet<Vec<(u32, u32)>> = FxHashSet::default();
        let mut level: Vec<(u32, u32)> = set.to_vec();
        for depth in 0..MAX_RADIUS {
            let mut next = Vec::new();
            seen.clear();
            for &(t, s) in &level {
                for &b in &bytes {
                    if let Some(n) = self.step_nfa(t, s, b) {
                        self.close(t, n, &mut next, &mut seen);
                    }
                }
            }
            if next.iter().any(|&(t, s)| self.is_match(t, s)) {
                return Some(depth);
            }
            next.sort_unstable();
            if !levels.insert(next.clone()) {
                break;
            }
            level = next;
        }
        Some(MAX_RADIUS)
    }

    /// Whether any run of whole string characters (see `token_index::is_string_char`) read
    /// from `state` keeps the lexeme alive and never lets it end: one of its NFA states comes
    /// back to itself after every such character, and no match state is reachable through
    /// their bytes. A lexeme walk then takes a whole subtree of such characters at once, in
    /// any script.
    pub(crate) fn free_in_strings(&mut self, state: LexId) -> bool {
        if let Some(known) = self.free_in_strings[state as usize] {
            return known;
        }
        let set = &self.states[state as usize];
        let free = set.iter().any(|&(t, s)| self.loops_on_string_chars(t, s))
            && !self.match_reachable_in_strings(set);
        self.free_in_strings[state as usize] = Some(free);
        free
    }

    /// Whether a match state is reachable from `set` through bytes of string characters
    /// (any byte from 0x80 on: more paths than UTF-8 allows, which only errs towards "yes").
    fn match_reachable_in_strings(&self, set: &[(u32, u32)]) -> bool {
        // One byte of every class that holds a byte of a string character.
        let string_byte = |b: u8| b >= b' ' && b != b'"' && b != b'\\';
        let mut bytes: Vec<u8> = (0..=255u8).filter(|&b| string_byte(b)).collect();
        bytes.dedup_by_key(|b| self.byte_class[*b as usize]);
        let mut seen = FxHashSet::default();
        let mut work: Vec<(u32, u32)> = set.to_vec();
        let mut found = Vec::new();
        for &e in set {
            seen.insert(e);
        }
        while let Some((t, s)) = work.pop() {
            if self.is_match(t, s) {
                return true;
            }
            for &b in &bytes {
                if let Some(next) = self.step_nfa(t, s, b) {
                    found.clear();
                    self.close(t, next, &mut found, &mut seen);
                    work.extend_from_slice(&found);
                }
            }
        }
        false
    }

    /// Whether NFA state `s` of terminal `t` comes back to itself after every string character.
    fn loops_on_string_chars(&self, t: u32, s: u32) -> bool {
        const MAX_PATHS: usize = 4096;
        let mut paths = 0usize;
        // Depth-first over the byte classes of each sequence: (position, NFA states).
        for seq in STRING_CHAR_SEQUENCES.iter() {
            let mut stack: Vec<(usize, Vec<(u32, u32)>)> = vec![(0, vec![(t, s)])];
            while let Some((at, states)) = stack.pop() {
                if at == seq.len() {
                    if !states.contains(&(t, s)) {
                        return false;
                    }
                    continue;
                }
                let (lo, hi) = seq[at];
                let mut class = self.byte_class[lo as usize] as usize;
                loop {
                    paths += 1;
                    if paths > MAX_PATHS {
                        return false;
                    }
                    let byte = self.class_rep[class].max(lo);
                    let mut next = Vec::new();
                    let mut seen = FxHashSet::default();
                    for &(tt, ss) in &states {
                        if let Some(n) = self.step_nfa(tt, ss, byte) {
                            self.close(tt, n, &mut next, &mut seen);
                        }
                    }
                    if next.is_empty() {
                        return false;
                    }
                    stack.push((at + 1, next));
                    class += 1;
                    if class >= self.class_rep.len() || self.class_rep[class] > hi {
                        break;
                    }
                }
            }
        }
        true
    }

    /// NFA state `s` of terminal `t` after `byte`, if it reads it.
    fn step_nfa(&self, t: u32, s: u32, byte: u8) -> Option<StateID> {
        match self.nfas[t as usize].state(StateID::new_unchecked(s as usize)) {
            State::ByteRange { trans } => trans.matches_byte(byte).then_some(trans.next),
            State::Sparse(sparse) => sparse.matches_byte(byte),
            State::Dense(dense) => dense.matches_byte(byte),
            _ => None,
        }
    }

    fn is_match(&self, t: u32, s: u32) -> bool {
        matches!(
            self.nfas[t as usize].state(StateID::new_unchecked(s as usize)),
            State::Match { .. }
        )
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
            .filter(|&&(t, s)| self.is_match(t, s))
            .map(|&(t, _)| t)
            .collect();
        accepts.dedup();
        self.extends.push(accepts.len() < set.len());
        self.text_radius.push(None);
        self.free_in_strings.push(None);
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

/// The UTF-8 byte ranges of string characters (see `token_index::is_string_char`), one
/// sequence of ranges per character length and lead-byte range; ASCII first, where most
/// states that do not loop fail.
static STRING_CHAR_SEQUENCES: std::sync::LazyLock<Vec<Vec<(u8, u8)>>> =
    std::sync::LazyLock::new(|| {
        let mut sequences: Vec<Vec<(u8, u8)>> = [(b'#', b'['), (b' ', b'!'), (b']', 0x7F)]
            .iter()
            .map(|&r| vec![r])
            .collect();
        for seq in Utf8Sequences::new('\u{80}', char::MAX) {
            sequences.push(seq.as_slice().iter().map(|r| (r.start, r.end)).collect());
        }
        sequences
    });

/// Marks where byte classes must split for `hir`: around every literal byte, at the ends of
/// every byte range, and at the ends of the UTF-8 byte ranges of every Unicode range (as its
/// NFA will spell them).
fn mark_byte_boundaries(hir: &Hir, boundary: &mut [bool; 256]) {
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
        Lexer::new(hirs, &Limits::default(), &Deadline::after(None)).expect("builds")
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
