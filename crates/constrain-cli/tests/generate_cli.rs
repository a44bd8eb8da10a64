//! The generation command's contract: help, errors (never a panic), exit codes, stdin, the
//! stats line, and stdout holding only the generated text.

#![cfg(feature = "llama")]

mod generate_support;

use generate_support::{constrain, constrain_with_env, generation_args, model_available, Run};

fn assert_clean_error(run: &Run, expected: &[&str]) {
    assert_eq!(run.code, Some(2), "{run:?}");
    assert!(run.stdout.is_empty(), "nothing on stdout on error: {run:?}");
    assert!(!run.stderr.contains("panicked"), "{}", run.stderr);
    for text in expected {
        assert!(
            run.stderr.contains(text),
            "stderr lacks {text:?}: {}",
            run.stderr
        );
    }
}

fn scratch_dir(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("constrain-cli-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn help_shows_the_examples() {
    let run = constrain(&["--help"], None);
    assert_eq!(run.code, Some(0));
    let help = String::from_utf8(run.stdout).unwrap();
    for text in [
        "Examples:",
        "constrain fetch-model",
        "--schema",
        "--regex",
        "--grammar",
        "--json",
        "--max-tokens",
        "Exit status",
    ] {
        assert!(help.contains(text), "--help lacks {text:?}");
    }
}

#[test]
fn a_missing_default_model_says_how_to_fetch_it() {
    let empty = scratch_dir("no-model");
    let run = constrain_with_env(
        &["--regex", "[a-z]+", "hello"],
        None,
        &[("CONSTRAIN_CACHE_DIR", empty.to_str().unwrap())],
    );
    assert_clean_error(&run, &["constrain fetch-model", "--model"]);
    std::fs::remove_dir_all(empty).unwrap();
}

#[test]
fn a_missing_model_file_is_named() {
    let run = constrain(&["--model", "/nonexistent/model.gguf", "hello"], None);
    assert_clean_error(&run, &["/nonexistent/model.gguf", "does not exist"]);
}

#[test]
fn a_bad_schema_is_reported_before_loading_the_model() {
    let dir = scratch_dir("bad-schema");
    let cases = [
        ("not_json.json", "{\"type\": \"object\",", "not valid JSON"),
        (
            "bad_type.json",
            r#"{"type": "object", "properties": {"a": {"type": "strnig"}}}"#,
            "/properties/a",
        ),
    ];
    for (name, text, expected) in cases {
        let path = dir.join(name);
        std::fs::write(&path, text).unwrap();
        // The missing model would be the next error: the schema must be reported first.
        let run = constrain(
            &[
                "--model",
                "/nonexistent.gguf",
                "--schema",
                path.to_str().unwrap(),
                "x",
            ],
            None,
        );
        assert_clean_error(&run, &[name, expected]);
    }
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn bad_regexes_and_grammars_are_reported() {
    let run = constrain(
        &["--model", "/nonexistent.gguf", "--regex", "(ab", "x"],
        None,
    );
    assert_clean_error(&run, &["regex"]);
    let dir = scratch_dir("bad-gbnf");
    let path = dir.join("bad.gbnf");
    std::fs::write(&path, "root ::= \"a\" undefined-rule\n").unwrap();
    let run = constrain(
        &[
            "--model",
            "/nonexistent.gguf",
            "--grammar",
            path.to_str().unwrap(),
            "x",
        ],
        None,
    );
    assert_clean_error(&run, &["bad.gbnf", "undefined-rule"]);
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn two_constraints_are_refused() {
    let run = constrain(&["--json", "--regex", "a", "x"], None);
    assert_eq!(run.code, Some(2), "{run:?}");
    assert!(run.stderr.contains("cannot be used with"), "{}", run.stderr);
}

#[test]
fn a_prompt_longer_than_the_context_is_an_error() {
    if !model_available("a_prompt_longer_than_the_context_is_an_error") {
        return;
    }
    let prompt = "the quick brown fox ".repeat(40);
    let run = constrain(&["--ctx-size", "64", "--threads", "1", &prompt], None);
    assert_clean_error(&run, &["the prompt is", "--ctx-size"]);
}

#[test]
fn the_token_limit_exits_1_and_says_the_output_is_incomplete() {
    if !model_available("the_token_limit_exits_1_and_says_the_output_is_incomplete") {
        return;
    }
    // Prompt from stdin; unconstrained greedy text goes on past three tokens.
    let args = generation_args(&[], "-", "3", &["--temperature", "0"]);
    let run = constrain(&args, Some("Once upon a time, in a small village,\n"));
    assert_eq!(run.code, Some(1), "{run:?}");
    assert!(run.stderr.contains("incomplete"), "{}", run.stderr);
    let stats = run.stats();
    assert_eq!(stats["stop_reason"], "max_tokens");
    assert_eq!(stats["sampled_tokens"], 3);
    assert!(!run.stdout.is_empty());
}

#[test]
fn the_stats_line_ends_stderr_and_stdout_holds_only_the_output() {
    if !model_available("the_stats_line_ends_stderr_and_stdout_holds_only_the_output") {
        return;
    }
    let args = generation_args(
        &["--regex", "(yes|no)"],
        "Is water wet? Answer: ",
        "8",
        &["--temperature", "0"],
    );
    let run = constrain(&args, None);
    assert_eq!(run.code, Some(0), "{run:?}");
    let text = run.text();
    assert!(text == "yes" || text == "no", "stdout: {text:?}");
    let stats = run.stats();
    let keys: Vec<&str> = stats
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(
        keys,
        [
            "budget_constrained_tokens",
            "sampled_tokens",
            "forced_tokens",
            "prompt_tokens",
            "decode_s",
            "sampled_tokens_per_s",
            "mask_us_p50",
            "mask_us_p99",
            "stop_reason",
            "prefill_s",
            "eval_s"
        ]
    );
    assert!(stats["prompt_tokens"].as_u64().unwrap() > 3);
    assert!(stats["mask_us_p50"].as_f64().unwrap() > 0.0);
    // llama.cpp's log stays off stderr without --verbose: the stats line is all there is.
    assert_eq!(run.stderr.lines().count(), 1, "{}", run.stderr);
}

#[test]
fn without_fast_forward_forced_text_is_sampled_and_the_output_still_validates() {
    if !model_available(
        "without_fast_forward_forced_text_is_sampled_and_the_output_still_validates",
    ) {
        return;
    }
    let schema_path = "schemas/person.json";
    let prompt =
        "Alice is 31, writes at alice@example.com and speaks English and French. As JSON: ";
    let run_with = |extra: &[&'static str]| {
        let mut constraint = vec!["--schema", schema_path];
        constraint.extend_from_slice(extra);
        let args = generation_args(&constraint, prompt, "96", &["--temperature", "0"]);
        constrain(&args, None)
    };
    let forced = run_with(&[]);
    let sampled = run_with(&["--no-fast-forward"]);
    let schema: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(generate_support::workspace().join(schema_path)).unwrap(),
    )
    .unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    for run in [&forced, &sampled] {
        assert_eq!(run.code, Some(0), "{run:?}");
        let value: serde_json::Value = serde_json::from_str(&run.text()).unwrap();
        assert!(validator.is_valid(&value), "{}", run.text());
    }
    // The declared keys are forced by default, and sampled one token at a time without it.
    assert!(forced.stats()["forced_tokens"].as_u64().unwrap() > 0);
    assert_eq!(sampled.stats()["forced_tokens"], 0);
    assert!(
        sampled.stats()["sampled_tokens"].as_u64().unwrap()
            > forced.stats()["sampled_tokens"].as_u64().unwrap()
    );
}

#[test]
fn references_to_other_documents_come_from_resource_flags() {
    let dir = scratch_dir("resources");
    let types = dir.join("types.json");
    std::fs::write(
        &types,
        r#"{"$defs": {
            "name": {"type": "string", "minLength": 1, "maxLength": 12},
            "age": {"type": "integer", "minimum": 0, "maximum": 120}
        }}"#,
    )
    .unwrap();
    let schema = dir.join("person.json");
    std::fs::write(
        &schema,
        r#"{"type": "object",
            "properties": {
                "name": {"$ref": "https://example.com/types.json#/$defs/name"},
                "age": {"$ref": "https://example.com/types.json#/$defs/age"}
            },
            "required": ["name", "age"], "additionalProperties": false}"#,
    )
    .unwrap();
    let schema_arg = schema.to_str().unwrap();
    // Without the resource, the reference is an error naming where it is, before the model.
    let run = constrain(
        &["--model", "/nonexistent.gguf", "--schema", schema_arg, "x"],
        None,
    );
    assert_clean_error(
        &run,
        &["https://example.com/types.json", "/properties/name/$ref"],
    );
    let resource = format!("https://example.com/types.json={}", types.display());
    if model_available("references_to_other_documents_come_from_resource_flags") {
        let args = generation_args(
            &["--schema", schema_arg, "--resource", &resource],
            "Bob is 42 years old. As JSON: ",
            "64",
            &["--temperature", "0"],
        );
        let run = constrain(&args, None);
        assert_eq!(run.code, Some(0), "{run:?}");
        // The same schema with the definitions written in place.
        let inline = serde_json::json!({
            "type": "object",
            "properties": {
                "name": {"type": "string", "minLength": 1, "maxLength": 12},
                "age": {"type": "integer", "minimum": 0, "maximum": 120}
            },
            "required": ["name", "age"], "additionalProperties": false
        });
        let value: serde_json::Value = serde_json::from_str(&run.text()).unwrap();
        assert!(
            jsonschema::validator_for(&inline).unwrap().is_valid(&value),
            "{}",
            run.text()
        );
    }
    std::fs::remove_dir_all(dir).unwrap();
}

/// The `--chat` example of `--help` works with the default model, whose GGUF has no chat
/// template (its Gemma turn markers pick the `gemma` template), and `--chat-template` names one.
#[test]
fn chat_works_with_the_default_model_and_named_templates() {
    if !model_available("chat_works_with_the_default_model_and_named_templates") {
        return;
    }
    for extra in [&[][..], &["--chat-template", "gemma"][..]] {
        let mut args = vec!["--json", "--chat", "--max-tokens", "24", "--seed", "1"];
        args.extend_from_slice(extra);
        args.push("Three primary colors as a JSON array");
        let run = constrain(&args, None);
        assert!(matches!(run.code, Some(0 | 1)), "{run:?}");
        assert!(!run.stdout.is_empty(), "{run:?}");
    }
    let run = constrain(
        &["--chat-template", "nope", "--max-tokens", "1", "hi"],
        None,
    );
    assert_clean_error(&run, &["unknown chat template", "gemma"]);
}

#[test]
fn sampling_flags_out_of_range_are_refused_before_loading_the_model() {
    for (flag, setting) in [
        ("--top-p=2", "top_p"),
        ("--min-p=1.5", "min_p"),
        ("--temperature=-1", "temperature"),
        ("--repeat-penalty=0", "repeat_penalty"),
    ] {
        // The missing model would be the next error: the setting must be reported first.
        let run = constrain(&["--model", "/nonexistent.gguf", flag, "x"], None);
        assert_clean_error(&run, &["sampling flags", setting]);
        assert_eq!(
            run.stderr.matches("invalid setting").count(),
            1,
            "said once: {}",
            run.stderr
        );
    }
}

#[test]
fn a_context_of_zero_tokens_is_refused() {
    let run = constrain(&["--ctx-size", "0", "x"], None);
    assert_eq!(run.code, Some(2), "{run:?}");
    assert!(run.stderr.contains("--ctx-size"), "{}", run.stderr);
}

#[test]
fn a_model_file_that_is_not_gguf_is_named_by_its_first_bytes() {
    let dir = scratch_dir("not-gguf");
    let path = dir.join("model.gguf");
    std::fs::write(&path, "this is not a model\n").unwrap();
    let run = constrain(&["--model", path.to_str().unwrap(), "x"], None);
    assert_clean_error(&run, &["model.gguf", "is not a GGUF file", "\"this\""]);
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn limits_are_checked_by_name_and_applied_before_loading_the_model() {
    let run = constrain(&["--limit", "max_sates=3", "--json", "x"], None);
    assert_eq!(run.code, Some(2), "{run:?}");
    assert!(run.stderr.contains("max_states"), "{}", run.stderr);
    let dir = scratch_dir("limits");
    let path = dir.join("schema.json");
    std::fs::write(
        &path,
        r#"{"type": "object", "properties": {"name": {"type": "string"}}}"#,
    )
    .unwrap();
    let run = constrain(
        &[
            "--model",
            "/nonexistent.gguf",
            "--limit",
            "max_source_bytes=16",
            "--schema",
            path.to_str().unwrap(),
            "x",
        ],
        None,
    );
    assert_clean_error(&run, &["schema.json", "source text (bytes)", "16"]);
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn the_trace_has_a_line_per_token_and_a_table_on_stderr() {
    if !model_available("the_trace_has_a_line_per_token_and_a_table_on_stderr") {
        return;
    }
    let dir = scratch_dir("trace");
    let schema = dir.join("schema.json");
    std::fs::write(
        &schema,
        r#"{"type": "object", "properties": {"name": {"type": "string", "maxLength": 12},
            "age": {"type": "integer"}}, "required": ["name", "age"], "additionalProperties": false}"#,
    )
    .unwrap();
    let file = dir.join("trace.jsonl");
    let trace_args = ["--trace", file.to_str().unwrap()];
    let args = generation_args(
        &["--schema", schema.to_str().unwrap()],
        "A person as JSON:",
        "40",
        &[&["--temperature", "0"][..], &trace_args[..]].concat(),
    );
    let run = constrain(&args, None);
    assert_eq!(run.code, Some(0), "{run:?}");
    let stats = run.stats();
    let lines: Vec<serde_json::Value> = std::fs::read_to_string(&file)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let count = |key: &str| stats[key].as_u64().unwrap_or(0) as usize;
    let tokens = count("sampled_tokens") + count("forced_tokens");
    assert_eq!(lines.len(), tokens, "a line per generated token");
    let mut text = String::new();
    let (mut forced, mut drawn, mut budget) = (0, 0, 0);
    for line in &lines {
        text.push_str(line["text"].as_str().unwrap());
        match line["origin"].as_str().unwrap() {
            "forced" => {
                forced += 1;
                assert!(line["removed_mass"].is_null());
            }
            origin @ ("sampled" | "budget") => {
                drawn += 1;
                budget += usize::from(origin == "budget");
                let removed = line["removed_mass"].as_f64().unwrap();
                assert!((0.0..=1.0).contains(&removed), "{line}");
                assert!(line["allowed"].as_u64().unwrap() >= 1);
                assert!(!line["before_mask"].as_array().unwrap().is_empty());
                assert!(!line["after_funnel"].as_array().unwrap().is_empty());
            }
            other => panic!("origin {other}"),
        }
    }
    assert!(forced > 0 && drawn > 0, "{forced} forced, {drawn} drawn");
    // The end token writes no text; the rest is the output.
    assert!(
        text.starts_with(&run.text()),
        "{text:?} vs {:?}",
        run.text()
    );
    assert_eq!(count("forced_tokens"), forced);
    assert_eq!(count("budget_constrained_tokens"), budget);

    let table_args = ["--trace", "-"];
    let args = generation_args(
        &["--schema", schema.to_str().unwrap()],
        "A person as JSON:",
        "40",
        &[&["--temperature", "0"][..], &table_args[..]].concat(),
    );
    let run = constrain(&args, None);
    assert_eq!(run.code, Some(0), "{run:?}");
    assert!(
        run.stderr.contains("origin") && run.stderr.contains("forced"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains("mass removed by the mask"),
        "{}",
        run.stderr
    );
    std::fs::remove_dir_all(dir).unwrap();
}
