//! A "model" that returns random logits, sampled hot (temperature 1.5) through the funnel with a
//! real tokenizer: every output still validates against its JSON Schema.

use std::sync::Arc;

use constrain::{ConstrainedSampler, Constraint, SamplerConfig, StopReason, TokenIndex, Tokenizer};
use serde_json::json;

fn schemas() -> Vec<(&'static str, serde_json::Value)> {
    vec![
        (
            "person",
            json!({
                "type": "object",
                "properties": {
                    "name": {"type": "string", "minLength": 1, "maxLength": 12},
                    "age": {"type": "integer", "minimum": 0, "maximum": 130},
                    "role": {"enum": ["admin", "editor", "viewer"]},
                    "active": {"type": "boolean"}
                },
                "required": ["name", "age", "role"],
                "additionalProperties": false
            }),
        ),
        (
            "tool call",
            json!({
                "type": "object",
                "properties": {
                    "tool": {"const": "search"},
                    "arguments": {
                        "type": "object",
                        "properties": {
                            "query": {"type": "string", "maxLength": 16},
                            "limit": {"type": "integer", "minimum": 1, "maximum": 50},
                            "sort": {"enum": ["relevance", "date"]}
                        },
                        "required": ["query", "limit"],
                        "additionalProperties": false
                    }
                },
                "required": ["tool", "arguments"],
                "additionalProperties": false
            }),
        ),
        (
            "readings",
            json!({
                "type": "array",
                "minItems": 1,
                "maxItems": 3,
                "items": {
                    "type": "object",
                    "properties": {
                        "sensor": {"type": "string", "pattern": "^[A-Z]{2}-[0-9]{2}$"},
                        "level": {"type": "integer", "minimum": -40, "maximum": 40},
                        "ok": {"type": "boolean"}
                    },
                    "required": ["sensor", "level"],
                    "additionalProperties": false
                }
            }),
        ),
    ]
}

/// Logits from a xorshift generator: a model that knows nothing.
fn random_model(seed: u64, width: usize) -> impl FnMut(&[u32]) -> Vec<f32> {
    let mut rng = constrain_testdata::XorShift64::new(seed | 1);
    move |_| {
        (0..width)
            .map(|_| (rng.next_u64() >> 40) as f32 / (1u64 << 24) as f32 * 8.0)
            .collect()
    }
}

#[test]
fn random_logits_always_give_valid_documents() {
    let tokenizer =
        Tokenizer::from_file(constrain_testdata::fixture_tokenizer()).expect("fixture tokenizer");
    let vocab = tokenizer.vocabulary().clone();
    let index = TokenIndex::new(Arc::clone(&vocab));
    let config = SamplerConfig {
        temperature: 1.5,
        ..SamplerConfig::default()
    };
    for (name, schema) in schemas() {
        let grammar = Constraint::JsonSchema(schema.clone())
            .compile(index.clone())
            .expect("schema compiles");
        for seed in 0..8u64 {
            let mut sampler =
                ConstrainedSampler::new(grammar.clone(), config.clone(), seed).expect("sampler");
            let mut model = random_model(seed + 1, vocab.logits_width());
            let out = sampler.generate(&mut model, 400).expect("generation runs");
            let text = String::from_utf8(out.bytes).expect("UTF-8 output");
            assert_eq!(
                out.stop,
                StopReason::Complete,
                "{name}, seed {seed}: incomplete after 400 tokens: {text}"
            );
            let value: serde_json::Value = serde_json::from_str(&text)
                .unwrap_or_else(|e| panic!("{name}, seed {seed}: not JSON ({e}): {text}"));
            assert!(
                jsonschema::is_valid(&schema, &value),
                "{name}, seed {seed}: invalid: {text}"
            );
        }
    }
}
