//! Compile time of schemas: a few built in, and every 50th MaskBench schema when the shared
//! data is there (`CONSTRAIN_SHARED_DIR`).

// `criterion_group!` defines a public function without documentation.
#![allow(missing_docs)]

use criterion::{criterion_group, criterion_main, Criterion};
use serde_json::{json, Value};

use constrain_jsonschema::{compile, Options};

fn builtin() -> Vec<(&'static str, Value)> {
    vec![
        (
            "tool-call",
            json!({
                "type": "object",
                "properties": {
                    "location": {"type": "string", "description": "City and country"},
                    "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
                    "days": {"type": "integer", "minimum": 1, "maximum": 14}
                },
                "required": ["location"],
                "additionalProperties": false
            }),
        ),
        (
            "recursive-tree",
            json!({
                "$defs": {"node": {"type": "object", "properties": {"name": {"type": "string", "maxLength": 64}, "children": {"type": "array", "items": {"$ref": "#/$defs/node"}}}, "required": ["name"]}},
                "$ref": "#/$defs/node"
            }),
        ),
        (
            "formats-and-patterns",
            json!({
                "type": "object",
                "properties": {
                    "id": {"type": "string", "format": "uuid"},
                    "at": {"type": "string", "format": "date-time"},
                    "email": {"type": "string", "format": "email", "maxLength": 254},
                    "code": {"type": "string", "pattern": "^[A-Z]{3}-[0-9]{4}$"}
                }
            }),
        ),
        (
            "one-of-discriminated",
            json!({
                "oneOf": [
                    {"type": "object", "properties": {"kind": {"const": "circle"}, "r": {"type": "number"}}, "required": ["kind", "r"]},
                    {"type": "object", "properties": {"kind": {"const": "square"}, "side": {"type": "number"}}, "required": ["kind", "side"]}
                ]
            }),
        ),
    ]
}

fn maskbench_sample() -> Vec<(String, Value)> {
    let Some(shared) = constrain_testdata::shared_dir() else {
        return Vec::new();
    };
    let Ok(entries) = std::fs::read_dir(shared.join("data/maskbench-dev")) else {
        return Vec::new();
    };
    let mut files: Vec<_> = entries.filter_map(Result::ok).map(|e| e.path()).collect();
    files.sort();
    files
        .iter()
        .step_by(50)
        .filter_map(|p| {
            let v: Value = serde_json::from_str(&std::fs::read_to_string(p).ok()?).ok()?;
            Some((
                p.file_name()?.to_string_lossy().into_owned(),
                v["schema"].clone(),
            ))
        })
        .collect()
}

fn bench(c: &mut Criterion) {
    let options = Options::default();
    for (name, schema) in builtin() {
        c.bench_function(&format!("compile/{name}"), |b| {
            b.iter(|| compile(&schema, &options))
        });
    }
    let sample = maskbench_sample();
    if !sample.is_empty() {
        c.bench_function(
            &format!("compile/maskbench-every-50th ({} schemas)", sample.len()),
            |b| {
                b.iter(|| {
                    for (_, schema) in &sample {
                        let _ = compile(schema, &options);
                    }
                })
            },
        );
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
