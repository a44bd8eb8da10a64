//! Grammars and vocabularies shared by the engine's tests.

#![allow(dead_code)]

use std::sync::Arc;

use constrain_engine::{
    CompiledGrammar, Expr, Grammar, GrammarBuilder, GraphState, Limits, Matcher, RegexGraph,
    TokenIndex, Unordered, UnorderedMember,
};
use constrain_vocab::{TokenKind, Vocabulary};
use regex_syntax::hir::{Class, ClassBytes, ClassBytesRange, Hir};
use rustc_hash::FxHashMap;

/// The 256 single bytes as tokens 0..=255, and end-of-sequence as 256.
pub fn byte_vocab() -> Arc<Vocabulary> {
    constrain_testdata::byte_vocabulary()
}

/// A small vocabulary of words and fragments, with an end token, a special token and padding.
pub fn word_vocab() -> Arc<Vocabulary> {
    let mut words: Vec<Vec<u8>> = Vec::new();
    for b in 0x20..0x7fu8 {
        words.push(vec![b]);
    }
    for w in [
        "{",
        "}",
        "[",
        "]",
        "\"",
        "\":",
        "\",",
        "{\"",
        "\"}",
        "\"]",
        "[\"",
        "true",
        "false",
        "null",
        "tru",
        "e,",
        "12",
        "3.",
        ".5",
        "e1",
        "-1",
        "0.",
        "  ",
        "\n",
        "\n  ",
        ", ",
        ": ",
        "abc",
        "name",
        "\"name",
        "name\"",
        "\":\"",
        "\\n",
        "\\u00",
        "é",
        "日本",
        "\u{1F600}",
        "a\"b",
        "},{",
        "]]",
        "[[",
        "x",
        "xy",
        "xyz",
        "yes",
        "no",
    ] {
        words.push(w.as_bytes().to_vec());
    }
    words.push(vec![0xC3]); // half of "é"
    words.push(vec![0xA9]); // the other half
    let mut tokens: Vec<(u32, Vec<u8>, TokenKind)> = words
        .into_iter()
        .enumerate()
        .map(|(i, w)| (i as u32, w, TokenKind::Text))
        .collect();
    let n = tokens.len() as u32;
    tokens.push((n, b"<eos>".to_vec(), TokenKind::EndOfSequence));
    tokens.push((n + 1, b"<tool>".to_vec(), TokenKind::Special));
    tokens.push((n + 2, b"<eot>".to_vec(), TokenKind::EndOfSequence));
    let vocab = Vocabulary::from_tokens(tokens).expect("valid vocabulary");
    let width = vocab.len() + 21;
    Arc::new(vocab.with_logits_width(width).expect("wider logits"))
}

pub fn compile(grammar: &Grammar, vocab: &Arc<Vocabulary>) -> Arc<CompiledGrammar> {
    CompiledGrammar::new(grammar, TokenIndex::new(vocab.clone()), Limits::default())
        .expect("grammar compiles")
}

/// Whether `text` is a complete sentence of `grammar`.
pub fn accepts(grammar: &Arc<CompiledGrammar>, text: &[u8]) -> bool {
    let mut m = Matcher::new(grammar.clone());
    m.accept_bytes(text).is_ok() && m.is_accepting()
}

/// Whether `text` is a prefix of some sentence of `grammar`.
pub fn viable(grammar: &Arc<CompiledGrammar>, text: &[u8]) -> bool {
    Matcher::new(grammar.clone()).accept_bytes(text).is_ok()
}

fn lit(s: &str) -> Expr {
    Expr::literal(s)
}

fn re(p: &str) -> Expr {
    Expr::regex(p).expect("valid regex")
}

/// JSON (RFC 8259) with whitespace bounded to at most 4 characters between tokens.
pub fn json_grammar() -> Grammar {
    let mut b = GrammarBuilder::new();
    let value = b.rule_id("value");
    let ws = re(r"[ \t\n\r]{0,4}");
    let string = re(r#""([^"\\\x00-\x1F]|\\["\\/bfnrt]|\\u[0-9a-fA-F]{4})*""#);
    let number = re(r"-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][-+]?[0-9]+)?");
    let member = Expr::seq(vec![
        ws.clone(),
        string.clone(),
        ws.clone(),
        lit(":"),
        Expr::rule(value),
    ]);
    let object = Expr::seq(vec![
        lit("{"),
        Expr::alt(vec![
            ws.clone(),
            Expr::seq(vec![
                member.clone(),
                Expr::seq(vec![lit(","), member]).star(),
            ]),
        ]),
        lit("}"),
    ]);
    let array = Expr::seq(vec![
        lit("["),
        Expr::alt(vec![
            ws.clone(),
            Expr::seq(vec![
                Expr::rule(value),
                Expr::seq(vec![lit(","), Expr::rule(value)]).star(),
            ]),
        ]),
        lit("]"),
    ]);
    let scalar = Expr::alt(vec![string, number, lit("true"), lit("false"), lit("null")]);
    b.define(
        value,
        Expr::seq(vec![ws.clone(), Expr::alt(vec![object, array, scalar]), ws]),
    )
    .expect("defined once");
    b.build(value).expect("valid grammar")
}

/// Arithmetic with precedence, written with left recursion.
pub fn arithmetic_grammar() -> Grammar {
    let mut b = GrammarBuilder::new();
    let expr = b.rule_id("expr");
    let term = b.rule_id("term");
    let factor = b.rule_id("factor");
    b.define(
        expr,
        Expr::alt(vec![
            Expr::seq(vec![Expr::rule(expr), re("[-+]"), Expr::rule(term)]),
            Expr::rule(term),
        ]),
    )
    .expect("defined once");
    b.define(
        term,
        Expr::alt(vec![
            Expr::seq(vec![Expr::rule(term), re("[*/]"), Expr::rule(factor)]),
            Expr::rule(factor),
        ]),
    )
    .expect("defined once");
    b.define(
        factor,
        Expr::alt(vec![
            re("[0-9]+"),
            Expr::seq(vec![lit("("), Expr::rule(expr), lit(")")]),
        ]),
    )
    .expect("defined once");
    b.build(expr).expect("valid grammar")
}

/// A tool-call wrapper: free text, then `<tool>` and a JSON object.
pub fn tool_grammar(tool_token: u32) -> Grammar {
    let json = json_grammar();
    let mut b = GrammarBuilder::new();
    // Re-create the JSON value rule inside this builder by name.
    let value = b.rule_id("value");
    b.define(value, json.rule_body(json.start()).clone())
        .expect("defined once");
    let root = b
        .add_rule(
            "root",
            Expr::seq(vec![
                re("[a-z ]{0,12}"),
                Expr::token(tool_token),
                Expr::rule(value),
            ]),
        )
        .expect("defined once");
    b.build(root).expect("valid grammar")
}

/// A flat record of string, number and optional fields: string bodies in several members, whose
/// lexer states share their lexeme masks when their futures are alike.
pub fn record_grammar() -> Grammar {
    let string = re(r#""([^"\\\x00-\x1F]|\\["\\/bfnrt])*""#);
    let number = re(r"-?(0|[1-9][0-9]*)(\.[0-9]+)?");
    let record = Expr::seq(vec![
        lit("{"),
        member("name", &string),
        lit(", "),
        member("city", &string),
        Expr::seq(vec![lit(", "), member("age", &number)]).repeat(0, Some(1)),
        Expr::seq(vec![lit(", "), member("note", &string)]).repeat(0, Some(1)),
        lit("}"),
    ]);
    single_rule(record)
}

/// Members whose values repeat (long counted strings, which compile in two pieces and share
/// one NFA, so their lexeme walks are shared) and values that only some text keeps alive:
/// identifiers, and text without spaces.
pub fn shared_values_grammar() -> Grammar {
    let long = re(r#""[^"\\\x00-\x1F]{0,300}""#);
    let ident = re(r#""[A-Za-z0-9_.-]{1,40}""#);
    let word = re(r#""[^ "\\\x00-\x1F]{1,50}""#);
    let record = Expr::seq(vec![
        lit("{"),
        member("name", &long),
        lit(", "),
        member("city", &long),
        lit(", "),
        member("id", &ident),
        lit(", "),
        member("code", &ident),
        lit(", "),
        member("tag", &word),
        Expr::seq(vec![lit(", "), member("note", &long)]).repeat(0, Some(1)),
        lit("}"),
    ]);
    single_rule(record)
}

/// Items whose value is the literal `"enum"` with the space before it in one lexeme, or a
/// space and then a string of up to 40 characters as a graph (which no expression next to
/// it joins): after `: "`, two lexemes begun at different bytes are in flight, one of them
/// reading string characters for long without being free in them.
pub fn scans_apart_grammar() -> Grammar {
    let labels = vec![
        Hir::literal(*b"\""),
        regex_syntax::parse(r#"[^"\\\x00-\x1F]"#).expect("a valid class"),
    ];
    let (quote, char) = (0, 1);
    let states = vec![
        GraphState {
            edges: vec![(quote, 1)],
            accepting: false,
        },
        GraphState {
            edges: vec![(char, 1), (quote, 2)],
            accepting: false,
        },
        GraphState {
            edges: Vec::new(),
            accepting: true,
        },
    ];
    let string = RegexGraph::new(labels, states)
        .and_then(|g| g.with_edge_bounds(2, 42))
        .expect("a valid graph");
    let value = Expr::alt(vec![
        re(r#" "enum""#),
        Expr::seq(vec![lit(" "), Expr::graph(string)]),
    ]);
    let item = Expr::seq(vec![lit("{\"kind\":"), value, lit("}")]);
    single_rule(Expr::seq(vec![
        lit("["),
        item.clone(),
        Expr::seq(vec![lit(", "), item]).repeat(0, Some(3)),
        lit("]"),
    ]))
}

/// `"key": value`.
fn member(key: &str, value: &Expr) -> Expr {
    Expr::seq(vec![lit(&format!("\"{key}\": ")), value.clone()])
}

/// The grammar whose only rule is `body`.
fn single_rule(body: Expr) -> Grammar {
    let mut b = GrammarBuilder::new();
    let root = b.rule_id("root");
    b.define(root, body).expect("defines the root");
    b.build(root).expect("the grammar builds")
}

/// The record of [`record_grammar`] with its members in any order (`name` and `city`
/// required), and any number of `"x": number` members among them.
pub fn unordered_record_grammar() -> Grammar {
    let string = re(r#""([^"\\\x00-\x1F]|\\["\\/bfnrt])*""#);
    let number = re(r"-?(0|[1-9][0-9]*)(\.[0-9]+)?");
    let member = |key: &str, value: &Expr, required: bool| UnorderedMember {
        expr: member(key, value),
        required,
    };
    let body = Expr::unordered(Unordered {
        members: vec![
            member("name", &string, true),
            member("city", &string, true),
            member("age", &number, false),
            member("note", &string, false),
        ],
        extra: Some(member("x", &number, false).expr),
        separator: lit(", "),
        allow_empty: false,
    });
    single_rule(Expr::seq(vec![lit("{"), body, lit("}")]))
}

/// Two records in any order whose `name` values are read by two lexemes at once: any
/// string in one, from 3 to 12 letters and spaces in the other (with a `tag` member).
/// Inside the name, the state holds a scan of each.
pub fn two_records_grammar() -> Grammar {
    let any_string = re(r#""([^"\\\x00-\x1F]|\\["\\/bfnrt])*""#);
    let short = re(r#""[a-z ]{3,12}""#);
    let record = |name: &Expr, other: (&str, Expr)| {
        Expr::seq(vec![
            lit("{"),
            Expr::unordered(Unordered {
                members: vec![
                    UnorderedMember {
                        expr: member("name", name),
                        required: true,
                    },
                    UnorderedMember {
                        expr: member(other.0, &other.1),
                        required: false,
                    },
                ],
                extra: None,
                separator: lit(", "),
                allow_empty: false,
            }),
            lit("}"),
        ])
    };
    single_rule(Expr::alt(vec![
        record(&any_string, ("id", re("[0-9]{1,4}"))),
        record(&short, ("tag", re("[a-z]{1,6}"))),
    ]))
}

/// Longest body of the words strings of [`words_graph_grammar`].
pub const WORDS_MAX_LEN: usize = 10;
/// Most words in such a body.
pub const WORDS_MAX_COUNT: usize = 3;

/// The edge labels of the words graphs, and the indices of the quote, a letter and the space.
fn words_labels() -> (Vec<Hir>, (u32, u32, u32)) {
    let letter = ClassBytes::new([ClassBytesRange::new(b'a', b'z')]);
    let labels = vec![
        Hir::literal(*b"\""),
        Hir::class(Class::Bytes(letter)),
        Hir::literal(*b" "),
    ];
    (labels, (0, 1, 2))
}

/// `{"w": "..."}` where the string holds 1 to [`WORDS_MAX_COUNT`] words of `[a-z]` joined by
/// single spaces, at most [`WORDS_MAX_LEN`] characters: the string as a [`RegexGraph`] with a
/// state per (length, words, inside a word), the product a pattern with a length bound makes.
/// Some states are dead ends (a space with no room left for a word).
pub fn words_graph_grammar() -> Grammar {
    // States: 0 before the opening quote, 1 after it, then one per (length, words, inside a
    // word), and `closed` after the closing quote.
    let (labels, (quote, letter, space)) = words_labels();
    let mut ids: FxHashMap<(usize, usize, bool), u32> = FxHashMap::default();
    let mut states = vec![
        GraphState {
            edges: vec![(quote, 1)],
            accepting: false,
        },
        GraphState::default(),
        GraphState {
            edges: Vec::new(),
            accepting: true,
        },
    ];
    let closed = 2u32;
    let mut queue = vec![(1u32, (0usize, 0usize, false))];
    while let Some((at, (len, words, inside))) = queue.pop() {
        let mut next = |key: (usize, usize, bool), states: &mut Vec<GraphState>| {
            *ids.entry(key).or_insert_with(|| {
                states.push(GraphState::default());
                let id = states.len() as u32 - 1;
                queue.push((id, key));
                id
            })
        };
        let mut edges = Vec::new();
        if len < WORDS_MAX_LEN {
            if inside {
                edges.push((letter, next((len + 1, words, true), &mut states)));
                edges.push((space, next((len + 1, words, false), &mut states)));
            } else if words < WORDS_MAX_COUNT {
                edges.push((letter, next((len + 1, words + 1, true), &mut states)));
            }
        }
        if inside {
            edges.push((quote, closed));
        }
        states[at as usize].edges = edges;
    }
    let graph = RegexGraph::new(labels, states).expect("a valid graph");
    single_rule(Expr::seq(vec![
        lit("{\"w\": "),
        Expr::graph(graph),
        lit("}"),
    ]))
}

/// [`words_graph_grammar`]'s language from the words pattern's own few states, the length
/// bound left to the lexer as a bound on the edges a path takes (a character or a quote each).
pub fn counted_words_graph_grammar() -> Grammar {
    let (labels, (quote, letter, space)) = words_labels();
    // 0 before the opening quote, 1 after it, `2 + 2 (k - 1)` inside word `k`, the state
    // after it `+ 1` after the space that follows it, and `closed` after the closing quote.
    let closed = 2 + 2 * WORDS_MAX_COUNT as u32;
    let inside = |k: u32| 2 + 2 * (k - 1);
    let mut states = vec![GraphState::default(); closed as usize + 1];
    states[0].edges = vec![(quote, 1)];
    states[1].edges = vec![(letter, inside(1))];
    for k in 1..=WORDS_MAX_COUNT as u32 {
        let mut edges = vec![(letter, inside(k)), (quote, closed)];
        if k < WORDS_MAX_COUNT as u32 {
            edges.push((space, inside(k) + 1));
            states[inside(k) as usize + 1].edges = vec![(letter, inside(k + 1))];
        }
        states[inside(k) as usize].edges = edges;
    }
    states[closed as usize].accepting = true;
    let graph = RegexGraph::new(labels, states)
        .and_then(|g| g.with_edge_bounds(2, WORDS_MAX_LEN as u32 + 2))
        .expect("a valid graph");
    single_rule(Expr::seq(vec![
        lit("{\"w\": "),
        Expr::graph(graph),
        lit("}"),
    ]))
}

/// The language of [`words_graph_grammar`] as one regular expression: every split of the
/// length budget among the words, spelled out.
pub fn words_regex_grammar() -> Grammar {
    fn splits(words: usize, room: usize, prefix: &mut Vec<usize>, out: &mut Vec<String>) {
        if words == 0 {
            let parts: Vec<String> = prefix.iter().map(|n| format!("[a-z]{{{n}}}")).collect();
            out.push(parts.join(" "));
            return;
        }
        for n in 1..=room {
            let rest = room - n;
            if words > 1 && rest < 2 {
                break;
            }
            prefix.push(n);
            splits(words - 1, rest.saturating_sub(1), prefix, out);
            prefix.pop();
        }
    }
    let mut bodies = Vec::new();
    for words in 1..=WORDS_MAX_COUNT {
        splits(words, WORDS_MAX_LEN, &mut Vec::new(), &mut bodies);
    }
    single_rule(Expr::seq(vec![
        lit("{\"w\": "),
        re(&format!("\"({})\"", bodies.join("|"))),
        lit("}"),
    ]))
}

/// `{"s": "..."}` where the string holds `min` to `max` printable ASCII characters (no quote
/// or backslash), ending in `ending` (a literal the count takes as one character), as a graph
/// of three states whose length bound is left to the lexer: a long counted body, short of
/// its fewest characters, near its most, and far from both.
pub fn counted_string_graph_grammar(min: u32, max: u32, ending: &str) -> Grammar {
    let text = ClassBytes::new([
        ClassBytesRange::new(b' ', b'!'),
        ClassBytesRange::new(b'#', b'['),
        ClassBytesRange::new(b']', b'~'),
    ]);
    let labels = vec![
        Hir::literal(*b"\""),
        Hir::class(Class::Bytes(text)),
        Hir::literal(format!("{ending}\"").into_bytes()),
    ];
    let states = vec![
        GraphState {
            edges: vec![(0, 1)],
            accepting: false,
        },
        GraphState {
            edges: vec![(1, 1), (2, 2)],
            accepting: false,
        },
        GraphState {
            edges: Vec::new(),
            accepting: true,
        },
    ];
    let graph = RegexGraph::new(labels, states)
        .and_then(|g| g.with_edge_bounds(min + 2, max + 2))
        .expect("a valid graph");
    single_rule(Expr::seq(vec![
        lit("{\"s\": "),
        Expr::graph(graph),
        lit("}"),
    ]))
}

/// [`counted_string_graph_grammar`]'s language as one regular expression.
pub fn counted_string_regex_grammar(min: u32, max: u32, ending: &str) -> Grammar {
    single_rule(Expr::seq(vec![
        lit("{\"s\": "),
        re(&format!(
            "\"[ !#-\\[\\]-~]{{{min},{max}}}{}\"",
            regex_syntax::escape(ending)
        )),
        lit("}"),
    ]))
}
