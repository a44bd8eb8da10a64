//! The handlers, thin: read the body, plan the request ([`crate::plan`]), queue its job, and
//! hand the job's events to the reply ([`crate::reply`]). Every error answers as an OpenAI
//! error object.

use std::sync::{Arc, OnceLock};
use std::time::Instant;

use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{Request, State};
use axum::http::{header, StatusCode};
use axum::response::{Html, IntoResponse, Response};
use axum::{Extension, Json};
use serde_json::Value;
use tokio::sync::mpsc;

use crate::api::{parse_body, ChatRequest, CompletionRequest};
use crate::engine::{Event, Job};
use crate::error::ApiError;
use crate::middleware::Queued;
use crate::plan::{self, Plan};
use crate::reply::{self, Reply};
use crate::responses::ResponsesRequest;
use crate::state::AppState;

type Shared = State<Arc<AppState>>;

/// `POST /v1/chat/completions`.
pub async fn chat(
    State(state): Shared,
    Extension(queued): Extension<Queued>,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    let arrived = Instant::now();
    let body = body_or_error(body, state.options.max_body_bytes)?;
    let request: ChatRequest = parse_body(&body)?;
    let plan = plan::chat(&state, &request)?;
    run(state, plan, arrived, queued).await
}

/// `POST /v1/completions`.
pub async fn completions(
    State(state): Shared,
    Extension(queued): Extension<Queued>,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    let arrived = Instant::now();
    let body = body_or_error(body, state.options.max_body_bytes)?;
    let request: CompletionRequest = parse_body(&body)?;
    let plan = plan::completion(&state, &request)?;
    run(state, plan, arrived, queued).await
}

/// Compiles the plan's constraint, queues its job, and answers (whole or streamed).
async fn run(
    state: Arc<AppState>,
    plan: Plan,
    arrived: Instant,
    queued: Queued,
) -> Result<Response, ApiError> {
    let job = submit(&state, &plan, arrived, &queued).await?;
    let reply = Reply::new(
        state,
        &plan,
        job.prepared.info,
        job.prepared.compiled_in,
        job.admitted,
        arrived,
    );
    reply
        .send(job.events, plan.stream, plan.include_usage)
        .await
}

/// A plan's job, queued: where its events come from, and what its reply reports.
pub struct Submitted {
    /// The job's events, in the order the scheduler sends them.
    pub events: mpsc::UnboundedReceiver<Event>,
    /// The compiled constraint's report (`info`) and compile time; its grammar went to the job.
    pub prepared: plan::Prepared,
    /// Set when the job leaves the queue.
    pub admitted: Arc<OnceLock<Instant>>,
}

/// Compiles the plan's constraint and queues its job (429 when the queue is full). Every
/// generation route goes through here, whatever shape its reply has.
pub async fn submit(
    state: &Arc<AppState>,
    plan: &Plan,
    arrived: Instant,
    queued: &Queued,
) -> Result<Submitted, ApiError> {
    let mut prepared = plan::prepare(state, plan.spec.as_ref()).await?;
    state.metrics.add_prompt_tokens(plan.prompt.len());
    let (events, rx) = mpsc::unbounded_channel();
    let admitted = Arc::new(OnceLock::new());
    state.engine.submit(Job {
        prompt: plan.prompt.clone(),
        n: plan.n,
        params: plan.params.clone(),
        constraint: prepared.constraint.take(),
        events,
        deadline: arrived.checked_add(state.options.request_timeout),
        admitted: admitted.clone(),
    })?;
    queued.set();
    Ok(Submitted {
        events: rx,
        prepared,
        admitted,
    })
}

/// `POST /v1/responses`: the request read as a chat conversation ([`crate::responses`]), run
/// as a chat job, answered as a `response` object or its typed events.
pub async fn responses(
    State(state): Shared,
    Extension(queued): Extension<Queued>,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    let arrived = Instant::now();
    let body = body_or_error(body, state.options.max_body_bytes)?;
    let request: ResponsesRequest = parse_body(&body)?;
    let turn = crate::responses::plan(&state, &request)?;
    let job = submit(&state, &turn.plan, arrived, &queued)
        .await
        .map_err(crate::responses::rename_error)?;
    let Submitted {
        events,
        prepared,
        admitted,
    } = job;
    crate::responses::answer(state, turn, events, prepared, admitted, arrived).await
}

/// `GET /health`.
pub async fn health(State(state): Shared) -> Json<Value> {
    Json(reply::health(&state))
}

/// `GET /inspect`: the inspector, one self-contained page (script and styles inside; it
/// calls `/v1/chat/completions` with `trace: true` and opens `--trace` files).
pub async fn inspect() -> Html<&'static str> {
    Html(include_str!("inspect.html"))
}

/// `GET /v1/models`.
pub async fn models(State(state): Shared) -> Json<Value> {
    Json(reply::models(&state))
}

/// `POST /apply-template`: the prompt text a chat request's messages (and tools) are rendered
/// as, without generating (llama-server's route, for checking a chat template).
pub async fn apply_template(
    State(state): Shared,
    body: Result<Bytes, BytesRejection>,
) -> Result<Json<Value>, ApiError> {
    let body = body_or_error(body, state.options.max_body_bytes)?;
    let request: ChatRequest = parse_body(&body)?;
    let prompt = plan::prompt_text(&state, &request)?;
    Ok(Json(serde_json::json!({ "prompt": prompt })))
}

/// `GET /metrics`.
pub async fn metrics(State(state): Shared) -> Response {
    (
        [(
            header::CONTENT_TYPE,
            "text/plain; version=0.0.4; charset=utf-8",
        )],
        state.metrics.render(state.grammars.len()),
    )
        .into_response()
}

/// `GET /openapi.json`.
pub async fn openapi() -> Json<Value> {
    Json(crate::openapi::document())
}

/// Unknown routes: 404 as an OpenAI error.
pub async fn not_found(request: Request) -> ApiError {
    ApiError::not_found(request.method().as_str(), request.uri().path())
}

/// A known route with the wrong method.
pub async fn wrong_method(request: Request) -> ApiError {
    ApiError::method_not_allowed(request.method().as_str(), request.uri().path())
}

/// The body as bytes, or the limit's 413 / a 400.
pub fn body_or_error(body: Result<Bytes, BytesRejection>, limit: usize) -> Result<Bytes, ApiError> {
    body.map_err(|rejection| {
        if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE {
            ApiError::too_large(limit)
        } else {
            ApiError::bad_request(format!("could not read the body: {rejection}"))
        }
    })
}

#[cfg(test)]
mod tests;
