//! `--limit NAME=VALUE`: the compilation budgets ([`constrain_engine::Limits`]) of generation
//! and of `serve`, by the names the library and the Python package use (`docs/limits.md`).

use constrain_engine::Limits;

/// Help of `--limit`, shared by the commands that take it.
pub const HELP: &str = "A compilation budget, NAME=VALUE (repeatable): max_compile_time \
    (seconds; none: no limit), max_source_bytes, max_schema_depth, max_states, max_rows, \
    max_lexer_states, max_total_nfa_bytes, ... (all of them and their defaults: \
    docs/limits.md)";

/// Parses one `--limit` value, checking the name and the value at once (clap reports the
/// error against the flag).
pub fn parse(pair: &str) -> Result<String, String> {
    Limits::default().set_pair(pair)?;
    Ok(pair.to_string())
}

/// The default limits with every `--limit` applied in order.
pub fn from_args(pairs: &[String]) -> anyhow::Result<Limits> {
    let mut limits = Limits::default();
    for pair in pairs {
        limits
            .set_pair(pair)
            .map_err(|e| anyhow::anyhow!("--limit: {e}"))?;
    }
    Ok(limits)
}
