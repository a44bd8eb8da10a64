//! `constrain funnel`: what every stage of the sampling funnel does to a distribution.
//!
//! A teaching and debugging view of `constrain-sampling`: the logits go through the same
//! funnel generation uses (same flags), and the distribution is printed after every stage
//! that does something, optionally with the empirical frequencies of seeded draws.

mod report;
mod tokens;

use std::process::ExitCode;

pub use report::Report;

/// Usage examples shown by `--help`.
const EXAMPLES: &str = "\
Examples:
  # The cat sat on the ___: temperature 0.5, then the three best.
  constrain funnel --logits 6,5,4.5,3.5,2,0 --labels mat,sofa,floor,bed,moon,banana \\
      --temperature 0.5 --top-k 3

  # mat was already said twice: a repetition penalty, and 10,000 seeded draws.
  constrain funnel --logits 6,5,4.5,3.5,2,0 --labels mat,sofa,floor,bed,moon,banana \\
      --history mat,mat --repeat-penalty 1.25 --draws 10000 --seed 7

  # A grammar that allows only sofa and bed, as JSON.
  constrain funnel --logits 6,5,4.5,3.5 --allow 1,3 --json";

/// Arguments of `constrain funnel`. The sampling flags are those of generation.
#[derive(clap::Args, Debug)]
#[command(after_help = EXAMPLES)]
pub struct Args {
    /// The logits, one per token, comma-separated (e.g. 6,5,4.5,3.5,2,0; -inf = impossible).
    #[arg(
        long,
        value_delimiter = ',',
        allow_hyphen_values = true,
        required = true
    )]
    pub logits: Vec<f32>,
    /// Names of the tokens, comma-separated, in the same order (default: their indices).
    #[arg(long, value_delimiter = ',')]
    pub labels: Vec<String>,
    /// Temperature: below 1 sharpens, above 1 flattens, 0 is greedy.
    #[arg(long, default_value_t = 1.0)]
    pub temperature: f32,
    /// Keep only the k most likely tokens (0: off).
    #[arg(long, default_value_t = 0)]
    pub top_k: usize,
    /// Keep the smallest set of most likely tokens whose probability reaches p (1: off).
    #[arg(long, default_value_t = 1.0)]
    pub top_p: f32,
    /// Keep the tokens at least min-p times as likely as the most likely one (0: off).
    #[arg(long, default_value_t = 0.0)]
    pub min_p: f32,
    /// Keep the smallest set of the most typical tokens whose probability reaches p (1: off).
    #[arg(long, default_value_t = 1.0)]
    pub typical_p: f32,
    /// Repetition penalty (CTRL): divides positive logits of recent tokens, multiplies
    /// negative ones (1: off).
    #[arg(long, default_value_t = 1.0)]
    pub repeat_penalty: f32,
    /// How many recent tokens the penalties look at (-1: the whole history, 0: none).
    #[arg(long, default_value_t = 64, allow_negative_numbers = true)]
    pub repeat_last_n: i64,
    /// Subtracted from a token's logit for every time it occurs in the window.
    #[arg(long, default_value_t = 0.0, allow_negative_numbers = true)]
    pub frequency_penalty: f32,
    /// Subtracted from a token's logit if it occurs in the window at all.
    #[arg(long, default_value_t = 0.0, allow_negative_numbers = true)]
    pub presence_penalty: f32,
    /// Biases added to logits: TOKEN=BIAS pairs, comma-separated (TOKEN an index or a label,
    /// BIAS a number or -inf).
    #[arg(long, value_delimiter = ',', allow_hyphen_values = true)]
    pub logit_bias: Vec<String>,
    /// The tokens so far, oldest first (indices or labels), for the penalties.
    #[arg(long, value_delimiter = ',')]
    pub history: Vec<String>,
    /// How many of the first history tokens are the prompt.
    #[arg(long, default_value_t = 0)]
    pub prompt_len: usize,
    /// Leave the prompt out of the penalty window (count only generated tokens).
    #[arg(long)]
    pub no_penalize_prompt: bool,
    /// The tokens the grammar allows (indices or labels); without it, every token.
    #[arg(long, value_delimiter = ',')]
    pub allow: Option<Vec<String>>,
    /// Draw this many tokens and show how often each came out.
    #[arg(long, default_value_t = 0)]
    pub draws: u64,
    /// Seed of the draws.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Print one JSON object: {"stages": [{"name", "probs"}], "final", "draws"}.
    #[arg(long)]
    pub json: bool,
}

/// Runs the command.
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let report = Report::build(&args)?;
    if args.json {
        println!("{}", serde_json::to_string(&report.to_json())?);
    } else {
        print!("{}", report.to_table());
    }
    Ok(ExitCode::SUCCESS)
}
