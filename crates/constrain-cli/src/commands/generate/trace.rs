//! `--trace`: what each step of the generation did, as JSON lines for the inspector page or
//! as a short table for a terminal.

use std::fmt::Write as _;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;

use anyhow::Context;
use constrain::{Candidate, Origin, StepTrace};

/// Candidates kept per distribution in a trace.
pub(super) const CANDIDATES: usize = 5;

/// Writes `trace` to `path` as JSON lines, or to stderr as a table when `path` is `-`.
pub(super) fn write(path: &Path, trace: &[StepTrace]) -> anyhow::Result<()> {
    if path == Path::new("-") {
        // The output on stdout ends without a newline: the table starts on a line of its own.
        eprint!("\n{}", table(trace));
        return Ok(());
    }
    let file =
        File::create(path).with_context(|| format!("--trace: creating {}", path.display()))?;
    let mut out = BufWriter::new(file);
    for step in trace {
        serde_json::to_writer(&mut out, step)?;
        out.write_all(b"\n")?;
    }
    out.flush()
        .with_context(|| format!("--trace: writing {}", path.display()))
}

/// One row per token: its origin, the mask's width and removed mass, the token's probability
/// in the distribution it was drawn from, and what the model wanted most before the mask.
fn table(trace: &[StepTrace]) -> String {
    let mut out = format!(
        "{:>4}  {:<7}  {:<16}  {:>7}  {:>7}  {:>6}  {}\n",
        "step", "origin", "token", "allowed", "removed", "p", "model's top before the mask"
    );
    for (step, t) in trace.iter().enumerate() {
        let origin = match t.origin {
            Origin::Sampled => "sampled",
            Origin::Forced => "forced",
            Origin::Budget => "budget",
        };
        let allowed = t.allowed.map_or("-".to_string(), |n| n.to_string());
        let removed = t
            .removed_mass
            .map_or("-".to_string(), |m| format!("{m:.3}"));
        let p =
            probability(&t.after_funnel, t.token).map_or("-".to_string(), |p| format!("{p:.3}"));
        let mut before = String::new();
        for c in t.before_mask.iter().take(3) {
            let _ = write!(before, "{} {:.2}  ", quoted(&c.text, 12), c.prob);
        }
        let _ = writeln!(
            out,
            "{step:>4}  {origin:<7}  {:<16}  {allowed:>7}  {removed:>7}  {p:>6}  {}",
            quoted(&t.text, 14),
            before.trim_end()
        );
    }
    let sampled: Vec<f64> = trace.iter().filter_map(|t| t.removed_mass).collect();
    if !sampled.is_empty() {
        let mean = sampled.iter().sum::<f64>() / sampled.len() as f64;
        let _ = writeln!(
            out,
            "{} tokens, {} drawn; mass removed by the mask: mean {mean:.3}, max {:.3}",
            trace.len(),
            sampled.len(),
            sampled.iter().copied().fold(0.0, f64::max)
        );
    }
    out
}

fn probability(candidates: &[Candidate], token: u32) -> Option<f64> {
    candidates.iter().find(|c| c.token == token).map(|c| c.prob)
}

/// `text` as a JSON string literal (control characters and quotes escaped), cut to `max`
/// characters.
fn quoted(text: &str, max: usize) -> String {
    let literal = serde_json::Value::from(text).to_string();
    if literal.chars().count() <= max {
        return literal;
    }
    let cut: String = literal.chars().take(max - 1).collect();
    format!("{cut}…")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn candidate(token: u32, text: &str, prob: f64) -> Candidate {
        Candidate {
            token,
            text: text.into(),
            prob,
        }
    }

    #[test]
    fn the_table_has_a_row_per_token_and_a_summary() {
        let drawn = StepTrace {
            token: 7,
            text: "{\"".into(),
            origin: Origin::Sampled,
            allowed: Some(12),
            removed_mass: Some(0.25),
            before_mask: vec![candidate(3, "Hello", 0.5), candidate(7, "{\"", 0.25)],
            after_mask: vec![candidate(7, "{\"", 1.0)],
            after_funnel: vec![candidate(7, "{\"", 1.0)],
            budget_left: Some(40),
        };
        let forced = StepTrace {
            token: 9,
            text: "name".into(),
            origin: Origin::Forced,
            allowed: None,
            removed_mass: None,
            before_mask: Vec::new(),
            after_mask: Vec::new(),
            after_funnel: Vec::new(),
            budget_left: Some(39),
        };
        let text = table(&[drawn, forced]);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 4, "{text}");
        assert!(
            lines[1].contains("sampled") && lines[1].contains("0.250"),
            "{text}"
        );
        assert!(lines[1].contains("\"Hello\" 0.50"), "{text}");
        assert!(
            lines[2].contains("forced") && lines[2].contains("\"name\""),
            "{text}"
        );
        assert!(lines[3].starts_with("2 tokens, 1 drawn"), "{text}");
        assert_eq!(quoted("abcdefghijklmnop", 8), "\"abcdef…");
    }
}
