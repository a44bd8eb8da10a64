//! Locating the reference data and fixtures that tests and benches read.
//!
//! Two sources of test inputs exist:
//! - **fixtures**: small files committed under `<workspace>/fixtures/`, always present;
//! - **shared reference data** (real tokenizers, schema corpora): a directory kept outside
//!   the repository, found through the environment variable `CONSTRAIN_SHARED_DIR`, else at
//!   `<workspace>/../shared`. Tests that need it skip with a printed note when it is absent,
//!   unless `CONSTRAIN_REQUIRE_SHARED=1`, which turns its absence into a failure (for runs
//!   that must not pass by skipping).
//!
//! Beside them, the helpers several test suites share: a byte vocabulary ([`byte_vocabulary`]),
//! a reproducible generator ([`XorShift64`]) and mask reading ([`allowed_ids`]).

#![forbid(unsafe_code)]
#![deny(missing_docs)]

mod masks;
mod rng;
mod vocab;

use std::env;
use std::path::{Path, PathBuf};

pub use masks::{allowed_ids, is_allowed};
pub use rng::XorShift64;
pub use vocab::{byte_vocabulary, hashed_logits, pieces_vocabulary, BYTE_VOCABULARY_EOS};

/// Environment variable naming the shared reference-data directory.
pub const SHARED_DIR_ENV: &str = "CONSTRAIN_SHARED_DIR";

/// Environment variable that, set to `1`, makes a missing shared directory an error.
pub const REQUIRE_SHARED_ENV: &str = "CONSTRAIN_REQUIRE_SHARED";

/// The real tokenizers of the shared directory, each at `tokenizers/<name>/tokenizer.json`.
pub const SHARED_TOKENIZERS: [&str; 5] = ["llama3_1", "qwen3", "gpt4o", "deepseek_v3", "gemma3"];

/// The committed tokenizer fixture (Qwen3's byte-level BPE tokenizer, gzip-compressed).
const FIXTURE_TOKENIZER: &str = "tokenizers/qwen3/tokenizer.json.gz";

/// The workspace's root directory (the one holding the top-level `Cargo.toml`).
///
/// Found above the manifest directory `cargo test` gives the running test, else above the one
/// this crate was compiled in: a build directory shared by clones at different paths may hold
/// this crate compiled in another clone, whose compiled-in path may be gone.
pub fn workspace_root() -> PathBuf {
    let compiled = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let running = std::env::var_os("CARGO_MANIFEST_DIR").map(PathBuf::from);
    let found = running.iter().chain([&compiled]).find_map(|dir| {
        dir.ancestors()
            .find(|d| is_workspace_root(d))
            .map(Path::to_path_buf)
    });
    // Else the layout this crate is written for: `<workspace>/crates/constrain-testdata`.
    found.unwrap_or_else(|| {
        compiled
            .ancestors()
            .nth(2)
            .unwrap_or(&compiled)
            .to_path_buf()
    })
}

fn is_workspace_root(dir: &Path) -> bool {
    std::fs::read_to_string(dir.join("Cargo.toml"))
        .is_ok_and(|manifest| manifest.lines().any(|line| line.trim() == "[workspace]"))
}

/// The shared reference-data directory, if there is one.
///
/// `CONSTRAIN_SHARED_DIR` wins when set (and must then exist); otherwise
/// `<workspace>/../shared` is used if it exists.
///
/// # Panics
///
/// When no directory is found and `CONSTRAIN_REQUIRE_SHARED=1`, or when
/// `CONSTRAIN_SHARED_DIR` names a directory that does not exist: both are
/// misconfigurations that must not pass silently as skipped tests.
pub fn shared_dir() -> Option<PathBuf> {
    if let Some(dir) = env::var_os(SHARED_DIR_ENV).filter(|d| !d.is_empty()) {
        let dir = PathBuf::from(dir);
        if !dir.is_dir() {
            panic!(
                "{SHARED_DIR_ENV}={} is not a directory; point it at the shared reference \
                 data (the directory holding tokenizers/ and data/) or unset it",
                dir.display()
            );
        }
        return Some(dir);
    }
    let root = workspace_root();
    let default = root.parent().unwrap_or(&root).join("shared");
    if default.is_dir() {
        return Some(default);
    }
    if shared_required() {
        panic!(
            "{REQUIRE_SHARED_ENV}=1 but the shared reference data is missing: {} does not \
             exist; set {SHARED_DIR_ENV} to the directory holding tokenizers/ and data/",
            default.display()
        );
    }
    None
}

/// `tokenizers/<name>/tokenizer.json` of the shared directory, if the directory exists.
///
/// # Panics
///
/// When the shared directory exists but lacks this tokenizer: a broken copy of the
/// reference data should be noticed, not skipped. Also in the cases [`shared_dir`] panics.
pub fn shared_tokenizer(name: &str) -> Option<PathBuf> {
    let path = shared_dir()?
        .join("tokenizers")
        .join(name)
        .join("tokenizer.json");
    if !path.is_file() {
        panic!(
            "shared tokenizer {name:?} is missing: {} does not exist",
            path.display()
        );
    }
    Some(path)
}

/// A committed fixture: `<workspace>/fixtures/<rel_path>`.
pub fn fixture(rel_path: impl AsRef<Path>) -> PathBuf {
    workspace_root().join("fixtures").join(rel_path)
}

/// The committed byte-level BPE tokenizer (`tokenizer.json.gz`, with its
/// `tokenizer_config.json` beside it), for tests that must run everywhere.
pub fn fixture_tokenizer() -> PathBuf {
    fixture(FIXTURE_TOKENIZER)
}

/// The shared directory, or `None` after printing that `test_name` is skipped.
///
/// Use at the top of a test: `let Some(shared) = require_shared_or_skip("name") else { return };`
///
/// # Panics
///
/// In the cases [`shared_dir`] panics (notably `CONSTRAIN_REQUIRE_SHARED=1`).
pub fn require_shared_or_skip(test_name: &str) -> Option<PathBuf> {
    let dir = shared_dir();
    if dir.is_none() {
        eprintln!(
            "note: skipping {test_name}: no shared reference data (set {SHARED_DIR_ENV}, \
             or {REQUIRE_SHARED_ENV}=1 to make this a failure)"
        );
    }
    dir
}

fn shared_required() -> bool {
    env::var(REQUIRE_SHARED_ENV).is_ok_and(|v| v == "1")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn workspace_root_holds_the_workspace_manifest() {
        let manifest = std::fs::read_to_string(workspace_root().join("Cargo.toml"))
            .expect("workspace Cargo.toml is readable");
        assert!(manifest.contains("[workspace]"));
    }

    #[test]
    fn fixture_tokenizer_is_committed() {
        let path = fixture_tokenizer();
        assert!(path.is_file(), "{} is missing", path.display());
        assert!(path.with_file_name("tokenizer_config.json").is_file());
    }

    #[test]
    fn shared_tokenizers_exist_when_shared_dir_does() {
        let Some(shared) = require_shared_or_skip("shared_tokenizers_exist_when_shared_dir_does")
        else {
            return;
        };
        for name in SHARED_TOKENIZERS {
            let path = shared_tokenizer(name).expect("shared dir exists");
            assert!(path.starts_with(&shared));
            assert!(path.is_file());
        }
    }
}
