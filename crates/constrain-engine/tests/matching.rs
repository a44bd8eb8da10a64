//! Which byte strings grammars accept, and the matcher's operations.

mod common;

use common::*;
use constrain_engine::{Expr, Grammar, GrammarBuilder, GrammarError, MatchError, Matcher};

#[test]
fn json_accepts_and_rejects() {
    let g = compile(&json_grammar(), &byte_vocab());
    for ok in [
        r#"{}"#,
        r#"{"a": 1, "b": [true, false, null], "c": {"d": "e\n\u00e9"}}"#,
        r#"[1, -2.5e+3, 0.0, "x"]"#,
        "  [ ]  ",
        r#""日本語""#,
        "-0",
        r#"{"a":{"b":{"c":[[[[]]]]}}}"#,
    ] {
        assert!(accepts(&g, ok.as_bytes()), "should accept {ok}");
    }
    for bad in [
        "{",
        r#"{"a"}"#,
        "[1,]",
        "01",
        "1.",
        r#""\x""#,
        "tru",
        "[1 2]",
        "{\"a\":1,}",
        "      1",
        "\"a\nb\"",
    ] {
        assert!(!accepts(&g, bad.as_bytes()), "should reject {bad}");
    }
    assert!(viable(&g, b"{\"a\": [1, 2"));
    assert!(!viable(&g, b"{\"a\": [1, 2}"));
}

#[test]
fn left_recursion_and_precedence() {
    let g = compile(&arithmetic_grammar(), &byte_vocab());
    for ok in ["1", "1+2*3", "(1+2)*3", "((((7))))", "10/2-3*(4+5)"] {
        assert!(accepts(&g, ok.as_bytes()), "should accept {ok}");
    }
    for bad in ["", "+", "1+", "(1", "1)", "1**2"] {
        assert!(!accepts(&g, bad.as_bytes()), "should reject {bad}");
    }
}

#[test]
fn lexemes_are_not_greedy() {
    // A greedy lexer would let `[a-z]+` swallow the final "a" and reject "bca".
    let mut b = GrammarBuilder::new();
    let word = b.rule_id("word");
    let root = b.rule_id("root");
    b.define(word, Expr::regex("[a-z]+").unwrap()).unwrap();
    b.define(
        root,
        Expr::seq(vec![
            Expr::rule(word),
            Expr::rule(root).optional(),
            Expr::literal("a"),
        ]),
    )
    .unwrap();
    let g = compile(&b.build(root).unwrap(), &byte_vocab());
    assert!(accepts(&g, b"bca"));
    assert!(accepts(&g, b"xaa"));
    assert!(!accepts(&g, b"bcb"));
}

#[test]
fn nullable_rules_and_terminals() {
    let mut b = GrammarBuilder::new();
    let opt = b.rule_id("opt");
    let root = b.rule_id("root");
    b.define(
        opt,
        Expr::alt(vec![
            Expr::empty(),
            Expr::seq(vec![
                Expr::literal("("),
                Expr::rule(opt),
                Expr::literal(")"),
            ]),
        ]),
    )
    .unwrap();
    b.define(
        root,
        Expr::seq(vec![
            Expr::regex("x*").unwrap(),
            Expr::rule(opt),
            Expr::regex("y*").unwrap(),
            Expr::rule(opt),
        ]),
    )
    .unwrap();
    let g = compile(&b.build(root).unwrap(), &byte_vocab());
    for ok in ["", "x", "()", "(())", "xx(())yy()", "y", "()()"] {
        assert!(accepts(&g, ok.as_bytes()), "should accept {ok:?}");
    }
    for bad in ["(", ")(", "yx", "()()()"] {
        assert!(!accepts(&g, bad.as_bytes()), "should reject {bad:?}");
    }
}

#[test]
fn utf8_classes_and_any_char() {
    let g = compile(
        &Grammar::from_regex(r"\p{Greek}+ .").unwrap(),
        &byte_vocab(),
    );
    assert!(accepts(&g, "αβγ x".as_bytes()));
    assert!(accepts(&g, "Ω 日".as_bytes()));
    assert!(!accepts(&g, "abc x".as_bytes()));
    assert!(!accepts(&g, b"\xCE\xB1 \xFF"), "not UTF-8");
    assert!(viable(&g, b"\xCE"), "half a character is a viable prefix");
}

#[test]
fn masks_follow_the_vocabulary_layout() {
    let vocab = word_vocab();
    let g = compile(&Grammar::from_regex("(yes|no)").unwrap(), &vocab);
    let mut m = Matcher::new(g.clone());
    let mut mask = vec![0u32; g.mask_words()];
    assert_eq!(mask.len(), vocab.logits_width().div_ceil(32));
    m.fill_mask(&mut mask).unwrap();
    let allowed = constrain_testdata::allowed_ids(&mask, vocab.logits_width());
    let spelled: Vec<&[u8]> = allowed
        .iter()
        .map(|&t| vocab.token_bytes(t).unwrap())
        .collect();
    let mut expected: Vec<&[u8]> = vec![b"y", b"n", b"yes", b"no"];
    expected.sort();
    let mut got = spelled.clone();
    got.sort();
    assert_eq!(got, expected);
    let yes = allowed[spelled.iter().position(|s| *s == b"yes").unwrap()];
    m.accept_token(yes).unwrap();
    m.fill_mask(&mut mask).unwrap();
    let now = constrain_testdata::allowed_ids(&mask, vocab.logits_width());
    assert_eq!(
        now,
        vocab.eos_tokens().to_vec(),
        "only the end tokens remain"
    );
    assert!(m.is_finished() && m.is_accepting());
    m.accept_token(vocab.eos_tokens()[1]).unwrap();
    assert!(m.has_ended());
    assert_eq!(m.accept_token(0), Err(MatchError::Finished));
    let padding = vocab.len() as u32 + 3;
    m.rollback(2).unwrap();
    assert_eq!(m.is_token_allowed(padding), Ok(false));
    assert!(matches!(
        m.is_token_allowed(vocab.logits_width() as u32),
        Err(MatchError::UnknownToken { .. })
    ));
}

#[test]
fn rejected_token_leaves_state_unchanged() {
    let vocab = word_vocab();
    let g = compile(&json_grammar(), &vocab);
    let mut m = Matcher::new(g);
    m.accept_bytes(b"{\"a\": ").unwrap();
    let before = m.clone();
    let close = (0..vocab.len() as u32)
        .find(|&t| vocab.token_bytes(t) == Some(b"}"))
        .unwrap();
    assert_eq!(
        m.accept_token(close),
        Err(MatchError::TokenNotAllowed { token: close })
    );
    assert_eq!(m.steps(), before.steps());
    assert!(m.accept_bytes(b"1}").is_ok());
    assert!(m.is_accepting());
    assert!(matches!(
        m.accept_bytes(b"x"),
        Err(MatchError::BytesRejected { offset: 0 })
    ));
}

#[test]
fn special_tokens_only_where_the_grammar_names_them() {
    let vocab = word_vocab();
    let tool = vocab.iter().find(|(_, b, _)| *b == b"<tool>").unwrap().0;
    let plain = compile(&json_grammar(), &vocab);
    assert_eq!(Matcher::new(plain).is_token_allowed(tool), Ok(false));
    let g = compile(&tool_grammar(tool), &vocab);
    let mut m = Matcher::new(g);
    m.accept_bytes(b"call it ").unwrap();
    assert_eq!(m.is_token_allowed(tool), Ok(true));
    m.accept_token(tool).unwrap();
    m.accept_bytes(b"{\"x\": 1}").unwrap();
    assert!(m.is_accepting());
}

#[test]
fn forced_tokens_follow_the_only_continuation() {
    let vocab = word_vocab();
    let mut b = GrammarBuilder::new();
    let root = b
        .add_rule(
            "root",
            Expr::seq(vec![
                Expr::literal("{\"name\":"),
                Expr::regex("[0-9]").unwrap(),
            ]),
        )
        .unwrap();
    let g = compile(&b.build(root).unwrap(), &vocab);
    let mut m = Matcher::new(g);
    let forced = m.forced_tokens().unwrap();
    let text: Vec<u8> = forced
        .iter()
        .flat_map(|&t| vocab.token_bytes(t).unwrap().to_vec())
        .collect();
    assert!(
        b"{\"name\":".starts_with(&text) && !text.is_empty(),
        "forced {:?}",
        String::from_utf8_lossy(&text)
    );
    for t in forced {
        m.accept_token(t).unwrap();
    }
    // After a free choice nothing is forced.
    let mut free = Matcher::new(compile(&json_grammar(), &vocab));
    assert!(free.forced_tokens().unwrap().is_empty());
}

#[test]
fn rollback_and_reset() {
    let vocab = byte_vocab();
    let g = compile(&arithmetic_grammar(), &vocab);
    let mut m = Matcher::new(g);
    for &b in b"1+2" {
        m.accept_token(b as u32).unwrap();
    }
    assert!(m.is_accepting());
    m.rollback(1).unwrap();
    assert!(!m.is_accepting());
    assert_eq!(
        m.rollback(5),
        Err(MatchError::RollbackTooFar {
            requested: 5,
            available: 2
        })
    );
    m.reset();
    assert_eq!(m.steps(), 0);
    assert!(m.accept_token(b'(' as u32).is_ok());
}

#[test]
fn empty_language_is_an_error() {
    let mut b = GrammarBuilder::new();
    let r = b.rule_id("r");
    b.define(r, Expr::seq(vec![Expr::literal("a"), Expr::rule(r)]))
        .unwrap();
    let err = constrain_engine::CompiledGrammar::new(
        &b.build(r).unwrap(),
        constrain_engine::TokenIndex::new(byte_vocab()),
        Default::default(),
    )
    .unwrap_err();
    assert!(matches!(err, GrammarError::EmptyLanguage { .. }), "{err}");
}

#[test]
fn large_terminals_read_their_head_then_their_rest() {
    // Large enough to be compiled in two pieces: the key, then the value.
    let g = compile(
        &Grammar::from_regex(
            r#"\{"(name|nom)" ?: ?"[^"\\\x00-\x1F]{0,600}"( ?, ?"n": [0-9]{1,3})?\}"#,
        )
        .unwrap(),
        &byte_vocab(),
    );
    let long = "é".repeat(600);
    for ok in [
        r#"{"name": ""}"#.to_string(),
        r#"{"nom":"abc", "n": 12}"#.to_string(),
        format!(r#"{{"name" : "{long}"}}"#),
    ] {
        assert!(accepts(&g, ok.as_bytes()), "should accept {ok}");
    }
    for bad in [
        r#"{"nam": ""}"#.to_string(),
        r#"{"name" "x"}"#.to_string(),
        r#"{"name": "a""#.to_string(),
        format!(r#"{{"name": "{long}x"}}"#),
        r#"{"nom": "", "n": 1234}"#.to_string(),
    ] {
        assert!(!accepts(&g, bad.as_bytes()), "should reject {bad}");
    }
    assert!(viable(&g, br#"{"name": "#));
    assert!(!viable(&g, br#"{"names"#));
}
