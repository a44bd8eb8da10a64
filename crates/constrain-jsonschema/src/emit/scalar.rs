//! Numbers and strings: each one terminal (a regular expression over bytes).

use std::cmp::Ordering;

use constrain_engine::{Expr, RegexGraph};
use regex_syntax::hir::{Class, Hir};

use super::Emitter;
use crate::document::Draft;
use crate::error::SchemaError;
use crate::ir::{NumberSet, StringSet};
use crate::json_text;
use crate::number::{compare, number_re, Bound, Decimal, Kind};
use crate::options::{Escapes, Numbers};
use crate::re::dfa::{self, Dfa};
use crate::re::{unicode_class, CharSet, Re};
use crate::strings::{string_language, string_re, StringLanguage};

/// Any JSON number, in the spellings `spelling` allows.
pub(crate) fn any_number(spelling: Numbers) -> Result<Expr, SchemaError> {
    match spelling {
        Numbers::Any => Ok(Expr::regex(
            r"-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?",
        )?),
        Numbers::Canonical => Ok(number_re(None, None, Kind::Number, spelling).to_expr()),
    }
}

/// Any JSON string, quotes included.
pub(crate) fn any_string(escapes: Escapes) -> Expr {
    quoted(json_text::encode(&Re::any_string(), escapes))
}

/// A JSON string whose text between the quotes is `body`.
pub(crate) fn quoted(body: Hir) -> Expr {
    Expr::from_hir(Hir::concat(vec![
        Hir::literal(*b"\""),
        body,
        Hir::literal(*b"\""),
    ]))
}

/// A JSON string whose decoded value is in `re`; the compile-time error (at `pointer`) when
/// the deadline passes while it is spelled.
pub(crate) fn string_of(re: &Re, escapes: Escapes, pointer: &str) -> Result<Expr, SchemaError> {
    if re.has_automaton() {
        // Spelled only as a graph (see `strings::string_language`); its expression is too
        // large, or it would have been one.
        return Err(SchemaError::TooComplex {
            pointer: crate::error::pointer_or_root(pointer),
            what: "string language spelled from an automaton".into(),
            limit: crate::re::dfa::MAX_RE_SIZE,
        });
    }
    let expr = json_text::quoted_expr(re, escapes);
    if let Err(late) = crate::deadline::check(pointer) {
        constrain_engine::free_in_background(expr);
        return Err(late);
    }
    Ok(expr)
}

/// Largest divisor (after scaling to an integer) `multipleOf` is compiled for.
const MAX_DIVISOR: u128 = 10_000;

/// The 64-bit signed range typed readers store integers in.
const I64_MIN: &str = "-9223372036854775808";
const I64_MAX: &str = "9223372036854775807";

/// `n` (a set of integers) cut to the 64-bit signed range, or `None` when no integer of `n`'s
/// range lies inside it (its bounds are then kept as they are: a schema that asks for larger
/// integers still gets them).
fn within_i64(n: &NumberSet) -> Option<NumberSet> {
    let bound = |text: &str| {
        Decimal::parse(text).map(|value| Bound {
            value,
            exclusive: false,
        })
    };
    let (min, max) = (bound(I64_MIN)?, bound(I64_MAX)?);
    let lo = match &n.lo {
        Some(lo) if compare(&lo.value, &min.value) != Ordering::Less => lo.clone(),
        _ => min,
    };
    let hi = match &n.hi {
        Some(hi) if compare(&hi.value, &max.value) != Ordering::Greater => hi.clone(),
        _ => max,
    };
    if number_re(Some(&lo), Some(&hi), Kind::Integer, Numbers::Any).is_nothing() {
        return None;
    }
    Some(NumberSet {
        lo: Some(lo),
        hi: Some(hi),
        ..n.clone()
    })
}

impl Emitter<'_, '_> {
    pub(crate) fn number(&mut self, n: &NumberSet) -> Result<Expr, SchemaError> {
        let rule = match self.numbers.get(n) {
            Some(&known) => known,
            None => {
                let warnings = self.ctx.warnings.len();
                // One rule, named wherever the set recurs: the grammar's lowering then
                // decides whether its uses share one lexeme.
                let rule = match self.number_uncached(n)? {
                    Expr::Alt(none) if none.is_empty() => None,
                    body => Some(self.fresh_rule("number", body)?),
                };
                // A set whose spelling dropped a keyword is spelled again where it recurs,
                // so that each place has its warning.
                if self.ctx.warnings.len() == warnings {
                    self.numbers.insert(n.clone(), rule);
                }
                rule
            }
        };
        Ok(rule.map_or_else(Expr::nothing, Expr::rule))
    }

    fn number_uncached(&mut self, n: &NumberSet) -> Result<Expr, SchemaError> {
        let spelling = self.ctx.options.numbers;
        if spelling == Numbers::Canonical && n.integer {
            // Within 64 bits where that leaves some multiple of every `multipleOf`; past
            // them otherwise, rather than nothing.
            if let Some(inside) = within_i64(n) {
                if let Some(expr) = self.number_spelled(&inside, true)? {
                    return Ok(expr);
                }
            }
        }
        Ok(self.number_spelled(n, false)?.unwrap_or_else(Expr::nothing))
    }

    /// The terminal of the numbers of `n`; `None` when it is empty and `or_none` asks so.
    fn number_spelled(
        &mut self,
        n: &NumberSet,
        or_none: bool,
    ) -> Result<Option<Expr>, SchemaError> {
        let spelling = self.ctx.options.numbers;
        // A canonical integer is an integer literal, also where `multipleOf` alone makes the
        // values integers.
        let integral = n.integer || n.multiple_of.iter().any(Decimal::is_integer);
        let kind = match (integral, n.integer, spelling, self.ctx.doc.draft) {
            (true, _, Numbers::Canonical, _) => Kind::PlainInteger,
            (_, false, _, _) => Kind::Number,
            (_, true, _, Draft::Draft4) => Kind::PlainInteger,
            (_, true, _, _) => Kind::Integer,
        };
        let mut re = number_re(n.lo.as_ref(), n.hi.as_ref(), kind, spelling);
        if n.fractional {
            re = self.restrict_number(re, fractional_re(), "type")?;
        }
        // Each divisor is a remainder automaton over the plain spellings, kept or flipped.
        let mut divisors = Vec::new();
        for (m, multiple, keyword) in (n.multiple_of.iter().map(|m| (m, true, "multipleOf")))
            .chain(n.not_multiple_of.iter().map(|m| (m, false, "not")))
        {
            match multiple_dfa(m) {
                Some(d) if multiple => divisors.push((d, keyword)),
                Some(d) => divisors.push((d.complement(), keyword)),
                None => self.unsupported(
                    keyword,
                    format!("multipleOf {m:?} needs a divisor above {MAX_DIVISOR}"),
                )?,
            }
        }
        if divisors.is_empty() {
            return Ok(Some(re.to_expr()));
        }
        if !n.not_multiple_of.is_empty() {
            // The automaton knows plain spellings only: `1e1` is not one, yet a multiple of 5.
            re = self.restrict_number(re, plain_number_re(), "not")?;
        }
        let mut automaton = match Dfa::from_re(&re) {
            Ok(d) => d.minimize(),
            Err(e) => {
                self.unsupported(divisors[0].1, format!("{e}"))?;
                return Ok(Some(re.to_expr()));
            }
        };
        for (d, keyword) in &divisors {
            match automaton.intersect(d) {
                Ok(both) => automaton = both.minimize(),
                Err(e) => self.unsupported(keyword, format!("{e}"))?,
            }
        }
        if or_none && automaton.is_empty() {
            return Ok(None);
        }
        // The expression of several remainders at once can be far larger than their
        // automaton: past the expression budget, the automaton itself is the terminal.
        match automaton.to_re() {
            Ok(r) => Ok(Some(r.to_expr())),
            Err(_) => Ok(Some(Expr::graph(number_graph(&automaton)?))),
        }
    }

    fn restrict_number(&mut self, re: Re, by: Re, keyword: &str) -> Result<Re, SchemaError> {
        match dfa::intersect_all(&[re.clone(), by]) {
            Ok(r) => Ok(r),
            Err(e) => {
                self.unsupported(keyword, format!("{e}"))?;
                Ok(re)
            }
        }
    }

    pub(crate) fn string(&mut self, s: &StringSet) -> Result<Expr, SchemaError> {
        let s = &crate::strings::capped(s);
        let re = match string_language(s) {
            Ok(StringLanguage::Exact(re) | StringLanguage::Subset(re)) => re,
            Ok(StringLanguage::Automaton {
                pattern,
                min_len,
                max_len,
            }) => {
                let graph = json_text::quoted_graph(&pattern, self.ctx.options.escapes)?;
                return Ok(Expr::graph(match max_len {
                    // An edge per character, and one per quote.
                    Some(max_len) => graph.with_edge_bounds(min_len + 2, max_len + 2)?,
                    None => graph,
                }));
            }
            Err(e) => {
                self.unsupported("pattern", format!("string constraints do not combine: {e}"))?;
                // Lenient: keep the patterns, drop the lengths; then drop the patterns.
                let loose = StringSet {
                    min_len: 0,
                    max_len: None,
                    langs: s.langs.clone(),
                };
                match string_re(&loose) {
                    Ok(re) => re,
                    Err(_) => Re::any_string(),
                }
            }
        };
        let spelled = string_of(&re, self.ctx.options.escapes, &self.pointer);
        if spelled.is_err() {
            constrain_engine::free_in_background(re);
        }
        spelled
    }

    /// The strings of any of `sets` (the string-only branches of an `anyOf`, or of a `oneOf`
    /// made disjoint) as one terminal, when each is exact without counted lengths and their
    /// union is no larger than they are together; `None` leaves them to a terminal each.
    ///
    /// Branches that may all start at one place are lexed side by side, and a lexer state
    /// of several terminals is harder to see through than one of a single automaton: no
    /// branch alone says how long their union survives (a string holding exactly one of
    /// five words survives nine letters, each branch alone four), so the mask walks reach
    /// deeper into the token trie.
    pub(crate) fn strings_union(
        &mut self,
        sets: &[&StringSet],
    ) -> Result<Option<Expr>, SchemaError> {
        let mut exact = Vec::with_capacity(sets.len());
        let mut automata = Vec::new();
        for set in sets {
            match string_language(&crate::strings::capped(set)) {
                Ok(StringLanguage::Exact(re)) => exact.push(re),
                Ok(StringLanguage::Automaton {
                    pattern,
                    min_len: 0,
                    max_len: None,
                }) => automata.push(pattern),
                _ => return Ok(None),
            }
        }
        if automata.is_empty() {
            // Expressions all: their alternation is the union as it stands.
            return string_of(&Re::alt(exact), self.ctx.options.escapes, &self.pointer).map(Some);
        }
        for re in &exact {
            match dfa::minimal_dfa(re) {
                Ok(d) => automata.push(d),
                Err(_) => return Ok(None),
            }
        }
        let states: usize = automata.iter().map(Dfa::state_count).sum();
        let mut union = automata[0].clone();
        for d in &automata[1..] {
            union = match union.union(d) {
                Ok(u) if u.state_count() <= states => u,
                _ => return Ok(None),
            };
        }
        let graph = json_text::quoted_graph(&union, self.ctx.options.escapes)?;
        Ok(Some(Expr::graph(graph)))
    }
}

/// The spellings `dfa` accepts (ASCII: the characters of numbers), as a graph of its states.
fn number_graph(dfa: &Dfa) -> Result<RegexGraph, SchemaError> {
    let mut labels = Vec::new();
    let states = json_text::automaton_states(dfa, 0, &mut labels, |class| {
        Hir::class(Class::Unicode(unicode_class(class)))
    });
    Ok(RegexGraph::new(labels, states)?)
}

/// Numbers in plain decimal notation: no exponent.
fn plain_number_re() -> Re {
    let digit = Re::class(CharSet::from_ranges([(u32::from(b'0'), u32::from(b'9'))]));
    Re::concat(vec![
        Re::literal("-").optional(),
        Re::repeat(digit.clone(), 1, None),
        Re::concat(vec![Re::literal("."), Re::repeat(digit, 1, None)]).optional(),
    ])
}

/// Plain numbers with a non-zero fractional part (and exponent forms are left out).
fn fractional_re() -> Re {
    let digit = Re::class(CharSet::from_ranges([(u32::from(b'0'), u32::from(b'9'))]));
    let nonzero = Re::class(CharSet::from_ranges([(u32::from(b'1'), u32::from(b'9'))]));
    Re::concat(vec![
        Re::literal("-").optional(),
        Re::repeat(digit.clone(), 1, None),
        Re::literal("."),
        Re::repeat(digit.clone(), 0, None),
        nonzero,
        Re::repeat(digit, 0, None),
    ])
}

/// The plain spellings (optional sign, integer part, optional fraction) of multiples of `m`.
///
/// With `m = a·10^-s` (a an integer), `x` is a multiple when the digits of `x·10^s` form an
/// integer divisible by `a`: a remainder automaton over the digits that also counts fraction
/// digits, beyond `s` of which only zeros may follow.
pub(crate) fn multiple_dfa(m: &Decimal) -> Option<Dfa> {
    let s = usize::try_from((-m.scale()).max(0)).ok()?;
    let a = m.abs().shift(s as i64).to_u128()?;
    if a == 0 || a > MAX_DIVISOR || s > 30 || (a as usize) * (s + 3) > 20_000 {
        return None;
    }
    let a = a as usize;
    // Phase 0: integer digits; phase 1: after the point, no digit yet; phase 1+k: k fraction
    // digits read (k ≤ s); phase s+2: more than s read (only zeros may follow).
    let phases = s + 3;
    let idx = |phase: usize, r: usize| 2 + phase * a + r;
    let n = 2 + phases * a;
    let mut trans: Vec<Vec<(u32, u32, u32)>> = vec![Vec::new(); n];
    let mut accepting = vec![false; n];
    let zero = u32::from(b'0');
    for start in [0usize, 1] {
        for d in 0..10u32 {
            trans[start].push((zero + d, zero + d, idx(0, d as usize % a) as u32));
        }
    }
    trans[0].insert(0, (u32::from(b'-'), u32::from(b'-'), 1));
    let pow10 = |k: usize| -> usize { (0..k).fold(1usize, |acc, _| acc * 10 % a) };
    for phase in 0..phases {
        for r in 0..a {
            let st = idx(phase, r);
            let mut out = Vec::new();
            if phase == 0 {
                out.push((u32::from(b'.'), u32::from(b'.'), idx(1, r) as u32));
            }
            if phase <= s {
                let next = if phase == 0 { 0 } else { phase + 1 };
                for d in 0..10u32 {
                    out.push((
                        zero + d,
                        zero + d,
                        idx(next, (r * 10 + d as usize) % a) as u32,
                    ));
                }
            } else {
                out.push((zero, zero, idx(s + 2, r) as u32));
            }
            out.sort_unstable();
            trans[st] = out;
            let frac_read = match phase {
                0 => 0,
                p if p <= s + 1 => p - 1,
                _ => s,
            };
            accepting[st] = phase != 1 && (r * pow10(s - frac_read)) % a == 0;
        }
    }
    Some(Dfa::from_parts(trans, accepting))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn multiples_by_digits() {
        let d = multiple_dfa(&Decimal::parse("3").expect("3")).expect("small");
        for (s, ok) in [
            ("0", true),
            ("3", true),
            ("12", true),
            ("13", false),
            ("-27", true),
            ("3.0", true),
            ("3.5", false),
            ("3.", false),
        ] {
            assert_eq!(d.matches(s), ok, "{s}");
        }
        let d = multiple_dfa(&Decimal::parse("0.25").expect("q")).expect("small");
        for (s, ok) in [
            ("0.25", true),
            ("0.5", true),
            ("1", true),
            ("1.75", true),
            ("1.7", false),
            ("0.250", true),
            ("0.2500001", false),
        ] {
            assert_eq!(d.matches(s), ok, "{s}");
        }
        let d = multiple_dfa(&Decimal::parse("0.01").expect("c")).expect("small");
        for (s, ok) in [
            ("1.23", true),
            ("1.234", false),
            ("1.230", true),
            ("5", true),
        ] {
            assert_eq!(d.matches(s), ok, "{s}");
        }
    }
}
