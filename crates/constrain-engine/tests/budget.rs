//! Token budgets: every output ends complete within its budget, under logits that always prefer
//! to go on; with an ample budget the masks are the unbudgeted ones; a budget below the
//! shortest completion is refused at once.

mod common;

use std::sync::Arc;

use common::*;
use constrain_engine::{CompiledGrammar, Expr, Grammar, GrammarBuilder, MatchError, Matcher};
use constrain_vocab::{TokenKind, Vocabulary};

fn allowed(mask: &[u32], width: usize) -> Vec<u32> {
    (0..width as u32)
        .filter(|&t| mask[(t / 32) as usize] >> (t % 32) & 1 == 1)
        .collect()
}

/// How an adversary picks among the allowed tokens: never the end while anything else is
/// allowed.
#[derive(Clone, Copy, Debug)]
enum Adversary {
    /// The token with the most bytes.
    Longest,
    /// A token opening a bracket or a quote, else the longest.
    Opening,
    /// A token with a digit, else the longest.
    Digits,
}

impl Adversary {
    fn pick(self, vocab: &Vocabulary, tokens: &[u32]) -> Option<u32> {
        let text: Vec<u32> = tokens
            .iter()
            .copied()
            .filter(|&t| vocab.kind(t) != Some(TokenKind::EndOfSequence))
            .collect();
        let len = |t: &u32| vocab.token_bytes(*t).map_or(0, <[u8]>::len);
        let has = |t: &u32, f: &dyn Fn(u8) -> bool| {
            vocab
                .token_bytes(*t)
                .is_some_and(|b| b.iter().any(|&c| f(c)))
        };
        let preferred: Vec<u32> = match self {
            Adversary::Longest => Vec::new(),
            Adversary::Opening => text
                .iter()
                .copied()
                .filter(|t| has(t, &|c| matches!(c, b'{' | b'[' | b'(' | b'"')))
                .collect(),
            Adversary::Digits => text
                .iter()
                .copied()
                .filter(|t| has(t, &|c| c.is_ascii_digit()))
                .collect(),
        };
        let pool = if preferred.is_empty() {
            &text
        } else {
            &preferred
        };
        pool.iter().copied().max_by_key(len)
    }
}

/// Runs `grammar` under every budget from its minimum to the minimum + 20 with each
/// adversary: the output must end accepting within the budget.
fn check_budgets(name: &str, grammar: &Grammar, vocab: &Arc<Vocabulary>) {
    let compiled = compile(grammar, vocab);
    let needed = Matcher::new(compiled.clone())
        .shortest_completion()
        .expect("within limits")
        .expect("a completion")
        .tokens
        .len();
    assert_eq!(
        Matcher::with_token_budget(compiled.clone(), needed.saturating_sub(1)).err(),
        (needed > 0).then_some(MatchError::BudgetTooSmall {
            needed,
            budget: needed - 1
        }),
        "{name}: a budget below the minimum is refused"
    );
    let width = vocab.logits_width();
    for budget in needed..=needed + 20 {
        for adversary in [Adversary::Longest, Adversary::Opening, Adversary::Digits] {
            let mut m = Matcher::with_token_budget(compiled.clone(), budget).expect("fits");
            let mut mask = vec![0u32; compiled.mask_words()];
            let mut text = Vec::new();
            loop {
                if m.is_finished() {
                    break;
                }
                m.fill_mask(&mut mask).expect("mask");
                let tokens = allowed(&mask, width);
                assert!(
                    !tokens.is_empty(),
                    "{name}, budget {budget}, {adversary:?}: no token allowed after {:?}",
                    String::from_utf8_lossy(&text)
                );
                let Some(token) = adversary.pick(vocab, &tokens) else {
                    break; // only the end is allowed
                };
                m.accept_token(token).expect("an allowed token is accepted");
                text.extend_from_slice(vocab.token_bytes(token).unwrap_or_default());
            }
            assert!(
                m.tokens_used() <= budget,
                "{name}, budget {budget}: {} tokens",
                m.tokens_used()
            );
            assert!(
                accepts(&compiled, &text),
                "{name}, budget {budget}, {adversary:?}: incomplete {:?}",
                String::from_utf8_lossy(&text)
            );
        }
    }
}

fn grammars() -> Vec<(&'static str, Grammar)> {
    vec![
        ("json", json_grammar()),
        ("arithmetic", arithmetic_grammar()),
        ("record", record_grammar()),
        ("record in any order", unordered_record_grammar()),
        ("two records", two_records_grammar()),
        ("counted string", counted_string_graph_grammar(3, 40, "\"")),
        ("words", words_graph_grammar()),
    ]
}

#[test]
fn outputs_end_complete_within_every_budget() {
    for vocab in [byte_vocab(), word_vocab()] {
        for (name, grammar) in grammars() {
            check_budgets(name, &grammar, &vocab);
        }
    }
}

#[test]
fn an_ample_budget_leaves_masks_unchanged() {
    let vocab = word_vocab();
    let width = vocab.logits_width();
    for (name, grammar) in grammars() {
        let compiled: Arc<CompiledGrammar> = compile(&grammar, &vocab);
        let mut free = Matcher::new(compiled.clone());
        let mut bounded = Matcher::with_token_budget(compiled.clone(), 100_000).expect("fits");
        let (mut a, mut b) = (
            vec![0u32; compiled.mask_words()],
            vec![0u32; compiled.mask_words()],
        );
        for step in 0..60 {
            free.fill_mask(&mut a).expect("mask");
            bounded.fill_mask(&mut b).expect("mask");
            assert_eq!(a, b, "{name}: masks differ at step {step}");
            let tokens: Vec<u32> = allowed(&a, width)
                .into_iter()
                .filter(|&t| vocab.kind(t) == Some(TokenKind::Text))
                .collect();
            let Some(&token) = tokens.get(step * 7 % tokens.len().max(1)) else {
                break;
            };
            free.accept_token(token).expect("allowed");
            bounded.accept_token(token).expect("allowed");
        }
        assert_eq!(bounded.budget_constrained_steps(), 0, "{name}");
    }
}

#[test]
fn rollback_restores_the_budget() {
    let vocab = byte_vocab();
    let compiled = compile(&record_grammar(), &vocab);
    let mut m = Matcher::new(compiled);
    m.accept_bytes(b"{\"name\": \"").expect("valid");
    let rest = m.shortest_completion().unwrap().unwrap().tokens.len();
    m.set_token_budget(Some(rest + 3)).expect("fits");
    for &b in b"abc" {
        m.accept_token(u32::from(b)).expect("allowed");
    }
    assert_eq!(m.tokens_left(), Some(rest));
    // Three tokens spent inside the name: only the way out fits now, not a fourth letter.
    assert!(!m.is_token_allowed(u32::from(b'd')).unwrap());
    assert!(m.is_token_allowed(u32::from(b'"')).unwrap());
    m.rollback(2).unwrap();
    assert_eq!(m.tokens_left(), Some(rest + 2));
    assert!(m.is_token_allowed(u32::from(b'd')).unwrap());
}

/// Walks `grammar` under random budgets, twice in lockstep: with the budget's bound and with
/// its exact walk alone. The masks must be the same at every step, the bound never below the
/// walk's figure, and the output complete within its budget. Returns how many steps the bound
/// was known (not `u64::MAX`) and how many steps were checked.
fn bound_agrees_with_the_walk(
    name: &str,
    grammar: &Grammar,
    vocab: &Arc<Vocabulary>,
    seed: u64,
) -> (usize, usize) {
    let fast = compile(grammar, vocab);
    let exact = compile(grammar, vocab);
    exact.set_budget_walk_only(true);
    let needed = Matcher::new(fast.clone())
        .shortest_completion()
        .expect("within limits")
        .expect("a completion")
        .tokens
        .len();
    let width = vocab.logits_width();
    let widest_completion = fast.widest_completion_bytes().expect("within limits");
    let mut rng = constrain_testdata::XorShift64::new(seed);
    let (mut known, mut steps) = (0, 0);
    for run in 0..12 {
        let budget = needed + (rng.next_u64() % 24) as usize;
        let mut a = Matcher::with_token_budget(fast.clone(), budget).expect("fits");
        let mut b = Matcher::with_token_budget(exact.clone(), budget).expect("fits");
        let (mut ma, mut mb) = (vec![0u32; fast.mask_words()], vec![0u32; fast.mask_words()]);
        let mut text = Vec::new();
        while !a.is_finished() {
            let (bound, widest) = a
                .budget_bound_and_widest()
                .expect("within limits")
                .expect("not ended");
            assert!(
                bound >= widest,
                "{name}, run {run}: bound {bound} below {widest} after {:?}",
                String::from_utf8_lossy(&text)
            );
            let needs = a.shortest_completion().expect("within limits");
            let needs = needs.map_or(u64::MAX, |c| c.bytes.len() as u64);
            assert!(
                widest_completion.is_none_or(|w| needs <= w),
                "{name}, run {run}: a completion of {needs} bytes, wider than {widest_completion:?}"
            );
            known += usize::from(bound != u64::MAX);
            steps += 1;
            a.fill_mask(&mut ma).expect("mask");
            b.fill_mask(&mut mb).expect("mask");
            assert_eq!(
                ma,
                mb,
                "{name}, run {run}, budget {budget}: masks differ after {:?}",
                String::from_utf8_lossy(&text)
            );
            let tokens: Vec<u32> = allowed(&ma, width)
                .into_iter()
                .filter(|&t| vocab.kind(t) == Some(TokenKind::Text))
                .collect();
            if tokens.is_empty() {
                break;
            }
            // Mostly random tokens; now and then the longest, which opens the most.
            let token = if rng.next_u64() % 4 == 0 {
                Adversary::Longest.pick(vocab, &tokens).unwrap_or(tokens[0])
            } else {
                tokens[(rng.next_u64() % tokens.len() as u64) as usize]
            };
            a.accept_token(token).expect("allowed");
            b.accept_token(token).expect("allowed");
            text.extend_from_slice(vocab.token_bytes(token).unwrap_or_default());
        }
        assert!(a.tokens_used() <= budget, "{name}: over budget");
        assert!(
            accepts(&fast, &text),
            "{name}, budget {budget}: incomplete {:?}",
            String::from_utf8_lossy(&text)
        );
    }
    (known, steps)
}

#[test]
fn the_bound_leaves_every_budgeted_mask_as_the_walk_makes_it() {
    let mut known = 0;
    let mut steps = 0;
    // Words, each ended by `;` or by a comma and a long tail before the next: a token like
    // `e,` ends the word and starts the tail, so the completion after it is far longer than
    // after any token inside the word (the tail is a terminal of its own: it comes before a
    // rule).
    let crossing = {
        let mut b = GrammarBuilder::new();
        let root = b.rule_id("root");
        let tail = b.rule_id("tail");
        let word = Expr::regex("[a-z]+").expect("valid regex");
        b.define(root, Expr::seq(vec![word, Expr::rule(tail)]))
            .expect("defined once");
        b.define(
            tail,
            Expr::alt(vec![
                Expr::literal(";"),
                Expr::seq(vec![
                    Expr::literal(",0123456789abcdefghij"),
                    Expr::rule(root),
                ]),
            ]),
        )
        .expect("defined once");
        b.build(root).expect("valid grammar")
    };
    let mut cases = grammars();
    cases.push(("a word, then a long tail", crossing));
    for vocab in [byte_vocab(), word_vocab()] {
        for (seed, (name, grammar)) in cases.iter().enumerate() {
            let (k, n) = bound_agrees_with_the_walk(name, grammar, &vocab, seed as u64 + 1);
            known += k;
            steps += n;
        }
    }
    // The bound must be known at most steps, or this test checks little of it.
    assert!(
        known * 2 > steps,
        "the bound was known at {known} of {steps} steps"
    );
}

#[test]
fn a_state_of_several_scans_is_bounded_through_each_scan_alone() {
    // After `12`, the first number may go on or end, and a second one, closed by a long
    // tail, may begin: states of two scans, whose tokens fit where they fit from either.
    let grammar = {
        let mut b = GrammarBuilder::new();
        let root = b.rule_id("root");
        let number = || Expr::regex("[0-9]+").expect("valid regex");
        b.define(
            root,
            Expr::seq(vec![
                number(),
                Expr::alt(vec![
                    Expr::literal(";"),
                    Expr::seq(vec![number(), Expr::literal("x, and then a long tail;")]),
                ]),
            ]),
        )
        .expect("defined once");
        b.build(root).expect("valid grammar")
    };
    for vocab in [byte_vocab(), word_vocab()] {
        let (known, steps) = bound_agrees_with_the_walk("two numbers", &grammar, &vocab, 7);
        assert_eq!(
            known, steps,
            "the bound was known at {known} of {steps} steps"
        );
    }
}

#[test]
fn tokens_inside_a_lexeme_are_refused_by_where_they_end() {
    // Inside the string, a letter ends where `";` completes the output, and `\u00` ends in
    // an escape that needs two more digits first: with one token of room after the next,
    // the letter fits and the escape does not.
    let mut texts: Vec<Vec<u8>> = (0x20..0x7fu8).map(|b| vec![b]).collect();
    texts.extend([b"\\u00".to_vec(), b"\";".to_vec(), b"ab".to_vec()]);
    let eos = texts.len() as u32;
    let vocab = Arc::new(
        Vocabulary::from_tokens(
            texts
                .iter()
                .enumerate()
                .map(|(i, t)| (i as u32, t.clone(), TokenKind::Text))
                .chain([(eos, b"</s>".to_vec(), TokenKind::EndOfSequence)]),
        )
        .expect("a vocabulary"),
    );
    let id = |text: &[u8]| texts.iter().position(|t| t == text).expect("a token") as u32;
    let grammar = Grammar::from_regex(r#""([a-z]|\\u[0-9a-f]{4})*";"#).expect("valid regex");
    let compiled = compile(&grammar, &vocab);
    let mut m = Matcher::with_token_budget(compiled.clone(), 3).expect("fits");
    m.accept_token(id(b"\"")).expect("allowed");
    let mut mask = vec![0u32; compiled.mask_words()];
    m.fill_mask(&mut mask).expect("mask");
    let has = |t: u32| mask[(t / 32) as usize] >> (t % 32) & 1 == 1;
    assert!(
        has(id(b"a")) && has(id(b"ab")) && has(id(b"\";")),
        "what fits stays"
    );
    assert!(!has(id(b"\\u00")) && !has(id(b"\\")), "escapes do not fit");
    for seed in 1..=4 {
        bound_agrees_with_the_walk("escaped string", &grammar, &vocab, seed);
    }
}
