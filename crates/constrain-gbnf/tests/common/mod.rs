//! Matching helpers shared by the test files: compile a grammar for a vocabulary of the 256
//! single bytes plus an end-of-sequence token, and check whole strings against it.

#![allow(dead_code)]

use std::sync::{Arc, OnceLock};

use constrain_engine::{CompiledGrammar, Grammar, Limits, Matcher, TokenIndex};

/// The token index of the byte vocabulary, built once per test binary.
pub fn byte_index() -> Arc<TokenIndex> {
    static INDEX: OnceLock<Arc<TokenIndex>> = OnceLock::new();
    INDEX
        .get_or_init(|| TokenIndex::new(constrain_testdata::byte_vocabulary()))
        .clone()
}

/// Compiles `grammar` for the byte vocabulary.
pub fn compile(grammar: &Grammar) -> Arc<CompiledGrammar> {
    CompiledGrammar::new(grammar, byte_index(), Limits::default())
        .unwrap_or_else(|e| panic!("grammar does not compile: {e}"))
}

/// Whether `input` is accepted completely (all its bytes, then the end).
pub fn accepts(compiled: &Arc<CompiledGrammar>, input: &[u8]) -> bool {
    let mut matcher = Matcher::new(compiled.clone());
    matcher.accept_bytes(input).is_ok() && matcher.is_accepting()
}

/// Asserts that every string of `accept` is accepted and none of `reject` is.
pub fn assert_language(
    name: &str,
    compiled: &Arc<CompiledGrammar>,
    accept: &[&str],
    reject: &[&str],
) {
    let mut wrong = Vec::new();
    for s in accept {
        if !accepts(compiled, s.as_bytes()) {
            wrong.push(format!("rejected but valid: {s:?}"));
        }
    }
    for s in reject {
        if accepts(compiled, s.as_bytes()) {
            wrong.push(format!("accepted but invalid: {s:?}"));
        }
    }
    assert!(wrong.is_empty(), "{name}:\n  {}", wrong.join("\n  "));
}
