//! `constrain serve`: the OpenAI-compatible HTTP server (crate `constrain-server`).

use std::path::PathBuf;
use std::process::ExitCode;

use super::schema_resources::ResourceArg;
use super::test_cases::{EscapesArg, NumbersArg, PropertyOrderArg};

/// Arguments of `constrain serve`.
#[derive(clap::Args, Debug)]
#[command(after_help = "\
Example:
  constrain serve --port 8080 --api-key secret
  curl -s localhost:8080/v1/chat/completions -H 'Authorization: Bearer secret' \\
    -H 'Content-Type: application/json' \\
    -d '{\"messages\": [{\"role\": \"user\", \"content\": \"Three colors as JSON\"}],
         \"response_format\": {\"type\": \"json_object\"}, \"max_tokens\": 40}'

Routes: POST /v1/chat/completions, POST /v1/completions, GET /v1/models, GET /health,
GET /metrics, GET /openapi.json. See docs/server.md.")]
pub struct Args {
    /// GGUF model file [default: the cached model from `constrain fetch-model`].
    #[arg(long, value_name = "PATH")]
    pub model: Option<PathBuf>,
    /// The model's id in the API [default: the file name without .gguf].
    #[arg(long, value_name = "ID")]
    pub model_id: Option<String>,
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1")]
    pub host: String,
    /// Port to listen on (0: any free port; the address is printed at start).
    #[arg(long, default_value_t = 8080)]
    pub port: u16,
    /// Sequences generated at once: slots of one context, batched into one decode per step.
    #[arg(long, value_name = "N", default_value_t = 4)]
    pub parallel: usize,
    /// Requests that may wait for a free slot; beyond it requests get 429 at once.
    #[arg(long, value_name = "N", default_value_t = 64)]
    pub max_queue: usize,
    /// Context size of each slot in tokens (prompt plus output).
    #[arg(long, value_name = "N", default_value_t = 4096)]
    pub ctx_size: u32,
    /// Threads of the model's evaluation [default: every core].
    #[arg(long, value_name = "N")]
    pub threads: Option<u32>,
    /// Most prompt tokens read in one step, all prompts together (running sequences keep
    /// generating while a long prompt is read).
    #[arg(long, value_name = "N", default_value_t = 256)]
    pub prompt_chunk: usize,
    /// A request not done this many seconds after it arrived fails with 504.
    #[arg(long, value_name = "S", default_value_t = 600)]
    pub request_timeout_s: u64,
    /// After SIGTERM or Ctrl-C, how long in-flight requests may take before the server exits.
    #[arg(long, value_name = "S", default_value_t = 10)]
    pub shutdown_timeout_s: u64,
    /// Require `Authorization: Bearer KEY` on every route but /health.
    #[arg(long, value_name = "KEY")]
    pub api_key: Option<String>,
    /// Chat template by llama.cpp's name (gemma, chatml, llama3, llama2, mistral-v7, phi3,
    /// zephyr) [default: the model's own, by family; Gemma for the default model].
    #[arg(long, value_name = "NAME")]
    pub chat_template: Option<String>,
    /// Render prompts with this Jinja chat template (a template file, or a model's
    /// `tokenizer_config.json`), as the model's makers do; the tool-call format and whether the
    /// model thinks are read from it too.
    #[arg(long, value_name = "FILE", conflicts_with = "chat_template")]
    pub chat_template_file: Option<PathBuf>,
    /// Render prompts with the Jinja chat template in the model's GGUF file.
    #[arg(long, conflicts_with = "chat_template")]
    pub jinja: bool,
    /// How the model writes tool calls: generic, hermes (Qwen), llama3, mistral, deepseek or
    /// harmony (gpt-oss) [default: the family its own chat template writes, else generic].
    #[arg(long, value_name = "NAME")]
    pub tool_format: Option<String>,
    /// Whether the model thinks (`<think>...</think>`) before its answer, which a request's
    /// constraint then applies to: on, off or auto (when its chat template has `</think>`).
    #[arg(long, value_name = "WHEN", default_value = "auto",
          value_parser = ["on", "off", "auto"])]
    pub reasoning: String,
    /// Most tokens of thinking before the answer is forced, for requests that give no
    /// `thinking_budget` [default: only max_tokens bounds it, with room kept for the answer].
    #[arg(long, value_name = "N")]
    pub reasoning_budget: Option<usize>,
    /// `max_tokens` of a request that gives none.
    #[arg(long, value_name = "N", default_value_t = 1024)]
    pub default_max_tokens: usize,
    /// Most choices (`n`) in one request.
    #[arg(long, value_name = "N", default_value_t = 8)]
    pub max_n: usize,
    /// Speculative decoding by prompt lookup for requests that give no `lookup`: drafts of up
    /// to K tokens (0: off; at most 16), verified so that outputs are distributed as without.
    #[arg(long, value_name = "K", default_value_t = 0,
          value_parser = clap::value_parser!(u8).range(0..=16))]
    pub lookup: u8,
    /// Largest request body in bytes (larger ones get 413).
    #[arg(long, value_name = "BYTES", default_value_t = 4 << 20)]
    pub max_body_bytes: usize,
    /// Memory for stored responses (`previous_response_id` on /v1/responses), in bytes; the
    /// oldest are dropped first (0: none stored, and `store: true` gets 400).
    #[arg(long, value_name = "BYTES", default_value_t = 64 << 20)]
    pub responses_store_bytes: usize,
    /// Compile-time budget of one constraint (schema, grammar, tools), in milliseconds; past
    /// it the request gets 400.
    #[arg(long, value_name = "MS", default_value_t = 10_000)]
    pub compile_timeout_ms: u64,
    /// Compiled constraints kept in the cache (by their text).
    #[arg(long, value_name = "N", default_value_t = 256)]
    pub grammar_cache: usize,
    /// The order of an object's declared properties in generated JSON (`schema`: as the schema
    /// lists them; `any`: any order, each at most once).
    #[arg(long, value_enum, default_value_t = PropertyOrderArg::Schema)]
    pub property_order: PropertyOrderArg,
    /// Which spellings of strings generated JSON may use.
    #[arg(long, value_enum, default_value_t = EscapesArg::Canonical)]
    pub escapes: EscapesArg,
    /// Which spellings of numbers generated JSON may use (`canonical`: those typed readers
    /// accept, integers as integer literals within 64 bits; `any`: every spelling allowed).
    #[arg(long, value_enum, default_value_t = NumbersArg::Canonical)]
    pub numbers: NumbersArg,
    /// A schema document that `$ref`s may name by URI (repeatable; nothing is ever fetched).
    #[arg(long, value_name = "URI=FILE")]
    pub resource: Vec<ResourceArg>,
    #[arg(
        long = "limit",
        value_name = "NAME=VALUE",
        value_parser = super::limits::parse,
        help = super::limits::HELP
    )]
    pub limits: Vec<String>,
    #[command(flatten)]
    pub gpu: super::gpu::GpuArgs,
    /// Show llama.cpp's log on stderr.
    #[arg(long, short)]
    pub verbose: bool,
}

/// Runs the server until Ctrl-C or SIGTERM.
#[cfg(feature = "llama")]
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    use constrain_llama::model_store::{self, DEFAULT_MODEL};
    let model = match args.model {
        Some(path) => path,
        None => {
            let path = model_store::cached_model_path(&DEFAULT_MODEL)?;
            anyhow::ensure!(
                path.is_file(),
                "no model: the default model is not in the cache ({}); run `constrain \
                 fetch-model`, or pass --model PATH",
                path.display()
            );
            path
        }
    };
    anyhow::ensure!(
        model.is_file(),
        "the model file {} does not exist",
        model.display()
    );
    let chat_template = args
        .chat_template
        .as_deref()
        .map(str::parse::<constrain_llama::ChatTemplate>)
        .transpose()
        .map_err(|e| anyhow::anyhow!("--chat-template: {e}"))?;
    let tool_format = args
        .tool_format
        .as_deref()
        .map(str::parse::<constrain::ToolCallFormat>)
        .transpose()
        .map_err(|e| anyhow::anyhow!("--tool-format: {e}"))?;
    let mut options = constrain_server::ServerOptions::new(model);
    options.tool_format = tool_format;
    options.chat_template_file = args.chat_template_file;
    options.jinja = args.jinja;
    options.reasoning = match args.reasoning.as_str() {
        "on" => Some(true),
        "off" => Some(false),
        _ => None,
    };
    options.reasoning_budget = args.reasoning_budget;
    options.model_id = args.model_id;
    options.host = args.host;
    options.port = args.port;
    options.parallel = args.parallel.max(1);
    options.max_queue = args.max_queue;
    options.ctx_size = args.ctx_size;
    options.threads = args.threads;
    options.prompt_chunk = args.prompt_chunk.max(1);
    options.request_timeout = std::time::Duration::from_secs(args.request_timeout_s);
    options.shutdown_timeout = std::time::Duration::from_secs(args.shutdown_timeout_s);
    options.api_key = args.api_key.filter(|k| !k.is_empty());
    options.chat_template = chat_template;
    options.default_max_tokens = args.default_max_tokens.max(1);
    options.max_n = args.max_n.max(1);
    options.max_body_bytes = args.max_body_bytes;
    options.responses_store_bytes = args.responses_store_bytes;
    options.lookup = usize::from(args.lookup);
    // `--limit max_compile_time=S` overrides --compile-timeout-ms.
    let mut limits = super::limits::from_args(&args.limits)?;
    let timeout_given = args
        .limits
        .iter()
        .any(|pair| pair.trim_start().starts_with("max_compile_time"));
    options.compile_timeout = if timeout_given {
        limits.max_compile_time.unwrap_or(std::time::Duration::MAX)
    } else {
        std::time::Duration::from_millis(args.compile_timeout_ms)
    };
    limits.max_compile_time = Some(options.compile_timeout);
    options.limits = limits;
    options.grammar_cache = args.grammar_cache;
    options.verbose = args.verbose;
    let load = args.gpu.load_options(args.verbose);
    options.gpu_layers = load.gpu_layers;
    options.gpu_device = load.gpu_device;
    // The CLI's layout of generated JSON: one line, Python's separators, canonical strings; an
    // object gets no undeclared members (what OpenAI's strict mode asks for, and valid either way).
    options.schema_options = constrain::SchemaOptions {
        whitespace: constrain::Whitespace::Compact,
        separators: Some(constrain::Separators::python()),
        property_order: args.property_order.into(),
        escapes: args.escapes.into(),
        numbers: args.numbers.into(),
        additional_properties: constrain::AdditionalProperties::Strict,
        resources: super::schema_resources::load(&args.resource)?,
        ..constrain::SchemaOptions::default()
    };
    constrain_server::serve(options)?;
    Ok(ExitCode::SUCCESS)
}

/// Without the llama.cpp backend there is nothing to serve.
#[cfg(not(feature = "llama"))]
pub fn run(_args: Args) -> anyhow::Result<ExitCode> {
    anyhow::bail!(
        "this build of constrain has no llama.cpp backend; rebuild with the `llama` feature"
    )
}
