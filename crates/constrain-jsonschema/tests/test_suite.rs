//! The official JSON-Schema-Test-Suite (draft 2020-12, required tests): every valid instance
//! should be accepted, and no invalid instance may be.

mod common;

use std::collections::BTreeMap;
use std::path::Path;

use common::{byte_index, Checked};
use constrain_jsonschema::{Numbers, Options, PropertyOrder};
use serde_json::Value;

#[derive(Default, Debug, Clone, Copy)]
struct Tally {
    instances: usize,
    passed: usize,
    invalid_accepted: usize,
    compile_errors: usize,
}

fn run_file(
    path: &Path,
    options: &Options,
    index: &std::sync::Arc<constrain_engine::TokenIndex>,
    verbose: bool,
) -> Tally {
    let text = std::fs::read_to_string(path).expect("readable test file");
    let groups: Vec<Value> = serde_json::from_str(&text).expect("test file is JSON");
    let mut tally = Tally::default();
    for group in &groups {
        let schema = &group["schema"];
        let tests = group["tests"].as_array().expect("tests");
        let checked = Checked::new(index, schema, options);
        if let Err(e) = &checked {
            tally.compile_errors += 1;
            if verbose {
                println!("  compile error in {:?}: {e}", group["description"]);
            }
        }
        for t in tests {
            tally.instances += 1;
            let valid = t["valid"].as_bool().expect("valid flag");
            let Ok(c) = &checked else { continue };
            let (compact, python) = c.accepts(&t["data"]);
            if valid {
                if compact && python {
                    tally.passed += 1;
                } else if verbose {
                    println!(
                        "  rejected valid {:?} / {:?}: {}",
                        group["description"], t["description"], t["data"]
                    );
                }
            } else if compact || python {
                tally.invalid_accepted += 1;
                println!(
                    "  INVALID ACCEPTED {:?} / {:?}: {}",
                    group["description"], t["description"], t["data"]
                );
            } else {
                tally.passed += 1;
            }
        }
    }
    tally
}

/// Every file of the suite's `remotes/`, under the URI the suite serves it at.
fn remotes(dir: &Path) -> BTreeMap<String, Value> {
    let mut out = BTreeMap::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(current) = pending.pop() {
        for entry in std::fs::read_dir(&current).expect("remotes directory") {
            let path = entry.expect("directory entry").path();
            if path.is_dir() {
                pending.push(path);
            } else if path.extension().is_some_and(|x| x == "json") {
                let relative = path.strip_prefix(dir).expect("under remotes");
                let uri = format!("http://localhost:1234/{}", relative.display());
                let text = std::fs::read_to_string(&path).expect("readable remote");
                out.insert(uri, serde_json::from_str(&text).expect("remote is JSON"));
            }
        }
    }
    out
}

fn run_suite(options: &Options, label: &str) -> Option<Tally> {
    let shared = constrain_testdata::require_shared_or_skip("json_schema_test_suite")?;
    let dir = shared.join("data/JSON-Schema-Test-Suite/tests/draft2020-12");
    let options = &Options {
        resources: remotes(&shared.join("data/JSON-Schema-Test-Suite/remotes")),
        // The suite's valid instances are in every spelling (`1.0` for an integer...).
        numbers: Numbers::Any,
        ..options.clone()
    };
    let verbose = std::env::var("SUITE_VERBOSE").is_ok();
    let only = std::env::var("SUITE_FILE").ok();
    let index = byte_index();
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .expect("suite directory")
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    let mut per_file = BTreeMap::new();
    let mut total = Tally::default();
    for f in files {
        let name = f
            .file_stem()
            .and_then(|s| s.to_str())
            .unwrap_or_default()
            .to_string();
        if only.as_ref().is_some_and(|o| *o != name) {
            continue;
        }
        if verbose {
            println!("{name}:");
        }
        let t = run_file(&f, options, &index, verbose);
        total.instances += t.instances;
        total.passed += t.passed;
        total.invalid_accepted += t.invalid_accepted;
        total.compile_errors += t.compile_errors;
        per_file.insert(name, t);
    }
    println!("JSON-Schema-Test-Suite draft2020-12 ({label}):");
    for (name, t) in &per_file {
        println!(
            "  {name:28} {:4}/{:4} passed ({:5.1}%), {} schemas not compiled, {} invalid accepted",
            t.passed,
            t.instances,
            100.0 * t.passed as f64 / t.instances.max(1) as f64,
            t.compile_errors,
            t.invalid_accepted
        );
    }
    println!(
        "  {:28} {:4}/{:4} passed ({:5.1}%), {} schemas not compiled, {} invalid accepted",
        "TOTAL",
        total.passed,
        total.instances,
        100.0 * total.passed as f64 / total.instances.max(1) as f64,
        total.compile_errors,
        total.invalid_accepted
    );
    Some(total)
}

#[test]
fn suite_with_properties_in_any_order() {
    let options = Options {
        property_order: PropertyOrder::Any,
        assert_formats: false,
        ..Options::default()
    };
    let Some(total) = run_suite(&options, "property order: any") else {
        return;
    };
    assert_eq!(total.invalid_accepted, 0, "invalid instances were accepted");
    if std::env::var("SUITE_FILE").is_err() {
        assert!(
            total.passed * 100 >= total.instances * 75,
            "pass rate below 75%: {}/{}",
            total.passed,
            total.instances
        );
    }
}

#[test]
fn suite_with_default_options() {
    let options = Options {
        assert_formats: false,
        ..Options::default()
    };
    let Some(total) = run_suite(&options, "default options") else {
        return;
    };
    assert_eq!(total.invalid_accepted, 0, "invalid instances were accepted");
}
