//! `uniqueItems` over strings and any values the grammar cannot keep apart, kept by the
//! check beside it:
//! documents accepted and refused through the engine, random generations that must all be
//! valid and never stuck, rollback, and the schemas it refuses.

mod common;

use std::sync::Arc;

use common::{byte_index, Checked};
use constrain_engine::{CompiledGrammar, Limits, Matcher, TokenIndex};
use constrain_jsonschema::{compile, Numbers, Options};
use constrain_testdata::XorShift64;
use constrain_vocab::{TokenKind, Vocabulary};
use serde_json::{json, Value};

/// `schema` compiled with every number spelling the specification allows: equal values
/// spelled apart (`1` and `1.0`, `0` and `-0`) must still count as equal.
fn checked(schema: &Value) -> Checked {
    let options = Options {
        numbers: Numbers::Any,
        ..Options::default()
    };
    Checked::new(&byte_index(), schema, &options)
        .unwrap_or_else(|e| panic!("{schema} does not compile: {e}"))
}

#[test]
fn repeated_strings_are_refused_wherever_the_array_stands() {
    let schema = json!({
        "type": "object",
        "properties": {
            "tags": {"type": "array", "uniqueItems": true, "items": {"type": "string"}},
            "list": {"type": "array", "items": {"type": "string"}},
            "groups": {"type": "array", "items": {
                "type": "array", "uniqueItems": true, "items": {"type": "string", "pattern": "^[a-z]+$"}
            }}
        }
    });
    let c = checked(&schema);
    for text in [
        r#"{"tags": ["a", "b", "ab"]}"#,
        r#"{"tags": []}"#,
        r#"{"tags": ["x"], "list": ["x", "x"]}"#,
        r#"{"groups": [["a", "b"], ["a", "b"]]}"#,
        r#"{"tags": ["a\"", "a\\"]}"#,
        r#"{"tags": ["é", "e"]}"#,
    ] {
        assert!(c.accepts_text(text), "should accept {text}");
    }
    for text in [
        r#"{"tags": ["a", "a"]}"#,
        r#"{"tags": ["a", "b", "a"]}"#,
        r#"{"tags": ["a", "\u0061"]}"#,
        r#"{"tags": ["\u00e9", "é"]}"#,
        r#"{"groups": [["a"], ["b", "b"]]}"#,
        r#"{"tags": ["", ""], "list": []}"#,
    ] {
        assert!(!c.accepts_text(text), "should refuse {text}");
    }
}

#[test]
fn the_document_itself_and_arrays_under_undeclared_keys() {
    // An array met with another `allOf` branch's: one array set, unique.
    let c = checked(&json!({"allOf": [
        {"properties": {"t": {"type": "array", "uniqueItems": true, "items": {"type": "string"}}}},
        {"properties": {"t": {"minItems": 2, "items": {"pattern": "^x"}}}}
    ]}));
    assert!(c.accepts_text(r#"{"t": ["x", "xy"]}"#));
    assert!(!c.accepts_text(r#"{"t": ["x", "x"]}"#));
    assert!(!c.accepts_text(r#"{"t": ["x", "y"]}"#));
    let c = checked(
        &json!({"type": "array", "uniqueItems": true, "items": {"type": "string", "minLength": 1}}),
    );
    assert!(c.accepts_text(r#"["x", "y"]"#));
    assert!(!c.accepts_text(r#"["x", "y", "x"]"#));
    // Words beside any string: a union that never runs out.
    let c = checked(
        &json!({"type": "array", "uniqueItems": true, "items": {"anyOf": [
            {"type": "string", "minLength": 2}, {"enum": ["m", "x"]}
        ]}}),
    );
    assert!(c.accepts_text(r#"["m", "x", "xy"]"#));
    assert!(!c.accepts_text(r#"["m", "xy", "m"]"#));
    assert!(!c.accepts_text(r#"["y"]"#));
    let c = checked(&json!({
        "type": "object",
        "additionalProperties": {"type": "array", "uniqueItems": true, "items": {"type": "string"}}
    }));
    assert!(c.accepts_text(r#"{"a": ["x", "y"], "b": ["x"]}"#));
    assert!(!c.accepts_text(r#"{"a": ["x"], "b": ["y", "y"]}"#));
}

#[test]
fn any_values_are_distinct_as_json_schema_compares_them() {
    let c = checked(&json!({"uniqueItems": true}));
    for text in [
        r#"[1, true]"#,
        r#"[0, false]"#,
        r#"[[1], [true]]"#,
        r#"[{"a": false}, {"a": 0}]"#,
        r#"["a", 1, null, [], {}, "1", [[]], {"": null}]"#,
        r#"[1.5, 15e-2, 15, -15]"#,
        r#"[[1, 1], {"a": [2, 2]}]"#,
        r#"{"a": [1, 1]}"#,
        r#"[{"a": 1}, {"a": 1, "b": 1}]"#,
        r#"[ 1 , 2 ]"#,
    ] {
        assert!(c.accepts_text(text), "should accept {text}");
    }
    for text in [
        r#"[1, 1]"#,
        r#"[1, 1.0]"#,
        r#"[1, 10e-1]"#,
        r#"[-0, 0]"#,
        r#"[100, 1e2]"#,
        r#"[null, null]"#,
        r#"[true, false, true]"#,
        r#"["a", "\u0061"]"#,
        r#"[[1], [1]]"#,
        r#"[[1, [2]], [1.0, [2e0]]]"#,
        r#"[{"a": 1, "b": 2}, {"b": 2, "a": 1}]"#,
        r#"[{}, {}]"#,
        r#"[[], []]"#,
        r#"[{"a": [1, "x"]}, { "a" : [ 1 , "\u0078" ] }]"#,
        r#"[1 , 1 ]"#,
    ] {
        assert!(!c.accepts_text(text), "should refuse {text}");
    }
}

#[test]
fn leading_positions_of_literals_and_strings() {
    // Two booleans, then anything: the second boolean is the one the first left.
    let c = checked(&json!({
        "prefixItems": [{"type": "boolean"}, {"type": "boolean"}],
        "uniqueItems": true
    }));
    for text in ["[false, true]", "[true, false, 1, null]", "[true]", "[]"] {
        assert!(c.accepts_text(text), "should accept {text}");
    }
    for text in [
        "[false, false]",
        "[true, false, true]",
        "[true, false, 1, 1]",
    ] {
        assert!(!c.accepts_text(text), "should refuse {text}");
    }
    // Nothing past them.
    let c = checked(&json!({
        "prefixItems": [{"type": "boolean"}, {"type": ["boolean", "null"]}, {"type": "string"}],
        "items": false,
        "uniqueItems": true
    }));
    assert!(c.accepts_text(r#"[true, null, "true"]"#));
    assert!(!c.accepts_text("[true, true]"));
    assert!(!c.accepts_text(r#"[true, null, "a", "b"]"#));
    // A position whose values the ones before it may all have taken is refused.
    for schema in [
        json!({"prefixItems": [{"type": "boolean"}, {"type": "boolean"}, {"type": "boolean"}],
               "uniqueItems": true}),
        json!({"prefixItems": [{"const": true}, {"const": true}], "uniqueItems": true}),
        json!({"prefixItems": [true, {"enum": ["a", "b"]}], "uniqueItems": true}),
    ] {
        let e = compile(&schema, &Options::default())
            .err()
            .unwrap_or_else(|| panic!("{schema} compiles"));
        assert!(e.to_string().contains("uniqueItems"), "{schema}: {e}");
    }
}

/// The bytes, plus tokens that close one string and open the next, or hold whole elements.
fn token_index() -> Arc<TokenIndex> {
    let mut tokens: Vec<(u32, Vec<u8>, TokenKind)> = (0..=255u8)
        .map(|b| (u32::from(b), vec![b], TokenKind::Text))
        .collect();
    for (i, t) in [
        "\",\"",
        "\", \"",
        "\"]",
        "[\"",
        "\"a\"",
        "\"b\"",
        "\"a\",\"a\"",
        "ab",
        "ba",
        "true",
        "null",
        "1",
        ", ",
    ]
    .iter()
    .enumerate()
    {
        tokens.push((256 + i as u32, t.as_bytes().to_vec(), TokenKind::Text));
    }
    tokens.push((300, b"</s>".to_vec(), TokenKind::EndOfSequence));
    assert!(tokens.len() <= 301, "token ids overlap the end of sequence");
    TokenIndex::new(Arc::new(
        Vocabulary::from_tokens(tokens).expect("vocabulary"),
    ))
}

/// Random documents: a token drawn among those allowed (the end as soon as it is, past a
/// budget), every one of which must validate; the mask is never empty before the end.
#[test]
fn random_generations_are_valid_and_never_stuck() {
    random_walks(
        &json!({
            "type": "object",
            "properties": {"words": {
                "type": "array", "uniqueItems": true, "minItems": 3,
                "items": {"type": "string", "pattern": "^[ab]+$"}
            }},
            "required": ["words"],
            "additionalProperties": false
        }),
        &Options::default(),
    );
    // Any values: literals run out after three, numbers and containers never do.
    random_walks(
        &json!({"type": "array", "uniqueItems": true, "minItems": 3,
                "prefixItems": [{"type": "boolean"}, {"type": ["boolean", "null"]}, {"type": "string"}]}),
        &Options::default(),
    );
    random_walks(
        &json!({"type": "array", "uniqueItems": true, "minItems": 5}),
        &Options::default(),
    );
    random_walks(
        &json!({"type": "array", "uniqueItems": true, "minItems": 6}),
        &Options {
            max_untyped_depth: 0,
            ..Options::default()
        },
    );
}

fn random_walks(schema: &Value, options: &Options) {
    let compiled = compile(schema, options).expect("compiles");
    let grammar =
        CompiledGrammar::new(&compiled.grammar, token_index(), Limits::default()).expect("engine");
    // The same schema without `uniqueItems`, walked in lockstep: what it allows and the
    // check refuses are the repeats.
    let plain = compile(&without_unique(schema), options).expect("compiles");
    let plain =
        CompiledGrammar::new(&plain.grammar, token_index(), Limits::default()).expect("engine");
    let validator = jsonschema::validator_for(schema).expect("reference validator");
    let mut rng = XorShift64::new(0x9e37_79b9_7f4a_7c15);
    let mut mask = vec![0u32; grammar.mask_words()];
    let mut plain_mask = mask.clone();
    let mut repeats_refused = 0;
    let mut validated = 0;
    for _ in 0..300 {
        let mut m = Matcher::new(grammar.clone());
        let mut p = Matcher::new(plain.clone());
        let mut text = Vec::new();
        loop {
            m.fill_mask(&mut mask).expect("mask");
            p.fill_mask(&mut plain_mask).expect("mask");
            assert!(
                mask.iter().zip(&plain_mask).all(|(u, p)| u & !p == 0),
                "the check allows what the grammar does not"
            );
            repeats_refused += mask
                .iter()
                .zip(&plain_mask)
                .map(|(u, p)| (p & !u).count_ones())
                .sum::<u32>();
            if m.is_accepting() && (text.len() > 24 || rng.below(4) == 0) {
                break;
            }
            let allowed: Vec<u32> = (0..300u32)
                .filter(|&t| mask[(t >> 5) as usize] & (1 << (t & 31)) != 0)
                .collect();
            assert!(
                !allowed.is_empty(),
                "stuck after {}",
                String::from_utf8_lossy(&text)
            );
            // Short tokens first: whole elements and closing quotes are drawn often.
            let pick = if text.len() < 40 {
                allowed[rng.index(allowed.len())]
            } else {
                *allowed
                    .iter()
                    .find(|&&t| {
                        t == u32::from(b'"') || t == u32::from(b']') || t == u32::from(b'}')
                    })
                    .unwrap_or(&allowed[rng.index(allowed.len())])
            };
            text.extend_from_slice(m.grammar().vocabulary().token_bytes(pick).expect("text"));
            m.accept_token(pick).expect("allowed token is accepted");
            p.accept_token(pick)
                .expect("the plain grammar allows it too");
            assert!(
                text.len() < 4_000,
                "runaway: {}",
                String::from_utf8_lossy(&text)
            );
        }
        // The validator compares numbers as `f64`: `703e-83211` would be `0` to it.
        if !numbers_fit_f64(&text) {
            continue;
        }
        let value: Value = serde_json::from_slice(&text)
            .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&text)));
        validated += 1;
        assert!(
            validator.is_valid(&value),
            "invalid: {}",
            String::from_utf8_lossy(&text)
        );
    }
    assert!(
        repeats_refused > 0,
        "{schema}: no token was ever refused by the check"
    );
    assert!(
        validated >= 200,
        "{schema}: {validated} documents validated"
    );
}

/// Whether every number of the JSON `text` is one `f64` tells apart from every other: at
/// most 15 significant digits, exponents within ±250.
fn numbers_fit_f64(text: &[u8]) -> bool {
    let (mut in_string, mut escaped) = (false, false);
    let mut number = String::new();
    for &b in text.iter().chain(b" ") {
        if in_string {
            in_string = escaped || b != b'"';
            escaped = !escaped && b == b'\\';
        } else if matches!(b, b'0'..=b'9' | b'-')
            || !number.is_empty() && matches!(b, b'+' | b'.' | b'e' | b'E')
        {
            number.push(char::from(b));
        } else {
            if !number.is_empty() {
                let (mantissa, exp) = number.split_once(['e', 'E']).unwrap_or((&number, "0"));
                let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
                let significant = digits.trim_start_matches('0').len();
                if significant > 15 || exp.parse::<i32>().map_or(true, |e| e.abs() > 250) {
                    return false;
                }
                number.clear();
            }
            in_string = b == b'"';
        }
    }
    true
}

/// `schema` with every `uniqueItems` dropped.
fn without_unique(schema: &Value) -> Value {
    match schema {
        Value::Object(map) => Value::Object(
            map.iter()
                .filter(|(k, _)| *k != "uniqueItems")
                .map(|(k, v)| (k.clone(), without_unique(v)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(without_unique).collect()),
        other => other.clone(),
    }
}

#[test]
fn rollback_and_clones_keep_their_own_elements() {
    let schema = json!({"type": "array", "uniqueItems": true, "items": {"type": "string"}});
    let compiled = compile(&schema, &Options::default()).expect("compiles");
    let grammar =
        CompiledGrammar::new(&compiled.grammar, token_index(), Limits::default()).expect("engine");
    let id = |text: &str| -> u32 {
        (0..300u32)
            .find(|&t| grammar.vocabulary().token_bytes(t) == Some(text.as_bytes()))
            .expect("token")
    };
    let allowed = |m: &mut Matcher, text: &str| m.is_token_allowed(id(text)).expect("asked");
    let mut m = Matcher::new(grammar.clone());
    m.accept_token(id("[")).expect("[");
    assert!(
        !allowed(&mut m, "\"a\",\"a\""),
        "two equal elements in one token"
    );
    m.accept_token(id("\"a\"")).expect("\"a\"");
    m.accept_token(id(",")).expect(",");
    assert!(!allowed(&mut m, "\"a\""), "a repeat");
    assert!(allowed(&mut m, "\"b\""));
    let mut fork = m.clone();
    m.accept_token(id("\"b\"")).expect("\"b\"");
    m.accept_token(id(",")).expect(",");
    assert!(!allowed(&mut m, "\"a\"") && !allowed(&mut m, "\"b\""));
    // The fork never read the second element.
    assert!(allowed(&mut fork, "\"b\""));
    // Rolled back past the second element, then past the first.
    m.rollback(2).expect("rollback");
    assert!(allowed(&mut m, "\"b\"") && !allowed(&mut m, "\"a\""));
    m.rollback(2).expect("rollback");
    assert!(allowed(&mut m, "\"a\""));
    m.reset();
    assert!(m.accept_bytes(b"[\"a\", \"a\"]").is_err());
    assert!(m.accept_bytes(b"[\"a\", \"ab\"]").is_ok());
}

#[test]
fn what_the_check_cannot_hold_is_refused() {
    let refused = |schema: Value, says: &str| {
        let e = compile(&schema, &Options::default())
            .err()
            .unwrap_or_else(|| panic!("{schema} compiles"));
        let text = e.to_string();
        assert!(
            text.contains("uniqueItems") && text.contains(says),
            "{schema}: {text}"
        );
    };
    // Strings of bounded length run out: the check could corner the output.
    refused(
        json!({"type": "array", "uniqueItems": true, "items": {"type": "string", "maxLength": 3}}),
        "never run out",
    );
    refused(
        json!({"type": "array", "uniqueItems": true, "items": {"type": "string", "format": "date"}}),
        "never run out",
    );
    refused(
        json!({"type": "array", "uniqueItems": true, "items": {"type": "object"}}),
        "never run out",
    );
    // Under one key, an array that must be unique or one that need not be.
    refused(
        json!({"anyOf": [
            {"properties": {"a": {"type": "array", "uniqueItems": true, "items": {"type": "string"}}}},
            {"properties": {"a": {"type": "array", "items": {"type": "string"}}}}
        ]}),
        "depending on more than where it stands",
    );
    // Lenient: the keyword is dropped, with a warning.
    let lenient = Options {
        lenient: true,
        ..Options::default()
    };
    let c = compile(
        &json!({"type": "array", "uniqueItems": true, "items": {"type": "string", "maxLength": 3}}),
        &lenient,
    )
    .expect("lenient compiles");
    assert!(c.warnings.iter().any(|w| w.keyword == "uniqueItems"));
}
