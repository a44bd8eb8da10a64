//! Checks across rules: duplicates, undefined references, the root, left recursion.

use std::collections::HashMap;

use crate::error::{ErrorKind, GbnfError, Location};
use crate::syntax::{Node, RuleDef};

/// The rules of a grammar, indexed by name.
pub(crate) struct RuleIndex<'a> {
    by_name: HashMap<&'a str, usize>,
}

impl RuleIndex<'_> {
    /// The index of the rule called `name`, if it is defined.
    pub fn get(&self, name: &str) -> Option<usize> {
        self.by_name.get(name).copied()
    }
}

/// Indexes `rules` by name and checks that each is defined once and every reference resolves.
pub(crate) fn index_rules<'a>(
    text: &str,
    rules: &'a [RuleDef],
) -> Result<RuleIndex<'a>, GbnfError> {
    if rules.is_empty() {
        return Err(GbnfError::global(ErrorKind::NoRules));
    }
    let mut by_name = HashMap::with_capacity(rules.len());
    for (i, rule) in rules.iter().enumerate() {
        if let Some(&first) = by_name.get(rule.name.as_str()) {
            let first: &RuleDef = &rules[first];
            let kind = ErrorKind::DuplicateRule {
                rule: rule.name.clone(),
                first: Location::of(text, first.offset),
            };
            return Err(GbnfError::at(kind, Location::of(text, rule.offset)));
        }
        by_name.insert(rule.name.as_str(), i);
    }
    for rule in rules {
        let mut undefined = None;
        rule.body.for_each_ref(&mut |name, offset| {
            if undefined.is_none() && !by_name.contains_key(name) {
                undefined = Some((name, offset));
            }
        });
        if let Some((name, offset)) = undefined {
            return Err(GbnfError::at(
                ErrorKind::UndefinedRule(name.to_string()),
                Location::of(text, offset),
            ));
        }
    }
    Ok(RuleIndex { by_name })
}

/// The index of the root rule, or an error naming the rules there are.
pub(crate) fn find_root(
    rules: &[RuleDef],
    index: &RuleIndex<'_>,
    root: &str,
) -> Result<usize, GbnfError> {
    index.get(root).ok_or_else(|| {
        const SHOWN: usize = 8;
        let mut defined: Vec<&str> = rules.iter().take(SHOWN).map(|r| r.name.as_str()).collect();
        if rules.len() > SHOWN {
            defined.push("...");
        }
        GbnfError::global(ErrorKind::MissingRoot {
            root: root.to_string(),
            defined: defined.join(", "),
        })
    })
}

/// Rejects grammars where a rule can reach itself before consuming any input, directly or
/// through other rules, possibly after a prefix that can be empty (llama.cpp's matcher would
/// loop on them, so it refuses them when building).
pub(crate) fn check_left_recursion(
    text: &str,
    rules: &[RuleDef],
    index: &RuleIndex<'_>,
) -> Result<(), GbnfError> {
    let nullable = nullable_rules(rules, index);
    let leftmost: Vec<Vec<usize>> = rules
        .iter()
        .map(|rule| {
            let mut refs = Vec::new();
            leftmost_refs(&rule.body, &nullable, index, &mut refs);
            refs.sort_unstable();
            refs.dedup();
            refs
        })
        .collect();
    match find_cycle(&leftmost) {
        None => Ok(()),
        Some(cycle) => {
            let names = cycle.iter().map(|&r| rules[r].name.clone()).collect();
            let at = Location::of(text, rules[cycle[0]].offset);
            Err(GbnfError::at(ErrorKind::LeftRecursion(names), at))
        }
    }
}

/// Which rules can match the empty string: a worklist fixpoint, re-examining a rule only when
/// one it refers to turns out to be nullable.
fn nullable_rules(rules: &[RuleDef], index: &RuleIndex<'_>) -> Vec<bool> {
    let mut referrers: Vec<Vec<usize>> = vec![Vec::new(); rules.len()];
    for (i, rule) in rules.iter().enumerate() {
        rule.body.for_each_ref(&mut |name, _| {
            if let Some(target) = index.get(name) {
                if referrers[target].last() != Some(&i) {
                    referrers[target].push(i);
                }
            }
        });
    }
    let mut nullable = vec![false; rules.len()];
    let mut pending: Vec<usize> = (0..rules.len()).rev().collect();
    while let Some(i) = pending.pop() {
        if !nullable[i] && is_nullable(&rules[i].body, &nullable, index) {
            nullable[i] = true;
            pending.extend(referrers[i].iter().copied().filter(|&r| !nullable[r]));
        }
    }
    nullable
}

fn is_nullable(node: &Node, nullable: &[bool], index: &RuleIndex<'_>) -> bool {
    match node {
        Node::Literal(text) => text.is_empty(),
        Node::Class { .. } | Node::AnyChar | Node::Token { .. } => false,
        Node::Ref { name, .. } => index.get(name).is_some_and(|r| nullable[r]),
        Node::Seq(parts) => parts.iter().all(|p| is_nullable(p, nullable, index)),
        Node::Alt(alternatives) => alternatives.iter().any(|a| is_nullable(a, nullable, index)),
        Node::Repeat { node, min, .. } => *min == 0 || is_nullable(node, nullable, index),
    }
}

/// Collects the rules `node` may start with, and returns whether `node` is nullable.
fn leftmost_refs(
    node: &Node,
    nullable: &[bool],
    index: &RuleIndex<'_>,
    out: &mut Vec<usize>,
) -> bool {
    match node {
        Node::Literal(text) => text.is_empty(),
        Node::Class { .. } | Node::AnyChar | Node::Token { .. } => false,
        Node::Ref { name, .. } => match index.get(name) {
            Some(r) => {
                out.push(r);
                nullable[r]
            }
            None => false,
        },
        Node::Seq(parts) => parts.iter().all(|p| leftmost_refs(p, nullable, index, out)),
        Node::Alt(alternatives) => {
            let mut any = false;
            for a in alternatives {
                any |= leftmost_refs(a, nullable, index, out);
            }
            any
        }
        Node::Repeat { max: Some(0), .. } => true,
        Node::Repeat { node, min, .. } => leftmost_refs(node, nullable, index, out) || *min == 0,
    }
}

/// A cycle of the graph, as the path `a -> ... -> a`, found by an iterative depth-first search
/// (no recursion: grammars may have long chains of rules).
fn find_cycle(edges: &[Vec<usize>]) -> Option<Vec<usize>> {
    #[derive(Copy, Clone, PartialEq)]
    enum State {
        New,
        OnPath,
        Done,
    }
    let mut state = vec![State::New; edges.len()];
    for start in 0..edges.len() {
        if state[start] != State::New {
            continue;
        }
        let mut path: Vec<(usize, usize)> = vec![(start, 0)];
        state[start] = State::OnPath;
        while let Some(&mut (node, ref mut next)) = path.last_mut() {
            match edges[node].get(*next) {
                Some(&target) => {
                    *next += 1;
                    match state[target] {
                        State::New => {
                            state[target] = State::OnPath;
                            path.push((target, 0));
                        }
                        State::OnPath => {
                            let from = path.iter().position(|&(n, _)| n == target).unwrap_or(0);
                            let mut cycle: Vec<usize> =
                                path[from..].iter().map(|&(n, _)| n).collect();
                            cycle.push(target);
                            return Some(cycle);
                        }
                        State::Done => {}
                    }
                }
                None => {
                    state[node] = State::Done;
                    path.pop();
                }
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::find_cycle;

    #[test]
    fn cycles() {
        assert_eq!(find_cycle(&[vec![1], vec![2], vec![]]), None);
        assert_eq!(find_cycle(&[vec![0]]), Some(vec![0, 0]));
        assert_eq!(
            find_cycle(&[vec![1], vec![2], vec![1]]),
            Some(vec![1, 2, 1])
        );
    }

    #[test]
    fn long_chains_do_not_recurse() {
        let n = 200_000;
        let mut edges: Vec<Vec<usize>> = (0..n).map(|i| vec![i + 1]).collect();
        edges[n - 1] = vec![0];
        assert_eq!(find_cycle(&edges).map(|c| c.len()), Some(n + 1));
    }
}
