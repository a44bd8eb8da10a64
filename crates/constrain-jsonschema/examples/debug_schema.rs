//! Prints the grammar compiled from a schema file (debugging aid).
fn main() {
    let path = std::env::args().nth(1).expect("schema path");
    let text = std::fs::read_to_string(&path).expect("readable");
    let mut v: serde_json::Value = serde_json::from_str(&text).expect("json");
    if v.get("tests").is_some() {
        v = v["schema"].clone();
    }
    match constrain_jsonschema::compile(&v, &constrain_jsonschema::Options::default()) {
        Ok(c) => {
            for w in &c.warnings {
                println!("warning: {w}");
            }
            for (id, name, body) in c.grammar.rules() {
                println!("{} {name} := {:?}", id.index(), body);
            }
        }
        Err(e) => println!("error: {e}"),
    }
}
