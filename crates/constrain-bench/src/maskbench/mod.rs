//! `constrain bench maskbench`: the MaskBench token-mask benchmark.
//!
//! Protocol (the one behind the published reference numbers, so that figures compare):
//! 1. Schema files in name order, one thread.
//! 2. Per file, TTFM = time to compile the schema for the tokenizer plus computing the first
//!    mask (the token index of the vocabulary is built once per run, untimed). A schema that
//!    does not compile is a `compile_error` and its instances are skipped.
//! 3. Per instance, `data` is written like Python's `json.dumps` (see [`json_text`]) and
//!    tokenized without special tokens.
//! 4. From a clone of the freshly compiled matcher (untimed), each token costs one TBM sample:
//!    compute the mask, check the token, advance. A token outside its mask rejects the
//!    instance; otherwise end-of-sequence must be allowed after the last token.
//! 5. A rejected valid instance is a `validation_error`, an accepted invalid one an
//!    `invalidation_error`; a schema passes when every instance is classified right.
//! 6. The summary has counts and TBM/TTFM distributions (nearest-rank percentiles).

pub mod compare;
mod dataset;
pub mod json_text;
pub(crate) mod panics;
mod report;
mod runner;
pub mod sample;
pub mod soundness;
mod soundness_check;

use std::ffi::OsString;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::Context;
use constrain_vocab::Tokenizer;
use indicatif::{ProgressBar, ProgressStyle};

use crate::schema_args::{EscapesArg, NumbersArg, PropertyOrderArg};
use report::{Distribution, Summary};
use runner::Bench;

/// A schema whose time to first mask exceeds this is listed at the end of the run.
const SLOW_COMPILE: Duration = Duration::from_secs(1);

/// Stack for the benchmark thread: deeply nested schemas must end in an error, not an abort.
pub(crate) const BENCH_STACK_BYTES: usize = 256 << 20;

/// Arguments of `constrain bench maskbench`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Directory of schema files (`*.json`: a `schema` and its `tests`).
    #[arg(long, value_name = "DIR")]
    data: PathBuf,
    /// The tokenizer (`tokenizer.json` or `tokenizer.json.gz`).
    #[arg(long, value_name = "PATH")]
    tokenizer: PathBuf,
    /// Writes `PREFIX.json` (summary) and `PREFIX.jsonl` (one line per schema).
    #[arg(long, value_name = "PREFIX")]
    out: PathBuf,
    /// Runs only the first N files (in name order).
    #[arg(long, value_name = "N")]
    limit: Option<usize>,
    /// Runs every K-th file only (the first, the (K+1)-th, ...; before `--limit`): a fixed
    /// sample spread over the whole directory.
    #[arg(long, value_name = "K", default_value_t = 1)]
    every: usize,
    /// Measures under a token budget: each instance's matcher gets its token count plus N as
    /// its most tokens (`Matcher::set_token_budget`), as generation with `--max-tokens` does.
    /// A valid instance the budget refuses is a `validation_error`.
    #[arg(long, value_name = "N")]
    budget_slack: Option<usize>,
    /// Under `--budget-slack`, decides every budgeted mask by the exact walk of the trie, as
    /// before the budget had a bound (the masks are the same; for measuring the bound).
    #[arg(long, hide = true, requires = "budget_slack")]
    budget_walk_only: bool,
    /// The tokenizer's name in the summary [default: the name of its directory].
    #[arg(long, value_name = "NAME")]
    tokenizer_name: Option<String>,
    /// Compile-time budget per schema, in milliseconds: a schema still compiling after it is a
    /// `compile_error` ("compile time (ms) exceeds the limit"), as a server would refuse it.
    /// The default leaves room for stopping and freeing what was built, so that such a schema
    /// has its error within a second.
    #[arg(long, value_name = "MS", default_value_t = 950)]
    compile_budget_ms: u64,
    /// The order in which an object's declared properties may appear. The valid instances
    /// list keys in any order and rejecting one is a `validation_error`, hence `any`; `schema`
    /// is the compiler's default (and the reference engine's only mode).
    #[arg(long, value_enum, default_value_t = PropertyOrderArg::Any)]
    property_order: PropertyOrderArg,
    /// Which spellings of strings the grammars accept. The instances are written as Python's
    /// `json.dumps` writes them (step 3 of the protocol): exactly the canonical spelling,
    /// which is also what `constrain --schema` generates, hence `canonical`; `any` accepts
    /// every spelling JSON allows (`\u0061` for `a`, ...), as reading arbitrary JSON text
    /// needs.
    #[arg(long, value_enum, default_value_t = EscapesArg::Canonical)]
    escapes: EscapesArg,
    /// Which spellings of numbers the grammars accept. The instances keep the number text of
    /// their files (`1.0` for an integer, `1e-05`...), and every valid one must be accepted,
    /// hence `any`; `canonical` is the compiler's default for generation.
    #[arg(long, value_enum, default_value_t = NumbersArg::Any)]
    numbers: NumbersArg,
}

/// Runs the benchmark. Exits with 1 when a schema crashed or accepted an invalid instance.
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let tokenizer = Tokenizer::from_file(&args.tokenizer)
        .with_context(|| format!("loading tokenizer {}", args.tokenizer.display()))?;
    let mut files = dataset::list_files(&args.data)
        .with_context(|| format!("listing {}", args.data.display()))?;
    anyhow::ensure!(args.every > 0, "--every must be at least 1");
    if args.every > 1 {
        files = files.into_iter().step_by(args.every).collect();
    }
    if let Some(limit) = args.limit {
        files.truncate(limit);
    }
    anyhow::ensure!(
        !files.is_empty(),
        "no *.json files in {}",
        args.data.display()
    );

    let summary = Summary {
        engine: concat!("constrain ", env!("CARGO_PKG_VERSION")).to_string(),
        tokenizer: args
            .tokenizer_name
            .clone()
            .unwrap_or_else(|| tokenizer_name(&args.tokenizer)),
        data: dir_name(&args.data),
        budget_slack: args.budget_slack,
        ..Summary::default()
    };
    let jsonl_path = with_suffix(&args.out, ".jsonl");
    let json_path = with_suffix(&args.out, ".json");
    let jsonl = BufWriter::new(
        File::create(&jsonl_path).with_context(|| format!("creating {}", jsonl_path.display()))?,
    );
    let mut results = Results {
        summary,
        jsonl,
        ttfm_ns: Vec::new(),
        tbm_ns: Vec::new(),
        slow: Vec::new(),
    };

    let progress = progress_bar(files.len());
    // One thread measures; it is a separate thread only to get a large stack.
    let measured = std::thread::scope(|scope| {
        std::thread::Builder::new()
            .name("maskbench".into())
            .stack_size(BENCH_STACK_BYTES)
            .spawn_scoped(scope, || -> anyhow::Result<Duration> {
                let mut bench = Bench::new(
                    tokenizer,
                    Duration::from_millis(args.compile_budget_ms),
                    constrain_jsonschema::Options {
                        property_order: args.property_order.into(),
                        escapes: args.escapes.into(),
                        numbers: args.numbers.into(),
                        ..constrain_jsonschema::Options::default()
                    },
                )?;
                bench.set_budget_slack(args.budget_slack, args.budget_walk_only);
                let started = Instant::now();
                for path in &files {
                    let id = dataset::file_id(path);
                    progress.set_message(id.clone());
                    let run = match dataset::load(path) {
                        Ok(file) => bench.run(&file),
                        Err(message) => runner::SchemaRun::load_error(&id, message),
                    };
                    results.add(run, &progress)?;
                }
                Ok(started.elapsed())
            })
            .map(|handle| handle.join())
    });
    progress.finish_and_clear();
    let wall = match measured.context("starting the benchmark thread")? {
        Ok(result) => result?,
        Err(_) => anyhow::bail!("the benchmark thread panicked outside a schema"),
    };
    results.jsonl.flush()?;

    let mut summary = results.summary;
    summary.wall_s = wall.as_secs_f64();
    summary.ttfm_us = Distribution::from_nanos(&mut results.ttfm_ns);
    summary.tbm_us = Distribution::from_nanos(&mut results.tbm_ns);
    let text = serde_json::to_string_pretty(&summary)?;
    std::fs::write(&json_path, text + "\n")
        .with_context(|| format!("writing {}", json_path.display()))?;

    print_summary(&summary);
    for (id, ns) in &results.slow {
        println!(
            "slow compile: {id} ({:.2} s to first mask)",
            *ns as f64 / 1e9
        );
    }
    println!("wrote {} and {}", json_path.display(), jsonl_path.display());
    let unsound = summary.invalidation_error + summary.crash;
    Ok(if unsound == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// What the run collects: counts, one record line per schema, and every timing sample.
struct Results {
    summary: Summary,
    jsonl: BufWriter<File>,
    ttfm_ns: Vec<u64>,
    tbm_ns: Vec<u64>,
    /// Schemas whose first mask took longer than [`SLOW_COMPILE`].
    slow: Vec<(String, u64)>,
}

impl Results {
    fn add(&mut self, run: runner::SchemaRun, progress: &ProgressBar) -> anyhow::Result<()> {
        if let Some(ns) = run.ttfm_ns {
            self.ttfm_ns.push(ns);
            if Duration::from_nanos(ns) > SLOW_COMPILE {
                let (id, secs) = (&run.record.id, ns as f64 / 1e9);
                progress.suspend(|| eprintln!("slow: {id}: first mask after {secs:.2} s"));
                self.slow.push((id.clone(), ns));
            }
        }
        self.tbm_ns.extend_from_slice(&run.tbm_ns);
        self.summary.count(&run.record);
        serde_json::to_writer(&mut self.jsonl, &run.record)?;
        self.jsonl.write_all(b"\n")?;
        progress.set_prefix(format!("{} pass", self.summary.passing));
        progress.inc(1);
        Ok(())
    }
}

fn progress_bar(len: usize) -> ProgressBar {
    let bar = ProgressBar::new(len as u64);
    if let Ok(style) = ProgressStyle::with_template(
        "{elapsed_precise} [{bar:30}] {pos}/{len} ({prefix}, eta {eta}) {wide_msg}",
    ) {
        bar.set_style(style.progress_chars("=> "));
    }
    bar
}

fn print_summary(summary: &Summary) {
    println!(
        "{} on {} ({}){}:",
        summary.engine,
        summary.data,
        summary.tokenizer,
        summary
            .budget_slack
            .map_or(String::new(), |n| format!(", token budget: tokens + {n}"))
    );
    for (label, value) in summary.count_rows() {
        if value != 0.0 || matches!(label, "schemas" | "passing" | "tokens") {
            println!("  {label:<24}{value:>14}");
        }
    }
    println!("  {:<10}{:>14}{:>14}", "us", "TBM", "TTFM");
    for ((label, tbm), (_, ttfm)) in summary
        .tbm_us
        .rows()
        .into_iter()
        .zip(summary.ttfm_us.rows())
    {
        println!("  {label:<10}{tbm:>14.3}{ttfm:>14.3}");
    }
}

/// `prefix` with `suffix` appended to its file name (`out/run.1` -> `out/run.1.jsonl`).
fn with_suffix(prefix: &Path, suffix: &str) -> PathBuf {
    let mut name = OsString::from(prefix.as_os_str());
    name.push(suffix);
    PathBuf::from(name)
}

/// `tokenizers/llama3_1/tokenizer.json` -> `llama3_1`.
fn tokenizer_name(path: &Path) -> String {
    let is_generic = path
        .file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| n.starts_with("tokenizer.json"));
    let named = if is_generic {
        path.parent().unwrap_or(path)
    } else {
        path
    };
    dir_name(named)
}

fn dir_name(path: &Path) -> String {
    let path = path.canonicalize().unwrap_or_else(|_| path.to_path_buf());
    path.file_name().map_or_else(
        || path.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    )
}

#[cfg(test)]
mod tests {
    use super::report::Status;
    use super::*;

    #[test]
    fn output_names_append_to_the_prefix() {
        assert_eq!(
            with_suffix(Path::new("out/run.1"), ".jsonl"),
            PathBuf::from("out/run.1.jsonl")
        );
    }

    #[test]
    fn tokenizer_names_come_from_their_directory() {
        assert_eq!(
            tokenizer_name(Path::new("/x/llama3_1/tokenizer.json")),
            "llama3_1"
        );
        assert_eq!(
            tokenizer_name(Path::new("/x/qwen3/tokenizer.json.gz")),
            "qwen3"
        );
        assert_eq!(tokenizer_name(Path::new("/x/mine.json")), "mine.json");
    }

    #[test]
    fn statuses_are_the_reference_words() {
        let words = [
            Status::Pass,
            Status::CompileError,
            Status::ValidationError,
            Status::InvalidationError,
        ];
        let words: Vec<&str> = words.iter().map(|s| s.as_str()).collect();
        assert_eq!(
            words,
            [
                "pass",
                "compile_error",
                "validation_error",
                "invalidation_error"
            ]
        );
    }
}
