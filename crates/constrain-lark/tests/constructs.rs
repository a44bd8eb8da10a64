//! One construct at a time: what each accepts and rejects, and what is refused, where.

use std::sync::Arc;

use constrain_engine::{CompiledGrammar, Limits, Matcher, TokenIndex};
use constrain_lark::{parse, ErrorKind, LarkError, ParseOptions};

fn matcher(grammar: &constrain_lark::Grammar) -> Matcher {
    let index = TokenIndex::new(constrain_testdata::byte_vocabulary());
    let compiled: Arc<CompiledGrammar> =
        CompiledGrammar::new(grammar, index, Limits::default()).expect("compiles");
    Matcher::new(compiled)
}

/// Checks that `grammar` accepts each of `yes` and none of `no`.
fn check(grammar: &str, yes: &[&str], no: &[&str]) {
    let parsed = parse(grammar).unwrap_or_else(|e| panic!("{grammar}\ndoes not parse: {e}"));
    let mut m = matcher(&parsed);
    for (texts, expected) in [(yes, true), (no, false)] {
        for text in texts {
            m.reset();
            let accepted = m.accept_bytes(text.as_bytes()).is_ok() && m.is_accepting();
            assert_eq!(accepted, expected, "{grammar}\non {text:?}");
        }
    }
}

/// The error of `grammar`, which must be refused.
fn refused(grammar: &str) -> LarkError {
    match parse(grammar) {
        Ok(_) => panic!("{grammar}\nshould be refused"),
        Err(e) => e,
    }
}

/// Checks that `grammar` is refused at `line:column`.
fn refused_at(grammar: &str, line: usize, column: usize) -> LarkError {
    let e = refused(grammar);
    assert_eq!(
        (e.line(), e.column()),
        (Some(line), Some(column)),
        "{grammar}\n{e}"
    );
    e
}

#[test]
fn rules_sequences_and_alternatives() {
    check(
        "start: a b | \"z\"\na: \"x\"\nb: \"y\"",
        &["xy", "z"],
        &["x", "y", "xyz", ""],
    );
    check(
        "start: \"a\"\n    | \"b\"\n    // a comment\n    | \"c\"",
        &["a", "b", "c"],
        &["d"],
    );
}

#[test]
fn repetitions_and_optionals() {
    check(
        "start: \"a\"* \"b\"+ \"c\"?",
        &["b", "aabbc", "bbb"],
        &["", "a", "cc"],
    );
    check("start: [\"x\"] (\"y\")?", &["", "x", "xy", "y"], &["yy"]);
    check("start: \"a\" ~ 3", &["aaa"], &["aa", "aaaa"]);
    check("start: \"a\" ~ 1..2 \"b\"", &["ab", "aab"], &["b", "aaab"]);
    check("start: \"a\"~0..2", &["", "a", "aa"], &["aaa"]);
}

#[test]
fn string_literals_and_their_flags() {
    check(r#"start: "SELECT"i"#, &["select", "SeLeCt"], &["selec"]);
    check(r#"start: "a\"b" "\\""#, &["a\"b\\"], &["a\\\"b\\"]);
    check(r#"start: "\x41\u00e9\n""#, &["Aé\n"], &["A"]);
    check(r#"start: "a".."c"+"#, &["abc", "cab"], &["d"]);
}

#[test]
fn regex_literals_follow_python() {
    check(r"start: /[a-z]+\d{2}/", &["ab12"], &["ab1", "AB12"]);
    check(r"start: /hello/i", &["HeLLo"], &["hell"]);
    check(r"start: /a.c/", &["abc"], &["a\nc"]);
    check(r"start: /a.c/s", &["abc", "a\nc"], &[]);
    check(r"start: /x\s+y/", &["x \u{1c}y", "x\t y"], &["xy"]);
    check(r"start: /\w+/", &["a_1é"], &["a-b"]);
    check(r"start: /a{,2}b{x/", &["b{x", "aab{x"], &["aaab{x"]);
    check(r"start: /[]a-]+/", &["]-a"], &["b"]);
    check(r"start: /(?i:ab)c/", &["ABc"], &["ABC"]);
}

#[test]
fn terminals_compose_other_terminals() {
    check(
        "start: NUM\nNUM: DIGIT+ (\".\" DIGIT+)?\nDIGIT: \"0\"..\"9\"",
        &["1", "12.5"],
        &["1.", ".5"],
    );
    check("start: A\nA.2: \"x\" B\nB: \"y\"", &["xy"], &["x", "y"]);
}

#[test]
fn modifiers_aliases_and_priorities_leave_the_language_alone() {
    check(
        "?start: pair -> p\n!pair.3: _word \"=\" _word\n_word: /[a-z]+/",
        &["a=b"],
        &["a=", "=b"],
    );
}

#[test]
fn common_terminals_are_built_in() {
    let g = "start: (INT | SIGNED_NUMBER | ESCAPED_STRING | CNAME | WORD) (\",\" start)?\n\
             %import common (INT, SIGNED_NUMBER, ESCAPED_STRING, CNAME, WORD)";
    check(
        g,
        &["12", "-1.5e3", r#""a\"b""#, "_x1", "abc", "1,x,\"\""],
        &["1e", r#""a"b""#, "\"\n\"", "-"],
    );
    check("start: X+\n%import common.DIGIT -> X", &["123"], &["a"]);
    check(
        "start: WORD (NEWLINE WORD)*\n%import common.WORD\n%import common.NEWLINE",
        &["a\nb", "a\r\n\nb"],
        &["a\rb"],
    );
}

#[test]
fn ignored_terminals_come_between_tokens_never_inside() {
    let g = "start: \"ab\" NAME \"c\"\nNAME: /[x-z]+/\n%ignore \" \"";
    check(
        g,
        &["abxc", " ab x c ", "  abxyc", "ab  xc  "],
        &["a bxc", "abx yc"],
    );
    check(
        "start: \"a\"*\n%ignore /\\s+/",
        &["", "   ", " a a "],
        &["b"],
    );
}

#[test]
fn templates_expand_per_arguments() {
    let g = "start: _sep{NUM, \",\"} \";\" _sep{WORD, \"|\"}\n\
             _sep{x, sep}: x (sep x)*\n\
             NUM: /[0-9]+/\nWORD: /[a-z]+/";
    check(g, &["1,2;a|b", "7;x"], &["1|2;a", "1,2;a,b"]);
    check(
        "start: pair{\"a\", pair{\"b\", \"c\"}}\npair{l, r}: \"(\" l r \")\"",
        &["(a(bc))"],
        &["(abc)"],
    );
}

#[test]
fn another_start_rule_can_be_named() {
    let g = ParseOptions::new()
        .start("top")
        .parse("top: \"t\"\nstart: \"s\"")
        .expect("parses");
    let mut m = matcher(&g);
    assert!(m.accept_bytes(b"t").is_ok() && m.is_accepting());
}

#[test]
fn regex_constructs_without_an_exact_equivalent_are_refused_where_written() {
    for pattern in [
        "(?=a)a", "(?!b)a", "(?<=a)b", "(?<!a)b", "(a)\\1", "^a", "a$", "\\bword", "a*+", "(?>a)",
        "\\Aa", "a\\Z",
    ] {
        let e = refused_at(&format!("start: \"x\" A\nA:  /{pattern}/"), 2, 5);
        assert!(
            matches!(e.kind(), ErrorKind::Regex { .. }),
            "{pattern}: {e}"
        );
    }
    let e = refused_at("start: /a b/x", 1, 8);
    assert!(matches!(e.kind(), ErrorKind::Unsupported { .. }), "{e}");
}

#[test]
fn unsupported_statements_are_refused_where_written() {
    refused_at("start: A\n%declare A", 2, 1);
    refused_at("start: \"a\"\n%import foo.BAR", 2, 1);
    refused_at("start: \"a\"\n%override start: \"b\"", 2, 1);
    refused_at("start: \"a\"\n  %json {\"type\": \"object\"}", 2, 3);
    refused_at("start: \"a\" <|end|>", 1, 12);
    refused_at("start: \"a\"\n%import common.NOPE", 2, 1);
}

#[test]
fn definitions_are_checked_where_written() {
    refused_at("start: a\n\nb: \"x\"", 1, 8);
    refused_at("start: \"a\"\nstart: \"b\"", 2, 1);
    refused_at("start: A\nA: \"a\" b\nb: \"x\"", 2, 8);
    refused_at("start: A\nA: \"a\" A?", 2, 1);
    refused_at("start: A\nA: \"a\"?", 1, 8);
    refused_at("start: \"\"", 1, 8);
    refused_at("start: \"a\" ~ 3..2", 1, 14);
    refused_at("start: \"a\" ~ 5000", 1, 14);
    refused_at("start: \"ab\"..\"c\"", 1, 8);
    refused_at("start: t{\"a\"}\nt{x, y}: x y", 1, 8);
    refused_at("start: \"a\"\n  : \"b\"", 2, 3);
    refused_at("start: \"abc", 1, 8);
    refused_at("start: /abc", 1, 8);
    let e = refused("rule: \"a\"");
    assert!(matches!(e.kind(), ErrorKind::MissingStart(_)), "{e}");
}

#[test]
fn limits_bound_the_source_and_the_nesting() {
    let deep = format!("start: {}\"a\"{}", "(".repeat(100), ")".repeat(100));
    let e = refused(&deep);
    assert!(matches!(e.kind(), ErrorKind::TooDeep { .. }), "{e}");
    let small = Limits {
        max_source_bytes: 10,
        ..Limits::default()
    };
    let e = ParseOptions::new()
        .limits(small)
        .parse("start: \"long enough\"")
        .expect_err("over the source budget");
    assert!(matches!(e.kind(), ErrorKind::Grammar(_)), "{e}");
    let growing = "start: t{\"a\"}\nt{x}: x | t{(x x)}";
    let e = refused(growing);
    assert!(
        matches!(
            e.kind(),
            ErrorKind::TooManyInstances(_) | ErrorKind::TooDeep { .. } | ErrorKind::Grammar(_)
        ),
        "{e}"
    );
}
