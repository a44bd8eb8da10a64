//! `constrain bench maskbench` on a spread sample of the shared MaskBench dev schemas with the
//! Llama 3.1 tokenizer, checked against the reference engine's results: where both pass a
//! schema whose instances are all valid (so every token is fed), the token counts must be
//! equal (same instance text, same tokenization, same protocol); and no schema may accept an
//! invalid instance or crash. Then `bench maskbench-compare` must read
//! both result files.
//!
//! `CONSTRAIN_MASKBENCH_SCHEMAS` sets the sample size: by default 200 in optimized builds and
//! 24 in debug builds, where compiling the larger schemas takes many seconds.

use std::collections::HashMap;
use std::path::Path;
use std::process::Command;

use serde_json::Value;

const DEFAULT_SCHEMAS: usize = if cfg!(debug_assertions) { 24 } else { 200 };

fn records(path: &Path) -> HashMap<String, Value> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    text.lines()
        .map(|line| {
            let record: Value = serde_json::from_str(line).expect("a JSON line");
            (record["id"].as_str().expect("an id").to_string(), record)
        })
        .collect()
}

/// Whether every test instance of the data file is valid.
fn all_valid(file: &Path) -> bool {
    let text = std::fs::read_to_string(file).unwrap();
    let value: Value = serde_json::from_str(&text).unwrap();
    value["tests"]
        .as_array()
        .is_some_and(|tests| tests.iter().all(|t| t["valid"] == true))
}

#[test]
fn dev_sample_matches_the_reference_protocol() {
    let Some(shared) =
        constrain_testdata::require_shared_or_skip("dev_sample_matches_the_reference_protocol")
    else {
        return;
    };
    let n: usize = std::env::var("CONSTRAIN_MASKBENCH_SCHEMAS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(DEFAULT_SCHEMAS);
    let data = shared.join("data/maskbench-dev");
    let anchor_path = shared.join("anchors/llguidance-dev-llama3_1.jsonl");
    let tokenizer = constrain_testdata::shared_tokenizer("llama3_1").expect("shared dir exists");

    // A directory of links to every k-th file: all sources of the corpus, in name order.
    let work = Path::new(env!("CARGO_TARGET_TMPDIR")).join("maskbench_anchor");
    let sample_dir = work.join("data");
    let _ = std::fs::remove_dir_all(&sample_dir);
    std::fs::create_dir_all(&sample_dir).unwrap();
    let mut files: Vec<_> = std::fs::read_dir(&data)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    files.sort();
    let n = n.min(files.len());
    for i in 0..n {
        let file = &files[i * files.len() / n];
        std::os::unix::fs::symlink(file, sample_dir.join(file.file_name().unwrap())).unwrap();
    }

    let prefix = work.join("run");
    let output = Command::new(env!("CARGO_BIN_EXE_constrain"))
        .args([
            "bench",
            "maskbench",
            "--tokenizer-name",
            "llama3_1",
            "--data",
        ])
        .arg(&sample_dir)
        .arg("--tokenizer")
        .arg(&tokenizer)
        .arg("--out")
        .arg(&prefix)
        .output()
        .expect("the constrain binary runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    println!("{stdout}");

    let ours = records(&prefix.with_extension("jsonl"));
    let anchor = records(&anchor_path);
    assert_eq!(ours.len(), n);
    let mut problems = Vec::new();
    let mut compared = 0;
    for (id, record) in &ours {
        let status = record["status"].as_str().unwrap();
        if matches!(status, "invalidation_error" | "crash" | "load_error") {
            problems.push(format!("{id}: {status}: {}", record["error"]));
        }
        let reference = &anchor[id];
        if status == "pass" && reference["status"] == "pass" && all_valid(&data.join(id)) {
            compared += 1;
            if record["tokens"] != reference["tokens"] {
                problems.push(format!(
                    "{id}: {} tokens, the reference fed {}",
                    record["tokens"], reference["tokens"]
                ));
            }
        }
    }
    println!("{compared} schemas with only valid instances pass in both: token counts compared");
    assert!(
        problems.is_empty(),
        "{} problems:\n{}",
        problems.len(),
        problems.join("\n")
    );
    assert!(
        output.status.success(),
        "stderr:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );

    let compare = Command::new(env!("CARGO_BIN_EXE_constrain"))
        .args(["bench", "maskbench-compare", "--anchor"])
        .arg(&anchor_path)
        .arg("--ours")
        .arg(prefix.with_extension("jsonl"))
        .output()
        .expect("the constrain binary runs");
    let report = String::from_utf8_lossy(&compare.stdout);
    println!("{report}");
    assert!(
        compare.status.success(),
        "stderr:\n{}",
        String::from_utf8_lossy(&compare.stderr)
    );
    assert!(
        report.contains(&format!("== Summary over {n} schemas")),
        "{report}"
    );
}
