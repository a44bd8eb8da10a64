//! Soundness of JSON Schema masks on real schemas: for a deterministic sample of the shared
//! MaskBench dev schemas that compile, random documents drawn through the masks of the Llama
//! 3.1 vocabulary must all validate against their schema with the `jsonschema` crate.
//!
//! `CONSTRAIN_SOUNDNESS_SCHEMAS` sets how many schemas, spread over the sorted files (`all` for
//! every one); the default, 300, takes about three minutes with the workspace's test profile
//! (code at opt-level 1, dependencies at 3); without optimization it is ten times slower.
//! `constrain bench soundness` runs the same check from the command line.

#[allow(dead_code)]
#[path = "../../constrain-bench/src/maskbench/json_text.rs"]
mod json_text;
#[allow(dead_code)]
#[path = "../../constrain-bench/src/maskbench/sample.rs"]
mod sample;
#[allow(dead_code)]
#[path = "../../constrain-bench/src/maskbench/soundness_check.rs"]
mod soundness_check;

use constrain_engine::TokenIndex;
use constrain_vocab::Tokenizer;
use soundness_check::{check_schema, spread_sample, CheckOptions, SchemaCheck};

const DEFAULT_SCHEMAS: usize = 300;

fn schema_count() -> Option<usize> {
    match std::env::var("CONSTRAIN_SOUNDNESS_SCHEMAS") {
        Ok(v) if v == "all" => None,
        Ok(v) => Some(
            v.parse()
                .expect("CONSTRAIN_SOUNDNESS_SCHEMAS is a number or `all`"),
        ),
        Err(_) => Some(DEFAULT_SCHEMAS),
    }
}

#[test]
fn random_documents_of_dev_schemas_validate() {
    let Some(shared) =
        constrain_testdata::require_shared_or_skip("random_documents_of_dev_schemas_validate")
    else {
        return;
    };
    let tokenizer =
        Tokenizer::from_file(constrain_testdata::shared_tokenizer("llama3_1").unwrap()).unwrap();
    let index = TokenIndex::new(tokenizer.vocabulary().clone());
    let mut files: Vec<_> = std::fs::read_dir(shared.join("data/maskbench-dev"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    files.sort();
    let files = spread_sample(&files, schema_count().unwrap_or(files.len()));

    // Deeply nested schemas need more stack than a test thread has.
    let report = std::thread::Builder::new()
        .stack_size(256 << 20)
        .spawn(move || {
            let options = CheckOptions::default();
            let (mut checked, mut not_compiled, mut no_validator) = (0, 0, 0);
            let (mut validated, mut unfinished) = (0, 0);
            let mut failures = Vec::new();
            for path in &files {
                let id = path.file_name().unwrap().to_string_lossy().into_owned();
                let text = std::fs::read_to_string(path).unwrap();
                let file: serde_json::Value = serde_json::from_str(&text).unwrap();
                match check_schema(&id, &file["schema"], &index, &options) {
                    SchemaCheck::NotCompiled(_) => not_compiled += 1,
                    SchemaCheck::NoValidator(_) => no_validator += 1,
                    SchemaCheck::Checked(result) => {
                        checked += 1;
                        validated += result.validated;
                        unfinished += result.unfinished;
                        for failure in result.failures {
                            failures.push(format!(
                                "{id} document #{}: {}\n    {}",
                                failure.document, failure.problem, failure.text
                            ));
                        }
                    }
                }
            }
            println!(
                "{} schemas: {checked} checked ({validated} documents validated, {unfinished} \
                 unfinished), {not_compiled} not compiled, {no_validator} without a validator",
                files.len()
            );
            (checked, validated, failures)
        })
        .unwrap()
        .join()
        .expect("the soundness thread does not panic");
    let (checked, validated, failures) = report;
    assert!(
        failures.is_empty(),
        "{} documents break their schema:\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert!(checked > 0 && validated > 0, "nothing was checked");
}
