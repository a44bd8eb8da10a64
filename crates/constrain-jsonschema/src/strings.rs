//! The decoded-string language of a [`StringSet`]: its patterns, formats and length bounds
//! combined into one regular expression, or into an automaton where no expression of it is
//! small (see [`string_language`]).

use std::cell::{Cell, RefCell};
use std::thread::LocalKey;

use rustc_hash::FxHashMap;

use crate::ir::StringSet;
use crate::re::dfa::{self, Dfa, TooLarge};
use crate::re::{narrow_length, restrict_length, Re};

thread_local! {
    /// The expressions of the string sets met by the compilation running on this thread
    /// (see [`Combined`]).
    static COMBINED: RefCell<FxHashMap<StringSet, Result<Re, TooLarge>>> = RefCell::default();
    /// The languages of the string sets met by the compilation running on this thread, as
    /// [`string_language`] decided them (see [`Combined`]).
    static LANGUAGES: RefCell<FxHashMap<StringSet, Result<StringLanguage, TooLarge>>> =
        RefCell::default();
    /// The graph edges the compilation running on this thread may still spend on string sets
    /// generated from their automata (see [`MAX_GRAPH_EDGES`]).
    static GRAPH_EDGES_LEFT: Cell<usize> = const { Cell::new(MAX_GRAPH_EDGES) };
}

/// Graph edges one compilation spends on automata of string sets: each edge is a copy of a
/// character's spellings in the engine's NFA, and strings that may all start at one place
/// (the branches of an `anyOf` of patterns) multiply the lexer states of their NFAs. Past it,
/// string sets are generated as subsets.
const MAX_GRAPH_EDGES: usize = 12_000;

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
    previous_languages: FxHashMap<StringSet, Result<StringLanguage, TooLarge>>,
    previous_graph_edges: usize,
}

impl Combined {
    pub(crate) fn install() -> Combined {
        Combined {
            previous: COMBINED.with(|c| std::mem::take(&mut *c.borrow_mut())),
            previous_languages: LANGUAGES.with(|c| std::mem::take(&mut *c.borrow_mut())),
            previous_graph_edges: GRAPH_EDGES_LEFT.with(|c| c.replace(MAX_GRAPH_EDGES)),
        }
    }
}

impl Drop for Combined {
    fn drop(&mut self) {
        let previous = std::mem::take(&mut self.previous);
        COMBINED.with(|c| *c.borrow_mut() = previous);
        let previous = std::mem::take(&mut self.previous_languages);
        LANGUAGES.with(|c| *c.borrow_mut() = previous);
        GRAPH_EDGES_LEFT.with(|c| c.set(self.previous_graph_edges));
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

/// How the strings of a [`StringSet`] are generated.
#[derive(Clone)]
pub(crate) enum StringLanguage {
    /// Exactly, by an expression.
    Exact(Re),
    /// Exactly, by an automaton over characters (the product of the patterns' automaton and a
    /// length counter), where no expression fits the budgets.
    Automaton(Dfa),
    /// A subset, by an expression (see [`narrow_length`]): where the automaton is too large,
    /// or far larger than the subset.
    Subset(Re),
}

/// The strings of `set` as an expression if one fits the budgets, else as an automaton or a
/// subset, whichever costs less (kept for the rest of the compilation, as [`string_re`] is).
pub(crate) fn string_language(set: &StringSet) -> Result<StringLanguage, TooLarge> {
    remembered(&LANGUAGES, set, decide_language)
}

/// [`string_language`] without the cache.
fn decide_language(set: &StringSet) -> Result<StringLanguage, TooLarge> {
    match string_re(set) {
        Ok(re) => Ok(StringLanguage::Exact(re)),
        Err(e) => {
            let Some(max) = set.max_len else {
                return Err(e);
            };
            let left = GRAPH_EDGES_LEFT.with(Cell::get);
            let automaton = match length_automaton(set, max).filter(|d| edges(d) <= left) {
                Some(dfa) if edges(&dfa) <= MAX_FREE_EDGES => return Ok(spend_on(dfa)),
                automaton => automaton,
            };
            let langs: Vec<Re> = set.langs.iter().map(|r| (**r).clone()).collect();
            let combined = dfa::intersect_all(&langs)?;
            let subset = narrow_length(&combined, set.min_len, max);
            // The graph's NFA costs a copy of a class per edge, the subset's a copy per class
            // unrolled; the graph is exact and its lexer states hold one of its states, where
            // the subset's hold one per alternative still alive: it is preferred up to a few
            // times the subset's size.
            let budget = subset.unrolled_size().saturating_mul(GRAPH_PREFERENCE);
            match automaton {
                Some(dfa) if edges(&dfa) as u64 <= budget => Ok(spend_on(dfa)),
                _ => Ok(StringLanguage::Subset(subset)),
            }
        }
    }
}

/// `dfa` as the language of a string set, its edges taken from what the compilation may
/// still spend.
fn spend_on(dfa: Dfa) -> StringLanguage {
    let spent = edges(&dfa);
    GRAPH_EDGES_LEFT.with(|c| c.set(c.get().saturating_sub(spent)));
    StringLanguage::Automaton(dfa)
}

/// Edges of an automaton's graph below which it is used without comparing it to a subset.
const MAX_FREE_EDGES: usize = 2_000;

/// How many times the unrolled size of a length-bound subset an exact graph may have (in
/// edges) and still be preferred to it.
const GRAPH_PREFERENCE: u64 = 4;

/// The edges of `dfa` as a graph: its transitions counted once per target.
fn edges(dfa: &Dfa) -> usize {
    (0..dfa.state_count())
        .map(|s| {
            let mut targets: Vec<u32> = dfa.transitions(s).iter().map(|&(_, _, t)| t).collect();
            targets.sort_unstable();
            targets.dedup();
            targets.len()
        })
        .sum()
}
/// The product of the automaton of `set`'s patterns with a counter of `min_len..=max`
/// characters, if within the automaton budget (a few states per character for the usual
/// patterns: a word count, a character class somewhere).
fn length_automaton(set: &StringSet, max: u64) -> Option<Dfa> {
    let (first, rest) = set.langs.split_first()?;
    let mut pattern = Dfa::from_re(first).ok()?.minimize();
    for re in rest {
        pattern = pattern
            .intersect(&Dfa::from_re(re).ok()?.minimize())
            .ok()?
            .minimize();
    }
    let (min, max) = (u32::try_from(set.min_len).ok()?, u32::try_from(max).ok()?);
    if (pattern.state_count() as u64).saturating_mul(u64::from(max) + 1)
        > dfa::MAX_DFA_STATES as u64
    {
        return None;
    }
    // The product of a minimal automaton and a counter is close to minimal already:
    // minimizing it costs more than the few states it would save.
    let product = pattern.intersect(&dfa::length_dfa(min, max)).ok()?;
    Some(product.trim())
}

/// The strings of `set` as one expression (kept for the rest of the compilation, see
/// [`Combined`]).
pub(crate) fn string_re(set: &StringSet) -> Result<Re, TooLarge> {
    remembered(&COMBINED, set, combine)
}

/// What `cache` holds for `set`, or `compute`'s answer, then kept for the rest of the
/// compilation.
fn remembered<V: Clone>(
    cache: &'static LocalKey<RefCell<FxHashMap<StringSet, V>>>,
    set: &StringSet,
    compute: impl FnOnce(&StringSet) -> V,
) -> V {
    if let Some(known) = cache.with(|c| c.borrow().get(set).cloned()) {
        return known;
    }
    let value = compute(set);
    // Past the deadline a construction gives up early: that says nothing about the set.
    if crate::deadline::expired().is_none() {
        cache.with(|c| {
            let mut c = c.borrow_mut();
            if c.len() >= MAX_COMBINED {
                c.clear();
            }
            c.insert(set.clone(), value.clone());
        });
    }
    value
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

    fn pattern_within(pattern: &str, min_len: u64, max_len: u64) -> StringSet {
        let pattern = crate::re::ecma::search_language(pattern).expect("a valid pattern");
        StringSet {
            min_len,
            max_len: Some(max_len),
            langs: vec![Rc::new(pattern)],
        }
    }

    #[test]
    fn a_length_bound_pattern_is_an_automaton_unless_far_larger_than_a_subset() {
        let _compiling = Combined::install();
        let kind = |set: &StringSet| match string_language(set) {
            Ok(StringLanguage::Exact(_)) => "exact",
            Ok(StringLanguage::Automaton(_)) => "automaton",
            Ok(StringLanguage::Subset(_)) => "subset",
            Err(_) => "too large",
        };
        // Small products: a word count, an unanchored pattern.
        assert_eq!(
            kind(&pattern_within(r"^(?:\S+\s+){0,9}\S+$", 1, 100)),
            "automaton"
        );
        assert_eq!(
            kind(&pattern_within("[a-zA-Z0-9_.-]+", 3, 255)),
            "automaton"
        );
        // A word count of about 40 automaton states times 201 lengths: past the budget.
        assert_eq!(
            kind(&pattern_within(r"^(?:\S+\s+){0,19}\S+$", 1, 200)),
            "subset"
        );
        // An address of many parts under a long bound: thousands of product states, where
        // the subset gives each part a share of the length.
        let address = r"^[^@^\s]+@[^@^\.^\s]+(\.[^@^\.^\s]*)*.gov.uk";
        assert_eq!(kind(&pattern_within(address, 5, 254)), "subset");
        assert_eq!(kind(&pattern_within(address, 5, 30)), "automaton");
    }

    #[test]
    fn a_compilation_spends_a_bounded_number_of_graph_edges() {
        let is_automaton =
            |set: &StringSet| matches!(string_language(set), Ok(StringLanguage::Automaton(_)));
        // Word counts of about 3,300 edges each: three fit the budget, the fourth does not.
        let sets: Vec<StringSet> = (0..5)
            .map(|i| pattern_within(r"^(?:\S+\s+){0,9}\S+$", 1, 100 + i))
            .collect();
        {
            let _compiling = Combined::install();
            let kinds: Vec<bool> = sets.iter().map(is_automaton).collect();
            assert_eq!(kinds, [true, true, true, false, false]);
            // A set decided once is not charged again.
            assert!(is_automaton(&sets[0]));
        }
        // The next compilation has the whole budget again.
        let _compiling = Combined::install();
        assert!(is_automaton(&sets[4]));
    }
}
