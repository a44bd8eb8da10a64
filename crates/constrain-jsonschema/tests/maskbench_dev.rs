//! The real-world schemas of MaskBench (`data/maskbench-dev`): each valid instance should be
//! accepted and no invalid instance may be, spelled like Python's `json.dumps`.
//!
//! By default every 7th schema is checked (a quick run), and another 7th with strings spelled
//! only canonically (the spelling of the instances, and what MaskBench measures by default);
//! `MASKBENCH_FULL=1` checks all of them both ways.

mod common;

use std::collections::BTreeMap;

use common::{byte_index, python_dumps, Checked};
use constrain_jsonschema::{Escapes, Numbers, Options};
use serde_json::Value;

#[test]
fn maskbench_dev_schemas() {
    check_dev_schemas("maskbench_dev_schemas", Options::default(), 0);
}

#[test]
fn maskbench_dev_schemas_with_canonical_strings() {
    let options = Options {
        escapes: Escapes::Canonical,
        ..Options::default()
    };
    check_dev_schemas("maskbench_dev_schemas_with_canonical_strings", options, 3);
}

/// Checks the schemas at `offset` modulo 7 (all of them with `MASKBENCH_FULL=1`) compiled
/// with `options`.
fn check_dev_schemas(test: &str, options: Options, offset: usize) {
    // The instances keep their files' number text (`1.0` for an integer...).
    let options = Options {
        numbers: Numbers::Any,
        ..options
    };
    let Some(shared) = constrain_testdata::require_shared_or_skip(test) else {
        return;
    };
    let dir = shared.join("data/maskbench-dev");
    let full = std::env::var("MASKBENCH_FULL").is_ok_and(|v| v == "1");
    let verbose = std::env::var("MASKBENCH_VERBOSE").is_ok();
    let filter = std::env::var("MASKBENCH_FILTER").ok();
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .expect("data directory")
        .filter_map(Result::ok)
        .map(|e| e.path())
        .collect();
    files.sort();
    let index = byte_index();
    let (mut schemas, mut passing, mut compile_errors, mut valid_rejected, mut invalid_accepted) =
        (0, 0, 0, 0, 0);
    let mut reasons: BTreeMap<String, usize> = BTreeMap::new();
    for (i, path) in files.iter().enumerate() {
        let name = path
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default()
            .to_string();
        if let Some(f) = &filter {
            if !name.contains(f.as_str()) {
                continue;
            }
        } else if !full && i % 7 != offset {
            continue;
        }
        let data: Value =
            serde_json::from_str(&std::fs::read_to_string(path).expect("readable")).expect("JSON");
        schemas += 1;
        let checked = match Checked::new(&index, &data["schema"], &options) {
            Ok(c) => c,
            Err(e) => {
                compile_errors += 1;
                let key: String = e
                    .split(':')
                    .next()
                    .unwrap_or_default()
                    .chars()
                    .take(60)
                    .collect();
                *reasons.entry(key).or_default() += 1;
                if verbose {
                    println!("{name}: compile error: {e}");
                }
                continue;
            }
        };
        let mut ok = true;
        for t in data["tests"].as_array().expect("tests") {
            let text = python_dumps(&t["data"]);
            let accepted = checked.accepts_text(&text);
            let valid = t["valid"].as_bool().expect("valid");
            if valid && !accepted {
                valid_rejected += 1;
                ok = false;
                if verbose {
                    println!(
                        "{name}: valid rejected: {}",
                        text.chars().take(300).collect::<String>()
                    );
                }
            } else if !valid && accepted {
                invalid_accepted += 1;
                ok = false;
                println!(
                    "{name}: INVALID ACCEPTED: {}",
                    text.chars().take(300).collect::<String>()
                );
            }
        }
        if ok {
            passing += 1;
        }
    }
    println!("maskbench-dev ({test}): {schemas} schemas, {passing} passing, {compile_errors} compile errors, {valid_rejected} valid instances rejected, {invalid_accepted} invalid instances accepted");
    for (reason, n) in &reasons {
        println!("  {n:5} {reason}");
    }
    assert_eq!(invalid_accepted, 0);
}
