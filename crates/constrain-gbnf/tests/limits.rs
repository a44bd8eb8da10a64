//! Hostile sizes: deep nesting is an error (never a stack overflow), large grammars parse.

mod common;

use constrain_gbnf::{parse, ErrorKind};

#[test]
fn ten_thousand_nested_groups_are_an_error() {
    let depth = 10_000;
    let text = format!("root ::= {}\"a\"{}", "(".repeat(depth), ")".repeat(depth));
    let e = parse(&text).unwrap_err();
    assert!(matches!(e.kind(), ErrorKind::TooDeep { limit: 64 }), "{e}");
    assert_eq!(
        e.to_string(),
        "1:74: nesting deeper than 64 levels of groups and repetitions"
    );
    // Unclosed, too.
    assert!(matches!(
        parse(&format!("root ::= {}", "(".repeat(depth)))
            .unwrap_err()
            .kind(),
        ErrorKind::TooDeep { .. }
    ));
}

#[test]
fn stacked_repetitions_are_bounded_too() {
    let text = format!("root ::= \"a\"{}", "*".repeat(10_000));
    assert!(matches!(
        parse(&text).unwrap_err().kind(),
        ErrorKind::TooDeep { .. }
    ));
    let text = format!("root ::= \"a\"{}", "?".repeat(60));
    assert!(parse(&text).is_ok());
}

#[test]
fn sixty_four_levels_parse_and_compile() {
    let depth = 63;
    let text = format!(
        "root ::= {}\"a\" | \"b\"{}",
        "(".repeat(depth),
        ")".repeat(depth)
    );
    let grammar = parse(&text).unwrap();
    let compiled = common::compile(&grammar);
    assert!(common::accepts(&compiled, b"a"));
}

#[test]
fn large_grammars_parse() {
    // 50,000 rules in a chain, defined so that each refers to the next one: every check
    // (references, nullability, left recursion) walks the whole chain.
    let n = 50_000;
    let mut text = String::from("root ::= r0\n");
    for i in 0..n - 1 {
        text.push_str(&format!("r{i} ::= | \"x\" r{}\n", i + 1));
    }
    text.push_str(&format!("r{} ::= \"end\"\n", n - 1));
    let grammar = parse(&text).unwrap();
    assert_eq!(grammar.rule_count(), n + 1);

    // The same chain, left-recursive at its far end.
    let cyclic = text.replace(
        &format!("r{} ::= \"end\"", n - 1),
        &format!("r{} ::= r0", n - 1),
    );
    let cyclic = cyclic.replace("| \"x\" r", "| r");
    let e = parse(&cyclic).unwrap_err();
    match e.kind() {
        ErrorKind::LeftRecursion(cycle) => assert_eq!(cycle.len(), n + 1),
        other => panic!("{other:?}"),
    }
}

#[test]
fn long_literals_classes_and_alternations_parse() {
    let literal = "x".repeat(1 << 20);
    assert!(parse(&format!("root ::= \"{literal}\"")).is_ok());
    let alternatives: Vec<String> = (0..20_000).map(|i| format!("\"w{i}\"")).collect();
    assert!(parse(&format!("root ::= {}", alternatives.join(" | "))).is_ok());
    let class: String = (0x100..0x5000).filter_map(char::from_u32).collect();
    assert!(parse(&format!("root ::= [{class}]+")).is_ok());
}

/// Texts made of GBNF's own characters, from a fixed-seed generator: parsing returns a grammar
/// or an error, and never panics; grammars that parse also compile or fail cleanly.
#[test]
fn random_texts_parse_or_fail_without_panicking() {
    const PIECES: &[&str] = &[
        "root", " ::= ", "a", "b-1", "\"", "x", "\\", "n", "x4", "u00e9", "[", "]", "^", "-", "(",
        ")", "|", "*", "+", "?", "{", "}", ",", "2", "0", ".", "<[", "7", "]>", "!", "#", "\n",
        " ", "é", "\r",
    ];
    let mut rng = constrain_testdata::XorShift64::new(0x9E37_79B9_7F4A_7C15);
    let mut next = move || rng.next_u64();
    let mut parsed = 0;
    for _ in 0..20_000 {
        let len = 1 + next() % 24;
        let mut text = String::from("root ::= ");
        for _ in 0..len {
            text.push_str(PIECES[(next() % PIECES.len() as u64) as usize]);
        }
        if let Ok(grammar) = parse(&text) {
            parsed += 1;
            let _ = constrain_engine::CompiledGrammar::new(
                &grammar,
                common::byte_index(),
                constrain_engine::Limits::default(),
            );
        }
    }
    // The generator must reach past the first token often enough to test something.
    assert!(parsed > 500, "only {parsed} texts parsed");
}
