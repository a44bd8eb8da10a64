//! Length bounds (`minLength`/`maxLength`) folded into a regular expression by its structure,
//! which keeps counted repetitions counted (`[a-z]+` within 1..=64 is `[a-z]{1,64}`) instead of
//! unrolling an automaton.

use super::Re;

/// The strings of `re` whose length in characters is within `min..=max`, if the structure of
/// `re` allows computing it directly; `None` when it needs an automaton.
pub(crate) fn restrict_length(re: &Re, min: u64, max: Option<u64>) -> Option<Re> {
    let (lo, hi) = re.length_bounds();
    if hi.is_some_and(|hi| hi < min) || max.is_some_and(|max| lo > max) {
        return Some(Re::nothing());
    }
    if lo >= min && within(hi, max) {
        return Some(re.clone());
    }
    match re {
        Re::Alt(parts) => Some(Re::alt(
            parts
                .iter()
                .map(|p| restrict_length(p, min, max))
                .collect::<Option<Vec<_>>>()?,
        )),
        Re::Concat(parts) => {
            let mut variable = None;
            let mut fixed = 0u64;
            for (i, p) in parts.iter().enumerate() {
                let (a, b) = p.length_bounds();
                if Some(a) == b {
                    fixed += a;
                } else if variable.is_some() {
                    return None;
                } else {
                    variable = Some(i);
                }
            }
            let i = variable?;
            let inner_max = match max {
                None => None,
                Some(m) => match m.checked_sub(fixed) {
                    Some(r) => Some(r),
                    None => return Some(Re::nothing()),
                },
            };
            let inner = restrict_length(&parts[i], min.saturating_sub(fixed), inner_max)?;
            let mut v = parts.clone();
            v[i] = inner;
            Some(Re::concat(v))
        }
        Re::Repeat {
            re: inner,
            min: rmin,
            max: rmax,
        } => {
            let (a, b) = inner.length_bounds();
            if Some(a) == b && a > 0 {
                let lo_n = min.div_ceil(a).max(u64::from(*rmin));
                let hi_n = match (max.map(|m| m / a), rmax.map(u64::from)) {
                    (Some(x), Some(y)) => Some(x.min(y)),
                    (x, y) => x.or(y),
                };
                let lo_n = u32::try_from(lo_n).ok()?;
                let hi_n = hi_n.map(|h| u32::try_from(h).unwrap_or(u32::MAX));
                return Some(Re::repeat((**inner).clone(), lo_n, hi_n));
            }
            if *rmax == Some(1) {
                let mut alts = Vec::new();
                if *rmin == 0 && min == 0 {
                    alts.push(Re::empty());
                }
                alts.push(restrict_length(inner, min, max)?);
                return Some(Re::alt(alts));
            }
            None
        }
        Re::Class(_) | Re::Literal(_) | Re::Look(_) | Re::Automaton(_) => None,
    }
}

/// A subset of the strings of `re` with length within `min..=max`: used when the exact
/// intersection is too large. Each part of a concatenation gets a share of the length budget,
/// each repetition a count and a length per item, so every string produced fits both `re` and
/// the bounds; strings that would need a different split of the budget are left out.
pub(crate) fn narrow_length(re: &Re, min: u64, max: u64) -> Re {
    if re.size() <= RICH_NARROWING_SIZE {
        let rich = narrow(re, min, max, RICH_LEVELS);
        if rich.size() <= MAX_RICH_SIZE {
            return rich;
        }
    }
    narrow(re, min, max, 0)
}

/// Largest expression narrowed with unions of splits (see [`narrow`]).
const RICH_NARROWING_SIZE: usize = 400;
/// Nesting levels of an expression that get unions of splits.
const RICH_LEVELS: u32 = 3;
/// Largest narrowed expression kept from the unions of splits; past it, single splits.
const MAX_RICH_SIZE: usize = 20_000;

/// [`narrow_length`], with unions of several splits in the outermost `rich` levels (every
/// split of the length budget leaves strings out; a union of a few leaves out fewer, at a
/// multiple of the size).
fn narrow(re: &Re, min: u64, max: u64, rich: u32) -> Re {
    if crate::deadline::expired().is_some() {
        // Cut short: `compile` refuses whatever is finished after its deadline.
        return Re::nothing();
    }
    let inner_rich = rich.saturating_sub(1);
    let (lo, hi) = re.length_bounds();
    if hi.is_some_and(|hi| hi < min) || lo > max {
        return Re::nothing();
    }
    if lo >= min && hi.is_some_and(|hi| hi <= max) {
        return re.clone();
    }
    match re {
        Re::Alt(parts) => Re::alt(parts.iter().map(|p| narrow(p, min, max, rich)).collect()),
        Re::Concat(parts) => {
            let bounds: Vec<(u64, Option<u64>)> = parts.iter().map(Re::length_bounds).collect();
            let base: u64 = bounds.iter().map(|b| b.0).sum();
            if base > max {
                return Re::nothing();
            }
            // Upper shares: the budget above the minimum lengths, split evenly among the parts
            // that can grow, leftovers handed on.
            let mut his: Vec<u64> = bounds.iter().map(|b| b.0).collect();
            let mut budget = max - base;
            let mut growable: Vec<usize> = (0..parts.len())
                .filter(|&i| bounds[i].1 != Some(bounds[i].0))
                .collect();
            while budget > 0 && !growable.is_empty() {
                let share = (budget / growable.len() as u64).max(1);
                let mut still = Vec::new();
                for &i in &growable {
                    if budget == 0 {
                        break;
                    }
                    let room = bounds[i].1.map_or(u64::MAX, |h| h - his[i]);
                    let give = share.min(room).min(budget);
                    his[i] += give;
                    budget -= give;
                    if bounds[i].1.is_none_or(|h| his[i] < h) {
                        still.push(i);
                    }
                }
                growable = still;
            }
            // With few parts that can grow, also each of them taking the whole budget (the
            // others at their minimum): the even split alone would cap a word at half the room.
            let mins: Vec<u64> = bounds.iter().map(|b| b.0).collect();
            let growable: Vec<usize> = (0..parts.len())
                .filter(|&i| bounds[i].1 != Some(bounds[i].0))
                .collect();
            let mut uppers = vec![his];
            if rich > 0 && (2..=MAX_HEAVY_PARTS).contains(&growable.len()) {
                for &i in &growable {
                    let mut heavy = mins.clone();
                    heavy[i] = bounds[i].1.unwrap_or(u64::MAX).min(mins[i] + (max - base));
                    uppers.push(heavy);
                }
            }
            // Lower shares: every way of spreading the deficit below `min` over the parts (a
            // union, so no split is favoured), or the parts in order when there are too many ways.
            let deficit = min.saturating_sub(base);
            let mut alternatives = Vec::new();
            for his in &uppers {
                let mut splits = Vec::new();
                spread(deficit, &mins, his, 0, &mut mins.clone(), &mut splits);
                alternatives.extend(splits.iter().map(|los| {
                    Re::concat(
                        parts
                            .iter()
                            .enumerate()
                            .map(|(i, p)| narrow(p, los[i], his[i], inner_rich))
                            .collect(),
                    )
                }));
            }
            if alternatives.is_empty() {
                return Re::nothing();
            }
            Re::alt(alternatives)
        }
        Re::Repeat {
            re: inner,
            min: rmin,
            max: rmax,
        } => {
            let (p, q) = inner.length_bounds();
            if Some(p) == q {
                return restrict_length(re, min, Some(max)).unwrap_or_else(Re::nothing);
            }
            let per = p.max(1);
            let most = (max / per).min(rmax.map_or(u64::MAX, u64::from));
            if most == 0 {
                return if *rmin == 0 && min == 0 {
                    Re::empty()
                } else {
                    Re::nothing()
                };
            }
            // Item counts from the most down to one, halving: few long items or many short
            // ones. Each split alone fits the bounds, so their union does too, and it keeps
            // far more strings than any single split ("Benefit 1" under a budget of 60 for
            // `(\S+\s+){0,9}` needs an item of 8 characters, not 60 / 9).
            let mut counts = vec![most];
            if rich > 0 {
                while let Some(&c) = counts.last().filter(|&&c| c > 1) {
                    counts.push(c / 2);
                }
            } else {
                // One split: a balanced one, about √max items of about √max characters.
                let balanced = ((max as f64).sqrt().ceil() as u64).max(1);
                if most > balanced && p <= balanced {
                    counts = vec![balanced.max(u64::from(*rmin))];
                }
            }
            let to32 = |v: u64| u32::try_from(v).unwrap_or(u32::MAX);
            let splits = counts.into_iter().filter_map(|count| {
                let item_hi = max / count;
                let count_lo = u64::from(*rmin).max(min.div_ceil(item_hi));
                if item_hi < p || count_lo > count {
                    return None;
                }
                let item_lo = if count_lo == 0 || count_lo * p >= min {
                    p
                } else {
                    min.div_ceil(count_lo)
                };
                (item_lo <= item_hi).then(|| {
                    let item = narrow(inner, item_lo, item_hi, inner_rich);
                    Re::repeat(item, to32(count_lo), Some(to32(count)))
                })
            });
            Re::alt(splits.collect())
        }
        Re::Class(_) | Re::Literal(_) | Re::Look(_) | Re::Automaton(_) => Re::nothing(),
    }
}

/// Most parts of a concatenation that can grow for [`narrow_length`] to also try giving each
/// of them the whole budget.
const MAX_HEAVY_PARTS: usize = 3;

/// Most alternatives [`narrow_length`] builds to spread a length deficit over parts.
const MAX_SPREADS: usize = 32;

/// Collects into `out` the lower bounds (starting from `los`) that add `deficit` over the
/// parts from `i` on, each part staying within `his`; past [`MAX_SPREADS`] ways, only the
/// first-come assignment.
fn spread(
    deficit: u64,
    mins: &[u64],
    his: &[u64],
    i: usize,
    los: &mut Vec<u64>,
    out: &mut Vec<Vec<u64>>,
) {
    if deficit == 0 {
        out.push(los.clone());
        return;
    }
    if i == los.len() {
        return;
    }
    if out.len() >= MAX_SPREADS {
        // Greedy: the remaining parts in order.
        let mut greedy = los.clone();
        let mut left = deficit;
        for j in i..greedy.len() {
            let take = left.min(his[j] - greedy[j]);
            greedy[j] += take;
            left -= take;
        }
        if left == 0 && !out.contains(&greedy) {
            out.push(greedy);
        }
        return;
    }
    let room = his[i] - mins[i];
    for extra in (0..=room.min(deficit)).rev() {
        los[i] = mins[i] + extra;
        spread(deficit - extra, mins, his, i + 1, los, out);
        if out.len() > MAX_SPREADS {
            break;
        }
    }
    los[i] = mins[i];
}

fn within(hi: Option<u64>, max: Option<u64>) -> bool {
    match (hi, max) {
        (_, None) => true,
        (Some(h), Some(m)) => h <= m,
        (None, Some(_)) => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::re::CharSet;

    fn class() -> Re {
        Re::class(CharSet::from_ranges([(u32::from(b'a'), u32::from(b'z'))]))
    }

    #[test]
    fn star_becomes_counted() {
        let r = restrict_length(&Re::repeat(class(), 1, None), 3, Some(64)).expect("structural");
        assert_eq!(r, Re::repeat(class(), 3, Some(64)));
    }

    #[test]
    fn fixed_parts_shift_the_bounds() {
        let re = Re::concat(vec![
            Re::literal("id-"),
            Re::repeat(class(), 0, None),
            Re::literal("!"),
        ]);
        let r = restrict_length(&re, 0, Some(10)).expect("structural");
        assert_eq!(
            r,
            Re::concat(vec![
                Re::literal("id-"),
                Re::repeat(class(), 0, Some(6)),
                Re::literal("!")
            ])
        );
        assert!(restrict_length(&re, 0, Some(3))
            .expect("structural")
            .is_nothing());
    }

    #[test]
    fn narrowing_keeps_a_subset_within_bounds() {
        use crate::re::dfa::Dfa;
        let label = Re::repeat(class(), 1, None);
        let email = Re::concat(vec![
            label.clone(),
            Re::repeat(Re::concat(vec![Re::literal("."), label.clone()]), 0, None),
            Re::literal("@"),
            label,
        ]);
        let narrowed = narrow_length(&email, 3, 20);
        let (lo, hi) = narrowed.length_bounds();
        assert!(lo >= 3 && hi.is_some_and(|h| h <= 20), "{lo} {hi:?}");
        let d = Dfa::from_re(&narrowed).expect("small");
        assert!(d.matches("ab@cd") && d.matches("a.b@c"));
        assert!(!d.matches("a@") && !d.matches("abcdefghijklmnopqrstu@vw"));
    }

    #[test]
    fn narrowing_a_word_count_keeps_ordinary_sentences() {
        use crate::re::dfa::Dfa;
        let words = crate::re::ecma::search_language(r"^(?:\S+\s+){0,9}\S+$").expect("parses");
        for (max, texts) in [
            (20, &["Benefit 1", "a b c", "abc"][..]),
            (
                120,
                &["Benefit 1", "a b c", "abc", "Lorem ipsum dolor sit amet"][..],
            ),
        ] {
            let narrowed = narrow_length(&words, 0, max);
            let (_, hi) = narrowed.length_bounds();
            assert!(hi.is_some_and(|h| h <= max), "{hi:?}");
            let d = Dfa::from_re(&narrowed).expect("small");
            for text in texts {
                assert!(d.matches(text), "{text:?} is left out under {max}");
            }
            assert!(!d.matches("a  ") && !d.matches(&"x".repeat(max as usize + 1)));
        }
    }

    #[test]
    fn optional_groups_and_alternatives() {
        let re = Re::repeat(
            Re::concat(vec![class(), Re::repeat(class(), 0, None)]),
            0,
            Some(1),
        );
        let r = restrict_length(&re, 0, Some(4)).expect("structural");
        assert_eq!(r.length_bounds(), (0, Some(4)));
        let two_vars = Re::concat(vec![
            Re::repeat(class(), 0, None),
            Re::literal("@"),
            Re::repeat(class(), 0, None),
        ]);
        assert!(restrict_length(&two_vars, 0, Some(4)).is_none());
    }
}
