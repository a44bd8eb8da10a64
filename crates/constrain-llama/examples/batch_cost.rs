//! What a forward pass costs by the number of sequences in it: the ceiling of continuous
//! batching on this machine.
//!
//! Each of `R` sequences holds the same short prompt; every step appends one token to each and
//! asks for its logits, as the server's steps do while all of them generate. Reported per `R`:
//! the median step time, the time per row, and the throughput against one row per step. A
//! server that batches `R` clients can at best multiply its aggregate tokens per second by the
//! last column (the sampling, masks and HTTP come on top).
//!
//! ```text
//! cargo run --release -p constrain-llama --example batch_cost -- \
//!     [--rows 1,2,4,8] [--steps 24] [--threads N] [--model PATH]
//! ```

use std::error::Error;
use std::path::PathBuf;
use std::time::Instant;

use constrain_llama::model_store::{cached_model_path, DEFAULT_MODEL};
use constrain_llama::{LoadOptions, Model, SequenceTokens, Session, SessionOptions};

struct Settings {
    rows: Vec<usize>,
    steps: usize,
    threads: Option<u32>,
    model: Option<PathBuf>,
}

type Result<T> = std::result::Result<T, Box<dyn Error>>;

fn settings() -> Result<Settings> {
    let mut s = Settings {
        rows: vec![1, 2, 4, 8],
        steps: 24,
        threads: None,
        model: None,
    };
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let mut value = || args.next().ok_or_else(|| format!("{flag} needs a value"));
        match flag.as_str() {
            "--rows" => {
                s.rows = value()?
                    .split(',')
                    .map(|r| r.trim().parse::<usize>())
                    .collect::<std::result::Result<_, _>>()?;
            }
            "--steps" => s.steps = value()?.parse()?,
            "--threads" => s.threads = Some(value()?.parse()?),
            "--model" => s.model = Some(PathBuf::from(value()?)),
            other => return Err(format!("unknown argument {other}").into()),
        }
    }
    if s.rows.contains(&0) || s.steps == 0 {
        return Err("--rows and --steps must be positive".into());
    }
    Ok(s)
}

fn main() -> Result<()> {
    let s = settings()?;
    let path = match s.model {
        Some(p) => p,
        None => cached_model_path(&DEFAULT_MODEL)?,
    };
    let model = Model::load(&path, &LoadOptions::default())?;
    let prompt = model.tokenize("The quick brown fox jumps over the lazy dog. Then", true)?;
    let most = s.rows.iter().copied().max().unwrap_or(1);
    let room = prompt.len() + s.steps + 2;
    println!("| sequences per step | step ms (median) | ms per row | throughput vs 1 row |");
    println!("| ---: | ---: | ---: | ---: |");
    let mut one_row_ms = None;
    for &rows in &s.rows {
        let mut session = Session::new(
            &model,
            &SessionOptions {
                ctx_size: u32::try_from(room * most)?,
                threads: s.threads,
                sequences: u32::try_from(most)?,
                ..SessionOptions::default()
            },
        )?;
        let prompts: Vec<SequenceTokens<'_>> = (0..rows)
            .map(|seq| SequenceTokens {
                seq,
                tokens: &prompt,
                logits_from: prompt.len() - 1,
            })
            .collect();
        session.decode(&prompts)?;
        // Each step feeds every sequence the token its logits rank first (the work does not
        // depend on which token it is).
        let mut times = Vec::with_capacity(s.steps);
        for _ in 0..s.steps {
            let next: Vec<[u32; 1]> = (0..rows)
                .map(|seq| [argmax(session.last_logits_of(seq))])
                .collect();
            let work: Vec<SequenceTokens<'_>> = next
                .iter()
                .enumerate()
                .map(|(seq, token)| SequenceTokens {
                    seq,
                    tokens: token,
                    logits_from: 0,
                })
                .collect();
            let t = Instant::now();
            session.decode(&work)?;
            times.push(t.elapsed().as_secs_f64() * 1000.0);
        }
        times.sort_by(f64::total_cmp);
        let median = times[times.len() / 2];
        let base = *one_row_ms.get_or_insert(median / rows as f64);
        println!(
            "| {rows} | {median:.1} | {:.1} | {:.2}x |",
            median / rows as f64,
            base * rows as f64 / median
        );
    }
    Ok(())
}

fn argmax(logits: &[f32]) -> u32 {
    let best = logits
        .iter()
        .enumerate()
        .max_by(|a, b| a.1.total_cmp(b.1))
        .map_or(0, |(i, _)| i);
    u32::try_from(best).unwrap_or(0)
}
