//! `constrain serve`: an OpenAI-compatible HTTP server on the constrain engine.
//!
//! Agent frameworks speak OpenAI's chat completions API or its Responses API; this server
//! speaks both with output that follows the request's constraint every time: `response_format` JSON Schemas (any
//! `strict`), tool calls whose arguments are valid against the tool's parameters, and the
//! `grammar` / `regex` / `json_schema` extensions.
//!
//! A request goes down the modules in this order:
//! - [`middleware`]: the API key, the body's declared size, counting answers;
//! - [`routes`]: the handlers, thin: they read the body and pass it along;
//! - [`api`]: the request bodies; [`plan`]: a request checked and turned into a job (sampling
//!   settings, prompt, constraint); [`prompt`]: the chat turns and the tokenizer;
//! - [`grammars`]: constraints compiled within a time budget and cached by their text;
//!   [`tools`]: the tool-call format, its grammar, and reading calls back;
//! - [`worker`]: the bounded queue and the scheduler's thread; [`scheduler`]: continuous
//!   batching over a [`scheduler::SlotModel`] ([`llama`]: llama.cpp's context);
//!   [`engine`]: jobs, events, and the decode loop of one sequence;
//! - [`reply`]: the events turned into OpenAI responses, whole or streamed;
//!   [`responses`]: `/v1/responses` read as a chat request and answered in the Responses
//!   API's shapes; [`response_store`]: its stored conversations;
//! - [`metrics`]: `/metrics`; [`request_log`]: one JSON line per request on stderr;
//!   [`error`]: OpenAI error objects, and start-up errors.
//!
//! Start it with [`serve`] (blocking) or build the router with [`router`] over an
//! [`AppState`] (a GGUF model, or any model side through [`state::Backend`]).

#![deny(missing_docs)]

pub mod api;
pub mod engine;
pub mod error;
pub mod grammars;
pub mod jinja;
pub mod llama;
pub mod metrics;
pub mod middleware;
mod openapi;
pub mod output;
pub mod plan;
pub mod prompt;
pub mod reasoning;
pub mod reply;
pub mod request_log;
pub mod response_store;
pub mod responses;
pub mod routes;
pub mod scheduler;
pub mod state;
pub mod tools;
pub mod worker;

use std::net::SocketAddr;
use std::sync::Arc;

use axum::extract::DefaultBodyLimit;
use axum::routing::{get, post};
use axum::Router;

pub use crate::error::StartError;
pub use crate::reply::FINGERPRINT;
pub use crate::state::{AppState, ServerOptions};

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
            "/v1/responses",
            post(routes::responses).fallback(routes::wrong_method),
        )
        .route(
            "/apply-template",
            post(routes::apply_template).fallback(routes::wrong_method),
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
            "/inspect",
            get(routes::inspect).fallback(routes::wrong_method),
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
            middleware::guard,
        ))
        .fallback(routes::not_found)
        .layer(DefaultBodyLimit::max(limit))
        .with_state(state)
}

/// Loads the model and serves until Ctrl-C or SIGTERM.
pub fn serve(options: ServerOptions) -> Result<(), StartError> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let addr: SocketAddr = format!("{}:{}", options.host, options.port)
        .parse()
        .map_err(|e: std::net::AddrParseError| StartError::Address {
            host: options.host.clone(),
            port: options.port,
            message: e.to_string(),
        })?;
    let state = Arc::new(AppState::new(options)?);
    let engine_owner = state.clone();
    let served = runtime.block_on(async move {
        let listener = tokio::net::TcpListener::bind(addr)
            .await
            .map_err(|source| StartError::Listen { addr, source })?;
        let local = listener.local_addr()?;
        eprintln!(
            "constrain serve: model {} (chat template {}, tool calls {}{}), listening on \
             http://{local}",
            state.model_id(),
            state.template(),
            state.tool_format().name(),
            if state.reasons() { ", thinks first" } else { "" }
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
        Ok::<(), StartError>(())
    });
    // The scheduler ends its step and frees the context before the process exits.
    engine_owner.stop();
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
