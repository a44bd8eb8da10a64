//! Running the `constrain` binary against the real model, and checking what it wrote.

#![allow(dead_code)] // Each test file uses a different part of this module.

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::Arc;

use constrain_engine::{CompiledGrammar, Grammar, Limits, Matcher, TokenIndex};
use constrain_vocab::{TokenKind, Vocabulary};

/// Seeds of the sampled runs (temperature 1.0); every case also runs once at temperature 0.
pub const SEEDS: [u64; 5] = [11, 22, 33, 44, 55];

/// The workspace root (`schemas/` and `grammars/` live there).
pub fn workspace() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// What one run of `constrain` did.
#[derive(Debug)]
pub struct Run {
    /// The exit code (`None` if killed by a signal).
    pub code: Option<i32>,
    /// Everything on stdout: the generated text.
    pub stdout: Vec<u8>,
    /// Everything on stderr.
    pub stderr: String,
}

impl Run {
    /// The `--stats` line: the last line of stderr, as JSON.
    pub fn stats(&self) -> serde_json::Value {
        let line = self.stderr.lines().last().unwrap_or_default();
        serde_json::from_str(line).unwrap_or_else(|e| panic!("stats line {line:?}: {e}\n{self:?}"))
    }

    /// Stdout as text.
    pub fn text(&self) -> String {
        String::from_utf8(self.stdout.clone())
            .unwrap_or_else(|e| panic!("stdout is not UTF-8: {e}"))
    }
}

/// Runs `constrain` with `args` (and `stdin`, if given) in the workspace root.
pub fn constrain(args: &[&str], stdin: Option<&str>) -> Run {
    constrain_with_env(args, stdin, &[])
}

/// [`constrain`] with extra environment variables.
pub fn constrain_with_env(args: &[&str], stdin: Option<&str>, env: &[(&str, &str)]) -> Run {
    // `CONSTRAIN_BIN` tests another build of the binary (an installed one, say).
    let binary = std::env::var_os("CONSTRAIN_BIN").map_or_else(
        || PathBuf::from(env!("CARGO_BIN_EXE_constrain")),
        PathBuf::from,
    );
    let mut command = Command::new(binary);
    command
        .args(args)
        .current_dir(workspace())
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (key, value) in env {
        command.env(key, value);
    }
    let mut child = command.spawn().expect("the constrain binary starts");
    if let Some(text) = stdin {
        child
            .stdin
            .take()
            .unwrap()
            .write_all(text.as_bytes())
            .unwrap();
    }
    let output = child.wait_with_output().unwrap();
    Run {
        code: output.status.code(),
        stdout: output.stdout,
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}

/// Generation flags shared by every run: one thread each (tests run two at a time on small
/// machines), a small context, statistics on.
pub fn generation_args<'a>(
    constraint: &[&'a str],
    prompt: &'a str,
    max_tokens: &'a str,
    sampling: &[&'a str],
) -> Vec<&'a str> {
    let mut args = constraint.to_vec();
    args.extend([
        "--threads",
        "1",
        "--ctx-size",
        "512",
        "--max-tokens",
        max_tokens,
        "--stats",
    ]);
    args.extend(sampling);
    args.push(prompt);
    args
}

/// The sampling flags of every case: greedy, then each seed at temperature 1.0.
pub fn sampling_cases() -> Vec<(String, Vec<String>)> {
    let mut cases = vec![(
        "temperature 0".to_string(),
        vec!["--temperature".into(), "0".into()],
    )];
    for seed in SEEDS {
        cases.push((
            format!("temperature 1, seed {seed}"),
            vec![
                "--temperature".into(),
                "1.0".into(),
                "--seed".into(),
                seed.to_string(),
            ],
        ));
    }
    cases
}

/// Whether the default model is in the cache. When it is not, the test fails with
/// instructions, unless `CONSTRAIN_SKIP_MODEL_TESTS=1` (then it is skipped with a note).
pub fn model_available(test: &str) -> bool {
    let path = constrain_llama::model_store::cached_model_path(
        &constrain_llama::model_store::DEFAULT_MODEL,
    )
    .expect("a cache directory");
    if path.is_file() {
        return true;
    }
    if std::env::var("CONSTRAIN_SKIP_MODEL_TESTS").is_ok_and(|v| v == "1") {
        eprintln!(
            "note: {test} skipped: no model at {} (CONSTRAIN_SKIP_MODEL_TESTS=1)",
            path.display()
        );
        return false;
    }
    panic!(
        "{test} needs the default model at {}: run `constrain fetch-model` \
         (or set CONSTRAIN_SKIP_MODEL_TESTS=1 to skip the tests that need it)",
        path.display()
    );
}

/// Whether `output` is a complete sentence of `grammar`, checked by a fresh matcher over a
/// byte-level vocabulary (independent of the model's tokens).
pub fn grammar_accepts(grammar: &Grammar, output: &[u8]) -> Result<(), String> {
    let mut tokens: Vec<(u32, Vec<u8>, TokenKind)> = (0..=255u8)
        .map(|b| (u32::from(b), vec![b], TokenKind::Text))
        .collect();
    tokens.push((256, b"<eos>".to_vec(), TokenKind::EndOfSequence));
    let vocabulary = Arc::new(Vocabulary::from_tokens(tokens).expect("byte vocabulary"));
    let compiled = CompiledGrammar::new(grammar, TokenIndex::new(vocabulary), Limits::default())
        .map_err(|e| format!("compiling: {e}"))?;
    let mut matcher = Matcher::new(compiled);
    matcher
        .accept_bytes(output)
        .map_err(|e| format!("rejected: {e}"))?;
    if matcher.is_accepting() {
        Ok(())
    } else {
        Err("the output is an unfinished prefix".into())
    }
}

/// `Ok` when the `--stats` line says the output ended where the grammar or the model meant.
pub fn complete(run: &Run) -> Result<(), String> {
    let stop = run.stats()["stop_reason"].clone();
    if stop == "grammar_finished" || stop == "end_of_sequence" {
        Ok(())
    } else {
        Err(format!("stop reason {stop}"))
    }
}

/// The files of `schemas/`, sorted.
pub fn schema_files() -> Vec<String> {
    let mut files: Vec<String> = std::fs::read_dir(workspace().join("schemas"))
        .expect("schemas/ exists")
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name.ends_with(".json"))
        .collect();
    files.sort();
    files
}

/// A schema of `schemas/`, parsed.
pub fn read_schema(file: &str) -> serde_json::Value {
    let text = std::fs::read_to_string(workspace().join("schemas").join(file)).unwrap();
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{file}: {e}"))
}

/// A few-shot prompt from the schema's `title` and `examples`: one line per example, then the
/// title again for the model to continue. A small base model needs to see the shape it is
/// asked for; the constraint then guarantees it.
pub fn schema_prompt(schema: &serde_json::Value) -> String {
    let title = schema["title"].as_str().expect("every schema has a title");
    let examples = schema["examples"]
        .as_array()
        .expect("every schema has examples");
    let mut prompt = String::new();
    for example in examples {
        prompt.push_str(&format!(
            "{title}: {}\n",
            constrain::Separators::python().write(example)
        ));
    }
    prompt.push_str(&format!("{title}: "));
    prompt
}

/// A JSON Schema validator that checks formats too.
pub fn validator(schema: &serde_json::Value) -> jsonschema::Validator {
    jsonschema::options()
        .should_validate_formats(true)
        .build(schema)
        .expect("the schema is valid")
}

/// `Ok` when `output` is JSON and valid against `validator`; otherwise why not.
pub fn json_validates(validator: &jsonschema::Validator, output: &[u8]) -> Result<(), String> {
    let value: serde_json::Value =
        serde_json::from_slice(output).map_err(|e| format!("not JSON: {e}"))?;
    let errors: Vec<String> = validator
        .iter_errors(&value)
        .map(|e| e.to_string())
        .collect();
    if errors.is_empty() {
        Ok(())
    } else {
        Err(errors.join("; "))
    }
}

/// `Ok` when every escape in `output` is one `json.dumps(..., ensure_ascii=False)` writes
/// (`constrain --schema` spells strings only that way): `\"`, `\\`, `\n`, `\r`, `\t`, `\b`,
/// `\f`, and `\u00xx` for the other control characters.
pub fn canonical_escapes(output: &[u8]) -> Result<(), String> {
    let mut i = 0;
    while i < output.len() {
        if output[i] != b'\\' {
            i += 1;
            continue;
        }
        let escape = &output[i..output.len().min(i + 6)];
        let canonical = match escape.get(1) {
            Some(b'"' | b'\\' | b'n' | b'r' | b't' | b'b' | b'f') => true,
            Some(b'u') => {
                let hex = std::str::from_utf8(&escape[2..]).unwrap_or("");
                hex.len() == 4
                    // Control characters without a short escape.
                    && u32::from_str_radix(hex, 16)
                        .is_ok_and(|c| c < 0x20 && ![0x08, 0x09, 0x0A, 0x0C, 0x0D].contains(&c))
                    && hex == hex.to_lowercase()
            }
            _ => false,
        };
        if !canonical {
            return Err(format!(
                "escape {:?} at byte {i} is not the canonical spelling",
                String::from_utf8_lossy(escape)
            ));
        }
        i += if escape.get(1) == Some(&b'u') { 6 } else { 2 };
    }
    Ok(())
}
