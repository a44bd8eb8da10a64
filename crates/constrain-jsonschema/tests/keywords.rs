//! Keyword by keyword: schemas compiled and run through the engine, with documents that must
//! be accepted and documents that must be rejected (each spelled compactly and like
//! `json.dumps`).

mod common;

use common::{byte_index, Checked};
use constrain_jsonschema::{Options, PropertyOrder};
use serde_json::{json, Value};

fn check_with(options: &Options, schema: Value, valid: &[Value], invalid: &[Value]) {
    let index = byte_index();
    let c = Checked::new(&index, &schema, options).unwrap_or_else(|e| panic!("{schema} does not compile: {e}"));
    for v in valid {
        assert_eq!(c.accepts(v), (true, true), "{schema}: should accept {v}");
    }
    for v in invalid {
        assert_eq!(c.accepts(v), (false, false), "{schema}: should reject {v}");
    }
}

fn check(schema: Value, valid: &[Value], invalid: &[Value]) {
    check_with(&Options::default(), schema, valid, invalid);
}

fn any_order() -> Options {
    Options { property_order: PropertyOrder::Any, ..Options::default() }
}

#[test]
fn one_of_with_overlapping_object_branches_is_exact() {
    let schema = json!({
        "type": "object",
        "oneOf": [
            {"properties": {"radius": {"type": "number"}}, "required": ["radius"]},
            {"properties": {"length": {"type": "number"}, "width": {"type": "number"}}, "required": ["length", "width"]}
        ]
    });
    check_with(
        &any_order(),
        schema,
        &[json!({"radius": 5.0}), json!({"length": 1, "width": 2}), json!({"radius": 1, "length": 2})],
        &[json!({"radius": 1, "length": 2, "width": 3}), json!({}), json!({"radius": "x"})],
    );
}

#[test]
fn one_of_in_schema_order() {
    let schema = json!({"properties": {"dimensions": {"oneOf": [{"properties": {"radius": {"type": "number"}}, "required": ["radius"]}, {"properties": {"length": {"type": "number"}, "width": {"type": "number"}}, "required": ["length", "width"]}], "type": "object"}}});
    check(schema, &[json!({"dimensions": {"radius": 5.0}})], &[]);
}
