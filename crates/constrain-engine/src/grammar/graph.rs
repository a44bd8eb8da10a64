//! Regular languages given as graphs whose edges read regular expressions.
//!
//! Some regular languages have a small automaton but only huge expressions: strings of a
//! pattern under a length bound (`(\S+\s+){0,49}\S+` within 500 characters) is a few states
//! per length, and an expression for it repeats the pattern once per length at every nesting
//! level. A [`RegexGraph`] hands the automaton over as it is; the lexer compiles it into one
//! NFA, where each edge becomes a copy of its label's NFA.
//!
//! The length bound itself need not be in the graph: a graph may bound the number of edges
//! its paths take ([`RegexGraph::with_edge_bounds`]), and the lexer counts them as it reads.
//! `(\S+\s+){0,49}\S+` within 500 characters is then the pattern's few states, not a copy of
//! them per length.

use std::sync::Arc;

use regex_automata::nfa::thompson::{self, BuildError, Builder, State, NFA};
use regex_automata::util::primitives::StateID;
use regex_syntax::hir::{Hir, HirKind};

use super::hir_size::hir_size;
use crate::error::GrammarError;

/// A regular language over bytes as a graph: a string is in it when some path from state 0
/// reads it, each edge reading one string of its label's language, and ends in an accepting
/// state.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RegexGraph {
    labels: Vec<Hir>,
    states: Vec<GraphState>,
    /// Fewest and most edges a path may take (see [`RegexGraph::with_edge_bounds`]).
    edge_bounds: Option<EdgeBounds>,
}

/// The bounds on the edges a graph's paths take, and what they allow from each state.
#[derive(Clone, Debug, PartialEq, Eq)]
struct EdgeBounds {
    min: u32,
    max: u32,
    /// Per state: the numbers of edges (up to `max`) of its paths to an accepting state
    /// through labels that match something, a bit each.
    path_lengths: Vec<Box<[u64]>>,
    /// Whether, short of `min` edges, the bounds keep alive every path that string bytes
    /// enter (see [`RegexGraph::short_counts_only_delay_ends`]).
    short_counts_only_delay_ends: bool,
}

/// Most edges a path of a graph with edge bounds may be held to.
pub const MAX_EDGE_BOUND: u32 = 1 << 16;

/// Most edges times lengths a graph with edge bounds may have: the lengths of its paths are
/// found one length at a time over every edge (see `RegexGraph::path_lengths`).
pub const MAX_EDGE_BOUND_WORK: u64 = 1 << 26;

/// One state of a [`RegexGraph`].
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct GraphState {
    /// Outgoing edges: `(label, target)`, indices into the graph's labels and states.
    pub edges: Vec<(u32, u32)>,
    /// Whether a path may end here.
    pub accepting: bool,
}

impl RegexGraph {
    /// The graph with edge labels `labels` and states `states` (state 0 starts). Labels are
    /// shared by index: a graph that reads the same class on many edges keeps one copy of it.
    pub fn new(labels: Vec<Hir>, states: Vec<GraphState>) -> Result<RegexGraph, GrammarError> {
        let bad = |what: String| GrammarError::Unsupported { what };
        if states.is_empty() {
            return Err(bad("a regular-expression graph without states".into()));
        }
        for (s, state) in states.iter().enumerate() {
            for &(label, target) in &state.edges {
                if label as usize >= labels.len() || target as usize >= states.len() {
                    return Err(bad(format!(
                        "edge ({label}, {target}) of graph state {s} names a missing label or state"
                    )));
                }
            }
        }
        if let Some(h) = labels
            .iter()
            .find(|h| !h.properties().look_set().is_empty())
        {
            return Err(bad(format!(
                "look-around assertion in regular expression {h}"
            )));
        }
        Ok(RegexGraph {
            labels,
            states,
            edge_bounds: None,
        })
    }

    /// The graph whose strings are read by paths of `min` to `max` edges only. Every label
    /// must match only non-empty strings, so that each edge reads something (a string of a
    /// pattern within a length bound: one edge per character, the lexer counting them).
    pub fn with_edge_bounds(mut self, min: u32, max: u32) -> Result<RegexGraph, GrammarError> {
        let bad = |what: String| GrammarError::Unsupported { what };
        if min > max || max > MAX_EDGE_BOUND {
            return Err(bad(format!(
                "edge bounds {min}..={max} of a graph (at most {MAX_EDGE_BOUND})"
            )));
        }
        if let Some(h) = self
            .labels
            .iter()
            .find(|h| h.properties().minimum_len() == Some(0))
        {
            return Err(bad(format!(
                "label {h} of a graph with edge bounds matches the empty string"
            )));
        }
        let edges: u64 = self.states.iter().map(|s| s.edges.len() as u64).sum();
        if edges.saturating_mul(u64::from(max) + 1) > MAX_EDGE_BOUND_WORK {
            return Err(bad(format!(
                "a graph of {edges} edges with paths of up to {max} edges (edges times lengths \
                 at most {MAX_EDGE_BOUND_WORK})"
            )));
        }
        let path_lengths = self.lengths_within(max);
        let open_upwards: Vec<bool> = path_lengths
            .iter()
            .map(|lengths| lengths_from_shortest_on(lengths, max))
            .collect();
        let short_counts_only_delay_ends = self.states.iter().all(|state| {
            state.edges.iter().all(|&(label, target)| {
                open_upwards[target as usize]
                    || starts_outside_strings(&self.labels[label as usize])
            })
        });
        self.edge_bounds = Some(EdgeBounds {
            min,
            max,
            path_lengths,
            short_counts_only_delay_ends,
        });
        Ok(self)
    }

    /// Whether a path that has read fewer than the fewest edges is kept alive by the bounds
    /// whenever it could be without them, as long as it has room before the most, for every
    /// run of string bytes (see `bytes::is_string_byte`) it reads: every edge such a
    /// byte begins leads to a state whose paths to an end take any number of edges from its
    /// fewest to the most. Short of the fewest, the count then only delays the end (the
    /// characters of a quoted string with a `minLength`: only the closing quote, which no
    /// string byte begins, leads to a state ending nothing longer). Lexer radii rest on it.
    pub(crate) fn short_counts_only_delay_ends(&self) -> bool {
        self.edge_bounds
            .as_ref()
            .is_some_and(|b| b.short_counts_only_delay_ends)
    }

    /// The fewest and most edges a path may take, when bounded.
    pub fn edge_bounds(&self) -> Option<(u32, u32)> {
        self.edge_bounds.as_ref().map(|b| (b.min, b.max))
    }

    /// Per state, for a graph with edge bounds: the numbers of edges (up to the most allowed)
    /// of its paths to an accepting state through labels that match something, a bit each
    /// (none without bounds).
    pub(crate) fn path_lengths(&self) -> &[Box<[u64]>] {
        self.edge_bounds
            .as_ref()
            .map_or(&[], |b| b.path_lengths.as_slice())
    }

    /// [`Self::path_lengths`] for paths of up to `max` edges: one length at a time over every
    /// edge.
    fn lengths_within(&self, max: u32) -> Vec<Box<[u64]>> {
        let max = max as usize;
        let words = max / 64 + 1;
        let n = self.states.len();
        let mut lengths: Vec<Box<[u64]>> = vec![vec![0u64; words].into(); n];
        for (s, state) in self.states.iter().enumerate() {
            if state.accepting {
                lengths[s][0] |= 1;
            }
        }
        let usable: Vec<bool> = self
            .labels
            .iter()
            .map(|h| h.properties().minimum_len().is_some())
            .collect();
        // Length `k` from the lengths `k - 1` of the targets, one length at a time.
        for k in 1..=max {
            let (word, bit) = ((k - 1) / 64, (k - 1) % 64);
            for s in 0..n {
                let reaches = self.states[s].edges.iter().any(|&(label, target)| {
                    usable[label as usize] && lengths[target as usize][word] >> bit & 1 == 1
                });
                if reaches {
                    lengths[s][k / 64] |= 1 << (k % 64);
                }
            }
        }
        lengths
    }

    /// The most edges any state that can reach an accepting one needs to (through labels that
    /// match something): past the start, a count of edges that leaves that many more free
    /// cannot end a path too early.
    pub(crate) fn longest_shortest_path(&self) -> u32 {
        let n = self.states.len();
        let mut into: Vec<Vec<u32>> = vec![Vec::new(); n];
        for (s, state) in self.states.iter().enumerate() {
            for &(label, target) in &state.edges {
                if self.labels[label as usize]
                    .properties()
                    .minimum_len()
                    .is_some()
                {
                    into[target as usize].push(s as u32);
                }
            }
        }
        let mut distance = vec![u32::MAX; n];
        let mut queue: std::collections::VecDeque<u32> = (0..n as u32)
            .filter(|&s| self.states[s as usize].accepting)
            .collect();
        queue.iter().for_each(|&s| distance[s as usize] = 0);
        while let Some(s) = queue.pop_front() {
            for &p in &into[s as usize] {
                if distance[p as usize] == u32::MAX {
                    distance[p as usize] = distance[s as usize] + 1;
                    queue.push_back(p);
                }
            }
        }
        distance
            .into_iter()
            .filter(|&d| d != u32::MAX)
            .max()
            .unwrap_or(0)
    }

    /// Whether a path from the start of at least `at_least` edges, within the bounds, reads
    /// a string of the language.
    fn bounded_path_from_start(&self, at_least: u32) -> bool {
        self.edge_bounds
            .as_ref()
            .is_some_and(|b| any_bit_in(&b.path_lengths[0], b.min.max(at_least), b.max))
    }

    /// The edge labels.
    pub fn labels(&self) -> &[Hir] {
        &self.labels
    }

    /// The states; state 0 starts.
    pub fn states(&self) -> &[GraphState] {
        &self.states
    }

    /// Roughly how many NFA states the graph compiles to: a copy of its label per edge, and
    /// one per state (see [`Expr::nfa_size_estimate`](crate::Expr::nfa_size_estimate)).
    pub(crate) fn nfa_size_estimate(&self, cap: usize) -> usize {
        let labels: Vec<usize> = self.labels.iter().map(|l| hir_size(l, cap)).collect();
        let mut total = self.states.len();
        for state in &self.states {
            for &(label, _) in &state.edges {
                total = total.saturating_add(labels[label as usize]);
                if total > cap {
                    return cap.saturating_add(1);
                }
            }
        }
        total
    }

    /// Whether the language is empty: no accepting state is reachable through edges whose
    /// labels match something.
    pub fn matches_nothing(&self) -> bool {
        if self.edge_bounds.is_some() {
            return !self.bounded_path_from_start(0);
        }
        !self.reaches_accepting(|h| h.properties().minimum_len().is_some())
    }

    /// Whether the empty string is in the language.
    pub fn matches_empty(&self) -> bool {
        if let Some((min, _)) = self.edge_bounds() {
            // Every edge reads something: only the path of no edge reads nothing.
            return min == 0 && self.states[0].accepting;
        }
        self.reaches_accepting(|h| h.properties().minimum_len() == Some(0))
    }

    /// Whether the language holds only the empty string (or nothing).
    pub fn matches_only_empty(&self) -> bool {
        if self.edge_bounds.is_some() {
            return !self.bounded_path_from_start(1);
        }
        !self.reaches_accepting_through(
            |h| h.properties().minimum_len().is_some(),
            |h| h.properties().maximum_len() != Some(0),
        )
    }

    /// Whether an accepting state is reachable from the start along edges whose labels pass
    /// `usable`.
    fn reaches_accepting(&self, usable: impl Fn(&Hir) -> bool) -> bool {
        self.search(usable, |_| true, true)
    }

    /// Whether an accepting state is reachable from the start along edges whose labels pass
    /// `usable`, at least one of which passes `counted`.
    fn reaches_accepting_through(
        &self,
        usable: impl Fn(&Hir) -> bool,
        counted: impl Fn(&Hir) -> bool,
    ) -> bool {
        self.search(usable, counted, false)
    }

    /// A search over (state, whether an edge passing `counted` was taken), from the start
    /// with that flag at `counted_at_start`, for an accepting state with the flag set.
    fn search(
        &self,
        usable: impl Fn(&Hir) -> bool,
        counted: impl Fn(&Hir) -> bool,
        counted_at_start: bool,
    ) -> bool {
        let n = self.states.len();
        let mut seen = vec![false; 2 * n];
        let start = if counted_at_start { n } else { 0 };
        seen[start] = true;
        let mut stack = vec![start];
        while let Some(at) = stack.pop() {
            let (s, done) = (at % n, at >= n);
            if done && self.states[s].accepting {
                return true;
            }
            for &(label, target) in &self.states[s].edges {
                let h = &self.labels[label as usize];
                if !usable(h) {
                    continue;
                }
                let next = target as usize + if done || counted(h) { n } else { 0 };
                if !seen[next] {
                    seen[next] = true;
                    stack.push(next);
                }
            }
        }
        false
    }

    /// A hash of the graph's structure (equal graphs, built apart, share a terminal).
    pub(crate) fn fingerprint(&self) -> u64 {
        use std::hash::{Hash, Hasher};
        let mut hasher = rustc_hash::FxHasher::default();
        for h in &self.labels {
            super::fingerprint(h).hash(&mut hasher);
        }
        self.states.hash(&mut hasher);
        self.edge_bounds().hash(&mut hasher);
        hasher.finish()
    }

    /// Whether `self` and `other` have the same structure (see [`Self::fingerprint`]).
    pub(crate) fn same(&self, other: &RegexGraph) -> bool {
        self.states == other.states
            && self.edge_bounds == other.edge_bounds
            && self.labels.len() == other.labels.len()
            && self
                .labels
                .iter()
                .zip(&other.labels)
                .all(|(a, b)| super::same_hir(a, b))
    }

    /// Calls `f` on every edge label.
    pub(crate) fn for_each_label(&self, f: impl FnMut(&Hir)) {
        self.labels.iter().for_each(f)
    }

    /// The graph as one NFA: a state per graph state (the alternatives of its edges, and a
    /// match when accepting), and per edge a copy of its label's NFA, compiled once by
    /// `compiler`, whose match continues at the edge's target. With edge bounds, it continues
    /// through a marker first, a capture state whose group index is the target: a lexer
    /// counts an edge whenever its ε-moves pass one (the label NFAs have no captures).
    pub(crate) fn build_nfa(
        &self,
        compiler: &thompson::Compiler,
        size_limit: Option<usize>,
    ) -> Result<NFA, Box<BuildError>> {
        let compiled: Vec<NFA> = self
            .labels
            .iter()
            .map(|h| compiler.build_from_hir(h).map_err(Box::new))
            .collect::<Result<_, _>>()?;
        let mut b = Builder::new();
        b.set_utf8(false);
        b.set_size_limit(size_limit)?;
        b.start_pattern()?;
        let matched = b.add_match()?;
        let entries: Vec<StateID> = self
            .states
            .iter()
            .map(|_| b.add_union(Vec::new()).map_err(Box::new))
            .collect::<Result<_, _>>()?;
        let arrivals: Vec<StateID> = if self.edge_bounds.is_some() {
            (0..self.states.len() as u32)
                .map(|s| {
                    b.add_capture_start(entries[s as usize], s, None)
                        .map_err(Box::new)
                })
                .collect::<Result<_, _>>()?
        } else {
            entries.clone()
        };
        for (state, &entry) in self.states.iter().zip(&entries) {
            for &(label, target) in &state.edges {
                let start = copy_nfa(&mut b, &compiled[label as usize], arrivals[target as usize])?;
                b.patch(entry, start)?;
            }
            if state.accepting {
                b.patch(entry, matched)?;
            }
        }
        b.finish_pattern(entries[0])?;
        Ok(b.build(entries[0], entries[0])?)
    }
}

/// Whether path lengths `lengths` (one bit per length, up to `max`) hold every length from
/// their shortest to `max`.
fn lengths_from_shortest_on(lengths: &[u64], max: u32) -> bool {
    let Some(word) = lengths.iter().position(|&w| w != 0) else {
        return false;
    };
    let shortest = word as u32 * 64 + lengths[word].trailing_zeros();
    (shortest..=max).all(|k| lengths[k as usize / 64] >> (k % 64) & 1 == 1)
}

/// Whether every string `label` matches begins with a byte that no JSON string character
/// begins with (a quote, a backslash, a control byte): conservatively, only for literals.
fn starts_outside_strings(label: &Hir) -> bool {
    match label.kind() {
        HirKind::Literal(bytes) => bytes
            .0
            .first()
            .is_some_and(|&b| !crate::bytes::is_string_byte(b)),
        _ => false,
    }
}

/// Whether `bits` has a bit set from `lo` to `hi` (inclusive; beyond its words, none).
pub(crate) fn any_bit_in(bits: &[u64], lo: u32, hi: u32) -> bool {
    let hi = (hi as usize).min(bits.len() * 64 - 1);
    let mut at = lo as usize;
    while at <= hi {
        let (word, bit) = (at / 64, at % 64);
        let span = (hi - at + 1).min(64 - bit);
        let mask = if span == 64 {
            u64::MAX
        } else {
            ((1u64 << span) - 1) << bit
        };
        if bits[word] & mask != 0 {
            return true;
        }
        at += span;
    }
    false
}

/// Adds to `b` the states of `nfa` its anchored start reaches, with its matches continuing
/// at `then`; returns the copy of its start.
fn copy_nfa(b: &mut Builder, nfa: &NFA, then: StateID) -> Result<StateID, Box<BuildError>> {
    let mut copier = Copier {
        copies: vec![None; nfa.states().len()],
        order: Vec::new(),
    };
    let start = copier.copy_of(nfa.start_anchored(), b)?;
    let mut i = 0;
    while let Some(&old) = copier.order.get(i) {
        i += 1;
        let copy = match nfa.state(old) {
            State::ByteRange { trans } => {
                let next = copier.copy_of(trans.next, b)?;
                b.add_range(thompson::Transition { next, ..*trans })?
            }
            State::Sparse(sparse) => {
                let mut transitions = Vec::with_capacity(sparse.transitions.len());
                for t in sparse.transitions.iter() {
                    let next = copier.copy_of(t.next, b)?;
                    transitions.push(thompson::Transition { next, ..*t });
                }
                b.add_sparse(transitions)?
            }
            State::Dense(dense) => {
                // Runs of bytes with the same target, as ranges.
                let mut transitions: Vec<thompson::Transition> = Vec::new();
                for (byte, &next) in (0..=255u8).zip(dense.transitions.iter()) {
                    if next == StateID::ZERO {
                        continue;
                    }
                    let next = copier.copy_of(next, b)?;
                    match transitions.last_mut() {
                        Some(last)
                            if last.next == next && last.end.checked_add(1) == Some(byte) =>
                        {
                            last.end = byte
                        }
                        _ => transitions.push(thompson::Transition {
                            start: byte,
                            end: byte,
                            next,
                        }),
                    }
                }
                b.add_sparse(transitions)?
            }
            State::Union { alternates } => {
                let mut alts = Vec::with_capacity(alternates.len());
                for &a in alternates.iter() {
                    alts.push(copier.copy_of(a, b)?);
                }
                b.add_union(alts)?
            }
            State::BinaryUnion { alt1, alt2 } => {
                let alts = vec![copier.copy_of(*alt1, b)?, copier.copy_of(*alt2, b)?];
                b.add_union(alts)?
            }
            State::Capture { next, .. } => copier.copy_of(*next, b)?,
            // Labels have no look-around (checked by `RegexGraph::new`).
            State::Look { .. } | State::Fail => b.add_fail()?,
            State::Match { .. } => then,
        };
        let placeholder = copier.copy_of(old, b)?;
        b.patch(placeholder, copy)?;
    }
    Ok(start)
}

/// The copies [`copy_nfa`] has made so far. Every state discovered gets an empty placeholder
/// at once, so that transitions can name states not copied yet; the placeholder is patched
/// to the copy when that is made (the builder removes empty states when it builds).
struct Copier {
    copies: Vec<Option<StateID>>,
    /// States in the order discovered: the ones still to copy are at the end.
    order: Vec<StateID>,
}

impl Copier {
    fn copy_of(&mut self, old: StateID, b: &mut Builder) -> Result<StateID, Box<BuildError>> {
        if let Some(copy) = self.copies[old.as_usize()] {
            return Ok(copy);
        }
        let copy = b.add_empty()?;
        self.copies[old.as_usize()] = Some(copy);
        self.order.push(old);
        Ok(copy)
    }
}

/// A terminal of the lowered grammar: an expression, or a graph kept whole.
#[derive(Clone, Debug)]
pub(crate) enum Terminal {
    Regex(Hir),
    Graph(Arc<RegexGraph>),
}

impl Terminal {
    /// Whether the terminal matches the empty string.
    pub(crate) fn matches_empty(&self) -> bool {
        match self {
            Terminal::Regex(h) => h.properties().minimum_len() == Some(0),
            Terminal::Graph(g) => g.matches_empty(),
        }
    }

    /// A hash of the terminal's structure: equal terminals built apart hash alike.
    pub(crate) fn fingerprint(&self) -> u64 {
        match self {
            Terminal::Regex(h) => super::fingerprint(h),
            Terminal::Graph(g) => g.fingerprint(),
        }
    }

    /// Whether `self` and `other` have the same structure (see [`Self::fingerprint`]).
    pub(crate) fn same(&self, other: &Terminal) -> bool {
        match (self, other) {
            (Terminal::Regex(a), Terminal::Regex(b)) => super::same_hir(a, b),
            (Terminal::Graph(a), Terminal::Graph(b)) => Arc::ptr_eq(a, b) || a.same(b),
            _ => false,
        }
    }

    /// Calls `f` on every regular expression the terminal is made of.
    pub(crate) fn for_each_hir(&self, mut f: impl FnMut(&Hir)) {
        match self {
            Terminal::Regex(h) => f(h),
            Terminal::Graph(g) => g.for_each_label(f),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use regex_syntax::hir::{Class, ClassBytes, ClassBytesRange};

    fn state(edges: &[(u32, u32)], accepting: bool) -> GraphState {
        GraphState {
            edges: edges.to_vec(),
            accepting,
        }
    }

    /// Labels: 0 = `a`, 1 = the empty string, 2 = nothing.
    fn graph(states: Vec<GraphState>) -> RegexGraph {
        let labels = vec![Hir::literal(*b"a"), Hir::empty(), Hir::fail()];
        RegexGraph::new(labels, states).expect("valid")
    }

    #[test]
    fn what_a_graph_matches_is_read_from_its_reachable_edges() {
        // `a` then accept.
        let a = graph(vec![state(&[(0, 1)], false), state(&[], true)]);
        assert!(!a.matches_nothing() && !a.matches_empty() && !a.matches_only_empty());
        // Accepting only through an edge that matches nothing.
        let none = graph(vec![state(&[(2, 1)], false), state(&[], true)]);
        assert!(none.matches_nothing() && !none.matches_empty() && none.matches_only_empty());
        // The empty string through an empty edge, and nothing else.
        let empty = graph(vec![state(&[(1, 1)], false), state(&[], true)]);
        assert!(!empty.matches_nothing() && empty.matches_empty() && empty.matches_only_empty());
        // The empty string alone: the start accepts, nothing leaves it.
        let alone = graph(vec![state(&[], true)]);
        assert!(!alone.matches_nothing() && alone.matches_empty() && alone.matches_only_empty());
        // `a*`: the start accepts and loops.
        let star = graph(vec![state(&[(0, 0)], true)]);
        assert!(star.matches_empty() && !star.matches_only_empty());
        // An accepting state that only a dead end leads away from.
        let dead_end = graph(vec![state(&[(0, 1)], false), state(&[(0, 1)], false)]);
        assert!(dead_end.matches_nothing());
    }

    #[test]
    fn edge_bounds_limit_the_paths_a_graph_matches_by() {
        // `a+` within 2 to 3 edges.
        let plus = || graph(vec![state(&[(0, 1)], false), state(&[(0, 1)], true)]);
        let labels = || vec![Hir::literal(*b"a")];
        let bounded = |min, max| {
            RegexGraph::new(labels(), plus().states)
                .and_then(|g| g.with_edge_bounds(min, max))
                .expect("valid bounds")
        };
        let two_three = bounded(2, 3);
        assert!(!two_three.matches_nothing() && !two_three.matches_empty());
        let lengths = two_three.path_lengths();
        assert_eq!(lengths[0][0], 0b1110, "from the start: 1, 2 or 3 edges");
        assert_eq!(lengths[1][0], 0b1111, "after an `a`: 0 to 3 more");
        // No path of `a+` has no edge; none of `a` then `b` has more than two.
        assert!(bounded(0, 0).matches_nothing());
        let ab = RegexGraph::new(
            vec![Hir::literal(*b"a"), Hir::literal(*b"b")],
            vec![
                state(&[(0, 1)], false),
                state(&[(1, 2)], false),
                state(&[], true),
            ],
        )
        .expect("valid");
        assert!(ab
            .clone()
            .with_edge_bounds(3, 5)
            .expect("valid")
            .matches_nothing());
        assert!(!ab.with_edge_bounds(2, 2).expect("valid").matches_nothing());
        // The empty string: only the path of no edge.
        let star = RegexGraph::new(labels(), vec![state(&[(0, 0)], true)]).expect("valid");
        assert!(star
            .clone()
            .with_edge_bounds(0, 4)
            .expect("valid")
            .matches_empty());
        assert!(!star
            .clone()
            .with_edge_bounds(1, 4)
            .expect("valid")
            .matches_empty());
        assert!(star
            .with_edge_bounds(0, 0)
            .expect("valid")
            .matches_only_empty());
    }

    #[test]
    fn short_counts_only_delay_the_ends_of_strings_closed_by_a_quote() {
        // `"` then any letters, then `"`: short of the fewest edges, a count only waits for
        // more letters, since only the quote leads to the end.
        let labels = || {
            vec![
                Hir::literal(*b"\""),
                Hir::class(Class::Bytes(ClassBytes::new([ClassBytesRange::new(
                    b'a', b'z',
                )]))),
                Hir::literal(*b"!\""),
            ]
        };
        let quoted = |last: u32| {
            RegexGraph::new(
                labels(),
                vec![
                    state(&[(0, 1)], false),
                    state(&[(1, 1), (last, 2)], false),
                    state(&[], true),
                ],
            )
            .and_then(|g| g.with_edge_bounds(10, 40))
            .expect("a valid graph")
        };
        assert!(quoted(0).short_counts_only_delay_ends());
        // Ended by `!"`: short of the fewest edges, `!` leads to a state that ends only
        // one edge later, too early; the count kills what the graph alone keeps.
        assert!(!quoted(2).short_counts_only_delay_ends());
        // Without edge bounds, there is no count.
        let unbounded = RegexGraph::new(labels(), vec![state(&[(1, 0)], true)]).expect("valid");
        assert!(!unbounded.short_counts_only_delay_ends());
    }

    #[test]
    fn edge_bounds_need_labels_that_read_something() {
        let star = || RegexGraph::new(vec![Hir::literal(*b"a")], vec![state(&[(0, 0)], true)]);
        assert!(star().and_then(|g| g.with_edge_bounds(3, 2)).is_err());
        assert!(star()
            .and_then(|g| g.with_edge_bounds(0, MAX_EDGE_BOUND + 1))
            .is_err());
        let empty_label = RegexGraph::new(vec![Hir::empty()], vec![state(&[(0, 0)], true)]);
        let err = empty_label
            .and_then(|g| g.with_edge_bounds(0, 4))
            .expect_err("an empty label counts nothing");
        assert!(
            err.to_string().contains("matches the empty string"),
            "{err}"
        );
    }

    #[test]
    fn malformed_graphs_are_errors() {
        let labels = || vec![Hir::literal(*b"a")];
        assert!(RegexGraph::new(labels(), Vec::new()).is_err());
        assert!(RegexGraph::new(labels(), vec![state(&[(1, 0)], true)]).is_err());
        assert!(RegexGraph::new(labels(), vec![state(&[(0, 1)], true)]).is_err());
        let look = regex_syntax::parse(r"\ba").expect("parses");
        assert!(RegexGraph::new(vec![look], vec![state(&[(0, 0)], true)]).is_err());
    }

    /// Whether `nfa` matches all of `text` from its anchored start (a plain simulation).
    fn full_match(nfa: &NFA, text: &[u8]) -> bool {
        let close = |set: Vec<StateID>| {
            let mut seen = vec![false; nfa.states().len()];
            let mut stack = set;
            let mut out = Vec::new();
            while let Some(s) = stack.pop() {
                if std::mem::replace(&mut seen[s.as_usize()], true) {
                    continue;
                }
                match nfa.state(s) {
                    State::Union { alternates } => stack.extend(alternates.iter().copied()),
                    State::BinaryUnion { alt1, alt2 } => stack.extend([*alt1, *alt2]),
                    State::Capture { next, .. } => stack.push(*next),
                    _ => out.push(s),
                }
            }
            out
        };
        let mut set = close(vec![nfa.start_anchored()]);
        for &b in text {
            let next = set
                .iter()
                .filter_map(|&s| match nfa.state(s) {
                    State::ByteRange { trans } => trans.matches_byte(b).then_some(trans.next),
                    State::Sparse(sparse) => sparse.matches_byte(b),
                    State::Dense(dense) => dense.matches_byte(b),
                    _ => None,
                })
                .collect();
            set = close(next);
        }
        set.iter()
            .any(|&s| matches!(nfa.state(s), State::Match { .. }))
    }

    #[test]
    fn the_nfa_of_a_graph_reads_its_language() {
        // (ab|c)+ as a two-state graph whose label is an alternation.
        let labels = vec![regex_syntax::parse("ab|c").expect("parses")];
        let g = RegexGraph::new(
            labels,
            vec![state(&[(0, 1)], false), state(&[(0, 1)], true)],
        )
        .expect("valid");
        let mut compiler = thompson::Compiler::new();
        compiler.configure(
            thompson::Config::new()
                .utf8(false)
                .which_captures(thompson::WhichCaptures::None),
        );
        let nfa = g.build_nfa(&compiler, None).expect("builds");
        for (text, expected) in [
            ("ab", true),
            ("c", true),
            ("abcab", true),
            ("", false),
            ("a", false),
            ("ac", false),
            ("abb", false),
        ] {
            assert_eq!(full_match(&nfa, text.as_bytes()), expected, "{text:?}");
        }
    }
}
