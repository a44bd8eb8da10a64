//! Every input the fuzzers found a bug with, replayed through the very code of its fuzz target
//! (`fuzz/src/targets.rs`, included here), so that an ordinary `cargo test` keeps each bug
//! fixed. The inputs live in `fuzz/regressions/<target>/`, one file each, named after the bug;
//! `docs/fuzzing.md` lists them. The seed corpora (`fuzz/corpus/<target>/seed-*`) are replayed
//! too: they cover the targets' bodies once on stable.

#[allow(dead_code)]
#[path = "../fuzz/src/lib.rs"]
mod fuzz_support;

use std::path::Path;

fn replay(dir: &str, prefix: &str) -> usize {
    let root = constrain_testdata::workspace_root().join(dir);
    let mut replayed = 0;
    for (target, run) in fuzz_support::targets::ALL {
        let dir = root.join(target);
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        let mut paths: Vec<_> = entries
            .map(|e| e.expect("a readable directory entry").path())
            .filter(|p| {
                p.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.starts_with(prefix) && !n.ends_with(".md"))
            })
            .collect();
        paths.sort();
        for path in paths {
            replay_one(target, *run, &path);
            replayed += 1;
        }
    }
    replayed
}

fn replay_one(target: &str, run: fuzz_support::targets::Target, path: &Path) {
    let data = std::fs::read(path).expect("a readable input");
    eprintln!("{target}: {}", path.display());
    run(&data);
}

#[test]
fn every_fuzz_regression_input_runs_cleanly() {
    let dir = constrain_testdata::workspace_root().join("fuzz/regressions");
    assert!(dir.is_dir(), "{} is missing", dir.display());
    let replayed = replay("fuzz/regressions", "");
    eprintln!("{replayed} regression inputs replayed");
}

#[test]
fn every_fuzz_seed_runs_cleanly() {
    let replayed = replay("fuzz/corpus", "seed-");
    assert!(
        replayed >= 6,
        "only {replayed} seeds found under fuzz/corpus"
    );
}
