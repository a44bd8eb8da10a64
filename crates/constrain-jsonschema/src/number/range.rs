//! The JSON spellings of the numbers in a range, as a regular expression.
//!
//! Exact for plain decimal notation of any size: a bound's digits are compared position by
//! position (the classic digit-range construction, extended to fractions, where trailing zeros
//! do not change the value). Exponent notation is added where a range is decided by the sign
//! alone (no bounds, or bounds at zero); elsewhere it is left out, which keeps the grammar
//! sound. Under [`Numbers::Canonical`] zero has no sign and exponent notation is limited to
//! long numbers (see there).

use crate::options::Numbers;
use crate::re::{CharSet, Re};

use super::decimal::{compare, Decimal};

/// One end of a range.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) struct Bound {
    pub(crate) value: Decimal,
    pub(crate) exclusive: bool,
}

fn digit(lo: u8, hi: u8) -> Re {
    Re::class(CharSet::from_ranges([(
        u32::from(b'0' + lo),
        u32::from(b'0' + hi),
    )]))
}

fn digits(min: u32, max: Option<u32>) -> Re {
    Re::repeat(digit(0, 9), min, max)
}

/// Fraction digit strings (what follows the `.`), split into whether "no fraction" (the value
/// 0) is allowed and the allowed non-empty digit strings.
struct Frac {
    empty: bool,
    nonempty: Re,
}

impl Frac {
    fn nothing() -> Frac {
        Frac {
            empty: false,
            nonempty: Re::nothing(),
        }
    }

    /// `(\.F)?` as text.
    fn text(self) -> Re {
        let mut alts = Vec::new();
        if self.empty {
            alts.push(Re::empty());
        }
        alts.push(Re::concat(vec![Re::literal("."), self.nonempty]));
        Re::alt(alts)
    }

    /// The digit `d` followed by fractions of `self` (possibly none).
    fn after(self, d: u8) -> Re {
        let mut alts = Vec::new();
        if self.empty {
            alts.push(Re::empty());
        }
        alts.push(self.nonempty);
        Re::concat(vec![digit(d, d), Re::alt(alts)])
    }
}

/// Fraction digits `F` (as the value `0.F`) with `lo ≤ 0.F ≤ hi` (strict when flagged), where
/// bounds are digit strings without trailing zeros.
fn frac(lo: Option<(&[u8], bool)>, hi: Option<(&[u8], bool)>) -> Frac {
    let lo = match lo {
        Some((&[], false)) => None,
        other => other,
    };
    if let Some((b, strict)) = hi {
        if b.is_empty() {
            // F ≤ 0: only zeros, and only if the lower bound allows 0.
            if strict || lo.is_some() {
                return Frac::nothing();
            }
            return Frac {
                empty: true,
                nonempty: Re::repeat(digit(0, 0), 1, None),
            };
        }
    }
    match (lo, hi) {
        (None, None) => Frac {
            empty: true,
            nonempty: digits(1, None),
        },
        (Some((&[], true)), None) => Frac {
            empty: false,
            nonempty: Re::concat(vec![digits(0, None), digit(1, 9), digits(0, None)]),
        },
        _ => {
            let empty = lo.is_none() && hi.is_none_or(|(b, _)| !b.is_empty());
            let (a, a_rest) = match lo {
                Some((s, _)) if !s.is_empty() => (s[0], &s[1..]),
                Some(_) => (0, &[][..]),
                None => (0, &[][..]),
            };
            let (b, b_rest) = match hi {
                Some((s, _)) => (s[0], &s[1..]),
                None => (9, &[][..]),
            };
            let lo_rest = lo.map(|(_, strict)| (a_rest, strict));
            let hi_rest = hi.map(|(_, strict)| (b_rest, strict));
            let mut alts = Vec::new();
            if lo.is_some() && hi.is_some() && a == b {
                alts.push(frac(lo_rest, hi_rest).after(a));
            } else {
                let mut mid_lo = a;
                let mut mid_hi = b;
                if lo.is_some() {
                    alts.push(frac(lo_rest, None).after(a));
                    mid_lo = a + 1;
                }
                if hi.is_some() {
                    alts.push(frac(None, hi_rest).after(b));
                    mid_hi = b.wrapping_sub(1);
                }
                if hi.is_some() && b == 0 {
                    // no digit below 0
                } else if mid_lo <= mid_hi {
                    alts.push(Re::concat(vec![digit(mid_lo, mid_hi), digits(0, None)]));
                }
            }
            Frac {
                empty,
                nonempty: Re::alt(alts),
            }
        }
    }
}

/// Which numbers a range holds, and how integers may be spelled.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    /// Any number.
    Number,
    /// Integers, which may be written with a zero fraction (`1.0`), as the 2020-12 and
    /// draft 6/7 specifications count them.
    Integer,
    /// Integers written without a fraction (draft 4 counts `1.0` as not an integer).
    PlainInteger,
}

impl Kind {
    fn integer(self) -> bool {
        self != Kind::Number
    }
}

/// How the fraction of a number whose integer part is strictly inside the range may look.
fn any_frac(kind: Kind) -> Re {
    if kind == Kind::PlainInteger {
        return Re::empty();
    }
    if kind.integer() {
        Re::repeat(
            Re::concat(vec![Re::literal("."), Re::repeat(digit(0, 0), 1, None)]),
            0,
            Some(1),
        )
    } else {
        Re::repeat(
            Re::concat(vec![Re::literal("."), digits(1, None)]),
            0,
            Some(1),
        )
    }
}

/// A bound on a positive magnitude, split into integer digits and fraction digits.
struct Edge {
    int: Vec<u8>,
    frac: Vec<u8>,
    strict: bool,
}

impl Edge {
    fn new(value: &Decimal, strict: bool) -> Edge {
        let (int, frac) = value.plain_parts();
        Edge {
            int: int.bytes().map(|b| b - b'0').collect(),
            frac: frac.bytes().map(|b| b - b'0').collect(),
            strict,
        }
    }
}

/// The positive magnitudes `m` (plain notation, no sign) with `lo < m` or `lo ≤ m`, and
/// `m ≤ hi` / `m < hi` when `hi` is given. `lo` is at least zero.
fn magnitudes(lo: &Edge, hi: Option<&Edge>, kind: Kind) -> Re {
    let lo_len = lo.int.len();
    let mut alts = Vec::new();
    match hi {
        None => {
            alts.push(fixed_len(lo, None, lo_len, kind));
            alts.push(Re::concat(vec![
                digit(1, 9),
                digits(lo_len as u32, None),
                any_frac(kind),
            ]));
        }
        Some(hi) => {
            let hi_len = hi.int.len();
            if lo_len == hi_len {
                alts.push(fixed_len(lo, Some(hi), lo_len, kind));
            } else if lo_len < hi_len {
                alts.push(fixed_len(lo, None, lo_len, kind));
                if hi_len > lo_len + 1 {
                    alts.push(Re::concat(vec![
                        digit(1, 9),
                        digits(lo_len as u32, Some(hi_len as u32 - 2)),
                        any_frac(kind),
                    ]));
                }
                let floor = Edge {
                    int: low_edge(hi_len),
                    frac: Vec::new(),
                    strict: false,
                };
                alts.push(fixed_len(&floor, Some(hi), hi_len, kind));
            }
        }
    }
    Re::alt(alts)
}

/// The smallest `len`-digit integer part (`0` for one digit, `10…0` otherwise).
fn low_edge(len: usize) -> Vec<u8> {
    if len == 1 {
        vec![0]
    } else {
        let mut v = vec![0; len];
        v[0] = 1;
        v
    }
}

/// Magnitudes whose integer part has exactly `len` digits, between `lo` (its integer part has
/// `len` digits too) and `hi` (same length; `None`: all nines and no fraction bound).
fn fixed_len(lo: &Edge, hi: Option<&Edge>, len: usize, kind: Kind) -> Re {
    digits_between(lo, hi, 0, true, hi.is_some(), len, kind)
}

fn digits_between(
    lo: &Edge,
    hi: Option<&Edge>,
    i: usize,
    tight_lo: bool,
    tight_hi: bool,
    len: usize,
    kind: Kind,
) -> Re {
    if i == len {
        if kind.integer() {
            // Integer bounds are integral and inclusive: the fraction may only be zeros.
            return any_frac(kind);
        }
        let l = tight_lo.then_some((&lo.frac[..], lo.strict));
        let h = match (tight_hi, hi) {
            (true, Some(h)) => Some((&h.frac[..], h.strict)),
            _ => None,
        };
        return frac(l, h).text();
    }
    let lo_d = if tight_lo {
        lo.int[i]
    } else if i == 0 && len > 1 {
        1
    } else {
        0
    };
    let hi_d = match (tight_hi, hi) {
        (true, Some(h)) => h.int[i],
        _ => 9,
    };
    if lo_d > hi_d {
        return Re::nothing();
    }
    let rest = (len - i - 1) as u32;
    let free =
        |a: u8, b: u8| Re::concat(vec![digit(a, b), digits(rest, Some(rest)), any_frac(kind)]);
    if !tight_lo && !tight_hi {
        return free(lo_d, hi_d);
    }
    if tight_lo && tight_hi && lo_d == hi_d {
        return Re::concat(vec![
            digit(lo_d, lo_d),
            digits_between(lo, hi, i + 1, true, true, len, kind),
        ]);
    }
    let mut alts = Vec::new();
    let mut mid_lo = lo_d;
    let mut mid_hi = hi_d;
    if tight_lo {
        alts.push(Re::concat(vec![
            digit(lo_d, lo_d),
            digits_between(lo, hi, i + 1, true, false, len, kind),
        ]));
        mid_lo = lo_d + 1;
    }
    if tight_hi {
        alts.push(Re::concat(vec![
            digit(hi_d, hi_d),
            digits_between(lo, hi, i + 1, false, true, len, kind),
        ]));
        if hi_d == 0 {
            return Re::alt(alts);
        }
        mid_hi = hi_d - 1;
    }
    if mid_lo <= mid_hi {
        alts.push(free(mid_lo, mid_hi));
    }
    Re::alt(alts)
}

/// The spellings of the numbers of `kind` between the bounds that `spelling` allows.
pub(crate) fn number_re(
    lo: Option<&Bound>,
    hi: Option<&Bound>,
    kind: Kind,
    spelling: Numbers,
) -> Re {
    let integer = kind.integer();
    // Integer bounds become inclusive integers.
    let (lo, hi) = if integer {
        let lo = lo.map(|b| {
            let v = if b.exclusive {
                b.value.floor().succ()
            } else {
                b.value.ceil()
            };
            Bound {
                value: v,
                exclusive: false,
            }
        });
        let hi = hi.map(|b| {
            let v = if b.exclusive {
                b.value.ceil().pred()
            } else {
                b.value.floor()
            };
            Bound {
                value: v,
                exclusive: false,
            }
        });
        (lo, hi)
    } else {
        (lo.cloned(), hi.cloned())
    };
    if let (Some(l), Some(h)) = (&lo, &hi) {
        match compare(&l.value, &h.value) {
            std::cmp::Ordering::Greater => return Re::nothing(),
            std::cmp::Ordering::Equal if l.exclusive || h.exclusive => return Re::nothing(),
            _ => {}
        }
    }
    let zero = Decimal::zero();
    let admits = |v: &Decimal| {
        lo.as_ref().is_none_or(|l| match compare(v, &l.value) {
            std::cmp::Ordering::Greater => true,
            std::cmp::Ordering::Equal => !l.exclusive,
            std::cmp::Ordering::Less => false,
        }) && hi.as_ref().is_none_or(|h| match compare(v, &h.value) {
            std::cmp::Ordering::Less => true,
            std::cmp::Ordering::Equal => !h.exclusive,
            std::cmp::Ordering::Greater => false,
        })
    };
    let mut alts = Vec::new();
    // Zero, with a sign unless canonical (`-0.0` reads as a negative float).
    if admits(&zero) {
        let zero_kind = if kind == Kind::Number {
            Kind::Integer
        } else {
            kind
        };
        let sign = match spelling {
            Numbers::Any => Re::literal("-").optional(),
            Numbers::Canonical => Re::empty(),
        };
        alts.push(Re::concat(vec![
            sign,
            Re::literal("0"),
            any_frac(zero_kind),
        ]));
    }
    // Positive numbers: magnitudes above max(lo, 0).
    let positive_possible = hi
        .as_ref()
        .is_none_or(|h| !h.value.is_negative() && !h.value.is_zero());
    if positive_possible {
        let lo_edge = match &lo {
            Some(l) if !l.value.is_negative() && !l.value.is_zero() => {
                Edge::new(&l.value, l.exclusive)
            }
            _ => Edge {
                int: vec![0],
                frac: Vec::new(),
                strict: true,
            },
        };
        let hi_edge = hi.as_ref().map(|h| Edge::new(&h.value, h.exclusive));
        let lo_edge = if integer && lo_edge.strict && lo_edge.int == [0] && lo_edge.frac.is_empty()
        {
            Edge {
                int: vec![1],
                frac: Vec::new(),
                strict: false,
            }
        } else {
            lo_edge
        };
        alts.push(magnitudes(&lo_edge, hi_edge.as_ref(), kind));
    }
    // Negative numbers: -m with m between max(-hi, 0) and -lo.
    let negative_possible = lo.as_ref().is_none_or(|l| l.value.is_negative());
    if negative_possible {
        let lo_edge = match &hi {
            Some(h) if h.value.is_negative() => Edge::new(&h.value.abs(), h.exclusive),
            _ => Edge {
                int: vec![0],
                frac: Vec::new(),
                strict: true,
            },
        };
        let lo_edge = if integer && lo_edge.strict && lo_edge.int == [0] && lo_edge.frac.is_empty()
        {
            Edge {
                int: vec![1],
                frac: Vec::new(),
                strict: false,
            }
        } else {
            lo_edge
        };
        let hi_edge = lo.as_ref().map(|l| Edge::new(&l.value.abs(), l.exclusive));
        alts.push(Re::concat(vec![
            Re::literal("-"),
            magnitudes(&lo_edge, hi_edge.as_ref(), kind),
        ]));
    }
    if !integer {
        alts.push(match spelling {
            Numbers::Any => exponent_forms(lo.as_ref(), hi.as_ref()),
            Numbers::Canonical => long_exponent_forms(lo.as_ref(), hi.as_ref()),
        });
    }
    Re::alt(alts)
}

/// Whether the bounds leave the range decided by the sign alone, where exponent notation is
/// exact without comparing magnitudes.
fn decided_by_sign(lo: Option<&Bound>, hi: Option<&Bound>) -> bool {
    let at_zero = |b: Option<&Bound>| b.is_none_or(|b| b.value.is_zero());
    at_zero(lo) && at_zero(hi)
}

/// Exponent notation as JavaScript's `JSON.stringify` writes it, for numbers of magnitude at
/// least `1e21` or below `1e-6` (plain digits spell the others, and spell these too): a
/// non-zero digit, a fraction not ending in 0, `e`, and an exponent of at least 21 (optionally
/// with `+`) or at most -7, without leading zeros. Zero is never written so.
fn long_exponent_forms(lo: Option<&Bound>, hi: Option<&Bound>) -> Re {
    if !decided_by_sign(lo, hi) {
        return Re::nothing();
    }
    let mantissa = Re::concat(vec![
        digit(1, 9),
        Re::concat(vec![Re::literal("."), digits(0, None), digit(1, 9)]).optional(),
    ]);
    // 21..=99 and every exponent of three digits or more.
    let large = Re::alt(vec![
        Re::concat(vec![digit(2, 2), digit(1, 9)]),
        Re::concat(vec![digit(3, 9), digit(0, 9)]),
        Re::concat(vec![digit(1, 9), digits(2, None)]),
    ]);
    // 7..=9 and every exponent of two digits or more.
    let small = Re::alt(vec![
        digit(7, 9),
        Re::concat(vec![digit(1, 9), digits(1, None)]),
    ]);
    let exp = Re::concat(vec![
        Re::literal("e"),
        Re::alt(vec![
            Re::concat(vec![Re::literal("+").optional(), large]),
            Re::concat(vec![Re::literal("-"), small]),
        ]),
    ]);
    let mut alts = Vec::new();
    // Bounds are at zero or absent: positives need no upper bound, negatives no lower one.
    if hi.is_none() {
        alts.push(mantissa.clone());
    }
    if lo.is_none() {
        alts.push(Re::concat(vec![Re::literal("-"), mantissa]));
    }
    Re::concat(vec![Re::alt(alts), exp])
}

/// Exponent notation, where the range is decided by the sign alone.
fn exponent_forms(lo: Option<&Bound>, hi: Option<&Bound>) -> Re {
    if !decided_by_sign(lo, hi) {
        return Re::nothing();
    }
    let exp = Re::concat(vec![
        Re::class(CharSet::from_ranges([
            (u32::from(b'e'), u32::from(b'e')),
            (u32::from(b'E'), u32::from(b'E')),
        ])),
        Re::class(CharSet::from_ranges([
            (u32::from(b'+'), u32::from(b'+')),
            (u32::from(b'-'), u32::from(b'-')),
        ]))
        .optional(),
        digits(1, None),
    ]);
    let nonzero = Re::alt(vec![
        Re::concat(vec![digit(1, 9), digits(0, None), any_frac(Kind::Number)]),
        Re::concat(vec![
            Re::literal("0."),
            digits(0, None),
            digit(1, 9),
            digits(0, None),
        ]),
    ]);
    let zero = Re::concat(vec![Re::literal("0"), any_frac(Kind::Integer)]);
    let mut alts = Vec::new();
    let lo_ok = |v: i32| lo.is_none_or(|b| v > 0 || (v == 0 && !b.exclusive));
    let hi_ok = |v: i32| hi.is_none_or(|b| v < 0 || (v == 0 && !b.exclusive));
    if lo_ok(0) && hi_ok(0) {
        alts.push(Re::concat(vec![Re::literal("-").optional(), zero]));
    }
    if lo_ok(1) && hi.is_none() {
        alts.push(nonzero.clone());
    }
    if hi_ok(-1) && lo.is_none() {
        alts.push(Re::concat(vec![Re::literal("-"), nonzero]));
    }
    Re::concat(vec![Re::alt(alts), exp])
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cmp::Ordering;

    fn matcher(re: &Re) -> regex_automata::meta::Regex {
        let hir = regex_syntax::hir::Hir::concat(vec![
            regex_syntax::hir::Hir::look(regex_syntax::hir::Look::Start),
            re.to_hir(),
            regex_syntax::hir::Hir::look(regex_syntax::hir::Look::End),
        ]);
        regex_automata::meta::Regex::builder()
            .build_from_hir(&hir)
            .expect("builds")
    }

    fn samples() -> Vec<String> {
        let mut out = Vec::new();
        let ints = [
            "0", "1", "2", "5", "9", "10", "11", "19", "20", "99", "100", "101", "123", "999",
            "1000", "12345",
        ];
        let fracs = [
            "", ".0", ".00", ".5", ".50", ".05", ".25", ".1", ".01", ".001", ".9", ".99", ".999",
            ".4999", ".5001", ".75",
        ];
        for sign in ["", "-"] {
            for i in ints {
                for f in fracs {
                    out.push(format!("{sign}{i}{f}"));
                }
            }
        }
        for e in ["1e2", "1E-2", "-2.5e+3", "0e5", "-0.0e1", "0.001e3"] {
            out.push(e.to_string());
        }
        out
    }

    fn check(lo: Option<(&str, bool)>, hi: Option<(&str, bool)>, integer: bool) {
        let lo = lo.map(|(v, e)| Bound {
            value: Decimal::parse(v).expect("lo"),
            exclusive: e,
        });
        let hi = hi.map(|(v, e)| Bound {
            value: Decimal::parse(v).expect("hi"),
            exclusive: e,
        });
        let re = number_re(
            lo.as_ref(),
            hi.as_ref(),
            if integer { Kind::Integer } else { Kind::Number },
            Numbers::Any,
        );
        let m = matcher(&re);
        for s in samples() {
            let v = Decimal::parse(&s).expect("sample");
            let in_range = lo.as_ref().is_none_or(|l| match compare(&v, &l.value) {
                Ordering::Greater => true,
                Ordering::Equal => !l.exclusive,
                Ordering::Less => false,
            }) && hi.as_ref().is_none_or(|h| match compare(&v, &h.value) {
                Ordering::Less => true,
                Ordering::Equal => !h.exclusive,
                Ordering::Greater => false,
            }) && (!integer || v.is_integer());
            let accepted = m.is_match(&s);
            if s.contains(['e', 'E']) {
                assert!(!accepted || in_range, "{s} accepted outside {lo:?}..{hi:?}");
                if integer {
                    assert!(!accepted, "{s}");
                }
            } else {
                assert_eq!(
                    accepted, in_range,
                    "{s} for {lo:?}..{hi:?} integer={integer}"
                );
            }
        }
    }

    #[test]
    fn ranges_match_by_value() {
        let bounds: [Option<(&str, bool)>; 12] = [
            None,
            Some(("0", false)),
            Some(("0", true)),
            Some(("1", false)),
            Some(("10", true)),
            Some(("0.5", false)),
            Some(("0.5", true)),
            Some(("-1", false)),
            Some(("-10.25", true)),
            Some(("99.99", false)),
            Some(("100", false)),
            Some(("1e3", true)),
        ];
        for lo in bounds {
            for hi in bounds {
                for integer in [false, true] {
                    check(lo, hi, integer);
                }
            }
        }
    }

    #[test]
    fn exponents_only_at_zero_bounds() {
        let m = matcher(&number_re(
            Some(&Bound {
                value: Decimal::zero(),
                exclusive: false,
            }),
            None,
            Kind::Number,
            Numbers::Any,
        ));
        assert!(m.is_match("1e5") && m.is_match("0E-3") && !m.is_match("-1e2"));
        let m = matcher(&number_re(None, None, Kind::Number, Numbers::Any));
        assert!(m.is_match("-1.5E+10"));
        let m = matcher(&number_re(None, None, Kind::PlainInteger, Numbers::Any));
        assert!(m.is_match("12") && !m.is_match("12.0") && m.is_match("-0"));
        let m = matcher(&number_re(None, None, Kind::Integer, Numbers::Any));
        assert!(
            m.is_match("-12") && m.is_match("3.000") && !m.is_match("1e2") && !m.is_match("01")
        );
    }
}
