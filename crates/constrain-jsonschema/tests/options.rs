//! Layout and strictness options: whitespace, separators, indentation, property order,
//! undeclared properties, nesting of schema-less values.

mod common;

use common::{byte_index, Checked};
use constrain_jsonschema::{AdditionalProperties, Escapes, Options, Separators, Whitespace};
use serde_json::json;

fn compiled(schema: serde_json::Value, options: Options) -> Checked {
    Checked::new(&byte_index(), &schema, &options).expect("compiles")
}

fn schema() -> serde_json::Value {
    json!({"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "array", "items": {"type": "string"}}}, "required": ["a"]})
}

#[test]
fn default_whitespace_is_bounded() {
    let c = compiled(schema(), Options::default());
    assert!(c.accepts_text(r#"{"a":1,"b":["x"]}"#));
    assert!(c.accepts_text(r#"{"a": 1, "b": ["x", "y"]}"#));
    assert!(c.accepts_text("{\n  \"a\": 1,\n  \"b\": [\n    \"x\"\n  ]\n}"));
    let run = " ".repeat(Whitespace::DEFAULT_MAX as usize);
    assert!(c.accepts_text(&format!("{{{run}\"a\":1}}")));
    assert!(
        !c.accepts_text(&format!("{{{run} \"a\":1}}")),
        "a run longer than the bound"
    );
}

#[test]
fn unbounded_and_compact() {
    let c = compiled(
        schema(),
        Options {
            whitespace: Whitespace::Unbounded,
            ..Options::default()
        },
    );
    assert!(c.accepts_text(&format!("{{{}\"a\":1}}", " ".repeat(100))));
    let c = compiled(
        schema(),
        Options {
            whitespace: Whitespace::Compact,
            ..Options::default()
        },
    );
    assert!(c.accepts_text(r#"{"a":1,"b":["x"]}"#));
    assert!(!c.accepts_text(r#"{"a": 1}"#));
    assert!(!c.accepts_text(" {\"a\":1}"));
}

#[test]
fn fixed_separators() {
    let c = compiled(
        schema(),
        Options {
            whitespace: Whitespace::Compact,
            separators: Some(Separators::python()),
            ..Options::default()
        },
    );
    assert!(c.accepts_text(r#"{"a": 1, "b": ["x", "y"]}"#));
    assert!(!c.accepts_text(r#"{"a":1}"#));
}

#[test]
fn indented_like_json_dumps() {
    let c = compiled(
        schema(),
        Options {
            whitespace: Whitespace::Indented(2),
            ..Options::default()
        },
    );
    assert!(c.accepts_text("{\n  \"a\": 1,\n  \"b\": [\n    \"x\",\n    \"y\"\n  ]\n}"));
    assert!(c.accepts_text("{\n  \"a\": 1,\n  \"b\": []\n}"));
    assert!(!c.accepts_text(r#"{"a": 1}"#));
    assert!(!c.accepts_text("{\n    \"a\": 1\n}"));
    let recursive = json!({"type": "object", "properties": {"child": {"$ref": "#"}}});
    let c = compiled(
        recursive,
        Options {
            whitespace: Whitespace::Indented(1),
            ..Options::default()
        },
    );
    assert!(c.accepts_text("{\n \"child\": {\n  \"child\": {}\n }\n}"));
}

#[test]
fn strict_objects_forbid_undeclared_properties() {
    let c = compiled(
        schema(),
        Options {
            additional_properties: AdditionalProperties::Strict,
            ..Options::default()
        },
    );
    assert!(c.accepts_text(r#"{"a": 1}"#));
    assert!(!c.accepts_text(r#"{"a": 1, "z": 2}"#));
    let explicit = json!({"properties": {"a": {}}, "additionalProperties": true});
    let c = compiled(
        explicit,
        Options {
            additional_properties: AdditionalProperties::Strict,
            ..Options::default()
        },
    );
    assert!(
        c.accepts_text(r#"{"a": 1, "z": 2}"#),
        "an explicit additionalProperties wins"
    );
}

#[test]
fn schema_less_values_can_be_bounded() {
    let c = compiled(
        json!({}),
        Options {
            max_untyped_depth: 2,
            ..Options::default()
        },
    );
    assert!(c.accepts_text(r#"{"a": [1]}"#));
    assert!(!c.accepts_text(r#"{"a": [[1]]}"#));
    let c = compiled(json!(true), Options::default());
    assert!(c.accepts_text(r#"[[[[[[{"deep": [[[[]]]]}]]]]]]"#));
}

#[test]
fn canonical_escapes_leave_each_string_one_spelling() {
    let schema = json!({
        "type": "object",
        "properties": {
            "name": {"type": "string"},
            "kind": {"enum": ["a/b", "x\"y"]},
            "code": {"type": "string", "pattern": "^[a-z]+$"}
        },
        "additionalProperties": {"type": "string"}
    });
    let canonical = compiled(
        schema.clone(),
        Options {
            escapes: Escapes::Canonical,
            ..Options::default()
        },
    );
    let any = compiled(schema, Options::default());
    // Every value keeps its canonical spelling, which is what serde_json writes.
    for name in [
        "plain",
        "quote \" backslash \\ slash /",
        "\n\r\t\u{8}\u{c}",
        "\u{0}\u{1f}\u{7f}",
        "é中🙏",
    ] {
        let value = json!({"name": name, "kind": "a/b", "code": "abc", "ü\n": "v"});
        let text = serde_json::to_string(&value).expect("serializes");
        assert!(canonical.accepts_text(&text), "{text}");
        assert!(any.accepts_text(&text), "{text}");
    }
    // Other spellings of the same values: only without the option.
    for text in [
        r#"{"n\u0061me": "x"}"#,
        r#"{"name": "\u0078"}"#,
        r#"{"name": "a\/b"}"#,
        r#"{"name": "\u000A"}"#,
        r#"{"name": "\ud83d\ude4f"}"#,
        r#"{"kind": "a\/b"}"#,
        r#"{"kind": "x\u0022y"}"#,
        r#"{"code": "\u0061"}"#,
        r#"{"\u00fc": "v"}"#,
    ] {
        assert!(any.accepts_text(text), "{text}");
        assert!(!canonical.accepts_text(text), "{text}");
    }
}
