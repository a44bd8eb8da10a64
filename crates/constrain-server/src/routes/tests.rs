//! The router over a fake model, route by route: status codes, OpenAI error objects, the
//! framing of streamed answers, and constrained outputs that validate. The fake model's logits
//! are a hash of each slot's tokens, so answers are reproducible and no model file is read.

use std::sync::Arc;

use axum::body::Body;
use axum::http::{header, HeaderMap, Method, Request, StatusCode};
use axum::Router;
use constrain::TokenIndex;
use constrain_llama::ChatTemplate;
use constrain_vocab::Vocabulary;
use http_body_util::BodyExt;
use serde_json::{json, Value};
use tower::ServiceExt;

use crate::prompt::Tokenize;
use crate::scheduler::fake::FakeModel;
use crate::state::{AppState, Backend, ServerOptions};

mod responses;

const KEY: &str = "secret";

/// JSON pieces first (as the scheduler's tests have them), then every other printable ASCII
/// character and the newline, so that any ASCII prompt tokenizes.
fn vocabulary() -> Arc<Vocabulary> {
    let mut pieces: Vec<String> = [
        "{", "}", "\"", ":", ",", " ", "a", "b", "c", "0", "1", "2", "\"a", "b\"", "\":", "<eos>",
    ]
    .iter()
    .map(|p| p.to_string())
    .collect();
    for c in (b' '..=b'~').chain([b'\n']) {
        let c = char::from(c).to_string();
        if !pieces.contains(&c) {
            pieces.push(c);
        }
    }
    let refs: Vec<&str> = pieces.iter().map(String::as_str).collect();
    constrain_testdata::pieces_vocabulary(&refs)
}

/// The id of `<eos>` in [`vocabulary`].
const EOS: u32 = 15;

/// Longest match first over the vocabulary's text pieces; refuses what it cannot spell (any
/// non-ASCII character), as a real tokenizer refuses text it cannot read.
struct PieceTokenizer(Arc<Vocabulary>);

impl Tokenize for PieceTokenizer {
    fn tokenize(&self, text: &str) -> Result<Vec<u32>, String> {
        let ids: Vec<u32> = (0..self.0.len() as u32).filter(|&id| id != EOS).collect();
        let mut out = Vec::new();
        let mut rest = text.as_bytes();
        while !rest.is_empty() {
            let best = ids
                .iter()
                .filter_map(|&id| {
                    let bytes = self.0.token_bytes(id)?;
                    rest.starts_with(bytes).then_some((bytes.len(), id))
                })
                .max()
                .ok_or_else(|| format!("no token for the text at {:?}", text.len() - rest.len()))?;
            out.push(best.1);
            rest = &rest[best.0..];
        }
        Ok(out)
    }
}

fn options() -> ServerOptions {
    let mut options = ServerOptions::new("fake-model.gguf".into());
    options.parallel = 2;
    options.ctx_size = 2048;
    options.api_key = Some(KEY.into());
    options.default_max_tokens = 40;
    options
}

fn app_with(options: ServerOptions) -> Router {
    let vocabulary = vocabulary();
    let (slots, room, width) = (
        options.parallel,
        options.ctx_size as usize,
        vocabulary.logits_width(),
    );
    let backend = Backend {
        index: TokenIndex::new(vocabulary.clone()),
        tokenizer: Box::new(PieceTokenizer(vocabulary)),
        template: ChatTemplate::ChatMl,
        open: move || Ok(FakeModel::new(slots, room, width)),
    };
    let state = AppState::with_backend(options, backend).expect("the fake model starts");
    crate::router(Arc::new(state))
}

fn app() -> Router {
    app_with(options())
}

/// An answer: status, headers and body.
struct Answer {
    status: StatusCode,
    headers: HeaderMap,
    body: String,
}

impl Answer {
    fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("{e}: {}", self.body))
    }

    /// The OpenAI error object, checked for its shape.
    fn error(&self) -> Value {
        let body = self.json();
        let error = &body["error"];
        assert!(error["message"].is_string(), "{body}");
        assert!(error["type"].is_string(), "{body}");
        assert!(
            error.get("param").is_some() && error.get("code").is_some(),
            "{body}"
        );
        error.clone()
    }

    /// The server-sent events' data, checked for their framing: every event is one
    /// `data: ...` line and a blank line, the last is `[DONE]`.
    fn events(&self) -> Vec<Value> {
        assert_eq!(self.headers[header::CONTENT_TYPE], "text/event-stream");
        assert!(self.body.ends_with("data: [DONE]\n\n"), "{}", self.body);
        let frames: Vec<&str> = self
            .body
            .strip_suffix("\n\n")
            .unwrap_or(&self.body)
            .split("\n\n")
            .collect();
        assert_eq!(frames.last(), Some(&"data: [DONE]"));
        frames[..frames.len() - 1]
            .iter()
            .map(|frame| {
                let data = frame
                    .strip_prefix("data: ")
                    .unwrap_or_else(|| panic!("not a data event: {frame:?}"));
                assert!(!data.contains('\n'), "{data:?}");
                serde_json::from_str(data).unwrap_or_else(|e| panic!("{e}: {data}"))
            })
            .collect()
    }
}

async fn call(app: &Router, method: Method, path: &str, key: Option<&str>, body: Body) -> Answer {
    let mut request = Request::builder()
        .method(method)
        .uri(path)
        .header(header::CONTENT_TYPE, "application/json");
    if let Some(key) = key {
        request = request.header(header::AUTHORIZATION, format!("Bearer {key}"));
    }
    let response = app
        .clone()
        .oneshot(request.body(body).expect("a request"))
        .await
        .expect("the router answers");
    let status = response.status();
    let headers = response.headers().clone();
    let bytes = response
        .into_body()
        .collect()
        .await
        .expect("a body")
        .to_bytes();
    Answer {
        status,
        headers,
        body: String::from_utf8(bytes.to_vec()).expect("UTF-8"),
    }
}

async fn get(app: &Router, path: &str) -> Answer {
    call(app, Method::GET, path, Some(KEY), Body::empty()).await
}

async fn post(app: &Router, path: &str, body: Value) -> Answer {
    call(
        app,
        Method::POST,
        path,
        Some(KEY),
        Body::from(body.to_string()),
    )
    .await
}

fn chat(extra: Value) -> Value {
    let mut body = json!({"messages": [{"role": "user", "content": "Give me JSON."}],
                          "seed": 7, "max_tokens": 40});
    for (k, v) in extra.as_object().expect("an object") {
        body[k] = v.clone();
    }
    body
}

/// An object the fake vocabulary spells in few tokens.
fn schema() -> Value {
    json!({
        "type": "object",
        "properties": {"ab": {"type": "string", "maxLength": 5}, "c": {"type": "integer"}},
        "required": ["ab", "c"],
        "additionalProperties": false,
    })
}

fn assert_valid(schema: &Value, text: &str) {
    let instance: Value =
        serde_json::from_str(text).unwrap_or_else(|e| panic!("{e}: not JSON: {text:?}"));
    let validator = jsonschema::validator_for(schema).expect("a valid schema");
    assert!(validator.is_valid(&instance), "{instance} against {schema}");
}

#[tokio::test]
async fn health_answers_without_a_key() {
    let app = app();
    let answer = call(&app, Method::GET, "/health", None, Body::empty()).await;
    assert_eq!(answer.status, StatusCode::OK);
    let body = answer.json();
    assert_eq!(body["status"], "ok");
    assert_eq!(body["model"], "fake-model");
}

#[tokio::test]
async fn every_other_route_wants_the_key_and_says_so_as_an_openai_error() {
    let app = app();
    for (method, path) in [
        (Method::GET, "/v1/models"),
        (Method::GET, "/metrics"),
        (Method::GET, "/openapi.json"),
        (Method::POST, "/v1/chat/completions"),
        (Method::POST, "/v1/completions"),
        (Method::POST, "/v1/responses"),
    ] {
        for key in [None, Some("wrong")] {
            let answer = call(&app, method.clone(), path, key, Body::empty()).await;
            assert_eq!(answer.status, StatusCode::UNAUTHORIZED, "{path}");
            assert_eq!(answer.headers["www-authenticate"], "Bearer");
            let error = answer.error();
            assert_eq!(error["type"], "authentication_error");
            assert_eq!(error["code"], "invalid_api_key");
        }
    }
}

#[tokio::test]
async fn models_lists_the_one_model_served() {
    let answer = get(&app(), "/v1/models").await;
    assert_eq!(answer.status, StatusCode::OK);
    let body = answer.json();
    assert_eq!(body["object"], "list");
    assert_eq!(body["data"][0]["id"], "fake-model");
    assert_eq!(body["data"][0]["object"], "model");
}

#[tokio::test]
async fn metrics_are_prometheus_text_that_counts_requests() {
    let app = app();
    get(&app, "/v1/models").await;
    let answer = get(&app, "/metrics").await;
    assert_eq!(answer.status, StatusCode::OK);
    assert!(answer.headers[header::CONTENT_TYPE]
        .to_str()
        .is_ok_and(|t| t.starts_with("text/plain")));
    assert!(
        answer
            .body
            .contains("constrain_requests_total{route=\"/v1/models\",status=\"200\"} 1"),
        "{}",
        answer.body
    );
}

#[tokio::test]
async fn openapi_documents_every_route() {
    let answer = get(&app(), "/openapi.json").await;
    assert_eq!(answer.status, StatusCode::OK);
    let body = answer.json();
    assert_eq!(body["openapi"], "3.1.0");
    for path in [
        "/v1/chat/completions",
        "/v1/completions",
        "/v1/responses",
        "/v1/models",
        "/health",
    ] {
        assert!(body["paths"][path].is_object(), "{path}");
    }
}

#[tokio::test]
async fn unknown_routes_are_404_and_wrong_methods_405() {
    let app = app();
    let answer = get(&app, "/v1/nothing").await;
    assert_eq!(answer.status, StatusCode::NOT_FOUND);
    assert_eq!(answer.error()["code"], "not_found");
    let answer = get(&app, "/v1/chat/completions").await;
    assert_eq!(answer.status, StatusCode::METHOD_NOT_ALLOWED);
    assert_eq!(answer.error()["code"], "method_not_allowed");
}

#[tokio::test]
async fn a_chat_completion_under_a_schema_is_valid_against_it() {
    let app = app();
    for seed in 0..4 {
        let answer = post(
            &app,
            "/v1/chat/completions",
            chat(
                json!({"seed": seed, "response_format": {"type": "json_schema",
                "json_schema": {"name": "t", "strict": true, "schema": schema()}}}),
            ),
        )
        .await;
        assert_eq!(answer.status, StatusCode::OK, "{}", answer.body);
        let body = answer.json();
        assert_eq!(body["object"], "chat.completion");
        assert_eq!(body["model"], "fake-model");
        let choice = &body["choices"][0];
        assert_eq!(choice["message"]["role"], "assistant");
        assert_eq!(choice["finish_reason"], "stop");
        assert_valid(
            &schema(),
            choice["message"]["content"].as_str().unwrap_or(""),
        );
        assert_eq!(body["constraint"]["type"], "json_schema");
        assert_eq!(body["constraint"]["enforced"], true);
        assert_eq!(body["constraint"]["strict"], true);
        let usage = &body["usage"];
        assert_eq!(
            usage["total_tokens"].as_u64(),
            Some(
                usage["prompt_tokens"].as_u64().unwrap_or(0)
                    + usage["completion_tokens"].as_u64().unwrap_or(0)
            )
        );
    }
}

#[tokio::test]
async fn json_object_with_a_schema_enforces_the_schema() {
    let app = app();
    let schema = json!({"type": "object", "properties": {"c": {"enum": [1, 2, 10]}},
                        "required": ["c"], "additionalProperties": false});
    for seed in 0..4 {
        let answer = post(
            &app,
            "/v1/chat/completions",
            chat(json!({"seed": seed,
                        "response_format": {"type": "json_object", "schema": schema}})),
        )
        .await;
        assert_eq!(answer.status, StatusCode::OK, "{}", answer.body);
        let body = answer.json();
        assert_valid(
            &schema,
            body["choices"][0]["message"]["content"]
                .as_str()
                .unwrap_or(""),
        );
        assert_eq!(body["constraint"]["type"], "json_schema");
    }
    // A schema that is not an object schema is enforced as given, as llama-server does.
    let answer = post(
        &app,
        "/v1/completions",
        json!({"prompt": "x", "seed": 1, "max_tokens": 10,
               "response_format": {"type": "json_object", "schema": {"enum": ["ab", "c"]}}}),
    )
    .await;
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.body);
    let text = answer.json()["choices"][0]["text"].clone();
    assert!(text == "\"ab\"" || text == "\"c\"", "{text}");
}

#[tokio::test]
async fn a_streamed_chat_is_data_events_then_done() {
    let app = app();
    let request = chat(
        json!({"stream": true, "stream_options": {"include_usage": true},
        "response_format": {"type": "json_schema", "json_schema": {"name": "t", "schema": schema()}}}),
    );
    let answer = post(&app, "/v1/chat/completions", request.clone()).await;
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.body);
    let events = answer.events();
    assert!(events
        .iter()
        .all(|e| e["object"] == "chat.completion.chunk"));
    assert_eq!(events[0]["choices"][0]["delta"]["role"], "assistant");
    let content: String = events
        .iter()
        .filter_map(|e| e["choices"][0]["delta"]["content"].as_str())
        .collect();
    assert_valid(&schema(), &content);
    let finishes: Vec<&Value> = events
        .iter()
        .map(|e| &e["choices"][0]["finish_reason"])
        .filter(|f| !f.is_null())
        .collect();
    assert_eq!(finishes, [&json!("stop")]);
    let last = events.last().expect("events");
    assert_eq!(last["choices"], json!([]));
    assert!(last["usage"]["completion_tokens"].as_u64() > Some(0));
    // The same request whole: the same text.
    request_whole_matches(&app, request, &content).await;
}

async fn request_whole_matches(app: &Router, mut request: Value, streamed: &str) {
    request["stream"] = json!(false);
    if let Some(o) = request.as_object_mut() {
        o.remove("stream_options");
    }
    let whole = post(app, "/v1/chat/completions", request).await.json();
    assert_eq!(whole["choices"][0]["message"]["content"], streamed);
}

#[tokio::test]
async fn a_text_completion_streams_the_text_it_answers_whole() {
    let app = app();
    let request = json!({"prompt": "ab", "seed": 3, "max_tokens": 12, "n": 2});
    let whole = post(&app, "/v1/completions", request.clone()).await;
    assert_eq!(whole.status, StatusCode::OK, "{}", whole.body);
    let whole = whole.json();
    assert_eq!(whole["object"], "text_completion");
    assert_eq!(whole["choices"].as_array().map(Vec::len), Some(2));
    let mut streaming = request;
    streaming["stream"] = json!(true);
    let events = post(&app, "/v1/completions", streaming).await.events();
    for choice in whole["choices"].as_array().into_iter().flatten() {
        let index = &choice["index"];
        let text: String = events
            .iter()
            .flat_map(|e| e["choices"].as_array().cloned().unwrap_or_default())
            .filter(|c| &c["index"] == index)
            .filter_map(|c| c["text"].as_str().map(str::to_string))
            .collect();
        assert_eq!(choice["text"], text);
    }
}

#[tokio::test]
async fn finish_reason_is_length_only_when_the_output_was_cut() {
    let app = app();
    let no_end = json!({EOS.to_string(): -100});
    // Free text that cannot end: cut at max_tokens.
    let answer = post(
        &app,
        "/v1/completions",
        json!({"prompt": "ab", "max_tokens": 5, "logit_bias": no_end}),
    )
    .await;
    let body = answer.json();
    assert_eq!(body["choices"][0]["finish_reason"], "length", "{body}");
    assert_eq!(body["usage"]["completion_tokens"], 5);
    // A constrained output that the budget completes is not cut: `stop`, and valid.
    let short = json!({"type": "string", "maxLength": 40});
    for max_tokens in [2, 3, 6] {
        for seed in 0..3 {
            let answer = post(
                &app,
                "/v1/completions",
                json!({"prompt": "ab", "max_tokens": max_tokens, "seed": seed,
                       "logit_bias": no_end, "json_schema": short}),
            )
            .await;
            let body = answer.json();
            let choice = &body["choices"][0];
            assert_eq!(choice["finish_reason"], "stop", "{body}");
            assert_valid(&short, choice["text"].as_str().unwrap_or(""));
        }
    }
}

fn weather_tool() -> Value {
    json!([{"type": "function", "function": {"name": "get", "parameters": {
        "type": "object", "properties": {"c": {"type": "integer", "minimum": 0, "maximum": 20}},
        "required": ["c"], "additionalProperties": false}}}])
}

#[tokio::test]
async fn a_required_tool_call_comes_back_as_tool_calls() {
    let app = app();
    let answer = post(
        &app,
        "/v1/chat/completions",
        chat(json!({"tools": weather_tool(), "tool_choice": "required",
                    "parallel_tool_calls": false, "max_tokens": 120})),
    )
    .await;
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.body);
    let body = answer.json();
    let choice = &body["choices"][0];
    assert_eq!(choice["finish_reason"], "tool_calls", "{body}");
    assert_eq!(choice["message"]["content"], Value::Null);
    let call = &choice["message"]["tool_calls"][0];
    assert_eq!(call["type"], "function");
    assert_eq!(call["function"]["name"], "get");
    let parameters = &weather_tool()[0]["function"]["parameters"];
    assert_valid(
        parameters,
        call["function"]["arguments"].as_str().unwrap_or(""),
    );

    // Streamed: a call's name first, then fragments of its arguments, and `tool_calls`.
    let answer = post(
        &app,
        "/v1/chat/completions",
        chat(
            json!({"tools": weather_tool(), "tool_choice": "required", "stream": true,
                    "max_tokens": 120}),
        ),
    )
    .await;
    let events = answer.events();
    let calls: Vec<&Value> = events
        .iter()
        .filter_map(|e| e["choices"][0]["delta"]["tool_calls"].get(0))
        .collect();
    assert!(!calls.is_empty(), "{}", answer.body);
    assert_eq!(calls[0]["function"]["name"], "get");
    assert!(calls[0]["id"].is_string());
    let arguments: String = calls
        .iter()
        .filter(|c| c["index"] == 0)
        .filter_map(|c| c["function"]["arguments"].as_str())
        .collect();
    assert_valid(parameters, &arguments);
    assert!(events
        .iter()
        .any(|e| e["choices"][0]["finish_reason"] == "tool_calls"));
}

/// Requests refused with 400 before any work, and the field each error names.
#[tokio::test]
async fn bad_requests_are_400s_that_name_the_field() {
    let app = app();
    let cases: Vec<(Value, &str, &str)> = vec![
        (
            chat(json!({"temperature": 3})),
            "temperature",
            "invalid_value",
        ),
        (chat(json!({"min_p": -0.5})), "min_p", "invalid_value"),
        (
            chat(json!({"repeat_penalty": 0})),
            "repeat_penalty",
            "invalid_value",
        ),
        (chat(json!({"model": "gpt-9"})), "model", "model_not_found"),
        (chat(json!({"n": 99})), "n", "invalid_value"),
        (
            chat(json!({"top_logprobs": 2})),
            "top_logprobs",
            "invalid_value",
        ),
        (
            chat(json!({"max_tokens": 0})),
            "max_tokens",
            "invalid_value",
        ),
        (chat(json!({"messages": []})), "messages", "invalid_value"),
        (
            chat(json!({"messages": "hi"})),
            "messages",
            "invalid_request",
        ),
        (
            chat(json!({"messages": [{"role": "user", "content": "caf\u{e9}"}]})),
            "messages",
            "",
        ),
        (
            chat(json!({"regex": "a+", "grammar": "root ::= \"a\""})),
            "grammar",
            "invalid_value",
        ),
        (
            chat(json!({"response_format": {"type": "json_schema",
                "json_schema": {"schema": {"type": "strnig"}}}})),
            "response_format",
            "invalid_schema",
        ),
        (
            chat(json!({"grammar": "root ::= missing"})),
            "grammar",
            "invalid_grammar",
        ),
        (
            chat(
                json!({"tools": weather_tool(), "tool_choice": {"type": "function",
                "function": {"name": "other"}}}),
            ),
            "tool_choice.function.name",
            "invalid_value",
        ),
    ];
    for (body, param, code) in cases {
        let answer = post(&app, "/v1/chat/completions", body.clone()).await;
        assert_eq!(
            answer.status,
            StatusCode::BAD_REQUEST,
            "{body}: {}",
            answer.body
        );
        let error = answer.error();
        assert_eq!(error["type"], "invalid_request_error");
        assert_eq!(error["param"], param, "{body}: {error}");
        if !code.is_empty() {
            assert_eq!(error["code"], code, "{body}: {error}");
        }
    }
    let answer = call(
        &app,
        Method::POST,
        "/v1/chat/completions",
        Some(KEY),
        Body::from("{not json"),
    )
    .await;
    assert_eq!(answer.status, StatusCode::BAD_REQUEST);
    assert_eq!(answer.error()["code"], "invalid_json");
    let answer = post(
        &app,
        "/v1/completions",
        json!({"prompt": [1, 100000], "max_tokens": 3}),
    )
    .await;
    assert_eq!(answer.status, StatusCode::BAD_REQUEST);
    assert_eq!(answer.error()["param"], "prompt");
}

/// Constraint-bearing fields the server cannot honour are refused by name, never ignored.
#[tokio::test]
async fn constraints_the_server_cannot_keep_are_400s_that_name_them() {
    let app = app();
    let cases: Vec<(Value, &str)> = vec![
        (
            json!({"response_format": {"type": "json_object", "schema": {}, "strict": true}}),
            "response_format.strict",
        ),
        (
            json!({"response_format": {"type": "json_schema", "schema": schema(),
                                       "json_schema": {"name": "t"}}}),
            "response_format.schema",
        ),
        (
            json!({"response_format": {"type": "json_schema",
                "json_schema": {"name": "t", "schema": schema(), "grammar": "x"}}}),
            "response_format.json_schema.grammar",
        ),
        (
            json!({"response_format": {"type": "text", "regex": "a+"}}),
            "response_format.regex",
        ),
        (
            json!({"response_format": {"type": "structural_tag", "structures": []}}),
            "response_format",
        ),
        (json!({"tools": [{"type": "web_search"}]}), "tools[0].type"),
        (
            json!({"tools": [{"type": "custom", "custom": {"name": "x", "format": {"type": "grammar",
                "grammar": {"syntax": "ebnf", "definition": "root ::= x"}}}}]}),
            "tools[0].custom.format.grammar.syntax",
        ),
        (
            json!({"response_format": {"type": "json_schema", "json_schema": {"name": "t",
                "strict": true, "schema": {"type": "string", "format": "no-such-format"}}}}),
            "response_format.json_schema.strict",
        ),
        (
            json!({"tool_choice": "required", "tools": [{"type": "function", "function": {
                "name": "f", "strict": true, "parameters": {"type": "object",
                "properties": {"d": {"type": "string", "format": "no-such-format"}}}}}]}),
            "tools",
        ),
        (json!({"guided_json": schema()}), "guided_json"),
        (json!({"guided_regex": "a+"}), "guided_regex"),
    ];
    for (extra, param) in cases {
        let body = chat(extra);
        let answer = post(&app, "/v1/chat/completions", body.clone()).await;
        assert_eq!(
            answer.status,
            StatusCode::BAD_REQUEST,
            "{body}: {}",
            answer.body
        );
        let error = answer.error();
        assert_eq!(error["param"], param, "{body}: {error}");
        assert!(
            error["message"]
                .as_str()
                .is_some_and(|m| m.contains(param.split('[').next().unwrap_or(param))),
            "{error}"
        );
    }
    // The same schema without `strict` is served, and its warning says what is not enforced.
    let answer = post(
        &app,
        "/v1/chat/completions",
        chat(
            json!({"max_tokens": 8, "response_format": {"type": "json_schema", "json_schema": {
            "name": "t", "schema": {"type": "string", "format": "no-such-format"}}}}),
        ),
    )
    .await;
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.body);
    let warnings = answer.json()["constraint"]["warnings"].clone();
    assert!(
        warnings.to_string().contains("no-such-format"),
        "{warnings}"
    );
}

#[tokio::test]
async fn a_body_over_the_limit_is_413() {
    let mut options = options();
    options.max_body_bytes = 64;
    let app = app_with(options);
    let answer = post(
        &app,
        "/v1/chat/completions",
        chat(json!({"stop": "x".repeat(100)})),
    )
    .await;
    assert_eq!(answer.status, StatusCode::PAYLOAD_TOO_LARGE);
    assert_eq!(answer.error()["code"], "request_too_large");
}

/// `trace: true` puts a step per token beside the choice (whole) or on the chunks that carry
/// the tokens (streamed), the same either way, and feeds `/metrics`' removed-mass histogram.
#[tokio::test]
async fn a_traced_completion_has_a_step_per_token() {
    let app = app();
    let body = chat(
        json!({"trace": true, "response_format": {"type": "json_schema",
        "json_schema": {"name": "t", "schema": schema()}}}),
    );
    let answer = post(&app, "/v1/chat/completions", body.clone()).await;
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.body);
    let whole = answer.json();
    let trace = whole["choices"][0]["trace"]
        .as_array()
        .expect("a trace")
        .clone();
    assert_eq!(
        trace.len() as u64,
        whole["usage"]["completion_tokens"].as_u64().unwrap()
    );
    let text: String = trace.iter().filter_map(|t| t["text"].as_str()).collect();
    let content = whole["choices"][0]["message"]["content"].as_str().unwrap();
    assert!(text.starts_with(content), "{text:?} / {content:?}");
    let origins: Vec<&str> = trace.iter().filter_map(|t| t["origin"].as_str()).collect();
    assert!(
        origins.contains(&"forced") && origins.contains(&"sampled"),
        "{origins:?}"
    );
    for step in trace.iter().filter(|t| t["origin"] != "forced") {
        let removed = step["removed_mass"].as_f64().expect("a drawn token has it");
        assert!((0.0..=1.0).contains(&removed), "{step}");
        assert!(step["before_mask"].as_array().is_some_and(|c| c.len() == 5));
    }

    let mut streamed = body;
    streamed["stream"] = json!(true);
    let answer = post(&app, "/v1/chat/completions", streamed).await;
    assert_eq!(answer.status, StatusCode::OK);
    let steps: Vec<Value> = answer
        .events()
        .iter()
        .filter_map(|e| e["choices"][0]["trace"].as_array().cloned())
        .flatten()
        .collect();
    assert_eq!(steps, trace, "the same steps, streamed");

    let untraced = post(&app, "/v1/chat/completions", chat(json!({})))
        .await
        .json();
    assert!(untraced["choices"][0].get("trace").is_none());
    let metrics = get(&app, "/metrics").await.body;
    let drawn = trace.iter().filter(|t| t["origin"] != "forced").count() * 2;
    assert!(
        metrics.contains(&format!("constrain_mask_removed_mass_count {drawn}")),
        "{metrics}"
    );
}

/// The inspector's page is served without the key, whole: nothing it needs comes from
/// elsewhere.
#[tokio::test]
async fn the_inspector_is_one_self_contained_page() {
    let answer = call(&app(), Method::GET, "/inspect", None, Body::empty()).await;
    assert_eq!(answer.status, StatusCode::OK);
    assert!(answer.headers[header::CONTENT_TYPE]
        .to_str()
        .is_ok_and(|t| t.starts_with("text/html")));
    for part in [
        "<style>",
        "<script>",
        "/v1/chat/completions",
        "trace: true",
        "trace-file",
    ] {
        assert!(answer.body.contains(part), "the page lacks {part:?}");
    }
    for outside in ["src=\"http", "href=\"http", "@import", "<link"] {
        assert!(!answer.body.contains(outside), "the page loads {outside:?}");
    }
}

/// `grammar_syntax: "lark"` reads `grammar` as Lark; a bad grammar, an unknown syntax or a
/// syntax without a grammar are 400s naming the field.
#[tokio::test]
async fn a_lark_grammar_is_followed() {
    let app = app();
    let lark = "start: \"{\" PAIR \"}\"\nPAIR: \"\\\"a\\\":\" DIGIT+\n%import common.DIGIT\n";
    for seed in 0..3 {
        let body = chat(json!({"seed": seed, "grammar": lark, "grammar_syntax": "lark"}));
        let answer = post(&app, "/v1/chat/completions", body).await;
        assert_eq!(answer.status, StatusCode::OK, "{}", answer.body);
        let body = answer.json();
        let text = body["choices"][0]["message"]["content"]
            .as_str()
            .unwrap_or("");
        let digits = text
            .strip_prefix("{\"a\":")
            .and_then(|t| t.strip_suffix('}'))
            .unwrap_or_else(|| panic!("{text:?}"));
        assert!(
            !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()),
            "{text:?}"
        );
        assert_eq!(body["constraint"]["type"], "lark");
    }
    for (extra, param, says) in [
        (
            json!({"grammar": "start: (", "grammar_syntax": "lark"}),
            "grammar",
            "1:9",
        ),
        (
            json!({"grammar": "root ::= \"a\"", "grammar_syntax": "ebnf"}),
            "grammar_syntax",
            "ebnf",
        ),
        (
            json!({"grammar_syntax": "lark"}),
            "grammar_syntax",
            "without a grammar",
        ),
    ] {
        let answer = post(&app, "/v1/chat/completions", chat(extra)).await;
        assert_eq!(answer.status, StatusCode::BAD_REQUEST, "{}", answer.body);
        let error = answer.error();
        assert_eq!(error["param"], param, "{error}");
        assert!(
            error["message"].as_str().is_some_and(|m| m.contains(says)),
            "{error}"
        );
    }
}
