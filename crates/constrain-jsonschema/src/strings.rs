//! The decoded-string language of a [`StringSet`]: its patterns, formats and length bounds
//! combined into one regular expression.

use std::cell::RefCell;

use rustc_hash::FxHashMap;

use crate::ir::StringSet;
use crate::re::dfa::{self, Dfa, TooLarge};
use crate::re::{narrow_length, restrict_length, Re};

thread_local! {
    /// The expressions of the string sets met by the compilation running on this thread
    /// (see [`Combined`]).
    static COMBINED: RefCell<FxHashMap<StringSet, Result<Re, TooLarge>>> = RefCell::default();
}

/// Most string sets [`COMBINED`] keeps; it starts over beyond.
const MAX_COMBINED: usize = 256;

/// Keeps the expression of every string set for the duration of one compilation, or why it
/// has none: the parser checks a set where its keywords are, the emitter spells it later, and
/// schemas repeat definitions inline, while rebuilding a pattern with length bounds from its
/// automaton is the costly part of compiling such a schema (and finding it too large as
/// costly). Installed by [`crate::compile`]; restores the enclosing compilation's sets on
/// drop.
pub(crate) struct Combined {
    previous: FxHashMap<StringSet, Result<Re, TooLarge>>,
}

impl Combined {
    pub(crate) fn install() -> Combined {
        Combined {
            previous: COMBINED.with(|c| std::mem::take(&mut *c.borrow_mut())),
        }
    }
}

impl Drop for Combined {
    fn drop(&mut self) {
        let previous = std::mem::take(&mut self.previous);
        COMBINED.with(|c| *c.borrow_mut() = previous);
    }
}

impl std::fmt::Display for TooLarge {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "the combined automaton exceeds the limit of {} {}",
            self.limit, self.what
        )
    }
}

/// Longest `maxLength` spelled out exactly: a counted repetition costs grammar size in
/// proportion to its bound (about 1.5 KB of automaton per character of a JSON string).
pub(crate) const MAX_LENGTH_BOUND: u64 = 1024;

/// `set` with a `maxLength` above [`MAX_LENGTH_BOUND`] lowered to it, unless its patterns are
/// shorter anyway: what emission spells out (a subset, so only for generating, never for
/// complements).
pub(crate) fn capped(set: &StringSet) -> StringSet {
    let pattern_max = set.langs.iter().filter_map(|l| l.length_bounds().1).min();
    match set.max_len {
        Some(m) if m > MAX_LENGTH_BOUND && pattern_max.is_none_or(|h| h > MAX_LENGTH_BOUND) => {
            StringSet {
                max_len: Some(MAX_LENGTH_BOUND),
                ..set.clone()
            }
        }
        _ => set.clone(),
    }
}

/// The strings of `set` as one expression, and whether it is only a subset (when the exact
/// combination of length bounds and patterns is too large, see [`narrow_length`]).
pub(crate) fn string_re_or_subset(set: &StringSet) -> Result<(Re, bool), TooLarge> {
    match string_re(set) {
        Ok(re) => Ok((re, false)),
        Err(e) => {
            let Some(max) = set.max_len else {
                return Err(e);
            };
            let langs: Vec<Re> = set.langs.iter().map(|r| (**r).clone()).collect();
            let combined = dfa::intersect_all(&langs)?;
            Ok((narrow_length(&combined, set.min_len, max), true))
        }
    }
}

/// The strings of `set` as one expression (kept for the rest of the compilation, see
/// [`Combined`]).
pub(crate) fn string_re(set: &StringSet) -> Result<Re, TooLarge> {
    if let Some(known) = COMBINED.with(|c| c.borrow().get(set).cloned()) {
        return known;
    }
    let re = combine(set);
    // Past the deadline a construction gives up early: that says nothing about the set.
    if crate::deadline::expired().is_none() {
        COMBINED.with(|c| {
            let mut c = c.borrow_mut();
            if c.len() >= MAX_COMBINED {
                c.clear();
            }
            c.insert(set.clone(), re.clone());
        });
    }
    re
}

/// [`string_re`] without the cache.
fn combine(set: &StringSet) -> Result<Re, TooLarge> {
    let max32 = |m: u64| u32::try_from(m).ok();
    if set.langs.is_empty() {
        let min = u32::try_from(set.min_len).map_err(|_| TooLarge {
            what: "minLength".into(),
            limit: u32::MAX as usize,
        })?;
        let max = set.max_len.map(|m| max32(m).unwrap_or(u32::MAX));
        return Ok(Re::repeat(Re::any_char(), min, max));
    }
    let langs: Vec<Re> = set.langs.iter().map(|r| (**r).clone()).collect();
    let combined = dfa::intersect_all(&langs)?;
    if set.min_len == 0 && set.max_len.is_none() {
        return Ok(combined);
    }
    if let Some(r) = restrict_length(&combined, set.min_len, set.max_len) {
        return Ok(r);
    }
    let min = u32::try_from(set.min_len).map_err(|_| TooLarge {
        what: "minLength".into(),
        limit: u32::MAX as usize,
    })?;
    let Some(max) = set.max_len.map(|m| max32(m).unwrap_or(u32::MAX)) else {
        return dfa::intersect_all(&[combined, Re::repeat(Re::any_char(), min, None)]);
    };
    // The product has up to |pattern| × (max + 1) states, and the expression rebuilt from it
    // nests about `max` deep: refuse early rather than build it.
    if max as usize > dfa::MAX_RE_DEPTH {
        return Err(TooLarge {
            what: "nesting of a length bound combined with a pattern".into(),
            limit: dfa::MAX_RE_DEPTH,
        });
    }
    let pattern = Dfa::from_re(&combined)?.minimize();
    if (pattern.state_count() as u64).saturating_mul(u64::from(max) + 1) > LENGTH_PRODUCT_STATES {
        return Err(TooLarge {
            what: "automaton states of a pattern with length bounds".into(),
            limit: LENGTH_PRODUCT_STATES as usize,
        });
    }
    let re = pattern.intersect(&dfa::length_dfa(min, max))?.to_re()?;
    // Rebuilt expressions repeat classes along every path; past this size the structural subset
    // (see `narrow_length`) makes a far smaller grammar.
    if re.size() > MAX_REBUILT_SIZE {
        return Err(TooLarge {
            what: "size of the expression for a pattern with length bounds".into(),
            limit: MAX_REBUILT_SIZE,
        });
    }
    Ok(re)
}

/// Largest expression accepted from an automaton for a pattern with length bounds.
const MAX_REBUILT_SIZE: usize = 3_000;

/// Most states of the product of a pattern's automaton and a length counter.
const LENGTH_PRODUCT_STATES: u64 = 4_000;

#[cfg(test)]
mod tests {
    use std::rc::Rc;
    use std::time::Duration;

    use super::*;

    /// Letters then digits, at most `max_len` of them: two unbounded parts share the bound,
    /// so it takes the automaton product to spell.
    fn letters_digits(max_len: u64) -> StringSet {
        let pattern = crate::re::ecma::search_language("^[a-z]+[0-9]+$").expect("a valid pattern");
        StringSet {
            min_len: 1,
            max_len: Some(max_len),
            langs: vec![Rc::new(pattern)],
        }
    }

    fn kept(set: &StringSet) -> Option<Result<Re, TooLarge>> {
        COMBINED.with(|c| c.borrow().get(set).cloned())
    }

    #[test]
    fn a_compilation_keeps_each_string_set_and_forgets_them_after() {
        let short = letters_digits(8);
        let deep = letters_digits(dfa::MAX_RE_DEPTH as u64 + 1);
        assert_eq!(kept(&short), None);
        {
            let _compiling = Combined::install();
            let combined = string_re(&short);
            assert!(combined.is_ok());
            assert_eq!(kept(&short), Some(combined.clone()));
            assert_eq!(string_re(&short), combined);
            let refused = string_re(&deep);
            assert!(refused.is_err(), "a length bound too deep to spell");
            assert_eq!(kept(&deep), Some(refused), "refusals are kept too");
            {
                let _nested = Combined::install();
                assert_eq!(kept(&short), None, "a nested compilation starts afresh");
            }
            assert!(
                kept(&short).is_some(),
                "and hands the outer one its sets back"
            );
        }
        assert_eq!(kept(&short), None);
        assert_eq!(kept(&deep), None);
    }

    #[test]
    fn nothing_is_kept_past_the_deadline() {
        let _compiling = Combined::install();
        let _late = crate::deadline::Guard::install(Some(Duration::ZERO));
        let set = letters_digits(8);
        let _ = string_re(&set);
        assert_eq!(kept(&set), None);
    }
}
