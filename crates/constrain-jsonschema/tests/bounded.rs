//! Hostile schemas compile to a clean error or a correct grammar, in bounded time and memory:
//! deep nesting, huge enums, megabyte schemas, catastrophic patterns, dangling and cyclic
//! references.

mod common;

use common::{byte_index, Checked};
use constrain_engine::Budget;
use constrain_jsonschema::{compile, compile_str, compile_with_limits, Options, SchemaError};
use serde_json::{json, Value};

/// Runs `f` on a thread with a large stack (deep `serde_json` values recurse when dropped).
fn with_big_stack(f: impl FnOnce() + Send + 'static) {
    std::thread::Builder::new()
        .stack_size(256 << 20)
        .spawn(f)
        .expect("thread")
        .join()
        .expect("no panic");
}

/// `{"type": "object", "properties": {"a": ...}}`, `depth` levels deep (built by moving the
/// inner value: `json!` would copy it at every level).
fn nested(depth: usize) -> Value {
    let mut v = json!({"type": "integer"});
    for _ in 0..depth {
        let mut props = serde_json::Map::new();
        props.insert("a".into(), v);
        let mut obj = serde_json::Map::new();
        obj.insert("type".into(), json!("object"));
        obj.insert("properties".into(), Value::Object(props));
        v = Value::Object(obj);
    }
    v
}

#[test]
fn ten_thousand_levels_of_nesting_are_an_error() {
    with_big_stack(|| {
        let schema = nested(10_000);
        let err = compile(&schema, &Options::default()).expect_err("too deep");
        assert!(
            matches!(
                err,
                SchemaError::LimitExceeded {
                    budget: Budget::SchemaDepth,
                    ..
                }
            ),
            "{err}"
        );
        // As text, the JSON parser's own recursion limit answers first.
        let text = serde_json::to_string(&schema).expect("serializes");
        let err = compile_str(&text, &Options::default()).expect_err("too deep");
        assert!(matches!(err, SchemaError::Json { .. }), "{err}");
        drop(schema);
    });
}

#[test]
fn moderate_nesting_compiles_and_matches() {
    let index = byte_index();
    let c = Checked::new(&index, &nested(60), &Options::default()).expect("compiles");
    let mut doc = json!(7);
    for _ in 0..60 {
        let mut obj = serde_json::Map::new();
        obj.insert("a".into(), doc);
        doc = Value::Object(obj);
    }
    assert_eq!(c.accepts(&doc), (true, true));
}

#[test]
fn hundred_thousand_value_enum() {
    let values: Vec<Value> = (0..100_000).map(|i| json!(format!("value-{i}"))).collect();
    let compiled = compile(&json!({"enum": values}), &Options::default()).expect("compiles");
    assert!(compiled
        .warnings
        .iter()
        .any(|w| w.kind == constrain_jsonschema::WarningKind::CanonicalSpelling));
    // A tenth of it, through the engine.
    let values: Vec<Value> = (0..10_000).map(|i| json!(format!("value-{i}"))).collect();
    let index = byte_index();
    let c = Checked::new(&index, &json!({"enum": values}), &Options::default()).expect("compiles");
    assert!(c.accepts_text("\"value-9999\""));
    assert!(c.accepts_text("\"value-0\""));
    assert!(!c.accepts_text("\"value-10000\""));
    let numbers: Vec<Value> = (0..100_000).map(|i| json!(i * 3)).collect();
    let compiled = compile(&json!({"enum": numbers}), &Options::default());
    assert!(
        compiled.is_ok()
            || matches!(
                compiled,
                Err(SchemaError::TooComplex { .. } | SchemaError::Grammar(_))
            )
    );
}

#[test]
fn megabyte_schema() {
    let mut props = serde_json::Map::new();
    for i in 0..8_000 {
        props.insert(
            format!("property_number_{i}"),
            json!({"type": "string", "description": "a description that takes some room in the schema text", "maxLength": 40}),
        );
    }
    let schema = json!({"type": "object", "properties": props, "additionalProperties": false});
    let text = serde_json::to_string(&schema).expect("serializes");
    assert!(text.len() > 1_000_000);
    let compiled = compile_str(&text, &Options::default()).expect("compiles");
    assert!(compiled.grammar.rule_count() > 8_000);
}

#[test]
fn catastrophic_patterns_are_bounded() {
    for pattern in [
        "(a*)*b",
        "(a|a)*c",
        "^(a+)+$",
        "(x+x+)+y",
        "((a{1,100}){1,100}){1,100}",
        "(.*a){20}",
        "^(?:[a-z0-9]+(?:-[a-z0-9]+)*\\.)+[a-z]{2,}$",
    ] {
        let schema = json!({"type": "string", "pattern": pattern});
        match compile(&schema, &Options::default()) {
            Ok(_) => {}
            Err(e) => assert!(
                matches!(
                    e,
                    SchemaError::TooComplex { .. }
                        | SchemaError::Grammar(_)
                        | SchemaError::Unsupported { .. }
                ),
                "{pattern}: {e}"
            ),
        }
        let with_length =
            json!({"type": "string", "pattern": pattern, "minLength": 3, "maxLength": 900});
        if let Err(e) = compile(&with_length, &Options::default()) {
            assert!(
                matches!(
                    e,
                    SchemaError::TooComplex { .. }
                        | SchemaError::Grammar(_)
                        | SchemaError::Unsupported { .. }
                ),
                "{pattern}: {e}"
            );
        }
    }
}

#[test]
fn dangling_references_are_errors() {
    for schema in [
        json!({"$ref": "#/$defs/missing"}),
        json!({"$ref": "#nowhere"}),
        json!({"$ref": "https://example.com/remote.json"}),
        json!({"properties": {"a": {"$ref": "#/properties/b"}}}),
    ] {
        let err = compile(&schema, &Options::default()).expect_err("dangling");
        assert!(
            matches!(err, SchemaError::UnresolvedRef { .. }),
            "{schema}: {err}"
        );
        assert!(err.pointer().is_some());
    }
}

#[test]
fn references_without_progress_are_errors_or_empty() {
    for schema in [
        json!({"$defs": {"a": {"$ref": "#/$defs/a"}}, "$ref": "#/$defs/a"}),
        json!({"$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"$ref": "#/$defs/a"}}, "$ref": "#/$defs/a"}),
        json!({"$defs": {"a": {"allOf": [{"$ref": "#/$defs/a"}, {"type": "object"}]}}, "$ref": "#/$defs/a"}),
        json!({"$defs": {"a": {"not": {"$ref": "#/$defs/a"}}}, "$ref": "#/$defs/a"}),
        json!({"$defs": {"a": {"anyOf": [{"$ref": "#/$defs/a"}]}}, "$ref": "#/$defs/a"}),
    ] {
        match compile(&schema, &Options::default()) {
            Ok(c) => {
                // Only acceptable if the language is empty: the engine then refuses it.
                let index = byte_index();
                assert!(
                    constrain_engine::CompiledGrammar::new(&c.grammar, index, Default::default())
                        .is_err(),
                    "{schema}"
                );
            }
            Err(e) => assert!(
                matches!(
                    e,
                    SchemaError::Invalid { .. }
                        | SchemaError::Unsatisfiable { .. }
                        | SchemaError::TooComplex { .. }
                ),
                "{schema}: {e}"
            ),
        }
    }
}

#[test]
fn recursion_through_the_root_is_fine() {
    let index = byte_index();
    // `{"$ref": "#"}` as a subschema recurses with progress; as the whole document it is a
    // reference to itself that never reaches a constraint.
    let c = Checked::new(
        &index,
        &json!({"type": ["integer", "array"], "items": {"$ref": "#"}}),
        &Options::default(),
    )
    .expect("compiles");
    assert_eq!(c.accepts(&json!([1, [2, [3]], []])), (true, true));
    assert_eq!(c.accepts(&json!([1, ["x"]])), (false, false));
    assert!(compile(&json!({"$ref": "#"}), &Options::default()).is_err());
    let tree = json!({
        "type": "object",
        "properties": {"value": {"type": "integer"}, "children": {"type": "array", "items": {"$ref": "#"}}},
        "required": ["value"],
        "additionalProperties": false
    });
    let c = Checked::new(&index, &tree, &Options::default()).expect("compiles");
    assert_eq!(
        c.accepts(&json!({"value": 1, "children": [{"value": 2}, {"value": 3, "children": []}]})),
        (true, true)
    );
    assert_eq!(
        c.accepts(&json!({"value": 1, "children": [{"children": []}]})),
        (false, false)
    );
}

#[test]
fn the_compile_time_budget_ends_in_a_clean_error() {
    let schema = json!({
        "type": "object",
        "properties": {
            "a": {"type": "string", "pattern": "^[a-z]+$", "maxLength": 20},
            "b": {"type": "array", "items": {"type": "integer", "minimum": 3}}
        }
    });
    let no_time = constrain_engine::Limits {
        max_compile_time: Some(std::time::Duration::ZERO),
        ..constrain_engine::Limits::default()
    };
    match compile_with_limits(&schema, &Options::default(), &no_time) {
        Err(
            err @ SchemaError::LimitExceeded {
                budget: Budget::CompileTime,
                limit: 0,
                ..
            },
        ) => {
            assert!(
                err.to_string()
                    .ends_with(": compile time (ms) exceeds the limit of 0"),
                "{err}"
            );
        }
        other => panic!("expected a time budget error, got {other:?}"),
    }
    // The budget belongs to one compilation: the next one, with the default, succeeds.
    assert!(compile(&schema, &Options::default()).is_ok());
}

#[test]
fn the_schema_depth_limit_names_the_place_too_deep() {
    let limits = constrain_engine::Limits {
        max_schema_depth: 8,
        ..constrain_engine::Limits::default()
    };
    let err = compile_with_limits(&nested(10), &Options::default(), &limits).expect_err("deep");
    match &err {
        SchemaError::LimitExceeded {
            pointer,
            budget,
            limit,
        } => {
            assert_eq!(*budget, Budget::SchemaDepth);
            assert_eq!(*limit, 8);
            assert!(
                pointer.starts_with("/properties/a/properties/a/"),
                "{pointer}"
            );
        }
        other => panic!("expected LimitExceeded, got {other}"),
    }
    compile_with_limits(&nested(3), &Options::default(), &limits).expect("shallow compiles");
}

#[test]
fn a_schema_text_over_the_source_limit_is_refused_before_parsing() {
    let limits = constrain_engine::Limits {
        max_source_bytes: 16,
        ..constrain_engine::Limits::default()
    };
    // Not even JSON: the size is checked first.
    let text = "{".repeat(17);
    let err = constrain_jsonschema::compile_str_with_limits(&text, &Options::default(), &limits)
        .expect_err("too long");
    assert!(
        matches!(
            err,
            SchemaError::Grammar(constrain_engine::GrammarError::LimitExceeded {
                budget: Budget::SourceBytes,
                limit: 16
            })
        ),
        "{err}"
    );
    constrain_jsonschema::compile_str_with_limits("{}", &Options::default(), &limits)
        .expect("short compiles");
}

#[test]
fn a_compile_time_budget_too_large_for_the_clock_is_no_budget() {
    // `Instant::now() + Duration::MAX` overflows: such a budget once panicked.
    let limits = constrain_engine::Limits {
        max_compile_time: Some(std::time::Duration::MAX),
        ..constrain_engine::Limits::default()
    };
    constrain_jsonschema::compile_with_limits(
        &json!({"type": "integer"}),
        &Options::default(),
        &limits,
    )
    .expect("compiles");
}

#[test]
fn a_megabyte_of_optional_properties_compiles() {
    // Each optional property heads the chain of those after it: finding the productive rules
    // by passes over all of them was quadratic (minutes) and never looked at the clock.
    let mut props = serde_json::Map::new();
    for i in 0..14_000 {
        props.insert(
            format!("field_{i:05}"),
            json!({"type": "string", "description": "xxxxxxxxxxxxxxxxxxxx", "maxLength": 40}),
        );
    }
    let schema = json!({"type": "object", "properties": props});
    let text = serde_json::to_string(&schema).expect("serializes");
    assert!(text.len() > 1_000_000);
    let compiled = compile_str(&text, &Options::default()).expect("compiles");
    assert!(compiled.grammar.rule_count() > 14_000);
}
