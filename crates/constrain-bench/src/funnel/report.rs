//! Running the funnel for the command and showing the result, as a table or as JSON.

use std::fmt::Write;

use anyhow::Context;
use constrain_sampling::{
    Funnel, History, PenaltyWindow, SamplerConfig, Stage, Trace, Xoshiro256StarStar,
};
use serde_json::{json, Value};

use super::tokens::TokenNames;
use super::Args;

/// Everything the command shows: the trace of the funnel and the seeded draws.
pub struct Report {
    labels: Vec<String>,
    logits: Vec<f32>,
    /// What each stage of the trace did, with its setting (`"temperature 0.5"`).
    descriptions: Vec<String>,
    /// The labels of the tokens in the penalty window, if a penalty is active.
    penalty_window: Option<(Vec<String>, String)>,
    trace: Trace,
    draws: Option<Draws>,
}

/// Empirical frequencies of seeded draws.
struct Draws {
    count: u64,
    seed: u64,
    frequencies: Vec<f64>,
}

impl Report {
    /// Runs the funnel as the arguments say.
    pub fn build(args: &Args) -> anyhow::Result<Report> {
        let names = TokenNames::new(&args.labels, args.logits.len())?;
        let config = sampler_config(args, &names)?;
        let history = history(args, &names)?;
        let mask = match &args.allow {
            Some(allowed) => Some(names.mask(&names.resolve_all(allowed).context("--allow")?)),
            None => None,
        };
        let mut funnel = Funnel::new(config.clone())?;
        let trace = funnel.trace(&args.logits, mask.as_deref(), &history)?;
        let descriptions = trace
            .steps
            .iter()
            .map(|step| describe(step.stage, &config, &names, args))
            .collect();
        let penalized = trace.steps.iter().any(|step| {
            matches!(
                step.stage,
                Some(Stage::RepetitionPenalty | Stage::FrequencyPresencePenalty)
            )
        });
        let penalty_window = penalized.then(|| {
            let window = history.window(&config.penalty_window);
            let labels = window
                .iter()
                .map(|&t| names.labels()[t as usize].clone())
                .collect();
            (labels, describe_window(&config.penalty_window))
        });
        let draws = if args.draws > 0 {
            Some(draw(&mut funnel, args, mask.as_deref(), &history)?)
        } else {
            None
        };
        Ok(Report {
            labels: names.labels().to_vec(),
            logits: args.logits.clone(),
            descriptions,
            penalty_window,
            trace,
            draws,
        })
    }

    /// `{"stages": [{"name": ..., "probs": [...]}, ...], "final": [...], "draws": [...]}`:
    /// probabilities by token in input order (0 for masked or cut tokens); `draws` is null
    /// without `--draws`.
    pub fn to_json(&self) -> Value {
        let stages: Vec<Value> = self
            .trace
            .steps
            .iter()
            .map(|step| json!({ "name": step.name(), "probs": json_probabilities(&step.probs) }))
            .collect();
        json!({
            "stages": stages,
            "final": json_probabilities(&self.trace.final_probs),
            "draws": self.draws.as_ref().map(|d| &d.frequencies),
        })
    }

    /// One row per token, one column per stage: the probabilities after each stage.
    pub fn to_table(&self) -> String {
        let mut out = String::new();
        let mut chain: Vec<&str> = self.descriptions.iter().map(String::as_str).collect();
        chain.push("softmax");
        let draw_note = self
            .draws
            .as_ref()
            .map(|d| format!("draw ({} draws, seed {})", d.count, d.seed));
        if let Some(note) = &draw_note {
            chain.push(note);
        }
        let _ = writeln!(out, "funnel: {}", chain.join(" -> "));
        if let Some((tokens, window)) = &self.penalty_window {
            let shown = if tokens.is_empty() {
                "(empty)".to_string()
            } else {
                tokens.join(", ")
            };
            let _ = writeln!(out, "penalty window ({window}): {shown}");
        }
        out.push('\n');

        let mut headers: Vec<&str> = vec!["token", "logit"];
        headers.extend(self.trace.steps.iter().map(|step| step.name()));
        if self.draws.is_some() {
            headers.push("draws");
        }
        let mut rows: Vec<Vec<String>> = Vec::with_capacity(self.labels.len());
        for (token, label) in self.labels.iter().enumerate() {
            let mut row = vec![label.clone(), format_logit(self.logits[token])];
            for step in &self.trace.steps {
                row.push(format_probability(step.probs[token], step.logits[token]));
            }
            if let Some(draws) = &self.draws {
                row.push(format!("{:.4}", draws.frequencies[token]));
            }
            rows.push(row);
        }
        let widths: Vec<usize> = (0..headers.len())
            .map(|column| {
                rows.iter()
                    .map(|row| row[column].len())
                    .chain([headers[column].len()])
                    .max()
                    .unwrap_or(0)
            })
            .collect();
        let line = |cells: &[&str]| {
            let mut text = format!("{:<w$}", cells[0], w = widths[0]);
            for (cell, width) in cells.iter().zip(&widths).skip(1) {
                let _ = write!(text, "  {cell:>width$}");
            }
            text.push('\n');
            text
        };
        out.push_str(&line(&headers));
        for row in &rows {
            let cells: Vec<&str> = row.iter().map(String::as_str).collect();
            out.push_str(&line(&cells));
        }
        out
    }
}

fn sampler_config(args: &Args, names: &TokenNames) -> anyhow::Result<SamplerConfig> {
    let last_n = match args.repeat_last_n {
        -1 => None,
        n if n >= 0 => Some(n as usize),
        n => anyhow::bail!("--repeat-last-n {n}: expected -1 (the whole history) or a count >= 0"),
    };
    let flags = [
        ("temperature", f64::from(args.temperature)),
        ("top_k", args.top_k as f64),
        ("top_p", f64::from(args.top_p)),
        ("min_p", f64::from(args.min_p)),
        ("typical_p", f64::from(args.typical_p)),
        ("repeat_penalty", f64::from(args.repeat_penalty)),
        ("frequency_penalty", f64::from(args.frequency_penalty)),
        ("presence_penalty", f64::from(args.presence_penalty)),
    ];
    let mut config = SamplerConfig::default()
        .with_settings(flags.map(|(name, value)| (name, Some(value))))
        .context("the sampling flags")?;
    config.penalty_window = PenaltyWindow {
        last_n,
        include_prompt: !args.no_penalize_prompt,
    };
    config.logit_bias = names
        .resolve_bias(&args.logit_bias)
        .context("--logit-bias")?;
    Ok(config)
}

fn history(args: &Args, names: &TokenNames) -> anyhow::Result<History> {
    let tokens = names.resolve_all(&args.history).context("--history")?;
    if args.prompt_len > tokens.len() {
        anyhow::bail!(
            "--prompt-len {} is longer than the history ({} tokens)",
            args.prompt_len,
            tokens.len()
        );
    }
    let mut history = History::from_prompt(&tokens[..args.prompt_len]);
    history.extend(&tokens[args.prompt_len..]);
    Ok(history)
}

/// `count` draws with the seed: the tokens [`Funnel::sample`] would give one after another.
fn draw(
    funnel: &mut Funnel,
    args: &Args,
    mask: Option<&[u32]>,
    history: &History,
) -> anyhow::Result<Draws> {
    let mut logits = args.logits.clone();
    let distribution = funnel.distribution(&mut logits, mask, history)?;
    let mut rng = Xoshiro256StarStar::seed_from_u64(args.seed);
    let mut counts = vec![0u64; args.logits.len()];
    for _ in 0..args.draws {
        counts[distribution.draw(&mut rng)? as usize] += 1;
    }
    Ok(Draws {
        count: args.draws,
        seed: args.seed,
        frequencies: counts
            .iter()
            .map(|&c| c as f64 / args.draws as f64)
            .collect(),
    })
}

fn describe(
    stage: Option<Stage>,
    config: &SamplerConfig,
    names: &TokenNames,
    args: &Args,
) -> String {
    let Some(stage) = stage else {
        return "input".to_string();
    };
    let setting = match stage {
        Stage::GrammarMask => {
            let allowed = args.allow.as_deref().unwrap_or_default();
            format!("(allows {})", allowed.join(", "))
        }
        Stage::RepetitionPenalty => config.repetition_penalty.to_string(),
        Stage::FrequencyPresencePenalty => format!(
            "(frequency {}, presence {})",
            config.frequency_penalty, config.presence_penalty
        ),
        Stage::LogitBias => {
            let entries: Vec<String> = config
                .logit_bias
                .iter()
                .map(|&(token, bias)| format!("{}={bias}", names.labels()[token as usize]))
                .collect();
            format!("({})", entries.join(", "))
        }
        Stage::Temperature if config.temperature == 0.0 => "0 (greedy)".to_string(),
        Stage::Temperature => config.temperature.to_string(),
        Stage::TopK => config.top_k.to_string(),
        Stage::TopP => config.top_p.to_string(),
        Stage::MinP => config.min_p.to_string(),
        Stage::TypicalP => config.typical_p.to_string(),
    };
    format!("{stage} {setting}")
}

fn describe_window(window: &PenaltyWindow) -> String {
    let span = match window.last_n {
        None => "the whole history".to_string(),
        Some(n) => format!("last {n} tokens"),
    };
    let prompt = if window.include_prompt {
        "prompt included"
    } else {
        "generated tokens only"
    };
    format!("{span}, {prompt}")
}

/// Probabilities for JSON, each written with the digits its `f32` needs (`0.5976948`, not the
/// `0.5976948142051697` of its widening to `f64`).
fn json_probabilities(probs: &[f32]) -> Vec<f64> {
    probs
        .iter()
        .map(|&p| p.to_string().parse().unwrap_or(p as f64))
        .collect()
}

fn format_logit(logit: f32) -> String {
    if logit == f32::NEG_INFINITY {
        "-inf".to_string()
    } else {
        format!("{logit:.2}")
    }
}

/// A probability with 4 decimals; `-` for a token masked or cut (its logit is -inf).
fn format_probability(probability: f32, logit: f32) -> String {
    if logit == f32::NEG_INFINITY {
        "-".to_string()
    } else {
        format!("{probability:.4}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Command {
        #[command(flatten)]
        args: Args,
    }

    const EXAMPLE: &[&str] = &[
        "funnel",
        "--logits",
        "6,5,4.5,3.5,2,0",
        "--labels",
        "mat,sofa,floor,bed,moon,banana",
    ];

    fn report(extra: &[&str]) -> Report {
        let argv: Vec<&str> = EXAMPLE.iter().chain(extra).copied().collect();
        Report::build(&Command::parse_from(argv).args).unwrap()
    }

    fn probs(value: &Value) -> Vec<f64> {
        value
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p.as_f64().unwrap())
            .collect()
    }

    fn assert_near(got: &[f64], want: &[f64], tolerance: f64) {
        assert_eq!(got.len(), want.len());
        for (g, w) in got.iter().zip(want) {
            assert!((g - w).abs() <= tolerance, "got {got:?}, want {want:?}");
        }
    }

    #[test]
    fn json_shows_the_worked_example_stage_by_stage() {
        let json = report(&[
            "--temperature",
            "0.5",
            "--top-k",
            "3",
            "--draws",
            "20000",
            "--seed",
            "7",
        ])
        .to_json();
        let stages = json["stages"].as_array().unwrap();
        let names: Vec<&str> = stages.iter().map(|s| s["name"].as_str().unwrap()).collect();
        assert_eq!(names, ["input", "temperature", "top-k"]);
        assert_near(
            &probs(&stages[0]["probs"]),
            &[0.590, 0.217, 0.132, 0.048, 0.011, 0.0015],
            5e-4,
        );
        assert_near(
            &probs(&stages[1]["probs"])[..4],
            &[0.839, 0.114, 0.042, 0.006],
            5e-4,
        );
        let last = probs(&json["final"]);
        assert_eq!(last, probs(&stages[2]["probs"]));
        assert_eq!(&last[3..], [0.0, 0.0, 0.0]);
        let draws = probs(&json["draws"]);
        assert_near(&draws, &last, 0.01);
        assert_eq!(draws.iter().sum::<f64>(), 1.0);
    }

    #[test]
    fn the_cutoffs_and_the_penalty_give_the_notes_numbers() {
        for flags in [
            &["--top-k", "3"][..],
            &["--top-p", "0.9"],
            &["--min-p", "0.1"],
        ] {
            let last = probs(&report(flags).to_json()["final"]);
            assert_near(&last, &[0.6286, 0.2312, 0.1402, 0.0, 0.0, 0.0], 1e-4);
        }
        let hot = probs(&report(&["--temperature", "2"]).to_json()["final"]);
        assert_near(&hot, &[0.392, 0.238, 0.185, 0.112, 0.053, 0.020], 5e-4);
        let penalized = report(&["--history", "mat", "--repeat-penalty", "1.25"]).to_json();
        let last = probs(&penalized["final"]);
        assert_near(&last[..2], &[0.303, 0.370], 5e-4);
        assert!(penalized["draws"].is_null());
    }

    #[test]
    fn the_table_lists_every_stage_and_marks_cut_tokens() {
        let table = report(&[
            "--history",
            "mat",
            "--repeat-penalty",
            "1.25",
            "--allow",
            "0,1,2,3",
            "--top-k",
            "3",
            "--draws",
            "1000",
        ])
        .to_table();
        assert!(table.starts_with(
            "funnel: input -> grammar-mask (allows 0, 1, 2, 3) -> repetition-penalty 1.25 -> top-k 3 -> softmax -> draw (1000 draws, seed 0)\n"
        ), "{table}");
        assert!(
            table.contains("penalty window (last 64 tokens, prompt included): mat\n"),
            "{table}"
        );
        let header = table.lines().nth(3).unwrap();
        assert_eq!(
            header.split_whitespace().collect::<Vec<_>>(),
            [
                "token",
                "logit",
                "input",
                "grammar-mask",
                "repetition-penalty",
                "top-k",
                "draws"
            ]
        );
        // After the mask: 1 / (1 + e^-1 + e^-1.5 + e^-2.5) = .5977; after the penalty, mat is
        // e^-.2 / (e^-.2 + 1 + e^-.5 + e^-1.5) = .3091.
        let mat: Vec<&str> = table.lines().nth(4).unwrap().split_whitespace().collect();
        assert_eq!(&mat[..5], ["mat", "6.00", "0.5904", "0.5977", "0.3091"]);
        let moon: Vec<&str> = table.lines().nth(8).unwrap().split_whitespace().collect();
        assert_eq!(moon, ["moon", "2.00", "0.0108", "-", "-", "-", "0.0000"]);
    }

    #[test]
    fn bad_input_is_explained() {
        let build = |extra: &[&str]| {
            let argv: Vec<&str> = EXAMPLE.iter().chain(extra).copied().collect();
            Report::build(&Command::parse_from(argv).args)
                .err()
                .map(|e| format!("{e:#}"))
        };
        assert!(build(&["--history", "cat"])
            .unwrap()
            .contains("unknown token \"cat\""));
        assert!(build(&["--top-p", "2"]).unwrap().contains("top_p"));
        assert!(build(&["--allow", "moon", "--logit-bias", "moon=-inf"])
            .unwrap()
            .contains("no token is left"));
        assert!(build(&["--logit-bias", "mat=inf"])
            .unwrap()
            .contains("logit_bias"));
        assert!(build(&["--prompt-len", "2"])
            .unwrap()
            .contains("--prompt-len"));
    }
}
