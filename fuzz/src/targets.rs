//! The body of every fuzz target, one function each, so that `cargo test` can replay the
//! committed regression inputs (`fuzz/regressions/<target>/`) through exactly the code the
//! fuzzer ran (`tests/fuzz_regressions.rs`).

use arbitrary::{Arbitrary, Unstructured};
use constrain_engine::{Grammar, MatchError, Matcher};
use constrain_gbnf::ParseOptions;
use constrain_vocab::Tokenizer;

use super::{allowed_ids, ByteOracle, RegexOracle};

/// The body of one target: it panics on a bug, and returns on any input that is merely bad.
pub type Target = fn(&[u8]);

/// Every target by its name, for replaying a directory per target.
pub const ALL: &[(&str, Target)] = &[
    ("gbnf", gbnf),
    ("lark", lark),
    ("regex", regex),
    ("json_schema", json_schema),
    ("json_schema_structured", json_schema_structured),
    ("vocabulary", vocabulary),
    ("matcher", matcher),
];

/// Arbitrary text as a GBNF grammar: parsed (with and without left recursion, under `root` or
/// another start rule, with a named special token) and, when it parses, compiled for the small
/// fixed vocabulary and walked.
///
/// Layout: a flags byte (high nibble: how many walk choices follow), the choices, the text.
pub fn gbnf(data: &[u8]) {
    let Some((&flags, rest)) = data.split_first() else {
        return;
    };
    let (choices, text) = rest.split_at(rest.len().min(usize::from(flags >> 4)));
    let Ok(text) = std::str::from_utf8(text) else {
        return;
    };
    let mut options = ParseOptions::new().allow_left_recursion(flags & 1 != 0);
    if flags & 2 != 0 {
        options = options.root("expr");
    }
    if flags & 4 != 0 {
        options = options.special_token("<|end|>", super::eos_id());
    }
    let Ok(grammar) = options.parse(text) else {
        return;
    };
    if let Some(compiled) = super::compile(&grammar) {
        super::walk(compiled, choices);
    }
}

/// Arbitrary text as a Lark grammar: parsed (from `start`, or from `expr`) and, when it
/// parses, compiled for the small fixed vocabulary and walked.
///
/// Layout: as [`gbnf`] (flags bit 1: start at `expr`).
pub fn lark(data: &[u8]) {
    let Some((&flags, rest)) = data.split_first() else {
        return;
    };
    let (choices, text) = rest.split_at(rest.len().min(usize::from(flags >> 4)));
    let Ok(text) = std::str::from_utf8(text) else {
        return;
    };
    let mut options = constrain_lark::ParseOptions::new();
    if flags & 2 != 0 {
        options = options.start("expr");
    }
    let Ok(grammar) = options.parse(text) else {
        return;
    };
    if let Some(compiled) = super::compile(&grammar) {
        super::walk(compiled, choices);
    }
}

/// Arbitrary text as a regular expression: compiled for the small fixed vocabulary and walked.
///
/// Layout: as [`gbnf`], with the pattern in place of the grammar.
pub fn regex(data: &[u8]) {
    let Some((&n, rest)) = data.split_first() else {
        return;
    };
    let (choices, pattern) = rest.split_at(rest.len().min(usize::from(n >> 4)));
    let Ok(pattern) = std::str::from_utf8(pattern) else {
        return;
    };
    let Ok(grammar) = Grammar::from_regex(pattern) else {
        return;
    };
    if let Some(compiled) = super::compile(&grammar) {
        super::walk(compiled, choices);
    }
}

/// Raw bytes as a JSON Schema document, with compiler options drawn from the first 16 bytes
/// (which also choose the walk): parsed, compiled to a grammar, compiled for the small fixed
/// vocabulary and walked. Seeds are schema files behind a 16-byte header.
pub fn json_schema(data: &[u8]) {
    let (head, document) = data.split_at(data.len().min(16));
    let mut u = Unstructured::new(head);
    let Ok(options) = super::schema_options(&mut u) else {
        return;
    };
    let Ok(schema) = serde_json::from_slice::<serde_json::Value>(document) else {
        return;
    };
    super::check_schema(&schema, &options, head);
}

/// Schemas generated from the keyword vocabulary (see [`super::small_schema`]), with
/// arbitrary compiler options: compiled and walked.
pub fn json_schema_structured(data: &[u8]) {
    let mut u = Unstructured::new(data);
    let Ok(options) = super::schema_options(&mut u) else {
        return;
    };
    let Ok(schema) = super::small_schema(&mut u, 4) else {
        return;
    };
    let choices = u.take_rest();
    super::check_schema(&schema, &options, choices);
}

/// Arbitrary bytes as a `tokenizer.json`: loaded by the vocabulary loader, and when it loads,
/// its vocabulary indexed and its tokens decoded. (Encoding is the `tokenizers` crate's own
/// code, built lazily, and not fuzzed here.)
pub fn vocabulary(data: &[u8]) {
    let Ok(tokenizer) = Tokenizer::from_json_bytes(data) else {
        return;
    };
    let vocab = tokenizer.vocabulary().clone();
    let _ = constrain_engine::TokenIndex::new(vocab.clone());
    for (id, _, _) in vocab.iter().take(64) {
        let _ = tokenizer.decode_bytes(&[id]);
    }
}

/// One step of [`matcher`].
#[derive(Arbitrary, Debug)]
enum Op {
    /// One of the allowed tokens, by its position among them.
    AllowedToken(u16),
    /// Any id, allowed or not (the matcher must refuse the others and stay unchanged).
    AnyToken(u16),
    /// Raw bytes.
    Bytes(Vec<u8>),
    /// Undo the last few steps.
    Rollback(u8),
}

/// Differential: a small random grammar (a regular expression or a JSON Schema from the
/// generators), then random operations (`accept_token`, `accept_bytes`, `rollback`,
/// `fill_mask`), every mask checked against the brute-force oracle: bit `t` is set iff the
/// output so far followed by token `t`'s bytes is still a prefix of the language (for
/// end-of-sequence: iff the output is in the language).
///
/// The oracle of every grammar is a separately compiled copy walked byte by byte; a regular
/// expression is also checked against `regex-automata`'s minimized DFA, which shares no code
/// with the engine.
pub fn matcher(data: &[u8]) {
    let mut u = Unstructured::new(data);
    let Ok(regex) = bool::arbitrary(&mut u) else {
        return;
    };
    let (grammar, regex_oracle) = if regex {
        let Ok(pattern) = super::small_regex(&mut u, 4) else {
            return;
        };
        let Ok(grammar) = Grammar::from_regex(&pattern) else {
            return;
        };
        (grammar, RegexOracle::new(&pattern).map(|o| (pattern, o)))
    } else {
        let Ok(options) = super::schema_options(&mut u) else {
            return;
        };
        let Ok(schema) = super::small_schema(&mut u, 3) else {
            return;
        };
        let Ok(compiled) =
            constrain_jsonschema::compile_with_limits(&schema, &options, &super::limits())
        else {
            return;
        };
        (compiled.grammar, None)
    };
    let Some(compiled) = super::compile(&grammar) else {
        return;
    };
    let Some(oracle) = ByteOracle::new(&grammar) else {
        return;
    };
    let vocab = super::vocabulary();
    let eos = super::eos_id();
    let width = vocab.logits_width() as u32;
    let bytes_of = |t: u32| vocab.token_bytes(t).unwrap_or_default();
    let mut matcher = Matcher::new(compiled.clone());
    let mut mask = vec![0u32; compiled.mask_words()];
    // The bytes of every accepted step, for the oracle and for rollback.
    let mut steps: Vec<Vec<u8>> = Vec::new();
    // Where end-of-sequence was accepted, if it was.
    let mut eos_at: Option<usize> = None;
    for _ in 0..24 {
        let Ok(op) = Op::arbitrary(&mut u) else {
            break;
        };
        let text: Vec<u8> = steps.concat();
        let ended = eos_at.is_some();
        if matcher.fill_mask(&mut mask).is_err() {
            // A budget ran out: an error, which is allowed; nothing more to compare.
            return;
        }
        let allowed = allowed_ids(&mask);
        if ended {
            assert!(
                allowed.is_empty(),
                "a mask after the end allows {allowed:?}"
            );
        } else {
            let Ok(base) = oracle.after(&text) else {
                return;
            };
            for t in 0..width {
                let bit = allowed.binary_search(&t).is_ok();
                let next = [text.as_slice(), bytes_of(t)].concat();
                let expected = match &base {
                    None => false,
                    Some(m) if t == eos => m.is_accepting(),
                    Some(m) => match m.clone().accept_bytes(bytes_of(t)) {
                        Ok(()) => true,
                        // The oracle's own budget ran out: it knows nothing more.
                        Err(MatchError::LimitExceeded { .. }) => return,
                        Err(_) => false,
                    },
                };
                assert_eq!(
                    bit,
                    expected,
                    "token {t} ({:?}) after {:?}: mask {bit}, oracle {expected}",
                    String::from_utf8_lossy(bytes_of(t)),
                    String::from_utf8_lossy(&text),
                );
                if let Some((pattern, regex)) = &regex_oracle {
                    let by_regex = if t == eos {
                        regex.prefix(&text) == Some(true)
                    } else {
                        regex.prefix(&next).is_some()
                    };
                    assert_eq!(
                        bit,
                        by_regex,
                        "{pattern:?}: token {t} ({:?}) after {:?}: mask {bit}, regex-automata {by_regex}",
                        String::from_utf8_lossy(bytes_of(t)),
                        String::from_utf8_lossy(&text),
                    );
                }
            }
            assert_eq!(matcher.is_accepting(), allowed.binary_search(&eos).is_ok());
            // The shortest completion, where there is one, leads to an accepting state.
            if let Ok(Some(completion)) = matcher.shortest_completion() {
                let done = [text.as_slice(), &completion.bytes].concat();
                let Ok(after) = oracle.after(&done) else {
                    return;
                };
                assert_eq!(
                    after.map(|m| m.is_accepting()),
                    Some(true),
                    "the completion {:?} of {:?} is not accepted",
                    String::from_utf8_lossy(&completion.bytes),
                    String::from_utf8_lossy(&text),
                );
            }
        }
        let mut push = |t: u32, steps: &mut Vec<Vec<u8>>| {
            if t == eos {
                eos_at = Some(steps.len());
                steps.push(Vec::new());
            } else {
                steps.push(bytes_of(t).to_vec());
            }
        };
        match op {
            Op::AllowedToken(i) => {
                if allowed.is_empty() {
                    continue;
                }
                let t = allowed[usize::from(i) % allowed.len()];
                match matcher.accept_token(t) {
                    Ok(()) => push(t, &mut steps),
                    // A budget of the lazily built automaton may end any step, as documented.
                    Err(MatchError::LimitExceeded { .. }) => return,
                    Err(e) => panic!("token {t}, allowed by the mask, is refused: {e}"),
                }
            }
            Op::AnyToken(t) => {
                let t = u32::from(t) % (width + 2);
                let allowed_now = allowed.binary_search(&t).is_ok();
                let before = matcher.steps();
                match matcher.accept_token(t) {
                    Ok(()) => {
                        assert!(allowed_now, "token {t} accepted though the mask refuses it");
                        push(t, &mut steps);
                    }
                    Err(MatchError::LimitExceeded { .. }) => return,
                    Err(_) => {
                        assert!(!allowed_now, "token {t} refused though the mask allows it");
                        assert_eq!(matcher.steps(), before, "a refused token changed the state");
                    }
                }
            }
            Op::Bytes(bytes) => {
                let bytes: Vec<u8> = bytes.into_iter().take(12).collect();
                let before = matcher.steps();
                let next = [text.as_slice(), &bytes].concat();
                let Ok(after) = oracle.after(&next) else {
                    return;
                };
                let expected = !ended && after.is_some();
                match matcher.accept_bytes(&bytes) {
                    Err(MatchError::LimitExceeded { .. }) => return,
                    Ok(()) => {
                        assert!(expected, "bytes {bytes:?} accepted after {text:?}");
                        steps.push(bytes);
                    }
                    Err(_) => {
                        assert!(!expected, "bytes {bytes:?} refused after {text:?}");
                        assert_eq!(matcher.steps(), before, "refused bytes changed the state");
                    }
                }
            }
            Op::Rollback(n) => {
                let n = usize::from(n % 4);
                match matcher.rollback(n) {
                    Ok(()) => {
                        assert!(n <= steps.len());
                        steps.truncate(steps.len() - n);
                        if eos_at.is_some_and(|at| at >= steps.len()) {
                            eos_at = None;
                        }
                        assert_eq!(matcher.steps(), steps.len());
                        assert_eq!(matcher.has_ended(), eos_at.is_some());
                    }
                    Err(_) => assert!(n > steps.len()),
                }
            }
        }
    }
}
