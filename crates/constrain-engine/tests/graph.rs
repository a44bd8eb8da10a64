//! Terminals given as graphs (`Expr::Graph`) match exactly what the same language written as
//! one regular expression matches, with the same masks.

mod common;

use std::sync::Arc;

use common::*;
use constrain_engine::{CompiledGrammar, Grammar, Matcher};
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

/// Walks `graph` and the same language as one expression with the same random tokens,
/// comparing every mask.
fn masks_agree(graph: &Grammar, vocab: &Arc<Vocabulary>, walks: u64, steps: usize) -> usize {
    let graph: Arc<CompiledGrammar> = compile(graph, vocab);
    let regex = compile(&words_regex_grammar(), vocab);
    let width = vocab.logits_width();
    let mut checked = 0;
    for seed in 1..=walks {
        let mut rng = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
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
            let allowed: Vec<u32> = (0..width as u32)
                .filter(|&t| gm[(t / 32) as usize] >> (t % 32) & 1 == 1)
                .filter(|&t| vocab.kind(t) != Some(TokenKind::EndOfSequence))
                .collect();
            if allowed.is_empty() {
                break;
            }
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            let token = allowed[(rng % allowed.len() as u64) as usize];
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
    assert!(masks_agree(graph, &word_vocab(), 20, 30) > 40);
    let tokenizer =
        Tokenizer::from_file(constrain_testdata::fixture_tokenizer()).expect("fixture loads");
    assert!(masks_agree(graph, tokenizer.vocabulary(), 20, 30) > 40);
    if constrain_testdata::require_shared_or_skip(test).is_some() {
        for name in constrain_testdata::SHARED_TOKENIZERS {
            let path = constrain_testdata::shared_tokenizer(name).expect("present");
            let tokenizer = Tokenizer::from_file(&path).expect("tokenizer loads");
            assert!(
                masks_agree(graph, tokenizer.vocabulary(), 5, 30) > 10,
                "{name}"
            );
        }
    }
}
