//! Regular languages over Unicode scalar values: the decoded text of JSON strings.
//!
//! String constraints (`pattern`, `format`, lengths, property names) are regular languages of
//! *decoded* strings. They are combined here (intersection, complement, length bounds, through
//! [`dfa`]) and only at the end spelled as JSON string text by [`crate::json_text`].

mod charset;
pub(crate) mod dfa;
pub(crate) mod ecma;
mod length;
mod minimize;
mod trie;

pub(crate) use charset::CharSet;
pub(crate) use length::{narrow_length, restrict_length};
pub(crate) use trie::FlatTrie;

use std::sync::Arc;

use regex_syntax::hir::{Class, ClassUnicode, ClassUnicodeRange, Hir};

/// A zero-width assertion of an ECMA-262 pattern that has not been resolved yet.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) enum Look {
    /// `^`: the start of the string.
    Start,
    /// `$`: the end of the string.
    End,
}

/// A minimal automaton inside an expression ([`Re::Automaton`]), hashed and ordered by a
/// fingerprint taken once: expressions are hashed again at every cache lookup, and an
/// automaton has thousands of transitions.
#[derive(Debug)]
pub(crate) struct Automaton {
    fingerprint: u64,
    dfa: dfa::Dfa,
}

impl Automaton {
    pub(crate) fn new(dfa: dfa::Dfa) -> Automaton {
        use std::hash::{Hash, Hasher};
        let mut hasher = rustc_hash::FxHasher::default();
        dfa.hash(&mut hasher);
        Automaton {
            fingerprint: hasher.finish(),
            dfa,
        }
    }

    pub(crate) fn dfa(&self) -> &dfa::Dfa {
        &self.dfa
    }
}

impl PartialEq for Automaton {
    fn eq(&self, other: &Automaton) -> bool {
        self.fingerprint == other.fingerprint && self.dfa == other.dfa
    }
}

impl Eq for Automaton {}

impl std::hash::Hash for Automaton {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.fingerprint.hash(state);
    }
}

impl PartialOrd for Automaton {
    fn partial_cmp(&self, other: &Automaton) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Automaton {
    fn cmp(&self, other: &Automaton) -> std::cmp::Ordering {
        self.fingerprint
            .cmp(&other.fingerprint)
            .then_with(|| self.dfa.cmp(&other.dfa))
    }
}

/// A regular expression over Unicode scalar values.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) enum Re {
    /// One character from the set; the empty set matches nothing.
    Class(CharSet),
    /// Exactly this text (the empty string when empty).
    Literal(String),
    /// Concatenation.
    Concat(Vec<Re>),
    /// Alternation; no alternatives matches nothing.
    Alt(Vec<Re>),
    /// `min..=max` repetitions (`None`: unbounded).
    Repeat {
        re: Box<Re>,
        min: u32,
        max: Option<u32>,
    },
    /// An assertion; only inside patterns, removed by anchoring.
    Look(Look),
    /// The strings a minimal automaton accepts: a language whose expression, rebuilt from
    /// the automaton by state elimination, would be past the budget (the strings that are
    /// not a `uri`). Combined with others as an automaton and turned into a terminal as a
    /// graph, never spelled.
    Automaton(Arc<Automaton>),
}

impl Re {
    pub(crate) fn empty() -> Re {
        Re::Literal(String::new())
    }

    pub(crate) fn nothing() -> Re {
        Re::Alt(Vec::new())
    }

    pub(crate) fn any_char() -> Re {
        Re::Class(CharSet::any())
    }

    /// Any string.
    pub(crate) fn any_string() -> Re {
        Re::repeat(Re::any_char(), 0, None)
    }

    pub(crate) fn literal(text: &str) -> Re {
        Re::Literal(text.to_string())
    }

    pub(crate) fn class(set: CharSet) -> Re {
        Re::Class(set)
    }

    pub(crate) fn is_nothing(&self) -> bool {
        match self {
            Re::Class(s) => s.is_empty(),
            Re::Alt(v) => v.is_empty(),
            _ => false,
        }
    }

    /// Whether `re` matches no string, read off its structure; `None` when it holds an
    /// assertion, which may rule out a match its structure allows.
    pub(crate) fn matches_nothing(&self) -> Option<bool> {
        Some(match self {
            Re::Class(set) => set.is_empty(),
            Re::Literal(_) => false,
            Re::Concat(parts) => {
                let mut empty = false;
                for p in parts {
                    empty |= p.matches_nothing()?;
                }
                empty
            }
            Re::Alt(parts) => {
                let mut empty = true;
                for p in parts {
                    empty &= p.matches_nothing()?;
                }
                empty
            }
            Re::Repeat { re, min, max } => {
                max.is_some_and(|m| m < *min) || (*min > 0 && re.matches_nothing()?)
            }
            Re::Look(_) => return None,
            Re::Automaton(a) => a.dfa().is_empty(),
        })
    }

    pub(crate) fn is_empty_string(&self) -> bool {
        matches!(self, Re::Literal(s) if s.is_empty())
    }

    /// The concatenation, simplified: nested concatenations flattened, empty strings dropped,
    /// adjacent literals joined; nothing if any part is nothing.
    pub(crate) fn concat(parts: Vec<Re>) -> Re {
        let mut out: Vec<Re> = Vec::with_capacity(parts.len());
        for part in parts {
            if part.is_nothing() {
                return Re::nothing();
            }
            let items = match part {
                Re::Concat(inner) => inner,
                other => vec![other],
            };
            for item in items {
                if item.is_empty_string() {
                    continue;
                }
                if let (Some(Re::Literal(prev)), Re::Literal(next)) = (out.last_mut(), &item) {
                    prev.push_str(next);
                    continue;
                }
                out.push(item);
            }
        }
        match out.len() {
            0 => Re::empty(),
            1 => out.pop().unwrap_or_else(Re::empty),
            _ => Re::Concat(out),
        }
    }

    /// The alternation, simplified: nested alternations flattened, nothing dropped, duplicates
    /// removed and single characters merged into one class.
    ///
    /// Short lists are deduplicated by comparison, which stops at the first difference (the
    /// alternatives of a trie level differ in their first character); only long ones hash
    /// their members. Hashing or cloning at every level would make nested alternations, as a
    /// key complement builds them, quadratic in their depth.
    pub(crate) fn alt(alternatives: Vec<Re>) -> Re {
        let mut out: Vec<Re> = Vec::with_capacity(alternatives.len());
        let mut seen = Dedup::default();
        let mut chars = CharSet::empty();
        let mut have_chars = false;
        let mut flat = Vec::with_capacity(alternatives.len());
        for a in alternatives {
            match a {
                Re::Alt(inner) => flat.extend(inner),
                other => flat.push(other),
            }
        }
        for a in flat {
            if a.is_nothing() {
                continue;
            }
            match &a {
                Re::Class(set) => {
                    chars = chars.union(set);
                    have_chars = true;
                    continue;
                }
                Re::Literal(s) => {
                    let mut it = s.chars();
                    if let (Some(c), None) = (it.next(), it.next()) {
                        chars = chars.union(&CharSet::single(c));
                        have_chars = true;
                        continue;
                    }
                }
                _ => {}
            }
            if seen.is_new(&out, &a) {
                out.push(a);
            }
        }
        if have_chars {
            out.insert(0, Re::single_or_class(chars));
        }
        match out.len() {
            0 => Re::nothing(),
            1 => out.pop().unwrap_or_else(Re::nothing),
            _ => Re::Alt(out),
        }
    }

    fn single_or_class(set: CharSet) -> Re {
        match set.single_char() {
            Some(c) => Re::Literal(c.to_string()),
            None => Re::Class(set),
        }
    }

    /// `min..=max` repetitions of `re`, simplified.
    pub(crate) fn repeat(re: Re, min: u32, max: Option<u32>) -> Re {
        if let Some(max) = max {
            if max < min {
                return Re::nothing();
            }
            if max == 0 {
                return Re::empty();
            }
        }
        if re.is_nothing() {
            return if min == 0 { Re::empty() } else { Re::nothing() };
        }
        if re.is_empty_string() {
            return Re::empty();
        }
        if min == 1 && max == Some(1) {
            return re;
        }
        Re::Repeat {
            re: Box::new(re),
            min,
            max,
        }
    }

    pub(crate) fn optional(self) -> Re {
        Re::repeat(self, 0, Some(1))
    }

    /// Shortest and longest length in characters (`None`: unbounded), ignoring that parts may
    /// match nothing.
    pub(crate) fn length_bounds(&self) -> (u64, Option<u64>) {
        match self {
            Re::Class(_) => (1, Some(1)),
            Re::Literal(s) => {
                let n = s.chars().count() as u64;
                (n, Some(n))
            }
            Re::Look(_) => (0, Some(0)),
            Re::Automaton(a) => a.dfa().length_bounds(),
            Re::Concat(parts) => parts.iter().fold((0, Some(0)), |(lo, hi), p| {
                let (a, b) = p.length_bounds();
                (
                    lo.saturating_add(a),
                    hi.zip(b).map(|(x, y)| x.saturating_add(y)),
                )
            }),
            Re::Alt(parts) => {
                if parts.is_empty() {
                    return (0, Some(0));
                }
                parts.iter().fold((u64::MAX, Some(0)), |(lo, hi), p| {
                    let (a, b) = p.length_bounds();
                    (lo.min(a), hi.zip(b).map(|(x, y)| x.max(y)))
                })
            }
            Re::Repeat { re, min, max } => {
                let (a, b) = re.length_bounds();
                let hi = match (b, max) {
                    (Some(0), _) => Some(0),
                    (Some(b), Some(m)) => Some(b.saturating_mul(u64::from(*m))),
                    _ => None,
                };
                (a.saturating_mul(u64::from(*min)), hi)
            }
        }
    }

    /// Number of nodes, counting repeated parts once.
    pub(crate) fn size(&self) -> usize {
        match self {
            Re::Class(_) | Re::Look(_) => 1,
            Re::Literal(s) => 1 + s.len() / 8,
            Re::Concat(parts) | Re::Alt(parts) => 1 + parts.iter().map(Re::size).sum::<usize>(),
            Re::Repeat { re, .. } => 1 + re.size(),
            Re::Automaton(a) => a.dfa().size(),
        }
    }

    /// Whether the expression nests deeper than `limit` (checked without deep recursion).
    pub(crate) fn depth_exceeds(&self, limit: usize) -> bool {
        let mut stack = vec![(self, 0usize)];
        while let Some((re, d)) = stack.pop() {
            if d > limit {
                return true;
            }
            match re {
                Re::Concat(parts) | Re::Alt(parts) => {
                    stack.extend(parts.iter().map(|p| (p, d + 1)))
                }
                Re::Repeat { re, .. } => stack.push((re, d + 1)),
                _ => {}
            }
        }
        false
    }

    pub(crate) fn has_looks(&self) -> bool {
        match self {
            Re::Look(_) => true,
            Re::Class(_) | Re::Literal(_) | Re::Automaton(_) => false,
            Re::Concat(parts) | Re::Alt(parts) => parts.iter().any(Re::has_looks),
            Re::Repeat { re, .. } => re.has_looks(),
        }
    }

    /// Whether the expression holds a language given as an automaton ([`Re::Automaton`]).
    pub(crate) fn has_automaton(&self) -> bool {
        match self {
            Re::Automaton(_) => true,
            Re::Class(_) | Re::Literal(_) | Re::Look(_) => false,
            Re::Concat(parts) | Re::Alt(parts) => parts.iter().any(Re::has_automaton),
            Re::Repeat { re, .. } => re.has_automaton(),
        }
    }

    /// The same language as a `regex-syntax` HIR over Unicode text (for matching decoded
    /// strings). Assertions become `^`/`$` of the whole text. An automaton becomes its
    /// expression, or matches nothing when that is past the budget: whoever may hold one
    /// matches with the automaton instead ([`crate::ctx::Ctx::lang_matches`]).
    pub(crate) fn to_hir(&self) -> Hir {
        match self {
            Re::Class(set) => Hir::class(Class::Unicode(unicode_class(set))),
            Re::Literal(s) => Hir::literal(s.as_bytes()),
            Re::Concat(parts) => Hir::concat(parts.iter().map(Re::to_hir).collect()),
            Re::Alt(parts) => {
                if parts.is_empty() {
                    Hir::fail()
                } else {
                    Hir::alternation(parts.iter().map(Re::to_hir).collect())
                }
            }
            Re::Repeat { re, min, max } => Hir::repetition(regex_syntax::hir::Repetition {
                min: *min,
                max: *max,
                greedy: true,
                sub: Box::new(re.to_hir()),
            }),
            Re::Look(Look::Start) => Hir::look(regex_syntax::hir::Look::Start),
            Re::Look(Look::End) => Hir::look(regex_syntax::hir::Look::End),
            Re::Automaton(a) => a
                .dfa()
                .to_re()
                .map_or_else(|_| Hir::fail(), |re| re.to_hir()),
        }
    }
}

impl Re {
    /// The same language as a grammar expression; counted repetitions stay grammar
    /// repetitions (see [`crate::json_text::encode_expr`]).
    pub(crate) fn to_expr(&self) -> constrain_engine::Expr {
        use constrain_engine::Expr;
        match self {
            Re::Concat(parts) => Expr::seq(parts.iter().map(Re::to_expr).collect()),
            Re::Alt(parts) => Expr::alt(parts.iter().map(Re::to_expr).collect()),
            Re::Repeat { re, min, max } if max.is_some_and(|m| m > 1) => {
                re.to_expr().repeat(*min, *max)
            }
            other => Expr::from_hir(other.to_hir()),
        }
    }
}

/// A `regex-syntax` Unicode class with the same members.
pub(crate) fn unicode_class(set: &CharSet) -> ClassUnicode {
    ClassUnicode::new(set.ranges().iter().filter_map(|&(a, b)| {
        Some(ClassUnicodeRange::new(
            char::from_u32(a)?,
            char::from_u32(b)?,
        ))
    }))
}

/// Alternatives already kept, for [`Re::alt`]'s deduplication.
#[derive(Default)]
struct Dedup {
    /// Positions in the kept list by hash, filled once the list outgrows a linear scan.
    by_hash: rustc_hash::FxHashMap<u64, Vec<usize>>,
}

/// Lists up to this long are scanned instead of hashed.
const LINEAR_DEDUP: usize = 16;

impl Dedup {
    /// Whether `candidate` is not in `kept` yet (`kept` being every earlier `true` answer).
    fn is_new(&mut self, kept: &[Re], candidate: &Re) -> bool {
        if kept.len() < LINEAR_DEDUP {
            return !kept.contains(candidate);
        }
        if self.by_hash.is_empty() {
            for (position, re) in kept.iter().enumerate() {
                self.by_hash.entry(hash_of(re)).or_default().push(position);
            }
        }
        let positions = self.by_hash.entry(hash_of(candidate)).or_default();
        if positions.iter().any(|&p| kept[p] == *candidate) {
            return false;
        }
        positions.push(kept.len());
        true
    }
}

fn hash_of(re: &Re) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut hasher = rustc_hash::FxHasher::default();
    re.hash(&mut hasher);
    hasher.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn constructors_simplify() {
        let r = Re::concat(vec![Re::literal("ab"), Re::empty(), Re::literal("c")]);
        assert_eq!(r, Re::literal("abc"));
        assert!(Re::concat(vec![Re::literal("a"), Re::nothing()]).is_nothing());
        let a = Re::alt(vec![Re::literal("a"), Re::literal("b"), Re::nothing()]);
        assert!(matches!(a, Re::Class(ref s) if s.ranges() == [(97, 98)]));
        assert_eq!(Re::repeat(Re::nothing(), 0, None), Re::empty());
        assert_eq!(Re::repeat(Re::literal("x"), 1, Some(1)), Re::literal("x"));
    }

    #[test]
    fn length_bounds() {
        let r = Re::concat(vec![
            Re::literal("ab"),
            Re::repeat(Re::any_char(), 1, Some(3)),
            Re::alt(vec![Re::literal("x"), Re::literal("yyy")]),
        ]);
        assert_eq!(r.length_bounds(), (4, Some(8)));
        assert_eq!(Re::any_string().length_bounds(), (0, None));
    }
}
