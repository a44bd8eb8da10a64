//! The NFAs of the terminals, compiled when first needed, a large terminal in two pieces, and
//! pieces with the same expression sharing one NFA.
//!
//! A JSON object member is one terminal, `"key": value`, and a position where an object may go
//! on starts every member's lexeme at once. A member whose value is large (a string with a
//! `maxLength` of a few hundred characters and JSON escapes is tens of thousands of NFA states)
//! is split: its *head*, the small leading part (the key), is compiled when the lexeme starts,
//! and its *rest* when the head is read to its end. Until then, a member costs its key.
//!
//! A lexer state holds `(terminal, state)` pairs: the head's NFA states first, then the rest's,
//! numbered after the head's. A head's match state stands for "the rest starts here": the
//! lexer replaces it by the rest's start (see [`Terminals::enter_rests`]), and the analyses
//! that read the NFAs without building (text radii, string loops) take it for a match, which
//! only ever makes them answer more cautiously.
//!
//! A graph with edge bounds (see `RegexGraph::with_edge_bounds`) counts the edges it has
//! read: its members are numbered `count * states + state`, so each count is a member of its
//! own while the NFA stays the size of the graph. A step that passes the marker of an edge's
//! end adds one; a member is kept only while some path from it ends within the bounds.

use std::cell::OnceCell;
use std::collections::VecDeque;
use std::sync::Arc;

use regex_automata::nfa::thompson::{self, BuildError, State, WhichCaptures, NFA};
use regex_automata::util::primitives::StateID;
use regex_syntax::hir::{Class, Hir, HirKind};
use rustc_hash::{FxHashMap, FxHashSet};

use crate::bytes::{is_string_byte, is_text_byte};
use crate::error::{Budget, MatchError};
use crate::grammar::{any_bit_in, fingerprint, same_hir, RegexGraph, Terminal};
use crate::limits::{Deadline, Limits};

/// States an ε-closure search tracks in a list before it switches to a set.
const SMALL_CLOSURE: usize = 32;

/// Estimated NFA states above which a terminal is split into head and rest.
const SPLIT_ABOVE: usize = 4096;

/// Estimated NFA states a head may have.
const MAX_HEAD: usize = 512;

/// The bit an ε-closure of a piece that counts edges sets on the states it reached through
/// an edge's end (see [`Counter`]).
const PAST_EDGE: u32 = 1 << 31;

/// How a piece compiled from a graph with edge bounds counts the edges read: member `s` is
/// NFA state `s % states` after `s / states` edges. The count `max + 1` stands for a member
/// that does not count (see [`Terminals::uncounted`]).
struct Counter {
    states: u32,
    min: u32,
    max: u32,
    /// Per NFA state: the graph state its edge leads to (`u32::MAX` for a state on no edge:
    /// a graph state's own alternatives, its marker, the match).
    target: Box<[u32]>,
    /// The graph, whose path lengths per state (`RegexGraph::path_lengths`) say which members
    /// can still end within the bounds.
    graph: Arc<RegexGraph>,
    /// The most edges any graph state needs to an accepting one.
    longest_shortest: u32,
}

impl Counter {
    /// The counter of graph `g` compiled as `nfa` (whose markers are its only captures).
    fn new(g: &Arc<RegexGraph>, nfa: &NFA) -> Option<Counter> {
        let (min, max) = g.edge_bounds()?;
        let (preds, _) = predecessors(nfa, |_| true);
        let mut target = vec![u32::MAX; nfa.states().len()].into_boxed_slice();
        // Backwards from each marker to the markers before it: the states of the edges into it.
        for (m, state) in nfa.states().iter().enumerate() {
            let State::Capture { group_index, .. } = state else {
                continue;
            };
            let vertex = group_index.as_u32();
            let mut stack: Vec<u32> = preds[m].iter().map(|&(p, _)| p).collect();
            while let Some(at) = stack.pop() {
                let at_state = nfa.state(StateID::new_unchecked(at as usize));
                if target[at as usize] == vertex || matches!(at_state, State::Capture { .. }) {
                    continue;
                }
                target[at as usize] = vertex;
                stack.extend(preds[at as usize].iter().map(|&(p, _)| p));
            }
        }
        Some(Counter {
            states: nfa.states().len() as u32,
            min,
            max,
            target,
            graph: g.clone(),
            longest_shortest: g.longest_shortest_path(),
        })
    }

    /// Whether NFA state `sid` (a match when `is_match`) after `count` edges can still end
    /// within the bounds.
    fn live(&self, count: u32, sid: u32, is_match: bool) -> bool {
        if is_match {
            return (self.min..=self.max).contains(&count);
        }
        let vertex = self.target[sid as usize];
        // Its edge ends at `vertex` with one more.
        let Some(at_vertex) = count.checked_add(1).filter(|&c| c <= self.max) else {
            return false;
        };
        vertex != u32::MAX
            && any_bit_in(
                &self.graph.path_lengths()[vertex as usize],
                self.min.saturating_sub(at_vertex),
                self.max - at_vertex,
            )
    }

    /// The count of members that do not count.
    fn uncounted(&self) -> u32 {
        self.max + 1
    }

    /// How many more edges a member after `count` edges reads as the NFA does without a
    /// count: none before it has read the fewest edges; after, as many as leave room for the
    /// longest of the shortest ways to an end (with one to spare for an edge half read), so
    /// that every state the NFA keeps alive that far, the count keeps too.
    fn edges_free_after(&self, count: u32) -> u32 {
        if count == self.uncounted() {
            u32::MAX
        } else if count < self.min {
            0
        } else {
            (self.max - count).saturating_sub(self.longest_shortest + 2)
        }
    }

    /// How many more edges of string bytes a member after `count` edges survives whenever
    /// its NFA state would, without ending where that would not: [`Self::edges_free_after`],
    /// and short of the fewest edges too where the count only delays the end (see
    /// [`RegexGraph::short_counts_only_delay_ends`]).
    fn edges_alive_after(&self, count: u32) -> u32 {
        if count < self.min && self.graph.short_counts_only_delay_ends() {
            (self.max - count).saturating_sub(self.longest_shortest + 2)
        } else {
            self.edges_free_after(count)
        }
    }

    /// Approximate memory held.
    fn bytes(&self) -> usize {
        let lengths = self.graph.path_lengths();
        self.target.len() * 4 + lengths.iter().map(|l| l.len() * 8).sum::<usize>()
    }
}

/// One NFA of a terminal, compiled when first needed.
struct Piece {
    /// What to compile, until compiled.
    source: Option<Terminal>,
    built: bool,
    nfa: NFA,
    /// The piece whose compilation made `nfa` (pieces with equal expressions share it).
    nfa_id: u32,
    /// Per NFA state: can it still reach a match?
    live: Vec<bool>,
    /// Per NFA state: the fewest text bytes after which it can match (capped at `u8::MAX`;
    /// empty until first asked).
    text_distance: Box<[u8]>,
    /// Per NFA state: whether it loops on every text byte (0 until asked, then 1 for no and 2
    /// for yes).
    text_loops: Vec<u8>,
    /// Per NFA state: whether it reaches a control byte or a match through string bytes (see
    /// [`Terminals::reaches_control_in_strings`]; empty until first asked).
    control_reaching: Box<[bool]>,
    /// Per NFA state: whether it reaches a match through string bytes (see
    /// [`Terminals::reaches_match_in_strings`]; empty until either this or
    /// `control_reaching` is first asked).
    match_reaching: Box<[bool]>,
    /// Per NFA state: the live byte-consuming and match states its ε-moves reach (filled as
    /// steps first land on it: every new lexer state asks again), with [`PAST_EDGE`] on
    /// those reached through an edge's end when the piece counts edges.
    closures: Box<[OnceCell<Box<[u32]>>]>,
    /// Set for a graph with edge bounds.
    counter: Option<Counter>,
}

impl Piece {
    /// A piece not compiled yet; `never` is a shared NFA that matches nothing (building one
    /// per piece cost more than the rest of setting up the terminals).
    fn new(source: Option<Terminal>, never: &NFA) -> Piece {
        Piece {
            source,
            built: false,
            nfa: never.clone(),
            nfa_id: 0,
            live: Vec::new(),
            text_distance: Box::default(),
            text_loops: Vec::new(),
            control_reaching: Box::default(),
            match_reaching: Box::default(),
            closures: Box::default(),
            counter: None,
        }
    }

    /// Fills `match_reaching` and `control_reaching` on first use.
    fn find_reaching_in_strings(&mut self) {
        if self.control_reaching.is_empty() {
            (self.match_reaching, self.control_reaching) = reaching_in_strings(&self.nfa);
        }
    }

    fn state(&self, sid: StateID) -> &State {
        self.nfa.state(sid)
    }
}

/// The pieces of every terminal: `2 t` is the head of terminal `t` (without an expression when
/// the terminal is not split), `2 t + 1` its rest (the whole terminal when not split).
pub(crate) struct Terminals {
    pieces: Vec<Piece>,
    compiler: thompson::Compiler,
    nfa_bytes: usize,
    max_terminal_nfa_bytes: usize,
    max_total_nfa_bytes: usize,
    byte_class: [u8; 256],
    deadline: Option<Deadline>,
    /// The expressions compiled so far, by [`fingerprint`], with their piece: members of
    /// several objects often end in the same value, whose NFA is then compiled once.
    compiled: FxHashMap<u64, Vec<(Hir, usize)>>,
    /// Per piece and NFA state: the round of the set it was last added to (see
    /// [`Terminals::new_set`]).
    stamps: Vec<Vec<u32>>,
    round: u32,
}

/// The piece of terminal `t`'s head.
fn head(t: u32) -> usize {
    2 * t as usize
}

/// The piece of terminal `t`'s rest.
fn rest(t: u32) -> usize {
    2 * t as usize + 1
}

impl Terminals {
    /// The terminals `hirs`, split where large; nothing is compiled yet. `byte_class` must
    /// separate every pair of bytes any terminal does.
    pub(crate) fn new(
        terminals: Vec<Terminal>,
        limits: &Limits,
        byte_class: [u8; 256],
    ) -> Terminals {
        let mut pieces = Vec::with_capacity(2 * terminals.len());
        let never = NFA::never_match();
        for terminal in terminals {
            // A graph is compiled whole.
            let (head, rest) = match terminal {
                Terminal::Regex(hir) => {
                    let (head, rest) = split(hir);
                    (head.map(Terminal::Regex), Terminal::Regex(rest))
                }
                graph => (None, graph),
            };
            pieces.push(Piece::new(head, &never));
            pieces.push(Piece::new(Some(rest), &never));
        }
        let config = thompson::Config::new()
            .nfa_size_limit(Some(limits.max_terminal_nfa_bytes))
            .shrink(false)
            .utf8(false)
            .which_captures(WhichCaptures::None);
        let mut compiler = thompson::Compiler::new();
        compiler.configure(config);
        Terminals {
            pieces,
            compiler,
            nfa_bytes: 0,
            max_terminal_nfa_bytes: limits.max_terminal_nfa_bytes,
            max_total_nfa_bytes: limits.max_total_nfa_bytes,
            byte_class,
            deadline: None,
            compiled: FxHashMap::default(),
            stamps: Vec::new(),
            round: 0,
        }
    }

    /// Starts a new set of members: until the next call, [`Self::close`] adds each member
    /// once, however many steps reach it (the states of a counted string reach the same NFA
    /// states from many members).
    pub(crate) fn new_set(&mut self) {
        self.round = self.round.wrapping_add(1);
        if self.round == 0 {
            self.stamps.iter_mut().for_each(|stamps| stamps.fill(0));
            self.round = 1;
        }
    }

    pub(crate) fn set_deadline(&mut self, deadline: Option<Deadline>) {
        self.deadline = deadline;
    }

    /// How many head states terminal `t` has: none until its head is compiled, and none when
    /// it is not split. Its members below that are head states.
    #[inline]
    fn head_len(&self, t: u32) -> u32 {
        let head = &self.pieces[head(t)];
        if head.built {
            head.nfa.states().len() as u32
        } else {
            0
        }
    }

    /// The piece and NFA state of member `s` of terminal `t`.
    #[inline]
    fn locate(&self, t: u32, s: u32) -> (usize, StateID) {
        let (p, sid, _) = self.locate_counted(t, s);
        (p, sid)
    }

    /// [`Self::locate`], and the edges read (0 in a piece that does not count them).
    #[inline]
    fn locate_counted(&self, t: u32, s: u32) -> (usize, StateID, u32) {
        let head_len = self.head_len(t);
        if s < head_len {
            return (head(t), StateID::new_unchecked(s as usize), 0);
        }
        let s = s - head_len;
        match &self.pieces[rest(t)].counter {
            None => (rest(t), StateID::new_unchecked(s as usize), 0),
            Some(c) => (
                rest(t),
                StateID::new_unchecked((s % c.states) as usize),
                s / c.states,
            ),
        }
    }

    /// How many more edges (so, at least, bytes) member `s` of `t` reads as its NFA state
    /// does alone: all, unless `t` counts edges; then fewer near a bound (see [`Counter`]).
    pub(crate) fn reads_as_its_nfa_for(&self, t: u32, s: u32) -> u32 {
        self.counter_of(t, s)
            .map_or(u32::MAX, |(c, count)| c.edges_free_after(count))
    }

    /// How many more edges of string bytes member `s` of `t` survives whenever its NFA
    /// state alone would (without ending where that would not): all, unless `t` counts
    /// edges; then fewer near the most (see `Counter::edges_alive_after`). What radii
    /// need, where [`Self::reads_as_its_nfa_for`] is what equal walks need.
    pub(crate) fn survives_as_its_nfa_for(&self, t: u32, s: u32) -> u32 {
        self.counter_of(t, s)
            .map_or(u32::MAX, |(c, count)| c.edges_alive_after(count))
    }

    /// The counter of member `s` of `t` and its count, when `t` counts edges.
    fn counter_of(&self, t: u32, s: u32) -> Option<(&Counter, u32)> {
        let (p, _, count) = self.locate_counted(t, s);
        self.pieces[p].counter.as_ref().map(|c| (c, count))
    }

    /// Member `s` of `t` with its count dropped, when `t` counts edges and `s` counts: a
    /// member that reads as the NFA does, whatever the count (see
    /// [`Self::reads_as_its_nfa_for`]).
    pub(crate) fn uncounted(&self, t: u32, s: u32) -> Option<u32> {
        let (p, sid, count) = self.locate_counted(t, s);
        let c = self.pieces[p].counter.as_ref()?;
        (count != c.uncounted()).then(|| c.uncounted() * c.states + sid.as_u32())
    }

    /// Which compiled NFA member `s` of `t` is in (equal for terminals whose pieces share an
    /// expression), and its state there; `None` in a head, whose future is not compiled yet.
    pub(crate) fn compiled_state(&self, t: u32, s: u32) -> Option<(u32, u32)> {
        let head_len = self.head_len(t);
        (s >= head_len).then(|| (self.pieces[rest(t)].nfa_id, s - head_len))
    }

    /// Whether member `s` of terminal `t` is a state of its head.
    pub(crate) fn in_head(&self, t: u32, s: u32) -> bool {
        s < self.head_len(t)
    }

    /// Compiles piece `p` if it is not compiled yet.
    fn build(&mut self, p: usize) -> Result<(), MatchError> {
        let Some(source) = self.pieces[p].source.take() else {
            return Ok(());
        };
        if let Some(deadline) = &self.deadline {
            deadline.check_match()?;
        }
        let hir = match source {
            Terminal::Regex(hir) => hir,
            Terminal::Graph(g) => return self.build_graph(p, &g),
        };
        let key = fingerprint(&hir);
        let twin = self
            .compiled
            .get(&key)
            .and_then(|built| built.iter().find(|(h, _)| same_hir(h, &hir)))
            .map(|&(_, q)| q);
        if let Some(q) = twin {
            // NFAs are shared handles; the analyses are redone lazily.
            let (nfa, live) = (self.pieces[q].nfa.clone(), self.pieces[q].live.clone());
            let nfa_id = self.pieces[q].nfa_id;
            self.install(p, nfa, nfa_id, live);
            return Ok(());
        }
        let built = self.compiler.build_from_hir(&hir).map_err(Box::new);
        self.install_built(p, built, || hir.to_string())?;
        self.compiled.entry(key).or_default().push((hir, p));
        Ok(())
    }

    /// Compiles graph `g` as piece `p`.
    fn build_graph(&mut self, p: usize, g: &Arc<RegexGraph>) -> Result<(), MatchError> {
        let built = g.build_nfa(&self.compiler, Some(self.max_terminal_nfa_bytes));
        let counter = built.as_ref().ok().and_then(|nfa| Counter::new(g, nfa));
        if let Some(c) = &counter {
            // Members number every count of every state, and the uncounted ones.
            if u64::from(c.max + 2) * u64::from(c.states) > u64::from(u32::MAX >> 1) {
                return Err(MatchError::LimitExceeded {
                    budget: Budget::CountedGraph,
                    limit: (u32::MAX >> 1) as usize,
                });
            }
            self.nfa_bytes += c.bytes();
        }
        self.install_built(p, built, || {
            format!("a graph of {} states", g.states().len())
        })?;
        self.pieces[p].counter = counter;
        Ok(())
    }

    /// Installs a freshly built NFA as piece `p` within the NFA budgets; `what` names its
    /// source in errors.
    fn install_built(
        &mut self,
        p: usize,
        built: Result<NFA, Box<BuildError>>,
        what: impl Fn() -> String,
    ) -> Result<(), MatchError> {
        let nfa = built.map_err(|e| {
            if e.size_limit().is_some() {
                MatchError::LimitExceeded {
                    budget: Budget::TerminalNfaBytes,
                    limit: self.max_terminal_nfa_bytes,
                }
            } else {
                MatchError::Terminal {
                    pattern: what(),
                    message: e.to_string(),
                }
            }
        })?;
        self.nfa_bytes += nfa.memory_usage();
        if self.nfa_bytes > self.max_total_nfa_bytes {
            return Err(MatchError::LimitExceeded {
                budget: Budget::TotalNfaBytes,
                limit: self.max_total_nfa_bytes,
            });
        }
        debug_assert!(
            (1..256).all(|b| self.byte_class[b] != self.byte_class[b - 1]
                || nfa.byte_classes().get(b as u8) == nfa.byte_classes().get(b as u8 - 1)),
            "the byte classes separate every pair of bytes the NFA of {} separates",
            what()
        );
        let live = live_states(&nfa);
        self.install(p, nfa, p as u32, live);
        Ok(())
    }

    /// Makes `nfa` (compiled for piece `nfa_id`, whose live states are `live`) the compiled
    /// form of piece `p`.
    fn install(&mut self, p: usize, nfa: NFA, nfa_id: u32, live: Vec<bool>) {
        let piece = &mut self.pieces[p];
        piece.built = true;
        piece.nfa_id = nfa_id;
        piece.live = live;
        piece.text_loops = vec![0; nfa.states().len()];
        piece.closures = (0..nfa.states().len()).map(|_| OnceCell::new()).collect();
        if self.stamps.len() <= p {
            self.stamps.resize_with(p + 1, Vec::new);
        }
        self.stamps[p] = vec![0; nfa.states().len()];
        piece.nfa = nfa;
    }

    /// Adds the members at the start of a lexeme of terminal `t`.
    pub(crate) fn start(&mut self, t: u32, out: &mut Vec<(u32, u32)>) -> Result<(), MatchError> {
        let split = self.pieces[head(t)].source.is_some() || self.pieces[head(t)].built;
        let first = if split { head(t) } else { rest(t) };
        self.build(first)?;
        let start = self.pieces[first].nfa.start_anchored();
        self.close(t, first, start, 0, out);
        Ok(())
    }

    /// Replaces every head match in `set` by the start of its terminal's rest, compiling the
    /// rest when this is its first time.
    pub(crate) fn enter_rests(&mut self, set: &mut Vec<(u32, u32)>) -> Result<(), MatchError> {
        let mut i = 0;
        while i < set.len() {
            let (t, s) = set[i];
            if !(self.in_head(t, s) && self.is_match(t, s)) {
                i += 1;
                continue;
            }
            set.swap_remove(i);
            self.build(rest(t))?;
            let start = self.pieces[rest(t)].nfa.start_anchored();
            self.close(t, rest(t), start, 0, set);
        }
        Ok(())
    }

    /// The NFA state of piece `p` after member `s` of `t` reads `byte`, if it reads it.
    #[inline]
    fn step(&self, t: u32, s: u32, byte: u8) -> Option<(usize, StateID)> {
        let (p, sid) = self.locate(t, s);
        Some((p, step_state(self.pieces[p].state(sid), byte)?))
    }

    /// Adds to `cuts` (a bit per byte) every byte `b` where member `s` of `t` may step
    /// differently on `b` than on `b - 1`: the ends of its transitions' byte ranges.
    pub(crate) fn mark_cuts(&self, t: u32, s: u32, cuts: &mut ByteSet) {
        let (p, sid) = self.locate(t, s);
        add_cuts(self.pieces[p].state(sid), cuts);
    }

    /// Where member `s` of `t` goes on `byte`, as a number: equal for two bytes exactly when
    /// the member steps alike on both (0 when it dies).
    #[inline]
    pub(crate) fn step_target(&self, t: u32, s: u32, byte: u8) -> u32 {
        self.step(t, s, byte)
            .map_or(0, |(_, next)| next.as_u32() + 1)
    }

    /// Whether member `s` of `t` is a match state (of its head too: see the module notes).
    pub(crate) fn is_match(&self, t: u32, s: u32) -> bool {
        let (p, sid) = self.locate(t, s);
        matches!(self.pieces[p].state(sid), State::Match { .. })
    }

    /// The members `byte` leads the members of `set` to, sorted.
    pub(crate) fn step_set(&mut self, set: &[(u32, u32)], byte: u8) -> Vec<(u32, u32)> {
        let mut next = Vec::new();
        self.new_set();
        for &(t, s) in set {
            self.step_and_close(t, s, byte, &mut next);
        }
        next.sort_unstable();
        next
    }

    /// Adds the live byte-consuming and match states of piece `p` of `t` reachable from
    /// `start` by ε-moves, as members: those not added since [`Self::new_set`]. `count` is
    /// the edges read before `start` (in a piece that counts them; see [`Counter`]).
    pub(crate) fn close(
        &mut self,
        t: u32,
        p: usize,
        start: StateID,
        count: u32,
        out: &mut Vec<(u32, u32)>,
    ) {
        let offset = if p == rest(t) { self.head_len(t) } else { 0 };
        let piece = &self.pieces[p];
        let closure =
            piece.closures[start.as_usize()].get_or_init(|| epsilon_closure(piece, start));
        if let Some(counter) = &piece.counter {
            // Members differ by count too: the lexer's interning removes repeats.
            let counts = count != counter.uncounted();
            for &reached in closure.iter() {
                let sid = reached & !PAST_EDGE;
                if !counts {
                    out.push((t, offset + count * counter.states + sid));
                    continue;
                }
                let count = count + u32::from(reached & PAST_EDGE != 0);
                let is_match = matches!(
                    piece.state(StateID::new_unchecked(sid as usize)),
                    State::Match { .. }
                );
                if counter.live(count, sid, is_match) {
                    out.push((t, offset + count * counter.states + sid));
                }
            }
            return;
        }
        let stamps = &mut self.stamps[p];
        for &sid in closure.iter() {
            let stamp = &mut stamps[sid as usize];
            if *stamp != self.round {
                *stamp = self.round;
                out.push((t, offset + sid));
            }
        }
    }

    /// Adds the members reached from member `s` of `t` by `byte` (see [`Self::close`]).
    pub(crate) fn step_and_close(&mut self, t: u32, s: u32, byte: u8, out: &mut Vec<(u32, u32)>) {
        let (p, sid, count) = self.locate_counted(t, s);
        if let Some(next) = step_state(self.pieces[p].state(sid), byte) {
            self.close(t, p, next, count, out);
        }
    }

    /// Whether member `s` of `t` comes back to itself after every byte of `bytes`
    /// (remembered per NFA state, as only one alphabet, the text bytes, is ever asked about).
    pub(crate) fn loops_on_text(&mut self, t: u32, s: u32, bytes: &[u8]) -> bool {
        if self.uncounted(t, s).is_some() {
            // Every text byte is a character read: the count moves on.
            return false;
        }
        let (p, sid) = self.locate(t, s);
        let known = self.pieces[p].text_loops[sid.as_usize()];
        if known != 0 {
            return known == 2;
        }
        let mut out = Vec::new();
        let loops = bytes.iter().all(|&b| {
            out.clear();
            self.new_set();
            self.step_and_close(t, s, b, &mut out);
            out.contains(&(t, s))
        });
        self.pieces[p].text_loops[sid.as_usize()] = if loops { 2 } else { 1 };
        loops
    }

    /// The fewest text bytes after which member `s` of `t` can match (`u8::MAX` when none or
    /// too many; for a head state, up to its head's end, which is a bound from below).
    pub(crate) fn text_distance(&mut self, t: u32, s: u32) -> u8 {
        let (p, sid) = self.locate(t, s);
        let piece = &mut self.pieces[p];
        if piece.text_distance.is_empty() {
            piece.text_distance = text_distances(&piece.nfa);
        }
        piece.text_distance[sid.as_usize()]
    }

    /// Whether member `s` of `t` reaches, through ε-moves and bytes of string characters
    /// (any byte from 0x80 on: more paths than UTF-8 allows, which only errs towards "yes"),
    /// a state that reads a control byte (below 0x20) or is a match (a head's match stands
    /// for its rest, unread). Found for every state of an NFA at once, by one backward pass
    /// over its transitions.
    pub(crate) fn reaches_control_in_strings(&mut self, t: u32, s: u32) -> bool {
        let (p, sid) = self.locate(t, s);
        let piece = &mut self.pieces[p];
        piece.find_reaching_in_strings();
        piece.control_reaching[sid.as_usize()]
    }

    /// Whether member `s` of `t` reaches, through ε-moves and bytes of string characters (as
    /// in [`Self::reaches_control_in_strings`]), a match state (a head's match standing for
    /// its rest, unread). Found for every state of an NFA at once, by one backward pass.
    pub(crate) fn reaches_match_in_strings(&mut self, t: u32, s: u32) -> bool {
        let (p, sid) = self.locate(t, s);
        let piece = &mut self.pieces[p];
        piece.find_reaching_in_strings();
        piece.match_reaching[sid.as_usize()]
    }

    /// How many printable ASCII bytes other than `"` and `\` member `s` of `t` reads itself
    /// (of 93), and the first of them.
    pub(crate) fn ascii_string_bytes_read(&self, t: u32, s: u32) -> (u32, Option<u8>) {
        let (p, sid) = self.locate(t, s);
        let (mut read, mut first) = (0, None::<u8>);
        for_each_transition(self.pieces[p].state(sid), |reads, _| {
            let Some((start, end)) = reads else { return };
            let (start, end) = (start.max(b' '), end.min(b'~'));
            if start > end {
                return;
            }
            let escaped = [b'"', b'\\'];
            let inside = escaped.iter().filter(|&&b| (start..=end).contains(&b));
            read += u32::from(end - start) + 1 - inside.count() as u32;
            let lowest = (start..=end).find(|b| !escaped.contains(b));
            first = match (first, lowest) {
                (Some(f), Some(l)) => Some(f.min(l)),
                (f, l) => f.or(l),
            };
        });
        (read, first)
    }

    /// The NFA holding member `s` of `t`, and its state there.
    pub(crate) fn nfa_of(&self, t: u32, s: u32) -> (&NFA, StateID) {
        let (p, sid) = self.locate(t, s);
        (&self.pieces[p].nfa, sid)
    }
}

/// Where `state` goes on `byte`, if it reads it.
#[inline]
fn step_state(state: &State, byte: u8) -> Option<StateID> {
    match state {
        State::ByteRange { trans } => trans.matches_byte(byte).then_some(trans.next),
        State::Sparse(sparse) => sparse.matches_byte(byte),
        State::Dense(dense) => dense.matches_byte(byte),
        _ => None,
    }
}

/// The live byte-consuming and match states of `piece` that ε-moves reach from `start`.
fn epsilon_closure(piece: &Piece, start: StateID) -> Box<[u32]> {
    if !piece.live[start.as_usize()] {
        return Box::default();
    }
    if let State::ByteRange { .. } | State::Sparse(_) | State::Dense(_) | State::Match { .. } =
        piece.state(start)
    {
        // Most steps land on a state that reads a byte itself.
        return Box::new([start.as_u32()]);
    }
    let mut found = Vec::new();
    // Closures are mostly a handful of states: a list until it grows, then a set.
    let mut visited: Vec<StateID> = Vec::new();
    let mut visited_set: FxHashSet<StateID> = FxHashSet::default();
    // With the flag set once an edge's end marker is passed (a capture; see `Counter`). Each
    // state is reached on one side of it only: labels read something, so no ε-path crosses
    // two markers, and the states before one belong to the edges into it alone.
    let counts = piece.counter.is_some();
    let mut stack = vec![(start, 0u32)];
    while let Some((sid, past)) = stack.pop() {
        let new = if visited_set.is_empty() && visited.len() < SMALL_CLOSURE {
            !visited.contains(&sid) && {
                visited.push(sid);
                true
            }
        } else {
            if visited_set.is_empty() {
                visited_set.extend(visited.drain(..));
            }
            visited_set.insert(sid)
        };
        if !new || !piece.live[sid.as_usize()] {
            continue;
        }
        match piece.state(sid) {
            State::ByteRange { .. } | State::Sparse(_) | State::Dense(_) | State::Match { .. } => {
                found.push(sid.as_u32() | past);
            }
            State::Union { alternates } => {
                stack.extend(alternates.iter().rev().map(|&alt| (alt, past)))
            }
            State::BinaryUnion { alt1, alt2 } => stack.extend([(*alt2, past), (*alt1, past)]),
            State::Capture { next, .. } if counts => stack.push((*next, PAST_EDGE)),
            State::Capture { next, .. } | State::Look { next, .. } => stack.push((*next, past)),
            State::Fail => {}
        }
    }
    // Sorted, a step from one member adds a sorted run, which the lexer's sort then merges.
    found.sort_unstable();
    found.into()
}

/// Splits a large `hir` into a head and the rest, when it is a concatenation whose leading
/// parts are small; otherwise no head and all of it.
fn split(hir: Hir) -> (Option<Hir>, Hir) {
    if estimate(&hir, SPLIT_ABOVE) <= SPLIT_ABOVE {
        return (None, hir);
    }
    let HirKind::Concat(parts) = hir.kind() else {
        return (None, hir);
    };
    // A head reads a bounded text: inside it, the distance to its end stands for the
    // distance to a match, which a loop would make too short to be of use.
    let mut size = 0;
    let cut = parts
        .iter()
        .take_while(|part| {
            size += estimate(part, MAX_HEAD);
            size <= MAX_HEAD && part.properties().maximum_len().is_some()
        })
        .count();
    if cut == 0 || cut == parts.len() {
        return (None, hir);
    }
    let HirKind::Concat(mut parts) = hir.into_kind() else {
        unreachable!("a concatenation a moment ago");
    };
    let rest = Hir::concat(parts.split_off(cut));
    let head = Hir::concat(parts);
    if rest.properties().minimum_len().is_none() {
        // The rest matches nothing; so does the whole, which needs no head.
        return (None, Hir::concat(vec![head, rest]));
    }
    (Some(head), rest)
}

/// About how many NFA states `hir` compiles to, counting up to `cap` only.
fn estimate(hir: &Hir, cap: usize) -> usize {
    let size = match hir.kind() {
        HirKind::Empty | HirKind::Look(_) => 1,
        HirKind::Literal(literal) => literal.0.len(),
        HirKind::Class(Class::Bytes(class)) => class.ranges().len() + 1,
        HirKind::Class(Class::Unicode(class)) => 4 * class.ranges().len() + 1,
        HirKind::Repetition(repetition) => {
            let copies = repetition.max.unwrap_or(repetition.min + 1).max(1) as usize;
            estimate(&repetition.sub, cap).saturating_mul(copies)
        }
        HirKind::Capture(capture) => estimate(&capture.sub, cap),
        HirKind::Concat(parts) | HirKind::Alternation(parts) => {
            let mut total = parts.len();
            for part in parts {
                total = total.saturating_add(estimate(part, cap));
                if total > cap {
                    break;
                }
            }
            total
        }
    };
    size.min(cap.saturating_add(1))
}

/// How an NFA transition reads: nothing, a byte among those asked about (see
/// [`predecessors`]) and maybe others, or only other bytes.
#[derive(Clone, Copy, PartialEq)]
enum Edge {
    Empty,
    Counted,
    Other,
}

/// Calls `f` with every transition of `state`: the byte range it reads (`None` for an ε-move)
/// and the state it leads to.
fn for_each_transition(state: &State, mut f: impl FnMut(Option<(u8, u8)>, StateID)) {
    match state {
        State::ByteRange { trans } => f(Some((trans.start, trans.end)), trans.next),
        State::Sparse(sparse) => sparse
            .transitions
            .iter()
            .for_each(|t| f(Some((t.start, t.end)), t.next)),
        State::Dense(dense) => {
            for (b, &next) in dense.transitions.iter().enumerate() {
                if next != StateID::ZERO {
                    f(Some((b as u8, b as u8)), next);
                }
            }
        }
        State::Union { alternates } => alternates.iter().for_each(|&s| f(None, s)),
        State::BinaryUnion { alt1, alt2 } => {
            f(None, *alt1);
            f(None, *alt2);
        }
        State::Capture { next, .. } | State::Look { next, .. } => f(None, *next),
        State::Match { .. } | State::Fail => {}
    }
}

/// Per NFA state, the states with a transition to it, and how that transition reads
/// (`counted`: the bytes of [`Edge::Counted`]); plus the match states.
fn predecessors(nfa: &NFA, counted: fn(u8) -> bool) -> (Vec<Vec<(u32, Edge)>>, Vec<u32>) {
    let mut preds: Vec<Vec<(u32, Edge)>> = vec![Vec::new(); nfa.states().len()];
    let mut matches = Vec::new();
    for (i, state) in nfa.states().iter().enumerate() {
        if matches!(state, State::Match { .. }) {
            matches.push(i as u32);
        }
        for_each_transition(state, |reads, to| {
            let edge = match reads {
                None => Edge::Empty,
                Some((start, end)) if (start..=end).any(counted) => Edge::Counted,
                Some(_) => Edge::Other,
            };
            preds[to.as_usize()].push((i as u32, edge));
        });
    }
    (preds, matches)
}

/// Per NFA state, whether a match state is reachable from it through ε-moves and bytes of
/// string characters (see [`Terminals::reaches_match_in_strings`]), and whether a match or a
/// state that reads a control byte is (see [`Terminals::reaches_control_in_strings`]): one
/// table of predecessors for both.
fn reaching_in_strings(nfa: &NFA) -> (Box<[bool]>, Box<[bool]>) {
    let (preds, matches) = predecessors(nfa, is_string_byte);
    let mut seeds = matches.clone();
    for (i, state) in nfa.states().iter().enumerate() {
        let mut reads_control = false;
        for_each_transition(state, |reads, _| {
            reads_control |= reads.is_some_and(|(start, _)| start < b' ');
        });
        if reads_control {
            seeds.push(i as u32);
        }
    }
    let through_strings = |edge| edge != Edge::Other;
    (
        reached_backwards(&preds, matches, through_strings).into_boxed_slice(),
        reached_backwards(&preds, seeds, through_strings).into_boxed_slice(),
    )
}

/// NFA states from which a match state is reachable.
fn live_states(nfa: &NFA) -> Vec<bool> {
    // Thompson's construction leads every state to the end of its piece: only a `Fail` state
    // (an empty class or alternation) leaves states that cannot reach a match.
    let fails = |state: &State| match state {
        State::Fail => true,
        State::Union { alternates } => alternates.is_empty(),
        _ => false,
    };
    if !nfa.states().iter().any(fails) {
        let all = vec![true; nfa.states().len()];
        debug_assert_eq!(
            all,
            reverse_reachable(nfa),
            "an NFA without failure is all live"
        );
        return all;
    }
    reverse_reachable(nfa)
}

/// [`live_states`] by reverse reachability from the match states.
fn reverse_reachable(nfa: &NFA) -> Vec<bool> {
    let (preds, matches) = predecessors(nfa, is_text_byte);
    reached_backwards(&preds, matches, |_| true)
}

/// Per NFA state, whether one of `seeds` is reachable from it through transitions that
/// `through` takes (`preds` as [`predecessors`] gives them).
fn reached_backwards(
    preds: &[Vec<(u32, Edge)>],
    mut stack: Vec<u32>,
    through: impl Fn(Edge) -> bool,
) -> Vec<bool> {
    let mut reached = vec![false; preds.len()];
    while let Some(s) = stack.pop() {
        if std::mem::replace(&mut reached[s as usize], true) {
            continue;
        }
        stack.extend(
            preds[s as usize]
                .iter()
                .filter(|&&(p, edge)| through(edge) && !reached[p as usize])
                .map(|&(p, _)| p),
        );
    }
    reached
}

/// Per NFA state, the fewest text bytes read on the way to a match (`u8::MAX` when none or
/// too many): a 0-1 breadth-first search backwards from the match states.
fn text_distances(nfa: &NFA) -> Box<[u8]> {
    let (preds, matches) = predecessors(nfa, is_text_byte);
    let mut distance = vec![u8::MAX; preds.len()].into_boxed_slice();
    for &m in &matches {
        distance[m as usize] = 0;
    }
    let mut queue: VecDeque<u32> = matches.into();
    while let Some(s) = queue.pop_front() {
        let d = distance[s as usize];
        for &(p, edge) in &preds[s as usize] {
            let through = match edge {
                Edge::Empty => d,
                Edge::Counted => d.saturating_add(1),
                Edge::Other => continue,
            };
            if through < distance[p as usize] {
                distance[p as usize] = through;
                if edge == Edge::Empty {
                    queue.push_front(p);
                } else {
                    queue.push_back(p);
                }
            }
        }
    }
    distance
}

/// Adds to `cuts` the bytes where the transitions of `state` begin or end: two bytes with
/// none of them between lead to the same place.
fn add_cuts(state: &State, cuts: &mut ByteSet) {
    for_each_transition(state, |reads, _| {
        if let Some((start, end)) = reads {
            cuts.insert(start);
            if let Some(after) = end.checked_add(1) {
                cuts.insert(after);
            }
        }
    });
}

/// A set of bytes, one bit each.
#[derive(Clone, Copy, Default, Debug)]
pub(crate) struct ByteSet([u64; 4]);

impl ByteSet {
    pub(crate) fn insert(&mut self, byte: u8) {
        self.0[usize::from(byte / 64)] |= 1 << (byte % 64);
    }

    pub(crate) fn contains(&self, byte: u8) -> bool {
        self.0[usize::from(byte / 64)] >> (byte % 64) & 1 == 1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(pattern: &str) -> Hir {
        regex_syntax::parse(pattern).expect("valid pattern")
    }

    #[test]
    fn large_concatenations_split_after_their_small_leading_parts() {
        let (head, rest) = split(parse(r#""key": "[a-z]{0,3000}""#));
        assert_eq!(
            head.map(|h| h.to_string()),
            Some(r#"(?:"key": ")"#.to_string())
        );
        assert_eq!(rest.to_string(), r#"(?:[a-z]{0,3000}")"#);
        let (head, _) = split(parse(r#""key": "[a-z]{0,30}""#));
        assert!(head.is_none(), "small terminals are compiled whole");
        let (head, _) = split(parse(r#"[a-z]{0,3000}|x"#));
        assert!(head.is_none(), "only concatenations split");
        let (head, rest) = split(parse(r#""key": "[a-z]*[0-9]{0,3000}""#));
        assert_eq!(
            head.map(|h| h.to_string()),
            Some(r#"(?:"key": ")"#.to_string()),
            "a head does not loop"
        );
        assert_eq!(rest.to_string(), r#"(?:[a-z]*[0-9]{0,3000}")"#);
    }

    /// The members of every terminal after reading `text` from its start.
    fn read(terminals: &mut Terminals, t: u32, text: &[u8]) -> Vec<(u32, u32)> {
        let mut set = Vec::new();
        terminals.new_set();
        terminals.start(t, &mut set).expect("builds");
        terminals.enter_rests(&mut set).expect("builds");
        set.sort_unstable();
        set.dedup();
        for &b in text {
            let mut next = Vec::new();
            terminals.new_set();
            for &(t, s) in &set {
                terminals.step_and_close(t, s, b, &mut next);
            }
            terminals.enter_rests(&mut next).expect("builds");
            next.sort_unstable();
            next.dedup();
            set = next;
        }
        set
    }

    #[test]
    fn structural_equality_tells_expressions_apart_at_any_depth() {
        assert!(same_hir(
            &parse("a(?:b|c)*d{2,3}"),
            &parse("a(?:b|c)*d{2,3}")
        ));
        assert!(!same_hir(
            &parse("a(?:b|c)*d{2,3}"),
            &parse("a(?:b|c)*d{2,4}")
        ));
        assert!(!same_hir(&parse("a(?:b|c)*"), &parse("a(?:b|d)*")));
        // Nested deeper than a recursive comparison could go on a small stack.
        let deep = |last: &[u8]| {
            let mut hir = Hir::literal(last);
            for _ in 0..100_000 {
                hir = Hir::alternation(vec![
                    Hir::concat(vec![Hir::literal(*b"y"), hir]),
                    Hir::literal(*b"z"),
                ]);
            }
            hir
        };
        let (one, twin, other) = (deep(b"x"), deep(b"x"), deep(b"w"));
        assert!(same_hir(&one, &twin));
        assert_eq!(fingerprint(&one), fingerprint(&twin));
        assert!(!same_hir(&one, &other));
    }

    #[test]
    fn equal_pieces_are_compiled_once_and_read_alike() {
        let value = r#"[a-z]{0,3000}""#;
        let hirs = vec![
            parse(&format!(r#""a": "{value}"#)),
            parse(&format!(r#""b": "{value}"#)),
            parse(r#""c": "[0-9]{0,3000}""#),
        ];
        let mut terminals = Terminals::new(
            hirs.into_iter().map(Terminal::Regex).collect(),
            &Limits::default(),
            std::array::from_fn(|b| b as u8),
        );
        let a = read(&mut terminals, 0, br#""a": "xyz""#);
        let after_a = terminals.nfa_bytes;
        let b = read(&mut terminals, 1, br#""b": "xyz""#);
        assert_eq!(
            terminals.nfa_bytes,
            after_a + terminals.pieces[head(1)].nfa.memory_usage(),
            "the rest of `b` is the rest of `a`"
        );
        read(&mut terminals, 2, br#""c": "1""#);
        assert!(
            terminals.nfa_bytes > after_a + terminals.pieces[head(1)].nfa.memory_usage(),
            "a different rest is compiled"
        );
        assert!(a.iter().any(|&(t, s)| terminals.is_match(t, s)));
        assert!(b.iter().any(|&(t, s)| terminals.is_match(t, s)));
        assert!(read(&mut terminals, 1, br#""b": "xyz"#)
            .iter()
            .all(|&(t, s)| !terminals.is_match(t, s)));
        assert!(read(&mut terminals, 1, br#""b": "1""#).is_empty());
    }
}
