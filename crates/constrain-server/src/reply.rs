//! A job's events turned into OpenAI's responses: a whole `chat.completion` /
//! `text_completion` body, or server-sent events (`data: {chunk}` per piece of text or tool
//! call, one chunk per finished choice, `usage` last when asked, then `data: [DONE]`); and the
//! small bodies of `/health` and `/v1/models`.
//!
//! `finish_reason` says how each choice ended: `tool_calls` when it made calls and ended on its
//! own, `stop` when it ended on its own (a constrained output the token budget completed ends
//! this way too), `length` only when the output was cut.

use std::convert::Infallible;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::Json;
use futures_util::StreamExt;
use serde_json::{json, Value};
use tokio::sync::mpsc;

use crate::engine::{Done, Event, Finish, TokenLogprob};
use crate::error::ApiError;
use crate::output::{self, OutputReader, Piece};
use crate::plan::{random_u64, Kind, Plan};
use crate::request_log::{Admission, RequestLog};
use crate::state::AppState;
use constrain::CallPiece;
use constrain::StepTrace;

/// Reported as `system_fingerprint`.
pub const FINGERPRINT: &str = concat!("constrain-", env!("CARGO_PKG_VERSION"));

/// `GET /health`'s body.
pub fn health(state: &AppState) -> Value {
    json!({
        "status": "ok",
        "model": state.model_id,
        "queue": state.metrics.queued.load(std::sync::atomic::Ordering::Relaxed),
        "active": state.metrics.active.load(std::sync::atomic::Ordering::Relaxed),
    })
}

/// `GET /v1/models`'s body: the one model served.
pub fn models(state: &AppState) -> Value {
    json!({
        "object": "list",
        "data": [{
            "id": state.model_id,
            "object": "model",
            "created": state.started,
            "owned_by": "constrain",
        }]
    })
}

/// Builds the answer of one request from its job's events.
pub struct Reply {
    state: Arc<AppState>,
    /// Written when the reply is dropped: complete, failed or abandoned.
    log: RequestLog,
    id: String,
    created: u64,
    n: usize,
    kind: Kind,
    prompt_tokens: usize,
    logprobs: bool,
    /// Whether choices carry their tokens' trace.
    trace: bool,
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
    /// The reply to `plan`'s job, queued: `info` is the response's `constraint` field,
    /// `compiled_in` and `admitted` go to the request's log line, written when the reply ends
    /// (complete, failed or abandoned).
    pub fn new(
        state: Arc<AppState>,
        plan: &Plan,
        info: Value,
        compiled_in: Option<Duration>,
        admitted: Arc<OnceLock<Instant>>,
        arrived: Instant,
    ) -> Reply {
        let (prefix, route) = match plan.kind {
            Kind::Chat { .. } => ("chatcmpl-", "/v1/chat/completions"),
            Kind::Completion => ("cmpl-", "/v1/completions"),
        };
        let id = new_id(prefix);
        Reply {
            state,
            log: RequestLog::new(
                id.clone(),
                Admission {
                    route,
                    arrived,
                    prompt_tokens: plan.prompt.len(),
                    n: plan.n,
                    compiled_in,
                    admitted,
                },
            ),
            id,
            created: unix_now(),
            n: plan.n,
            kind: plan.kind,
            prompt_tokens: plan.prompt.len(),
            logprobs: plan.params.logprobs.is_some(),
            trace: plan.params.trace.is_some(),
            lookup: plan.params.lookup > 0,
            constraint_info: info,
            arrived,
        }
    }

    /// Answers from the job's events: whole, or streamed when the plan asked for it.
    pub async fn send(
        self,
        rx: mpsc::UnboundedReceiver<Event>,
        stream: bool,
        include_usage: bool,
    ) -> Result<Response, ApiError> {
        if stream {
            Ok(self.stream(rx, include_usage))
        } else {
            self.whole(rx).await
        }
    }

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
            "system_fingerprint": FINGERPRINT,
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
        let mut traces: Vec<Vec<StepTrace>> = vec![Vec::new(); self.n];
        let mut first = true;
        while done.iter().any(Option::is_none) {
            match rx.recv().await {
                Some(Event::Delta {
                    index,
                    logprobs: lp,
                    text,
                    trace,
                }) => {
                    if first && !text.is_empty() {
                        first = false;
                        self.state.metrics.add_ttft(self.arrived.elapsed());
                        self.log.first_text();
                    }
                    logprobs[index].extend(lp);
                    traces[index].extend(trace);
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
            .zip(&traces)
            .map(|((d, lp), trace)| {
                let mut choice = self.choice(d, lp);
                if self.trace {
                    choice["trace"] = json!(trace);
                }
                choice
            })
            .collect();
        let mut body = self.envelope(false, Value::Array(choices));
        body["usage"] = self.usage(&counts);
        Ok(Json(body).into_response())
    }

    fn choice(&self, d: &Done, lp: &[TokenLogprob]) -> Value {
        match self.kind {
            Kind::Chat {
                tools_active,
                reasoning,
            } => {
                let format = tools_active.then(|| self.state.tool_format());
                let output::Read {
                    reasoning: thought,
                    content,
                    calls,
                } = output::read(&d.text, format, reasoning);
                let mut message = json!({"role": "assistant", "content": content, "refusal": null});
                if let Some(thought) = thought {
                    message["reasoning_content"] = json!(thought);
                }
                let mut finish = finish_name(d.finish);
                if !calls.is_empty() {
                    let calls: Vec<Value> = calls
                        .iter()
                        .map(|c| {
                            if c.text_input {
                                json!({"id": new_id("call_"), "type": "custom",
                                       "custom": {"name": c.name, "input": c.arguments}})
                            } else {
                                json!({"id": new_id("call_"), "type": "function",
                                       "function": {"name": c.name, "arguments": c.arguments}})
                            }
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

    /// A reader of one choice's text: thinking, content and calls for a chat answer.
    fn reader(&self) -> OutputReader {
        match self.kind {
            Kind::Chat {
                tools_active,
                reasoning,
            } => OutputReader::new(tools_active.then(|| self.state.tool_format()), reasoning),
            Kind::Completion => OutputReader::new(None, false),
        }
    }

    /// Streams server-sent events as the sequences generate.
    fn stream(self, mut rx: mpsc::UnboundedReceiver<Event>, include_usage: bool) -> Response {
        let (out, out_rx) = mpsc::channel::<String>(64);
        tokio::spawn(async move {
            let mut readers: Vec<OutputReader> = (0..self.n).map(|_| self.reader()).collect();
            // Per choice, whether each call so far is a custom tool's.
            let mut call_ids: Vec<Vec<bool>> = vec![Vec::new(); self.n];
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
                        trace,
                    }) => {
                        if first && !text.is_empty() {
                            first = false;
                            self.state.metrics.add_ttft(self.arrived.elapsed());
                            self.log.first_text();
                        }
                        let mut chunks = self.delta_chunks(
                            index,
                            &text,
                            &logprobs,
                            &mut readers[index],
                            &mut call_ids[index],
                        );
                        if self.trace && !trace.is_empty() {
                            self.attach_trace(&mut chunks, index, &trace);
                        }
                        chunks
                    }
                    Some(Event::Done(d)) => {
                        remaining -= 1;
                        counts.add(&d);
                        let mut chunks = Vec::new();
                        if let Kind::Chat { .. } = self.kind {
                            let pieces = readers[d.index].finish();
                            chunks.extend(self.pieces_chunks(
                                d.index,
                                pieces,
                                &[],
                                &mut call_ids[d.index],
                            ));
                        }
                        let finish =
                            if readers[d.index].calls_started() > 0 && d.finish == Finish::Stop {
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
        reader: &mut OutputReader,
        ids: &mut Vec<bool>,
    ) -> Vec<Value> {
        match self.kind {
            Kind::Completion => {
                vec![self.envelope(true, json!([{"index": index, "text": text,
                    "logprobs": self.logprobs.then(|| completion_logprobs(logprobs)), "finish_reason": null}]))]
            }
            Kind::Chat { .. } => {
                let pieces = reader.push(text);
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

    /// Puts the trace of a delta's tokens on its first chunk, or on a chunk of its own when
    /// the tokens brought no text to send yet.
    fn attach_trace(&self, chunks: &mut Vec<Value>, index: usize, trace: &[StepTrace]) {
        match chunks.first_mut() {
            Some(chunk) => chunk["choices"][0]["trace"] = json!(trace),
            None => {
                let delta = match self.kind {
                    Kind::Chat { .. } => json!({"index": index, "delta": {}, "logprobs": null,
                        "finish_reason": null, "trace": trace}),
                    Kind::Completion => json!({"index": index, "text": "", "logprobs": null,
                        "finish_reason": null, "trace": trace}),
                };
                chunks.push(self.envelope(true, json!([delta])));
            }
        }
    }

    fn pieces_chunks(
        &self,
        index: usize,
        pieces: Vec<Piece>,
        logprobs: &[TokenLogprob],
        ids: &mut Vec<bool>,
    ) -> Vec<Value> {
        let mut out = Vec::new();
        let mut lp = Some(logprobs).filter(|l| self.logprobs && !l.is_empty());
        for piece in pieces {
            let delta = match piece {
                Piece::Reasoning(r) => json!({"reasoning_content": r}),
                Piece::Answer(CallPiece::Content(c)) => json!({"content": c}),
                Piece::Answer(CallPiece::CallStart {
                    index: call,
                    name,
                    text_input,
                }) => {
                    ids.push(text_input);
                    let id = new_id("call_");
                    if text_input {
                        json!({"tool_calls": [{"index": call, "id": id, "type": "custom",
                                               "custom": {"name": name, "input": ""}}]})
                    } else {
                        json!({"tool_calls": [{"index": call, "id": id, "type": "function",
                                               "function": {"name": name, "arguments": ""}}]})
                    }
                }
                Piece::Answer(CallPiece::CallArguments {
                    index: call,
                    fragment,
                }) => {
                    if ids.get(call).copied().unwrap_or(false) {
                        json!({"tool_calls": [{"index": call, "custom": {"input": fragment}}]})
                    } else {
                        json!({"tool_calls": [{"index": call, "function": {"arguments": fragment}}]})
                    }
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

/// Seconds since the Unix epoch (`created` fields).
pub(crate) fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// A random id with `prefix` (`chatcmpl-`, `call_`, `resp_`...).
pub(crate) fn new_id(prefix: &str) -> String {
    format!("{prefix}{:016x}{:08x}", random_u64(), random_u64() as u32)
}
