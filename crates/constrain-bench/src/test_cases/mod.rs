//! `constrain test-cases FILE.json`: checks grammars against files of test cases and prints
//! one line per failed check, then `N passed, M failed`.
//!
//! Formats (recognised from the file's content):
//!
//! * GBNF cases, as in llama.cpp's grammar tests: matching cases (`passing`/`failing`
//!   strings), build failures (`reason`) and parser cases (`should_parse`); see `gbnf`;
//! * JSON Schema cases, one file or a directory of suite files; see [`json_schema`].
//!
//! Every string is checked at byte level (all bytes, then the end). With `--tokenizer`, it is
//! also encoded with the tokenizer's own encoding and fed token by token, checking that each
//! token is in the mask exactly when the matcher accepts it, and the end-of-sequence bit at the
//! end. Without a tokenizer, grammars are compiled for a vocabulary of the 256 single bytes.

mod checker;
mod gbnf;
pub mod json_schema;
mod report;

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{bail, Context};

use constrain::resources::{self as schema_resources, ResourceArg};

pub use crate::schema_args::{EscapesArg, NumbersArg, PropertyOrderArg};
pub use checker::{Checker, Expect, Subject};
pub use report::Report;

/// Check grammars against a JSON file of test cases.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The JSON file of cases (llama.cpp GBNF cases, build failures or parser cases; JSON
    /// Schema cases), or a directory of JSON-Schema-Test-Suite files.
    pub file: PathBuf,
    /// Also check every string token by token, encoded with this tokenizer
    /// (`tokenizer.json`, or gzip-compressed); token ids in grammars are this tokenizer's.
    #[arg(long, value_name = "PATH")]
    pub tokenizer: Option<PathBuf>,
    /// Start rule of the cases that do not name one.
    #[arg(long, value_name = "NAME", default_value = constrain_gbnf::DEFAULT_ROOT)]
    pub root: String,
    /// JSON Schema: the order in which an object's declared properties may appear.
    #[arg(long, value_enum, default_value_t = PropertyOrderArg::Schema)]
    pub property_order: PropertyOrderArg,
    /// JSON Schema: treat `format` as an annotation (the 2020-12 default) instead of
    /// enforcing it.
    #[arg(long)]
    pub format_annotation: bool,
    /// JSON Schema: a document `$ref` may name by URI (repeatable). The suite's `remotes/`
    /// (`../../remotes` from a directory of suite files) is read by itself, under
    /// `http://localhost:1234/`.
    #[arg(long, value_name = "URI=FILE")]
    pub resource: Vec<ResourceArg>,
}

impl Args {
    /// The schema compiler's options these arguments ask for, with the documents a `$ref` may
    /// name: the suite's remotes, then `--resource`s (which take precedence).
    fn schema_options(&self) -> anyhow::Result<constrain_jsonschema::Options> {
        let mut resources = match schema_resources::suite_remotes(&self.file) {
            Some(dir) => {
                schema_resources::load_directory(&dir, schema_resources::SUITE_REMOTES_URI)?
            }
            None => Default::default(),
        };
        resources.extend(schema_resources::load(&self.resource)?);
        Ok(constrain_jsonschema::Options {
            property_order: self.property_order.into(),
            assert_formats: !self.format_annotation,
            // Valid instances in any spelling must be accepted.
            numbers: constrain_jsonschema::Numbers::Any,
            resources,
            ..constrain_jsonschema::Options::default()
        })
    }
}

/// Runs every case of the file; success only if every check passed.
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let input = if args.file.is_dir() {
        Input::SuiteDirectory
    } else {
        read_cases(&args.file)?
    };
    let checker = match &args.tokenizer {
        Some(path) => Checker::with_tokenizer(path)?,
        None => Checker::bytes_only()?,
    };
    let mut report = Report::default();
    let options = args.schema_options()?;
    match input {
        Input::SuiteDirectory => {
            json_schema::run_directory(&args.file, &options, &checker, &mut report)?
        }
        Input::JsonSchema(value) => json_schema::run(&value, &options, &checker, &mut report)?,
        Input::Gbnf(value) => gbnf::run(&value, &args.root, &checker, &mut report)?,
    }
    Ok(report.finish())
}

/// What the command was given, recognised before the (slow) tokenizer is loaded.
enum Input {
    SuiteDirectory,
    JsonSchema(serde_json::Value),
    Gbnf(serde_json::Value),
}

fn read_cases(path: &Path) -> anyhow::Result<Input> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let value: serde_json::Value =
        serde_json::from_str(&text).with_context(|| format!("{} is not JSON", path.display()))?;
    if json_schema::detect(&value) {
        Ok(Input::JsonSchema(value))
    } else if gbnf::detect(&value) {
        Ok(Input::Gbnf(value))
    } else {
        bail!(
            "{}: not a file of test cases (expected a JSON list of GBNF cases, each with a 'grammar', \
             or of JSON Schema cases, each with a 'schema')",
            path.display()
        )
    }
}
