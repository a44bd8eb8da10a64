//! Speculative decoding and beam search with the real model, on every schema of `schemas/`:
//! at temperature 0, `--lookup` gives the greedy output (few-shot and extraction prompts) up to
//! llama.cpp's batch arithmetic (see below); sampled lookup outputs validate; `--beams 1` is
//! greedy decoding token for token; `--beams 4` finds greedy's output or one more likely under
//! the constraint, and it validates.

#![cfg(feature = "llama")]

mod generate_support;

use generate_support::{
    complete, constrain, generation_args, json_validates, model_available, read_schema,
    schema_files, schema_prompt, validator, workspace,
};

/// The extraction prompts of `fixtures/extraction/prompts.json`: (schema file, prompt).
fn extraction_prompts() -> Vec<(String, String)> {
    let path = workspace().join("fixtures/extraction/prompts.json");
    let text = std::fs::read_to_string(&path).unwrap();
    let fixture: serde_json::Value = serde_json::from_str(&text).unwrap();
    fixture["prompts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|entry| {
            let file = entry["schema"].as_str().unwrap().to_string();
            let title = read_schema(&file)["title"].as_str().unwrap().to_string();
            let facts = entry["facts"].as_str().unwrap();
            (file, format!("Text: {facts}\n{title} as JSON: "))
        })
        .collect()
}

/// A greedy run with log-probabilities (the 20 most likely tokens at each sampled step).
fn run(file: &str, prompt: &str, extra: &[&str]) -> generate_support::Run {
    let mut flags = vec!["--temperature", "0"];
    flags.extend(extra);
    run_with(file, prompt, &flags)
}

fn run_with(file: &str, prompt: &str, extra: &[&str]) -> generate_support::Run {
    let schema_arg = format!("schemas/{file}");
    let mut flags = vec!["--logprobs", "20"];
    flags.extend(extra);
    let args = generation_args(&["--schema", &schema_arg], prompt, "128", &flags);
    let run = constrain(&args, None);
    assert_eq!(run.code, Some(0), "{file} {extra:?}: {run:?}");
    run
}

/// Where a lookup run first chose another token than the plain run: `None` if the outputs
/// are equal; else how much likelier the plain run's choice was, in nats, in the plain run's
/// own distribution (the renormalization under the mask cancels in a difference).
fn first_divergence(plain: &serde_json::Value, fast: &serde_json::Value) -> Option<f64> {
    let plain = plain["logprobs"].as_array().unwrap();
    let fast = fast["logprobs"].as_array().unwrap();
    let k = plain
        .iter()
        .zip(fast)
        .position(|(a, b)| a["token"] != b["token"])?;
    let chosen = plain[k]["logprob"].as_f64().unwrap();
    let other = plain[k]["top"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["token"] == fast[k]["token"])
        .and_then(|t| t["logprob"].as_f64())
        .unwrap_or(f64::NEG_INFINITY);
    Some(chosen - other)
}

/// llama.cpp's CPU kernels compute a token differently in a batch of one and in a larger
/// batch (tinyBLAS only from two rows on, repacked weights four rows at a time, tiled flash
/// attention): a drafted token scored in a batch gets logits up to about one unit away from
/// the same token evaluated alone. Where the plain run's two best tokens are closer than
/// that, a lookup run may take the other one; anywhere else it must not.
const BATCH_ARITHMETIC_NATS: f64 = 1.0;

#[test]
fn lookup_at_temperature_zero_gives_the_greedy_output() {
    if !model_available("lookup_at_temperature_zero_gives_the_greedy_output") {
        return;
    }
    let mut prompts: Vec<(String, String)> = schema_files()
        .into_iter()
        .map(|file| {
            let prompt = schema_prompt(&read_schema(&file));
            (file, prompt)
        })
        .collect();
    prompts.extend(extraction_prompts());
    let (mut drafted, mut accepted, mut identical) = (0, 0, 0);
    let mut report = Vec::new();
    let mut failures = Vec::new();
    for (file, prompt) in &prompts {
        let plain = run(file, prompt, &[]);
        let fast = run(file, prompt, &["--lookup", "8"]);
        let stats = fast.stats();
        drafted += stats["draft_tokens"].as_u64().unwrap();
        accepted += stats["accepted_draft_tokens"].as_u64().unwrap();
        match first_divergence(&plain.stats(), &stats) {
            None => {
                assert_eq!(plain.stdout, fast.stdout, "{file}");
                identical += 1;
            }
            Some(gap) => {
                let line =
                    format!("{file}: diverged where the plain run's choice led by {gap:.3} nats");
                if gap >= BATCH_ARITHMETIC_NATS {
                    failures.push(format!(
                        "{line}
  {:?}
  {:?}",
                        plain.text(),
                        fast.text()
                    ));
                }
                report.push(line);
            }
        }
    }
    eprintln!(
        "{identical} of {} identical; {accepted} of {drafted} drafted tokens accepted\n{}",
        prompts.len(),
        report.join("\n")
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(
        accepted > 0 && accepted <= drafted,
        "{accepted} of {drafted} accepted"
    );
    assert!(
        identical * 4 >= prompts.len() * 3,
        "only {identical} identical"
    );
}

#[test]
fn sampled_lookup_outputs_validate() {
    if !model_available("sampled_lookup_outputs_validate") {
        return;
    }
    for (file, prompt) in extraction_prompts() {
        let validator = validator(&read_schema(&file));
        for seed in ["1", "2"] {
            let run = run_with(
                &file,
                &prompt,
                &["--temperature", "1", "--seed", seed, "--lookup", "6"],
            );
            complete(&run)
                .and_then(|()| json_validates(&validator, &run.stdout))
                .unwrap_or_else(|why| panic!("{file}, seed {seed}: {why}"));
        }
    }
}

#[test]
fn one_beam_is_greedy_and_four_beams_do_at_least_as_well() {
    if !model_available("one_beam_is_greedy_and_four_beams_do_at_least_as_well") {
        return;
    }
    let mut report = Vec::new();
    let mut worse = Vec::new();
    for (file, prompt) in extraction_prompts() {
        let validator = validator(&read_schema(&file));
        let greedy = run(&file, &prompt, &[]);
        let greedy_logprob = greedy.stats()["sequence_logprob"].as_f64().unwrap();
        let one = run(&file, &prompt, &["--beams", "1"]);
        assert_eq!(one.text(), greedy.text(), "{file}: --beams 1 is greedy");
        let one_logprob = one.stats()["sequence_logprob"].as_f64().unwrap();
        assert!((one_logprob - greedy_logprob).abs() < 1e-3, "{file}");
        let four = run(&file, &prompt, &["--beams", "4"]);
        json_validates(&validator, &four.stdout).unwrap_or_else(|why| panic!("{file}: {why}"));
        let four_logprob = four.stats()["sequence_logprob"].as_f64().unwrap();
        let same = four.stdout == greedy.stdout;
        report.push(format!(
            "{file}: greedy {greedy_logprob:.3}, 4 beams {four_logprob:.3}{}",
            if same { " (the same output)" } else { "" }
        ));
        // The same output is as likely as itself: its two scores differ only by llama.cpp's
        // arithmetic in batches of four rows against batches of one.
        if !same && four_logprob < greedy_logprob {
            worse.push(file);
        }
    }
    eprintln!("{}", report.join("\n"));
    assert!(
        worse.is_empty(),
        "4 beams below greedy on {worse:?}:\n{}",
        report.join("\n")
    );
}
