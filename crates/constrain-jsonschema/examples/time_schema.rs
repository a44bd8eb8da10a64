//! Times compiling one schema file (a schema, or a MaskBench file with a "schema" field).
use std::time::Instant;
fn main() {
    let path = std::env::args().nth(1).expect("schema path");
    let mut v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).expect("readable")).expect("json");
    if v.get("tests").is_some() {
        v = v["schema"].clone();
    }
    let t = Instant::now();
    let r = constrain_jsonschema::compile(&v, &constrain_jsonschema::Options::default());
    println!(
        "{:?} {:?}",
        t.elapsed(),
        r.map(|c| c.grammar.rule_count()).map_err(|e| e.to_string())
    );
}
