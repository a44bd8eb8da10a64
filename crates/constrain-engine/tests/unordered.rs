//! Items in any order ([`Expr::Unordered`]): the lazily expanded language equals the one
//! spelled out by enumeration, on every short string.

mod common;

use std::collections::BTreeSet;

use common::*;
use constrain_engine::{Expr, GrammarBuilder, GrammarError, Unordered, UnorderedMember};

/// One item of the reference enumeration: its spellings, and whether it may repeat.
struct Item {
    spellings: Vec<&'static str>,
    required: bool,
    repeats: bool,
}

/// The language spelled out: every sequence of items, up to a length.
struct Enumeration<'a> {
    items: &'a [Item],
    separator: Option<&'a str>,
    allow_empty: bool,
    max_len: usize,
    out: BTreeSet<String>,
}

impl Enumeration<'_> {
    /// Every string of at most `max_len` bytes made of the items in any order.
    fn run(mut self) -> BTreeSet<String> {
        let mut used = vec![false; self.items.len()];
        self.go(&mut used, String::new(), 0);
        self.out
    }

    fn go(&mut self, used: &mut Vec<bool>, text: String, count: usize) {
        if text.len() > self.max_len || count > 2 * self.max_len + 2 {
            return;
        }
        let complete = self
            .items
            .iter()
            .zip(used.iter())
            .all(|(i, u)| !i.required || *u);
        if complete && (count > 0 || self.allow_empty) {
            self.out.insert(text.clone());
        }
        if count > 0 && self.separator.is_none() {
            return;
        }
        for j in 0..self.items.len() {
            if used[j] && !self.items[j].repeats {
                continue;
            }
            for spelling in self.items[j].spellings.clone() {
                let mut next = text.clone();
                if count > 0 {
                    next.push_str(self.separator.unwrap_or_default());
                }
                next.push_str(spelling);
                let was = used[j];
                used[j] = true;
                self.go(used, next, count + 1);
                used[j] = was;
            }
        }
    }
}

/// Every string over `alphabet` of at most `max_len` bytes.
fn all_strings(alphabet: &[u8], max_len: usize) -> Vec<Vec<u8>> {
    let mut all = vec![Vec::new()];
    let mut layer = vec![Vec::new()];
    for _ in 0..max_len {
        let mut next = Vec::new();
        for s in &layer {
            for &b in alphabet {
                let mut t: Vec<u8> = s.clone();
                t.push(b);
                next.push(t);
            }
        }
        all.extend(next.iter().cloned());
        layer = next;
    }
    all
}

fn check(items: &[Item], separator: Option<&str>, allow_empty: bool) {
    let to_expr =
        |item: &Item| Expr::alt(item.spellings.iter().map(|s| Expr::literal(s)).collect());
    let unordered = Unordered {
        members: items
            .iter()
            .filter(|i| !i.repeats)
            .map(|i| UnorderedMember {
                expr: to_expr(i),
                required: i.required,
            })
            .collect(),
        extra: items.iter().find(|i| i.repeats).map(to_expr),
        separator: separator.map_or_else(Expr::nothing, Expr::literal),
        allow_empty,
    };
    let mut b = GrammarBuilder::new();
    let root = b.rule_id("root");
    b.define(
        root,
        Expr::seq(vec![
            Expr::literal("<"),
            Expr::unordered(unordered),
            Expr::literal(">"),
        ]),
    )
    .unwrap();
    let grammar = compile(&b.build(root).unwrap(), &byte_vocab());
    const MAX_LEN: usize = 6;
    let expected = Enumeration {
        items,
        separator,
        allow_empty,
        max_len: MAX_LEN,
        out: BTreeSet::new(),
    }
    .run();
    assert!(!expected.is_empty());
    for text in all_strings(b"abdx,", MAX_LEN) {
        let inner = String::from_utf8(text).unwrap();
        let framed = format!("<{inner}>");
        assert_eq!(
            accepts(&grammar, framed.as_bytes()),
            expected.contains(&inner),
            "{framed:?} (separator {separator:?}, empty allowed: {allow_empty})"
        );
    }
}

fn item(spellings: &[&'static str], required: bool, repeats: bool) -> Item {
    Item {
        spellings: spellings.to_vec(),
        required,
        repeats,
    }
}

#[test]
fn members_in_any_order_each_at_most_once() {
    let items = [
        item(&["a"], true, false),
        item(&["b"], false, false),
        item(&["dd"], false, false),
        item(&["x"], false, true),
    ];
    for allow_empty in [false, true] {
        check(&items, Some(","), allow_empty);
    }
}

#[test]
fn no_required_member_and_the_empty_sequence() {
    let items = [item(&["a"], false, false), item(&["b", "bd"], false, false)];
    check(&items, Some(",,"), true);
    check(&items, Some(","), false);
}

#[test]
fn nullable_members_and_separators() {
    // A required member that may be empty, and an empty separator: "" satisfies it.
    let items = [
        item(&["", "d"], true, false),
        item(&["a"], false, false),
        item(&["x"], false, true),
    ];
    check(&items, Some(""), false);
    check(&items, Some(","), false);
    check(&items, Some(","), true);
}

#[test]
fn a_separator_that_matches_nothing_leaves_one_item() {
    let items = [item(&["a"], false, false), item(&["b"], false, false)];
    check(&items, None, false);
}

#[test]
fn a_required_member_that_matches_nothing_empties_the_language() {
    let unordered = Unordered {
        members: vec![UnorderedMember {
            expr: Expr::nothing(),
            required: true,
        }],
        extra: Some(Expr::literal("x")),
        separator: Expr::literal(","),
        allow_empty: true,
    };
    let mut b = GrammarBuilder::new();
    let root = b.rule_id("root");
    b.define(root, Expr::unordered(unordered)).unwrap();
    let grammar = b.build(root).unwrap();
    let err = constrain_engine::CompiledGrammar::new(
        &grammar,
        constrain_engine::TokenIndex::new(byte_vocab()),
        constrain_engine::Limits::default(),
    )
    .err();
    assert!(
        matches!(err, Some(GrammarError::EmptyLanguage { .. })),
        "{err:?}"
    );
}

#[test]
fn many_members_cost_only_the_subsets_inputs_reach() {
    // 200 optional members: 2^200 subsets, of which one input visits 201.
    let members: Vec<UnorderedMember> = (0..200)
        .map(|i| UnorderedMember {
            expr: Expr::literal(&format!("k{i:03}")),
            required: i % 50 == 0,
        })
        .collect();
    let unordered = Unordered {
        members,
        extra: None,
        separator: Expr::literal(","),
        allow_empty: false,
    };
    let mut b = GrammarBuilder::new();
    let root = b.rule_id("root");
    b.define(root, Expr::unordered(unordered)).unwrap();
    let grammar = compile(&b.build(root).unwrap(), &byte_vocab());
    let backwards: Vec<String> = (0..200).rev().map(|i| format!("k{i:03}")).collect();
    assert!(accepts(&grammar, backwards.join(",").as_bytes()));
    assert!(accepts(&grammar, b"k150,k000,k100,k050"));
    assert!(!accepts(&grammar, b"k150,k000,k100"), "k050 is required");
    assert!(
        !accepts(&grammar, b"k150,k000,k100,k050,k000"),
        "k000 twice"
    );
}
