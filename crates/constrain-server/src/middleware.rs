//! What every route goes through before its handler: the API key, a body declared too large,
//! and counting the answer (with the log line of a request refused before it reached the
//! model).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

use axum::extract::{MatchedPath, Request, State};
use axum::http::{header, HeaderMap};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::error::ApiError;
use crate::request_log;
use crate::state::AppState;

/// Refuses requests without the API key (every route but `/health` and `/inspect`), and counts
/// answers.
/// Also writes the log line of an error answered before the request reached the model.
pub async fn guard(
    State(state): State<Arc<AppState>>,
    mut request: Request,
    next: Next,
) -> Response {
    let arrived = Instant::now();
    let route = request
        .extensions()
        .get::<MatchedPath>()
        .map_or_else(|| "unmatched".to_string(), |p| p.as_str().to_string());
    let queued = Queued::default();
    request.extensions_mut().insert(queued.clone());
    // The health check and the inspector's page (static; the page's own requests carry the
    // key) need none.
    let open = route == "/health" || route == "/inspect";
    let response = if !open && !authorized(&state, request.headers()) {
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
    if status >= 400 && !queued.is_set() {
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

/// Set once a request is queued: its log line is then its [`request_log::RequestLog`]'s, not
/// the guard's.
#[derive(Clone, Default)]
pub struct Queued(Arc<AtomicBool>);

impl Queued {
    /// The request reached the queue.
    pub fn set(&self) {
        self.0.store(true, Ordering::Relaxed);
    }

    /// Whether the request reached the queue.
    pub fn is_set(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }
}

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
