//! `constrain bench maskbench` on the committed fixture schemas with the committed tokenizer:
//! statuses, the output layout of the reference results, and instance serialization.

use std::path::{Path, PathBuf};
use std::process::Command;

use constrain_vocab::Tokenizer;
use serde_json::Value;

/// Field names of one line of the reference `.jsonl`, in order.
const RECORD_FIELDS: [&str; 11] = [
    "id",
    "status",
    "ttfm_us",
    "tokens",
    "mask_us_total",
    "max_mask_us",
    "error",
    "n_tests",
    "n_valid_rejected",
    "n_invalid_accepted",
    "n_eos_rejected",
];

/// Field names of the reference summary `.json`.
const SUMMARY_FIELDS: [&str; 15] = [
    "engine",
    "tokenizer",
    "data",
    "schemas",
    "passing",
    "compile_error",
    "validation_error",
    "invalidation_error",
    "crash",
    "tokens",
    "eos_rejected_instances",
    "tbm_us",
    "ttfm_us",
    "wall_s",
    "runtime_error",
];

fn run_bench(out: &Path) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_constrain"))
        .args(["bench", "maskbench", "--data"])
        .arg(constrain_testdata::fixture("maskbench"))
        .arg("--tokenizer")
        .arg(constrain_testdata::fixture_tokenizer())
        .arg("--out")
        .arg(out)
        .output()
        .expect("the constrain binary runs")
}

fn out_prefix(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("maskbench_fixture");
    std::fs::create_dir_all(&dir).expect("temporary directory");
    dir.join(name)
}

fn read_records(prefix: &Path) -> Vec<serde_json::Map<String, Value>> {
    let text = std::fs::read_to_string(prefix.with_extension("jsonl")).expect("jsonl written");
    text.lines()
        .map(
            |line| match serde_json::from_str(line).expect("each line is JSON") {
                Value::Object(map) => map,
                other => panic!("a record is not an object: {other}"),
            },
        )
        .collect()
}

#[test]
fn fixture_schemas_get_the_expected_statuses_in_the_reference_layout() {
    let prefix = out_prefix("run");
    let output = run_bench(&prefix);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "stdout:\n{stdout}\nstderr:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );

    let records = read_records(&prefix);
    let ids: Vec<&str> = records.iter().map(|r| r["id"].as_str().unwrap()).collect();
    assert_eq!(
        ids,
        [
            "enum.json",
            "integer-minimum.json",
            "numbers.json",
            "object-required.json",
            "remote-ref.json"
        ],
        "files run in name order"
    );
    for record in &records {
        let expected = if record["id"] == "remote-ref.json" {
            "compile_error"
        } else {
            "pass"
        };
        // The reference's fields in its order, then (for a schema that compiled) where the
        // time to first mask went.
        let keys: Vec<&str> = record.keys().map(String::as_str).collect();
        let mut layout = RECORD_FIELDS.to_vec();
        if expected == "pass" {
            layout.push("ttfm_phases_us");
            let phases = &record["ttfm_phases_us"];
            let part = |name: &str| phases[name].as_f64().unwrap_or(-1.0);
            let parts = [part("schema"), part("grammar"), part("first_mask")];
            assert!(parts.iter().all(|&p| p >= 0.0), "{phases}");
            let ttfm = record["ttfm_us"].as_f64().unwrap_or(0.0);
            assert!(
                parts.iter().sum::<f64>() <= ttfm * 1.001,
                "{phases} within {ttfm}"
            );
        }
        assert_eq!(keys, layout, "field layout of {}", record["id"]);
        assert_eq!(record["status"], expected, "{record:?}");
        if expected == "pass" {
            assert!(record["tokens"].as_u64().unwrap() > 0);
            assert!(record["ttfm_us"].as_f64().unwrap() > 0.0);
            assert!(record["error"].is_null());
        } else {
            assert_eq!(record["tokens"], 0);
            assert!(
                record["error"].as_str().unwrap().contains("none.json"),
                "{record:?}"
            );
        }
    }
    let by_id = |id: &str| records.iter().find(|r| r["id"] == id).unwrap();
    assert_eq!(
        by_id("integer-minimum.json")["n_eos_rejected"],
        1,
        "`1` is refused only at the end"
    );
    assert_eq!(by_id("object-required.json")["n_tests"], 5);

    let summary: serde_json::Map<String, Value> =
        serde_json::from_str(&std::fs::read_to_string(prefix.with_extension("json")).unwrap())
            .unwrap();
    for field in SUMMARY_FIELDS {
        assert!(summary.contains_key(field), "summary lacks {field}");
    }
    assert!(summary["engine"]
        .as_str()
        .unwrap()
        .starts_with("constrain "));
    assert_eq!(summary["tokenizer"], "qwen3");
    assert_eq!(summary["data"], "maskbench");
    assert_eq!(
        (summary["schemas"].as_u64(), summary["passing"].as_u64()),
        (Some(5), Some(4))
    );
    assert_eq!(summary["compile_error"], 1);
    let tokens: u64 = records.iter().map(|r| r["tokens"].as_u64().unwrap()).sum();
    assert_eq!(summary["tokens"].as_u64(), Some(tokens));
    let tbm = &summary["tbm_us"];
    for (low, high) in [
        ("p25", "p50"),
        ("p50", "p99"),
        ("p99", "p999"),
        ("p999", "max"),
    ] {
        assert!(
            tbm[low].as_f64() <= tbm[high].as_f64(),
            "{low} <= {high}: {tbm}"
        );
    }
    assert!(
        stdout.contains("TBM"),
        "the summary table is printed:\n{stdout}"
    );
}

/// Every token of a valid instance is fed, so the token count shows the instance text was
/// written exactly like Python's `json.dumps`.
#[test]
fn instances_are_serialized_like_python_json_dumps() {
    let prefix = out_prefix("serialization");
    let output = run_bench(&prefix);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let tokenizer = Tokenizer::from_file(constrain_testdata::fixture_tokenizer()).unwrap();
    // What CPython 3.11 prints for the instances of fixtures/maskbench/numbers.json.
    let python_texts = [
        "[1.0, 100000.0, -0.0, 12345678901234567890, 1.5e-07, 1e-05, 1e+16]",
        "[]",
    ];
    let expected: usize = python_texts
        .iter()
        .map(|t| tokenizer.encode(t).unwrap().len())
        .sum();
    let records = read_records(&prefix);
    let numbers = records.iter().find(|r| r["id"] == "numbers.json").unwrap();
    assert_eq!(
        numbers["tokens"].as_u64(),
        Some(expected as u64),
        "{numbers:?}"
    );
}
