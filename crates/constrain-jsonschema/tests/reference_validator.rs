//! Soundness against a reference validator (the `jsonschema` crate): documents derived from
//! the test instances of real schemas by random mutations; whatever the compiled grammar
//! accepts must be valid according to the reference.

mod common;

use common::{byte_index, compact, python_dumps, Checked};
use constrain_jsonschema::{Numbers, Options};
use serde_json::{json, Map, Value};

/// The default options with every number spelling: the instances compared are any valid
/// documents.
fn spec() -> Options {
    Options {
        numbers: Numbers::Any,
        ..Options::default()
    }
}

/// A small deterministic generator (xorshift64*), so failures reproduce.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

fn random_scalar(rng: &mut Rng) -> Value {
    match rng.below(12) {
        0 => Value::Null,
        1 => json!(true),
        2 => json!(false),
        3 => json!(rng.below(200) as i64 - 100),
        4 => json!((rng.below(20_000) as f64 - 10_000.0) / 100.0),
        5 => json!(""),
        6 => json!("x"),
        7 => json!("2024-01-31T12:00:00Z"),
        8 => json!("héllo wörld"),
        9 => json!("a\"b\\c\nd"),
        10 => json!([]),
        _ => json!({}),
    }
}

/// Changes one random place of `v`.
fn mutate(v: &mut Value, rng: &mut Rng, names: &[String]) {
    // Descend to a random node.
    let descend = rng.below(4) != 0;
    match v {
        Value::Object(map) if descend && !map.is_empty() => {
            let k = map
                .keys()
                .nth(rng.below(map.len()))
                .cloned()
                .unwrap_or_default();
            match rng.below(6) {
                0 => {
                    map.remove(&k);
                }
                1 => {
                    let name = if !names.is_empty() && rng.below(2) == 0 {
                        names[rng.below(names.len())].clone()
                    } else {
                        "extra".to_string()
                    };
                    map.insert(name, random_scalar(rng));
                }
                _ => {
                    if let Some(child) = map.get_mut(&k) {
                        mutate(child, rng, names);
                    }
                }
            }
        }
        Value::Array(items) if descend && !items.is_empty() => match rng.below(5) {
            0 => {
                items.remove(rng.below(items.len()));
            }
            1 => {
                let i = rng.below(items.len());
                let copy = items[i].clone();
                items.push(copy);
            }
            _ => {
                let i = rng.below(items.len());
                mutate(&mut items[i], rng, names);
            }
        },
        Value::Number(n) if descend => {
            let f = n.as_f64().unwrap_or(0.0);
            *v = match rng.below(4) {
                0 => json!(f + 1.0),
                1 => json!(-f),
                2 => json!((f * 10.0).round() / 100.0),
                _ => json!((f as i64).saturating_add(1)),
            };
        }
        Value::String(s) if descend => {
            let mut t = s.clone();
            match rng.below(4) {
                0 => t.push('Z'),
                1 => {
                    t.pop();
                }
                2 => t = t.repeat(3),
                _ => t.insert(0, ' '),
            }
            *v = Value::String(t);
        }
        _ => *v = random_scalar(rng),
    }
}

fn property_names(schema: &Value, out: &mut Vec<String>) {
    match schema {
        Value::Object(m) => {
            if let Some(Value::Object(props)) = m.get("properties") {
                out.extend(props.keys().cloned());
            }
            for v in m.values() {
                property_names(v, out);
            }
        }
        Value::Array(a) => a.iter().for_each(|v| property_names(v, out)),
        _ => {}
    }
}

/// `v` with integer-valued floats written as integers: the reference validator does not
/// count `3.0` as an integer everywhere (the specification does).
fn integral_floats_as_integers(v: &Value) -> Value {
    match v {
        Value::Number(n) if n.is_f64() => match n.as_f64() {
            Some(f) if f.fract() == 0.0 && f.abs() < 9.0e15 => json!(f as i64),
            _ => v.clone(),
        },
        Value::Array(items) => {
            Value::Array(items.iter().map(integral_floats_as_integers).collect())
        }
        Value::Object(m) => Value::Object(
            m.iter()
                .map(|(k, v)| (k.clone(), integral_floats_as_integers(v)))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// Whether the schema divides by a fraction (`multipleOf: 0.01`): the reference validator
/// does that in floating point, which misjudges values such as 0.0075 / 0.0001.
fn has_fractional_divisor(schema: &Value) -> bool {
    match schema {
        Value::Object(m) => m.iter().any(|(k, v)| {
            (k == "multipleOf" && v.as_f64().is_some_and(|f| f.fract() != 0.0))
                || has_fractional_divisor(v)
        }),
        Value::Array(a) => a.iter().any(has_fractional_divisor),
        _ => false,
    }
}

struct Case {
    schema: Value,
    /// Test instances, with the validity their test file gives them.
    instances: Vec<(Value, bool)>,
    options: Options,
}

fn cases(shared: &std::path::Path) -> Vec<Case> {
    let mut out = Vec::new();
    let suite = shared.join("data/JSON-Schema-Test-Suite/tests/draft2020-12");
    let mut files: Vec<_> = std::fs::read_dir(&suite)
        .expect("suite")
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    for f in files {
        let groups: Vec<Value> =
            serde_json::from_str(&std::fs::read_to_string(&f).expect("readable")).expect("JSON");
        for g in groups {
            let instances = g["tests"]
                .as_array()
                .map(|t| {
                    t.iter()
                        .map(|t| (t["data"].clone(), t["valid"] == json!(true)))
                        .collect()
                })
                .unwrap_or_default();
            // The suite's instances list properties in any order.
            let options = Options {
                property_order: constrain_jsonschema::PropertyOrder::Any,
                ..spec()
            };
            out.push(Case {
                schema: g["schema"].clone(),
                instances,
                options,
            });
        }
    }
    let mb = shared.join("data/maskbench-dev");
    let mut files: Vec<_> = std::fs::read_dir(&mb)
        .expect("maskbench")
        .filter_map(Result::ok)
        .map(|e| e.path())
        .collect();
    files.sort();
    for f in files.iter().step_by(29) {
        let text = std::fs::read_to_string(f).expect("readable");
        // Large schemas are the MaskBench test's business; here every one is mutated many times.
        if text.len() > 100_000 {
            continue;
        }
        let d: Value = serde_json::from_str(&text).expect("JSON");
        let instances = d["tests"]
            .as_array()
            .map(|t| {
                t.iter()
                    .map(|t| (t["data"].clone(), t["valid"] == json!(true)))
                    .collect()
            })
            .unwrap_or_default();
        out.push(Case {
            schema: d["schema"].clone(),
            instances,
            options: spec(),
        });
    }
    out
}

#[test]
fn accepted_documents_are_valid_for_the_reference_validator() {
    let Some(shared) = constrain_testdata::require_shared_or_skip("reference_validator") else {
        return;
    };
    let index = byte_index();
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let (mut checked, mut accepted, mut disagreements) = (0usize, 0usize, Vec::new());
    for (n, case) in cases(&shared).into_iter().enumerate() {
        if std::env::var("REFERENCE_TRACE").is_ok() {
            eprintln!(
                "case {n}: {}",
                case.schema
                    .to_string()
                    .chars()
                    .take(200)
                    .collect::<String>()
            );
        }
        let Ok(reference) = jsonschema::options()
            .should_validate_formats(true)
            .build(&case.schema)
        else {
            continue;
        };
        let Ok(grammar) = Checked::new(&index, &case.schema, &case.options) else {
            continue;
        };
        let mut names = Vec::new();
        property_names(&case.schema, &mut names);
        // Where the reference validator contradicts a test file (it compares objects in `const`
        // by key order, for one), the test file is right.
        let known_valid: Vec<&Value> = case
            .instances
            .iter()
            .filter(|(_, valid)| *valid)
            .map(|(v, _)| v)
            .collect();
        let mut docs: Vec<Value> = case.instances.iter().map(|(v, _)| v.clone()).collect();
        for (inst, _) in &case.instances {
            for _ in 0..12 {
                let mut d = inst.clone();
                for _ in 0..1 + rng.below(3) {
                    mutate(&mut d, &mut rng, &names);
                }
                docs.push(d);
            }
        }
        docs.push(Value::Object(Map::new()));
        for d in docs {
            checked += 1;
            let texts = [compact(&d), python_dumps(&d)];
            if texts.iter().any(|t| grammar.accepts_text(t)) {
                accepted += 1;
                let inexact = has_fractional_divisor(&case.schema);
                if !inexact
                    && !reference.is_valid(&integral_floats_as_integers(&d))
                    && !known_valid.contains(&&d)
                {
                    let schema: String = case.schema.to_string().chars().take(150).collect();
                    disagreements.push(format!("{} accepted by {schema}", texts[0]));
                }
            }
        }
    }
    println!("{checked} documents checked, {accepted} accepted by the grammar, {} rejected by the reference", disagreements.len());
    for d in disagreements.iter().take(30) {
        println!("  {}", d.chars().take(400).collect::<String>());
    }
    assert!(disagreements.is_empty());
}
