//! Hostile grammars finish in bounded time and memory, with a clear error or a correct result.

mod common;

use common::*;
use constrain_engine::{
    Budget, CompiledGrammar, Expr, Grammar, GrammarBuilder, GrammarError, Limits, MatchError,
    Matcher, TokenIndex,
};

fn try_compile(
    grammar: &Grammar,
    limits: Limits,
) -> Result<std::sync::Arc<CompiledGrammar>, GrammarError> {
    CompiledGrammar::new(grammar, TokenIndex::new(byte_vocab()), limits)
}

#[test]
fn deep_expression_nesting_is_an_error() {
    let mut expr = Expr::literal("x");
    for _ in 0..5_000 {
        expr = Expr::Seq(vec![Expr::literal("("), expr, Expr::literal(")")]);
    }
    let mut b = GrammarBuilder::new();
    let root = b.add_rule("root", expr).unwrap();
    let err = try_compile(&b.build(root).unwrap(), Limits::default()).unwrap_err();
    assert!(
        matches!(
            err,
            GrammarError::LimitExceeded {
                budget: Budget::ExprNesting,
                ..
            }
        ),
        "{err}"
    );
}

#[test]
fn deep_regex_nesting_is_an_error() {
    let pattern = format!("{}a{}", "(".repeat(1_000), ")".repeat(1_000));
    assert!(matches!(
        Expr::regex(&pattern),
        Err(GrammarError::Regex { .. })
    ));
}

#[test]
fn long_rule_chains_compile() {
    // 20,000 rules each wrapping the next: deep, but not nested expressions.
    let mut b = GrammarBuilder::new();
    let n = 20_000;
    let ids: Vec<_> = (0..n).map(|i| b.rule_id(&format!("r{i}"))).collect();
    for i in 0..n - 1 {
        let next = Expr::seq(vec![Expr::literal("a"), Expr::rule(ids[i + 1])]);
        b.define(ids[i], Expr::alt(vec![next, Expr::literal("c")]))
            .unwrap();
    }
    b.define(ids[n - 1], Expr::literal("b")).unwrap();
    let g = try_compile(&b.build(ids[0]).unwrap(), Limits::default()).unwrap();
    assert!(accepts(&g, b"aaac"));
    assert!(accepts(&g, &[b"a".repeat(n - 1), b"b".to_vec()].concat()));
    assert!(!accepts(&g, b"aaab"));
    assert!(!accepts(&g, b"b"));
}

#[test]
fn exponential_dfa_is_built_lazily_and_bounded() {
    // The DFA of this regex has 2^21 states; only the visited ones are built.
    let grammar = Grammar::from_regex("(a|b)*a(a|b){20}").unwrap();
    let g = try_compile(&grammar, Limits::default()).unwrap();
    let mut text = Vec::new();
    let mut x = 0x1234_5678u32;
    for _ in 0..2_000 {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        text.push(if x & 1 == 0 { b'a' } else { b'b' });
    }
    text.extend_from_slice(b"a");
    text.extend(std::iter::repeat_n(b'b', 20));
    assert!(accepts(&g, &text));
    let mut mask = vec![0u32; g.mask_words()];
    let mut m = Matcher::new(g.clone());
    m.accept_bytes(&text[..500]).unwrap();
    m.fill_mask(&mut mask).unwrap();
    assert_eq!(mask[(b'a' / 32) as usize] >> (b'a' % 32) & 1, 1);

    // With a small budget the same input ends in a clean error, never an abort.
    let small = Limits {
        max_lexer_states: 64,
        ..Limits::default()
    };
    let g = try_compile(&grammar, small).unwrap();
    let err = Matcher::new(g).accept_bytes(&text).unwrap_err();
    assert!(
        matches!(
            err,
            MatchError::LimitExceeded {
                budget: Budget::LexerStates,
                ..
            }
        ),
        "{err}"
    );
}

#[test]
fn hundred_thousand_way_alternation() {
    let words: Vec<Expr> = (0..100_000)
        .map(|i| Expr::literal(&format!("w{i:05}x")))
        .collect();
    let mut b = GrammarBuilder::new();
    let root = b.add_rule("root", Expr::alt(words)).unwrap();
    let g = try_compile(&b.build(root).unwrap(), Limits::default()).unwrap();
    assert!(accepts(&g, b"w00000x"));
    assert!(accepts(&g, b"w99999x"));
    assert!(!accepts(&g, b"w100000x"));
    assert!(!accepts(&g, b"w0000x"));
}

#[test]
fn regular_expression_too_large_for_one_terminal_is_split() {
    // 5,000 counted copies of a small piece: far beyond one terminal's budget, so the
    // repetition becomes grammar structure over small terminals instead of an error.
    let unit = "(?:alpha|beta|gamma)[0-9]{3};";
    let expr = Expr::regex(&format!("(?:{unit}){{5000}}")).unwrap();
    let mut b = GrammarBuilder::new();
    let root = b.add_rule("root", expr).unwrap();
    let g = try_compile(&b.build(root).unwrap(), Limits::default()).unwrap();
    let good: String = (0..5_000)
        .map(|i| format!("beta{:03};", i % 1000))
        .collect();
    assert!(accepts(&g, good.as_bytes()));
    let short: String = (0..4_999).map(|_| "alpha123;").collect();
    assert!(!accepts(&g, short.as_bytes()));
    let bad = good.replacen("beta", "delta", 1);
    assert!(!accepts(&g, bad.as_bytes()));
}

#[test]
fn ambiguous_grammar_stays_polynomial() {
    // S ::= S S | "a" has exponentially many parses; Earley rows stay small.
    let mut b = GrammarBuilder::new();
    let s = b.rule_id("s");
    b.define(
        s,
        Expr::alt(vec![
            Expr::seq(vec![Expr::rule(s), Expr::rule(s)]),
            Expr::literal("a"),
        ]),
    )
    .unwrap();
    let g = try_compile(&b.build(s).unwrap(), Limits::default()).unwrap();
    let text = vec![b'a'; 300];
    assert!(accepts(&g, &text));
    assert!(!accepts(&g, b"aab"));
}

#[test]
fn cycles_without_a_base_case_match_nothing() {
    let mut b = GrammarBuilder::new();
    let a = b.rule_id("a");
    let c = b.rule_id("c");
    b.define(a, Expr::rule(c)).unwrap();
    b.define(c, Expr::seq(vec![Expr::literal("x"), Expr::rule(a)]))
        .unwrap();
    let err = try_compile(&b.build(a).unwrap(), Limits::default()).unwrap_err();
    assert!(matches!(err, GrammarError::EmptyLanguage { .. }), "{err}");
}

#[test]
fn unit_cycles_and_hidden_left_recursion() {
    let mut b = GrammarBuilder::new();
    let a = b.rule_id("a");
    let e = b.add_rule("e", Expr::regex("z?").unwrap()).unwrap();
    b.define(
        a,
        Expr::alt(vec![
            Expr::rule(a),
            Expr::seq(vec![Expr::rule(e), Expr::rule(a), Expr::literal("x")]),
            Expr::literal("y"),
        ]),
    )
    .unwrap();
    let g = try_compile(&b.build(a).unwrap(), Limits::default()).unwrap();
    for ok in ["y", "yx", "zyx", "zzyxx", "yxxx"] {
        assert!(accepts(&g, ok.as_bytes()), "{ok}");
    }
    assert!(!accepts(&g, b"zy"));
}

#[test]
fn row_budget_is_an_error() {
    let small = Limits {
        max_rows: 50,
        ..Limits::default()
    };
    let g = try_compile(&arithmetic_grammar(), small).unwrap();
    let text = "(".repeat(200);
    let err = Matcher::new(g).accept_bytes(text.as_bytes()).unwrap_err();
    assert!(
        matches!(
            err,
            MatchError::LimitExceeded {
                budget: Budget::Rows,
                ..
            }
        ),
        "{err}"
    );
}

#[test]
fn look_around_is_rejected_with_its_regex() {
    let err = try_compile(&Grammar::from_regex(r"a\bb").unwrap(), Limits::default()).unwrap_err();
    assert!(err.to_string().contains("look-around"), "{err}");
}

#[test]
fn nested_counted_repetitions_stay_within_budgets() {
    // Inlined into one terminal this would need millions of NFA states; kept as rules it is small.
    let text = Expr::char_class(&[('\n', '\n'), ('#', '#')], true).repeat(0, Some(199));
    let sub = Expr::seq(vec![Expr::literal("- "), text, Expr::literal("\n")]).repeat(0, Some(20));
    let item = Expr::seq(vec![
        Expr::literal("# "),
        Expr::regex("[a-z]{1,20}").unwrap(),
        Expr::literal("\n"),
        sub,
    ]);
    let mut b = GrammarBuilder::new();
    let root = b.add_rule("root", item.repeat(1, Some(50))).unwrap();
    let g = try_compile(&b.build(root).unwrap(), Limits::default()).unwrap();
    assert!(accepts(&g, b"# abc\n- x y z\n- \n# d\n"));
    assert!(!accepts(&g, b"# abc\n- x # y\n"));
}

#[test]
fn the_compile_time_budget_ends_in_a_clean_error() {
    let mut b = GrammarBuilder::new();
    let root = b
        .add_rule("root", Expr::regex("[a-z]+(,[a-z]+)*").unwrap())
        .unwrap();
    let grammar = b.build(root).unwrap();
    let no_time = Limits {
        max_compile_time: Some(std::time::Duration::ZERO),
        ..Limits::default()
    };
    let err = try_compile(&grammar, no_time).unwrap_err();
    assert!(
        matches!(
            err,
            GrammarError::LimitExceeded {
                budget: Budget::CompileTime,
                limit: 0
            }
        ),
        "{err}"
    );
    // The message names the budget as it always has (`docs/limits.md` quotes it).
    assert_eq!(
        err.to_string(),
        "grammar too large: compile time (ms) exceeds the limit of 0"
    );
    assert!(try_compile(&grammar, Limits::default()).is_ok());
}

#[test]
fn graphs_with_edge_bounds_past_their_budgets_are_errors() {
    use constrain_engine::{GraphState, RegexGraph, MAX_EDGE_BOUND, MAX_EDGE_BOUND_WORK};
    // A chain of `edges` edges, each reading `label`, whose paths may take up to the most
    // edges a bound allows.
    let chain = |label: &str, edges: u32| {
        let states: Vec<GraphState> = (0..=edges)
            .map(|s| GraphState {
                edges: if s < edges {
                    vec![(0, s + 1)]
                } else {
                    Vec::new()
                },
                accepting: s == edges,
            })
            .collect();
        let label = regex_syntax::parse(label).expect("parses");
        RegexGraph::new(vec![label], states).and_then(|g| g.with_edge_bounds(0, MAX_EDGE_BOUND))
    };
    // Finding the lengths of its paths would take too long: refused at once.
    let too_long = chain("a", 2_000).expect_err("over the work budget");
    assert!(
        too_long
            .to_string()
            .contains(&MAX_EDGE_BOUND_WORK.to_string()),
        "{too_long}"
    );
    // Within that budget, but with labels of 40 bytes its members (every count of every NFA
    // state) would number past what a member id holds: refused when the NFA is built.
    let graph = chain(&"x".repeat(40), 900).expect("within the work budget");
    let mut b = GrammarBuilder::new();
    let root = b.add_rule("root", Expr::graph(graph)).unwrap();
    let err = try_compile(&b.build(root).unwrap(), Limits::default()).unwrap_err();
    assert!(err.to_string().contains("graph with edge bounds"), "{err}");
}

#[test]
fn a_compile_time_budget_too_large_for_the_clock_is_no_budget() {
    // `Instant::now() + Duration::MAX` overflows: such a budget once panicked.
    let grammar = Grammar::from_regex("[a-z]+").unwrap();
    let forever = Limits {
        max_compile_time: Some(std::time::Duration::MAX),
        ..Limits::default()
    };
    assert!(try_compile(&grammar, forever).is_ok());
}

#[test]
fn every_limit_is_settable_by_its_name() {
    for (name, _) in Limits::NAMES {
        let mut limits = Limits::default();
        limits
            .set(name, "7")
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_ne!(limits, Limits::default(), "{name} changed nothing");
        assert!(limits.set(name, "seven").is_err(), "{name} took a word");
    }
    let mut limits = Limits::default();
    limits.set("max_compile_time", "none").unwrap();
    assert_eq!(limits.max_compile_time, None);
    limits.set_pair("max_compile_time=0.25").unwrap();
    assert_eq!(
        limits.max_compile_time,
        Some(std::time::Duration::from_millis(250))
    );
    assert!(limits.set_pair("max_states").is_err());
    let err = limits.set("max_nfa", "1").unwrap_err();
    assert!(err.contains("max_total_nfa_bytes"), "{err}");
}

#[test]
fn a_source_over_its_limit_is_refused_by_its_length() {
    let limits = Limits {
        max_source_bytes: 4,
        ..Limits::default()
    };
    assert!(limits.check_source_len(4).is_ok());
    assert!(matches!(
        limits.check_source_len(5),
        Err(GrammarError::LimitExceeded {
            budget: Budget::SourceBytes,
            limit: 4
        })
    ));
}
