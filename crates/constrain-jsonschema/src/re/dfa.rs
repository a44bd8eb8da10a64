//! Deterministic automata over character ranges, for what regular expressions cannot say
//! directly: intersection (`pattern` and `format` together, several patterns, lengths that do
//! not fold structurally), complement (`not`, keys that are not declared) and emptiness
//! (proving `oneOf` branches disjoint). Results go back to [`Re`] by state elimination.
//!
//! Transitions are labelled with ranges of scalar values (a symbolic automaton), so Unicode
//! classes cost a few ranges instead of one edge per character. Every step is bounded by
//! [`MAX_NFA_STATES`], [`MAX_DFA_STATES`] and [`MAX_RE_SIZE`]; going over is an error.

use std::collections::{BTreeMap, VecDeque};

use rustc_hash::FxHashMap;

use super::{CharSet, Look, Re};

/// Most NFA states built for one expression (counted repetitions are unrolled).
pub(crate) const MAX_NFA_STATES: usize = 200_000;
/// Most DFA states of one automaton.
pub(crate) const MAX_DFA_STATES: usize = 5_000;
/// Largest expression rebuilt from an automaton.
pub(crate) const MAX_RE_SIZE: usize = 100_000;
/// Most states of an automaton turned back into an expression (which nests about as deep).
pub(crate) const MAX_ELIMINATION_STATES: usize = 1_000;
/// Deepest expression rebuilt from an automaton (consumers recurse over it).
pub(crate) const MAX_RE_DEPTH: usize = 300;

/// An automaton grew past a budget.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TooLarge {
    pub(crate) what: Bound,
    pub(crate) limit: usize,
}

/// Which budget a [`TooLarge`] ran out of: the compilation's (the deadline), kept typed so
/// that the error says so, or a bound of the automata themselves.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Bound {
    Budget(constrain_engine::Budget),
    Own(String),
}

impl From<&str> for Bound {
    fn from(what: &str) -> Bound {
        Bound::Own(what.to_string())
    }
}

impl std::fmt::Display for Bound {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Bound::Budget(budget) => budget.fmt(f),
            Bound::Own(what) => f.write_str(what),
        }
    }
}

impl TooLarge {
    /// The compilation's error for this, at `pointer` (as given: callers decide how the root
    /// is shown).
    pub(crate) fn into_error(self, pointer: String) -> crate::SchemaError {
        match self.what {
            Bound::Budget(budget) => crate::SchemaError::LimitExceeded {
                pointer,
                budget,
                limit: self.limit,
            },
            Bound::Own(what) => crate::SchemaError::TooComplex {
                pointer,
                what,
                limit: self.limit,
            },
        }
    }
}

type Result<T> = std::result::Result<T, TooLarge>;

/// Fails once the compilation's deadline has passed (checked as automata grow).
fn check_deadline() -> Result<()> {
    match crate::deadline::expired() {
        Some(limit) => Err(TooLarge {
            what: Bound::Budget(constrain_engine::Budget::CompileTime),
            limit,
        }),
        None => Ok(()),
    }
}

/// The states of a product automaton as they are reached: pairs of states of its two
/// sides, numbered in order from the pair of start states, within [`MAX_DFA_STATES`].
struct Product {
    index: FxHashMap<(u32, u32), u32>,
    pairs: Vec<(u32, u32)>,
    /// Pairs whose transitions are built already.
    done: usize,
}

impl Default for Product {
    fn default() -> Product {
        let mut index = FxHashMap::default();
        index.insert((0, 0), 0);
        Product {
            index,
            pairs: vec![(0, 0)],
            done: 0,
        }
    }
}

impl Product {
    /// The next pair to build the transitions of, in numbering order.
    fn next_pair(&mut self) -> Option<(u32, u32)> {
        let pair = *self.pairs.get(self.done)?;
        self.done += 1;
        Some(pair)
    }

    /// The number of `pair`, numbered now if it is new.
    fn state(&mut self, pair: (u32, u32)) -> Result<u32> {
        if let Some(&n) = self.index.get(&pair) {
            return Ok(n);
        }
        if self.pairs.len() >= MAX_DFA_STATES {
            return Err(TooLarge {
                what: "automaton states".into(),
                limit: MAX_DFA_STATES,
            });
        }
        check_deadline()?;
        let n = self.pairs.len() as u32;
        self.index.insert(pair, n);
        self.pairs.push(pair);
        Ok(n)
    }
}

/// The state of a product whose side has died (see [`Dfa::union`]).
const DEAD: u32 = u32::MAX;

/// A deterministic automaton; a missing transition goes to an implicit dead state.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) struct Dfa {
    /// Per state: sorted, disjoint `(lo, hi, target)` ranges.
    trans: Vec<Vec<(u32, u32, u32)>>,
    accepting: Vec<bool>,
}

impl Dfa {
    pub(crate) fn from_re(re: &Re) -> Result<Dfa> {
        let nfa = Nfa::build(re)?;
        nfa.determinize()
    }

    /// An automaton given by its transitions (sorted disjoint ranges per state; state 0
    /// starts).
    pub(crate) fn from_parts(trans: Vec<Vec<(u32, u32, u32)>>, accepting: Vec<bool>) -> Dfa {
        Dfa { trans, accepting }
    }

    pub(crate) fn state_count(&self) -> usize {
        self.trans.len()
    }

    /// The transitions of state `s`: sorted, disjoint `(lo, hi, target)` ranges.
    pub(crate) fn transitions(&self, s: usize) -> &[(u32, u32, u32)] {
        &self.trans[s]
    }

    /// Whether state `s` accepts.
    pub(crate) fn is_accepting(&self, s: usize) -> bool {
        self.accepting[s]
    }

    /// Whether no string is accepted.
    pub(crate) fn is_empty(&self) -> bool {
        let mut seen = vec![false; self.trans.len()];
        let mut queue = vec![0u32];
        seen[0] = true;
        while let Some(s) = queue.pop() {
            if self.accepting[s as usize] {
                return false;
            }
            for &(_, _, t) in &self.trans[s as usize] {
                if !seen[t as usize] {
                    seen[t as usize] = true;
                    queue.push(t);
                }
            }
        }
        true
    }

    /// Size as a budget counts it: states and transitions.
    pub(crate) fn size(&self) -> usize {
        self.trans.len() + self.trans.iter().map(Vec::len).sum::<usize>()
    }

    /// Shortest and longest accepted length in characters (`None`: unbounded); `(0, Some(0))`
    /// when nothing is accepted, as [`Re::length_bounds`] says of an empty alternation.
    pub(crate) fn length_bounds(&self) -> (u64, Option<u64>) {
        let dfa = self.trim();
        if dfa.is_empty() {
            return (0, Some(0));
        }
        // Breadth first from the start for the shortest; the longest over the trimmed
        // automaton's paths, unbounded when they loop (every state left is live).
        let n = dfa.trans.len();
        let mut depth = vec![u64::MAX; n];
        depth[0] = 0;
        let mut queue = VecDeque::from([0u32]);
        let mut shortest = None;
        while let Some(s) = queue.pop_front() {
            let d = depth[s as usize];
            if dfa.accepting[s as usize] && shortest.is_none() {
                shortest = Some(d);
            }
            for &(_, _, t) in &dfa.trans[s as usize] {
                if depth[t as usize] == u64::MAX {
                    depth[t as usize] = d + 1;
                    queue.push_back(t);
                }
            }
        }
        (shortest.unwrap_or(0), dfa.longest_path())
    }

    /// The longest path from the start to an accepting state of a trimmed automaton, `None`
    /// when a loop is reachable (in depth-first post-order, without recursion).
    fn longest_path(&self) -> Option<u64> {
        const NEW: u8 = 0;
        const OPEN: u8 = 1;
        const DONE: u8 = 2;
        let n = self.trans.len();
        let mut mark = vec![NEW; n];
        let mut longest = vec![0u64; n];
        let mut stack = vec![(0u32, 0usize)];
        mark[0] = OPEN;
        while let Some(&mut (s, ref mut next)) = stack.last_mut() {
            let edges = &self.trans[s as usize];
            if let Some(&(_, _, t)) = edges.get(*next) {
                *next += 1;
                match mark[t as usize] {
                    OPEN => return None,
                    NEW => {
                        mark[t as usize] = OPEN;
                        stack.push((t, 0));
                    }
                    _ => {}
                }
                continue;
            }
            stack.pop();
            mark[s as usize] = DONE;
            // Every state of a trimmed automaton leads to a match, so each edge's is a path.
            longest[s as usize] = edges
                .iter()
                .map(|&(_, _, t)| longest[t as usize] + 1)
                .max()
                .unwrap_or(0);
        }
        Some(longest[0])
    }

    /// Whether every string that leads somewhere (a prefix of an accepted string) has
    /// endlessly many accepted continuations: every live state reaches a loop. Strings drawn
    /// one after another from such a language, each different from those before, can never
    /// be cornered into repeating one.
    pub(crate) fn never_runs_out(&self) -> bool {
        let dfa = self.trim();
        if dfa.is_empty() {
            return true;
        }
        // Peel off the states whose every way out ends (a finite tail): what is left
        // reaches a loop.
        let n = dfa.trans.len();
        let mut out_degree: Vec<usize> = dfa.trans.iter().map(Vec::len).collect();
        let mut into: Vec<Vec<u32>> = vec![Vec::new(); n];
        for (s, ranges) in dfa.trans.iter().enumerate() {
            for &(_, _, t) in ranges {
                into[t as usize].push(s as u32);
            }
        }
        let mut ends: Vec<u32> = (0..n as u32)
            .filter(|&s| out_degree[s as usize] == 0)
            .collect();
        let mut peeled = 0;
        while let Some(s) = ends.pop() {
            peeled += 1;
            for &p in &into[s as usize] {
                out_degree[p as usize] -= 1;
                if out_degree[p as usize] == 0 {
                    ends.push(p);
                }
            }
        }
        peeled == 0
    }

    /// Whether `text` is accepted.
    pub(crate) fn matches(&self, text: &str) -> bool {
        let mut s = 0u32;
        for c in text.chars() {
            let c = c as u32;
            match self.trans[s as usize]
                .iter()
                .find(|&&(lo, hi, _)| lo <= c && c <= hi)
            {
                Some(&(_, _, t)) => s = t,
                None => return false,
            }
        }
        self.accepting[s as usize]
    }

    /// The strings accepted by both.
    pub(crate) fn intersect(&self, other: &Dfa) -> Result<Dfa> {
        let mut product = Product::default();
        let mut trans = Vec::new();
        let mut accepting = Vec::new();
        while let Some((a, b)) = product.next_pair() {
            accepting.push(self.accepting[a as usize] && other.accepting[b as usize]);
            let mut out = Vec::new();
            let (ta, tb) = (&self.trans[a as usize], &other.trans[b as usize]);
            let (mut x, mut y) = (0, 0);
            while x < ta.len() && y < tb.len() {
                let (lo1, hi1, t1) = ta[x];
                let (lo2, hi2, t2) = tb[y];
                let (lo, hi) = (lo1.max(lo2), hi1.min(hi2));
                if lo <= hi {
                    push_range(&mut out, lo, hi, product.state((t1, t2))?);
                }
                if hi1 < hi2 {
                    x += 1;
                } else {
                    y += 1;
                }
            }
            trans.push(out);
        }
        Ok(Dfa { trans, accepting })
    }

    /// The strings either accepts, minimal: the product of both, a state of one that has died
    /// paired with [`DEAD`] (only pairs reached are built).
    pub(crate) fn union(&self, other: &Dfa) -> Result<Dfa> {
        let mut product = Product::default();
        let mut trans = Vec::new();
        let mut accepting = Vec::new();
        let no_ranges: &[(u32, u32, u32)] = &[];
        while let Some((a, b)) = product.next_pair() {
            let ta = self.trans.get(a as usize).map_or(no_ranges, |t| &t[..]);
            let tb = other.trans.get(b as usize).map_or(no_ranges, |t| &t[..]);
            accepting.push(
                self.accepting.get(a as usize).copied().unwrap_or(false)
                    || other.accepting.get(b as usize).copied().unwrap_or(false),
            );
            // Every point where either side's target may change, in order.
            let mut cuts: Vec<u32> = ta
                .iter()
                .chain(tb)
                .flat_map(|&(lo, hi, _)| [lo, hi.saturating_add(1)])
                .collect();
            cuts.sort_unstable();
            cuts.dedup();
            // Each side's range holding the interval's first point, found moving forward.
            let (mut x, mut y) = (0, 0);
            let target = |ranges: &[(u32, u32, u32)], at: &mut usize, c: u32| {
                while *at < ranges.len() && ranges[*at].1 < c {
                    *at += 1;
                }
                match ranges.get(*at) {
                    Some(&(lo, _, t)) if lo <= c => t,
                    _ => DEAD,
                }
            };
            let mut out = Vec::new();
            for w in cuts.windows(2) {
                let (lo, hi) = (w[0], w[1] - 1);
                let next_pair = (target(ta, &mut x, lo), target(tb, &mut y, lo));
                if next_pair == (DEAD, DEAD) {
                    continue;
                }
                push_range(&mut out, lo, hi, product.state(next_pair)?);
            }
            trans.push(out);
        }
        Ok(Dfa { trans, accepting }.minimize())
    }

    /// The strings not accepted.
    pub(crate) fn complement(&self) -> Dfa {
        let dead = self.trans.len() as u32;
        let mut trans: Vec<Vec<(u32, u32, u32)>> = self
            .trans
            .iter()
            .map(|ranges| {
                let mut out = Vec::with_capacity(ranges.len() * 2 + 1);
                let mut next = 0u32;
                for &(lo, hi, t) in ranges {
                    if lo > next {
                        push_range(&mut out, next, lo - 1, dead);
                    }
                    push_range(&mut out, lo, hi, t);
                    next = hi + 1;
                }
                if next <= super::charset::MAX_CHAR {
                    push_range(&mut out, next, super::charset::MAX_CHAR, dead);
                }
                out
            })
            .collect();
        trans.push(vec![(0, super::charset::MAX_CHAR, dead)]);
        let mut accepting: Vec<bool> = self.accepting.iter().map(|a| !a).collect();
        accepting.push(true);
        Dfa { trans, accepting }
    }

    /// Drops states from which no accepting state is reachable (keeps the start state).
    fn trim(&self) -> Dfa {
        let n = self.trans.len();
        let mut reverse: Vec<Vec<u32>> = vec![Vec::new(); n];
        for (s, ranges) in self.trans.iter().enumerate() {
            for &(_, _, t) in ranges {
                reverse[t as usize].push(s as u32);
            }
        }
        let mut live = self.accepting.clone();
        let mut queue: Vec<u32> = (0..n as u32).filter(|&s| live[s as usize]).collect();
        while let Some(s) = queue.pop() {
            for &p in &reverse[s as usize] {
                if !live[p as usize] {
                    live[p as usize] = true;
                    queue.push(p);
                }
            }
        }
        live[0] = true;
        let mut renumber = vec![u32::MAX; n];
        let mut next = 0u32;
        for s in 0..n {
            if live[s] {
                renumber[s] = next;
                next += 1;
            }
        }
        let mut trans = Vec::with_capacity(next as usize);
        let mut accepting = Vec::with_capacity(next as usize);
        for s in 0..n {
            if !live[s] {
                continue;
            }
            let mut out = Vec::new();
            for &(lo, hi, t) in &self.trans[s] {
                if live[t as usize] {
                    push_range(&mut out, lo, hi, renumber[t as usize]);
                }
            }
            trans.push(out);
            accepting.push(self.accepting[s]);
        }
        Dfa { trans, accepting }
    }

    /// The minimal equivalent automaton (Hopcroft's partition refinement, see
    /// [`super::minimize`]).
    pub(crate) fn minimize(&self) -> Dfa {
        let dfa = self.trim();
        let late = || crate::deadline::expired().is_some();
        let Some(class) = super::minimize::state_classes(&dfa.trans, &dfa.accepting, late) else {
            // The same language, unminimized: `compile` refuses it anyway once late, and an
            // automaton too large to minimize is too large to turn back into an expression.
            return dfa;
        };
        let count = class.iter().max().map_or(0, |&c| c as usize + 1);
        // Renumber so that the start state's class is 0.
        let mut order = vec![u32::MAX; count];
        let mut k = 0u32;
        let mut seen_order = Vec::with_capacity(count);
        for (s, &c) in class.iter().enumerate() {
            let c = c as usize;
            if order[c] == u32::MAX {
                order[c] = k;
                k += 1;
                seen_order.push(s);
            }
        }
        let trans = seen_order
            .iter()
            .map(|&s| {
                let mut out = Vec::new();
                for &(lo, hi, t) in &dfa.trans[s] {
                    push_range(&mut out, lo, hi, order[class[t as usize] as usize]);
                }
                out
            })
            .collect();
        let accepting = seen_order.iter().map(|&s| dfa.accepting[s]).collect();
        Dfa { trans, accepting }
    }

    /// An expression for the same language, by state elimination.
    pub(crate) fn to_re(&self) -> Result<Re> {
        self.to_re_within(MAX_RE_SIZE)
    }

    /// [`Dfa::to_re`], given up (as past the budget) once the expressions built on the way
    /// pass `max_size` nodes in all: a caller that would not use a larger one stops early.
    pub(crate) fn to_re_within(&self, max_size: usize) -> Result<Re> {
        let max_size = max_size.min(MAX_RE_SIZE);
        let dfa = self.minimize();
        if dfa.is_empty() {
            return Ok(Re::nothing());
        }
        let n = dfa.trans.len();
        if n > MAX_ELIMINATION_STATES {
            return Err(TooLarge {
                what: "automaton states to turn back into an expression".into(),
                limit: MAX_ELIMINATION_STATES,
            });
        }
        let start = n; // fresh start node
        let fin = n + 1; // fresh final node
        let mut out_edges: Vec<BTreeMap<usize, Re>> = vec![BTreeMap::new(); n + 2];
        let mut in_edges: Vec<BTreeMap<usize, ()>> = vec![BTreeMap::new(); n + 2];
        let add = |out_edges: &mut Vec<BTreeMap<usize, Re>>,
                   in_edges: &mut Vec<BTreeMap<usize, ()>>,
                   p: usize,
                   q: usize,
                   re: Re| {
            let entry = out_edges[p].remove(&q);
            let merged = match entry {
                Some(old) => Re::alt(vec![old, re]),
                None => re,
            };
            out_edges[p].insert(q, merged);
            in_edges[q].insert(p, ());
        };
        add(&mut out_edges, &mut in_edges, start, 0, Re::empty());
        for s in 0..n {
            let mut by_target: BTreeMap<u32, Vec<(u32, u32)>> = BTreeMap::new();
            for &(lo, hi, t) in &dfa.trans[s] {
                by_target.entry(t).or_default().push((lo, hi));
            }
            for (t, ranges) in by_target {
                add(
                    &mut out_edges,
                    &mut in_edges,
                    s,
                    t as usize,
                    Re::class(CharSet::from_ranges(ranges)),
                );
            }
            if dfa.accepting[s] {
                add(&mut out_edges, &mut in_edges, s, fin, Re::empty());
            }
        }
        let mut alive: Vec<bool> = vec![true; n];
        let mut total: usize = out_edges
            .iter()
            .flat_map(|m| m.values())
            .map(Re::size)
            .sum();
        for _ in 0..n {
            // Eliminate the state whose removal creates the fewest new edges; on ties the one
            // found last in breadth-first order (the deepest), so that tree-shaped parts fold
            // from the leaves up into nested expressions instead of spelled-out paths.
            let mut best = None;
            let mut best_cost = usize::MAX;
            for q in (0..n).rev() {
                if !alive[q] {
                    continue;
                }
                // Edges other than a self-loop, counted without walking the maps.
                let ins = in_edges[q].len() - usize::from(in_edges[q].contains_key(&q));
                let outs = out_edges[q].len() - usize::from(out_edges[q].contains_key(&q));
                let cost = ins * outs;
                if cost < best_cost {
                    best_cost = cost;
                    best = Some(q);
                    if cost <= 1 {
                        break;
                    }
                }
            }
            let Some(q) = best else { break };
            alive[q] = false;
            let self_loop = out_edges[q].remove(&q);
            in_edges[q].remove(&q);
            let loop_re = self_loop.map(|l| Re::repeat(l, 0, None));
            let preds: Vec<usize> = in_edges[q].keys().copied().collect();
            let succs: Vec<(usize, Re)> = std::mem::take(&mut out_edges[q]).into_iter().collect();
            for &p in &preds {
                let Some(into) = out_edges[p].remove(&q) else {
                    continue;
                };
                for (r, out) in &succs {
                    let mut parts = vec![into.clone()];
                    if let Some(l) = &loop_re {
                        parts.push(l.clone());
                    }
                    parts.push(out.clone());
                    let label = Re::concat(parts);
                    total += label.size();
                    add(&mut out_edges, &mut in_edges, p, *r, label);
                }
            }
            for (r, _) in &succs {
                in_edges[*r].remove(&q);
            }
            in_edges[q].clear();
            check_deadline()?;
            if total > max_size {
                return Err(TooLarge {
                    what: "expression rebuilt from an automaton".into(),
                    limit: max_size,
                });
            }
        }
        let re = out_edges[start].remove(&fin).unwrap_or_else(Re::nothing);
        if re.depth_exceeds(MAX_RE_DEPTH) {
            return Err(TooLarge {
                what: "nesting of the expression rebuilt from an automaton".into(),
                limit: MAX_RE_DEPTH,
            });
        }
        Ok(re)
    }
}

fn push_range(out: &mut Vec<(u32, u32, u32)>, lo: u32, hi: u32, target: u32) {
    if let Some(last) = out.last_mut() {
        if last.2 == target && last.1 + 1 == lo {
            last.1 = hi;
            return;
        }
    }
    out.push((lo, hi, target));
}

/// Scratch space of ε-closures, kept across the closures of one determinization: a stamp per
/// NFA state marks the states already in the set being closed.
#[derive(Default)]
struct Closure {
    stamps: Vec<u32>,
    round: u32,
    stack: Vec<usize>,
}

impl Closure {
    /// Starts a closure over an automaton of `states` states; returns its stamp.
    fn next_round(&mut self, states: usize) -> u32 {
        self.stamps.resize(states, 0);
        self.round = self.round.wrapping_add(1);
        if self.round == 0 {
            self.stamps.fill(0);
            self.round = 1;
        }
        self.round
    }
}

/// A Thompson automaton with ε-edges and `^`/`$` assertion edges.
struct Nfa {
    eps: Vec<Vec<usize>>,
    looks: Vec<Vec<(Look, usize)>>,
    trans: Vec<Vec<(CharSet, usize)>>,
    start: usize,
    fin: usize,
}

impl Nfa {
    fn build(re: &Re) -> Result<Nfa> {
        let mut nfa = Nfa {
            eps: Vec::new(),
            looks: Vec::new(),
            trans: Vec::new(),
            start: 0,
            fin: 0,
        };
        let start = nfa.state()?;
        let fin = nfa.state()?;
        nfa.compile(re, start, fin)?;
        nfa.start = start;
        nfa.fin = fin;
        Ok(nfa)
    }

    fn state(&mut self) -> Result<usize> {
        if self.eps.len() >= MAX_NFA_STATES {
            return Err(TooLarge {
                what: "automaton (NFA) states".into(),
                limit: MAX_NFA_STATES,
            });
        }
        if self.eps.len() % 1024 == 0 {
            check_deadline()?;
        }
        self.eps.push(Vec::new());
        self.looks.push(Vec::new());
        self.trans.push(Vec::new());
        Ok(self.eps.len() - 1)
    }

    /// Adds edges so that the paths from `from` to `to` spell `re`.
    fn compile(&mut self, re: &Re, from: usize, to: usize) -> Result<()> {
        match re {
            Re::Class(set) => {
                if !set.is_empty() {
                    self.trans[from].push((set.clone(), to));
                }
            }
            Re::Literal(s) => {
                let chars: Vec<char> = s.chars().collect();
                if chars.is_empty() {
                    self.eps[from].push(to);
                }
                let mut cur = from;
                for (i, c) in chars.iter().enumerate() {
                    let next = if i + 1 == chars.len() {
                        to
                    } else {
                        self.state()?
                    };
                    self.trans[cur].push((CharSet::single(*c), next));
                    cur = next;
                }
            }
            Re::Look(l) => self.looks[from].push((*l, to)),
            Re::Automaton(a) => {
                let dfa = a.dfa();
                let states = (0..dfa.state_count())
                    .map(|_| self.state())
                    .collect::<Result<Vec<usize>>>()?;
                self.eps[from].push(states[0]);
                for (s, &state) in states.iter().enumerate() {
                    for &(lo, hi, t) in dfa.transitions(s) {
                        self.trans[state]
                            .push((CharSet::from_ranges([(lo, hi)]), states[t as usize]));
                    }
                    if dfa.is_accepting(s) {
                        self.eps[state].push(to);
                    }
                }
            }
            Re::Concat(parts) => {
                let mut cur = from;
                for (i, p) in parts.iter().enumerate() {
                    let next = if i + 1 == parts.len() {
                        to
                    } else {
                        self.state()?
                    };
                    self.compile(p, cur, next)?;
                    cur = next;
                }
                if parts.is_empty() {
                    self.eps[from].push(to);
                }
            }
            Re::Alt(parts) => {
                for p in parts {
                    let a = self.state()?;
                    let b = self.state()?;
                    self.eps[from].push(a);
                    self.eps[b].push(to);
                    self.compile(p, a, b)?;
                }
            }
            Re::Repeat { re, min, max } => {
                let mut cur = from;
                for _ in 0..*min {
                    let next = self.state()?;
                    self.compile(re, cur, next)?;
                    cur = next;
                }
                match max {
                    None => {
                        let hub = self.state()?;
                        self.eps[cur].push(hub);
                        let back = self.state()?;
                        self.compile(re, hub, back)?;
                        self.eps[back].push(hub);
                        self.eps[hub].push(to);
                    }
                    Some(max) => {
                        for _ in *min..*max {
                            let next = self.state()?;
                            self.eps[cur].push(to);
                            self.compile(re, cur, next)?;
                            cur = next;
                        }
                        self.eps[cur].push(to);
                    }
                }
            }
        }
        Ok(())
    }

    /// The ε-closure of `set`; `^` edges are followed only at the start, `$` edges only when
    /// `at_end`.
    fn closure(&self, scratch: &mut Closure, set: &mut Vec<usize>, at_start: bool, at_end: bool) {
        let round = scratch.next_round(self.eps.len());
        for &s in set.iter() {
            scratch.stamps[s] = round;
        }
        scratch.stack.clear();
        scratch.stack.extend_from_slice(set);
        while let Some(s) = scratch.stack.pop() {
            let follow_looks = self.looks[s].iter().filter_map(|&(l, t)| match l {
                Look::Start if at_start => Some(t),
                Look::End if at_end => Some(t),
                _ => None,
            });
            for t in self.eps[s].iter().copied().chain(follow_looks) {
                if scratch.stamps[t] != round {
                    scratch.stamps[t] = round;
                    set.push(t);
                    scratch.stack.push(t);
                }
            }
        }
        set.sort_unstable();
        set.dedup();
    }

    fn determinize(&self) -> Result<Dfa> {
        let mut scratch = Closure::default();
        let mut first = vec![self.start];
        self.closure(&mut scratch, &mut first, true, false);
        let mut index: FxHashMap<Vec<usize>, u32> = FxHashMap::default();
        let mut sets: Vec<Vec<usize>> = vec![first.clone()];
        index.insert(first, 0);
        let mut trans = Vec::new();
        let mut accepting = Vec::new();
        let mut queue = VecDeque::from([0usize]);
        while let Some(i) = queue.pop_front() {
            let set = sets[i].clone();
            let mut at_end = set.clone();
            self.closure(&mut scratch, &mut at_end, i == 0, true);
            accepting.push(at_end.binary_search(&self.fin).is_ok());
            // Sweep over range boundaries of all outgoing edges.
            let mut events: Vec<(u32, bool, usize)> = Vec::new();
            for &s in &set {
                for (cs, t) in &self.trans[s] {
                    for &(lo, hi) in cs.ranges() {
                        events.push((lo, true, *t));
                        events.push((hi + 1, false, *t));
                    }
                }
            }
            events.sort_unstable();
            let mut active: BTreeMap<usize, u32> = BTreeMap::new();
            let mut out: Vec<(u32, u32, u32)> = Vec::new();
            let mut k = 0;
            while k < events.len() {
                let pos = events[k].0;
                while k < events.len() && events[k].0 == pos {
                    let (_, add, t) = events[k];
                    if add {
                        *active.entry(t).or_insert(0) += 1;
                    } else if let Some(c) = active.get_mut(&t) {
                        *c -= 1;
                        if *c == 0 {
                            active.remove(&t);
                        }
                    }
                    k += 1;
                }
                if active.is_empty() || k >= events.len() {
                    continue;
                }
                let end = events[k].0 - 1;
                let mut target: Vec<usize> = active.keys().copied().collect();
                self.closure(&mut scratch, &mut target, false, false);
                let id = match index.get(&target) {
                    Some(&id) => id,
                    None => {
                        if sets.len() >= MAX_DFA_STATES {
                            return Err(TooLarge {
                                what: "automaton states".into(),
                                limit: MAX_DFA_STATES,
                            });
                        }
                        check_deadline()?;
                        let id = sets.len() as u32;
                        index.insert(target.clone(), id);
                        sets.push(target);
                        queue.push_back(id as usize);
                        id
                    }
                };
                push_range(&mut out, pos, end, id);
            }
            trans.push(out);
        }
        // States are discovered in BFS order, so `trans[i]` belongs to `sets[i]`.
        Ok(Dfa { trans, accepting })
    }
}

/// The strings matched by every expression.
pub(crate) fn intersect_all(res: &[Re]) -> Result<Re> {
    let Some((first, rest)) = res.split_first() else {
        return Ok(Re::any_string());
    };
    if rest.is_empty() && !first.has_looks() && !first.has_automaton() {
        return Ok(first.clone());
    }
    intersection_automaton(first, rest)?.to_re()
}

/// The minimal automaton of the strings `first` and every one of `rest` match.
pub(crate) fn intersection_automaton(first: &Re, rest: &[Re]) -> Result<Dfa> {
    let mut dfa = minimal_dfa(first)?;
    for re in rest {
        dfa = dfa.intersect(&minimal_dfa(re)?)?.minimize();
    }
    Ok(dfa)
}

/// The strings `re` does not match: as an expression when it has one within the budgets,
/// else as the automaton ([`Re::Automaton`]). The strings that are not a `uri` have an
/// automaton of 180 states and an expression, rebuilt by state elimination, past 100,000
/// nodes.
pub(crate) fn complement(re: &Re) -> Result<Re> {
    let dfa = minimal_dfa(re)?.complement();
    match dfa.to_re() {
        Ok(re) => Ok(re),
        Err(_) => Ok(Re::Automaton(std::sync::Arc::new(super::Automaton::new(
            dfa.minimize(),
        )))),
    }
}

/// The minimal automaton of `re`. Those that take long to build are kept for the process: a
/// `format` recurs across schemas, met with a different `pattern` each time (`uri` takes
/// 4 ms to build and 2 more to minimize, the email address 3.5).
pub(crate) fn minimal_dfa(re: &Re) -> Result<Dfa> {
    if let Re::Automaton(a) = re {
        return Ok(a.dfa().clone());
    }
    if let Some(known) = SLOW_DFAS.lock().ok().and_then(|kept| kept.get(re).cloned()) {
        return Ok(known);
    }
    let started = std::time::Instant::now();
    let dfa = Dfa::from_re(re)?.minimize();
    if started.elapsed() >= SLOW_DFA {
        if let Ok(mut kept) = SLOW_DFAS.lock() {
            if kept.len() >= MAX_SLOW_DFAS {
                kept.clear();
            }
            kept.insert(re.clone(), dfa.clone());
        }
    }
    Ok(dfa)
}

/// The minimal automata that took [`SLOW_DFA`] or more to build, by expression.
static SLOW_DFAS: std::sync::LazyLock<std::sync::Mutex<FxHashMap<Re, Dfa>>> =
    std::sync::LazyLock::new(Default::default);

/// Building time from which an automaton is kept (see [`minimal_dfa`]).
const SLOW_DFA: std::time::Duration = std::time::Duration::from_micros(500);

/// Most automata [`SLOW_DFAS`] keeps; it starts over beyond.
const MAX_SLOW_DFAS: usize = 64;

/// Whether `re` matches no string: from its structure when it has no assertion (a regular
/// expression without intersection or complement is empty only through an empty class),
/// otherwise from its automaton.
pub(crate) fn is_empty(re: &Re) -> Result<bool> {
    match re.matches_nothing() {
        Some(empty) => Ok(empty),
        None => Ok(Dfa::from_re(re)?.is_empty()),
    }
}

/// Strings of `min..=max` characters, as an automaton.
pub(crate) fn length_dfa(min: u32, max: u32) -> Dfa {
    let n = max as usize + 1;
    let trans = (0..n)
        .map(|i| {
            if i + 1 < n {
                vec![(0, super::charset::MAX_CHAR, i as u32 + 1)]
            } else {
                Vec::new()
            }
        })
        .collect();
    let accepting = (0..n).map(|i| i >= min as usize).collect();
    Dfa { trans, accepting }
}

/// Strings of `min` characters or more, as an automaton.
pub(crate) fn at_least_dfa(min: u32) -> Dfa {
    let last = min as usize;
    let trans = (0..=last)
        .map(|i| vec![(0, super::charset::MAX_CHAR, (i + 1).min(last) as u32)])
        .collect();
    let accepting = (0..=last).map(|i| i == last).collect();
    Dfa { trans, accepting }
}

/// The strings of `positive` that none of `negative` matches, as an automaton.
pub(crate) fn difference(positive: &[Re], negative: &[Re]) -> Result<Dfa> {
    let mut dfa = match positive.split_first() {
        Some((first, _)) => minimal_dfa(first)?,
        None => Dfa::from_re(&Re::any_string())?,
    };
    for re in positive.iter().skip(1) {
        dfa = dfa.intersect(&minimal_dfa(re)?)?.minimize();
    }
    for re in negative {
        dfa = dfa.intersect(&minimal_dfa(re)?.complement())?.minimize();
    }
    Ok(dfa)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::re::ecma;

    fn dfa(pattern: &str) -> Dfa {
        Dfa::from_re(&ecma::parse(pattern).expect("parses")).expect("builds")
    }

    #[test]
    fn emptiness_from_structure_agrees_with_the_automaton() {
        let none = Re::class(CharSet::empty());
        let a = Re::literal("a");
        let cases = [
            (none.clone(), true),
            (Re::Concat(vec![a.clone(), none.clone()]), true),
            (Re::Alt(vec![none.clone(), a.clone()]), false),
            (Re::Alt(vec![none.clone(), none.clone()]), true),
            (
                Re::Repeat {
                    re: Box::new(none.clone()),
                    min: 0,
                    max: Some(3),
                },
                false,
            ),
            (
                Re::Repeat {
                    re: Box::new(none.clone()),
                    min: 2,
                    max: None,
                },
                true,
            ),
            (
                Re::Repeat {
                    re: Box::new(a.clone()),
                    min: 3,
                    max: Some(4),
                },
                false,
            ),
            (Re::not_in(&["x".to_string()]), false),
            (Re::one_of_strings(&[]), true),
        ];
        for (re, empty) in cases {
            assert_eq!(re.matches_nothing(), Some(empty), "{re:?}");
            assert_eq!(
                Dfa::from_re(&re).expect("small").is_empty(),
                empty,
                "{re:?}"
            );
        }
        // An assertion can rule out what the structure allows: the automaton decides.
        let anchored = ecma::parse("a^b").expect("parses");
        assert_eq!(anchored.matches_nothing(), None);
        assert!(is_empty(&anchored).expect("small"));
    }

    fn check_same(re: &Re, samples: &[&str], reference: &Dfa) {
        let back = Dfa::from_re(re).expect("rebuilds");
        for s in samples {
            assert_eq!(back.matches(s), reference.matches(s), "{s:?}");
        }
    }

    #[test]
    fn determinize_and_match() {
        let d = dfa("^(ab|a)c*$");
        for (s, ok) in [
            ("ab", true),
            ("a", true),
            ("acc", true),
            ("abcc", true),
            ("b", false),
            ("abb", false),
        ] {
            assert_eq!(d.matches(s), ok, "{s}");
        }
    }

    #[test]
    fn looks_in_the_middle() {
        let re = ecma::search_language("(^a|b)c").expect("parses");
        let d = Dfa::from_re(&re).expect("builds");
        for (s, ok) in [
            ("ac", true),
            ("xbc", true),
            ("xac", false),
            ("bc", true),
            ("a", false),
        ] {
            assert_eq!(d.matches(s), ok, "{s}");
        }
        let re = ecma::search_language("a$|^b").expect("parses");
        let d = Dfa::from_re(&re).expect("builds");
        for (s, ok) in [("xa", true), ("bx", true), ("xb", false), ("ax", false)] {
            assert_eq!(d.matches(s), ok, "{s}");
        }
    }

    #[test]
    fn intersection_complement_and_back() {
        let a = ecma::search_language("^[a-z]+$").expect("a");
        let b = ecma::search_language("x").expect("b");
        let both = intersect_all(&[a.clone(), b.clone()]).expect("intersects");
        let samples = ["x", "axb", "ab", "aXb", "", "xx"];
        let reference = Dfa::from_re(&a)
            .expect("a")
            .intersect(&Dfa::from_re(&b).expect("b"))
            .expect("product");
        check_same(&both, &samples, &reference);
        let not_b = complement(&b).expect("complement");
        let d = Dfa::from_re(&not_b).expect("rebuilds");
        assert!(d.matches("abc") && !d.matches("abxc") && d.matches(""));
        assert!(is_empty(&Re::concat(vec![Re::literal("a"), Re::nothing()])).expect("small"));
        let disjoint = intersect_all(&[
            ecma::search_language("^a").expect("a"),
            ecma::search_language("^b").expect("b"),
        ])
        .expect("small");
        assert!(is_empty(&disjoint).expect("small"));
    }

    #[test]
    fn union_accepts_what_either_accepts_and_nothing_else() {
        let words = dfa("^(ab)+$").union(&dfa("^a[0-9]?$")).expect("small");
        for (s, ok) in [
            ("ab", true),
            ("abab", true),
            ("a", true),
            ("a7", true),
            ("", false),
            ("aba", false),
            ("a77", false),
            ("ab7", false),
        ] {
            assert_eq!(words.matches(s), ok, "{s}");
        }
        // Minimal: `a|b` and `b|c` make one state before and one after a letter.
        let letters = dfa("^(a|b)$").union(&dfa("^(b|c)$")).expect("small");
        assert_eq!(letters.state_count(), 2);
    }

    #[test]
    fn length_bounds_agree_with_the_expression() {
        for pattern in [
            "^abc$",
            "^a(b|cd)?e{2,4}$",
            "^(ab)+$",
            "^x[0-9]*y?$",
            "^(a|bcdef)(g|h{3})$",
            "^$",
        ] {
            let anchored = dfa(pattern);
            assert_eq!(
                anchored.length_bounds(),
                anchored.to_re().expect("small").length_bounds(),
                "{pattern}"
            );
        }
        assert_eq!(dfa("^(ab)+c$").length_bounds(), (3, None));
        assert_eq!(dfa("^a{2,5}$").length_bounds(), (2, Some(5)));
        assert_eq!(dfa("^[]$").length_bounds(), (0, Some(0)));
    }

    #[test]
    fn complements_past_the_budget_stay_automata_inside_expressions() {
        // The strings that are not a URI: 180 states, an expression past the budget.
        let uri = crate::formats::format_re("uri").expect("known format");
        let Re::Automaton(outside) = complement(&uri).expect("complement") else {
            panic!("expected the automaton of the complement");
        };
        assert!(outside.dfa().matches("a b"));
        assert!(!outside.dfa().matches("https://example.com/"));
        // Read inside a larger expression through its NFA.
        let framed = Re::concat(vec![
            Re::literal("<"),
            Re::Automaton(outside.clone()),
            Re::literal(">"),
        ]);
        let framed = Dfa::from_re(&framed).expect("builds");
        assert!(framed.matches("<a b>"));
        assert!(framed.matches("<>"));
        assert!(!framed.matches("<urn:isbn:0451450523>"));
        assert!(!framed.matches("a b"));
        // Its own minimal automaton, not rebuilt.
        assert_eq!(
            &minimal_dfa(&Re::Automaton(outside.clone())).expect("kept"),
            outside.dfa()
        );
    }

    #[test]
    fn languages_that_never_run_out() {
        for (pattern, endless) in [
            ("^[a-z]+$", true),
            ("^.*$", true),
            ("^a[0-9]*$", true),
            ("^(ab)+c?$", false),
            ("^[a-z]{2,5}$", false),
            ("^x|y[0-9]*$", false),
            ("^[]$", true),
        ] {
            assert_eq!(
                dfa(pattern).minimize().never_runs_out(),
                endless,
                "{pattern}"
            );
        }
    }

    #[test]
    fn minimize_merges_equivalent_states() {
        let d = dfa("^(a|b)(a|b)$").minimize();
        assert_eq!(d.state_count(), 3);
    }

    #[test]
    fn budgets_are_errors() {
        let re = Re::repeat(
            Re::repeat(Re::class(CharSet::any()), 0, Some(1000)),
            0,
            Some(1000),
        );
        assert!(Dfa::from_re(&re).is_err());
    }
}
