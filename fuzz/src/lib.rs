//! What the fuzz targets share: a small fixed vocabulary, budgets small enough that a slow
//! input ends in a clean error well inside libFuzzer's one-second timeout, generators of
//! small regular expressions and JSON Schemas from the keyword vocabulary, and the
//! brute-force mask oracle.

pub mod targets;

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use arbitrary::{Arbitrary, Unstructured};
use constrain_engine::{CompiledGrammar, Grammar, Limits, MatchError, Matcher, TokenIndex};
use constrain_vocab::{TokenKind, Vocabulary};
use serde_json::{json, Map, Value};

/// Wall-clock budget of one compilation inside a target: a fifth of libFuzzer's `-timeout=1`,
/// since sanitizer builds run several times slower and a target may compile twice.
pub const COMPILE_TIME: Duration = Duration::from_millis(200);

/// Engine budgets scaled down so that one input stays far below `-rss_limit_mb=2048`.
pub fn limits() -> Limits {
    Limits {
        max_terminal_nfa_bytes: 8 << 20,
        max_total_nfa_bytes: 32 << 20,
        max_inline_size: 20_000,
        max_lexer_states: 20_000,
        max_rows: 50_000,
        max_items_per_row: 20_000,
        max_states: 100_000,
        mask_cache_bytes: 8 << 20,
        max_grammar_size: 200_000,
        max_compile_time: Some(COMPILE_TIME),
        ..Limits::default()
    }
}

/// Multi-byte pieces of the fixed vocabulary: JSON punctuation runs, words, a split UTF-8
/// character (`é` as two tokens, and the three bytes of `€` in two), and whitespace.
const PIECES: &[&[u8]] = &[
    b"{\"",
    b"\":",
    b"\",",
    b"\"}",
    b"[\"",
    b"\"]",
    b"true",
    b"false",
    b"null",
    b"tru",
    b"e,",
    b"12",
    b"3.",
    b".5",
    b"e1",
    b"-1",
    b"0.",
    b"  ",
    b"\n  ",
    b"ab",
    b"abc",
    b"name",
    b"age",
    b"\\u00",
    b"\\n",
    b"\xc3",
    b"\xa9",
    b"\xe2\x82",
    b"\xac",
    "é".as_bytes(),
    "日本".as_bytes(),
    b"\xf0\x9f",
    b"\x98\x80",
    b"::=",
    b"a{",
    b"}}",
    b"{}",
    b"[]",
    b"\"\"",
    b"0",
    b"00",
];

/// The id of the end-of-sequence token of [`vocabulary`].
pub fn eos_id() -> u32 {
    (256 + PIECES.len()) as u32
}

/// Every byte as a token, a few dozen multi-byte pieces, and `</s>` last: small enough that
/// the oracle can check every token at every step.
pub fn vocabulary() -> Arc<Vocabulary> {
    static VOCAB: OnceLock<Arc<Vocabulary>> = OnceLock::new();
    VOCAB
        .get_or_init(|| {
            let bytes = (0..=255u8).map(|b| (u32::from(b), vec![b], TokenKind::Text));
            let pieces = PIECES
                .iter()
                .enumerate()
                .map(|(i, p)| (256 + i as u32, p.to_vec(), TokenKind::Text));
            let eos = std::iter::once((eos_id(), b"</s>".to_vec(), TokenKind::EndOfSequence));
            Arc::new(
                Vocabulary::from_tokens(bytes.chain(pieces).chain(eos))
                    .expect("the fuzz vocabulary is well formed"),
            )
        })
        .clone()
}

/// The token index of [`vocabulary`], built once per process.
pub fn index() -> Arc<TokenIndex> {
    static INDEX: OnceLock<Arc<TokenIndex>> = OnceLock::new();
    INDEX.get_or_init(|| TokenIndex::new(vocabulary())).clone()
}

/// Compiles `grammar` for [`index`] under [`limits`].
pub fn compile(grammar: &Grammar) -> Option<Arc<CompiledGrammar>> {
    CompiledGrammar::new(grammar, index(), limits()).ok()
}

/// Walks a compiled grammar for a few steps, choosing among the allowed tokens with `choices`:
/// masks and forced tokens must never panic, whatever the grammar.
///
/// Shortest completions are left to the `matcher` target, whose grammars are small: the first
/// one compiles every terminal of the grammar, which for a grammar the size of
/// `grammars/c_like.gbnf` takes a second under the sanitizer (a tenth of that without), past
/// libFuzzer's timeout though bounded by the NFA budgets.
pub fn walk(grammar: Arc<CompiledGrammar>, choices: &[u8]) {
    let mut matcher = Matcher::new(grammar.clone());
    let mut mask = vec![0u32; grammar.mask_words()];
    for &choice in choices.iter().take(16) {
        if matcher.fill_mask(&mut mask).is_err() {
            return;
        }
        let allowed = allowed_ids(&mask);
        let _ = matcher.forced_tokens();
        if allowed.is_empty() {
            return;
        }
        let token = allowed[usize::from(choice) % allowed.len()];
        match matcher.accept_token(token) {
            Ok(()) => {}
            // A budget of the lazily built automaton may end any step, as documented.
            Err(MatchError::LimitExceeded { .. }) => return,
            Err(e) => panic!("token {token}, allowed by the mask, is refused: {e}"),
        }
        if matcher.has_ended() {
            return;
        }
    }
}

/// The ids whose bit is set in `mask`.
pub fn allowed_ids(mask: &[u32]) -> Vec<u32> {
    let width = vocabulary().logits_width();
    (0..width as u32)
        .filter(|&t| mask[(t >> 5) as usize] & (1 << (t & 31)) != 0)
        .collect()
}

/// JSON Schema compiler options from fuzz data, every option reachable.
pub fn schema_options(
    u: &mut Unstructured<'_>,
) -> arbitrary::Result<constrain_jsonschema::Options> {
    use constrain_jsonschema::{
        AdditionalProperties, Escapes, Numbers, Options, PropertyOrder, Separators, Whitespace,
    };
    let whitespace = match u.int_in_range(0..=3u8)? {
        0 => Whitespace::Bounded {
            max: u.int_in_range(0..=40)?,
        },
        1 => Whitespace::Unbounded,
        2 => Whitespace::Compact,
        _ => Whitespace::Indented(u.int_in_range(0..=8)?),
    };
    let separators = match u.int_in_range(0..=3u8)? {
        0 => Some(Separators::compact()),
        1 => Some(Separators::python()),
        2 => Some(Separators {
            item: String::arbitrary(u)?.chars().take(4).collect(),
            key: String::arbitrary(u)?.chars().take(4).collect(),
        }),
        _ => None,
    };
    Ok(Options {
        whitespace,
        separators,
        additional_properties: if bool::arbitrary(u)? {
            AdditionalProperties::Strict
        } else {
            AdditionalProperties::Spec
        },
        lenient: bool::arbitrary(u)?,
        property_order: if bool::arbitrary(u)? {
            PropertyOrder::Any
        } else {
            PropertyOrder::Schema
        },
        escapes: if bool::arbitrary(u)? {
            Escapes::Canonical
        } else {
            Escapes::Any
        },
        max_untyped_depth: if bool::arbitrary(u)? {
            u.int_in_range(0..=6)?
        } else {
            u32::MAX
        },
        max_any_order_properties: u.int_in_range(0..=8)?,
        assert_formats: bool::arbitrary(u)?,
        // Drawn last, so the options of earlier inputs stay as they were (`Any` once the
        // bytes run out).
        numbers: if bool::arbitrary(u)? {
            Numbers::Canonical
        } else {
            Numbers::Any
        },
        resources: Default::default(),
    })
}

/// Compiles a schema and walks the grammar: the body of both JSON Schema targets.
pub fn check_schema(schema: &Value, options: &constrain_jsonschema::Options, choices: &[u8]) {
    let Ok(compiled) = constrain_jsonschema::compile_with_limits(schema, options, &limits()) else {
        return;
    };
    if let Some(grammar) = compile(&compiled.grammar) {
        walk(grammar, choices);
    }
}

/// A small regular expression from fuzz data, in the syntax `Grammar::from_regex` reads.
pub fn small_regex(u: &mut Unstructured<'_>, depth: u32) -> arbitrary::Result<String> {
    let leaf = depth == 0 || u.ratio(1, 3)?;
    if leaf {
        return Ok(match u.int_in_range(0..=9u8)? {
            0 => "a".into(),
            1 => "b".into(),
            2 => "[a-c]".into(),
            3 => "[0-9]".into(),
            4 => "é".into(),
            5 => "\"".into(),
            6 => ".".into(),
            7 => "[^a]".into(),
            8 => "\\{".into(),
            _ => " ".into(),
        });
    }
    let a = small_regex(u, depth - 1)?;
    Ok(match u.int_in_range(0..=7u8)? {
        0 => format!("{a}{}", small_regex(u, depth - 1)?),
        1 => format!("(?:{a}|{})", small_regex(u, depth - 1)?),
        2 => format!("(?:{a})*"),
        3 => format!("(?:{a})+"),
        4 => format!("(?:{a})?"),
        5 => {
            let m = u.int_in_range(0..=3u32)?;
            let n = m + u.int_in_range(0..=3u32)?;
            format!("(?:{a}){{{m},{n}}}")
        }
        6 => format!("(?:{a}){{{}}}", u.int_in_range(0..=4u32)?),
        _ => format!("(?:{a}){{{},}}", u.int_in_range(0..=2u32)?),
    })
}

/// A JSON Schema built from the keyword vocabulary: types, properties, required, items,
/// prefixItems, anyOf/oneOf/allOf/not, enum, const, pattern, bounds, `$ref`/`$defs`,
/// additionalProperties, uniqueItems, format, dependentRequired.
pub fn small_schema(u: &mut Unstructured<'_>, depth: u32) -> arbitrary::Result<Value> {
    const TYPES: &[&str] = &[
        "null", "boolean", "integer", "number", "string", "array", "object",
    ];
    const FORMATS: &[&str] = &[
        "date",
        "time",
        "date-time",
        "email",
        "uuid",
        "ipv4",
        "ipv6",
        "uri",
        "duration",
        "hostname",
        "bogus",
    ];
    const NAMES: &[&str] = &["a", "b", "name", "age", "x y", "é", "", "\"q\""];
    if depth == 0 || u.ratio(1, 4)? {
        return Ok(match u.int_in_range(0..=4u8)? {
            0 => Value::Bool(bool::arbitrary(u)?),
            1 => json!({}),
            _ => json!({"type": *u.choose(TYPES)?}),
        });
    }
    let mut s = Map::new();
    let keywords = u.int_in_range(1..=4u8)?;
    for _ in 0..keywords {
        match u.int_in_range(0..=24u8)? {
            0 => {
                s.insert("type".into(), json!(*u.choose(TYPES)?));
            }
            1 => {
                let n = u.int_in_range(1..=3usize)?;
                let types: Vec<&str> = (0..n)
                    .map(|_| u.choose(TYPES).copied())
                    .collect::<Result<_, _>>()?;
                s.insert("type".into(), json!(types));
            }
            2 => {
                let mut props = Map::new();
                for _ in 0..u.int_in_range(0..=3u8)? {
                    props.insert((*u.choose(NAMES)?).into(), small_schema(u, depth - 1)?);
                }
                s.insert("properties".into(), Value::Object(props));
            }
            3 => {
                let n = u.int_in_range(0..=3usize)?;
                let names: Vec<&str> = (0..n)
                    .map(|_| u.choose(NAMES).copied())
                    .collect::<Result<_, _>>()?;
                s.insert("required".into(), json!(names));
            }
            4 => {
                s.insert("items".into(), small_schema(u, depth - 1)?);
            }
            5 => {
                let n = u.int_in_range(1..=3usize)?;
                let items = (0..n)
                    .map(|_| small_schema(u, depth - 1))
                    .collect::<Result<Vec<_>, _>>()?;
                s.insert("prefixItems".into(), Value::Array(items));
            }
            6..=8 => {
                let key = ["anyOf", "oneOf", "allOf"][usize::from(u.int_in_range(0..=2u8)?)];
                let n = u.int_in_range(1..=3usize)?;
                let items = (0..n)
                    .map(|_| small_schema(u, depth - 1))
                    .collect::<Result<Vec<_>, _>>()?;
                s.insert(key.into(), Value::Array(items));
            }
            9 => {
                s.insert("not".into(), small_schema(u, depth - 1)?);
            }
            10 => {
                let n = u.int_in_range(0..=4usize)?;
                let values = (0..n)
                    .map(|_| small_value(u, 2))
                    .collect::<Result<Vec<_>, _>>()?;
                s.insert("enum".into(), Value::Array(values));
            }
            11 => {
                s.insert("const".into(), small_value(u, 2)?);
            }
            12 => {
                s.insert("pattern".into(), json!(small_regex(u, 3)?));
            }
            13 => {
                let key = *u.choose(&[
                    "minimum",
                    "maximum",
                    "exclusiveMinimum",
                    "exclusiveMaximum",
                    "multipleOf",
                ])?;
                s.insert(key.into(), number(u)?);
            }
            14 => {
                let key = *u.choose(&[
                    "minLength",
                    "maxLength",
                    "minItems",
                    "maxItems",
                    "minProperties",
                    "maxProperties",
                    "minContains",
                    "maxContains",
                ])?;
                s.insert(key.into(), json!(u.int_in_range(0..=5u32)?));
            }
            15 => {
                let mut defs = Map::new();
                for _ in 0..u.int_in_range(1..=2u8)? {
                    defs.insert(
                        (*u.choose(&["d", "e"])?).into(),
                        small_schema(u, depth - 1)?,
                    );
                }
                s.insert("$defs".into(), Value::Object(defs));
            }
            16 => {
                let target = *u.choose(&[
                    "#",
                    "#/$defs/d",
                    "#/$defs/e",
                    "#/properties/a",
                    "#/nowhere",
                    "other.json",
                ])?;
                s.insert("$ref".into(), json!(target));
            }
            17 => {
                s.insert("additionalProperties".into(), small_schema(u, depth - 1)?);
            }
            18 => {
                s.insert("uniqueItems".into(), json!(bool::arbitrary(u)?));
            }
            19 => {
                s.insert("format".into(), json!(*u.choose(FORMATS)?));
            }
            20 => {
                s.insert("contains".into(), small_schema(u, depth - 1)?);
            }
            21 => {
                let mut props = Map::new();
                props.insert(small_regex(u, 2)?, small_schema(u, depth - 1)?);
                s.insert("patternProperties".into(), Value::Object(props));
            }
            22 => {
                s.insert("propertyNames".into(), small_schema(u, depth - 1)?);
            }
            23 => {
                let a = *u.choose(NAMES)?;
                let b = *u.choose(NAMES)?;
                s.insert("dependentRequired".into(), json!({a: [b]}));
            }
            _ => {
                s.insert("if".into(), small_schema(u, depth - 1)?);
                s.insert("then".into(), small_schema(u, depth - 1)?);
                if bool::arbitrary(u)? {
                    s.insert("else".into(), small_schema(u, depth - 1)?);
                }
            }
        }
    }
    Ok(Value::Object(s))
}

fn number(u: &mut Unstructured<'_>) -> arbitrary::Result<Value> {
    Ok(match u.int_in_range(0..=3u8)? {
        0 => json!(u.int_in_range(-20..=20i64)?),
        1 => json!(f64::from(u.int_in_range(-200..=200i32)?) / 8.0),
        2 => json!(i64::arbitrary(u)?),
        _ => json!(0.1),
    })
}

/// A small JSON value, for `enum` and `const`.
pub fn small_value(u: &mut Unstructured<'_>, depth: u32) -> arbitrary::Result<Value> {
    let leaf = depth == 0 || u.ratio(2, 3)?;
    if leaf {
        return Ok(match u.int_in_range(0..=4u8)? {
            0 => Value::Null,
            1 => json!(bool::arbitrary(u)?),
            2 => number(u)?,
            _ => json!(String::arbitrary(u)?.chars().take(6).collect::<String>()),
        });
    }
    Ok(if bool::arbitrary(u)? {
        let n = u.int_in_range(0..=3usize)?;
        Value::Array(
            (0..n)
                .map(|_| small_value(u, depth - 1))
                .collect::<Result<_, _>>()?,
        )
    } else {
        let mut m = Map::new();
        for _ in 0..u.int_in_range(0..=2u8)? {
            m.insert(
                String::arbitrary(u)?.chars().take(3).collect(),
                small_value(u, depth - 1)?,
            );
        }
        Value::Object(m)
    })
}

/// The brute-force oracle: whether `text` is a prefix of the grammar's language, asked of a
/// separately compiled copy of the grammar through `accept_bytes` (the byte path, not the
/// mask path), and whether it is in the language.
pub struct ByteOracle {
    grammar: Arc<CompiledGrammar>,
}

impl ByteOracle {
    /// An oracle over an independent compilation of `grammar`.
    pub fn new(grammar: &Grammar) -> Option<ByteOracle> {
        Some(ByteOracle {
            grammar: compile(grammar)?,
        })
    }

    /// A matcher of the oracle's copy that has read `text`, or `None` when `text` is not a
    /// prefix: checking each token from it costs the token's bytes, not the whole text's.
    /// An error when the oracle's own budget ran out (it then knows nothing).
    pub fn after(&self, text: &[u8]) -> Result<Option<Matcher>, MatchError> {
        let mut m = Matcher::new(self.grammar.clone());
        if text.is_empty() {
            return Ok(Some(m));
        }
        match m.accept_bytes(text) {
            Ok(()) => Ok(Some(m)),
            Err(e @ MatchError::LimitExceeded { .. }) => Err(e),
            Err(_) => Ok(None),
        }
    }
}

/// An oracle that knows nothing of the engine: `regex-automata`'s dense DFA of the pattern,
/// anchored. Its matches are delayed by one byte (a state is a match state when a match ended
/// just before the byte that led to it), so "not dead" is not "a prefix": the oracle instead
/// marks, once, every state from which a state whose end-of-input transition matches can be
/// reached, and a text is a prefix of the language iff it leads to a marked state.
pub struct RegexOracle {
    dfa: regex_automata::dfa::dense::DFA<Vec<u32>>,
    start: regex_automata::util::primitives::StateID,
    live: std::collections::HashSet<regex_automata::util::primitives::StateID>,
}

impl RegexOracle {
    /// The oracle of `pattern`, or `None` when `regex-automata` cannot build it small.
    pub fn new(pattern: &str) -> Option<RegexOracle> {
        use regex_automata::dfa::{dense, Automaton, StartKind};
        use regex_automata::nfa::thompson;
        use regex_automata::util::start;
        use std::collections::{HashMap, HashSet};
        let dfa = dense::Builder::new()
            .configure(
                dense::Config::new()
                    // Every match, not the leftmost-first one: under leftmost-first a
                    // higher-priority branch that matches drops the others, so `""` would not
                    // be a prefix of `(?:[a-c]?|[^a])"`.
                    .match_kind(regex_automata::MatchKind::All)
                    .start_kind(StartKind::Anchored)
                    .dfa_size_limit(Some(4 << 20))
                    .determinize_size_limit(Some(4 << 20)),
            )
            .thompson(thompson::Config::new().utf8(false))
            .syntax(regex_automata::util::syntax::Config::new().utf8(false))
            .build(pattern)
            .ok()?;
        let config = start::Config::new().anchored(regex_automata::Anchored::Yes);
        let start = dfa.start_state(&config).ok()?;
        // Every state reachable from the start, with the states that lead to it.
        let mut preds: HashMap<_, Vec<_>> = HashMap::new();
        let mut seen = HashSet::from([start]);
        let mut todo = vec![start];
        while let Some(s) = todo.pop() {
            for b in 0..=255u8 {
                let t = dfa.next_state(s, b);
                preds.entry(t).or_default().push(s);
                if seen.insert(t) {
                    todo.push(t);
                }
            }
        }
        let mut live: HashSet<_> = seen
            .iter()
            .copied()
            .filter(|&s| !dfa.is_dead_state(s) && dfa.is_match_state(dfa.next_eoi_state(s)))
            .collect();
        let mut todo: Vec<_> = live.iter().copied().collect();
        while let Some(s) = todo.pop() {
            for &p in preds.get(&s).into_iter().flatten() {
                if live.insert(p) {
                    todo.push(p);
                }
            }
        }
        Some(RegexOracle { dfa, start, live })
    }

    /// As [`ByteOracle::prefix`].
    pub fn prefix(&self, text: &[u8]) -> Option<bool> {
        use regex_automata::dfa::Automaton;
        let mut state = self.start;
        for &b in text {
            state = self.dfa.next_state(state, b);
        }
        if !self.live.contains(&state) {
            return None;
        }
        Some(self.dfa.is_match_state(self.dfa.next_eoi_state(state)))
    }
}
