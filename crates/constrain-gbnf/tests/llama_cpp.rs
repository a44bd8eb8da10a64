//! Conformance with llama.cpp's own grammar tests and example grammars (shared reference data,
//! `data/llama.cpp-grammars/`): the same grammars parse or fail, the same strings match.

mod common;

use std::path::{Path, PathBuf};

use constrain_gbnf::{parse, parse_with_root};
use constrain_testdata::require_shared_or_skip;
use serde_json::Value;

fn data_dir(test: &str) -> Option<PathBuf> {
    Some(
        require_shared_or_skip(test)?
            .join("data")
            .join("llama.cpp-grammars"),
    )
}

fn cases(path: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    match serde_json::from_str(&text) {
        Ok(Value::Array(cases)) => cases,
        _ => panic!("{}: expected a JSON list", path.display()),
    }
}

fn field<'a>(case: &'a Value, name: &str) -> &'a str {
    case[name]
        .as_str()
        .unwrap_or_else(|| panic!("case without string field {name}: {case}"))
}

fn strings(case: &Value, name: &str) -> Vec<Vec<u8>> {
    let hex = case["string_encoding"] == "hex";
    case[name]
        .as_array()
        .map(|list| {
            list.iter()
                .filter_map(Value::as_str)
                .map(|s| {
                    if hex {
                        decode_hex(s)
                    } else {
                        s.as_bytes().to_vec()
                    }
                })
                .collect()
        })
        .unwrap_or_default()
}

fn decode_hex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap_or_else(|_| panic!("bad hex {s:?}")))
        .collect()
}

#[test]
fn parser_cases_parse_or_fail_like_llama_cpp() {
    let Some(dir) = data_dir("parser_cases_parse_or_fail_like_llama_cpp") else {
        return;
    };
    let cases = cases(&dir.join("parser_cases.json"));
    assert!(!cases.is_empty());
    let mut wrong = Vec::new();
    for case in &cases {
        let result = parse(field(case, "grammar"));
        if case["should_parse"].as_bool() != Some(result.is_ok()) {
            wrong.push(format!("{}: {:?}", field(case, "id"), result.err()));
        }
    }
    assert!(
        wrong.is_empty(),
        "{} of {} cases differ:\n{}",
        wrong.len(),
        cases.len(),
        wrong.join("\n")
    );
}

#[test]
fn build_failures_are_refused() {
    let Some(dir) = data_dir("build_failures_are_refused") else {
        return;
    };
    let cases = cases(&dir.join("gbnf_build_failures.json"));
    assert!(!cases.is_empty());
    for case in &cases {
        let result = parse_with_root(field(case, "grammar"), field(case, "root"));
        assert!(
            result.is_err(),
            "{} was accepted ({})",
            field(case, "id"),
            field(case, "reason")
        );
    }
}

#[test]
fn matching_cases_match_like_llama_cpp() {
    let Some(dir) = data_dir("matching_cases_match_like_llama_cpp") else {
        return;
    };
    let cases = cases(&dir.join("gbnf_cases.json"));
    assert!(!cases.is_empty());
    let mut checked = 0;
    for case in &cases {
        let id = field(case, "id");
        let grammar = parse_with_root(field(case, "grammar"), field(case, "root"))
            .unwrap_or_else(|e| panic!("{id}: {e}"));
        let compiled = common::compile(&grammar);
        for input in strings(case, "passing") {
            assert!(
                common::accepts(&compiled, &input),
                "{id}: rejects {:?}",
                String::from_utf8_lossy(&input)
            );
            checked += 1;
        }
        for input in strings(case, "failing") {
            assert!(
                !common::accepts(&compiled, &input),
                "{id}: accepts {:?}",
                String::from_utf8_lossy(&input)
            );
            checked += 1;
        }
    }
    assert!(checked > 100, "only {checked} strings");
}

#[test]
fn example_grammars_parse_and_compile() {
    let Some(dir) = data_dir("example_grammars_parse_and_compile") else {
        return;
    };
    let mut paths: Vec<PathBuf> = std::fs::read_dir(dir.join("grammars"))
        .expect("grammars directory")
        .filter_map(|e| Some(e.ok()?.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "gbnf"))
        .collect();
    paths.sort();
    assert!(paths.len() >= 8, "{} grammars", paths.len());
    for path in paths {
        let text = std::fs::read_to_string(&path).expect("grammar is readable");
        let grammar = parse(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        common::compile(&grammar);
    }
}
