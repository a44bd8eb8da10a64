//! What the handlers share: the options, the model's vocabulary, tokenizer and chat template,
//! the engine, the grammar cache, the metrics and the stored responses.
//!
//! [`AppState::new`] loads a GGUF model and puts llama.cpp behind the engine;
//! [`AppState::with_backend`] takes any model side ([`Backend`]), which is how the router is
//! tested without a model file.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use constrain::{TokenIndex, ToolCallFormat, Trigger};
use constrain_llama::{ChatTemplate, LoadOptions, Model, Placement, SessionOptions};
use constrain_sampling::SamplerConfig;
use constrain_vocab::Vocabulary;

use crate::error::StartError;
use crate::grammars::GrammarCache;
use crate::metrics::Metrics;
use crate::prompt::Tokenize;
use crate::response_store::ResponseStore;
use crate::scheduler::{SchedulerOptions, SlotModel};

use crate::worker::{Engine, EngineOptions};

/// Everything `constrain serve` is configured with.
#[derive(Clone, Debug)]
pub struct ServerOptions {
    /// The GGUF model.
    pub model_path: PathBuf,
    /// The id `/v1/models` reports (default: the file name without `.gguf`).
    pub model_id: Option<String>,
    /// Address to listen on.
    pub host: String,
    /// Port (0: any free port, printed at start).
    pub port: u16,
    /// Slots of the context: sequences generated at once, batched into one decode per step.
    pub parallel: usize,
    /// Requests that may wait for a slot before new ones get 429.
    pub max_queue: usize,
    /// Tokens each slot holds (prompt plus output); the context holds `parallel` times this.
    pub ctx_size: u32,
    /// Threads of the model's evaluation (`None`: every core).
    pub threads: Option<u32>,
    /// Most prompt tokens read in one step (all prompts together), so that the running
    /// sequences keep moving while a long prompt is read.
    pub prompt_chunk: usize,
    /// A request not done by then (from its arrival) fails with 504 and frees its slots.
    pub request_timeout: Duration,
    /// After SIGTERM or Ctrl-C: how long in-flight requests may take to finish before the
    /// server exits anyway.
    pub shutdown_timeout: Duration,
    /// Required as `Authorization: Bearer KEY` on every route but `/health`.
    pub api_key: Option<String>,
    /// The chat template (`None`: the model's own, by family).
    pub chat_template: Option<ChatTemplate>,
    /// A Jinja chat template to render prompts with (a template file, or a
    /// `tokenizer_config.json`); it replaces `chat_template`.
    pub chat_template_file: Option<PathBuf>,
    /// Render prompts with the model's own Jinja template (from its GGUF).
    pub jinja: bool,
    /// The Jinja template in use with its BOS and EOS texts (set at start from `jinja` or
    /// `chat_template_file`).
    #[doc(hidden)]
    pub jinja_text: Option<(String, String, String)>,
    /// How the model writes tool calls (`None`: the family its own template writes, else
    /// `generic`).
    pub tool_format: Option<ToolCallFormat>,
    /// Whether the model thinks before it answers (`None`: when its own template has
    /// `</think>`).
    pub reasoning: Option<bool>,
    /// Most tokens of thinking before the answer is forced (`None`: only `max_tokens` bounds
    /// it, with room kept for the answer).
    pub reasoning_budget: Option<usize>,
    /// How schemas compile (layout, property order, escapes).
    pub schema_options: constrain::SchemaOptions,
    /// Compile-time budget of one constraint.
    pub compile_timeout: Duration,
    /// Every other budget of one constraint (source size, schema depth, automaton sizes); its
    /// compile time is replaced by `compile_timeout`.
    pub limits: constrain::Limits,
    /// Compiled constraints kept.
    pub grammar_cache: usize,
    /// Largest request body.
    pub max_body_bytes: usize,
    /// `max_tokens` when the request gives none.
    pub default_max_tokens: usize,
    /// Most choices (`n`) per request.
    pub max_n: usize,
    /// Sampling settings a request does not give (OpenAI's defaults: temperature 1, top_p 1).
    pub sampling: SamplerConfig,
    /// Prompt-lookup draft length of a request that gives no `lookup` (0: off).
    pub lookup: usize,
    /// Memory for stored responses (`previous_response_id` of `/v1/responses`), the oldest
    /// dropped first (0: none stored).
    pub responses_store_bytes: usize,
    /// Let llama.cpp log to stderr.
    pub verbose: bool,
    /// Layers offloaded to the GPU (0: the CPU; `u32::MAX`: all); without a usable GPU the
    /// model runs on the CPU and one line on stderr says so.
    pub gpu_layers: u32,
    /// Which GPU, by its position among the machine's GPUs (`None`: the first).
    pub gpu_device: Option<usize>,
}

impl ServerOptions {
    /// Defaults for serving `model_path`.
    pub fn new(model_path: PathBuf) -> ServerOptions {
        ServerOptions {
            model_path,
            model_id: None,
            host: "127.0.0.1".into(),
            port: 8080,
            parallel: 4,
            max_queue: 64,
            ctx_size: 4096,
            threads: None,
            prompt_chunk: 256,
            request_timeout: Duration::from_secs(600),
            shutdown_timeout: Duration::from_secs(10),
            api_key: None,
            chat_template: None,
            chat_template_file: None,
            jinja: false,
            jinja_text: None,
            tool_format: None,
            reasoning: None,
            reasoning_budget: None,
            // The layout `constrain serve` documents: one line, Python's separators, canonical
            // strings, no undeclared members; reading tool calls back while they stream
            // relies on it.
            schema_options: constrain::SchemaOptions {
                whitespace: constrain::Whitespace::Compact,
                separators: Some(constrain::Separators::python()),
                escapes: constrain::Escapes::Canonical,
                additional_properties: constrain::AdditionalProperties::Strict,
                ..constrain::SchemaOptions::default()
            },
            compile_timeout: Duration::from_secs(10),
            limits: constrain::Limits::default(),
            grammar_cache: 256,
            max_body_bytes: 4 << 20,
            default_max_tokens: 1024,
            max_n: 8,
            sampling: SamplerConfig::default(),
            lookup: 0,
            responses_store_bytes: 64 << 20,
            verbose: false,
            gpu_layers: constrain_llama::default_gpu_layers(),
            gpu_device: None,
        }
    }
}

/// A model as the server uses it: its token trie (and through it the vocabulary), its
/// tokenizer and chat template, and `open`, which makes the scheduler's model side on the
/// scheduler's thread.
pub struct Backend<F> {
    /// The vocabulary's token trie, shared by every grammar.
    pub index: Arc<TokenIndex>,
    /// Prompt text to tokens.
    pub tokenizer: Box<dyn Tokenize>,
    /// How conversations become prompt text.
    pub template: ChatTemplate,
    /// Makes the slots the scheduler decodes in (their number and room are its own).
    pub open: F,
}

/// What every handler shares.
pub struct AppState {
    pub(crate) vocabulary: Arc<Vocabulary>,
    pub(crate) tokenizer: Box<dyn Tokenize>,
    pub(crate) model_id: String,
    pub(crate) model_aliases: Vec<String>,
    pub(crate) template: ChatTemplate,
    /// The Jinja template prompts are rendered with, when one is in use.
    pub(crate) jinja: Option<crate::jinja::JinjaTemplate>,
    pub(crate) engine: Engine,
    pub(crate) grammars: GrammarCache,
    pub(crate) tool_format: ToolCallFormat,
    pub(crate) trigger: Arc<Trigger>,
    /// With a reasoning model: the end of its thinking, as a trigger.
    pub(crate) reasoning: Option<Arc<Trigger>>,
    pub(crate) metrics: Arc<Metrics>,
    pub(crate) responses: ResponseStore,
    pub(crate) options: ServerOptions,
    pub(crate) started: u64,
}

impl AppState {
    /// Loads the model, starts the scheduler over llama.cpp.
    pub fn new(options: ServerOptions) -> Result<AppState, StartError> {
        let load = LoadOptions {
            verbose: options.verbose,
            gpu_layers: options.gpu_layers,
            gpu_device: options.gpu_device,
        };
        // The model lives as long as the process: the scheduler and handlers borrow it.
        let model: &'static Model = Box::leak(Box::new(Model::load(&options.model_path, &load)?));
        // A GPU build on a machine without a usable GPU serves from the CPU, and says so once.
        match model.placement() {
            Placement::CpuFallback(why) => {
                eprintln!("constrain serve: {why}; running on the CPU");
            }
            placement if options.verbose => eprintln!("constrain serve: model on the {placement}"),
            _ => {}
        }
        let template = match options.chat_template {
            Some(t) => t,
            None => model.chat_template()?,
        };
        // The template in use tells how the model writes calls and whether it thinks.
        let mut options = options;
        if options.jinja && options.chat_template_file.is_none() {
            let text = model.chat_template_text().ok_or_else(|| {
                StartError::Template(format!(
                    "--jinja: the model {} has no chat template of its own; give one with \
                     --chat-template-file",
                    options.model_path.display()
                ))
            })?;
            let (bos, eos) = model.bos_eos_text();
            options.jinja_text = Some((text, bos, eos));
        }
        if let Some(path) = options.chat_template_file.take() {
            // Read once: the template's text decides the formats below and renders prompts.
            let file =
                crate::jinja::JinjaTemplate::from_file(&path).map_err(StartError::Template)?;
            let (bos, eos) = file.bos_eos();
            options.jinja_text = Some((file.text().to_string(), bos.to_string(), eos.to_string()));
        }
        let own = match &options.jinja_text {
            Some((text, _, _)) => text.clone(),
            None => model.chat_template_text().unwrap_or_default(),
        };
        options.tool_format = Some(
            options
                .tool_format
                .take()
                .unwrap_or_else(|| ToolCallFormat::detect(&own)),
        );
        options.reasoning = Some(
            options
                .reasoning
                .unwrap_or_else(|| own.contains(crate::reasoning::END)),
        );
        let open = crate::llama::open_slots(
            model,
            options.parallel,
            options.ctx_size,
            SessionOptions {
                threads: options.threads,
                ..SessionOptions::default()
            },
        );
        AppState::with_backend(
            options,
            Backend {
                index: model.token_index(),
                tokenizer: Box::new(model),
                template,
                open,
            },
        )
    }

    /// Starts the scheduler over `backend`'s model side; `options.model_path` names the model
    /// (its file name is the default id) and is not read.
    pub fn with_backend<M, F>(
        options: ServerOptions,
        backend: Backend<F>,
    ) -> Result<AppState, StartError>
    where
        M: SlotModel,
        F: FnOnce() -> Result<M, String> + Send + 'static,
    {
        let file_id = options
            .model_path
            .file_name()
            .map(|f| f.to_string_lossy().into_owned())
            .unwrap_or_else(|| "model".into());
        let stem = file_id
            .strip_suffix(".gguf")
            .unwrap_or(&file_id)
            .to_string();
        let model_id = options.model_id.clone().unwrap_or_else(|| stem.clone());
        let vocabulary = backend.index.vocabulary().clone();
        let metrics = Arc::new(Metrics::default());
        let engine = Engine::start(
            backend.open,
            vocabulary.clone(),
            &EngineOptions {
                max_queue: options.max_queue,
                scheduler: SchedulerOptions {
                    prompt_chunk: options.prompt_chunk.max(1),
                },
            },
            metrics.clone(),
        )?;
        let grammars = GrammarCache::new(
            backend.index,
            options.schema_options.clone(),
            constrain::Limits {
                max_compile_time: Some(options.compile_timeout),
                ..options.limits.clone()
            },
            options.grammar_cache,
        );
        let tool_format = options
            .tool_format
            .clone()
            .unwrap_or_else(ToolCallFormat::generic);
        let trigger = tool_format.trigger(&vocabulary);
        let reasoning = (options.reasoning == Some(true))
            .then(|| Arc::new(Trigger::new(crate::reasoning::END, &vocabulary)));
        let jinja = match (&options.chat_template_file, &options.jinja_text) {
            (Some(path), _) => {
                Some(crate::jinja::JinjaTemplate::from_file(path).map_err(StartError::Template)?)
            }
            (None, Some((text, bos, eos))) => Some(
                crate::jinja::JinjaTemplate::new(text.clone(), bos.clone(), eos.clone())
                    .map_err(StartError::Template)?,
            ),
            (None, None) => None,
        };
        Ok(AppState {
            vocabulary,
            tokenizer: backend.tokenizer,
            model_aliases: vec![model_id.clone(), stem, file_id, "default".into()],
            model_id,
            template: backend.template,
            jinja,
            engine,
            grammars,
            tool_format,
            trigger,
            reasoning,
            metrics,
            responses: ResponseStore::new(options.responses_store_bytes),
            options,
            started: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_secs()),
        })
    }

    /// The id of the served model.
    pub fn model_id(&self) -> &str {
        &self.model_id
    }

    /// The chat template in use.
    pub fn template(&self) -> ChatTemplate {
        self.template
    }

    /// How the model writes tool calls.
    pub fn tool_format(&self) -> &ToolCallFormat {
        &self.tool_format
    }

    /// The Jinja template prompts are rendered with, if any.
    pub fn jinja(&self) -> Option<&crate::jinja::JinjaTemplate> {
        self.jinja.as_ref()
    }

    /// Whether the model thinks before it answers.
    pub fn reasons(&self) -> bool {
        self.reasoning.is_some()
    }

    /// Stops the scheduler (see [`Engine::stop`]); requests still running fail with 503.
    pub fn stop(&self) {
        self.engine.stop();
    }
}
