//! Shortest completions against a brute-force search: a breadth-first search over the
//! automaton's own states, byte class by byte class, from states reached by random walks.

use std::collections::VecDeque;
use std::sync::Arc;

use constrain_testdata::XorShift64;
use constrain_vocab::{TokenKind, Vocabulary};
use rustc_hash::FxHashSet;

use crate::automaton::{StateId, DEAD};
use crate::{CompiledGrammar, Expr, Grammar, GrammarBuilder, Limits, Matcher, TokenIndex};
use crate::{Unordered, UnorderedMember};

/// The 256 single bytes as tokens, a few longer ones, and end-of-sequence.
fn vocab() -> Arc<Vocabulary> {
    let mut tokens: Vec<(u32, Vec<u8>, TokenKind)> = (0..=255u8)
        .map(|b| (u32::from(b), vec![b], TokenKind::Text))
        .collect();
    for w in ["\"", "\": ", ", \"", "}", "]]", "abc", "true", "name"] {
        tokens.push((tokens.len() as u32, w.as_bytes().to_vec(), TokenKind::Text));
    }
    tokens.push((
        tokens.len() as u32,
        b"</s>".to_vec(),
        TokenKind::EndOfSequence,
    ));
    Arc::new(Vocabulary::from_tokens(tokens).expect("valid vocabulary"))
}

fn re(p: &str) -> Expr {
    Expr::regex(p).expect("valid regex")
}

fn lit(s: &str) -> Expr {
    Expr::literal(s)
}

fn one_rule(e: Expr) -> Grammar {
    let mut b = GrammarBuilder::new();
    let root = b.rule_id("root");
    b.define(root, e).expect("defined once");
    b.build(root).expect("valid grammar")
}

fn json() -> Grammar {
    let mut b = GrammarBuilder::new();
    let value = b.rule_id("value");
    let string = re(r#""([^"\\\x00-\x1F]|\\["\\/bfnrt])*""#);
    let member = Expr::seq(vec![string.clone(), lit(": "), Expr::rule(value)]);
    let object = Expr::seq(vec![
        lit("{"),
        Expr::seq(vec![
            member.clone(),
            Expr::seq(vec![lit(", "), member]).repeat(0, None),
        ])
        .repeat(0, Some(1)),
        lit("}"),
    ]);
    let array = Expr::seq(vec![
        lit("["),
        Expr::seq(vec![
            Expr::rule(value),
            Expr::seq(vec![lit(", "), Expr::rule(value)]).repeat(0, None),
        ])
        .repeat(0, Some(1)),
        lit("]"),
    ]);
    let number = re(r"-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][-+]?[0-9]+)?");
    let v = Expr::alt(vec![
        object,
        array,
        string,
        number,
        lit("true"),
        lit("null"),
    ]);
    b.define(value, v).expect("defined once");
    b.build(value).expect("valid grammar")
}

fn arithmetic() -> Grammar {
    let mut b = GrammarBuilder::new();
    let expr = b.rule_id("expr");
    let factor = b.rule_id("factor");
    b.define(
        expr,
        Expr::alt(vec![
            Expr::seq(vec![Expr::rule(expr), re("[-+*]"), Expr::rule(factor)]),
            Expr::rule(factor),
        ]),
    )
    .expect("defined once");
    b.define(
        factor,
        Expr::alt(vec![
            re("[0-9]+"),
            Expr::seq(vec![lit("(("), Expr::rule(expr), lit("))")]),
        ]),
    )
    .expect("defined once");
    b.build(expr).expect("valid grammar")
}

fn record(any_order: bool) -> Grammar {
    let string = re(r#""[a-z ]{2,6}""#);
    let number = re(r"-?(0|[1-9][0-9]*)");
    let member = |k: &str, v: &Expr| Expr::seq(vec![lit(&format!("\"{k}\": ")), v.clone()]);
    if any_order {
        let m = |k: &str, v: &Expr, required| UnorderedMember {
            expr: member(k, v),
            required,
        };
        let body = Expr::unordered(Unordered {
            members: vec![
                m("name", &string, true),
                m("city", &string, true),
                m("age", &number, false),
                m("nicknames", &string, false),
            ],
            extra: Some(member("x", &number)),
            separator: lit(", "),
            allow_empty: false,
        });
        one_rule(Expr::seq(vec![lit("{"), body, lit("}")]))
    } else {
        one_rule(Expr::seq(vec![
            lit("{"),
            member("name", &string),
            lit(", "),
            member("city", &string),
            Expr::seq(vec![lit(", "), member("age", &number)]).repeat(0, Some(1)),
            lit("}"),
        ]))
    }
}

fn grammars() -> Vec<(&'static str, Grammar)> {
    vec![
        ("json", json()),
        ("arithmetic", arithmetic()),
        ("record", record(false)),
        ("record in any order", record(true)),
        ("alternation", one_rule(re("(abc|de)+x(yz){2,3}"))),
        ("counted", one_rule(re(r#""[a-z]{5,9}"[0-9]{0,2}!"#))),
        (
            "unanchored pattern",
            one_rule(re("[a-z]*(cat|dog)[a-z]*\\.")),
        ),
    ]
}

/// The fewest bytes from `state` to an accepting state, by a breadth-first search over the
/// automaton (every byte class).
fn brute_force(g: &CompiledGrammar, state: StateId) -> Option<usize> {
    g.with_automaton(|a| {
        let mut seen = FxHashSet::from_iter([state]);
        let mut queue = VecDeque::from([(state, 0usize)]);
        while let Some((s, depth)) = queue.pop_front() {
            if a.is_accepting(s) {
                return Some(depth);
            }
            for class in 0..a.classes() {
                let next = a.next(s, class).expect("within limits");
                if next != DEAD && seen.insert(next) {
                    queue.push_back((next, depth + 1));
                }
            }
        }
        None
    })
}

#[test]
fn shortest_completions_are_exact_and_complete() {
    let vocab = vocab();
    let index = TokenIndex::new(vocab.clone());
    let width = vocab.logits_width();
    for (name, grammar) in grammars() {
        let g = CompiledGrammar::new(&grammar, index.clone(), Limits::default()).expect("compiles");
        let mut checked = 0;
        for seed in 1..=40u64 {
            let mut rng = XorShift64::new(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15));
            let mut m = Matcher::new(g.clone());
            let mut mask = vec![0u32; g.mask_words()];
            for _ in 0..25 {
                let state = m.current_state();
                let completion = m
                    .shortest_completion()
                    .expect("within limits")
                    .expect("a live state has a completion");
                assert_eq!(
                    Some(completion.bytes.len()),
                    brute_force(&g, state),
                    "{name}: state {state}: completion {:?}",
                    String::from_utf8_lossy(&completion.bytes)
                );
                let mut done = m.clone();
                for &t in completion.tokens.iter() {
                    done.accept_token(t).expect("completion tokens are allowed");
                }
                assert!(done.is_accepting(), "{name}: completion does not complete");
                checked += 1;
                m.fill_mask(&mut mask).expect("mask");
                let text: Vec<u32> = (0..width as u32)
                    .filter(|&t| {
                        mask[(t / 32) as usize] >> (t % 32) & 1 == 1
                            && vocab.kind(t) == Some(TokenKind::Text)
                    })
                    .collect();
                if text.is_empty() {
                    break;
                }
                m.accept_token(text[rng.index(text.len())])
                    .expect("allowed");
            }
        }
        assert!(checked > 100, "{name}: only {checked} states checked");
    }
}

#[test]
fn the_widest_completion_bounds_every_state() {
    let vocab = vocab();
    let index = TokenIndex::new(vocab.clone());
    for (name, grammar) in grammars() {
        let g = CompiledGrammar::new(&grammar, index.clone(), Limits::default()).expect("compiles");
        let widest = g.widest_completion_bytes().expect("within limits");
        // Every state reached from the start (up to a few thousand), by every byte class.
        let start = Matcher::new(g.clone()).current_state();
        let mut seen = FxHashSet::from_iter([start]);
        let mut queue = VecDeque::from([start]);
        let mut most = 0;
        while let Some(s) = queue.pop_front() {
            most = most.max(brute_force(&g, s).expect("a live state has a completion"));
            if seen.len() > 3000 {
                continue;
            }
            for class in 0..g.with_automaton(|a| a.classes()) {
                let next = g.with_automaton(|a| a.next(s, class).expect("within limits"));
                if next != DEAD && seen.insert(next) {
                    queue.push_back(next);
                }
            }
        }
        match name {
            // Recursive: nesting makes completions as long as any.
            "json" | "arithmetic" => assert_eq!(widest, None, "{name}"),
            // One lexeme: the widest is exactly that of its automaton's states.
            "alternation" | "counted" | "unanchored pattern" => {
                assert_eq!(widest, Some(most as u64), "{name}")
            }
            _ => assert!(
                widest.is_some_and(|w| w >= most as u64),
                "{name}: widest {widest:?}, a state needs {most}"
            ),
        }
    }
}
