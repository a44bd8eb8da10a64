//! The `lark` package as oracle: grammars written for these tests, and the verdicts of Lark's
//! Earley parser (dynamic lexer) on strings derived from them and mutated, recorded in
//! `tests/data/*.json` by `scripts/lark-oracle.py`. Every string must be accepted or rejected
//! as Lark does, byte by byte and token by token with real tokenizers.
//!
//! Strings on which Lark's `dynamic` and `dynamic_complete` lexers disagree are checked
//! against `dynamic_complete`: a text is in the language when any split of it into terminals
//! parses (see the crate docs).

use std::path::PathBuf;
use std::sync::Arc;

use constrain_engine::{CompiledGrammar, Limits, Matcher, TokenIndex};
use constrain_testdata::is_allowed;
use constrain_vocab::Tokenizer;
use serde_json::Value;

/// One grammar with the oracle's verdicts.
struct Case {
    name: String,
    grammar: String,
    /// Each string with whether it is in the language.
    strings: Vec<(String, bool)>,
}

fn cases() -> Vec<Case> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data");
    let mut paths: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("tests/data exists")
        .map(|e| e.expect("readable entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    paths.sort();
    paths
        .iter()
        .map(|path| {
            let text = std::fs::read_to_string(path).expect("readable case");
            let case: Value = serde_json::from_str(&text).expect("a JSON case");
            let list = |key: &str| -> Vec<String> {
                case[key]
                    .as_array()
                    .map(|a| {
                        a.iter()
                            .filter_map(|s| s.as_str().map(str::to_string))
                            .collect()
                    })
                    .unwrap_or_default()
            };
            let mut strings: Vec<(String, bool)> =
                list("accept").into_iter().map(|s| (s, true)).collect();
            strings.extend(list("reject").into_iter().map(|s| (s, false)));
            for d in case["lexer_dependent"].as_array().into_iter().flatten() {
                let text = d["text"].as_str().expect("text").to_string();
                let complete = d["dynamic_complete"].as_bool().expect("verdict");
                strings.push((text, complete));
            }
            Case {
                name: case["name"].as_str().expect("name").to_string(),
                grammar: case["grammar"].as_str().expect("grammar").to_string(),
                strings,
            }
        })
        .collect()
}

fn compile(case: &Case, index: &Arc<TokenIndex>) -> Arc<CompiledGrammar> {
    let grammar = constrain_lark::parse(&case.grammar)
        .unwrap_or_else(|e| panic!("{}: does not parse: {e}", case.name));
    CompiledGrammar::new(&grammar, index.clone(), Limits::default())
        .unwrap_or_else(|e| panic!("{}: does not compile: {e}", case.name))
}

fn accepts_bytes(grammar: &Arc<CompiledGrammar>, text: &str) -> bool {
    let mut matcher = Matcher::new(grammar.clone());
    matcher.accept_bytes(text.as_bytes()).is_ok() && matcher.is_accepting()
}

/// Whether the tokens of `text` are each in the mask, in turn, and end accepted.
fn accepts_tokens(grammar: &Arc<CompiledGrammar>, tokens: &[u32]) -> bool {
    let mut matcher = Matcher::new(grammar.clone());
    let mut mask = vec![0u32; grammar.mask_words()];
    for &token in tokens {
        matcher.fill_mask(&mut mask).expect("mask");
        if !is_allowed(&mask, token) {
            return false;
        }
        matcher
            .accept_token(token)
            .expect("an allowed token is accepted");
    }
    matcher.is_accepting()
}

/// Where the language differs from Lark's on purpose, with why: Lark matches an `%ignore`d
/// terminal greedily (Python's `re.match` at that point), so a `//` comment there runs to the
/// end of the line; here any split counts, so text after a shorter comment may continue the
/// parse. Listed as (grammar, text), each must still differ: a fix shows up here.
const KNOWN_DIFFERENCES: &[(&str, &str)] = &[
    ("comments_ignored", "hbd8//g\\();"),
    ("comments_ignored", "_U();qR()/*\n\n*/;Xero//$\u{a0}ü()//;"),
    ("comments_ignored", "E/**/()//3>;   \nMnWG();"),
    ("comments_ignored", "\n \n gMK()//~;h//();"),
    ("comments_ignored", "T(//Vcü);"),
    ("comments_ignored", "a()\n ;EzQ()//>;"),
    ("comments_ignored", "nCL//c,(/*o@*/);"),
    ("comments_ignored", "//Gh() \t\n;ZJ9();op( \t\n);OdV/**/();"),
    ("comments_ignored", "nCL//c,(/*o@*/nCL//c,(/*o@*/);"),
];

/// Checks that the strings judged differently from the oracle are exactly the known ones.
fn check_differences(what: &str, checked: usize, wrong: &[(String, String)]) {
    let unexpected: Vec<String> = wrong
        .iter()
        .filter(|(case, text)| !KNOWN_DIFFERENCES.contains(&(case.as_str(), text.as_str())))
        .map(|(case, text)| format!("{case}: {text:?}"))
        .collect();
    assert!(
        unexpected.is_empty(),
        "{what}: {} of {checked} strings judged otherwise than Lark:\n{}",
        unexpected.len(),
        unexpected.join("\n")
    );
    assert_eq!(
        wrong.len(),
        KNOWN_DIFFERENCES.len(),
        "{what}: a known difference is gone; update KNOWN_DIFFERENCES and the docs"
    );
}

#[test]
fn the_data_has_enough_grammars_and_strings() {
    let cases = cases();
    let strings: usize = cases.iter().map(|c| c.strings.len()).sum();
    assert!(cases.len() >= 20, "{} grammars", cases.len());
    assert!(strings >= 1000, "{strings} strings");
    for case in &cases {
        let accepted = case.strings.iter().filter(|s| s.1).count();
        assert!(
            accepted > 0 && accepted < case.strings.len(),
            "{}: one-sided",
            case.name
        );
    }
}

#[test]
fn bytes_are_accepted_and_rejected_as_lark_does() {
    let index = TokenIndex::new(constrain_testdata::byte_vocabulary());
    let mut wrong = Vec::new();
    let mut checked = 0;
    for case in cases() {
        let grammar = compile(&case, &index);
        for (text, expected) in &case.strings {
            checked += 1;
            if accepts_bytes(&grammar, text) != *expected {
                wrong.push((case.name.clone(), text.clone()));
            }
        }
    }
    check_differences("bytes", checked, &wrong);
}

#[test]
fn tokens_of_real_tokenizers_are_in_the_mask_as_lark_decides() {
    if constrain_testdata::require_shared_or_skip(
        "tokens_of_real_tokenizers_are_in_the_mask_as_lark_decides",
    )
    .is_none()
    {
        return;
    }
    let cases = cases();
    for name in ["llama3_1", "gemma3"] {
        let path = constrain_testdata::shared_tokenizer(name).expect("shared tokenizer");
        let tokenizer = Tokenizer::from_file(&path).expect("tokenizer loads");
        let index = TokenIndex::new(tokenizer.vocabulary().clone());
        let mut wrong = Vec::new();
        let mut checked = 0;
        for case in &cases {
            let grammar = compile(case, &index);
            for (text, expected) in &case.strings {
                let tokens = tokenizer.encode(text).expect("encodes");
                if tokenizer.decode_bytes(&tokens) != text.as_bytes() {
                    // The tokenizer normalizes this text: its tokens spell another one.
                    continue;
                }
                checked += 1;
                if accepts_tokens(&grammar, &tokens) != *expected {
                    wrong.push((case.name.clone(), text.clone()));
                }
            }
        }
        eprintln!("{name}: {checked} strings checked token by token");
        assert!(
            checked >= 1000,
            "{name}: only {checked} strings spelled exactly"
        );
        check_differences(name, checked, &wrong);
    }
}
