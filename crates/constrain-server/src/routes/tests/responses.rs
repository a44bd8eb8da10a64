//! `POST /v1/responses` over the fake model: the `response` object, function calls and their
//! outputs fed back, stored conversations, typed streaming events, and errors that name the
//! Responses API's fields.

use super::*;

fn respond(extra: Value) -> Value {
    let mut body = json!({"input": "Give me JSON.", "seed": 7, "max_output_tokens": 40});
    for (k, v) in extra.as_object().expect("an object") {
        body[k] = v.clone();
    }
    body
}

fn format() -> Value {
    json!({"format": {"type": "json_schema", "name": "t", "strict": true, "schema": schema()}})
}

/// A flat function tool whose arguments the fake vocabulary spells in few tokens.
fn tool() -> Value {
    json!([{"type": "function", "name": "get", "strict": true, "parameters": {
        "type": "object", "properties": {"c": {"type": "integer", "minimum": 0, "maximum": 20}},
        "required": ["c"], "additionalProperties": false}}])
}

/// The text of a response's message items.
fn output_text(response: &Value) -> String {
    response["output"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|item| item["type"] == "message")
        .flat_map(|item| item["content"].as_array().cloned().unwrap_or_default())
        .filter_map(|part| part["text"].as_str().map(str::to_string))
        .collect()
}

impl Answer {
    /// Typed server-sent events, checked for their framing: every event is an `event: TYPE`
    /// line, a `data: ...` line whose `type` is TYPE, and a blank line; numbered from 0.
    fn typed_events(&self) -> Vec<Value> {
        assert_eq!(self.headers[header::CONTENT_TYPE], "text/event-stream");
        let frames: Vec<&str> = self
            .body
            .strip_suffix("\n\n")
            .unwrap_or(&self.body)
            .split("\n\n")
            .collect();
        let events: Vec<Value> = frames
            .iter()
            .map(|frame| {
                let (event, data) = frame
                    .split_once('\n')
                    .unwrap_or_else(|| panic!("not an event: {frame:?}"));
                let kind = event.strip_prefix("event: ").expect("an event line");
                let data = data.strip_prefix("data: ").expect("a data line");
                let value: Value =
                    serde_json::from_str(data).unwrap_or_else(|e| panic!("{e}: {data}"));
                assert_eq!(value["type"], kind, "{frame}");
                value
            })
            .collect();
        let numbers: Vec<u64> = events
            .iter()
            .filter_map(|e| e["sequence_number"].as_u64())
            .collect();
        assert_eq!(numbers, (0..events.len() as u64).collect::<Vec<_>>());
        events
    }
}

#[tokio::test]
async fn a_response_under_a_json_schema_format_is_valid_against_it() {
    let app = app();
    for seed in 0..3 {
        let answer = post(
            &app,
            "/v1/responses",
            respond(json!({"seed": seed, "instructions": "Answer in JSON.", "text": format()})),
        )
        .await;
        assert_eq!(answer.status, StatusCode::OK, "{}", answer.body);
        let body = answer.json();
        assert_eq!(body["object"], "response");
        assert!(body["id"]
            .as_str()
            .is_some_and(|id| id.starts_with("resp_")));
        assert!(body["created_at"].is_u64());
        assert_eq!(body["status"], "completed", "{body}");
        assert_eq!(body["model"], "fake-model");
        assert_eq!(body["instructions"], "Answer in JSON.");
        assert_eq!(body["text"], format());
        let item = &body["output"][0];
        assert_eq!(item["type"], "message");
        assert_eq!(item["role"], "assistant");
        assert_eq!(item["status"], "completed");
        assert_eq!(item["content"][0]["type"], "output_text");
        assert_valid(&schema(), &output_text(&body));
        assert_eq!(body["constraint"]["type"], "json_schema");
        let usage = &body["usage"];
        assert!(usage["output_tokens"].as_u64() > Some(0));
        assert_eq!(
            usage["total_tokens"].as_u64(),
            Some(
                usage["input_tokens"].as_u64().unwrap_or(0)
                    + usage["output_tokens"].as_u64().unwrap_or(0)
            )
        );
    }
}

#[tokio::test]
async fn a_forced_call_and_its_output_fed_back_make_a_turn() {
    let app = app();
    let ask = json!([{"role": "user", "content": "Get c."}]);
    let answer = post(
        &app,
        "/v1/responses",
        respond(
            json!({"input": ask, "tools": tool(), "max_output_tokens": 120,
                       "tool_choice": {"type": "function", "name": "get"}}),
        ),
    )
    .await;
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.body);
    let first = answer.json();
    let calls: Vec<&Value> = first["output"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|i| i["type"] == "function_call")
        .collect();
    assert!(!calls.is_empty(), "{first}");
    let call = calls[0];
    assert_eq!(call["name"], "get");
    assert_eq!(call["status"], "completed");
    assert!(call["call_id"]
        .as_str()
        .is_some_and(|id| id.starts_with("call_")));
    assert!(call["id"].as_str().is_some_and(|id| id.starts_with("fc_")));
    assert_valid(
        &tool()[0]["parameters"],
        call["arguments"].as_str().unwrap_or(""),
    );
    assert_eq!(first["constraint"]["type"], "tool_calls");

    // The whole history sent back, the call's output as a function_call_output item.
    let mut input = ask.as_array().cloned().unwrap_or_default();
    input.push(call.clone());
    input.push(json!({"type": "function_call_output", "call_id": call["call_id"], "output": "7"}));
    let answer = post(
        &app,
        "/v1/responses",
        respond(json!({"input": input, "tools": tool(), "tool_choice": "none", "text": format()})),
    )
    .await;
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.body);
    assert_valid(&schema(), &output_text(&answer.json()));

    // The same turn continuing the stored response: only the call's output is sent.
    let answer = post(
        &app,
        "/v1/responses",
        respond(
            json!({"previous_response_id": first["id"], "tool_choice": "none",
                       "input": [{"type": "function_call_output", "call_id": call["call_id"],
                                  "output": "7"}],
                       "text": format()}),
        ),
    )
    .await;
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.body);
    let body = answer.json();
    assert_eq!(body["previous_response_id"], first["id"]);
    assert_valid(&schema(), &output_text(&body));
}

#[tokio::test]
async fn a_continuation_reads_the_stored_conversation() {
    let app = app();
    let first = post(&app, "/v1/responses", respond(json!({"input": "abc"}))).await;
    let first = first.json();
    // The prompt of a continuation is the stored turns and the new input: longer than the new
    // input alone by the first turn's input and output.
    let alone = post(&app, "/v1/responses", respond(json!({"input": "c"}))).await;
    let continued = post(
        &app,
        "/v1/responses",
        respond(json!({"input": "c", "previous_response_id": first["id"]})),
    )
    .await;
    assert_eq!(continued.status, StatusCode::OK, "{}", continued.body);
    let (alone, continued) = (alone.json(), continued.json());
    assert!(
        continued["usage"]["input_tokens"].as_u64()
            > Some(
                alone["usage"]["input_tokens"].as_u64().unwrap_or(0)
                    + first["usage"]["output_tokens"].as_u64().unwrap_or(0)
            ),
        "{alone} {continued}"
    );
    // Not stored: cannot be continued.
    let unstored = post(&app, "/v1/responses", respond(json!({"store": false}))).await;
    let unstored = unstored.json();
    assert_eq!(unstored["store"], false);
    let answer = post(
        &app,
        "/v1/responses",
        respond(json!({"previous_response_id": unstored["id"]})),
    )
    .await;
    assert_eq!(answer.status, StatusCode::BAD_REQUEST);
    let error = answer.error();
    assert_eq!(error["param"], "previous_response_id");
    assert_eq!(error["code"], "previous_response_not_found");
}

#[tokio::test]
async fn a_streamed_response_is_typed_events_that_rebuild_the_whole_one() {
    let app = app();
    let request = respond(json!({"stream": true, "text": format()}));
    let answer = post(&app, "/v1/responses", request.clone()).await;
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.body);
    let events = answer.typed_events();
    let kinds: Vec<&str> = events.iter().filter_map(|e| e["type"].as_str()).collect();
    let deltas = kinds
        .iter()
        .filter(|k| **k == "response.output_text.delta")
        .count();
    assert!(deltas > 0, "{kinds:?}");
    let mut expected = vec![
        "response.created",
        "response.in_progress",
        "response.output_item.added",
        "response.content_part.added",
    ];
    expected.extend(std::iter::repeat_n("response.output_text.delta", deltas));
    expected.extend([
        "response.output_text.done",
        "response.content_part.done",
        "response.output_item.done",
        "response.completed",
    ]);
    assert_eq!(kinds, expected);
    assert_eq!(events[0]["response"]["status"], "in_progress");
    let text: String = events.iter().filter_map(|e| e["delta"].as_str()).collect();
    assert_valid(&schema(), &text);
    let done = &events[events.len() - 1]["response"];
    assert_eq!(done["status"], "completed");
    assert_eq!(output_text(done), text);
    // The same request whole: the same text.
    let mut whole = request;
    whole["stream"] = json!(false);
    let whole = post(&app, "/v1/responses", whole).await.json();
    assert_eq!(output_text(&whole), text);
}

#[tokio::test]
async fn a_streamed_call_sends_its_arguments_in_pieces() {
    let app = app();
    let answer = post(
        &app,
        "/v1/responses",
        respond(
            json!({"stream": true, "tools": tool(), "tool_choice": "required",
                       "parallel_tool_calls": false, "max_output_tokens": 120}),
        ),
    )
    .await;
    let events = answer.typed_events();
    let added = events
        .iter()
        .find(|e| e["type"] == "response.output_item.added")
        .expect("an item");
    assert_eq!(added["item"]["type"], "function_call");
    assert_eq!(added["item"]["name"], "get");
    let pieces: String = events
        .iter()
        .filter(|e| e["type"] == "response.function_call_arguments.delta")
        .filter_map(|e| e["delta"].as_str())
        .collect();
    let done = events
        .iter()
        .find(|e| e["type"] == "response.function_call_arguments.done")
        .expect("the arguments");
    assert_eq!(done["arguments"], pieces);
    assert_valid(&tool()[0]["parameters"], &pieces);
    let last = events.last().expect("events");
    assert_eq!(last["type"], "response.completed");
    assert_eq!(last["response"]["output"][0]["arguments"], pieces);
}

#[tokio::test]
async fn an_answer_cut_by_max_output_tokens_is_incomplete() {
    let app = app();
    let no_end = json!({EOS.to_string(): -100});
    let answer = post(
        &app,
        "/v1/responses",
        respond(json!({"max_output_tokens": 5, "logit_bias": no_end})),
    )
    .await;
    let body = answer.json();
    assert_eq!(body["status"], "incomplete", "{body}");
    assert_eq!(body["incomplete_details"]["reason"], "max_output_tokens");
    assert_eq!(body["output"][0]["status"], "incomplete");
    assert_eq!(body["usage"]["output_tokens"], 5);
    let answer = post(
        &app,
        "/v1/responses",
        respond(json!({"max_output_tokens": 5, "logit_bias": no_end, "stream": true})),
    )
    .await;
    let events = answer.typed_events();
    let last = events.last().expect("events");
    assert_eq!(last["type"], "response.incomplete");
    assert_eq!(
        last["response"]["incomplete_details"]["reason"],
        "max_output_tokens"
    );
}

/// Requests refused with 400 before any work, each naming the Responses API's field.
#[tokio::test]
async fn bad_responses_requests_are_400s_that_name_the_field() {
    let app = app();
    let cases: Vec<(Value, &str)> = vec![
        (respond(json!({"input": []})), "input"),
        (respond(json!({"input": 5})), "input"),
        (
            respond(json!({"input": [{"role": "robot", "content": "x"}]})),
            "input[0].role",
        ),
        (
            respond(json!({"input": [{"type": "function_call_output", "output": "x"}]})),
            "input[0]",
        ),
        (
            respond(json!({"max_output_tokens": 0})),
            "max_output_tokens",
        ),
        (
            respond(json!({"max_output_tokens": "many"})),
            "max_output_tokens",
        ),
        (respond(json!({"temperature": 3})), "temperature"),
        (respond(json!({"model": "gpt-9"})), "model"),
        (
            respond(json!({"tools": [{"type": "web_search"}]})),
            "tools[0].type",
        ),
        (
            respond(json!({"tools": [{"type": "function", "name": "bad name"}]})),
            "tools[0].name",
        ),
        (
            respond(json!({"tools": tool(), "tool_choice": {"type": "function", "name": "x"}})),
            "tool_choice.name",
        ),
        (
            respond(json!({"tools": tool(), "tool_choice": "sometimes"})),
            "tool_choice",
        ),
        (
            respond(
                json!({"text": {"format": {"type": "json_schema", "strict": true,
                "schema": {"type": "string", "format": "no-such-format"}}}}),
            ),
            "text.format.strict",
        ),
        (
            respond(json!({"text": {"format": {"type": "json_schema",
                "schema": {"type": "strnig"}}}})),
            "text.format",
        ),
        (
            respond(
                json!({"text": {"format": {"type": "json_schema", "schema": {}, "regex": "a"}}}),
            ),
            "text.format.regex",
        ),
        (
            respond(json!({"previous_response_id": "resp_nothing"})),
            "previous_response_id",
        ),
        (
            respond(json!({"conversation": {"id": "conv_1"}})),
            "conversation",
        ),
        (respond(json!({"guided_json": schema()})), "guided_json"),
    ];
    for (body, param) in cases {
        let answer = post(&app, "/v1/responses", body.clone()).await;
        assert_eq!(
            answer.status,
            StatusCode::BAD_REQUEST,
            "{body}: {}",
            answer.body
        );
        let error = answer.error();
        assert_eq!(error["type"], "invalid_request_error");
        assert_eq!(error["param"], param, "{body}: {error}");
        let field = param.rsplit('.').next().unwrap_or(param);
        assert!(
            error["message"].as_str().is_some_and(|m| m.contains(field)),
            "{error}"
        );
    }
    let answer = get(&app, "/v1/responses").await;
    assert_eq!(answer.status, StatusCode::METHOD_NOT_ALLOWED);
    let answer = call(&app, Method::POST, "/v1/responses", None, Body::empty()).await;
    assert_eq!(answer.status, StatusCode::UNAUTHORIZED);
}

/// Odd bodies of every shape the fields allow or not: each is answered (200 or a 400 error
/// object), and the server keeps answering.
#[tokio::test]
async fn odd_responses_bodies_are_answered_and_the_server_keeps_serving() {
    let app = app();
    let odd = [
        json!({}),
        json!({"input": null}),
        json!({"input": [null, [], {}]}),
        json!({"input": [{"type": 7}]}),
        json!({"input": [{"role": "user", "content": null}]}),
        json!({"input": [{"role": "user", "content": [{"type": "input_text"}]}]}),
        json!({"input": [{"type": "function_call", "call_id": "c", "name": "f", "arguments": "not json"}]}),
        json!({"input": [{"type": "function_call_output", "call_id": "c", "output": {"a": 1}}]}),
        json!({"input": [{"type": "reasoning", "summary": []}]}),
        json!({"input": "x", "tools": "all"}),
        json!({"input": "x", "tools": [null]}),
        json!({"input": "x", "tool_choice": 3}),
        json!({"input": "x", "tool_choice": {"type": "function"}}),
        json!({"input": "x", "text": null}),
        json!({"input": "x", "text": {"format": "json"}}),
        json!({"input": "x", "text": {"format": {}}}),
        json!({"input": "x", "text": {"format": {"type": "json_schema", "schema": "x"}}}),
        json!({"input": "x", "instructions": 5}),
        json!({"input": "x", "max_output_tokens": -1}),
        json!({"input": "x", "max_output_tokens": 1e30}),
        json!({"input": "x", "previous_response_id": 5}),
        json!({"input": "x", "store": "yes"}),
        json!({"input": "x", "include": ["reasoning.encrypted_content"], "reasoning": {"effort": "low"},
               "truncation": "auto", "metadata": {"k": "v"}, "max_output_tokens": 3}),
    ];
    for body in odd {
        let answer = post(&app, "/v1/responses", body.clone()).await;
        match answer.status {
            StatusCode::OK => assert_eq!(answer.json()["object"], "response", "{body}"),
            StatusCode::BAD_REQUEST => {
                answer.error();
            }
            other => panic!("{body}: {other} {}", answer.body),
        }
    }
    let answer = get(&app, "/health").await;
    assert_eq!(answer.status, StatusCode::OK);
}
