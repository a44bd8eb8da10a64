//! Structural identity of regular expressions (`Hir` has no `Hash`): equal pieces of a grammar
//! (members of different objects ending in the same value) are found by a fingerprint and
//! compared exactly, so they share one terminal and one NFA.

use regex_syntax::hir::{Hir, HirKind};

/// A hash of the structure of `hir` (which has no `Hash` of its own), computed iteratively.
pub(crate) fn fingerprint(hir: &Hir) -> u64 {
    use regex_syntax::hir::{Class, HirKind};
    use std::hash::{Hash, Hasher};
    let mut hasher = rustc_hash::FxHasher::default();
    let mut stack = vec![hir];
    while let Some(h) = stack.pop() {
        std::mem::discriminant(h.kind()).hash(&mut hasher);
        match h.kind() {
            HirKind::Empty => {}
            HirKind::Literal(lit) => lit.0.hash(&mut hasher),
            HirKind::Class(Class::Unicode(class)) => {
                for r in class.ranges() {
                    (r.start(), r.end()).hash(&mut hasher);
                }
            }
            HirKind::Class(Class::Bytes(class)) => {
                for r in class.ranges() {
                    (r.start(), r.end()).hash(&mut hasher);
                }
            }
            HirKind::Look(look) => look.as_repr().hash(&mut hasher),
            HirKind::Repetition(rep) => {
                (rep.min, rep.max, rep.greedy).hash(&mut hasher);
                stack.push(&rep.sub);
            }
            HirKind::Capture(cap) => stack.push(&cap.sub),
            HirKind::Concat(parts) | HirKind::Alternation(parts) => {
                parts.len().hash(&mut hasher);
                stack.extend(parts.iter());
            }
        }
    }
    hasher.finish()
}

/// Whether `a` and `b` have the same structure: `Hir`'s own `==` recurses as deep as the
/// expression, this walks an explicit stack.
pub(crate) fn same_hir(a: &Hir, b: &Hir) -> bool {
    let mut pairs = vec![(a, b)];
    while let Some((a, b)) = pairs.pop() {
        match (a.kind(), b.kind()) {
            (HirKind::Empty, HirKind::Empty) => {}
            (HirKind::Literal(x), HirKind::Literal(y)) if x == y => {}
            (HirKind::Class(x), HirKind::Class(y)) if x == y => {}
            (HirKind::Look(x), HirKind::Look(y)) if x == y => {}
            (HirKind::Repetition(x), HirKind::Repetition(y))
                if (x.min, x.max, x.greedy) == (y.min, y.max, y.greedy) =>
            {
                pairs.push((&x.sub, &y.sub));
            }
            (HirKind::Capture(x), HirKind::Capture(y))
                if (x.index, &x.name) == (y.index, &y.name) =>
            {
                pairs.push((&x.sub, &y.sub));
            }
            (HirKind::Concat(xs), HirKind::Concat(ys))
            | (HirKind::Alternation(xs), HirKind::Alternation(ys))
                if xs.len() == ys.len() =>
            {
                pairs.extend(xs.iter().zip(ys.iter()));
            }
            _ => return false,
        }
    }
    true
}
