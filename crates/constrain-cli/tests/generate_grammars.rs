//! Three GBNF grammars of `grammars/` and two regexes, with the real model: greedy and five
//! seeds at temperature 1.0, within budgets of 48 and 128 tokens, all exit 0 with output that a
//! fresh matcher (grammars) or the `regex` crate (regexes) accepts in full.

#![cfg(feature = "llama")]

mod generate_support;

use generate_support::{
    complete, constrain, generation_args, grammar_accepts, model_available, sampling_cases,
    workspace, Run,
};

/// Runs every sampling case and fails with all bad runs listed.
fn check(
    name: &str,
    constraint: &[&str],
    prompt: &str,
    valid: &dyn Fn(&[u8]) -> Result<(), String>,
) {
    if !model_available(name) {
        return;
    }
    let mut failures = Vec::new();
    let cases = ["48", "128"].into_iter().flat_map(|max_tokens| {
        sampling_cases()
            .into_iter()
            .map(move |(label, sampling)| (max_tokens, label, sampling))
    });
    for (max_tokens, label, sampling) in cases {
        let label = format!("{label}, --max-tokens {max_tokens}");
        let sampling: Vec<&str> = sampling.iter().map(String::as_str).collect();
        let run: Run = constrain(
            &generation_args(constraint, prompt, max_tokens, &sampling),
            None,
        );
        let outcome = match run.code {
            Some(0) => complete(&run).and_then(|()| valid(&run.stdout)),
            code => Err(format!("exit {code:?}: {}", run.stderr)),
        };
        if let Err(why) = outcome {
            failures.push(format!(
                "{label}: {why}\n  output: {:?}",
                String::from_utf8_lossy(&run.stdout)
            ));
        }
    }
    assert!(failures.is_empty(), "{name}:\n{}", failures.join("\n"));
}

fn check_gbnf(file: &str, prompt: &str) {
    let text = std::fs::read_to_string(workspace().join("grammars").join(file)).unwrap();
    let grammar = constrain::Constraint::Gbnf(text).grammar().unwrap();
    let arg = format!("grammars/{file}");
    check(file, &["--grammar", &arg], prompt, &|out| {
        grammar_accepts(&grammar, out)
    });
}

fn check_regex(pattern: &str, prompt: &str) {
    let full = regex::bytes::Regex::new(&format!("^(?:{pattern})$")).unwrap();
    let valid = |out: &[u8]| {
        if full.is_match(out) {
            Ok(())
        } else {
            Err(format!("no full match of {pattern:?}"))
        }
    };
    check(pattern, &["--regex", pattern], prompt, &valid);
}

#[test]
fn sql_select_gbnf() {
    check_gbnf(
        "sql_select.gbnf",
        "The SQL query for the names of users older than 30:\n",
    );
}

#[test]
fn iso8601_gbnf() {
    check_gbnf("iso8601.gbnf", "The meeting starts at ");
}

#[test]
fn json_gbnf() {
    // JSON Lines: a base model continues the pattern; a question would let it answer with
    // any JSON value, long numbers included.
    let prompt = concat!(
        "{\"theme\": \"dark\", \"font_size\": 14}\n",
        "{\"theme\": \"light\", \"font_size\": 12, \"plugins\": [\"git\"]}\n",
        "{\"theme\": \"solarized\", \"font_size\": 16, \"plugins\": []}\n",
    );
    check_gbnf("json.gbnf", prompt);
}

#[test]
fn phone_number_regex() {
    check_regex(r"\+1 \([0-9]{3}\) [0-9]{3}-[0-9]{4}", "Call our office at ");
}

#[test]
fn word_list_regex() {
    check_regex(
        r"(red|green|blue|yellow)(, (red|green|blue|yellow)){2,4}",
        "Some colors: ",
    );
}
