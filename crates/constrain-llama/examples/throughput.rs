//! Generation throughput with and without constraints, in one process, same prompts and seeds.
//!
//! For every schema of `schemas/` and every seed, four generations:
//!
//! - `unconstrained`: the sampling funnel alone (the baseline);
//! - `constrain`: the funnel with this toolkit's grammar matcher (mask, forced tokens);
//! - `constrain, no ff`: the same with every token sampled, forced text included (no fast
//!   forward): one model evaluation per token, as in the unconstrained mode, so that the cost
//!   of the constraint itself shows per sampled token;
//! - `llama.cpp`: llama.cpp's sampler chain alone;
//! - `llama.cpp+grammar`: llama.cpp's chain with its GBNF grammar sampler, on the grammar that
//!   llama.cpp's own `json_schema_to_grammar` makes of the same schema.
//!
//! Reported per mode: sampled tokens per second of decoding, output bytes per second (forced
//! tokens included), forced tokens, mask time (grammar time for llama.cpp), and how many outputs
//! are complete and valid against the schema.
//!
//! ```text
//! cargo run --release -p constrain-llama --example throughput -- \
//!     [--schemas DIR] [--seeds N] [--max-tokens N] [--temperature T] [--threads N] [--model PATH]
//!     [--escapes canonical|any]
//! ```

use std::path::{Path, PathBuf};
use std::time::Instant;

use constrain_engine::{Limits, Matcher};
use constrain_llama::model_store::{cached_model_path, DEFAULT_MODEL};
use constrain_llama::{
    llama_json_schema_to_gbnf, Generation, LoadOptions, Model, Request, Session, SessionOptions,
};
use constrain_sampling::SamplerConfig;

struct Settings {
    schemas: PathBuf,
    seeds: u64,
    max_tokens: usize,
    temperature: f32,
    threads: Option<u32>,
    model: Option<PathBuf>,
    /// The string spellings the schemas' grammars allow (`constrain --escapes`).
    escapes: constrain_jsonschema::Escapes,
}

fn parse_args() -> Result<Settings, String> {
    let mut settings = Settings {
        schemas: Path::new(env!("CARGO_MANIFEST_DIR")).join("../../schemas"),
        seeds: 3,
        max_tokens: 96,
        temperature: 0.8,
        threads: None,
        model: None,
        escapes: constrain_jsonschema::Escapes::Canonical,
    };
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let mut value = || args.next().ok_or(format!("{flag} needs a value"));
        let bad = |e: &dyn std::fmt::Display| format!("{flag}: {e}");
        match flag.as_str() {
            "--schemas" => settings.schemas = PathBuf::from(value()?),
            "--seeds" => settings.seeds = value()?.parse().map_err(|e| bad(&e))?,
            "--max-tokens" => settings.max_tokens = value()?.parse().map_err(|e| bad(&e))?,
            "--temperature" => settings.temperature = value()?.parse().map_err(|e| bad(&e))?,
            "--threads" => settings.threads = Some(value()?.parse().map_err(|e| bad(&e))?),
            "--model" => settings.model = Some(PathBuf::from(value()?)),
            "--escapes" => {
                settings.escapes = match value()?.as_str() {
                    "canonical" => constrain_jsonschema::Escapes::Canonical,
                    "any" => constrain_jsonschema::Escapes::Any,
                    other => return Err(bad(&format!("{other:?} is not canonical or any"))),
                }
            }
            _ => return Err(format!("unknown argument {flag}")),
        }
    }
    Ok(settings)
}

/// A few-shot prompt from the schema's `title` and `examples` (as the generation tests use):
/// one line per example, then the title again for the model to continue.
fn schema_prompt(schema: &serde_json::Value) -> Result<String, String> {
    let title = schema["title"].as_str().ok_or("the schema has no title")?;
    let examples = schema["examples"]
        .as_array()
        .ok_or("the schema has no examples")?;
    let mut prompt = String::new();
    for example in examples {
        prompt.push_str(&format!(
            "{title}: {}\n",
            constrain_jsonschema::Separators::python().write(example)
        ));
    }
    prompt.push_str(&format!("{title}: "));
    Ok(prompt)
}

/// The layout `constrain --schema` generates: one line, `json.dumps` separators, strings
/// spelled as `escapes` allows (canonically by default).
fn schema_options(escapes: constrain_jsonschema::Escapes) -> constrain_jsonschema::Options {
    constrain_jsonschema::Options {
        whitespace: constrain_jsonschema::Whitespace::Compact,
        separators: Some(constrain_jsonschema::Separators::python()),
        escapes,
        ..constrain_jsonschema::Options::default()
    }
}

#[derive(Default)]
struct Totals {
    runs: usize,
    valid: usize,
    sampled: usize,
    forced: usize,
    bytes: usize,
    decode_s: f64,
    eval_s: f64,
    mask_p50_sum: f64,
    mask_p50_runs: usize,
    mask_p99_max: f64,
}

impl Totals {
    fn add(&mut self, g: &Generation, valid: bool) {
        self.runs += 1;
        self.valid += usize::from(valid);
        self.sampled += g.stats.sampled_tokens;
        self.forced += g.stats.forced_tokens;
        self.bytes += g.stats.output_bytes;
        self.decode_s += g.stats.decode_s;
        self.eval_s += g.stats.eval_s;
        if let (Some(p50), Some(p99)) = (g.stats.mask_us_p50, g.stats.mask_us_p99) {
            self.mask_p50_sum += p50;
            self.mask_p50_runs += 1;
            self.mask_p99_max = self.mask_p99_max.max(p99);
        }
    }

    fn row(&self, name: &str) -> String {
        let per_s = |n: usize| {
            if self.decode_s > 0.0 {
                n as f64 / self.decode_s
            } else {
                0.0
            }
        };
        let mask = if self.mask_p50_runs > 0 {
            format!(
                "{:>9.1} {:>9.1}",
                self.mask_p50_sum / self.mask_p50_runs as f64,
                self.mask_p99_max
            )
        } else {
            format!("{:>9} {:>9}", "-", "-")
        };
        // Time in the model (forced tokens batched with the sampled ones) and outside it
        // (masks, sampling, bookkeeping), per sampled token.
        let per_sampled_ms = |seconds: f64| {
            if self.sampled > 0 {
                seconds * 1e3 / self.sampled as f64
            } else {
                0.0
            }
        };
        let model_ms = per_sampled_ms(self.eval_s);
        let off_model_ms = per_sampled_ms(self.decode_s - self.eval_s);
        format!(
            "{name:<18} {:>5}/{:<4} {:>8} {:>7} {:>9.1} {:>10.1} {:>10.1} {:>9.3} {:>9.3} {mask}",
            self.valid,
            self.runs,
            self.sampled,
            self.forced,
            per_s(self.sampled),
            per_s(self.sampled + self.forced),
            per_s(self.bytes),
            model_ms,
            off_model_ms,
        )
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let settings = parse_args()?;
    let model_path = match &settings.model {
        Some(path) => path.clone(),
        None => cached_model_path(&DEFAULT_MODEL)?,
    };
    let model = Model::load(&model_path, &LoadOptions::default())?;
    let options = SessionOptions {
        ctx_size: 1024,
        threads: settings.threads,
        ..Default::default()
    };
    let mut session = Session::new(&model, &options)?;
    let sampling = SamplerConfig {
        temperature: settings.temperature,
        top_k: 40,
        top_p: 0.95,
        min_p: 0.05,
        ..SamplerConfig::default()
    };

    let mut schema_files: Vec<PathBuf> = std::fs::read_dir(&settings.schemas)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    schema_files.sort();

    let modes = [
        "unconstrained",
        "constrain",
        "constrain, no ff",
        "llama.cpp",
        "llama.cpp+grammar",
    ];
    let mut totals: Vec<Totals> = modes.iter().map(|_| Totals::default()).collect();
    let mut compile_ms = Vec::new();
    let mut sink = |_: &[u8]| Ok(());

    for path in &schema_files {
        let name = path
            .file_stem()
            .and_then(|s| s.to_str())
            .unwrap_or("schema")
            .to_string();
        let text = std::fs::read_to_string(path)?;
        let schema: serde_json::Value = serde_json::from_str(&text)?;
        let validator = jsonschema::options()
            .should_validate_formats(true)
            .build(&schema)
            .map_err(|e| format!("{name}: {e}"))?;
        let is_valid = |g: &Generation| {
            g.stats.stop_reason.is_complete()
                && serde_json::from_slice::<serde_json::Value>(&g.output)
                    .is_ok_and(|v| validator.is_valid(&v))
        };

        let t = Instant::now();
        let compiled = constrain_jsonschema::compile(&schema, &schema_options(settings.escapes))
            .map_err(|e| format!("{name}: {e}"))?;
        let grammar = model.compile(&compiled.grammar, Limits::default())?;
        compile_ms.push((name.clone(), t.elapsed().as_secs_f64() * 1e3));
        let gbnf = llama_json_schema_to_gbnf(&text)?;

        let prompt = model.prompt_tokens(&schema_prompt(&schema)?, false)?;
        for seed in 1..=settings.seeds {
            let request = |constraint, fast_forward| Request {
                prompt: &prompt,
                constraint,
                sampling: sampling.clone(),
                seed,
                max_tokens: settings.max_tokens,
                truncate: false,
                fast_forward,
                logprobs: None,
                lookup: None,
                trace: None,
            };
            let free = session.generate(request(None, true), &mut sink)?;
            totals[0].add(&free, is_valid(&free));
            let matcher = || Some(Matcher::new(grammar.clone()));
            let ours = session.generate(request(matcher(), true), &mut sink)?;
            totals[1].add(&ours, is_valid(&ours));
            let ours_sampled = session.generate(request(matcher(), false), &mut sink)?;
            totals[2].add(&ours_sampled, is_valid(&ours_sampled));
            let max = settings.max_tokens;
            let theirs_free = session
                .generate_with_llama_sampler(&prompt, None, &sampling, seed, max, &mut sink)?;
            totals[3].add(&theirs_free, is_valid(&theirs_free));
            let theirs = session.generate_with_llama_sampler(
                &prompt,
                Some(&gbnf),
                &sampling,
                seed,
                max,
                &mut sink,
            )?;
            totals[4].add(&theirs, is_valid(&theirs));
            eprintln!(
                "{name} seed {seed}: ours {:?} | llama.cpp+grammar {:?}",
                String::from_utf8_lossy(&ours.output),
                String::from_utf8_lossy(&theirs.output)
            );
        }
    }

    println!(
        "model {} | {} schemas x {} seeds | max {} tokens | temperature {} | threads {}",
        model_path.display(),
        schema_files.len(),
        settings.seeds,
        settings.max_tokens,
        settings.temperature,
        settings
            .threads
            .map_or("all".to_string(), |t| t.to_string()),
    );
    println!(
        "{:<18} {:>10} {:>8} {:>7} {:>9} {:>10} {:>10} {:>9} {:>9} {:>9} {:>9}",
        "mode",
        "valid",
        "sampled",
        "forced",
        "sampled/s",
        "tokens/s",
        "bytes/s",
        "model",
        "off-model",
        "mask p50",
        "mask p99"
    );
    for (mode, total) in modes.iter().zip(&totals) {
        println!("{}", total.row(mode));
    }
    println!(
        "(model, off-model: milliseconds per sampled token in the model (forced tokens \
         included) and outside it (masks, sampling); mask times in microseconds: mean of \
         per-run p50, max of per-run p99)"
    );
    let compile: Vec<String> = compile_ms
        .iter()
        .map(|(n, ms)| format!("{n} {ms:.0} ms"))
        .collect();
    println!("schema compile + bind: {}", compile.join(", "));
    Ok(())
}
