//! How numbers are spelled: the spellings typed readers accept ([`Numbers::Canonical`], the
//! default) and every spelling the specification allows ([`Numbers::Any`]), checked on exact
//! texts (`tests/data/numbers/*.json`) and on documents drawn at random from the grammar.

mod common;

use std::sync::Arc;

use common::{byte_index, Checked};
use constrain_engine::{CompiledGrammar, Limits, Matcher};
use constrain_jsonschema::{compile, Numbers, Options};
use constrain_testdata::XorShift64;
use serde_json::{json, Value};

/// The groups of `tests/data/numbers/*.json`: like the JSON-Schema-Test-Suite's, with a
/// `numbers` spelling (`"canonical"` or `"any"`) per group and each document given as its
/// exact `text`; `valid` says whether the grammar accepts that text. Every failing text is
/// listed, by file, group and test.
#[test]
fn number_spellings_from_data_files() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/numbers");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|entry| entry.expect("a directory entry").path())
        .filter(|path| path.extension().is_some_and(|e| e == "json"))
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no case files in {}", dir.display());
    let index = byte_index();
    let (mut failures, mut texts) = (Vec::new(), 0);
    for file in &files {
        let text = std::fs::read_to_string(file).expect("a readable case file");
        let groups: Vec<Value> = serde_json::from_str(&text)
            .unwrap_or_else(|e| panic!("{}: not a list of case groups: {e}", file.display()));
        for group in &groups {
            let name = format!("{}: {}", file.display(), group["description"]);
            let numbers = match group["numbers"].as_str() {
                Some("canonical") => Numbers::Canonical,
                Some("any") => Numbers::Any,
                other => panic!("{name}: `numbers` is {other:?}, not \"canonical\" or \"any\""),
            };
            let options = Options {
                numbers,
                ..Options::default()
            };
            let c = match Checked::new(&index, &group["schema"], &options) {
                Ok(c) => c,
                Err(e) => {
                    failures.push(format!("{name}: does not compile: {e}"));
                    continue;
                }
            };
            for test in group["tests"].as_array().expect("a `tests` array") {
                texts += 1;
                let valid = test["valid"].as_bool().expect("a boolean `valid`");
                let spelled = test["text"].as_str().expect("a string `text`");
                if c.accepts_text(spelled) != valid {
                    failures.push(format!(
                        "{name}, {}: {spelled} should be {}",
                        test["description"],
                        if valid { "accepted" } else { "rejected" }
                    ));
                }
            }
        }
    }
    assert!(texts > 0, "the case files hold no texts");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn the_default_is_canonical() {
    assert_eq!(Options::default().numbers, Numbers::Canonical);
    let c = Checked::new(
        &byte_index(),
        &json!({"type": "integer"}),
        &Options::default(),
    )
    .expect("compiles");
    assert!(c.accepts_text("1250") && !c.accepts_text("1250.0"));
}

/// `count` arrays drawn from `schema`'s grammar one byte at a time, each byte chosen at random
/// among those the mask allows; past 60 bytes the walk closes the array where it can.
fn drawn_arrays(schema: &Value, options: &Options, count: usize, seed: u64) -> Vec<String> {
    let compiled = compile(schema, options).unwrap_or_else(|e| panic!("{schema}: {e}"));
    let grammar =
        CompiledGrammar::new(&compiled.grammar, byte_index(), Limits::default()).expect("engine");
    let mut rng = XorShift64::new(seed);
    let mut mask = vec![0u32; grammar.mask_words()];
    let mut out = Vec::new();
    for _ in 0..count {
        let mut m = Matcher::new(Arc::clone(&grammar));
        let mut text = Vec::new();
        while !m.is_accepting() {
            m.fill_mask(&mut mask).expect("mask");
            let allowed: Vec<u32> = (0..256u32)
                .filter(|&t| mask[(t >> 5) as usize] & (1 << (t & 31)) != 0)
                .collect();
            assert!(
                !allowed.is_empty(),
                "stuck after {}",
                String::from_utf8_lossy(&text)
            );
            let close = u32::from(b']');
            let pick = if text.len() > 60 && allowed.contains(&close) {
                close
            } else {
                allowed[rng.index(allowed.len())]
            };
            text.push(u8::try_from(pick).expect("a byte"));
            m.accept_token(pick).expect("an allowed byte is accepted");
            assert!(
                text.len() < 4_000,
                "runaway: {}",
                String::from_utf8_lossy(&text)
            );
        }
        out.push(String::from_utf8(text).expect("UTF-8"));
    }
    out
}

/// The number literals of a drawn array of numbers, as written.
fn literals(array: &str) -> Vec<&str> {
    let inner = array
        .trim()
        .strip_prefix('[')
        .and_then(|s| s.strip_suffix(']'))
        .unwrap_or_else(|| panic!("not an array: {array}"));
    inner
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .collect()
}

/// Whether `lit` is an integer literal: digits without a fraction or exponent, no leading
/// zero, and no `-0`.
fn integer_literal(lit: &str) -> bool {
    let digits = lit.strip_prefix('-').unwrap_or(lit);
    !digits.is_empty()
        && digits.bytes().all(|b| b.is_ascii_digit())
        && (digits == "0" || !digits.starts_with('0'))
        && lit != "-0"
}

/// Integers drawn under the default options are what `i64` readers take: each literal is an
/// integer literal, and for `type: integer` parses as an `i64` (within 64 bits); under
/// [`Numbers::Any`] the same walks do produce other spellings.
#[test]
fn integers_drawn_under_the_default_options_parse_as_i64() {
    // Each schema, and whether it says `type: integer` (the 64-bit range applies).
    let schemas = [
        (json!({"type": "integer"}), true),
        (json!({"type": "integer", "minimum": 0}), true),
        (json!({"type": "integer", "maximum": 3}), true),
        (json!({"type": "integer", "multipleOf": 7}), true),
        (json!({"type": "number", "multipleOf": 2}), false),
        (json!({"enum": [1.0, -0.0, 3]}), false),
    ];
    let mut other_spellings = 0;
    for (k, (items, typed)) in schemas.iter().enumerate() {
        let schema = json!({"type": "array", "items": items});
        for array in drawn_arrays(&schema, &Options::default(), 150, 0x2545_f491 + k as u64) {
            for lit in literals(&array) {
                assert!(
                    integer_literal(lit) && (!typed || lit.parse::<i64>().is_ok()),
                    "{items}: {lit} in {array} is not an i64 literal"
                );
            }
        }
        let any = Options {
            numbers: Numbers::Any,
            ..Options::default()
        };
        for array in drawn_arrays(&schema, &any, 150, 0x2545_f491 + k as u64) {
            other_spellings += literals(&array)
                .iter()
                .filter(|lit| !integer_literal(lit) || lit.parse::<i64>().is_err())
                .count();
        }
    }
    assert!(other_spellings > 0, "the walks never leave i64 literals");
}

/// Numbers drawn under the default options: never a negative zero, and exponent notation only
/// for magnitudes of at least `1e21` or below `1e-6`.
#[test]
fn numbers_drawn_under_the_default_options_are_canonical() {
    let schemas = [
        json!({"type": "number"}),
        json!({"type": "number", "exclusiveMinimum": 0}),
        json!({"type": "number", "minimum": -1.5, "maximum": 2.25}),
        json!({"type": ["number", "null"], "maximum": 0}),
    ];
    for (k, items) in schemas.iter().enumerate() {
        let schema = json!({"type": "array", "items": items});
        for array in drawn_arrays(&schema, &Options::default(), 200, 0x9e37_79b9 + k as u64) {
            for lit in literals(&array) {
                if lit == "null" {
                    continue;
                }
                let value: f64 = lit
                    .parse()
                    .unwrap_or_else(|e| panic!("{items}: {lit} in {array}: {e}"));
                assert!(
                    !(value == 0.0 && lit.starts_with('-')),
                    "{items}: negative zero {lit} in {array}"
                );
                if lit.contains(['e', 'E']) {
                    assert!(
                        !lit.contains('E') && (value.abs() >= 1e21 || value.abs() < 1e-6),
                        "{items}: exponent in {lit} in {array}"
                    );
                }
            }
        }
    }
}
