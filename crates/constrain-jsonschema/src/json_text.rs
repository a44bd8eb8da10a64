//! Spelling decoded strings as JSON string text: every character may appear raw (unless it
//! must be escaped), as a short escape, or as `\uXXXX` (a surrogate pair outside the basic
//! plane). Lone surrogates are not produced: they do not decode to a string.

use constrain_engine::{Expr, GrammarError, GraphState, RegexGraph};
use regex_syntax::hir::{Class, ClassBytes, ClassBytesRange, Hir, Repetition};
use rustc_hash::FxHashMap;

use crate::options::Escapes;
use crate::re::dfa::Dfa;
use crate::re::{unicode_class, CharSet, FlatTrie, Re};

/// Characters that JSON lets appear as a short escape, with the escape letter.
const SHORT_ESCAPES: [(char, u8); 8] = [
    ('"', b'"'),
    ('\\', b'\\'),
    ('/', b'/'),
    ('\u{08}', b'b'),
    ('\u{0C}', b'f'),
    ('\n', b'n'),
    ('\r', b'r'),
    ('\t', b't'),
];

/// The JSON string (quotes included) of the strings of `re`: [`encode_expr`]'s pieces, with
/// the quotes in the pieces next to them.
pub(crate) fn quoted_expr(re: &Re, escapes: Escapes) -> Expr {
    let quote = || Hir::literal(*b"\"");
    match encode_expr_then(re, escapes, quote()) {
        Expr::Regex(text) => Expr::from_hir(Hir::concat(vec![quote(), *text])),
        text => Expr::seq(vec![Expr::from_hir(quote()), text]),
    }
}

/// [`encode_expr`] of `re` followed by `tail` (the closing quote). From the first part of
/// unbounded length on, when no counted repetition follows it, the text is one expression
/// with the tail: a piece of its own, such a part would be a lexeme that may end after any
/// character (the `.*` of `x{3}.*`, the `[0-9]*` of `[a-z]{2}[0-9]*`), each end a second
/// scan waiting for what follows, and every token inside the string walked with the whole
/// automaton.
fn encode_expr_then(re: &Re, escapes: Escapes, tail: Hir) -> Expr {
    if out_of_time() {
        return Expr::from_hir(Hir::fail());
    }
    match re {
        Re::Concat(parts) if parts.iter().any(has_counted_repeat) => {
            let open = parts.iter().position(|p| p.length_bounds().1.is_none());
            let mut seq: Vec<Expr> = Vec::with_capacity(parts.len() + 1);
            match open {
                Some(i) if !parts[i..].iter().any(has_counted_repeat) => {
                    seq.extend(parts[..i].iter().map(|p| encode_expr(p, escapes)));
                    let rest = encode(&Re::concat(parts[i..].to_vec()), escapes);
                    seq.push(Expr::from_hir(Hir::concat(vec![rest, tail])));
                }
                _ => {
                    seq.extend(parts.iter().map(|p| encode_expr(p, escapes)));
                    seq.push(Expr::from_hir(tail));
                }
            }
            Expr::seq(seq)
        }
        Re::Alt(parts) if parts.iter().any(has_counted_repeat) => Expr::alt(
            parts
                .iter()
                .map(|p| encode_expr_then(p, escapes, tail.clone()))
                .collect(),
        ),
        Re::Repeat { .. } if has_counted_repeat(re) => {
            Expr::seq(vec![encode_expr(re, escapes), Expr::from_hir(tail)])
        }
        other => Expr::from_hir(Hir::concat(vec![encode(other, escapes), tail])),
    }
}

/// The JSON text (between the quotes) of the strings of `re`, as a grammar expression whose
/// counted repetitions are grammar repetitions: the engine then sees what a bounded
/// repetition costs (a copy per count) when it decides what to fold into one terminal.
/// Without them the text is one expression, so that the string, quotes included, is one
/// lexeme (see [`encode_expr_then`] for what a split unbounded part costs).
fn encode_expr(re: &Re, escapes: Escapes) -> Expr {
    if out_of_time() {
        return Expr::from_hir(Hir::fail());
    }
    let each = |parts: &[Re]| parts.iter().map(|p| encode_expr(p, escapes)).collect();
    match re {
        Re::Concat(parts) if parts.iter().any(has_counted_repeat) => Expr::seq(each(parts)),
        Re::Alt(parts) if parts.iter().any(has_counted_repeat) => Expr::alt(each(parts)),
        Re::Repeat {
            re: inner,
            min,
            max,
        } if has_counted_repeat(re) => encode_expr(inner, escapes).repeat(*min, *max),
        other => Expr::from_hir(encode(other, escapes)),
    }
}

/// The JSON string (quotes included) of every string but `words` ([`Re::not_in`]'s
/// language), as a graph: a state per node of the words' trie, whose edges read the
/// characters words continue with, its departure class (to a state that reads anything),
/// and the closing quote where no word ends; beside the trie, a run of alphabet characters
/// left with a character outside the alphabet. The keys an object leaves open are such a
/// complement, one per object: spelling and lowering it as an expression takes a few
/// allocations per character of every declared key (a third of compiling a Kubernetes
/// schema); the graph's labels (each character, each departure class) are spelled once.
pub(crate) fn quoted_not_in(
    words: &[String],
    escapes: Escapes,
) -> Result<RegexGraph, GrammarError> {
    // States: before the opening quote (0), the run of alphabet characters, anything after
    // leaving the trie or the alphabet, after the closing quote, then the trie's nodes.
    const RUN: u32 = 1;
    const ANY: u32 = 2;
    const END: u32 = 3;
    const FIRST_NODE: u32 = 4;
    // Label 0 is the quote; the others are classes, each spelled once.
    const QUOTE: u32 = 0;
    let trie = FlatTrie::of(words);
    let mut labels = vec![Hir::literal(*b"\"")];
    let mut label = ClassLabels::new(|class| spell_class(class, escapes));
    let alphabet = label.of(trie.alphabet.clone(), &mut labels);
    let outside = label.of(trie.alphabet.complement(), &mut labels);
    let any = label.of(CharSet::any(), &mut labels);
    let mut states = vec![
        GraphState {
            edges: vec![(QUOTE, RUN), (QUOTE, FIRST_NODE)],
            accepting: false,
        },
        GraphState {
            edges: vec![(alphabet, RUN), (outside, ANY)],
            accepting: false,
        },
        GraphState {
            edges: vec![(any, ANY), (QUOTE, END)],
            accepting: false,
        },
        GraphState {
            edges: Vec::new(),
            accepting: true,
        },
    ];
    debug_assert_eq!(states.len() as u32, FIRST_NODE);
    for (end, children) in &trie.nodes {
        let mut edges = Vec::with_capacity(children.len() + 2);
        let firsts = CharSet::from_ranges(children.iter().map(|&(c, _)| (c as u32, c as u32)));
        for &(c, child) in children {
            edges.push((
                label.of(CharSet::single(c), &mut labels),
                FIRST_NODE + child,
            ));
        }
        let leaving = trie.alphabet.difference(&firsts);
        if !leaving.is_empty() {
            edges.push((label.of(leaving, &mut labels), ANY));
        }
        if !end {
            edges.push((QUOTE, END));
        }
        states.push(GraphState {
            edges,
            accepting: false,
        });
    }
    RegexGraph::new(labels, states)
}

/// The JSON text of the strings `dfa` accepts, quotes included, as a graph: a state per
/// automaton state, whose edges spell the characters leading to each next state. For
/// languages with a small automaton and no small expression (a pattern under a length bound,
/// the bound then put on the edges a path takes: one per character, and one per quote).
pub(crate) fn quoted_graph(dfa: &Dfa, escapes: Escapes) -> Result<RegexGraph, GrammarError> {
    // Graph states: 0 before the opening quote, `1 + s` for automaton state `s`, and the
    // last one after the closing quote; label 0 is the quote.
    let closed = dfa.state_count() as u32 + 1;
    let mut labels = vec![Hir::literal(*b"\"")];
    let mut states = vec![GraphState {
        edges: vec![(0, 1)],
        accepting: false,
    }];
    for mut state in automaton_states(dfa, 1, &mut labels, |class| spell_class(class, escapes)) {
        if std::mem::take(&mut state.accepting) {
            state.edges.push((0, closed));
        }
        states.push(state);
    }
    states.push(GraphState {
        edges: Vec::new(),
        accepting: true,
    });
    RegexGraph::new(labels, states)
}

/// One graph state per state of `dfa` (state `s` becomes `first + s`), accepting where it
/// is, with an edge per next state labelled by the class of characters leading there, as
/// `spell` writes it; labels are appended to `labels`, each class once.
pub(crate) fn automaton_states(
    dfa: &Dfa,
    first: u32,
    labels: &mut Vec<Hir>,
    spell: impl Fn(&CharSet) -> Hir,
) -> Vec<GraphState> {
    let mut label = ClassLabels::new(spell);
    let mut states = Vec::with_capacity(dfa.state_count());
    for s in 0..dfa.state_count() {
        // The ranges into each target, as one class.
        let mut by_target: Vec<(u32, Vec<(u32, u32)>)> = Vec::new();
        for &(lo, hi, t) in dfa.transitions(s) {
            match by_target.iter_mut().find(|(target, _)| *target == t) {
                Some((_, ranges)) => ranges.push((lo, hi)),
                None => by_target.push((t, vec![(lo, hi)])),
            }
        }
        let mut edges = Vec::with_capacity(by_target.len() + 1);
        for (target, ranges) in by_target {
            edges.push((
                label.of(CharSet::from_ranges(ranges), labels),
                first + target,
            ));
        }
        states.push(GraphState {
            edges,
            accepting: dfa.is_accepting(s),
        });
    }
    states
}

/// The labels of a graph's edges that read character classes: each class spelled once, by
/// `spell`, and appended to the graph's labels.
struct ClassLabels<F> {
    spell: F,
    index: FxHashMap<CharSet, u32>,
}

impl<F: Fn(&CharSet) -> Hir> ClassLabels<F> {
    fn new(spell: F) -> Self {
        ClassLabels {
            spell,
            index: FxHashMap::default(),
        }
    }

    /// The label of `class` in `labels`, appended on its first use.
    fn of(&mut self, class: CharSet, labels: &mut Vec<Hir>) -> u32 {
        *self.index.entry(class).or_insert_with_key(|class| {
            labels.push((self.spell)(class));
            labels.len() as u32 - 1
        })
    }
}

/// Whether the compilation on this thread is past its deadline: encoding a huge expression
/// then stops early, with a result its caller must discard (see `emit::scalar::string_of`).
fn out_of_time() -> bool {
    crate::deadline::expired_sampled()
}

/// Whether `re` contains a repetition with an upper bound above one.
fn has_counted_repeat(re: &Re) -> bool {
    match re {
        Re::Repeat { re, max, .. } => max.is_some_and(|m| m > 1) || has_counted_repeat(re),
        Re::Concat(parts) | Re::Alt(parts) => parts.iter().any(has_counted_repeat),
        _ => false,
    }
}

/// The JSON text (between the quotes) of the strings of `re`, with the spellings `escapes`
/// allows.
pub(crate) fn encode(re: &Re, escapes: Escapes) -> Hir {
    match escapes {
        Escapes::Any => encode_any(re),
        Escapes::Canonical => encode_canonical(re),
    }
}

/// Every JSON spelling of the strings of `re`.
fn encode_any(re: &Re) -> Hir {
    if out_of_time() {
        return Hir::fail();
    }
    match re {
        Re::Class(set) => spell_class(set, Escapes::Any),
        Re::Literal(s) => Hir::concat(
            s.chars()
                .map(|c| spell_class(&CharSet::single(c), Escapes::Any))
                .collect(),
        ),
        Re::Concat(parts) => Hir::concat(parts.iter().map(encode_any).collect()),
        Re::Alt(parts) => alternation(parts.iter().map(encode_any).collect()),
        Re::Repeat { re, min, max } => Hir::repetition(Repetition {
            min: *min,
            max: *max,
            greedy: true,
            sub: Box::new(encode_any(re)),
        }),
        // Assertions are resolved before encoding; an unresolved one would match nothing.
        Re::Look(_) => Hir::fail(),
        // Not met: `string_of` refuses expressions holding an automaton. One whose own
        // expression fits would be spelled as that.
        Re::Automaton(a) => a
            .dfa()
            .to_re()
            .map_or_else(|_| Hir::fail(), |re| encode_any(&re)),
    }
}

/// The JSON text of the strings of `re`, spelled as `json.dumps(..., ensure_ascii=False)` does:
/// raw characters, short escapes where they exist, `\u00xx` for other control characters.
fn encode_canonical(re: &Re) -> Hir {
    if out_of_time() {
        return Hir::fail();
    }
    match re {
        Re::Class(set) => spell_class(set, Escapes::Canonical),
        Re::Literal(s) => Hir::literal(canonical_text(s).into_bytes()),
        Re::Concat(parts) => Hir::concat(parts.iter().map(encode_canonical).collect()),
        Re::Alt(parts) => alternation(parts.iter().map(encode_canonical).collect()),
        Re::Repeat { re, min, max } => Hir::repetition(Repetition {
            min: *min,
            max: *max,
            greedy: true,
            sub: Box::new(encode_canonical(re)),
        }),
        Re::Look(_) => Hir::fail(),
        Re::Automaton(a) => a
            .dfa()
            .to_re()
            .map_or_else(|_| Hir::fail(), |re| encode_canonical(&re)),
    }
}

/// `text` as `json.dumps(text, ensure_ascii=False)` writes it, without the quotes.
pub(crate) fn canonical_text(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{08}' => out.push_str("\\b"),
            '\u{0C}' => out.push_str("\\f"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out
}

/// The one spelling of each character of `set` that `json.dumps` writes.
fn canonical_class(set: &CharSet) -> Hir {
    let mut alts = Vec::new();
    let raw = raw_part(set);
    if !raw.is_empty() {
        alts.push(Hir::class(Class::Unicode(unicode_class(&raw))));
    }
    // The escaped characters are the quote, the backslash and the control characters: a short
    // escape where one exists, else `\u00` and two lowercase hexadecimal digits, grouped by the
    // first digit so that a class of many control characters is a few classes, not one
    // literal each.
    let mut shorts = Vec::new();
    let mut by_first_digit: [Vec<u8>; 2] = [Vec::new(), Vec::new()];
    for &(lo, hi) in set.difference(&raw).ranges() {
        for c in lo..=hi {
            let Some(ch) = char::from_u32(c) else {
                continue;
            };
            match SHORT_ESCAPES.iter().find(|(s, _)| *s == ch) {
                Some(&(_, e)) => shorts.push(e),
                None => by_first_digit[(c >> 4) as usize & 1].push(LOWER_HEX[(c & 0xF) as usize]),
            }
        }
    }
    let mut escapes = Vec::new();
    if !shorts.is_empty() {
        escapes.push(byte_set(&shorts));
    }
    for (first, seconds) in by_first_digit.iter().enumerate() {
        if !seconds.is_empty() {
            escapes.push(Hir::concat(vec![
                Hir::literal(if first == 0 { *b"u000" } else { *b"u001" }),
                byte_set(seconds),
            ]));
        }
    }
    if !escapes.is_empty() {
        alts.push(Hir::concat(vec![
            Hir::literal(*b"\\"),
            alternation(escapes),
        ]));
    }
    alternation(alts)
}

/// Lowercase hexadecimal digits, as `json.dumps` writes them.
const LOWER_HEX: [u8; 16] = *b"0123456789abcdef";

/// The characters that may appear unescaped.
fn raw_part(set: &CharSet) -> CharSet {
    set.difference(&CharSet::from_ranges([
        (0, 0x1F),
        ('"' as u32, '"' as u32),
        ('\\' as u32, '\\' as u32),
    ]))
}

fn alternation(mut alts: Vec<Hir>) -> Hir {
    match alts.len() {
        0 => Hir::fail(),
        1 => alts.pop().unwrap_or_else(Hir::fail),
        _ => Hir::alternation(alts),
    }
}

thread_local! {
    /// Spellings of recently spelled classes: schemas repeat the same few classes (any
    /// character, digits, the characters after a property-name prefix...) many times, and a
    /// key complement has one per node of its trie.
    static CLASS_CACHE: std::cell::RefCell<rustc_hash::FxHashMap<(Escapes, CharSet), Hir>> = Default::default();
}

/// Most classes kept in the cache.
const CLASS_CACHE_SIZE: usize = 4096;

/// The spellings of one character of `set` that `escapes` allows.
fn spell_class(set: &CharSet, escapes: Escapes) -> Hir {
    let key = (escapes, set.clone());
    if let Some(hir) = CLASS_CACHE.with(|c| c.borrow().get(&key).cloned()) {
        return hir;
    }
    let hir = match escapes {
        Escapes::Any => any_class(set),
        Escapes::Canonical => canonical_class(set),
    };
    CLASS_CACHE.with(|c| {
        let mut c = c.borrow_mut();
        if c.len() >= CLASS_CACHE_SIZE {
            c.clear();
        }
        c.insert(key, hir.clone());
    });
    hir
}

/// Every spelling of one character of `set`.
fn any_class(set: &CharSet) -> Hir {
    let mut alts = Vec::new();
    let raw = raw_part(set);
    if !raw.is_empty() {
        alts.push(Hir::class(Class::Unicode(unicode_class(&raw))));
    }
    let shorts: Vec<u8> = SHORT_ESCAPES
        .iter()
        .filter(|(c, _)| set.contains(*c))
        .map(|&(_, e)| e)
        .collect();
    let mut escapes = Vec::new();
    if !shorts.is_empty() {
        escapes.push(byte_set(&shorts));
    }
    let bmp = set.intersect(&CharSet::from_ranges([(0, 0xFFFF)]));
    if !bmp.ranges().is_empty() {
        escapes.push(Hir::concat(vec![
            Hir::literal(*b"u"),
            hex_set(bmp.ranges(), 4),
        ]));
    }
    let astral = set.intersect(&CharSet::from_ranges([(0x10000, 0x10FFFF)]));
    let mut pairs = Vec::new();
    for &(lo, hi) in astral.ranges() {
        surrogate_pairs(lo, hi, &mut pairs);
    }
    if !pairs.is_empty() {
        escapes.push(alternation(pairs));
    }
    if !escapes.is_empty() {
        alts.push(Hir::concat(vec![
            Hir::literal(*b"\\"),
            alternation(escapes),
        ]));
    }
    alternation(alts)
}

fn byte_set(bytes: &[u8]) -> Hir {
    Hir::class(Class::Bytes(ClassBytes::new(
        bytes.iter().map(|&b| ClassBytesRange::new(b, b)),
    )))
}

/// One hexadecimal digit with a value in `lo..=hi`, either case.
fn hex_digit(lo: u32, hi: u32) -> Hir {
    hex_digits(&(lo..=hi).collect::<Vec<u32>>())
}

/// `width` hexadecimal digits whose value is in one of `ranges` (sorted, disjoint, below
/// `16^width`), as a trie of digits: leading digits under which every value is in the set
/// share one class, and so do leading digits under which the set is the same. A set with a
/// few holes (every character but the next one of a key) then costs a few alternatives, not
/// one pattern per range.
fn hex_set(ranges: &[(u32, u32)], width: u32) -> Hir {
    if width == 0 {
        return Hir::empty();
    }
    let span = 1u32 << (4 * (width - 1));
    // Per leading digit: the set below it, as ranges relative to the digit's block.
    let mut below: Vec<Vec<(u32, u32)>> = vec![Vec::new(); 16];
    for &(lo, hi) in ranges {
        for digit in lo / span..=hi / span {
            let start = digit * span;
            let from = lo.max(start) - start;
            let to = hi.min(start + span - 1) - start;
            below[digit as usize].push((from, to));
        }
    }
    // Leading digits grouped by the set below them (kept as the group's first digit), in
    // order of their first digit.
    let mut groups: Vec<(Vec<u32>, usize)> = Vec::new();
    for (digit, rest) in below.iter().enumerate() {
        if rest.is_empty() {
            continue;
        }
        match groups.iter_mut().find(|(_, first)| below[*first] == *rest) {
            Some((digits, _)) => digits.push(digit as u32),
            None => groups.push((vec![digit as u32], digit)),
        }
    }
    let alts = groups
        .into_iter()
        .map(|(digits, first)| {
            let rest = below[first].as_slice();
            let first = hex_digits(&digits);
            let full = rest == [(0, span - 1)];
            let tail = if full {
                Hir::repetition(Repetition {
                    min: width - 1,
                    max: Some(width - 1),
                    greedy: true,
                    sub: Box::new(hex_digit(0, 15)),
                })
            } else {
                hex_set(rest, width - 1)
            };
            Hir::concat(vec![first, tail])
        })
        .collect();
    alternation(alts)
}

/// One hexadecimal digit with one of the values `digits` (increasing), either case.
fn hex_digits(digits: &[u32]) -> Hir {
    let mut ranges: Vec<(u32, u32)> = Vec::new();
    for &d in digits {
        match ranges.last_mut() {
            Some(last) if last.1 + 1 == d => last.1 = d,
            _ => ranges.push((d, d)),
        }
    }
    let mut bytes = Vec::new();
    for (lo, hi) in ranges {
        if lo <= 9 {
            bytes.push(ClassBytesRange::new(
                b'0' + lo as u8,
                b'0' + hi.min(9) as u8,
            ));
        }
        if hi >= 10 {
            let (a, b) = (lo.max(10) - 10, hi - 10);
            bytes.push(ClassBytesRange::new(b'a' + a as u8, b'a' + b as u8));
            bytes.push(ClassBytesRange::new(b'A' + a as u8, b'A' + b as u8));
        }
    }
    Hir::class(Class::Bytes(ClassBytes::new(bytes)))
}

/// `u` + high surrogate + `\u` + low surrogate, for the astral characters `lo..=hi`.
fn surrogate_pairs(lo: u32, hi: u32, out: &mut Vec<Hir>) {
    let split = |c: u32| {
        (
            0xD800 + ((c - 0x10000) >> 10),
            0xDC00 + ((c - 0x10000) & 0x3FF),
        )
    };
    let (h1, l1) = split(lo);
    let (h2, l2) = split(hi);
    let mut pair = |h_lo: u32, h_hi: u32, l_lo: u32, l_hi: u32| {
        out.push(Hir::concat(vec![
            Hir::literal(*b"u"),
            hex_set(&[(h_lo, h_hi)], 4),
            Hir::literal(*b"\\u"),
            hex_set(&[(l_lo, l_hi)], 4),
        ]));
    };
    if h1 == h2 {
        pair(h1, h1, l1, l2);
        return;
    }
    let (mut first_full, mut last_full) = (h1, h2);
    if l1 != 0xDC00 {
        pair(h1, h1, l1, 0xDFFF);
        first_full = h1 + 1;
    }
    if l2 != 0xDFFF {
        pair(h2, h2, 0xDC00, l2);
        last_full = h2 - 1;
    }
    if first_full <= last_full {
        pair(first_full, last_full, 0xDC00, 0xDFFF);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spelling_stops_when_the_deadline_has_passed() {
        let re = Re::literal("ab");
        assert!(full_match(encode_any(&re), "ab"));
        let late = crate::deadline::Guard::install(Some(std::time::Duration::ZERO));
        assert!(!full_match(encode_any(&re), "ab"), "cut short");
        drop(late);
        assert!(full_match(encode_any(&re), "ab"));
    }

    fn full_match(hir: Hir, text: &str) -> bool {
        let hir = Hir::concat(vec![
            Hir::look(regex_syntax::hir::Look::Start),
            hir,
            Hir::look(regex_syntax::hir::Look::End),
        ]);
        regex_automata::meta::Regex::builder()
            .syntax(regex_automata::util::syntax::Config::new().utf8(false))
            .build_from_hir(&hir)
            .expect("builds")
            .is_match(text)
    }

    #[test]
    fn hex_sets_match_exactly_their_values_in_either_case() {
        let sets: [&[(u32, u32)]; 5] = [
            &[(0, 0x60), (0x62, 0xD7FF), (0xE000, 0xFFFF)],
            &[(0, 0xFFFF)],
            &[(0x41, 0x41)],
            &[(0x20, 0x21), (0x23, 0x5B), (0x5D, 0xD7FF), (0xE000, 0xFFFD)],
            &[(0x0100, 0x01FF), (0x0300, 0x03FF), (0xD800, 0xDBFF)],
        ];
        for ranges in sets {
            let re = regex_automata::meta::Regex::builder()
                .syntax(regex_automata::util::syntax::Config::new().utf8(false))
                .build_from_hir(&Hir::concat(vec![
                    Hir::look(regex_syntax::hir::Look::Start),
                    hex_set(ranges, 4),
                    Hir::look(regex_syntax::hir::Look::End),
                ]))
                .expect("builds");
            for v in 0..=0xFFFFu32 {
                let inside = ranges.iter().any(|&(lo, hi)| lo <= v && v <= hi);
                for text in [format!("{v:04x}"), format!("{v:04X}")] {
                    assert_eq!(re.is_match(&text), inside, "{ranges:x?}: {text}");
                }
            }
            assert!(!re.is_match("12345") && !re.is_match("123") && !re.is_match("12g4"));
        }
    }

    #[test]
    fn every_spelling_of_a_character() {
        let any = Re::repeat(Re::any_char(), 0, None);
        for text in [
            "plain",
            "\\\"",
            "\\\\",
            "\\/",
            "\\b\\f\\n\\r\\t",
            "\\u00e9",
            "\\u00E9",
            "é",
            "😀",
            "\\ud83d\\ude00",
            "\\uD83D\\uDE00",
            "\\u0000",
        ] {
            assert!(full_match(encode_any(&any), text), "{text}");
        }
        for text in [
            "\"", "\\", "\\x", "\\ud83d", "\\ude00", "\\u12", "\n", "\u{1f}",
        ] {
            assert!(!full_match(encode_any(&any), text), "{text}");
        }
    }

    #[test]
    fn classes_map_to_their_escapes() {
        let digits = Re::repeat(Re::class(CharSet::from_ranges([(0x30, 0x39)])), 1, None);
        assert!(full_match(encode_any(&digits), "12\\u0033"));
        assert!(!full_match(encode_any(&digits), "12\\u0041"));
        let astral = Re::class(CharSet::from_ranges([(0x1F600, 0x1F64F)]));
        assert!(full_match(encode_any(&astral), "\\ud83d\\ude4f"));
        assert!(!full_match(encode_any(&astral), "\\ud83d\\ude50"));
        let quote = Re::literal("a\"b");
        assert!(full_match(encode_any(&quote), "a\\\"b"));
        assert!(full_match(encode_any(&quote), "a\\u0022b"));
        assert!(!full_match(encode_any(&quote), "a\"b"));
    }

    #[test]
    fn canonical_classes_spell_every_character_as_python_does() {
        let sets = [
            CharSet::from_ranges([(0, 0x7F)]),
            CharSet::from_ranges([(0, 0x1F)]),
            CharSet::from_ranges([(0x0B, 0x0B), (0x1E, 0x22), (0x5C, 0x5C)]),
        ];
        for set in sets {
            let class = Re::class(set.clone());
            for c in 0..=0x7Fu32 {
                let c = char::from_u32(c).expect("ASCII");
                let canonical = canonical_text(&c.to_string());
                assert_eq!(
                    full_match(encode_canonical(&class), &canonical),
                    set.contains(c),
                    "{set:?}: {canonical}"
                );
                if canonical.starts_with("\\u") {
                    let upper = canonical.to_uppercase().replacen("\\U", "\\u", 1);
                    if upper != canonical {
                        assert!(!full_match(encode_canonical(&class), &upper), "{upper}");
                    }
                }
            }
            assert!(!full_match(encode_canonical(&class), "\\u0061"));
        }
    }

    #[test]
    fn canonical_spelling_is_python_like() {
        assert_eq!(canonical_text("a\"\n\u{1}é"), "a\\\"\\n\\u0001é");
        assert!(full_match(encode_canonical(&Re::literal("x/y")), "x/y"));
        assert!(!full_match(encode_canonical(&Re::literal("x/y")), "x\\/y"));
    }
}
