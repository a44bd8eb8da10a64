//! `constrain test-cases` over llama.cpp's grammar tests (shared reference data): every check
//! passes, at byte level and token by token with each of the five shared tokenizers.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

fn data_dir(test: &str) -> Option<PathBuf> {
    Some(constrain_testdata::require_shared_or_skip(test)?.join("data/llama.cpp-grammars"))
}

/// Runs `constrain test-cases FILE [--tokenizer PATH]` and returns the (passed, failed) counts,
/// printing the output when something failed.
fn run(file: &Path, tokenizer: Option<&Path>) -> (usize, usize, String) {
    let mut command = Command::new(env!("CARGO_BIN_EXE_constrain"));
    command.arg("test-cases").arg(file);
    if let Some(tokenizer) = tokenizer {
        command.arg("--tokenizer").arg(tokenizer);
    }
    let output = command.output().expect("the constrain binary runs");
    let out = String::from_utf8_lossy(&output.stdout).into_owned();
    let last = out.lines().last().unwrap_or_default().to_string();
    let counts: Vec<usize> = last
        .strip_suffix(" failed")
        .and_then(|l| l.split_once(" passed, "))
        .map(|(p, f)| [p, f].iter().filter_map(|n| n.parse().ok()).collect())
        .unwrap_or_default();
    assert_eq!(
        counts.len(),
        2,
        "no summary line:\n{out}\nstderr: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert_eq!(
        output.status.success(),
        counts[1] == 0,
        "exit status disagrees with:\n{out}"
    );
    (counts[0], counts[1], out)
}

fn cases(path: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(path).expect("case file is readable");
    serde_json::from_str::<Vec<Value>>(&text).expect("case file is a JSON list")
}

fn list_len(case: &Value, name: &str) -> usize {
    case[name].as_array().map_or(0, Vec::len)
}

#[test]
fn parser_and_build_failure_cases_pass() {
    let Some(dir) = data_dir("parser_and_build_failure_cases_pass") else {
        return;
    };
    for file in ["parser_cases.json", "gbnf_build_failures.json"] {
        let path = dir.join(file);
        let (passed, failed, out) = run(&path, None);
        assert_eq!((passed, failed), (cases(&path).len(), 0), "{file}:\n{out}");
    }
}

#[test]
fn matching_cases_pass_at_byte_level() {
    let Some(dir) = data_dir("matching_cases_pass_at_byte_level") else {
        return;
    };
    let path = dir.join("gbnf_cases.json");
    let cases = cases(&path);
    let strings: usize = cases
        .iter()
        .map(|c| list_len(c, "passing") + list_len(c, "failing"))
        .sum();
    let (passed, failed, out) = run(&path, None);
    assert_eq!((passed, failed), (cases.len() + strings, 0), "{out}");
}

#[test]
fn matching_cases_pass_token_by_token_with_every_tokenizer() {
    let Some(dir) = data_dir("matching_cases_pass_token_by_token_with_every_tokenizer") else {
        return;
    };
    let path = dir.join("gbnf_cases.json");
    let cases = cases(&path);
    let strings: usize = cases
        .iter()
        .map(|c| list_len(c, "passing") + list_len(c, "failing"))
        .sum();
    // Hex strings hold special tokens: byte level only.
    let text_strings: usize = cases
        .iter()
        .filter(|c| c["string_encoding"] != "hex")
        .map(|c| list_len(c, "passing") + list_len(c, "failing"))
        .sum();
    for name in constrain_testdata::SHARED_TOKENIZERS {
        let tokenizer = constrain_testdata::shared_tokenizer(name).expect("shared dir exists");
        let (passed, failed, out) = run(&path, Some(&tokenizer));
        assert_eq!(
            (passed, failed),
            (cases.len() + strings + text_strings, 0),
            "{name}:\n{out}"
        );
        assert!(
            out.contains(&format!("not through the {name} tokenizer")),
            "{name}:\n{out}"
        );
    }
}
