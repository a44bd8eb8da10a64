//! The baseline: the same prompts without the constraint. The model's own output is not a
//! valid document, which is what the constrained runs fix.

#![cfg(feature = "llama")]

mod generate_support;

use generate_support::{
    constrain, generation_args, json_validates, model_available, read_schema, schema_files,
    schema_prompt, validator,
};

#[test]
fn without_the_schema_the_same_prompts_give_invalid_output() {
    if !model_available("without_the_schema_the_same_prompts_give_invalid_output") {
        return;
    }
    let mut report = Vec::new();
    let mut valid = Vec::new();
    for file in schema_files() {
        let schema = read_schema(&file);
        let prompt = schema_prompt(&schema);
        let run = constrain(
            &generation_args(&[], &prompt, "64", &["--temperature", "0"]),
            None,
        );
        let verdict = json_validates(&validator(&schema), &run.stdout);
        if verdict.is_ok() {
            valid.push(file.clone());
        }
        report.push(format!(
            "{file} (exit {:?}): {verdict:?}\n  output: {:?}",
            run.code,
            String::from_utf8_lossy(&run.stdout)
        ));
    }
    eprintln!("{}", report.join("\n"));
    assert!(
        valid.is_empty(),
        "valid without a constraint: {valid:?}\n{}",
        report.join("\n")
    );
}
