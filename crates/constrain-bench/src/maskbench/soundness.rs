//! `constrain bench soundness`: random documents drawn through the masks of every schema of a
//! MaskBench directory must validate against their schema (see `soundness_check`).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use constrain_engine::TokenIndex;
use constrain_vocab::Tokenizer;
use indicatif::{ProgressBar, ProgressStyle};

use super::dataset;
use super::sample::WalkLimits;
use super::soundness_check::{check_schema, spread_sample, CheckOptions, SchemaCheck};
use crate::schema_args::{EscapesArg, NumbersArg, PropertyOrderArg};

/// Arguments of `constrain bench soundness`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Directory of schema files (`*.json` with a `schema` member).
    #[arg(long, value_name = "DIR")]
    data: PathBuf,
    /// The tokenizer whose vocabulary the documents are drawn from.
    #[arg(long, value_name = "PATH")]
    tokenizer: PathBuf,
    /// Checks N schemas spread evenly over the sorted files [default: all].
    #[arg(long, value_name = "N")]
    schemas: Option<usize>,
    /// Documents drawn per schema.
    #[arg(long, value_name = "N", default_value_t = 20)]
    documents: usize,
    /// Tokens after which a walk steers towards the end of the document.
    #[arg(long, value_name = "TOKENS", default_value_t = WalkLimits::default().soft_budget)]
    soft_budget: usize,
    /// Tokens after which a walk gives up.
    #[arg(long, value_name = "TOKENS", default_value_t = WalkLimits::default().max_tokens)]
    max_tokens: usize,
    /// Draws every document under a token budget of N tokens: each must end complete within
    /// it (walks get at least N + 1 tokens, so the budget is what ends them).
    #[arg(long, value_name = "N")]
    budget: Option<usize>,
    /// Also prints, per schema, the first walk that ran out of tokens.
    #[arg(long)]
    verbose: bool,
    /// The order in which an object's declared properties may appear.
    #[arg(long, value_enum, default_value_t = PropertyOrderArg::Schema)]
    property_order: PropertyOrderArg,
    /// Which spellings of strings the grammars accept.
    #[arg(long, value_enum, default_value_t = EscapesArg::Any)]
    escapes: EscapesArg,
    /// Which spellings of numbers the grammars accept.
    #[arg(long, value_enum, default_value_t = NumbersArg::Any)]
    numbers: NumbersArg,
}

/// Runs the check; exits with 1 when any document breaks its schema.
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let tokenizer = Tokenizer::from_file(&args.tokenizer)
        .with_context(|| format!("loading tokenizer {}", args.tokenizer.display()))?;
    let index = TokenIndex::new(tokenizer.vocabulary().clone());
    let files = dataset::list_files(&args.data)
        .with_context(|| format!("listing {}", args.data.display()))?;
    let files = spread_sample(&files, args.schemas.unwrap_or(files.len()));
    let options = CheckOptions {
        documents: args.documents,
        walk: WalkLimits {
            soft_budget: args.soft_budget,
            max_tokens: args.budget.map_or(args.max_tokens, |b| {
                args.max_tokens.max(b.saturating_add(1))
            }),
        },
        budget: args.budget,
        schema: constrain_jsonschema::Options {
            property_order: args.property_order.into(),
            escapes: args.escapes.into(),
            numbers: args.numbers.into(),
            ..constrain_jsonschema::Options::default()
        },
        ..CheckOptions::default()
    };

    let progress = ProgressBar::new(files.len() as u64);
    if let Ok(style) =
        ProgressStyle::with_template("{elapsed_precise} [{bar:30}] {pos}/{len} {wide_msg}")
    {
        progress.set_style(style.progress_chars("=> "));
    }
    let mut totals = Totals::default();
    let mut failures = Vec::new();
    let mut not_compiled: BTreeMap<String, usize> = BTreeMap::new();
    let mut no_validator = Vec::new();
    let outcome = std::thread::scope(|scope| {
        std::thread::Builder::new()
            .name("soundness".into())
            .stack_size(super::BENCH_STACK_BYTES)
            .spawn_scoped(scope, || {
                for path in &files {
                    let id = dataset::file_id(path);
                    progress.set_message(id.clone());
                    let check = match dataset::load(path) {
                        Ok(file) => super::panics::catch(|| {
                            check_schema(&id, &file.schema, &index, &options)
                        })
                        .unwrap_or_else(|panic| {
                            SchemaCheck::NotCompiled(format!("panic: {panic}"))
                        }),
                        Err(message) => SchemaCheck::NoValidator(format!("unreadable: {message}")),
                    };
                    totals.schemas += 1;
                    match check {
                        SchemaCheck::NotCompiled(reason) => {
                            totals.not_compiled += 1;
                            *not_compiled.entry(reason_kind(&reason)).or_default() += 1;
                        }
                        SchemaCheck::NoValidator(reason) => {
                            totals.no_validator += 1;
                            no_validator.push((id.clone(), reason));
                        }
                        SchemaCheck::Checked(checked) => {
                            totals.checked += 1;
                            totals.validated += checked.validated;
                            totals.unfinished += checked.unfinished;
                            totals.unverifiable += checked.unverifiable;
                            if let Some(text) = checked.unfinished_example.filter(|_| args.verbose)
                            {
                                progress.suspend(|| eprintln!("unfinished {id}: {text}"));
                            }
                            for failure in checked.failures {
                                let line =
                                    format!("FAIL {id} #{}: {}", failure.document, failure.problem);
                                progress.suspend(|| eprintln!("{line}"));
                                failures.push((id.clone(), failure));
                            }
                        }
                    }
                    progress.inc(1);
                }
            })
            .map(|handle| handle.join())
    });
    progress.finish_and_clear();
    match outcome.context("starting the soundness thread")? {
        Ok(()) => {}
        Err(_) => anyhow::bail!("the soundness thread panicked outside a schema"),
    }

    let mut reasons: Vec<_> = not_compiled.into_iter().collect();
    reasons.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    if !reasons.is_empty() {
        println!("not compiled, by reason:");
        for (reason, n) in reasons.iter().take(20) {
            println!("  {n:>6}  {reason}");
        }
    }
    for (id, reason) in &no_validator {
        println!("no reference validator for {id}: {reason}");
    }
    for (id, failure) in &failures {
        println!(
            "FAIL {id} document #{}: {}",
            failure.document, failure.problem
        );
        println!("     {:?}", failure.text);
    }
    println!(
        "{} schemas: {} checked, {} not compiled, {} without a reference validator",
        totals.schemas, totals.checked, totals.not_compiled, totals.no_validator
    );
    println!(
        "documents: {} validated, {} unfinished (token limit), {} unverifiable, {} failed",
        totals.validated,
        totals.unfinished,
        totals.unverifiable,
        failures.len()
    );
    Ok(if failures.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// A compile error without its location, to group schemas by why they do not compile.
fn reason_kind(message: &str) -> String {
    let kind = message.split(" at ").next().unwrap_or(message);
    kind.chars().take(100).collect()
}

#[derive(Default)]
struct Totals {
    schemas: usize,
    checked: usize,
    not_compiled: usize,
    no_validator: usize,
    validated: usize,
    unfinished: usize,
    unverifiable: usize,
}
