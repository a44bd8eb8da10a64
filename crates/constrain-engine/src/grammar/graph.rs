//! Regular languages given as graphs whose edges read regular expressions.
//!
//! Some regular languages have a small automaton but only huge expressions: strings of a
//! pattern under a length bound (`(\S+\s+){0,49}\S+` within 500 characters) is a few states
//! per length, and an expression for it repeats the pattern once per length at every nesting
//! level. A [`RegexGraph`] hands the automaton over as it is; the lexer compiles it into one
//! NFA, where each edge becomes a copy of its label's NFA.

use std::sync::Arc;

use regex_automata::nfa::thompson::{self, BuildError, Builder, State, NFA};
use regex_automata::util::primitives::StateID;
use regex_syntax::hir::Hir;

use crate::error::GrammarError;

/// A regular language over bytes as a graph: a string is in it when some path from state 0
/// reads it, each edge reading one string of its label's language, and ends in an accepting
/// state.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RegexGraph {
    labels: Vec<Hir>,
    states: Vec<GraphState>,
}

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
        Ok(RegexGraph { labels, states })
    }

    /// The edge labels.
    pub fn labels(&self) -> &[Hir] {
        &self.labels
    }

    /// The states; state 0 starts.
    pub fn states(&self) -> &[GraphState] {
        &self.states
    }

    /// Whether the language is empty: no accepting state is reachable through edges whose
    /// labels match something.
    pub fn matches_nothing(&self) -> bool {
        !self.reaches_accepting(|h| h.properties().minimum_len().is_some())
    }

    /// Whether the empty string is in the language.
    pub fn matches_empty(&self) -> bool {
        self.reaches_accepting(|h| h.properties().minimum_len() == Some(0))
    }

    /// Whether the language holds only the empty string (or nothing).
    pub fn matches_only_empty(&self) -> bool {
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
            crate::terminal::fingerprint(h).hash(&mut hasher);
        }
        self.states.hash(&mut hasher);
        hasher.finish()
    }

    /// Whether `self` and `other` have the same structure (see [`Self::fingerprint`]).
    pub(crate) fn same(&self, other: &RegexGraph) -> bool {
        self.states == other.states
            && self.labels.len() == other.labels.len()
            && self
                .labels
                .iter()
                .zip(&other.labels)
                .all(|(a, b)| crate::terminal::same_hir(a, b))
    }

    /// Calls `f` on every edge label.
    pub(crate) fn for_each_label(&self, f: impl FnMut(&Hir)) {
        self.labels.iter().for_each(f)
    }

    /// The graph as one NFA: a state per graph state (the alternatives of its edges, and a
    /// match when accepting), and per edge a copy of its label's NFA, compiled once by
    /// `compiler`, whose match continues at the edge's target.
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
        for (state, &entry) in self.states.iter().zip(&entries) {
            for &(label, target) in &state.edges {
                let start = copy_nfa(&mut b, &compiled[label as usize], entries[target as usize])?;
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
            Terminal::Regex(h) => crate::terminal::fingerprint(h),
            Terminal::Graph(g) => g.fingerprint(),
        }
    }

    /// Whether `self` and `other` have the same structure (see [`Self::fingerprint`]).
    pub(crate) fn same(&self, other: &Terminal) -> bool {
        match (self, other) {
            (Terminal::Regex(a), Terminal::Regex(b)) => crate::terminal::same_hir(a, b),
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
