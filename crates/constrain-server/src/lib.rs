//! `constrain serve`: an OpenAI-compatible HTTP server on the constrain engine.
//!
//! Agent frameworks speak OpenAI's chat completions API; this server speaks it with output that
//! follows the request's constraint every time: `response_format` JSON Schemas (any
//! `strict`), tool calls whose arguments are valid against the tool's parameters, and the
//! `grammar` / `regex` / `json_schema` extensions.
//!
//! - [`api`]: the request bodies; [`routes`]: the handlers and responses (whole or streamed).
//! - [`grammars`]: constraints compiled within a time budget and cached by their text.
//! - [`tools`]: the tool-call format, its grammar, and reading calls back (also as they stream).
//! - [`engine`]: the bounded queue, the jobs, and the decode loop of one sequence.
//! - [`scheduler`]: continuous batching, every running sequence in one context.
//! - [`metrics`]: `/metrics`; [`request_log`]: one JSON line per request on stderr.
//!
//! Start it with [`serve`] (blocking) or build the router with [`router`].

#![deny(missing_docs)]

pub mod api;
pub mod engine;
pub mod error;
pub mod grammars;
pub mod metrics;
mod openapi;
pub mod prompt;
pub mod request_log;
pub mod routes;
pub mod scheduler;
pub mod tools;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::DefaultBodyLimit;
use axum::routing::{get, post};
use axum::Router;
use constrain::Trigger;
use constrain_llama::{ChatTemplate, LoadOptions, Model, SessionOptions};
use constrain_sampling::SamplerConfig;

use crate::engine::{Engine, EngineOptions};
use crate::grammars::GrammarCache;
use crate::metrics::Metrics;
use crate::scheduler::SchedulerOptions;

/// Reported as `system_fingerprint`.
pub const FINGERPRINT: &str = concat!("constrain-", env!("CARGO_PKG_VERSION"));

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
    /// Let llama.cpp log to stderr.
    pub verbose: bool,
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
            schema_options: constrain::SchemaOptions::default(),
            compile_timeout: Duration::from_secs(10),
            limits: constrain::Limits::default(),
            grammar_cache: 256,
            max_body_bytes: 4 << 20,
            default_max_tokens: 1024,
            max_n: 8,
            sampling: SamplerConfig::default(),
            lookup: 0,
            verbose: false,
        }
    }
}

/// What every handler shares.
pub struct AppState {
    model: &'static Model,
    model_id: String,
    model_aliases: Vec<String>,
    template: ChatTemplate,
    engine: Engine,
    grammars: GrammarCache,
    trigger: Arc<Trigger>,
    metrics: Arc<Metrics>,
    options: ServerOptions,
    started: u64,
}

impl AppState {
    /// Loads the model, starts the scheduler.
    pub fn new(options: ServerOptions) -> anyhow::Result<AppState> {
        let load = LoadOptions {
            verbose: options.verbose,
            gpu_layers: 0,
        };
        // The model lives as long as the process: the scheduler and handlers borrow it.
        let model: &'static Model = Box::leak(Box::new(Model::load(&options.model_path, &load)?));
        let template = match options.chat_template {
            Some(t) => t,
            None => model.chat_template()?,
        };
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
        let metrics = Arc::new(Metrics::default());
        let engine = Engine::start(
            model,
            &EngineOptions {
                parallel: options.parallel.max(1),
                max_queue: options.max_queue,
                slot_ctx: options.ctx_size,
                session: SessionOptions {
                    threads: options.threads,
                    ..SessionOptions::default()
                },
                scheduler: SchedulerOptions {
                    prompt_chunk: options.prompt_chunk.max(1),
                },
            },
            metrics.clone(),
        )?;
        let grammars = GrammarCache::new(
            model.token_index(),
            options.schema_options.clone(),
            constrain::Limits {
                max_compile_time: Some(options.compile_timeout),
                ..options.limits.clone()
            },
            options.grammar_cache,
        );
        let trigger = Arc::new(Trigger::new(tools::CALL_OPEN, model.vocabulary()));
        Ok(AppState {
            model,
            model_aliases: vec![model_id.clone(), stem, file_id, "default".into()],
            model_id,
            template,
            engine,
            grammars,
            trigger,
            metrics,
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
}

/// The routes, with the API key check, the body limit and OpenAI-style 404s and 405s.
pub fn router(state: Arc<AppState>) -> Router {
    let limit = state.options.max_body_bytes;
    Router::new()
        .route(
            "/v1/chat/completions",
            post(routes::chat).fallback(routes::wrong_method),
        )
        .route(
            "/v1/completions",
            post(routes::completions).fallback(routes::wrong_method),
        )
        .route(
            "/v1/models",
            get(routes::models).fallback(routes::wrong_method),
        )
        .route(
            "/health",
            get(routes::health).fallback(routes::wrong_method),
        )
        .route(
            "/metrics",
            get(routes::metrics).fallback(routes::wrong_method),
        )
        .route(
            "/openapi.json",
            get(routes::openapi).fallback(routes::wrong_method),
        )
        // After routing, so the guard sees which route matched (`/health` needs no key).
        .route_layer(axum::middleware::from_fn_with_state(
            state.clone(),
            routes::guard,
        ))
        .fallback(routes::not_found)
        .layer(DefaultBodyLimit::max(limit))
        .with_state(state)
}

/// Loads the model and serves until Ctrl-C or SIGTERM.
pub fn serve(options: ServerOptions) -> anyhow::Result<()> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let addr: SocketAddr = format!("{}:{}", options.host, options.port)
        .parse()
        .map_err(|e| anyhow::anyhow!("--host {} --port {}: {e}", options.host, options.port))?;
    let state = Arc::new(AppState::new(options)?);
    let engine_owner = state.clone();
    let served = runtime.block_on(async move {
        let listener = tokio::net::TcpListener::bind(addr)
            .await
            .map_err(|e| anyhow::anyhow!("listening on {addr}: {e}"))?;
        let local = listener.local_addr()?;
        eprintln!(
            "constrain serve: model {} (chat template {}), listening on http://{local}",
            state.model_id, state.template
        );
        let deadline = state.options.shutdown_timeout;
        let stop = Arc::new(tokio::sync::Notify::new());
        let stopping = stop.clone();
        let server = axum::serve(listener, router(state)).with_graceful_shutdown(async move {
            shutdown_signal().await;
            eprintln!(
                "constrain serve: stopping; in-flight requests have {}s to finish \
                 (--shutdown-timeout-s)",
                deadline.as_secs()
            );
            stopping.notify_one();
        });
        // Graceful shutdown waits for every open connection; past the deadline the process
        // exits anyway (the requests still running are cancelled with it).
        let expired = async {
            stop.notified().await;
            tokio::time::sleep(deadline).await;
        };
        tokio::select! {
            result = server => result?,
            () = expired => eprintln!("constrain serve: shutdown deadline reached; cancelling what is left"),
        }
        Ok(())
    });
    // The scheduler ends its step and frees the context before the process exits.
    engine_owner.engine.stop();
    served
}

async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        if let Ok(mut s) = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        {
            s.recv().await;
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => {},
        () = term => {},
    }
}
