//! `constrain [--schema FILE | --regex RE | --grammar FILE | --json] PROMPT`: generation with a
//! real model whose output follows the constraint; without one, unconstrained text (baseline).

mod constraint;
#[cfg(feature = "llama")]
mod run;
#[cfg(feature = "llama")]
mod trace;

use std::path::PathBuf;
use std::process::ExitCode;

use super::schema_resources::ResourceArg;
use super::test_cases::{EscapesArg, NumbersArg, PropertyOrderArg};

/// Shown after `--help`.
pub const EXAMPLES: &str = "\
Examples:
  constrain fetch-model                              download the default model (once, 253 MB)
  constrain --schema schemas/person.json 'Alice, 31, alice@example.com. As JSON: '
  constrain --json --chat 'Three primary colors as a JSON array'
  constrain --regex '[0-9]{3}-[0-9]{4}' 'Call me at '
  constrain --grammar grammars/arithmetic.gbnf 'An arithmetic expression: '
  echo 'Once upon a time' | constrain --max-tokens 40 -     (unconstrained; prompt from stdin)
  constrain --schema schemas/tool_call.json --temperature 1 --seed 7 --stats 'Weather in Oslo?'

Only the generated text goes to stdout; messages and the --stats line go to stderr.
Exit status: 0 = the output is complete (and valid, with a constraint); 1 = the output was cut
off by --max-tokens or the context size; 2 = error (bad schema or grammar, missing model, ...).";

/// Arguments of generation (the command without a subcommand).
/// Default of `--max-untyped-depth`: room for a value of a few levels (a list of records),
/// not for a model's runaway nesting.
pub const DEFAULT_UNTYPED_DEPTH: u32 = 3;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// The prompt; `-` reads it from stdin.
    #[arg(value_name = "PROMPT")]
    pub prompt: Option<String>,

    /// Constrain the output to JSON that validates against this JSON Schema file.
    #[arg(
        long,
        value_name = "FILE",
        group = "constraint",
        help_heading = "Constraint"
    )]
    pub schema: Option<PathBuf>,
    /// Constrain the output to a full match of this regular expression (Rust regex syntax).
    #[arg(
        long,
        value_name = "RE",
        group = "constraint",
        help_heading = "Constraint"
    )]
    pub regex: Option<String>,
    /// Constrain the output to this GBNF grammar (llama.cpp's grammar format; start rule `root`).
    #[arg(
        long,
        value_name = "FILE",
        group = "constraint",
        help_heading = "Constraint"
    )]
    pub grammar: Option<PathBuf>,
    /// Constrain the output to this Lark grammar (the `lark` package's EBNF; start rule
    /// `start`; see docs/lark.md).
    #[arg(
        long,
        value_name = "FILE",
        group = "constraint",
        help_heading = "Constraint"
    )]
    pub lark: Option<PathBuf>,
    /// Constrain the output to this XGrammar structural tag (JSON: tags around schemas,
    /// free text with triggers; see docs/structural-tags.md).
    #[arg(
        long,
        value_name = "FILE",
        group = "constraint",
        help_heading = "Constraint"
    )]
    pub structural_tag: Option<PathBuf>,
    /// Constrain the output to any JSON value.
    #[arg(long, group = "constraint", help_heading = "Constraint")]
    pub json: bool,
    /// With --schema: the order of an object's declared properties (`schema`: as the schema
    /// lists them; `any`: any order, each at most once).
    #[arg(
        long,
        value_enum,
        default_value_t = PropertyOrderArg::Schema,
        help_heading = "Constraint"
    )]
    pub property_order: PropertyOrderArg,
    /// With --schema or --json: which spellings of strings the output may use (`canonical`:
    /// as `json.dumps(..., ensure_ascii=False)` writes them; `any`: every escape JSON allows).
    #[arg(
        long,
        value_enum,
        default_value_t = EscapesArg::Canonical,
        help_heading = "Constraint"
    )]
    pub escapes: EscapesArg,
    /// With --schema or --json: which spellings of numbers the output may use (`canonical`:
    /// integers as integer literals within 64 bits, no `-0`, exponents only for very large or
    /// small numbers, as typed readers accept; `any`: every spelling JSON Schema allows).
    #[arg(
        long,
        value_enum,
        default_value_t = NumbersArg::Canonical,
        help_heading = "Constraint"
    )]
    pub numbers: NumbersArg,
    /// With --schema or --json: the deepest nesting of arrays and objects generated inside a
    /// value the schema does not describe (`{}`, `true`, an untyped `additionalProperties`).
    /// Any value is valid there, so a shallower one still is: the bound only keeps a model
    /// from nesting `{"data": {"data": ...` until its tokens run out.
    #[arg(
        long,
        value_name = "DEPTH",
        default_value_t = DEFAULT_UNTYPED_DEPTH,
        help_heading = "Constraint"
    )]
    pub max_untyped_depth: u32,
    /// With --schema: a schema document its `$ref`s may name by URI (repeatable; nothing is
    /// ever fetched).
    #[arg(
        long,
        value_name = "URI=FILE",
        requires = "schema",
        help_heading = "Constraint"
    )]
    pub resource: Vec<ResourceArg>,
    /// Sample every token, also where the constraint admits a single continuation (by default
    /// such text is appended without sampling, in one model evaluation): the model then
    /// chooses its own tokenization of it, one evaluation per token.
    #[arg(long, help_heading = "Constraint")]
    pub no_fast_forward: bool,
    #[arg(
        long = "limit",
        value_name = "NAME=VALUE",
        value_parser = super::limits::parse,
        help = super::limits::HELP,
        help_heading = "Constraint"
    )]
    pub limits: Vec<String>,

    /// GGUF model file [default: the cached model from `constrain fetch-model`].
    #[arg(long, value_name = "PATH", help_heading = "Model")]
    pub model: Option<PathBuf>,
    /// Wrap the prompt in the model's chat template (one user turn, then the model's turn).
    #[arg(long, help_heading = "Model")]
    pub chat: bool,
    /// With --chat: the chat template by llama.cpp's name (gemma, chatml, llama3, llama2,
    /// mistral-v7, phi3, zephyr) [default: the model's own, by family; Gemma for the default
    /// model]. Implies --chat.
    #[arg(long, value_name = "NAME", help_heading = "Model")]
    pub chat_template: Option<String>,
    /// Most tokens to generate (sampled and forced). With a constraint it is a budget the
    /// output completes within: near its end the mask narrows to tokens that close the output
    /// in time, so it ends complete and valid (see --truncate).
    #[arg(long, value_name = "N", default_value_t = 256, help_heading = "Model")]
    pub max_tokens: usize,
    /// Cut a constrained output off at --max-tokens instead of completing it within them (the
    /// output is then a prefix of a valid one, and the exit status 1).
    #[arg(long, help_heading = "Constraint")]
    pub truncate: bool,
    /// Threads for evaluation [default: all cores].
    #[arg(long, value_name = "N", help_heading = "Model")]
    pub threads: Option<u32>,
    /// Context size in tokens (prompt plus output).
    #[arg(
        long,
        value_name = "N",
        default_value_t = 4096,
        value_parser = clap::value_parser!(u32).range(1..),
        help_heading = "Model"
    )]
    pub ctx_size: u32,
    #[command(flatten, next_help_heading = "Model")]
    pub gpu: super::gpu::GpuArgs,

    /// Softmax temperature; 0 always picks the most likely allowed token.
    #[arg(
        long,
        value_name = "T",
        default_value_t = 0.8,
        help_heading = "Sampling"
    )]
    pub temperature: f32,
    /// Keep only the K most likely tokens (0 = off).
    #[arg(
        long,
        value_name = "K",
        default_value_t = 40,
        help_heading = "Sampling"
    )]
    pub top_k: usize,
    /// Nucleus sampling: keep the most likely tokens up to this probability mass (1 = off).
    #[arg(
        long,
        value_name = "P",
        default_value_t = 0.95,
        help_heading = "Sampling"
    )]
    pub top_p: f32,
    /// Drop tokens less likely than P times the most likely one (0 = off).
    #[arg(
        long,
        value_name = "P",
        default_value_t = 0.05,
        help_heading = "Sampling"
    )]
    pub min_p: f32,
    /// Locally typical sampling mass (1 = off).
    #[arg(
        long,
        value_name = "P",
        default_value_t = 1.0,
        help_heading = "Sampling"
    )]
    pub typical_p: f32,
    /// Penalize recently generated tokens by this factor (1 = off).
    #[arg(
        long,
        value_name = "F",
        default_value_t = 1.0,
        help_heading = "Sampling"
    )]
    pub repeat_penalty: f32,
    /// Subtract F times a recent token's count from its logit (0 = off).
    #[arg(
        long,
        value_name = "F",
        default_value_t = 0.0,
        help_heading = "Sampling"
    )]
    pub frequency_penalty: f32,
    /// Subtract F from the logit of every recently generated token (0 = off).
    #[arg(
        long,
        value_name = "F",
        default_value_t = 0.0,
        help_heading = "Sampling"
    )]
    pub presence_penalty: f32,
    /// Add VALUE to the logit of token ID before sampling (repeatable; entries for one token
    /// add up). `-inf` bans the token; the constraint still decides what is allowed.
    #[arg(
        long,
        value_name = "ID=VALUE",
        value_parser = parse_logit_bias,
        help_heading = "Sampling"
    )]
    pub logit_bias: Vec<(u32, f32)>,
    /// Constrained beam search with B beams instead of sampling: the output is the most
    /// likely one found under the constraint (by the model's distribution masked to the allowed
    /// tokens; the sampling settings do not apply). `--beams 1` is greedy decoding. Needs a
    /// constraint.
    #[arg(long, value_name = "B", help_heading = "Decoding")]
    pub beams: Option<usize>,
    /// With --beams: rank complete outputs by log-probability / length^A (0: by
    /// log-probability alone; larger values favour longer outputs).
    #[arg(
        long,
        value_name = "A",
        default_value_t = 0.0,
        requires = "beams",
        help_heading = "Decoding"
    )]
    pub length_penalty: f64,
    /// Speculative decoding by prompt lookup: draft up to K tokens by copying what followed
    /// the latest earlier occurrence (in the prompt or the output) of the last few tokens, cut
    /// where the constraint refuses, score them in one model evaluation, and keep what
    /// verification accepts (drafts shorten, and pause, after rejections). The output is
    /// distributed exactly as without it (identical at temperature 0); it comes faster where
    /// the output copies from the prompt.
    #[arg(
        long,
        value_name = "K",
        help_heading = "Decoding",
        conflicts_with = "beams"
    )]
    pub lookup: Option<usize>,
    /// Seed of the random draw [default: random].
    #[arg(long, value_name = "N", help_heading = "Sampling")]
    pub seed: Option<u64>,

    /// Record what each step did: FILE gets one JSON line per token (its origin: sampled,
    /// forced or budget-constrained; tokens allowed; the probability mass the mask removed;
    /// the top candidates before and after the mask and the funnel; the budget left), which
    /// `constrain serve`'s /inspect page opens. `-` prints a short table to stderr instead.
    #[arg(
        long,
        value_name = "FILE",
        help_heading = "Output",
        conflicts_with = "beams"
    )]
    pub trace: Option<PathBuf>,
    /// End stderr with one JSON line of statistics (tokens, speed, mask times, stop reason).
    #[arg(long, help_heading = "Output")]
    pub stats: bool,
    /// Add log-probabilities to the --stats line (implies --stats): `logprobs`, one entry per
    /// sampled token with its log-probability under the model and the N most likely tokens,
    /// and `sequence_logprob`, the output's score under the constraint (sampled tokens'
    /// log-probabilities in the masked, renormalized distribution). Forced tokens are not
    /// sampled and have no entry (see --no-fast-forward).
    #[arg(long, value_name = "N", help_heading = "Output")]
    pub logprobs: Option<usize>,
    /// Show llama.cpp's log and details on stderr.
    #[arg(long, short, help_heading = "Output")]
    pub verbose: bool,
}

/// `ID=VALUE` of `--logit-bias`.
fn parse_logit_bias(text: &str) -> Result<(u32, f32), String> {
    let (id, value) = text
        .split_once('=')
        .ok_or_else(|| format!("`{text}` is not ID=VALUE (e.g. 42=-1.5, or 42=-inf to ban)"))?;
    let id = id
        .trim()
        .parse::<u32>()
        .map_err(|e| format!("token id `{id}`: {e}"))?;
    let value = value
        .trim()
        .parse::<f32>()
        .map_err(|e| format!("bias `{value}`: {e}"))?;
    if value.is_nan() || value == f32::INFINITY {
        return Err(format!(
            "bias `{value}`: a finite number or -inf (forcing a token is the constraint's job)"
        ));
    }
    Ok((id, value))
}

/// Runs generation.
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    // The constraint is checked before the model is loaded: a bad schema fails fast.
    let constraint = constraint::from_args(&args)?;
    #[cfg(feature = "llama")]
    {
        run::generate(args, constraint)
    }
    #[cfg(not(feature = "llama"))]
    {
        let _ = constraint;
        anyhow::bail!(
            "this build of constrain has no llama.cpp backend; rebuild with the `llama` feature \
             (on by default) to generate"
        )
    }
}
