//! Masks against a brute-force oracle: every token of the vocabulary checked on its own, by
//! feeding its bytes to an independently compiled copy of the grammar, on random states reached
//! by walking the grammar with real tokenizers.

mod common;

use std::sync::Arc;

use common::*;
use constrain_engine::{CompiledGrammar, Grammar, Limits, Matcher, TokenIndex};
use constrain_vocab::{TokenKind, Tokenizer, Vocabulary};

/// A small deterministic generator (xorshift64*), enough to pick tokens.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        (self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 33) as usize % n
    }
}

fn allowed(mask: &[u32], width: usize) -> Vec<u32> {
    constrain_testdata::allowed_ids(mask, width)
}

/// Walks `grammar` randomly for `steps` tokens from several seeds, comparing every mask with
/// the oracle. Returns the number of states checked.
fn check_against_oracle(
    name: &str,
    grammar: &Grammar,
    vocab: &Arc<Vocabulary>,
    walks: u64,
    steps: usize,
) -> usize {
    let index = TokenIndex::new(vocab.clone());
    let compiled =
        CompiledGrammar::new(grammar, index.clone(), Limits::default()).expect("compiles");
    let width = vocab.logits_width();
    let mut checked = 0;
    for seed in 1..=walks {
        let oracle_grammar =
            CompiledGrammar::new(grammar, index.clone(), Limits::default()).expect("compiles");
        let mut oracle = Matcher::new(oracle_grammar);
        let mut matcher = Matcher::new(compiled.clone());
        let mut rng = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15));
        let mut mask = vec![0u32; compiled.mask_words()];
        for step in 0..steps {
            matcher.fill_mask(&mut mask).expect("mask");
            let got = allowed(&mask, width);
            let expected: Vec<u32> = (0..width as u32)
                .filter(|&t| oracle.is_token_allowed(t).expect("in range"))
                .collect();
            if got != expected {
                let extra: Vec<_> = got
                    .iter()
                    .filter(|t| !expected.contains(t))
                    .take(5)
                    .collect();
                let missing: Vec<_> = expected
                    .iter()
                    .filter(|t| !got.contains(t))
                    .take(5)
                    .collect();
                panic!("{name}, walk {seed}, step {step}: mask allows {extra:?} wrongly and misses {missing:?}");
            }
            checked += 1;
            let text: Vec<u32> = got
                .iter()
                .copied()
                .filter(|t| vocab.kind(*t) != Some(TokenKind::EndOfSequence))
                .collect();
            if text.is_empty() {
                break;
            }
            let token = text[rng.below(text.len())];
            matcher
                .accept_token(token)
                .expect("allowed token is accepted");
            oracle.accept_token(token).expect("oracle agrees");
        }
    }
    checked
}

fn grammars(vocab: &Vocabulary) -> Vec<(&'static str, Grammar)> {
    let mut list = vec![
        ("json", json_grammar()),
        ("arithmetic", arithmetic_grammar()),
        ("record", record_grammar()),
        ("unordered record", unordered_record_grammar()),
        (
            "email",
            Grammar::from_regex(r"[a-z0-9._]{1,12}@[a-z]{1,10}\.(com|org|net)").unwrap(),
        ),
        (
            "words",
            Grammar::from_regex(r"(\p{L}+ ){1,6}\p{L}+[.!?]").unwrap(),
        ),
        (
            // Compiled in two pieces (a head up to the value, then the rest).
            "large member",
            Grammar::from_regex(
                r#"\{"(name|nom)" ?: ?"[^"\\\x00-\x1F]{0,600}"( ?, ?"age": [0-9]{1,3})?\}"#,
            )
            .unwrap(),
        ),
        (
            // A body that takes raw control bytes (a newline does not end its tokens), in a
            // member large enough to be compiled in two pieces.
            "raw text member",
            Grammar::from_regex(r#"(name|nom)=[^"]{0,600}"( ?, ?[a-z]{1,8}\t[^"]*")?"#).unwrap(),
        ),
        ("shared values", shared_values_grammar()),
        ("two records", two_records_grammar()),
        ("scans apart", scans_apart_grammar()),
        (
            // ECMA-262's `.` as JSON text: no line separators (U+2028, U+2029).
            "dot pattern",
            Grammar::from_regex(
                r#""[^"\\\x00-\x1F\x{2028}\x{2029}]+@[^"\\\x00-\x1F\x{2028}\x{2029}]+""#,
            )
            .unwrap(),
        ),
        (
            // Letters until a space or a hyphen, which a digit kills: subtrees of letters are
            // taken at once.
            "letter words",
            Grammar::from_regex(r#"\{"city": "[a-zA-Z]+(( +|-)[a-zA-Z]+)*"\}"#).unwrap(),
        ),
        ("words graph", words_graph_grammar()),
        (
            "words graph with edge bounds",
            counted_words_graph_grammar(),
        ),
        (
            "counted strings",
            Grammar::from_regex(r#""[^"\\\x00-\x1F]{0,9}"( "[^"\\\x00-\x1F]{2,30}"| [0-9]{1,3})?"#)
                .unwrap(),
        ),
        (
            // Letters until a digit, then exactly five characters: the walk decides the runs
            // below a digit by their length.
            "counted after a pattern",
            Grammar::from_regex(r#""[a-z]*[0-9][^"\\\x00-\x1F]{5}"( [0-9])?"#).unwrap(),
        ),
        (
            // Keys without some ASCII letters: free in every character beyond ASCII.
            "keys without some letters",
            Grammar::from_regex(r#"\{"[^adilosw|"\\\x00-\x1F]*" ?: ?[0-9]{1,3}\}"#).unwrap(),
        ),
    ];
    if let Some((special, _, _)) = vocab.iter().find(|(_, _, k)| *k == TokenKind::Special) {
        list.push(("tool", tool_grammar(special)));
    }
    list
}

#[test]
fn masks_match_oracle_on_small_vocabulary() {
    let vocab = word_vocab();
    for (name, grammar) in grammars(&vocab) {
        let checked = check_against_oracle(name, &grammar, &vocab, 12, 40);
        assert!(checked > 12, "{name}: walked only {checked} states");
    }
}

#[test]
fn masks_match_oracle_on_fixture_tokenizer() {
    let tokenizer =
        Tokenizer::from_file(constrain_testdata::fixture_tokenizer()).expect("fixture loads");
    let vocab = tokenizer.vocabulary().clone();
    for (name, grammar) in grammars(&vocab) {
        check_against_oracle(name, &grammar, &vocab, 2, 12);
    }
}

#[test]
fn masks_match_oracle_on_shared_tokenizers() {
    let Some(_) =
        constrain_testdata::require_shared_or_skip("masks_match_oracle_on_shared_tokenizers")
    else {
        return;
    };
    for name in constrain_testdata::SHARED_TOKENIZERS {
        let path = constrain_testdata::shared_tokenizer(name).expect("shared tokenizer present");
        let tokenizer = Tokenizer::from_file(&path).expect("tokenizer loads");
        let vocab = tokenizer.vocabulary().clone();
        for (grammar_name, grammar) in grammars(&vocab) {
            let checked = check_against_oracle(grammar_name, &grammar, &vocab, 2, 8);
            eprintln!("{name}/{grammar_name}: {checked} states checked");
        }
    }
}
