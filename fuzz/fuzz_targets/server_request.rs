//! The `server_request` target: request bodies sent to `constrain serve`'s chat and text
//! completion routes, answered in process by the real router over the real default model.
//!
//! Every answer must be one an OpenAI client can read: no 500 (an error the server did not
//! foresee is a bug), an error body that is an OpenAI error object, a completion with the
//! choices asked for, a stream of JSON events ending in `[DONE]`, and an output that follows
//! its constraint whenever it finished on its own. A panic in a handler fails the call here;
//! a panic in the scheduler thread leaves later requests unanswered, which libFuzzer reports
//! as a timeout.
//!
//! Input layout: a mode byte (bit 0: the text completion route; bit 1: build the body from the
//! rest with `arbitrary`, else send the rest as it is). The built bodies mix well-formed and
//! out-of-range fields: messages, a JSON Schema from the keyword vocabulary, a regex, sampling
//! settings at and past their bounds, tools and tool choices, `n`, logprobs, streaming.
//!
//! The model is `$CONSTRAIN_FUZZ_MODEL` or the cached default model. Each request is bounded:
//! 64 tokens a slot, [`constrain_fuzz::COMPILE_TIME`] to compile, 3 s in all (504 past it);
//! run with `-timeout=10`.

#![no_main]

use std::path::PathBuf;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use arbitrary::{Arbitrary, Unstructured};
use axum::body::Body;
use axum::http::{header, Request, StatusCode};
use constrain_server::{router, AppState, ServerOptions};
use http_body_util::BodyExt;
use serde_json::{json, Map, Value};
use tower::ServiceExt;

struct App {
    runtime: tokio::runtime::Runtime,
    router: axum::Router,
}

fn app() -> &'static App {
    static APP: OnceLock<App> = OnceLock::new();
    APP.get_or_init(|| {
        let model = std::env::var_os("CONSTRAIN_FUZZ_MODEL")
            .map(PathBuf::from)
            .unwrap_or_else(|| {
                let home = std::env::var_os("HOME").unwrap_or_default();
                PathBuf::from(home).join(".cache/constrain/gemma-3-270m-q4_k_m.gguf")
            });
        let mut options = ServerOptions::new(model);
        options.parallel = 2;
        // One thread for the model: the fuzzer's own work is on the other core.
        options.threads = Some(1);
        options.ctx_size = 64;
        options.default_max_tokens = 8;
        options.max_n = 2;
        options.request_timeout = Duration::from_secs(3);
        options.compile_timeout = constrain_fuzz::COMPILE_TIME;
        options.limits = constrain_fuzz::limits();
        options.max_body_bytes = 1 << 16;
        options.grammar_cache = 64;
        let state = AppState::new(options).expect("the default model loads ($CONSTRAIN_FUZZ_MODEL)");
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .expect("a tokio runtime");
        App {
            runtime,
            router: router(Arc::new(state)),
        }
    })
}

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    let chat = mode & 1 == 0;
    let (body, constraint) = if mode & 2 != 0 {
        let mut u = Unstructured::new(rest);
        let Ok((body, constraint)) = built_body(&mut u, chat) else {
            return;
        };
        (serde_json::to_vec(&body).expect("a JSON value serializes"), constraint)
    } else {
        (rest.to_vec(), None)
    };
    let route = if chat {
        "/v1/chat/completions"
    } else {
        "/v1/completions"
    };
    let app = app();
    let (status, stream, bytes) = app.runtime.block_on(async {
        let request = Request::post(route)
            .header(header::CONTENT_TYPE, "application/json")
            .body(Body::from(body))
            .expect("a well-formed request");
        let response = app
            .router
            .clone()
            .oneshot(request)
            .await
            .expect("the router's error type is Infallible");
        let status = response.status();
        let stream = response
            .headers()
            .get(header::CONTENT_TYPE)
            .is_some_and(|v| v.as_bytes().starts_with(b"text/event-stream"));
        let bytes = response
            .into_body()
            .collect()
            .await
            .map(|b| b.to_bytes().to_vec())
            .unwrap_or_default();
        (status, stream, bytes)
    });
    check(status, stream, &bytes, chat, constraint.as_ref());
});

/// The answer's invariants; panics (a finding) on the first one broken.
fn check(status: StatusCode, stream: bool, bytes: &[u8], chat: bool, constraint: Option<&Value>) {
    let text = String::from_utf8_lossy(bytes);
    assert_ne!(status, StatusCode::INTERNAL_SERVER_ERROR, "500: {text}");
    if !status.is_success() {
        let body: Value = serde_json::from_slice(bytes)
            .unwrap_or_else(|e| panic!("status {status}: the error body is not JSON ({e}): {text}"));
        assert_error_object(&body, &text);
        return;
    }
    if stream {
        let events: Vec<&str> = text
            .lines()
            .filter_map(|l| l.strip_prefix("data: "))
            .collect();
        assert_eq!(events.last(), Some(&"[DONE]"), "a stream ends in [DONE]: {text}");
        for event in &events[..events.len() - 1] {
            let value: Value = serde_json::from_str(event)
                .unwrap_or_else(|e| panic!("a stream event is not JSON ({e}): {event}"));
            if value.get("error").is_some() {
                assert_error_object(&value, event);
            }
        }
        return;
    }
    let body: Value = serde_json::from_slice(bytes)
        .unwrap_or_else(|e| panic!("200: the body is not JSON ({e}): {text}"));
    let choices = body["choices"]
        .as_array()
        .unwrap_or_else(|| panic!("200 without choices: {text}"));
    assert!(!choices.is_empty(), "200 with no choice: {text}");
    let Some(schema) = constraint else {
        return;
    };
    for choice in choices {
        let content = if chat {
            &choice["message"]["content"]
        } else {
            &choice["text"]
        };
        let (Some(content), Some("stop")) = (content.as_str(), choice["finish_reason"].as_str())
        else {
            continue;
        };
        let value: Value = serde_json::from_str(content)
            .unwrap_or_else(|e| panic!("a finished constrained output is not JSON ({e}): {content:?}"));
        if let Ok(validator) = jsonschema::validator_for(schema) {
            assert!(
                validator.is_valid(&value),
                "a finished output does not follow its schema {schema}: {content}"
            );
        }
    }
}

fn assert_error_object(body: &Value, text: &str) {
    let error = &body["error"];
    assert!(
        error["message"].is_string() && error["type"].is_string(),
        "not an OpenAI error object: {text}"
    );
}

/// A request body from the keyword vocabulary of the API; also the JSON Schema every output
/// that finishes on its own must follow (none with tools or stop strings).
fn built_body(
    u: &mut Unstructured<'_>,
    chat: bool,
) -> arbitrary::Result<(Value, Option<Value>)> {
    let mut body = Map::new();
    let text = |u: &mut Unstructured<'_>| -> arbitrary::Result<String> {
        Ok(String::arbitrary(u)?.chars().take(40).collect())
    };
    if chat {
        let mut messages = Vec::new();
        for _ in 0..u.int_in_range(0..=3)? {
            let role = *u.choose(&["system", "user", "assistant", "tool", "developer", "wizard"])?;
            let content = if u.ratio(1, 8)? {
                json!([{"type": "text", "text": text(u)?}])
            } else {
                Value::String(text(u)?)
            };
            messages.push(json!({"role": role, "content": content}));
        }
        body.insert("messages".into(), Value::Array(messages));
    } else {
        body.insert("prompt".into(), Value::String(text(u)?));
    }
    let mut schema = None;
    match u.int_in_range(0..=5)? {
        0 => {
            let s = constrain_fuzz::small_schema(u, 0)?;
            schema = Some(s.clone());
            let strict = bool::arbitrary(u)?;
            body.insert(
                "response_format".into(),
                json!({"type": "json_schema", "json_schema": {"name": "s", "strict": strict, "schema": s}}),
            );
        }
        1 => {
            body.insert("response_format".into(), json!({"type": "json_object"}));
            schema = Some(json!({"type": "object"}));
        }
        2 => {
            body.insert(
                "regex".into(),
                Value::String(constrain_fuzz::small_regex(u, 0)?),
            );
        }
        3 => {
            let s = constrain_fuzz::small_schema(u, 0)?;
            schema = Some(s.clone());
            body.insert("json_schema".into(), s);
        }
        4 => {
            body.insert("grammar".into(), Value::String(text(u)?));
        }
        _ => {}
    }
    const NUMBERS: &[f64] = &[-1.0, 0.0, 0.1, 0.5, 1.0, 1.5, 2.0, 2.5, 100.0, 1e39, -1e39];
    for (name, p) in [
        ("temperature", 2),
        ("top_p", 3),
        ("min_p", 4),
        ("typical_p", 4),
        ("frequency_penalty", 4),
        ("presence_penalty", 4),
        ("repeat_penalty", 4),
    ] {
        if u.ratio(1, p)? {
            body.insert(name.into(), json!(*u.choose(NUMBERS)?));
        }
    }
    for (name, range) in [
        ("max_tokens", -2..=80),
        ("n", -1..=4),
        ("top_k", -1..=50),
        ("seed", -5..=5),
    ] {
        if u.ratio(1, 2)? {
            body.insert(name.into(), json!(u.int_in_range(range)?));
        }
    }
    if u.ratio(1, 4)? {
        let stops: Vec<String> = (0..u.int_in_range(0..=3)?)
            .map(|_| text(u))
            .collect::<arbitrary::Result<_>>()?;
        body.insert("stop".into(), json!(stops));
        // An output cut at a stop string finishes with "stop" but need not be complete.
        schema = None;
    }
    if u.ratio(1, 4)? {
        let mut bias = Map::new();
        for _ in 0..u.int_in_range(0..=3)? {
            let id = *u.choose(&["0", "1", "106", "262143", "262144", "-1", "x"])?;
            bias.insert(id.into(), json!(*u.choose(&[-100.0, -1.0, 0.0, 5.0, 100.0, 101.0])?));
        }
        body.insert("logit_bias".into(), Value::Object(bias));
    }
    if u.ratio(1, 4)? {
        if chat {
            body.insert("logprobs".into(), json!(true));
            body.insert("top_logprobs".into(), json!(u.int_in_range(0..=25)?));
        } else {
            body.insert("logprobs".into(), json!(u.int_in_range(0..=6)?));
        }
    }
    if u.ratio(1, 3)? {
        body.insert("stream".into(), json!(true));
        if bool::arbitrary(u)? {
            body.insert("stream_options".into(), json!({"include_usage": true}));
        }
    }
    if chat && u.ratio(1, 3)? {
        schema = None;
        let tools: Vec<Value> = (0..u.int_in_range(0..=2)?)
            .map(|i| {
                Ok(json!({"type": "function", "function": {
                    "name": format!("f{i}"),
                    "parameters": constrain_fuzz::small_schema(u, 0)?,
                }}))
            })
            .collect::<arbitrary::Result<_>>()?;
        body.insert("tools".into(), Value::Array(tools));
        let choice = match u.int_in_range(0..=4)? {
            0 => json!("auto"),
            1 => json!("none"),
            2 => json!("required"),
            3 => json!({"type": "function", "function": {"name": "f0"}}),
            _ => json!({"type": "function", "function": {"name": "missing"}}),
        };
        body.insert("tool_choice".into(), choice);
        body.insert("parallel_tool_calls".into(), json!(bool::arbitrary(u)?));
    }
    Ok((Value::Object(body), schema))
}
