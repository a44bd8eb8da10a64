//! The JSON-Schema-Test-Suite (draft 2020-12) against a committed baseline: the instances that
//! are known to fail, per keyword file (`fixtures/schema-suite/baseline-draft2020-12.json`).
//!
//! The test fails on any regression (an instance that passed and now fails) and on any invalid
//! instance accepted, even one listed in the baseline; it prints the improvements, so the
//! baseline can be tightened. `CONSTRAIN_UPDATE_BASELINE=1` rewrites the baseline from the
//! current results instead of comparing.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::Command;

use serde_json::{json, Value};

const BASELINE: &str = "schema-suite/baseline-draft2020-12.json";

/// One keyword file's results.
#[derive(Default)]
struct FileResult {
    instances: usize,
    failing: BTreeSet<String>,
    invalid_accepted: Vec<String>,
}

/// Runs `constrain test-cases FILE` and reads its failure lines (`FAIL #case/test: ...`).
fn run_file(path: &Path) -> FileResult {
    let name = path.file_name().unwrap().to_string_lossy().into_owned();
    let output = Command::new(env!("CARGO_BIN_EXE_constrain"))
        .arg("test-cases")
        .arg(path)
        .output()
        .expect("the constrain binary runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        stdout
            .lines()
            .any(|l| l.ends_with(" failed") && l.contains(" passed, ")),
        "{name}: no closing count; stdout:\n{stdout}\nstderr:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let text = std::fs::read_to_string(path).unwrap();
    let cases: Value = serde_json::from_str(&text).unwrap();
    let mut result = FileResult {
        instances: cases
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["tests"].as_array().unwrap().len())
            .sum(),
        ..FileResult::default()
    };
    for line in stdout.lines() {
        let Some((id, what)) = line.strip_prefix("FAIL ").and_then(|l| l.split_once(": ")) else {
            continue;
        };
        let id = if id.starts_with('#') {
            format!("{name}{id}")
        } else {
            id.to_string()
        };
        if what.starts_with("invalid instance") && what.contains("accepted, but must be rejected") {
            result.invalid_accepted.push(format!("{id}: {what}"));
        }
        result.failing.insert(id);
    }
    result
}

#[test]
fn draft2020_12_suite_does_not_regress() {
    let Some(shared) =
        constrain_testdata::require_shared_or_skip("draft2020_12_suite_does_not_regress")
    else {
        return;
    };
    let suite = shared.join("data/JSON-Schema-Test-Suite/tests/draft2020-12");
    let mut files: Vec<_> = std::fs::read_dir(&suite)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_file() && p.extension().is_some_and(|e| e == "json"))
        .collect();
    files.sort();
    let results: BTreeMap<String, FileResult> = files
        .iter()
        .map(|p| {
            (
                p.file_name().unwrap().to_string_lossy().into_owned(),
                run_file(p),
            )
        })
        .collect();

    let (instances, failed): (usize, usize) = results
        .values()
        .fold((0, 0), |(n, f), r| (n + r.instances, f + r.failing.len()));
    println!(
        "draft2020-12: {} of {instances} instances pass",
        instances - failed
    );

    let baseline_path = constrain_testdata::fixture(BASELINE);
    if std::env::var("CONSTRAIN_UPDATE_BASELINE").is_ok_and(|v| v == "1") {
        let files: serde_json::Map<String, Value> = results
            .iter()
            .map(|(name, r)| {
                let entry = json!({
                    "passed": r.instances - r.failing.len(),
                    "failed": r.failing.len(),
                    "failing": r.failing,
                });
                (name.clone(), entry)
            })
            .collect();
        let baseline = json!({
            "suite": "JSON-Schema-Test-Suite tests/draft2020-12",
            "checks": "each instance written compactly and with \", \"/\": \" separators, byte level",
            "passed": instances - failed,
            "failed": failed,
            "files": files,
        });
        std::fs::create_dir_all(baseline_path.parent().unwrap()).unwrap();
        std::fs::write(
            &baseline_path,
            serde_json::to_string_pretty(&baseline).unwrap() + "\n",
        )
        .unwrap();
        println!("wrote {}", baseline_path.display());
    }

    let text = std::fs::read_to_string(&baseline_path).unwrap_or_else(|e| {
        panic!(
            "{}: {e}; create it with CONSTRAIN_UPDATE_BASELINE=1",
            baseline_path.display()
        )
    });
    let baseline: Value = serde_json::from_str(&text).expect("the baseline is JSON");
    let mut regressions = Vec::new();
    let mut improvements = Vec::new();
    let mut unsound = Vec::new();
    for (name, result) in &results {
        let known: BTreeSet<String> = baseline["files"][name]["failing"]
            .as_array()
            .map(|ids| {
                ids.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default();
        regressions.extend(result.failing.difference(&known).cloned());
        improvements.extend(known.difference(&result.failing).cloned());
        unsound.extend(result.invalid_accepted.iter().cloned());
    }
    if !improvements.is_empty() {
        println!(
            "{} instances pass that the baseline lists as failing:",
            improvements.len()
        );
        for id in &improvements {
            println!("  {id}");
        }
        println!("(rerun with CONSTRAIN_UPDATE_BASELINE=1 to record them)");
    }
    assert!(
        unsound.is_empty(),
        "{} invalid instances accepted:\n{}",
        unsound.len(),
        unsound.join("\n")
    );
    assert!(
        regressions.is_empty(),
        "{} instances fail that passed before:\n{}",
        regressions.len(),
        regressions.join("\n")
    );
}
