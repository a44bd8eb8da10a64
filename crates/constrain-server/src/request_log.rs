//! One structured line on stderr per request: JSON with the request's id, route, timings,
//! tokens and outcome, so a log collector can follow the server without scraping `/metrics`.
//! The timings split a request's time where it goes: compiling its constraint (`compile_ms`,
//! null when the grammar came from the cache), waiting for a slot (`queue_ms`), then
//! generating (`ttft_ms` from arrival to the first text, `total_ms` to the end).
//!
//! A request that reached the model logs when its answer is complete, when it fails, or when
//! its client goes away (the line is written when the answer is dropped, whichever way it
//! ends). A request refused before that (bad body, bad key, full queue) logs from the guard,
//! with its status.

use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use serde_json::json;

/// The log of one generation request; writes its line when dropped.
pub struct RequestLog {
    id: String,
    route: &'static str,
    arrived: Instant,
    prompt_tokens: usize,
    n: usize,
    /// Compile time of the constraint; `None`: none, or taken from the cache.
    compiled_in: Option<Duration>,
    /// Set by the scheduler when the request's first sequence takes a slot.
    admitted: Arc<OnceLock<Instant>>,
    state: Mutex<LogState>,
}

/// What a request's log line says about it before generation starts.
pub struct Admission {
    /// The route.
    pub route: &'static str,
    /// When the request arrived.
    pub arrived: Instant,
    /// Prompt tokens.
    pub prompt_tokens: usize,
    /// Choices asked for.
    pub n: usize,
    /// Compile time of the constraint (`None`: no constraint, or a cached one).
    pub compiled_in: Option<Duration>,
    /// Shared with the job, set when it leaves the queue.
    pub admitted: Arc<OnceLock<Instant>>,
}

struct LogState {
    first_text: Option<Duration>,
    completion_tokens: usize,
    /// `ok`, `error` or `cancelled` (the default: nothing said otherwise before the drop).
    outcome: &'static str,
    status: u16,
}

impl RequestLog {
    /// A request that was queued.
    pub fn new(id: String, admission: Admission) -> RequestLog {
        RequestLog {
            id,
            route: admission.route,
            arrived: admission.arrived,
            prompt_tokens: admission.prompt_tokens,
            n: admission.n,
            compiled_in: admission.compiled_in,
            admitted: admission.admitted,
            state: Mutex::new(LogState {
                first_text: None,
                completion_tokens: 0,
                outcome: "cancelled",
                status: 499,
            }),
        }
    }

    /// The first text reached the client's side.
    pub fn first_text(&self) {
        let mut state = self.state.lock();
        if state.first_text.is_none() {
            state.first_text = Some(self.arrived.elapsed());
        }
    }

    /// The answer is complete.
    pub fn ok(&self, completion_tokens: usize) {
        let mut state = self.state.lock();
        state.completion_tokens = completion_tokens;
        state.outcome = "ok";
        state.status = 200;
    }

    /// The request failed with `status` after it was queued.
    pub fn failed(&self, status: u16) {
        let mut state = self.state.lock();
        state.outcome = "error";
        state.status = status;
    }
}

impl Drop for RequestLog {
    fn drop(&mut self) {
        let state = self.state.lock();
        let ms = |d: Duration| (d.as_secs_f64() * 1e4).round() / 10.0;
        let line = json!({
            "event": "request",
            "id": self.id,
            "route": self.route,
            "outcome": state.outcome,
            "status": state.status,
            "n": self.n,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": state.completion_tokens,
            "compile_ms": self.compiled_in.map(ms),
            "queue_ms": self.admitted.get().map(|t| ms(t.duration_since(self.arrived))),
            "ttft_ms": state.first_text.map(ms),
            "total_ms": ms(self.arrived.elapsed()),
        });
        eprintln!("{line}");
    }
}

/// The line of a request answered with an error before it reached the model.
pub fn rejected(route: &str, status: u16, took: Duration) {
    let line = json!({
        "event": "request",
        "id": null,
        "route": route,
        "outcome": "rejected",
        "status": status,
        "total_ms": (took.as_secs_f64() * 1e4).round() / 10.0,
    });
    eprintln!("{line}");
}
