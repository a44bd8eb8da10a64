//! The size of a regular expression in rough NFA states: what decides whether it is inlined
//! into one terminal, and what a graph's labels cost. A leaf, so that the grammar's types
//! ([`Expr`](super::Expr), [`RegexGraph`](super::RegexGraph)) and the lowering can all ask it.

use regex_syntax::hir::{Class, Hir, HirKind};

/// The size of `hir` in rough NFA states: one per node or literal byte, a Unicode class one per
/// UTF-8 range it compiles to (about four per code point range), a counted repetition its body
/// once per copy; counted up to `cap` only (a larger size is `cap + 1`). Each node counts once
/// per copy its enclosing repetitions make, so the count runs top-down over an explicit stack
/// and stops as soon as it passes `cap`.
pub(crate) fn hir_size(hir: &Hir, cap: usize) -> usize {
    let over = cap.saturating_add(1);
    let mut total = 0usize;
    // (node, copies its enclosing repetitions make)
    let mut stack: Vec<(&Hir, usize)> = vec![(hir, 1)];
    while let Some((h, copies)) = stack.pop() {
        let own = match h.kind() {
            HirKind::Class(Class::Unicode(class)) => 1 + 4 * class.ranges().len(),
            HirKind::Literal(lit) => lit.0.len().max(1),
            _ => 1,
        };
        total = total.saturating_add(own.saturating_mul(copies));
        if total > cap {
            return over;
        }
        match h.kind() {
            HirKind::Concat(hs) | HirKind::Alternation(hs) => {
                stack.extend(hs.iter().map(|c| (c, copies)));
            }
            HirKind::Repetition(rep) => {
                let times = rep.max.unwrap_or(rep.min).max(1) as usize;
                stack.push((&rep.sub, copies.saturating_mul(times)));
            }
            HirKind::Capture(cap) => stack.push((&cap.sub, copies)),
            _ => {}
        }
    }
    total
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(pattern: &str) -> Hir {
        regex_syntax::ParserBuilder::new()
            .utf8(false)
            .build()
            .parse(pattern)
            .expect("valid pattern")
    }

    #[test]
    fn sizes_count_every_copy_and_stop_past_the_cap() {
        // A concatenation of "ab" (2) and a class (1 + 4 per range): 1 + 2 + 5.
        assert_eq!(hir_size(&parse("ab[c-d]"), 1000), 8);
        // Three copies of a 2-byte literal inside two copies: 1 + 2 × (1 + 3 × 2).
        assert_eq!(hir_size(&parse("(?:(?:xy){3}){2}"), 1000), 15);
        assert_eq!(
            hir_size(&parse("(?:(?:xy){3}){2}"), 14),
            15,
            "one over the cap"
        );
        assert_eq!(hir_size(&parse("(?:x{1000}){1000}"), 100), 101);
    }
}
