//! Free text that stops where given strings first appear, as one regular language.
//!
//! Between tags a structural tag allows any text, but a trigger string opens a tag, a tag's end
//! string closes the text, and excluded strings may not appear at all. The text therefore ends
//! exactly where the first of these strings is complete: "text without any of them, then
//! one" is regular, and an Aho-Corasick automaton over the strings recognizes it with one state
//! per prefix of a string. The automaton goes to the engine as a [`RegexGraph`] whose edges read
//! character classes, so the whole stretch of text is one terminal, lexed without a parser step
//! per character, and its masks are exact: a token is allowed iff its characters keep the
//! text in the language, wherever a string splits across tokens.

use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};

use constrain_engine::{Budget, Expr, GrammarError, GraphState, RegexGraph};
use regex_syntax::hir::{Class, ClassUnicode, ClassUnicodeRange, Hir};

/// Where a stretch of free text ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Ending {
    /// With the output: text in which none of the strings appears.
    Output,
    /// With a stop string: text in which the first of the strings to appear is a stop string,
    /// ending with it.
    Stop,
    /// With trigger `i`: text in which the first of the strings to appear is that trigger,
    /// ending with it.
    Trigger(usize),
}

/// What a string does when it appears.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Role {
    Stop,
    Trigger(usize),
    Exclude,
}

/// A node of the Aho-Corasick trie: a prefix of some string.
#[derive(Default)]
struct Node {
    children: BTreeMap<char, usize>,
    /// The node of the longest proper suffix of this prefix that is a prefix too.
    fail: usize,
    /// The strings that end here, this prefix's own and those of its suffixes.
    roles: Vec<Role>,
}

/// The trie of the strings with its failure links.
struct Trie {
    nodes: Vec<Node>,
}

impl Trie {
    fn new(strings: &[(&str, Role)]) -> Trie {
        let mut nodes = vec![Node::default()];
        for (text, role) in strings {
            let mut at = 0;
            for c in text.chars() {
                at = match nodes[at].children.get(&c) {
                    Some(&next) => next,
                    None => {
                        nodes.push(Node::default());
                        let next = nodes.len() - 1;
                        nodes[at].children.insert(c, next);
                        next
                    }
                };
            }
            if at != 0 {
                nodes[at].roles.push(*role);
            }
        }
        let mut trie = Trie { nodes };
        let mut queue: VecDeque<usize> = trie.nodes[0].children.values().copied().collect();
        while let Some(node) = queue.pop_front() {
            let children: Vec<(char, usize)> = trie.nodes[node]
                .children
                .iter()
                .map(|(&c, &n)| (c, n))
                .collect();
            for (c, next) in children {
                let fail = if node == 0 {
                    0
                } else {
                    trie.step(trie.nodes[node].fail, c)
                };
                trie.nodes[next].fail = fail;
                let inherited = trie.nodes[fail].roles.clone();
                trie.nodes[next].roles.extend(inherited);
                queue.push_back(next);
            }
        }
        trie
    }

    /// The node after reading `c` at `node`: the longest suffix of the text so far that is a
    /// prefix of some string.
    fn step(&self, mut node: usize, c: char) -> usize {
        loop {
            if let Some(&next) = self.nodes[node].children.get(&c) {
                return next;
            }
            if node == 0 {
                return 0;
            }
            node = self.nodes[node].fail;
        }
    }
}

/// The language of free text that ends as `ending` says, given the strings that end it
/// (`stops`, `triggers`) and those it may not contain (`excludes`). Empty strings are left
/// out. The automaton may have at most `max_edges` edges (`Limits::max_grammar_size`).
pub(crate) fn free_text(
    stops: &[String],
    triggers: &[String],
    excludes: &[String],
    ending: Ending,
    max_edges: usize,
) -> Result<Expr, GrammarError> {
    let strings: Vec<(&str, Role)> = stops
        .iter()
        .map(|s| (s.as_str(), Role::Stop))
        .chain(
            triggers
                .iter()
                .enumerate()
                .map(|(i, s)| (s.as_str(), Role::Trigger(i))),
        )
        .chain(excludes.iter().map(|s| (s.as_str(), Role::Exclude)))
        .filter(|(s, _)| !s.is_empty())
        .collect();
    let trie = Trie::new(&strings);
    let alphabet: BTreeSet<char> = strings.iter().flat_map(|(s, _)| s.chars()).collect();

    // Graph states: the trie nodes reached before any string is complete, in the order first
    // reached (the root first), then one final state for the text that ends with a string.
    let mut state_of: HashMap<usize, u32> = HashMap::from([(0, 0)]);
    let mut order = vec![0usize];
    let mut labels: Vec<Hir> = Vec::new();
    let mut label_of: HashMap<(Vec<char>, bool), u32> = HashMap::new();
    let mut edges: Vec<Vec<(u32, u32)>> = Vec::new();
    let mut total_edges = 0usize;
    let done = u32::MAX;
    let mut at = 0;
    while at < order.len() {
        let node = order[at];
        at += 1;
        let mut by_target: BTreeMap<u32, Vec<char>> = BTreeMap::new();
        let mut to_root: Vec<char> = Vec::new();
        for &c in &alphabet {
            let next = trie.step(node, c);
            let roles = &trie.nodes[next].roles;
            if !roles.is_empty() {
                if ends_here(roles, ending) {
                    by_target.entry(done).or_default().push(c);
                }
                continue;
            }
            if next == 0 {
                to_root.push(c);
                continue;
            }
            let state = *state_of.entry(next).or_insert_with(|| {
                order.push(next);
                (order.len() - 1) as u32
            });
            by_target.entry(state).or_default().push(c);
        }
        let mut out = Vec::with_capacity(by_target.len() + 1);
        // Every character outside the strings, and those of theirs that lead nowhere else,
        // start the search over.
        let staying: Vec<char> = alphabet
            .iter()
            .copied()
            .filter(|c| !to_root.contains(c))
            .collect();
        out.push((label(&mut labels, &mut label_of, staying, true), 0));
        for (target, chars) in by_target {
            out.push((label(&mut labels, &mut label_of, chars, false), target));
        }
        total_edges += out.len();
        if total_edges > max_edges {
            return Err(GrammarError::LimitExceeded {
                budget: Budget::GrammarSize,
                limit: max_edges,
            });
        }
        edges.push(out);
    }
    let final_state = order.len() as u32;
    let mut states: Vec<GraphState> = edges
        .into_iter()
        .map(|out| GraphState {
            edges: out
                .into_iter()
                .map(|(l, t)| (l, if t == done { final_state } else { t }))
                .collect(),
            accepting: ending == Ending::Output,
        })
        .collect();
    states.push(GraphState {
        edges: Vec::new(),
        accepting: ending != Ending::Output,
    });
    Ok(Expr::graph(RegexGraph::new(labels, states)?))
}

/// Whether text whose first complete strings are `roles` ends there as `ending` wants (an
/// excluded string never ends it).
fn ends_here(roles: &[Role], ending: Ending) -> bool {
    if roles.contains(&Role::Exclude) {
        return false;
    }
    match ending {
        Ending::Output => false,
        Ending::Stop => roles.contains(&Role::Stop),
        Ending::Trigger(i) => roles.contains(&Role::Trigger(i)),
    }
}

/// The index of the label reading one of `chars` (with `negated`, any character but them),
/// added the first time it is asked for.
fn label(
    labels: &mut Vec<Hir>,
    label_of: &mut HashMap<(Vec<char>, bool), u32>,
    chars: Vec<char>,
    negated: bool,
) -> u32 {
    let key = (chars, negated);
    if let Some(&l) = label_of.get(&key) {
        return l;
    }
    let mut class = ClassUnicode::new(key.0.iter().map(|&c| ClassUnicodeRange::new(c, c)));
    if negated {
        class.negate();
    }
    labels.push(Hir::class(Class::Unicode(class)));
    let l = (labels.len() - 1) as u32;
    label_of.insert(key, l);
    l
}

#[cfg(test)]
mod tests {
    use super::*;
    use regex_syntax::hir::HirKind;

    fn strings(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    /// Whether the graph of `expr` reads all of `text` from state 0 into an accepting state
    /// (labels are character classes, or one character, so each edge reads one character).
    fn reads(expr: &Expr, text: &str) -> bool {
        let Expr::Graph(graph) = expr else {
            panic!("not a graph: {expr:?}")
        };
        let mut state = 0usize;
        for c in text.chars() {
            let next = graph.states()[state]
                .edges
                .iter()
                .find(|&&(l, _)| label_reads(&graph.labels()[l as usize], c));
            match next {
                Some(&(_, target)) => state = target as usize,
                None => return false,
            }
        }
        graph.states()[state].accepting
    }

    fn label_reads(hir: &Hir, c: char) -> bool {
        match hir.kind() {
            HirKind::Class(Class::Unicode(class)) => class
                .ranges()
                .iter()
                .any(|r| r.start() <= c && c <= r.end()),
            HirKind::Literal(literal) => *c.encode_utf8(&mut [0; 4]).as_bytes() == *literal.0,
            other => panic!("unexpected label {other:?}"),
        }
    }

    #[test]
    fn text_to_the_end_of_output_never_holds_a_trigger_or_an_excluded_string() {
        let e = free_text(
            &[],
            &strings(&["<f="]),
            &strings(&["bad"]),
            Ending::Output,
            1000,
        )
        .expect("builds");
        assert!(reads(&e, ""));
        assert!(reads(&e, "hello <f and <g= ba"));
        assert!(!reads(&e, "x<f="));
        assert!(!reads(&e, "so bad"));
    }

    #[test]
    fn text_to_a_trigger_ends_at_its_first_appearance() {
        let e = free_text(
            &[],
            &strings(&["<a>", "<b>"]),
            &[],
            Ending::Trigger(1),
            1000,
        )
        .expect("builds");
        assert!(reads(&e, "<b>"));
        assert!(reads(&e, "x <<b>"));
        assert!(!reads(&e, "<a><b>"));
        assert!(!reads(&e, "<b>x"));
        assert!(!reads(&e, "plain"));
    }

    #[test]
    fn text_to_a_stop_handles_overlapping_prefixes() {
        let e = free_text(&strings(&["aab"]), &[], &[], Ending::Stop, 1000).expect("builds");
        assert!(reads(&e, "aaab"));
        assert!(reads(&e, "abaab"));
        assert!(!reads(&e, "aab "));
        assert!(!reads(&e, "aabaab"));
    }

    #[test]
    fn a_stop_beats_a_trigger_only_when_the_ending_asks_for_it() {
        // "</x>" ends the text; "<" alone is a trigger that completes first.
        let stops = strings(&["</x>"]);
        let triggers = strings(&["<"]);
        let to_stop = free_text(&stops, &triggers, &[], Ending::Stop, 1000).expect("builds");
        let to_trigger =
            free_text(&stops, &triggers, &[], Ending::Trigger(0), 1000).expect("builds");
        assert!(reads(&to_trigger, "ab<"));
        assert!(!reads(&to_stop, "ab</x>"));
    }

    #[test]
    fn the_edge_budget_is_enforced() {
        let many: Vec<String> = (0..50).map(|i| format!("<tag{i}>")).collect();
        assert!(matches!(
            free_text(&many, &[], &[], Ending::Stop, 20),
            Err(GrammarError::LimitExceeded { .. })
        ));
    }
}
