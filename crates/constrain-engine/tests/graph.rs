//! Terminals given as graphs (`Expr::Graph`) match exactly what the same language written as
//! one regular expression matches, with the same masks.

mod common;

use std::sync::Arc;

use common::*;
use constrain_engine::{CompiledGrammar, Grammar, Matcher};
use constrain_testdata::{allowed_ids, XorShift64};
use constrain_vocab::{TokenKind, Tokenizer, Vocabulary};

/// Every text over `alphabet` of up to `max_len` bytes after `prefix`.
fn texts(prefix: &str, alphabet: &[u8], max_len: usize) -> Vec<Vec<u8>> {
    let mut all = vec![prefix.as_bytes().to_vec()];
    let mut level = all.clone();
    for _ in 0..max_len {
        level = level
            .iter()
            .flat_map(|t| {
                alphabet.iter().map(move |&b| {
                    let mut t = t.clone();
                    t.push(b);
                    t
                })
            })
            .collect();
        all.extend(level.iter().cloned());
    }
    all
}

#[test]
fn a_graph_accepts_exactly_the_strings_of_its_expression() {
    accepts_exactly_the_words(&words_graph_grammar());
}

#[test]
fn a_graph_with_edge_bounds_accepts_exactly_the_strings_of_its_expression() {
    accepts_exactly_the_words(&counted_words_graph_grammar());
}

fn accepts_exactly_the_words(graph: &Grammar) {
    let vocab = byte_vocab();
    let graph = compile(graph, &vocab);
    let regex = compile(&words_regex_grammar(), &vocab);
    let (mut accepted, mut viable_only) = (0, 0);
    // Bodies of letters and spaces, up to two bytes past the length bound.
    for body in texts("", b"a ", WORDS_MAX_LEN + 2) {
        let open = [b"{\"w\": \"".as_slice(), &body].concat();
        let (gv, rv) = (viable(&graph, &open), viable(&regex, &open));
        assert_eq!(gv, rv, "prefix {:?}", String::from_utf8_lossy(&open));
        let text = [open.as_slice(), b"\"}"].concat();
        let (g, r) = (accepts(&graph, &text), accepts(&regex, &text));
        assert_eq!(g, r, "{:?}", String::from_utf8_lossy(&text));
        accepted += usize::from(g);
        viable_only += usize::from(gv && !g);
    }
    // The bodies of one to three words of `a`s joined by single spaces within ten bytes, and
    // their proper prefixes that are not bodies themselves (`a `, the empty body, ...),
    // counted by enumeration.
    assert_eq!((accepted, viable_only), (102, 30));
    // Every body of 1 to 3 words within 10 letters and spaces over {a, b} is in both.
    for (text, expected) in [
        (r#"{"w": "ab ba abab"}"#, true),
        (r#"{"w": "abababab ab"}"#, false),
        (r#"{"w": "a b a b"}"#, false),
        (r#"{"w": "a  b"}"#, false),
        (r#"{"w": "ab "}"#, false),
        (r#"{"w": ""}"#, false),
    ] {
        assert_eq!(accepts(&graph, text.as_bytes()), expected, "{text}");
    }
}

/// Walks `graph` and the same language as one expression, `regex`, with the same random
/// tokens, comparing every mask.
fn masks_agree(
    graph: &Grammar,
    regex: &Grammar,
    vocab: &Arc<Vocabulary>,
    walks: u64,
    steps: usize,
) -> usize {
    let graph: Arc<CompiledGrammar> = compile(graph, vocab);
    let regex = compile(regex, vocab);
    let width = vocab.logits_width();
    let mut checked = 0;
    for seed in 1..=walks {
        let mut rng = XorShift64::new(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
        let (mut g, mut r) = (Matcher::new(graph.clone()), Matcher::new(regex.clone()));
        let (mut gm, mut rm) = (
            vec![0u32; graph.mask_words()],
            vec![0u32; regex.mask_words()],
        );
        for step in 0..steps {
            g.fill_mask(&mut gm).expect("mask");
            r.fill_mask(&mut rm).expect("mask");
            assert_eq!(gm, rm, "walk {seed}, step {step}");
            checked += 1;
            let allowed: Vec<u32> = allowed_ids(&gm, width)
                .into_iter()
                .filter(|&t| vocab.kind(t) != Some(TokenKind::EndOfSequence))
                .collect();
            if allowed.is_empty() {
                break;
            }
            let token = allowed[rng.index(allowed.len())];
            g.accept_token(token).expect("allowed");
            r.accept_token(token).expect("the same language");
        }
    }
    checked
}

#[test]
fn a_graph_has_the_masks_of_its_expression() {
    has_the_masks_of_the_words(
        &words_graph_grammar(),
        "a_graph_has_the_masks_of_its_expression",
    );
}

#[test]
fn a_graph_with_edge_bounds_has_the_masks_of_its_expression() {
    has_the_masks_of_the_words(
        &counted_words_graph_grammar(),
        "a_graph_with_edge_bounds_has_the_masks_of_its_expression",
    );
}

fn has_the_masks_of_the_words(graph: &Grammar, test: &str) {
    has_the_masks_of(graph, &words_regex_grammar(), 30, test);
}

/// [`masks_agree`] over the test vocabularies, the fixture tokenizer and, when present, the
/// shared ones, in walks of up to `steps` tokens.
fn has_the_masks_of(graph: &Grammar, regex: &Grammar, steps: usize, test: &str) {
    // Single bytes: every trie node a leaf, so a lexeme walk decides each byte from the
    // radii alone wherever they allow it.
    assert!(masks_agree(graph, regex, &byte_vocab(), 20, steps) > 40);
    assert!(masks_agree(graph, regex, &word_vocab(), 20, steps) > 40);
    let tokenizer =
        Tokenizer::from_file(constrain_testdata::fixture_tokenizer()).expect("fixture loads");
    assert!(masks_agree(graph, regex, tokenizer.vocabulary(), 20, steps) > 40);
    if constrain_testdata::require_shared_or_skip(test).is_some() {
        for name in constrain_testdata::SHARED_TOKENIZERS {
            let path = constrain_testdata::shared_tokenizer(name).expect("present");
            let tokenizer = Tokenizer::from_file(&path).expect("tokenizer loads");
            assert!(
                masks_agree(graph, regex, tokenizer.vocabulary(), 5, steps) > 10,
                "{name}"
            );
        }
    }
}

/// A long counted string (its lexer radii come from its count: short of the fewest
/// characters, where the count only delays the end; near the most, followed to the end)
/// has the masks of the same string spelled out per character.
#[test]
fn a_long_counted_string_has_the_masks_of_its_expression() {
    for (min, max) in [(0, 40), (24, 60), (60, 60)] {
        has_the_masks_of(
            &counted_string_graph_grammar(min, max, ""),
            &counted_string_regex_grammar(min, max, ""),
            80,
            "a_long_counted_string_has_the_masks_of_its_expression",
        );
    }
}

/// Where a string character no other edge reads begins the edge into the end, short of the
/// fewest edges the count kills what the graph alone keeps alive: radii there must not be
/// those of the graph alone.
#[test]
fn a_counted_string_whose_end_begins_with_a_string_byte_has_the_masks_of_its_expression() {
    has_the_masks_of(
        &counted_string_graph_grammar(24, 60, "é"),
        &counted_string_regex_grammar(24, 60, "é"),
        80,
        "a_counted_string_whose_end_begins_with_a_string_byte_has_the_masks_of_its_expression",
    );
}
