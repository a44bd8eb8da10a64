//! `--structural-tag FILE` with the real model: a think block, then exactly one call whose body
//! follows a schema, greedy and at temperature 1.0; the output is parsed back into its tags and
//! the body validated. A bad structural tag is reported with its JSON pointer before the model
//! loads.

#![cfg(feature = "llama")]

mod generate_support;

use generate_support::{
    complete, constrain, generation_args, json_validates, model_available, sampling_cases,
    validator,
};
use serde_json::json;

fn scratch_file(name: &str, text: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("constrain-cli-stag-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

fn call_schema() -> serde_json::Value {
    json!({"type": "object", "properties": {"city": {"type": "string", "maxLength": 20}},
           "required": ["city"], "additionalProperties": false})
}

#[test]
fn a_think_block_then_one_call_follows_the_tags() {
    if !model_available("a_think_block_then_one_call_follows_the_tags") {
        return;
    }
    let tag = json!({"type": "structural_tag", "format": {"type": "sequence", "elements": [
        {"type": "tag", "begin": "<think>", "content": {"type": "any_text"}, "end": "</think>"},
        {"type": "triggered_tags", "triggers": ["<call>"], "at_least_one": true, "stop_after_first": true,
         "tags": [{"begin": "<call>", "content": {"type": "json_schema", "json_schema": call_schema()},
                   "end": "</call>"}]}]}});
    let path = scratch_file("think_call.json", &tag.to_string());
    let validator = validator(&call_schema());
    let mut failures = Vec::new();
    for (label, sampling) in sampling_cases().into_iter().take(2) {
        let sampling: Vec<&str> = sampling.iter().map(String::as_str).collect();
        let args = generation_args(
            &["--structural-tag", path.to_str().unwrap()],
            "Think, then call the weather tool for Paris.\n",
            "64",
            &sampling,
        );
        let run = constrain(&args, None);
        let outcome = match run.code {
            Some(0) => complete(&run).and_then(|()| {
                let text = String::from_utf8_lossy(&run.stdout).into_owned();
                let thought = text
                    .strip_prefix("<think>")
                    .and_then(|t| t.split_once("</think><call>"))
                    .ok_or_else(|| "no <think>...</think><call>".to_string())?;
                let body = thought
                    .1
                    .strip_suffix("</call>")
                    .ok_or_else(|| "no </call> at the end".to_string())?;
                json_validates(&validator, body.as_bytes())
            }),
            code => Err(format!("exit {code:?}: {}", run.stderr)),
        };
        if let Err(why) = outcome {
            failures.push(format!(
                "{label}: {why}\n  output: {:?}",
                String::from_utf8_lossy(&run.stdout)
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn a_bad_structural_tag_is_reported_with_its_pointer_before_loading_the_model() {
    let path = scratch_file(
        "bad_tag.json",
        r#"{"type": "structural_tag", "format": {"type": "sequence", "elements": [{"type": "nope"}]}}"#,
    );
    let run = constrain(
        &[
            "--model",
            "/nonexistent.gguf",
            "--structural-tag",
            path.to_str().unwrap(),
            "x",
        ],
        None,
    );
    assert_eq!(run.code, Some(2), "{run:?}");
    assert!(run.stdout.is_empty(), "{run:?}");
    for expected in ["bad_tag.json", "/format/elements/0/type", "nope"] {
        assert!(run.stderr.contains(expected), "{expected}: {}", run.stderr);
    }
}
