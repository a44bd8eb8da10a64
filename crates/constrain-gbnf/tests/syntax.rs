//! The grammar each construct produces, and the errors (with positions) of malformed text.

use constrain_engine::{Expr, Grammar, RuleId};
use constrain_gbnf::{parse, parse_with_root, ErrorKind, GbnfError, ParseOptions};

fn body<'g>(grammar: &'g Grammar, name: &str) -> &'g Expr {
    grammar
        .rules()
        .find(|(_, n, _)| *n == name)
        .map(|(_, _, e)| e)
        .unwrap_or_else(|| panic!("no rule {name}"))
}

fn id(grammar: &Grammar, name: &str) -> RuleId {
    grammar
        .rules()
        .find(|(_, n, _)| *n == name)
        .map(|(id, _, _)| id)
        .expect("rule exists")
}

fn root_body(text: &str) -> Expr {
    let grammar = parse(text).unwrap_or_else(|e| panic!("{text:?}: {e}"));
    body(&grammar, "root").clone()
}

fn error(text: &str) -> GbnfError {
    match parse(text) {
        Ok(_) => panic!("{text:?} should not parse"),
        Err(e) => e,
    }
}

fn class(ranges: &[(char, char)]) -> Expr {
    Expr::char_class(ranges, false)
}

#[test]
fn literals_and_escapes() {
    assert_eq!(root_body(r#"root ::= "abc""#), Expr::literal("abc"));
    assert_eq!(
        root_body(r#"root ::= "a\n\r\t\\\"\[\]""#),
        Expr::literal("a\n\r\t\\\"[]")
    );
    // \xNN is a code point, not a byte: \xe9 is é, two bytes of UTF-8.
    assert_eq!(root_body(r#"root ::= "\xe9""#), Expr::literal("é"));
    assert_eq!(
        root_body(r#"root ::= "\u00e9\U0001F600""#),
        Expr::literal("é😀")
    );
    assert_eq!(root_body("root ::= \"日本\""), Expr::literal("日本"));
    assert_eq!(root_body(r#"root ::= """#), Expr::literal(""));
    // A raw line break inside a literal is part of it, as in llama.cpp.
    assert_eq!(root_body("root ::= \"a\nb\""), Expr::literal("a\nb"));
}

#[test]
fn character_classes() {
    assert_eq!(
        root_body("root ::= [a-z0-9_]"),
        class(&[('a', 'z'), ('0', '9'), ('_', '_')])
    );
    assert_eq!(
        root_body(r#"root ::= [^"\\]"#),
        Expr::char_class(&[('"', '"'), ('\\', '\\')], true)
    );
    assert_eq!(
        root_body(r"root ::= [\x00-\x1F\]]"),
        class(&[('\0', '\u{1f}'), (']', ']')])
    );
    // '-' is literal at the end, and after a range.
    assert_eq!(root_body("root ::= [a-]"), class(&[('a', 'a'), ('-', '-')]));
    assert_eq!(
        root_body("root ::= [a-c-e]"),
        class(&[('a', 'c'), ('-', '-'), ('e', 'e')])
    );
    // '#' inside a class is not a comment; '[' needs no escape.
    assert_eq!(root_body("root ::= [#[]"), class(&[('#', '#'), ('[', '[')]));
    // Ranges across the surrogates keep only scalar values.
    assert_eq!(
        root_body(r"root ::= [\u0000-\uFFFF]"),
        class(&[('\0', '\u{D7FF}'), ('\u{E000}', '\u{FFFF}')])
    );
    assert_eq!(root_body("root ::= ."), Expr::any_char());
}

#[test]
fn tokens() {
    assert_eq!(root_body("root ::= <[42]>"), Expr::token(42));
    assert_eq!(root_body("root ::= !<[42]>"), Expr::not_token(42));
    let grammar = ParseOptions::new()
        .special_token("<|end|>", 7)
        .parse("root ::= \"x\" <|end|> !<|end|>")
        .unwrap();
    assert_eq!(
        body(&grammar, "root"),
        &Expr::seq(vec![Expr::literal("x"), Expr::token(7), Expr::not_token(7)])
    );
}

#[test]
fn repetitions() {
    let a = || Expr::literal("a");
    assert_eq!(root_body(r#"root ::= "a"*"#), a().star());
    assert_eq!(root_body(r#"root ::= "a"+"#), a().plus());
    assert_eq!(root_body(r#"root ::= "a"?"#), a().optional());
    assert_eq!(root_body(r#"root ::= "a"{3}"#), a().repeat(3, Some(3)));
    assert_eq!(root_body(r#"root ::= "a"{ 3 , }"#), a().repeat(3, None));
    assert_eq!(root_body(r#"root ::= "a"{2,4}"#), a().repeat(2, Some(4)));
    assert_eq!(root_body(r#"root ::= "a"{,4}"#), a().repeat(0, Some(4)));
    // A maximum above llama.cpp's threshold is accepted and kept exact.
    assert_eq!(
        root_body(r#"root ::= "a"{0,5000}"#),
        a().repeat(0, Some(5000))
    );
    // Operators stack; they bind to the last item only.
    assert_eq!(root_body(r#"root ::= "a"+?"#), a().plus().optional());
    assert_eq!(
        root_body(r#"root ::= "b" "a"*"#),
        Expr::seq(vec![Expr::literal("b"), a().star()])
    );
}

#[test]
fn groups_alternation_and_references() {
    let grammar = parse("root ::= (\"a\" | b-2)* \"c\"\nb-2 ::= [x] | ").unwrap();
    let b2 = id(&grammar, "b-2");
    assert_eq!(
        body(&grammar, "root"),
        &Expr::seq(vec![
            Expr::alt(vec![Expr::literal("a"), Expr::rule(b2)]).star(),
            Expr::literal("c")
        ])
    );
    assert_eq!(
        body(&grammar, "b-2"),
        &Expr::alt(vec![class(&[('x', 'x')]), Expr::empty()])
    );
    // Rules keep the order of the text.
    let names: Vec<&str> = grammar.rules().map(|(_, n, _)| n).collect();
    assert_eq!(names, ["root", "b-2"]);
    assert_eq!(grammar.rule_name(grammar.start()), "root");
}

#[test]
fn rule_names_may_start_with_digits() {
    let grammar = parse("root ::= 1st\n1st ::= \"x\"").unwrap();
    assert_eq!(body(&grammar, "root"), &Expr::rule(id(&grammar, "1st")));
}

#[test]
fn custom_root() {
    let grammar = parse_with_root("a ::= b\nb ::= \"x\"", "b").unwrap();
    assert_eq!(grammar.rule_name(grammar.start()), "b");
    let e = parse("foobar ::= \"x\"").unwrap_err();
    assert_eq!(
        e.to_string(),
        "no rule named 'root' to start from (defined: foobar)"
    );
    assert_eq!(e.location(), None);
}

#[test]
fn line_breaks_end_rules_outside_groups() {
    // Inside parentheses, after '::=' and after '|', a line break continues the rule.
    let text =
        "root ::=\n  (\"a\"\n   \"b\") |\n  \"c\" # comment\n\n# another\nother ::= \"d\"\r\n";
    let grammar = parse(text).unwrap();
    assert_eq!(
        body(&grammar, "root"),
        &Expr::alt(vec![
            Expr::seq(vec![Expr::literal("a"), Expr::literal("b")]),
            Expr::literal("c")
        ])
    );
    assert_eq!(body(&grammar, "other"), &Expr::literal("d"));
    // Elsewhere it ends the rule: a continuation line starting with '|' is an error.
    let e = error("root ::= \"a\"\n  | \"b\"");
    assert_eq!(
        e.to_string(),
        "2:3: expected a rule name, found '|': a line break ends a rule; end the previous line with '|' instead"
    );
}

#[test]
fn empty_rule_and_empty_alternatives() {
    assert_eq!(root_body("root ::="), Expr::empty());
    assert_eq!(
        root_body(r#"root ::= "a" | "#),
        Expr::alt(vec![Expr::literal("a"), Expr::empty()])
    );
    assert_eq!(
        root_body(r#"root ::= ( | "a")"#),
        Expr::alt(vec![Expr::empty(), Expr::literal("a")])
    );
}

#[test]
fn error_positions_and_messages() {
    let cases: &[(&str, &str)] = &[
        ("root ::= expr\nexpr ::= term\n  term \"+\"", "3:8: expected '::=' after rule name 'term'"),
        ("root ::= a\n\nexpr = term", "3:6: expected '::=' after rule name 'expr'"),
        ("root ::= a\n\n  expr := term", "3:8: expected '::=' after rule name 'expr'"),
        ("root ::= \"abc", "1:10: unterminated string literal"),
        ("root ::= [abc", "1:10: unterminated character class"),
        ("root ::= []", "1:10: empty character class"),
        ("root ::= [z-a]", "1:11: character range 'z'-'a' is reversed"),
        ("root ::= (\"a\"", "1:14: '(' opened at 1:10 is never closed"),
        ("root ::= (\"a\" ]", "1:15: unexpected ']' in the definition of 'root': expected ')'"),
        ("root ::= \"a\")", "1:13: unexpected ')' in the definition of 'root': no group is open"),
        (r#"root ::= "\q""#, "1:11: unknown escape sequence '\\q'"),
        (r#"root ::= "\x4""#, "1:11: '\\x' needs exactly 2 hex digits"),
        (r#"root ::= "\uD800""#, "1:11: U+D800 is not a Unicode scalar value"),
        ("root ::= * \"a\"", "1:10: '*' must follow the item it repeats"),
        ("root ::= \"\"+", "1:12: '+' must follow the item it repeats"),
        ("root ::= {", "1:10: '{' must follow the item it repeats"),
        ("root ::= \"a\"{}", "1:13: malformed repetition: expected a number in '{}'"),
        ("root ::= \"a\"{,}", "1:13: malformed repetition: '{,}' gives no bound; use '*'"),
        ("root ::= \"a\"{2 3}", "1:16: malformed repetition: expected ',' or '}' after the count"),
        ("root ::= \"a\"{4,2}", "1:13: repetition {4,2}: the maximum is below the minimum"),
        ("root ::= \"a\"{99999999999}", "1:14: repetition count 99999999999 is too large"),
        ("root ::= \"a\"{5000}", "1:13: at least 5000 repetitions required, more than the limit of 2000"),
        ("root ::= <[12>", "1:14: malformed token: expected ']>' after the token id"),
        ("root ::= !\"a\"", "1:10: malformed token: '!' must be followed by '<'"),
        ("root ::= <[99999999999]>", "1:12: malformed token: token id does not fit in 32 bits"),
        (
            "root ::= <|end|>",
            "1:10: unknown special token '<|end|>' (write token ids as <[id]>, or declare the name)",
        ),
        ("root ::= a\na ::= \"x\"\na ::= \"y\"", "3:1: rule 'a' is defined twice (first at 2:1)"),
        ("root ::= expr\nexpr ::= term (\"+\" term)*\nterm ::= numero", "3:10: undefined rule 'numero'"),
        ("root ::= a |\nb ::= c", "2:3: unexpected ':' in the definition of 'root': a new rule must start on a new line"),
        ("   # only a comment\n", "the grammar defines no rules"),
        ("root_1 ::= \"a\"", "1:5: expected '::=' after rule name 'root'"),
    ];
    for (text, expected) in cases {
        let e = error(text);
        assert_eq!(&e.to_string(), expected, "for {text:?}");
    }
}

#[test]
fn error_accessors() {
    let e = error("root ::= expr\nexpr ::= \"a\"\n  x ::= \"b\" )");
    assert_eq!((e.line(), e.column()), (Some(3), Some(13)));
    assert!(matches!(e.kind(), ErrorKind::Unexpected { .. }));
}

#[test]
fn columns_count_characters() {
    let e = error("root ::= \"é\" \"ü\" [z-a]");
    assert_eq!(e.location().map(|l| l.column), Some(19));
}

#[test]
fn left_recursion_is_refused_unless_allowed() {
    let e = error("root ::= expr\nexpr ::= expr \"+\" term | term\nterm ::= [0-9]");
    assert_eq!(e.to_string(), "2:1: left recursion: expr -> expr");
    let e = error("root ::= a\na ::= pre b \"x\" | \"y\"\npre ::= \"p\"?\nb ::= a \"z\"");
    assert_eq!(e.to_string(), "2:1: left recursion: a -> b -> a");
    // Not left recursion: something is consumed first.
    assert!(parse("root ::= \"(\" root \")\" | \"x\"").is_ok());
    let allowed = ParseOptions::new()
        .allow_left_recursion(true)
        .parse("root ::= root \"+\" term | term\nterm ::= [0-9]");
    assert!(allowed.is_ok());
}

#[test]
fn left_recursion_through_repetitions_and_nullable_chains() {
    // "a"* can be empty, so root can reach itself first.
    assert!(matches!(
        error(r#"root ::= "a"* root "b" | "c""#).kind(),
        ErrorKind::LeftRecursion(_)
    ));
    // Nullable through a chain of rules, not only a directly empty alternative.
    let text = "root ::= e root \"x\" | \"y\"\ne ::= f\nf ::= \"z\" | ";
    assert!(matches!(error(text).kind(), ErrorKind::LeftRecursion(_)));
    // {0} never matches its item, so the item cannot start anything.
    assert!(parse(r#"root ::= root{0} "a""#).is_ok());
}

#[test]
fn repetition_expansion_limits() {
    // Mirrors llama.cpp: a group's weight is the rules generated while reading it.
    assert!(parse(r#"root ::= ("a"{0,99}){0,20}"#).is_ok());
    let e = error(r#"root ::= ("a"{0,99}){0,21}"#);
    assert_eq!(
        e.to_string(),
        "1:21: repetition too large: an item of 100 rules repeated 21 times exceeds the limit of 2000"
    );
    assert!(parse(r#"root ::= "a"{2000}"#).is_ok());
    assert!(parse(r#"root ::= "a"{2001}"#).is_err());
    assert!(parse(r#"root ::= "a"{3,5000}"#).is_ok());
}
