//! The HTTP routes: requests checked and turned into jobs, results turned into OpenAI responses
//! (whole, or streamed as server-sent events).

use std::convert::Infallible;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use axum::body::Bytes;
use axum::extract::{MatchedPath, Request, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::middleware::Next;
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::Json;
use constrain_sampling::{PenaltyWindow, SamplerConfig};
use futures_util::StreamExt;
use serde_json::{json, Value};
use tokio::sync::mpsc;

use crate::api::{
    parse_body, ChatRequest, CompletionRequest, Prompt, ResponseFormat, SamplingFields, Tool,
    ToolChoice,
};
use crate::engine::{ConstraintKind, Done, Event, Finish, GenParams, Job, TokenLogprob};
use crate::error::ApiError;
use crate::grammars::Spec;
use crate::request_log::{self, Admission, RequestLog};
use crate::tools::{self, CallStreamer, StreamPiece};
use crate::AppState;

type Shared = State<Arc<AppState>>;

/// Refuses requests without the API key (every route but `/health`), and counts answers.
/// Also writes the log line of an error answered before the request reached the model.
pub async fn guard(State(state): Shared, mut request: Request, next: Next) -> Response {
    let arrived = Instant::now();
    let route = request
        .extensions()
        .get::<MatchedPath>()
        .map_or_else(|| "unmatched".to_string(), |p| p.as_str().to_string());
    let queued = Queued::default();
    request.extensions_mut().insert(queued.clone());
    let response = if route != "/health" && !authorized(&state, request.headers()) {
        ApiError::unauthorized().into_response()
    } else if declared_length(request.headers()) > Some(state.options.max_body_bytes) {
        // Refused by its declared length, before a byte of it is read: a client waiting on
        // `Expect: 100-continue` gets the 413 instead of sending the body.
        ApiError::too_large(state.options.max_body_bytes).into_response()
    } else {
        next.run(request).await
    };
    let status = response.status().as_u16();
    state.metrics.count_request(&route, status);
    if status >= 400 && !queued.0.load(Ordering::Relaxed) {
        request_log::rejected(&route, status, arrived.elapsed());
    }
    response
}

/// The body length a request declares in `Content-Length`, if it does.
fn declared_length(headers: &HeaderMap) -> Option<usize> {
    headers
        .get(header::CONTENT_LENGTH)?
        .to_str()
        .ok()?
        .parse()
        .ok()
}

/// Set once a request is queued: its log line is then its [`RequestLog`]'s.
#[derive(Clone, Default)]
pub struct Queued(Arc<AtomicBool>);

fn authorized(state: &AppState, headers: &HeaderMap) -> bool {
    let Some(key) = &state.options.api_key else {
        return true;
    };
    let given = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::trim);
    // Compared in constant time: the key's length only is revealed.
    given.is_some_and(|g| {
        g.len() == key.len()
            && g.bytes()
                .zip(key.bytes())
                .fold(0u8, |acc, (a, b)| acc | (a ^ b))
                == 0
    })
}

/// `GET /health`.
pub async fn health(State(state): Shared) -> Json<Value> {
    Json(json!({
        "status": "ok",
        "model": state.model_id,
        "queue": state.metrics.queued.load(std::sync::atomic::Ordering::Relaxed),
        "active": state.metrics.active.load(std::sync::atomic::Ordering::Relaxed),
    }))
}

/// `GET /v1/models`.
pub async fn models(State(state): Shared) -> Json<Value> {
    Json(json!({
        "object": "list",
        "data": [{
            "id": state.model_id,
            "object": "model",
            "created": state.started,
            "owned_by": "constrain",
        }]
    }))
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
pub fn body_or_error(
    body: Result<Bytes, axum::extract::rejection::BytesRejection>,
    limit: usize,
) -> Result<Bytes, ApiError> {
    body.map_err(|rejection| {
        if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE {
            ApiError::too_large(limit)
        } else {
            ApiError::bad_request(format!("could not read the body: {rejection}"))
        }
    })
}

/// What a chat or completion request asks for, checked, before its prompt is known.
struct Plan {
    params: GenParams,
    n: usize,
    spec: Option<(Spec, ConstraintUse)>,
    stream: bool,
    include_usage: bool,
}

/// How a compiled spec is used, and what the response says about it.
#[derive(Clone)]
struct ConstraintUse {
    /// Free text until `<tool_call>`, then the spec.
    triggered: bool,
    /// `json_schema`, `json_object`, `regex`, `grammar`, `tool_calls`.
    kind: &'static str,
    /// `strict` as the request gave it.
    strict: Option<bool>,
}

/// Which tools the model sees and may call.
struct ToolPlan<'a> {
    /// Listed in the system turn.
    listed: Vec<&'a Tool>,
    /// Callable (all listed ones, or the named one).
    callable: Vec<&'a Tool>,
    /// `required` or named: the output is calls only.
    required: bool,
    parallel: bool,
}

fn tool_plan(request: &ChatRequest) -> Result<Option<ToolPlan<'_>>, ApiError> {
    let tools = request.tools.as_deref().unwrap_or_default();
    tools::check_tools(tools)?;
    let parallel = request.parallel_tool_calls.unwrap_or(true);
    let all: Vec<&Tool> = tools.iter().collect();
    let choice = request
        .tool_choice
        .clone()
        .unwrap_or_else(|| ToolChoice::Mode(if tools.is_empty() { "none" } else { "auto" }.into()));
    match choice {
        ToolChoice::Mode(mode) => match mode.as_str() {
            "none" => Ok(None),
            "auto" | "required" => {
                if tools.is_empty() {
                    if mode == "auto" {
                        return Ok(None);
                    }
                    return Err(ApiError::invalid_param(
                        "tool_choice",
                        "tool_choice \"required\" needs at least one tool in `tools`",
                    ));
                }
                Ok(Some(ToolPlan {
                    listed: all.clone(),
                    callable: all,
                    required: mode == "required",
                    parallel,
                }))
            }
            other => Err(ApiError::invalid_param(
                "tool_choice",
                format!("tool_choice {other:?}: use none, auto, required or a named function"),
            )),
        },
        ToolChoice::Named(named) => {
            if named.kind != "function" {
                return Err(ApiError::invalid_param(
                    "tool_choice.type",
                    "the type of a named tool choice must be \"function\"",
                ));
            }
            let Some(tool) = tools
                .iter()
                .find(|t| t.function.name == named.function.name)
            else {
                return Err(ApiError::invalid_param(
                    "tool_choice.function.name",
                    format!(
                        "tool_choice names {:?}, which is not in `tools`",
                        named.function.name
                    ),
                ));
            };
            Ok(Some(ToolPlan {
                listed: all,
                callable: vec![tool],
                required: true,
                parallel,
            }))
        }
    }
}

/// The constraint of the response itself: `response_format` or one of the extensions.
fn response_spec(
    format: Option<&ResponseFormat>,
    fields: &SamplingFields,
) -> Result<Option<(Spec, ConstraintUse)>, ApiError> {
    let mut found: Vec<(&str, Spec, ConstraintUse)> = Vec::new();
    let uses = |kind, strict| ConstraintUse {
        triggered: false,
        kind,
        strict,
    };
    match format {
        None | Some(ResponseFormat::Text) => {}
        Some(ResponseFormat::JsonObject) => found.push((
            "response_format",
            Spec::JsonSchema(json!({"type": "object"})),
            uses("json_object", None),
        )),
        Some(ResponseFormat::JsonSchema { json_schema }) => {
            let schema = json_schema.schema.clone().unwrap_or_else(|| json!({}));
            found.push((
                "response_format",
                Spec::JsonSchema(schema),
                uses("json_schema", Some(json_schema.strict.unwrap_or(false))),
            ));
        }
    }
    if let Some(schema) = &fields.json_schema {
        found.push((
            "json_schema",
            Spec::JsonSchema(schema.clone()),
            uses("json_schema", None),
        ));
    }
    if let Some(regex) = &fields.regex {
        found.push(("regex", Spec::Regex(regex.clone()), uses("regex", None)));
    }
    if let Some(grammar) = &fields.grammar {
        found.push((
            "grammar",
            Spec::Gbnf(grammar.clone()),
            uses("grammar", None),
        ));
    }
    match found.len() {
        0 => Ok(None),
        1 => {
            let (_, spec, u) = found.pop().expect("one");
            Ok(Some((spec, u)))
        }
        _ => Err(ApiError::invalid_param(
            found[1].0,
            format!(
                "give at most one constraint; this request has {}",
                found.iter().map(|f| f.0).collect::<Vec<_>>().join(" and ")
            ),
        )),
    }
}

/// Longest prompt-lookup draft a request may ask for: each drafted token is a row of logits
/// the step evaluates and copies.
pub const MAX_LOOKUP: usize = 16;

fn check_range(param: &str, value: Option<f32>, lo: f32, hi: f32) -> Result<(), ApiError> {
    match value {
        Some(v) if !(v.is_finite() && (lo..=hi).contains(&v)) => Err(ApiError::invalid_param(
            param,
            format!("{param} must be between {lo} and {hi}, not {v}"),
        )),
        _ => Ok(()),
    }
}

/// Sampling settings, seed, stop strings and limits from the shared fields.
fn gen_params(
    state: &AppState,
    f: &SamplingFields,
    max_tokens: Option<u64>,
    logprobs: Option<usize>,
) -> Result<(GenParams, usize), ApiError> {
    check_range("temperature", f.temperature, 0.0, 2.0)?;
    check_range("top_p", f.top_p, 0.0, 1.0)?;
    check_range("min_p", f.min_p, 0.0, 1.0)?;
    check_range("typical_p", f.typical_p, 0.0, 1.0)?;
    check_range("presence_penalty", f.presence_penalty, -2.0, 2.0)?;
    check_range("frequency_penalty", f.frequency_penalty, -2.0, 2.0)?;
    check_range("repeat_penalty", f.repeat_penalty, 0.01, 10.0)?;
    let n = f.n.unwrap_or(1) as usize;
    if n == 0 || n > state.options.max_n {
        return Err(ApiError::invalid_param(
            "n",
            format!("n must be between 1 and {}", state.options.max_n),
        ));
    }
    let vocab_width = state.model.vocabulary().logits_width();
    let mut logit_bias = Vec::new();
    for (key, &bias) in f.logit_bias.iter().flatten() {
        let id: u32 = key
            .parse()
            .ok()
            .filter(|&id| (id as usize) < vocab_width)
            .ok_or_else(|| {
                ApiError::invalid_param(
                    "logit_bias",
                    format!(
                        "logit_bias key {key:?} is not a token id of this model (0..{vocab_width})"
                    ),
                )
            })?;
        check_range("logit_bias", Some(bias), -100.0, 100.0)?;
        // -100 bans the token, as OpenAI's documentation says it effectively does.
        logit_bias.push((
            id,
            if bias <= -100.0 {
                f32::NEG_INFINITY
            } else {
                bias
            },
        ));
    }
    let lookup = match f.lookup {
        None => state.options.lookup,
        Some(k) if k <= MAX_LOOKUP as u64 => k as usize,
        Some(k) => {
            return Err(ApiError::invalid_param(
                "lookup",
                format!("lookup must be between 0 and {MAX_LOOKUP}, not {k}"),
            ))
        }
    };
    let stop = f.stop.as_ref().map(|s| s.strings()).unwrap_or_default();
    if stop.len() > 4 {
        return Err(ApiError::invalid_param("stop", "at most 4 stop strings"));
    }
    let d = &state.options.sampling;
    let sampling = SamplerConfig {
        temperature: f.temperature.unwrap_or(d.temperature),
        top_k: f.top_k.unwrap_or(d.top_k),
        top_p: f.top_p.unwrap_or(d.top_p),
        min_p: f.min_p.unwrap_or(d.min_p),
        typical_p: f.typical_p.unwrap_or(d.typical_p),
        repetition_penalty: f.repeat_penalty.unwrap_or(d.repetition_penalty),
        frequency_penalty: f.frequency_penalty.unwrap_or(d.frequency_penalty),
        presence_penalty: f.presence_penalty.unwrap_or(d.presence_penalty),
        // OpenAI's penalties look at the generated tokens only.
        penalty_window: PenaltyWindow {
            last_n: None,
            include_prompt: false,
        },
        logit_bias,
    };
    sampling
        .validate()
        .map_err(|e| ApiError::bad_request(e.to_string()))?;
    let max_tokens = match max_tokens {
        Some(0) => {
            return Err(ApiError::invalid_param(
                "max_tokens",
                "max_tokens must be at least 1",
            ))
        }
        Some(m) => usize::try_from(m).unwrap_or(usize::MAX),
        None => state.options.default_max_tokens,
    };
    let seed = match f.seed {
        Some(s) => s as u64,
        None => random_u64(),
    };
    Ok((
        GenParams {
            sampling,
            seed,
            max_tokens,
            stop,
            logprobs,
            fast_forward: logprobs.is_none(),
            lookup,
        },
        n,
    ))
}

fn check_model(state: &AppState, model: Option<&str>) -> Result<(), ApiError> {
    match model {
        None | Some("") => Ok(()),
        Some(m) if state.model_aliases.iter().any(|a| a == m) => Ok(()),
        Some(m) => Err(ApiError::invalid_param(
            "model",
            format!(
                "the model {m:?} is not served here; this server serves {:?} (GET /v1/models)",
                state.model_id
            ),
        )
        .with_code("model_not_found")),
    }
}

/// Compiles (or finds) the spec's grammar off the async threads.
async fn compile(
    state: &Arc<AppState>,
    spec: &Spec,
) -> Result<(Arc<constrain::Compilation>, bool), ApiError> {
    let state2 = state.clone();
    let spec2 = spec.clone();
    let (result, hit) = tokio::task::spawn_blocking(move || state2.grammars.get(&spec2))
        .await
        .map_err(|e| ApiError::internal(format!("compiling the constraint: {e}")))?;
    let compiled = result?;
    state.metrics.add_compile((!hit).then_some(compiled.took));
    Ok((compiled, hit))
}

/// The prompt must leave room for one token.
fn check_prompt(state: &AppState, prompt: &[u32], max_tokens: &mut usize) -> Result<(), ApiError> {
    let ctx = state.options.ctx_size as usize;
    if prompt.len() >= ctx {
        return Err(ApiError::bad_request(format!(
            "the prompt is {} tokens long but the context holds {ctx} (--ctx-size)",
            prompt.len()
        ))
        .with_param("messages")
        .with_code("context_length_exceeded"));
    }
    *max_tokens = (*max_tokens).min(ctx - prompt.len());
    Ok(())
}

/// `POST /v1/chat/completions` (an error answers as an OpenAI error object).
pub async fn chat(
    State(state): Shared,
    axum::Extension(queued): axum::Extension<Queued>,
    body: Result<Bytes, axum::extract::rejection::BytesRejection>,
) -> Result<Response, ApiError> {
    let arrived = Instant::now();
    let body = body_or_error(body, state.options.max_body_bytes)?;
    let request: ChatRequest = parse_body(&body)?;
    check_model(&state, request.model.as_deref())?;
    let top_logprobs = request.top_logprobs.unwrap_or(0) as usize;
    if top_logprobs > 20 {
        return Err(ApiError::invalid_param(
            "top_logprobs",
            "top_logprobs must be between 0 and 20",
        ));
    }
    if request.top_logprobs.is_some() && request.logprobs != Some(true) {
        return Err(ApiError::invalid_param(
            "top_logprobs",
            "top_logprobs needs logprobs: true",
        ));
    }
    let logprobs = (request.logprobs == Some(true)).then_some(top_logprobs);
    let max_tokens = request
        .max_completion_tokens
        .or(request.sampling.max_tokens);
    let (params, n) = gen_params(&state, &request.sampling, max_tokens, logprobs)?;

    let tool_plan = tool_plan(&request)?;
    let response = response_spec(request.response_format.as_ref(), &request.sampling)?;
    let spec = match &tool_plan {
        Some(plan) => {
            let call_schema = tools::call_schema(&plan.callable);
            let strict = plan
                .callable
                .iter()
                .any(|t| t.function.strict == Some(true));
            let used = |triggered| ConstraintUse {
                triggered,
                kind: "tool_calls",
                strict: Some(strict),
            };
            if plan.required {
                Some((
                    Spec::ToolCalls {
                        call_schema,
                        parallel: plan.parallel,
                        or: None,
                    },
                    used(false),
                ))
            } else if let Some((alternative, _)) = response.clone() {
                Some((
                    Spec::ToolCalls {
                        call_schema,
                        parallel: plan.parallel,
                        or: Some(Box::new(alternative)),
                    },
                    used(false),
                ))
            } else {
                Some((
                    Spec::AfterCallOpen {
                        call_schema,
                        parallel: plan.parallel,
                    },
                    used(true),
                ))
            }
        }
        None => response,
    };

    let messages = crate::prompt::chat_messages(
        &request.messages,
        tool_plan
            .as_ref()
            .map(|p| (p.listed.as_slice(), p.required)),
    )?;
    let text = state.template.render(&messages, true);
    let prompt = state
        .model
        .tokenize(&text, true)
        .map_err(|e| ApiError::bad_request(e.to_string()).with_param("messages"))?;
    let plan = Plan {
        params,
        n,
        spec,
        stream: request.sampling.stream.unwrap_or(false),
        include_usage: request
            .sampling
            .stream_options
            .as_ref()
            .is_some_and(|o| o.include_usage),
    };
    let tools_active = tool_plan.is_some();
    run(
        state,
        plan,
        prompt,
        arrived,
        queued,
        Kind::Chat { tools_active },
    )
    .await
}

/// `POST /v1/completions` (an error answers as an OpenAI error object).
pub async fn completions(
    State(state): Shared,
    axum::Extension(queued): axum::Extension<Queued>,
    body: Result<Bytes, axum::extract::rejection::BytesRejection>,
) -> Result<Response, ApiError> {
    let arrived = Instant::now();
    let body = body_or_error(body, state.options.max_body_bytes)?;
    let request: CompletionRequest = parse_body(&body)?;
    check_model(&state, request.model.as_deref())?;
    if request.echo == Some(true) {
        return Err(ApiError::invalid_param("echo", "echo is not supported"));
    }
    if request.suffix.as_deref().is_some_and(|s| !s.is_empty()) {
        return Err(ApiError::invalid_param("suffix", "suffix is not supported"));
    }
    let logprobs = request.logprobs.map(|k| k as usize);
    if logprobs.is_some_and(|k| k > 20) {
        return Err(ApiError::invalid_param(
            "logprobs",
            "logprobs must be between 0 and 20",
        ));
    }
    let (params, n) = gen_params(
        &state,
        &request.sampling,
        request.sampling.max_tokens.or(Some(16)),
        logprobs,
    )?;
    let spec = response_spec(request.response_format.as_ref(), &request.sampling)?;
    let prompt = match &request.prompt {
        Prompt::Text(t) => state.model.tokenize(t, true),
        Prompt::Texts(v) if v.len() == 1 => state.model.tokenize(&v[0], true),
        Prompt::Texts(_) => {
            return Err(ApiError::invalid_param(
                "prompt",
                "give one prompt (batches of prompts are not supported)",
            ))
        }
        Prompt::Tokens(ids) => {
            let width = state.model.vocabulary().logits_width();
            if ids.is_empty() || ids.iter().any(|&t| t as usize >= width) {
                return Err(ApiError::invalid_param(
                    "prompt",
                    "token ids must be a non-empty list of this model's ids",
                ));
            }
            Ok(ids.clone())
        }
    }
    .map_err(|e| ApiError::bad_request(e.to_string()).with_param("prompt"))?;
    let plan = Plan {
        params,
        n,
        spec,
        stream: request.sampling.stream.unwrap_or(false),
        include_usage: request
            .sampling
            .stream_options
            .as_ref()
            .is_some_and(|o| o.include_usage),
    };
    run(state, plan, prompt, arrived, queued, Kind::Completion).await
}

#[derive(Clone, Copy)]
enum Kind {
    Chat { tools_active: bool },
    Completion,
}

/// Compiles the constraint, queues the job, and answers (whole or streamed).
async fn run(
    state: Arc<AppState>,
    mut plan: Plan,
    prompt: Vec<u32>,
    arrived: Instant,
    queued: Queued,
    kind: Kind,
) -> Result<Response, ApiError> {
    check_prompt(&state, &prompt, &mut plan.params.max_tokens)?;
    let mut constraint_info = Value::Null;
    let mut compiled_in = None;
    let constraint = match &plan.spec {
        None => None,
        Some((spec, used)) => {
            let (compiled, cached) = compile(&state, spec).await?;
            compiled_in = (!cached).then_some(compiled.took);
            constraint_info = json!({
                "type": used.kind,
                "enforced": true,
                "strict": used.strict,
                "triggered_by": used.triggered.then_some(tools::CALL_OPEN),
                "cached": cached,
                "warnings": compiled.warnings.iter().map(ToString::to_string).collect::<Vec<_>>(),
            });
            Some(if used.triggered {
                ConstraintKind::Triggered(state.trigger.clone(), compiled.grammar.clone())
            } else {
                ConstraintKind::Grammar(compiled.grammar.clone())
            })
        }
    };
    state.metrics.add_prompt_tokens(prompt.len());
    let prompt_tokens = prompt.len();
    let (tx, rx) = mpsc::unbounded_channel();
    let n = plan.n;
    let admitted = Arc::new(OnceLock::new());
    state.engine.submit(Job {
        prompt,
        n,
        params: plan.params.clone(),
        constraint,
        events: tx,
        deadline: arrived.checked_add(state.options.request_timeout),
        admitted: admitted.clone(),
    })?;
    queued.0.store(true, Ordering::Relaxed);
    let (prefix, route) = match kind {
        Kind::Chat { .. } => ("chatcmpl-", "/v1/chat/completions"),
        Kind::Completion => ("cmpl-", "/v1/completions"),
    };
    let id = new_id(prefix);
    let reply = Reply {
        state: state.clone(),
        log: RequestLog::new(
            id.clone(),
            Admission {
                route,
                arrived,
                prompt_tokens,
                n,
                compiled_in,
                admitted,
            },
        ),
        id,
        created: unix_now(),
        n,
        kind,
        prompt_tokens,
        logprobs: plan.params.logprobs.is_some(),
        lookup: plan.params.lookup > 0,
        constraint_info,
        arrived,
    };
    if plan.stream {
        Ok(reply.stream(rx, plan.include_usage))
    } else {
        reply.whole(rx).await
    }
}

/// Builds the answer of one request from its job's events.
struct Reply {
    state: Arc<AppState>,
    /// Written when the reply is dropped: complete, failed or abandoned.
    log: RequestLog,
    id: String,
    created: u64,
    n: usize,
    kind: Kind,
    prompt_tokens: usize,
    logprobs: bool,
    /// Whether sequences draft by prompt lookup (then `usage` counts the drafts).
    lookup: bool,
    constraint_info: Value,
    arrived: Instant,
}

/// Token counts of a reply's finished sequences, for `usage`.
#[derive(Default)]
struct Counts {
    completion: usize,
    drafted: usize,
    accepted_drafts: usize,
}

impl Counts {
    fn add(&mut self, done: &Done) {
        self.completion += done.completion_tokens;
        self.drafted += done.drafted;
        self.accepted_drafts += done.accepted_drafts;
    }
}

impl Reply {
    fn object(&self, chunk: bool) -> &'static str {
        match (self.kind, chunk) {
            (Kind::Chat { .. }, false) => "chat.completion",
            (Kind::Chat { .. }, true) => "chat.completion.chunk",
            (Kind::Completion, _) => "text_completion",
        }
    }

    /// OpenAI's `usage`; with lookup, drafted tokens are counted as OpenAI counts a predicted
    /// output's tokens (`completion_tokens_details`).
    fn usage(&self, counts: &Counts) -> Value {
        let mut usage = json!({
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": counts.completion,
            "total_tokens": self.prompt_tokens + counts.completion,
        });
        if self.lookup {
            usage["completion_tokens_details"] = json!({
                "accepted_prediction_tokens": counts.accepted_drafts,
                "rejected_prediction_tokens": counts.drafted - counts.accepted_drafts,
            });
        }
        usage
    }

    fn envelope(&self, chunk: bool, choices: Value) -> Value {
        let mut v = json!({
            "id": self.id,
            "object": self.object(chunk),
            "created": self.created,
            "model": self.state.model_id,
            "system_fingerprint": crate::FINGERPRINT,
            "choices": choices,
        });
        if !self.constraint_info.is_null() {
            v["constraint"] = self.constraint_info.clone();
        }
        v
    }

    /// Collects every sequence, then answers.
    async fn whole(self, mut rx: mpsc::UnboundedReceiver<Event>) -> Result<Response, ApiError> {
        let mut done: Vec<Option<Done>> = vec![None; self.n];
        let mut logprobs: Vec<Vec<TokenLogprob>> = vec![Vec::new(); self.n];
        let mut first = true;
        while done.iter().any(Option::is_none) {
            match rx.recv().await {
                Some(Event::Delta {
                    index,
                    logprobs: lp,
                    text,
                }) => {
                    if first && !text.is_empty() {
                        first = false;
                        self.state.metrics.add_ttft(self.arrived.elapsed());
                        self.log.first_text();
                    }
                    logprobs[index].extend(lp);
                }
                Some(Event::Done(d)) => {
                    let i = d.index;
                    done[i] = Some(d);
                }
                Some(Event::Failed(e)) => {
                    self.log.failed(e.status.as_u16());
                    return Err(e);
                }
                None => {
                    self.log.failed(500);
                    return Err(ApiError::internal(
                        "the scheduler stopped before the answer was complete",
                    ));
                }
            }
        }
        let done: Vec<Done> = done.into_iter().flatten().collect();
        let mut counts = Counts::default();
        done.iter().for_each(|d| counts.add(d));
        self.log.ok(counts.completion);
        let choices: Vec<Value> = done
            .iter()
            .zip(&logprobs)
            .map(|(d, lp)| self.choice(d, lp))
            .collect();
        let mut body = self.envelope(false, Value::Array(choices));
        body["usage"] = self.usage(&counts);
        Ok(Json(body).into_response())
    }

    fn choice(&self, d: &Done, lp: &[TokenLogprob]) -> Value {
        match self.kind {
            Kind::Chat { tools_active } => {
                let (content, calls) = if tools_active {
                    tools::parse_calls(&d.text)
                } else {
                    (d.text.clone(), Vec::new())
                };
                let mut message = json!({"role": "assistant", "content": content, "refusal": null});
                let mut finish = finish_name(d.finish);
                if !calls.is_empty() {
                    let calls: Vec<Value> = calls
                        .iter()
                        .map(|c| {
                            json!({"id": new_id("call_"), "type": "function",
                                   "function": {"name": c.name, "arguments": c.arguments}})
                        })
                        .collect();
                    message["tool_calls"] = Value::Array(calls);
                    if content.trim().is_empty() {
                        message["content"] = Value::Null;
                    }
                    if d.finish == Finish::Stop {
                        finish = "tool_calls";
                    }
                }
                json!({
                    "index": d.index,
                    "message": message,
                    "logprobs": self.logprobs.then(|| chat_logprobs(lp)),
                    "finish_reason": finish,
                })
            }
            Kind::Completion => json!({
                "index": d.index,
                "text": d.text,
                "logprobs": self.logprobs.then(|| completion_logprobs(lp)),
                "finish_reason": finish_name(d.finish),
            }),
        }
    }

    /// Streams server-sent events as the sequences generate.
    fn stream(self, mut rx: mpsc::UnboundedReceiver<Event>, include_usage: bool) -> Response {
        let (out, out_rx) = mpsc::channel::<String>(64);
        tokio::spawn(async move {
            let tools_active = matches!(self.kind, Kind::Chat { tools_active: true });
            let mut streamers: Vec<CallStreamer> =
                (0..self.n).map(|_| CallStreamer::new()).collect();
            let mut call_ids: Vec<Vec<String>> = vec![Vec::new(); self.n];
            let mut counts = Counts::default();
            let mut first = true;
            let mut remaining = self.n;
            let send = |v: Value| {
                let out = out.clone();
                async move { out.send(v.to_string()).await.is_ok() }
            };
            if let Kind::Chat { .. } = self.kind {
                for i in 0..self.n {
                    let mut chunk = self.envelope(true, json!([{"index": i,
                        "delta": {"role": "assistant", "content": ""}, "logprobs": null, "finish_reason": null}]));
                    if include_usage {
                        chunk["usage"] = Value::Null;
                    }
                    if !send(chunk).await {
                        return;
                    }
                }
            }
            while remaining > 0 {
                let event = rx.recv().await;
                let chunks: Vec<Value> = match event {
                    Some(Event::Delta {
                        index,
                        text,
                        logprobs,
                    }) => {
                        if first && !text.is_empty() {
                            first = false;
                            self.state.metrics.add_ttft(self.arrived.elapsed());
                            self.log.first_text();
                        }
                        self.delta_chunks(
                            index,
                            &text,
                            &logprobs,
                            tools_active,
                            &mut streamers[index],
                            &mut call_ids[index],
                        )
                    }
                    Some(Event::Done(d)) => {
                        remaining -= 1;
                        counts.add(&d);
                        let mut chunks = Vec::new();
                        if tools_active {
                            let pieces = streamers[d.index].finish();
                            chunks.extend(self.pieces_chunks(
                                d.index,
                                pieces,
                                &[],
                                &mut call_ids[d.index],
                            ));
                        }
                        let finish = if tools_active
                            && streamers[d.index].calls() > 0
                            && d.finish == Finish::Stop
                        {
                            "tool_calls"
                        } else {
                            finish_name(d.finish)
                        };
                        let choice = match self.kind {
                            Kind::Chat { .. } => {
                                json!({"index": d.index, "delta": {}, "logprobs": null, "finish_reason": finish})
                            }
                            Kind::Completion => {
                                json!({"index": d.index, "text": "", "logprobs": null, "finish_reason": finish})
                            }
                        };
                        chunks.push(self.envelope(true, json!([choice])));
                        chunks
                    }
                    Some(Event::Failed(e)) => {
                        self.log.failed(e.status.as_u16());
                        let _ = send(e.body()).await;
                        break;
                    }
                    None => {
                        self.log.failed(500);
                        let _ = send(
                            ApiError::internal(
                                "the scheduler stopped before the answer was complete",
                            )
                            .body(),
                        )
                        .await;
                        break;
                    }
                };
                for mut chunk in chunks {
                    if include_usage {
                        chunk["usage"] = Value::Null;
                    }
                    if !send(chunk).await {
                        // The client went away: dropping `rx` stops the job.
                        return;
                    }
                }
            }
            if remaining == 0 {
                self.log.ok(counts.completion);
            }
            if include_usage && remaining == 0 {
                let mut last = self.envelope(true, json!([]));
                last["usage"] = self.usage(&counts);
                let _ = send(last).await;
            }
            let _ = out.send("[DONE]".into()).await;
        });
        let stream = tokio_stream::wrappers::ReceiverStream::new(out_rx)
            .map(|data| Ok::<_, Infallible>(SseEvent::default().data(data)));
        Sse::new(stream)
            .keep_alive(KeepAlive::default())
            .into_response()
    }

    fn delta_chunks(
        &self,
        index: usize,
        text: &str,
        logprobs: &[TokenLogprob],
        tools_active: bool,
        streamer: &mut CallStreamer,
        ids: &mut Vec<String>,
    ) -> Vec<Value> {
        match self.kind {
            Kind::Completion => {
                vec![self.envelope(true, json!([{"index": index, "text": text,
                    "logprobs": self.logprobs.then(|| completion_logprobs(logprobs)), "finish_reason": null}]))]
            }
            Kind::Chat { .. } => {
                let pieces = if tools_active {
                    streamer.push(text)
                } else if text.is_empty() {
                    Vec::new()
                } else {
                    vec![StreamPiece::Content(text.to_string())]
                };
                let mut chunks = self.pieces_chunks(index, pieces, logprobs, ids);
                if chunks.is_empty() && self.logprobs && !logprobs.is_empty() {
                    chunks.push(self.envelope(
                        true,
                        json!([{"index": index, "delta": {},
                        "logprobs": chat_logprobs(logprobs), "finish_reason": null}]),
                    ));
                }
                chunks
            }
        }
    }

    fn pieces_chunks(
        &self,
        index: usize,
        pieces: Vec<StreamPiece>,
        logprobs: &[TokenLogprob],
        ids: &mut Vec<String>,
    ) -> Vec<Value> {
        let mut out = Vec::new();
        let mut lp = Some(logprobs).filter(|l| self.logprobs && !l.is_empty());
        for piece in pieces {
            let delta = match piece {
                StreamPiece::Content(c) => json!({"content": c}),
                StreamPiece::CallStart { index: call, name } => {
                    let id = new_id("call_");
                    ids.push(id.clone());
                    json!({"tool_calls": [{"index": call, "id": id, "type": "function",
                                           "function": {"name": name, "arguments": ""}}]})
                }
                StreamPiece::CallArguments {
                    index: call,
                    fragment,
                } => {
                    json!({"tool_calls": [{"index": call, "function": {"arguments": fragment}}]})
                }
            };
            let logprobs = lp.take().map(chat_logprobs);
            out.push(self.envelope(
                true,
                json!([{"index": index, "delta": delta,
                "logprobs": logprobs, "finish_reason": null}]),
            ));
        }
        out
    }
}

fn finish_name(f: Finish) -> &'static str {
    match f {
        Finish::Stop => "stop",
        Finish::Length => "length",
    }
}

fn token_text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn chat_logprobs(lp: &[TokenLogprob]) -> Value {
    let content: Vec<Value> = lp
        .iter()
        .map(|t| {
            json!({
                "token": token_text(&t.bytes),
                "logprob": t.logprob,
                "bytes": t.bytes,
                "top_logprobs": t.top.iter().map(|(b, l)| json!({
                    "token": token_text(b), "logprob": l, "bytes": b
                })).collect::<Vec<_>>(),
            })
        })
        .collect();
    json!({"content": content, "refusal": null})
}

fn completion_logprobs(lp: &[TokenLogprob]) -> Value {
    let mut offset = 0;
    let mut offsets = Vec::new();
    for t in lp {
        offsets.push(offset);
        offset += token_text(&t.bytes).len();
    }
    json!({
        "tokens": lp.iter().map(|t| token_text(&t.bytes)).collect::<Vec<_>>(),
        "token_logprobs": lp.iter().map(|t| t.logprob).collect::<Vec<_>>(),
        "top_logprobs": lp.iter().map(|t| {
            t.top.iter().map(|(b, l)| (token_text(b), json!(l))).collect::<serde_json::Map<_, _>>()
        }).collect::<Vec<_>>(),
        "text_offset": offsets,
    })
}

fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// A random 64-bit number (ids, seeds).
pub fn random_u64() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos()),
    );
    h.finish()
}

fn new_id(prefix: &str) -> String {
    format!("{prefix}{:016x}{:08x}", random_u64(), random_u64() as u32)
}
