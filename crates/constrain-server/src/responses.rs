//! `POST /v1/responses`, OpenAI's Responses API, over the chat route's machinery: the request
//! is read as a chat request ([`request`]), planned and run as one, and its answer rendered as
//! a `response` object or the Responses API's typed events ([`output`]). Responses are kept
//! for `previous_response_id` within a memory budget ([`crate::response_store`]).
//!
//! Reading the request as a chat request keeps one path for prompts, constraints and tool
//! calls: `text.format` is enforced as `response_format` is, a function tool's arguments as a
//! chat tool's, and a field the server cannot honour is refused by its Responses name.

pub mod output;
pub mod request;

use std::convert::Infallible;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::Json;
use futures_util::StreamExt;
use serde_json::{json, Value};
use tokio::sync::mpsc;

use crate::api::Message;
use crate::engine::{Done, Event, Finish};
use crate::error::ApiError;
use crate::output::OutputReader;
use crate::plan::{self, Kind, Plan};
use crate::reply::{new_id, unix_now};
use crate::request_log::{Admission, RequestLog};
use crate::state::AppState;

pub use self::output::Item;
pub use self::request::{rename_error, ResponsesRequest};

/// A Responses request, planned as a chat job, with what its answer echoes and stores.
pub struct Turn {
    /// The chat job's plan.
    pub plan: Plan,
    /// The request's fields a `response` object repeats (`instructions`, `tools`, `text`...).
    echo: Value,
    /// The conversation to store with the output, when the response is stored.
    keep: Option<Vec<Message>>,
}

/// Plans `request`: its conversation (after the stored one it continues), its tools and
/// format, as the chat route plans them.
pub fn plan(state: &AppState, request: &ResponsesRequest) -> Result<Turn, ApiError> {
    let history = match &request.previous_response_id {
        Some(id) => previous(state, id)?,
        None => Arc::new(Vec::new()),
    };
    if request.store == Some(true) && !state.responses.enabled() {
        return Err(ApiError::invalid_param(
            "store",
            "store: true, but this server keeps no responses (--responses-store-bytes 0); \
             send store: false",
        ));
    }
    let reading = request::read(request, &history)?;
    let plan = plan::chat(state, &reading.chat).map_err(rename_error)?;
    let store = request.store.unwrap_or(true) && state.responses.enabled();
    let defaults = &state.options.sampling;
    let echo = json!({
        "instructions": request.instructions,
        "max_output_tokens": request.max_output_tokens,
        "metadata": request.metadata.clone().unwrap_or_else(|| json!({})),
        "parallel_tool_calls": request.parallel_tool_calls.unwrap_or(true),
        "previous_response_id": request.previous_response_id,
        "store": store,
        "temperature": request.sampling.temperature.unwrap_or(defaults.temperature),
        "top_p": request.sampling.top_p.unwrap_or(defaults.top_p),
        "text": {"format": request.text.as_ref().and_then(|t| t.format.clone())
            .filter(|f| !f.is_null()).unwrap_or_else(|| json!({"type": "text"}))},
        "tool_choice": request.tool_choice.clone().unwrap_or_else(|| json!("auto")),
        "tools": request.tools.clone().unwrap_or_default(),
        "truncation": "disabled",
    });
    Ok(Turn {
        plan,
        echo,
        keep: store.then_some(reading.conversation),
    })
}

/// The stored conversation of response `id`, or a 400 naming `previous_response_id`.
fn previous(state: &AppState, id: &str) -> Result<Arc<Vec<Message>>, ApiError> {
    state.responses.get(id).ok_or_else(|| {
        let why = if state.responses.enabled() {
            "it was not stored (store: false), was dropped for newer ones \
             (--responses-store-bytes), or the server restarted since"
        } else {
            "this server keeps no responses (--responses-store-bytes 0)"
        };
        ApiError::invalid_param(
            "previous_response_id",
            format!(
                "previous_response_id {id:?} is not a stored response: {why}; send the whole \
                 conversation as input instead"
            ),
        )
        .with_code("previous_response_not_found")
    })
}

/// Answers a queued turn from its job's `events`: a `response` object, or its events when the
/// request streams. `prepared` is the compiled constraint's report; `admitted` is set when
/// the job leaves the queue.
pub async fn answer(
    state: Arc<AppState>,
    turn: Turn,
    events: mpsc::UnboundedReceiver<Event>,
    prepared: plan::Prepared,
    admitted: Arc<OnceLock<Instant>>,
    arrived: Instant,
) -> Result<Response, ApiError> {
    let reply = Reply::new(
        state,
        turn,
        prepared.info,
        prepared.compiled_in,
        admitted,
        arrived,
    );
    if reply.stream {
        Ok(reply.stream(events))
    } else {
        reply.whole(events).await
    }
}

/// Builds the answer of one Responses request from its job's events.
struct Reply {
    state: Arc<AppState>,
    /// Written when the reply is dropped: complete, failed or abandoned.
    log: RequestLog,
    id: String,
    created_at: u64,
    echo: Value,
    keep: Option<Vec<Message>>,
    prompt_tokens: usize,
    /// The format of the calls read from the answer (`None`: no tools).
    format: Option<constrain::ToolCallFormat>,
    /// Whether the answer starts with the model's thinking.
    reasoning: bool,
    stream: bool,
    constraint_info: Value,
    arrived: Instant,
}

impl Reply {
    fn new(
        state: Arc<AppState>,
        turn: Turn,
        constraint_info: Value,
        compiled_in: Option<Duration>,
        admitted: Arc<OnceLock<Instant>>,
        arrived: Instant,
    ) -> Reply {
        let id = new_id("resp_");
        let plan = &turn.plan;
        let format = state.tool_format().clone();
        Reply {
            log: RequestLog::new(
                id.clone(),
                Admission {
                    route: "/v1/responses",
                    arrived,
                    prompt_tokens: plan.prompt.len(),
                    n: plan.n,
                    compiled_in,
                    admitted,
                },
            ),
            state,
            id,
            created_at: unix_now(),
            prompt_tokens: plan.prompt.len(),
            format: matches!(
                plan.kind,
                Kind::Chat {
                    tools_active: true,
                    ..
                }
            )
            .then_some(format),
            reasoning: matches!(
                plan.kind,
                Kind::Chat {
                    reasoning: true,
                    ..
                }
            ),
            stream: plan.stream,
            echo: turn.echo,
            keep: turn.keep,
            constraint_info,
            arrived,
        }
    }

    /// The `response` object: `status`, its `output`, and `usage` once the answer is done.
    fn body(&self, status: &str, output: &[Item], done: Option<&Done>) -> Value {
        let mut body = json!({
            "id": self.id,
            "object": "response",
            "created_at": self.created_at,
            "status": status,
            "error": null,
            "incomplete_details": null,
            "model": self.state.model_id,
            "output": output.iter().map(Item::to_json).collect::<Vec<_>>(),
            "usage": null,
        });
        if let (Some(fields), Some(echo)) = (body.as_object_mut(), self.echo.as_object()) {
            fields.extend(echo.clone());
        }
        if let Some(done) = done {
            body["usage"] = json!({
                "input_tokens": self.prompt_tokens,
                "input_tokens_details": {"cached_tokens": 0},
                "output_tokens": done.completion_tokens,
                "output_tokens_details": {"reasoning_tokens": 0},
                "total_tokens": self.prompt_tokens + done.completion_tokens,
            });
            if done.finish == Finish::Length {
                body["incomplete_details"] = json!({"reason": "max_output_tokens"});
            }
        }
        if !self.constraint_info.is_null() {
            body["constraint"] = self.constraint_info.clone();
        }
        body
    }

    fn first_text(&self, text: &str, first: &mut bool) {
        if *first && !text.is_empty() {
            *first = false;
            self.state.metrics.add_ttft(self.arrived.elapsed());
            self.log.first_text();
        }
    }

    /// Keeps the conversation with its output, when the response is stored.
    fn store(&mut self, output: &[Item]) {
        if let Some(mut conversation) = self.keep.take() {
            conversation.push(output::as_message(output));
            self.state.responses.put(self.id.clone(), conversation);
        }
    }

    /// Waits for the answer, then answers the whole `response`.
    async fn whole(mut self, mut rx: mpsc::UnboundedReceiver<Event>) -> Result<Response, ApiError> {
        let mut first = true;
        let done = loop {
            match rx.recv().await {
                Some(Event::Delta { text, .. }) => self.first_text(&text, &mut first),
                Some(Event::Done(done)) => break done,
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
        };
        self.log.ok(done.completion_tokens);
        let cut = done.finish == Finish::Length;
        let output = output::items(&done.text, self.format.as_ref(), self.reasoning, cut);
        self.store(&output);
        let status = if cut { "incomplete" } else { "completed" };
        Ok(Json(self.body(status, &output, Some(&done))).into_response())
    }

    /// Streams the answer as typed server-sent events (`event: <type>` and its data), from
    /// `response.created` to `response.completed` (or `response.incomplete`, or
    /// `response.failed` after an `error` event).
    fn stream(mut self, mut rx: mpsc::UnboundedReceiver<Event>) -> Response {
        let (out, out_rx) = mpsc::channel::<Value>(64);
        tokio::spawn(async move {
            let mut writer = output::Writer::new();
            let mut streamer = OutputReader::new(self.format.as_ref(), self.reasoning);
            let mut first = true;
            let created = self.body("in_progress", &[], None);
            let mut events = vec![
                writer.event("response.created", json!({"response": created})),
                writer.event("response.in_progress", json!({"response": created})),
            ];
            loop {
                for event in events.drain(..) {
                    if out.send(event).await.is_err() {
                        // The client went away: dropping `rx` stops the job.
                        return;
                    }
                }
                match rx.recv().await {
                    Some(Event::Delta { text, .. }) => {
                        self.first_text(&text, &mut first);
                        streamer
                            .push(&text)
                            .into_iter()
                            .for_each(|p| events.extend(writer.push(p)));
                    }
                    Some(Event::Done(done)) => {
                        streamer
                            .finish()
                            .into_iter()
                            .for_each(|p| events.extend(writer.push(p)));
                        let cut = done.finish == Finish::Length;
                        events.extend(writer.finish(cut));
                        self.store(writer.output());
                        let (status, kind) = if cut {
                            ("incomplete", "response.incomplete")
                        } else {
                            ("completed", "response.completed")
                        };
                        let body = self.body(status, writer.output(), Some(&done));
                        events.push(writer.event(kind, json!({"response": body})));
                        self.log.ok(done.completion_tokens);
                        break;
                    }
                    Some(Event::Failed(e)) => {
                        self.log.failed(e.status.as_u16());
                        events.extend(self.failed(&mut writer, &e));
                        break;
                    }
                    None => {
                        self.log.failed(500);
                        let e = ApiError::internal(
                            "the scheduler stopped before the answer was complete",
                        );
                        events.extend(self.failed(&mut writer, &e));
                        break;
                    }
                }
            }
            for event in events {
                if out.send(event).await.is_err() {
                    return;
                }
            }
        });
        let stream = tokio_stream::wrappers::ReceiverStream::new(out_rx).map(|event| {
            let kind = event["type"].as_str().unwrap_or("message").to_string();
            Ok::<_, Infallible>(SseEvent::default().event(kind).data(event.to_string()))
        });
        Sse::new(stream)
            .keep_alive(KeepAlive::default())
            .into_response()
    }

    /// The events of an answer that failed: OpenAI's `error` event, then `response.failed`.
    fn failed(&self, writer: &mut output::Writer, e: &ApiError) -> Vec<Value> {
        let error = writer.event(
            "error",
            json!({"code": e.code, "message": e.message, "param": e.param}),
        );
        let mut body = self.body("failed", writer.output(), None);
        body["error"] = json!({"code": e.code.unwrap_or("server_error"), "message": e.message});
        vec![
            error,
            writer.event("response.failed", json!({"response": body})),
        ]
    }
}
