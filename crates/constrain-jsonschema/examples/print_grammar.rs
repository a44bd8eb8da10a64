//! Prints the grammar compiled from a schema file (a schema, or a MaskBench file with a
//! `schema` field), rule by rule, with the warnings.
//!
//! ```text
//! cargo run -p constrain-jsonschema --example print_grammar -- schema.json
//! ```

use std::process::ExitCode;

fn main() -> ExitCode {
    let Some(path) = std::env::args().nth(1) else {
        eprintln!("usage: print_grammar SCHEMA.json");
        return ExitCode::FAILURE;
    };
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("{path}: {e}");
            return ExitCode::FAILURE;
        }
    };
    let mut schema: serde_json::Value = match serde_json::from_str(&text) {
        Ok(v) => v,
        Err(e) => {
            eprintln!("{path}: {e}");
            return ExitCode::FAILURE;
        }
    };
    if schema.get("tests").is_some() {
        schema = schema["schema"].take();
    }
    match constrain_jsonschema::compile(&schema, &constrain_jsonschema::Options::default()) {
        Ok(compiled) => {
            for w in &compiled.warnings {
                println!("warning: {w}");
            }
            for (_, name, body) in compiled.grammar.rules() {
                println!("{name} := {body:?}");
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}
