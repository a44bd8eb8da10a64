//! Reads requests (one JSON object per line on stdin) and writes, for each, the engine's
//! mask before every token of a sequence, as raw little-endian `u32` words, to the file the
//! request names. The Python suite walks the same sequence through the bindings and compares.
//!
//! Request: `{"tokenizer": PATH, "kind": "json_schema"|"regex"|"gbnf"|"any_json",
//! "source": TEXT, "tokens": [ids], "out": PATH}`, and optionally `"time_fills": N` to time N
//! mask fills at the last state (the per-call cost the Python benchmark compares with). One line
//! of output per request: `ok` (then the nanoseconds per timed fill, if asked), or the error.

#![forbid(unsafe_code)]

use std::io::{BufRead, Write};
use std::sync::Arc;

use anyhow::{bail, Context};
use constrain::{Constraint, Matcher, TokenIndex, Tokenizer};
use serde_json::Value;

fn main() -> anyhow::Result<()> {
    let stdin = std::io::stdin();
    let mut stdout = std::io::stdout();
    for line in stdin.lock().lines() {
        let line = line?;
        if line.trim().is_empty() {
            continue;
        }
        match run(&line) {
            Ok(None) => writeln!(stdout, "ok")?,
            Ok(Some(ns)) => writeln!(stdout, "ok {ns:.1}")?,
            Err(e) => writeln!(stdout, "error: {e:#}")?,
        }
        stdout.flush()?;
    }
    Ok(())
}

fn field<'a>(request: &'a Value, name: &str) -> anyhow::Result<&'a str> {
    request[name]
        .as_str()
        .with_context(|| format!("the request has no string {name:?}"))
}

/// Replays one request; the nanoseconds per timed fill, if the request asks for timing.
fn run(line: &str) -> anyhow::Result<Option<f64>> {
    let request: Value = serde_json::from_str(line).context("the request is not JSON")?;
    let tokenizer = Tokenizer::from_file(field(&request, "tokenizer")?)?;
    let source = field(&request, "source")?;
    let constraint = match field(&request, "kind")? {
        "json_schema" => Constraint::JsonSchema(serde_json::from_str(source)?),
        "any_json" => Constraint::JsonSchema(Value::Bool(true)),
        "regex" => Constraint::Regex(source.to_string()),
        "gbnf" => Constraint::Gbnf(source.to_string()),
        other => bail!("unknown kind {other:?}"),
    };
    let compiled = constraint.compile(TokenIndex::new(Arc::clone(tokenizer.vocabulary())))?;
    let mut matcher = Matcher::new(compiled.clone());
    let mut mask = vec![0u32; compiled.mask_words()];
    let mut out = Vec::new();
    let tokens = request["tokens"].as_array().context("no \"tokens\" list")?;
    for (step, token) in tokens.iter().enumerate() {
        matcher.fill_mask(&mut mask)?;
        out.extend(mask.iter().flat_map(|w| w.to_le_bytes()));
        let token = token
            .as_u64()
            .and_then(|t| u32::try_from(t).ok())
            .with_context(|| format!("tokens[{step}] is not a token id"))?;
        matcher
            .accept_token(token)
            .with_context(|| format!("tokens[{step}]"))?;
    }
    matcher.fill_mask(&mut mask)?;
    out.extend(mask.iter().flat_map(|w| w.to_le_bytes()));
    std::fs::write(field(&request, "out")?, out)?;
    let Some(fills) = request["time_fills"].as_u64() else {
        return Ok(None);
    };
    let start = std::time::Instant::now();
    for _ in 0..fills {
        matcher.fill_mask(std::hint::black_box(&mut mask))?;
    }
    Ok(Some(
        start.elapsed().as_nanos() as f64 / fills.max(1) as f64,
    ))
}
