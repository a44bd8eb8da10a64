//! The decoded-string language of a [`StringSet`]: its patterns, formats and length bounds
//! combined into one regular expression, or, where no expression of it is small, the
//! patterns' automaton with the length bounds left to the engine to count, or with the
//! `minLength` in it when there is no `maxLength` (see [`string_language`]).

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
/// string sets are generated as subsets (an automaton has a few edges per state of its
/// patterns, so this takes hundreds of patterns with length bounds).
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
    /// Exactly, by the patterns' automaton over characters, read by paths of `min_len` to
    /// `max_len` characters (the engine counts them: see `RegexGraph::with_edge_bounds`),
    /// where the bound is long (see [`COUNTED_FROM`]) or no expression fits the budgets.
    /// Without a `maxLength`, the automaton holds the `minLength` too and nothing is counted
    /// (`max_len` is `None`): a `format` met with a `pattern` (`uri` and `^https?://`) has an
    /// automaton of a few hundred states but no expression within the budget.
    Automaton {
        pattern: Dfa,
        min_len: u32,
        max_len: Option<u32>,
    },
    /// A subset, by an expression (see [`narrow_length`]): where the patterns have no
    /// automaton within the budgets.
    Subset(Re),
}

/// The strings of `set` as their patterns' automaton with the characters counted when its
/// `maxLength` is [`COUNTED_FROM`] or more, else as an expression if one fits the budgets,
/// else as that automaton, else as a subset (kept for the rest of the compilation, as
/// [`string_re`] is).
pub(crate) fn string_language(set: &StringSet) -> Result<StringLanguage, TooLarge> {
    remembered(&LANGUAGES, set, decide_language)
}

/// Shortest `maxLength` whose strings are their patterns' automaton with the characters
/// counted (see [`StringLanguage::Automaton`]) rather than an expression. Spelled out, a
/// JSON string character is some twenty NFA states, compiled anew for every character the
/// bound allows: a `maxLength` of 1,024 is a few milliseconds of compiling where its
/// lexeme is first read, while counted it is the NFA of one character.
pub(crate) const COUNTED_FROM: u64 = 64;

/// [`string_language`] without the cache.
fn decide_language(set: &StringSet) -> Result<StringLanguage, TooLarge> {
    if let Some(max) = set.max_len.filter(|&m| m >= COUNTED_FROM) {
        if let Some(language) = counted_automaton(set, max) {
            return Ok(language);
        }
    }
    // Without a `maxLength`, several patterns' automaton, built once. Met with a format of
    // hundreds of states, their expression, rebuilt from the automaton, runs past the budget,
    // and finding so takes longer than the rest of compiling them: the automaton it is then.
    let uncounted = if set.max_len.is_none() && set.langs.len() >= 2 {
        patterns_automaton(set)
    } else {
        None
    };
    if let Some(pattern) = uncounted
        .as_ref()
        .filter(|p| p.state_count() >= AUTOMATON_WITHOUT_EXPRESSION_FROM)
    {
        if let Some(language) = uncounted_automaton(set, pattern.clone()) {
            return Ok(language);
        }
    }
    match string_re(set) {
        Ok(re) => Ok(StringLanguage::Exact(re)),
        Err(e) => {
            let Some(max) = set.max_len else {
                return uncounted
                    .or_else(|| patterns_automaton(set))
                    .and_then(|pattern| uncounted_automaton(set, pattern))
                    .ok_or(e);
            };
            if max < COUNTED_FROM {
                if let Some(language) = counted_automaton(set, max) {
                    return Ok(language);
                }
            }
            let langs: Vec<Re> = set.langs.iter().map(|r| (**r).clone()).collect();
            let combined = dfa::intersect_all(&langs)?;
            Ok(StringLanguage::Subset(narrow_length(
                &combined,
                set.min_len,
                max,
            )))
        }
    }
}

/// The automaton of `set`'s patterns with its lengths (up to `max`) to be counted, if it has
/// one within the automaton budget and the compilation's graph edges; the edges are spent.
fn counted_automaton(set: &StringSet, max: u64) -> Option<StringLanguage> {
    // Paths read the quotes too.
    let bound = |len: u64| {
        u32::try_from(len)
            .ok()
            .filter(|&l| l <= constrain_engine::MAX_EDGE_BOUND - 2)
    };
    let (min_len, max_len) = (bound(set.min_len)?, bound(max)?);
    if min_len > max_len {
        return None;
    }
    let pattern = patterns_automaton(set)?;
    // The graph has an edge per quote too, and the engine bounds edges times lengths.
    let graph_edges = (edges(&pattern) + pattern.state_count() + 1) as u64;
    if graph_edges.saturating_mul(u64::from(max_len) + 3) > constrain_engine::MAX_EDGE_BOUND_WORK
        || !spend_graph_edges(&pattern)
    {
        return None;
    }
    Some(StringLanguage::Automaton {
        pattern,
        min_len,
        max_len: Some(max_len),
    })
}

/// Automaton states of several patterns from which their strings are their automaton without
/// an expression being tried (see [`decide_language`]).
const AUTOMATON_WITHOUT_EXPRESSION_FROM: usize = 128;

/// The strings of `set`, without `maxLength`, as `pattern` (its patterns' automaton) with the
/// `minLength` put in, if within the automaton budget and the compilation's graph edges; the
/// edges are spent.
fn uncounted_automaton(set: &StringSet, mut pattern: Dfa) -> Option<StringLanguage> {
    if set.min_len > 0 {
        let min = u32::try_from(set.min_len).ok()?;
        pattern = pattern.intersect(&dfa::at_least_dfa(min)).ok()?.minimize();
    }
    spend_graph_edges(&pattern).then_some(StringLanguage::Automaton {
        pattern,
        min_len: 0,
        max_len: None,
    })
}

/// The minimal automaton of the strings every pattern of `set` matches, if within budget.
fn patterns_automaton(set: &StringSet) -> Option<Dfa> {
    let any = Re::any_string();
    let (first, rest) = set
        .langs
        .split_first()
        .map_or((&any, &[][..]), |(first, rest)| (&**first, rest));
    let rest: Vec<Re> = rest.iter().map(|r| (**r).clone()).collect();
    dfa::intersection_automaton(first, &rest).ok()
}

/// Spends the graph edges of `pattern` from the compilation's budget, if it has them left.
fn spend_graph_edges(pattern: &Dfa) -> bool {
    let spent = edges(pattern);
    let left = GRAPH_EDGES_LEFT.with(Cell::get);
    if spent > left {
        return false;
    }
    GRAPH_EDGES_LEFT.with(|c| c.set(left - spent));
    true
}

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

    fn kind(set: &StringSet) -> &'static str {
        match string_language(set) {
            Ok(StringLanguage::Exact(_)) => "exact",
            Ok(StringLanguage::Automaton { .. }) => "automaton",
            Ok(StringLanguage::Subset(_)) => "subset",
            Err(_) => "too large",
        }
    }

    #[test]
    fn a_length_bound_pattern_without_an_expression_is_its_automaton_with_lengths_counted() {
        let _compiling = Combined::install();
        // Word counts and an address of many parts: a product with the lengths would have
        // thousands of states, the patterns' automata have a few dozen.
        for (pattern, min, max) in [
            (r"^(?:\S+\s+){0,9}\S+$", 1, 100),
            (r"^(?:\S+\s+){0,19}\S+$", 1, 200),
            (r"^(?:\S+\s+){0,49}\S+$", 0, 500),
            (r"^[^@^\s]+@[^@^\.^\s]+(\.[^@^\.^\s]*)*.gov.uk", 5, 254),
        ] {
            let set = pattern_within(pattern, min, max);
            assert_eq!(kind(&set), "automaton", "{pattern}");
            let Ok(StringLanguage::Automaton {
                min_len, max_len, ..
            }) = string_language(&set)
            else {
                unreachable!("an automaton a moment ago");
            };
            assert_eq!(
                (u64::from(min_len), max_len.map(u64::from)),
                (min, Some(max))
            );
        }
        // A small product has an expression.
        assert_eq!(kind(&pattern_within("[a-z]{2}-[0-9]+", 4, 10)), "exact");
    }

    #[test]
    fn a_compilation_spends_a_bounded_number_of_graph_edges() {
        // Word counts of 300 words: an automaton of about 600 states and 1,200 edges each.
        let sets: Vec<StringSet> = (0..12)
            .map(|i| pattern_within(r"^(?:\S+\s+){0,299}\S+$", 1, 1000 + i))
            .collect();
        {
            let _compiling = Combined::install();
            let kinds: Vec<&str> = sets.iter().map(kind).collect();
            let automata = kinds.iter().filter(|&&k| k == "automaton").count();
            assert!((5..12).contains(&automata), "{kinds:?}");
            assert_eq!(kinds[11], "subset", "{kinds:?}");
            // A set decided once is not charged again.
            assert_eq!(kind(&sets[0]), "automaton");
        }
        // The next compilation has the whole budget again.
        let _compiling = Combined::install();
        assert_eq!(kind(&sets[11]), "automaton");
    }
}
