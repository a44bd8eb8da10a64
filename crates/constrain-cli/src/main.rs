//! `constrain`: guaranteed-valid generation with a real model, plus the conformance runners and
//! benchmarks of the toolkit.

mod commands;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// jemalloc, for the many small allocations of schema compilation (see this crate's manifest).
#[cfg(not(target_env = "msvc"))]
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

/// jemalloc's options, read when it starts: a token mask of a 262k vocabulary is 32 KiB, over
/// the thread cache's default limit, and then every mask freed and allocated again went
/// through the shared arena (about a fifth of the mask time on the Gemma 3 tokenizer).
#[cfg(not(target_env = "msvc"))]
#[allow(unsafe_code)] // `export_name` is how jemalloc finds its options; nothing else is unsafe.
#[export_name = "_rjem_malloc_conf"]
static ALLOCATOR_OPTIONS: &[u8; 17] = b"tcache_max:65536\0";

/// Grammar-constrained generation: output that follows a JSON Schema, a regex or a GBNF grammar,
/// every time.
#[derive(Parser, Debug)]
#[command(name = "constrain", version, args_conflicts_with_subcommands = true)]
#[command(after_help = commands::generate::EXAMPLES)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
    #[command(flatten)]
    generate: commands::generate::Args,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Check grammars or schemas against test cases (GBNF cases, JSON-Schema-Test-Suite files).
    TestCases(commands::test_cases::Args),
    /// Benchmarks.
    #[command(subcommand)]
    Bench(BenchCommand),
    /// Show what every stage of the sampling funnel does to a distribution.
    Funnel(commands::funnel::Args),
    /// Download the default model into the cache directory.
    FetchModel(commands::fetch_model::Args),
    /// Serve the model over an OpenAI-compatible HTTP API (chat completions, tools, schemas).
    Serve(commands::serve::Args),
}

#[derive(Subcommand, Debug)]
enum BenchCommand {
    /// Token-mask benchmark over a directory of JSON Schemas with test instances (MaskBench).
    Maskbench(commands::maskbench::Args),
    /// Two MaskBench results side by side, schema by schema (ours against a reference).
    MaskbenchCompare(commands::maskbench::compare::Args),
    /// Soundness: random documents drawn through the masks of every schema must validate.
    Soundness(commands::maskbench::soundness::Args),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Some(Command::TestCases(args)) => commands::test_cases::run(args),
        Some(Command::Bench(BenchCommand::Maskbench(args))) => commands::maskbench::run(args),
        Some(Command::Bench(BenchCommand::MaskbenchCompare(args))) => {
            commands::maskbench::compare::run(args)
        }
        Some(Command::Bench(BenchCommand::Soundness(args))) => {
            commands::maskbench::soundness::run(args)
        }
        Some(Command::Funnel(args)) => commands::funnel::run(args),
        Some(Command::FetchModel(args)) => commands::fetch_model::run(args),
        Some(Command::Serve(args)) => commands::serve::run(args),
        None => commands::generate::run(cli.generate),
    };
    match result {
        Ok(code) => code,
        Err(err) => {
            eprintln!("error: {}", message(&err));
            ExitCode::from(2)
        }
    }
}

/// The error and its causes on one line, `a: b: c`, leaving out a cause whose text the line
/// already holds (library errors such as `sampling: {0}` print their source themselves).
fn message(err: &anyhow::Error) -> String {
    let mut line = String::new();
    for cause in err.chain() {
        let text = cause.to_string();
        if line.contains(&text) {
            continue;
        }
        if !line.is_empty() {
            line.push_str(": ");
        }
        line.push_str(&text);
    }
    line
}

#[cfg(test)]
mod tests {
    use super::message;

    #[test]
    fn a_cause_the_message_already_holds_is_said_once() {
        let err =
            anyhow::Error::new(std::io::Error::other("disk full")).context("saving: disk full");
        assert_eq!(message(&err), "saving: disk full");
        let err = anyhow::anyhow!("no such rule").context("reading the grammar g.gbnf");
        assert_eq!(message(&err), "reading the grammar g.gbnf: no such rule");
    }
}
