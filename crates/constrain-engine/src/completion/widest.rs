//! The widest completion of a grammar: at most how many bytes the shortest completion of any
//! of its states takes, where that is bounded (a grammar without recursion, whose lexemes
//! are of bounded automata). While a token budget leaves at least that many tokens after the
//! next one, it can refuse nothing, and nothing of it needs computing for the state.
//!
//! Read off the grammar, not its states: a state's shortest completion is at most the rest of
//! every item on one of its parse stacks, each the shortest text of the symbols after the
//! item's position, and of the lexeme in flight, the fewest bytes that end it. So for a
//! nonterminal, the widest completion *within* it is the most, over the positions of its
//! productions, of the widest within the symbol there plus the shortest text of the symbols
//! after it; for a terminal, the most, over the states of its automaton, of the fewest bytes
//! to an end. A family (items in any order) is bounded by its widest item, or separator then
//! cheapest item, and every required member after it.

use rustc_hash::FxHashMap;

use super::{Completions, MAX_COMPLETION_BYTES, NONE};
use crate::automaton::Automaton;
use crate::error::MatchError;
use crate::lexer::{LexId, LEX_DEAD};
use crate::parser::SymAt;
use crate::token_index::TokenIndex;

/// Lexer states the searches of the terminals' automata build in all, a twentieth of the
/// default `Limits::max_lexer_states` (matching needs the rest): beyond them the grammar is
/// taken to have no widest completion.
const MAX_LEXER_STATES: usize = 10_000;

/// The search's memory: the widest completion within each symbol found so far, and
/// whether terminals are read (their automata searched) or count as nothing.
#[derive(Default)]
struct Search {
    nonterminals: FxHashMap<u32, u64>,
    terminals: FxHashMap<u32, u64>,
    lexer_states: usize,
    lexemes: bool,
}

impl Completions {
    /// At most how many bytes the shortest completion of any state takes (see the module
    /// doc), `None` where that is unbounded or not found within the limits; kept.
    pub(crate) fn widest_completion(
        &mut self,
        a: &mut Automaton,
        index: &TokenIndex,
    ) -> Result<Option<u64>, MatchError> {
        if let Some(known) = self.widest_completion {
            return Ok(known);
        }
        self.prepare(a, index)?;
        let widest = self.widest_from_start(a)?;
        self.widest_completion = Some(widest);
        Ok(widest)
    }

    /// The widest completion within the start symbol: the nonterminals it reaches, a
    /// strongly connected component at a time, those a component reaches first. Within a
    /// component (recursion), the widest completions are raised together until they hold:
    /// if they still grow after as many rounds as it has nonterminals, a cycle adds bytes
    /// every time round (nesting), and there is no bound. Whether a cycle grows does not
    /// depend on the terminals (none is part of a cycle of nonterminals), so that is found
    /// first with terminals counting as nothing, and their automata are searched only for a
    /// grammar with a bound.
    fn widest_from_start(&mut self, a: &mut Automaton) -> Result<Option<u64>, MatchError> {
        let start = a.parser.start_nonterminal();
        let components = components_from(a, start, |a, nt| self.parts_of(a, nt));
        if !self.raise(a, &components, &mut Search::default())? {
            return Ok(None);
        }
        let mut search = Search {
            lexemes: true,
            ..Search::default()
        };
        let bounded = self.raise(a, &components, &mut search)?;
        Ok(bounded
            .then(|| search.nonterminals.get(&start).copied())
            .flatten())
    }

    /// Raises the widest completions of `components` (in order) until they hold; whether
    /// they do, neither growing still nor passing [`MAX_COMPLETION_BYTES`].
    fn raise(
        &mut self,
        a: &mut Automaton,
        components: &[Vec<u32>],
        search: &mut Search,
    ) -> Result<bool, MatchError> {
        for component in components {
            let rounds = if component.len() == 1 {
                1
            } else {
                component.len() + 1
            };
            let mut settled = false;
            for _ in 0..=rounds {
                let mut changed = false;
                for &nt in component {
                    let widest = self.widest_in_nonterminal(a, search, nt)?;
                    if widest > MAX_COMPLETION_BYTES {
                        return Ok(false);
                    }
                    let known = search.nonterminals.get(&nt).copied().unwrap_or(0);
                    if widest > known {
                        search.nonterminals.insert(nt, widest);
                        changed = true;
                    } else {
                        search.nonterminals.entry(nt).or_insert(widest);
                    }
                }
                if !changed {
                    settled = true;
                    break;
                }
            }
            if !settled {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// The nonterminals `nt` names: in its productions, or a family's parts.
    fn parts_of(&self, a: &Automaton, nt: u32) -> Vec<u32> {
        if let Some(family) = self.family_parts(a, nt) {
            return family
                .items
                .iter()
                .chain(family.separator.iter())
                .copied()
                .collect();
        }
        let parser = &a.parser;
        let named = |&first: &u32| {
            parser.production(first).filter_map(|sym| match sym {
                SymAt::Nonterminal(n) => Some(n),
                _ => None,
            })
        };
        parser.productions_of(nt).iter().flat_map(named).collect()
    }

    /// The widest completion within `nt` from those of the symbols it names as they stand
    /// (none yet counts as nothing).
    fn widest_in_nonterminal(
        &mut self,
        a: &mut Automaton,
        search: &mut Search,
        nt: u32,
    ) -> Result<u64, MatchError> {
        match self.family_parts(a, nt) {
            Some(family) => self.widest_in_family(a, search, &family),
            None => {
                let mut widest = 0u64;
                for first in a.parser.productions_of(nt).to_vec() {
                    let within = self.widest_in_production(a, search, nt, first)?;
                    widest = widest.max(within);
                }
                Ok(widest)
            }
        }
    }

    /// The widest completion within the production of `nt` beginning at `first`: at its end,
    /// none; at each symbol, the widest within it and the shortest text of those after it.
    /// But inside a first symbol that is `nt` itself (left recursion, as a repetition is
    /// built): what is read there is a derivation of `nt` of its own, which completes it
    /// without the rest.
    fn widest_in_production(
        &mut self,
        a: &mut Automaton,
        search: &mut Search,
        nt: u32,
        first: u32,
    ) -> Result<u64, MatchError> {
        let syms: Vec<SymAt> = a.parser.production(first).collect();
        let mut widest = 0u64;
        let mut after = 0u64;
        for (i, &sym) in syms.iter().enumerate().rev() {
            let within = match sym {
                SymAt::Terminal(t) if search.lexemes => self.widest_in_terminal(a, search, t)?,
                SymAt::Terminal(_) => 0,
                SymAt::Nonterminal(n) if n == nt && i == 0 => 0,
                SymAt::Nonterminal(n) => search.nonterminals.get(&n).copied().unwrap_or(0),
                SymAt::End => 0,
            };
            widest = widest.max(within.saturating_add(after));
            let shortest = match sym {
                SymAt::Terminal(t) => self.terminal_len(&a.parser, t),
                SymAt::Nonterminal(n) => self.nonterminal_len(&a.parser, n),
                SymAt::End => 0,
            };
            after = after.saturating_add(shortest);
        }
        Ok(widest)
    }

    /// The widest completion within a family: inside an item (the separator before it,
    /// then the item; or the item itself), then every required member, each after a
    /// separator, bounds the rest whichever members came before.
    fn widest_in_family(
        &mut self,
        a: &mut Automaton,
        search: &Search,
        family: &FamilyParts,
    ) -> Result<u64, MatchError> {
        let widest_of = |n: u32| search.nonterminals.get(&n).copied().unwrap_or(0);
        let (sep_shortest, sep_widest) = match family.separator {
            Some(sep) => (self.nonterminal_len(&a.parser, sep), widest_of(sep)),
            None => (0, 0),
        };
        let mut rest = 0u64;
        for &m in &family.required {
            let shortest = self.nonterminal_len(&a.parser, m);
            rest = rest.saturating_add(sep_shortest).saturating_add(shortest);
        }
        let mut widest = 0u64;
        for &item in &family.items {
            let shortest = self.nonterminal_len(&a.parser, item);
            let inside = widest_of(item).max(sep_widest.saturating_add(shortest));
            widest = widest.max(inside.saturating_add(rest));
        }
        Ok(widest)
    }

    /// The widest completion within terminal `t`: the most, over the states of its automaton
    /// from its start, of the fewest bytes to one where it may end.
    fn widest_in_terminal(
        &mut self,
        a: &mut Automaton,
        search: &mut Search,
        t: u32,
    ) -> Result<u64, MatchError> {
        if let Some(&known) = search.terminals.get(&t) {
            return Ok(known);
        }
        let lexer = &mut a.lexer;
        let start = lexer.start(&[t])?;
        let mut index: FxHashMap<LexId, usize> = FxHashMap::from_iter([(start, 0)]);
        let mut states = vec![start];
        let mut preds: Vec<Vec<usize>> = vec![Vec::new()];
        let mut next_to_expand = 0;
        while next_to_expand < states.len() {
            let from = next_to_expand;
            next_to_expand += 1;
            for class in 0..lexer.classes() {
                let to = lexer.next(states[from], class)?;
                if to == LEX_DEAD {
                    continue;
                }
                let i = *index.entry(to).or_insert_with(|| {
                    states.push(to);
                    preds.push(Vec::new());
                    states.len() - 1
                });
                preds[i].push(from);
            }
            if search.lexer_states + states.len() > MAX_LEXER_STATES {
                search.terminals.insert(t, NONE);
                return Ok(NONE);
            }
        }
        search.lexer_states += states.len();
        // The fewest bytes from each state to an end: a search backwards from the ends.
        let mut dist = vec![NONE; states.len()];
        let mut queue = std::collections::VecDeque::new();
        for (i, &x) in states.iter().enumerate() {
            if lexer.accepts(x).contains(&t) {
                dist[i] = 0;
                queue.push_back(i);
            }
        }
        while let Some(i) = queue.pop_front() {
            for &p in &preds[i] {
                if dist[p] == NONE {
                    dist[p] = dist[i] + 1;
                    queue.push_back(p);
                }
            }
        }
        // A state that cannot end leaves the terminal unbounded.
        let widest = dist.iter().copied().max().unwrap_or(NONE);
        search.terminals.insert(t, widest);
        Ok(widest)
    }

    /// The parts of family nonterminal `nt`, `None` for another nonterminal.
    fn family_parts(&self, a: &Automaton, nt: u32) -> Option<FamilyParts> {
        let shape = a.parser.family_shape(nt)?;
        let family = shape.family;
        let required = (0..family.members.len())
            .filter(|&j| shape.is_required(j))
            .map(|j| family.members[j].0)
            .collect();
        let items = family
            .members
            .iter()
            .map(|m| m.0)
            .chain(family.extra)
            .collect();
        Some(FamilyParts {
            items,
            required,
            separator: family.separator,
        })
    }
}

/// What [`Completions::widest_in_family`] reads of a family.
struct FamilyParts {
    /// Every member, and the extra item if any.
    items: Vec<u32>,
    required: Vec<u32>,
    separator: Option<u32>,
}

/// The strongly connected components of the nonterminals reachable from `start` by `parts`,
/// each after every component it reaches (Tarjan's algorithm, without recursion: grammars
/// nest deeply).
fn components_from(
    a: &Automaton,
    start: u32,
    parts: impl Fn(&Automaton, u32) -> Vec<u32>,
) -> Vec<Vec<u32>> {
    struct Node {
        index: usize,
        low: usize,
        on_stack: bool,
    }
    let mut nodes: FxHashMap<u32, Node> = FxHashMap::default();
    let mut stack: Vec<u32> = Vec::new();
    let mut components = Vec::new();
    // Frames of the depth-first search: a nonterminal, its parts, the next part to visit.
    let mut frames: Vec<(u32, Vec<u32>, usize)> = Vec::new();
    let visit = |nt: u32, nodes: &mut FxHashMap<u32, Node>, stack: &mut Vec<u32>| {
        let index = nodes.len();
        nodes.insert(
            nt,
            Node {
                index,
                low: index,
                on_stack: true,
            },
        );
        stack.push(nt);
        (nt, parts(a, nt), 0)
    };
    frames.push(visit(start, &mut nodes, &mut stack));
    while let Some(frame) = frames.last_mut() {
        let nt = frame.0;
        if let Some(&next) = frame.1.get(frame.2) {
            frame.2 += 1;
            match nodes.get(&next) {
                None => frames.push(visit(next, &mut nodes, &mut stack)),
                Some(n) if n.on_stack => {
                    let index = n.index;
                    let node = nodes.get_mut(&nt).expect("visited");
                    node.low = node.low.min(index);
                }
                Some(_) => {}
            }
            continue;
        }
        frames.pop();
        let (index, low) = {
            let node = &nodes[&nt];
            (node.index, node.low)
        };
        if let Some(parent) = frames.last() {
            let parent = nodes.get_mut(&parent.0).expect("visited");
            parent.low = parent.low.min(low);
        }
        if low == index {
            let mut component = Vec::new();
            while let Some(top) = stack.pop() {
                nodes.get_mut(&top).expect("visited").on_stack = false;
                component.push(top);
                if top == nt {
                    break;
                }
            }
            components.push(component);
        }
    }
    components
}
