"""`constrain serve` driven by the official `openai` package, as agent frameworks use it."""

import concurrent.futures
import enum
import json
import time
import uuid
from typing import Optional

import httpx
import jsonschema
import openai
import pytest
from pydantic import BaseModel, Field

from conftest import API_KEY, MAX_BODY

WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Current weather in a city",
        "parameters": {
            "type": "object",
            "properties": {
                "city": {"type": "string", "maxLength": 24},
                "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
            },
            "required": ["city", "unit"],
            "additionalProperties": False,
        },
        "strict": True,
    },
}
TIME = {
    "type": "function",
    "function": {
        "name": "get_time",
        "description": "Current time in a time zone",
        "parameters": {
            "type": "object",
            "properties": {"zone": {"type": "string", "enum": ["UTC", "CET", "PST"]}},
            "required": ["zone"],
        },
    },
}
TOOLS = [WEATHER, TIME]
PARAMS = {t["function"]["name"]: t["function"]["parameters"] for t in TOOLS}
ASK = [{"role": "user", "content": "What is the weather in Oslo right now?"}]


def check_calls(message, allowed=("get_weather", "get_time")):
    assert message.tool_calls, message
    for call in message.tool_calls:
        assert call.type == "function" and call.id
        assert call.function.name in allowed
        args = json.loads(call.function.arguments)
        jsonschema.validate(args, PARAMS[call.function.name])


@pytest.mark.parametrize("choice", ["required", "named"])
def test_tool_choice_forcing_a_call(client, model_id, choice):
    tool_choice = "required" if choice == "required" else {"type": "function", "function": {"name": "get_time"}}
    r = client.chat.completions.create(
        model=model_id, messages=ASK, tools=TOOLS, tool_choice=tool_choice, max_tokens=80, temperature=0.7, seed=1
    )
    c = r.choices[0]
    assert c.finish_reason == "tool_calls"
    check_calls(c.message, allowed=("get_weather", "get_time") if choice == "required" else ("get_time",))
    assert r.model_extra["constraint"]["type"] == "tool_calls"


def test_parallel_calls_off_gives_one_call(client, model_id):
    r = client.chat.completions.create(
        model=model_id, messages=ASK, tools=TOOLS, tool_choice="required", parallel_tool_calls=False,
        max_tokens=80, seed=3,
    )
    check_calls(r.choices[0].message)
    assert len(r.choices[0].message.tool_calls) == 1


def test_tool_choice_auto_and_none(client, model_id):
    r = client.chat.completions.create(
        model=model_id, messages=ASK, tools=TOOLS, tool_choice="auto", max_tokens=60, seed=5
    )
    c = r.choices[0]
    if c.message.tool_calls:
        check_calls(c.message)
        assert c.finish_reason == "tool_calls"
    else:
        assert isinstance(c.message.content, str)
        assert c.finish_reason in ("stop", "length")
    assert r.model_extra["constraint"]["triggered_by"] == "<tool_call>"

    r = client.chat.completions.create(
        model=model_id, messages=ASK, tools=TOOLS, tool_choice="none", max_tokens=20, seed=5
    )
    assert not r.choices[0].message.tool_calls
    assert isinstance(r.choices[0].message.content, str)


@pytest.mark.parametrize("seed", range(4))
def test_calls_complete_within_a_tight_max_tokens(client, model_id, seed):
    # Sampled freely, the model writes long city names; the budget still closes every call.
    r = client.chat.completions.create(
        model=model_id, messages=ASK, tools=TOOLS, tool_choice="required", max_tokens=40,
        temperature=1.5, seed=seed,
    )
    c = r.choices[0]
    assert c.finish_reason == "tool_calls", c
    check_calls(c.message)
    assert r.usage.completion_tokens <= 40

    # With "auto", a call starts only while it can still complete.
    r = client.chat.completions.create(
        model=model_id, messages=ASK, tools=TOOLS, tool_choice="auto", max_tokens=30,
        temperature=1.5, seed=seed,
    )
    c = r.choices[0]
    if c.message.tool_calls:
        check_calls(c.message)
        assert c.finish_reason == "tool_calls", c
    assert r.usage.completion_tokens <= 30


def test_max_tokens_below_the_shortest_call_is_refused(client, model_id):
    with pytest.raises(openai.BadRequestError) as e:
        client.chat.completions.create(
            model=model_id, messages=ASK, tools=TOOLS, tool_choice="required", max_tokens=3
        )
    assert "needs at least" in e.value.message and e.value.param == "max_tokens"


def test_a_tool_result_in_the_history(client, model_id):
    messages = ASK + [
        {"role": "assistant", "content": None, "tool_calls": [{"id": "call_1", "type": "function",
            "function": {"name": "get_weather", "arguments": "{\"city\": \"Oslo\", \"unit\": \"celsius\"}"}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": "{\"temperature\": 12}"},
    ]
    r = client.chat.completions.create(model=model_id, messages=messages, tools=TOOLS, tool_choice="none",
                                       max_tokens=20, seed=2)
    assert r.choices[0].message.content


class Color(str, enum.Enum):
    red = "red"
    green = "green"
    blue = "blue"


class Address(BaseModel):
    city: str = Field(max_length=20)
    zip_code: int = Field(ge=0, le=99999)


class Person(BaseModel):
    name: str = Field(max_length=20)
    favorite: Color
    address: Address
    hobbies: list[str] = Field(max_length=2)
    nickname: Optional[str] = Field(default=None, max_length=12)


def test_parse_with_pydantic(client, model_id):
    r = client.chat.completions.parse(
        model=model_id,
        messages=[{"role": "user", "content": "Describe Ada, who lives in Oslo, as JSON."}],
        response_format=Person,
        max_tokens=200,
        temperature=0.5,
        seed=11,
    )
    person = r.choices[0].message.parsed
    assert isinstance(person, Person)
    assert isinstance(person.favorite, Color)
    assert len(person.hobbies) <= 2


def test_json_schema_and_json_object(client, model_id):
    schema = {
        "type": "object",
        "properties": {"answer": {"type": "integer", "minimum": 0, "maximum": 100},
                       "unit": {"enum": ["kg", "lb"]}},
        "required": ["answer", "unit"],
    }
    r = client.chat.completions.create(
        model=model_id, messages=[{"role": "user", "content": "How heavy is a cat?"}], max_tokens=40,
        response_format={"type": "json_schema", "json_schema": {"name": "w", "schema": schema, "strict": False}},
    )
    jsonschema.validate(json.loads(r.choices[0].message.content), schema)
    info = r.model_extra["constraint"]
    assert info["enforced"] is True and info["strict"] is False and info["type"] == "json_schema"

    r = client.chat.completions.create(
        model=model_id, messages=[{"role": "user", "content": "A JSON object about cats"}], max_tokens=60,
        response_format={"type": "json_object"}, temperature=0, seed=4,
    )
    # The budget may cut a free-form object off; when it ends, it is an object.
    if r.choices[0].finish_reason == "stop":
        assert isinstance(json.loads(r.choices[0].message.content), dict)
    else:
        assert r.choices[0].message.content.startswith("{")


def test_extensions_regex_and_grammar(client, model_id):
    r = client.chat.completions.create(
        model=model_id, messages=[{"role": "user", "content": "A phone number"}], max_tokens=20,
        extra_body={"regex": "[0-9]{3}-[0-9]{4}", "top_k": 20, "min_p": 0.05},
    )
    assert r.choices[0].message.content.count("-") == 1 and len(r.choices[0].message.content) == 8
    r = client.chat.completions.create(
        model=model_id, messages=[{"role": "user", "content": "yes or no?"}], max_tokens=5,
        extra_body={"grammar": 'root ::= "yes" | "no"'},
    )
    assert r.choices[0].message.content in ("yes", "no")
    lark = 'start: "colour: " COLOUR\nCOLOUR: "red" | "green" | "blue"\n'
    r = client.chat.completions.create(
        model=model_id, messages=[{"role": "user", "content": "Name a colour."}], max_tokens=8,
        extra_body={"grammar": lark, "grammar_syntax": "lark"},
    )
    assert r.choices[0].message.content in ("colour: red", "colour: green", "colour: blue")
    assert r.model_extra["constraint"]["type"] == "lark"


def test_prompt_lookup_drafts_from_the_prompt_and_stays_valid(client, model_id):
    # An extraction: the values are in the prompt, so drafts copied from it are verified.
    schema = {
        "type": "object",
        "properties": {"name": {"type": "string", "maxLength": 40},
                       "email": {"type": "string", "maxLength": 60},
                       "born": {"type": "string", "maxLength": 20}},
        "required": ["name", "email", "born"],
        "additionalProperties": False,
    }
    text = ("Record: Margaret Hamilton-Oakes, email margaret.hamilton-oakes@example.org, "
            "born 1936-08-17 in Paoli. Extract name, email and born as JSON.")
    kwargs = dict(model=model_id, messages=[{"role": "user", "content": text}], max_tokens=80,
                  temperature=0, seed=3,
                  response_format={"type": "json_schema",
                                   "json_schema": {"name": "r", "schema": schema, "strict": True}})
    plain = client.chat.completions.create(**kwargs)
    assert plain.usage.completion_tokens_details is None
    fast = client.chat.completions.create(extra_body={"lookup": 8}, **kwargs)
    for r in (plain, fast):
        assert r.choices[0].finish_reason == "stop"
        jsonschema.validate(json.loads(r.choices[0].message.content), schema)
    details = fast.usage.completion_tokens_details
    assert details.accepted_prediction_tokens > 0, fast.usage
    # At most one draft of 8 per verifying step, and each step yields a token.
    drafted = details.accepted_prediction_tokens + details.rejected_prediction_tokens
    assert details.accepted_prediction_tokens <= fast.usage.completion_tokens
    assert drafted <= 8 * fast.usage.completion_tokens

    # Streamed, with the drafts counted in the last chunk's usage; sampled at temperature 1.
    stream = client.chat.completions.create(
        stream=True, stream_options={"include_usage": True}, extra_body={"lookup": 4},
        **{**kwargs, "temperature": 1.0})
    content, usage = "", None
    for chunk in stream:
        usage = chunk.usage or usage
        for c in chunk.choices:
            content += c.delta.content or ""
    jsonschema.validate(json.loads(content), schema)
    assert usage.completion_tokens_details.accepted_prediction_tokens >= 0


def test_streaming_text_matches_the_whole_answer(client, model_id):
    kwargs = dict(model=model_id, messages=[{"role": "user", "content": "Say something about the sea."}],
                  max_tokens=24, seed=42, temperature=0.8)
    whole = client.chat.completions.create(**kwargs)
    stream = client.chat.completions.create(stream=True, stream_options={"include_usage": True}, **kwargs)
    text, finish, usage = "", None, None
    for chunk in stream:
        if chunk.usage:
            usage = chunk.usage
        for c in chunk.choices:
            text += c.delta.content or ""
            finish = c.finish_reason or finish
    assert text == whole.choices[0].message.content
    assert finish == whole.choices[0].finish_reason
    assert usage.completion_tokens == whole.usage.completion_tokens


def test_streaming_tool_calls_reassemble(client, model_id):
    stream = client.chat.completions.create(
        model=model_id, messages=ASK, tools=TOOLS, tool_choice="required", max_tokens=100, stream=True, seed=8
    )
    calls: dict[int, dict] = {}
    finish = None
    for chunk in stream:
        for c in chunk.choices:
            finish = c.finish_reason or finish
            for tc in c.delta.tool_calls or []:
                call = calls.setdefault(tc.index, {"name": "", "arguments": "", "id": None})
                if tc.id:
                    call["id"] = tc.id
                if tc.function and tc.function.name:
                    call["name"] += tc.function.name
                if tc.function and tc.function.arguments:
                    call["arguments"] += tc.function.arguments
    assert finish == "tool_calls"
    assert calls
    for call in calls.values():
        assert call["id"]
        jsonschema.validate(json.loads(call["arguments"]), PARAMS[call["name"]])


def test_n_choices_and_seed_reproducibility(client, model_id):
    schema = {"type": "object", "properties": {"word": {"type": "string", "maxLength": 10}}, "required": ["word"]}
    fmt = {"type": "json_schema", "json_schema": {"name": "w", "schema": schema}}
    kwargs = dict(model=model_id, messages=[{"role": "user", "content": "One word"}], max_tokens=30,
                  response_format=fmt, temperature=1.0, seed=1234)
    a = client.chat.completions.create(n=3, **kwargs)
    assert [c.index for c in a.choices] == [0, 1, 2]
    for c in a.choices:
        jsonschema.validate(json.loads(c.message.content), schema)
    b = client.chat.completions.create(n=3, **kwargs)
    assert [c.message.content for c in a.choices] == [c.message.content for c in b.choices]


def test_logprobs(client, model_id):
    r = client.chat.completions.create(
        model=model_id, messages=[{"role": "user", "content": "Hi"}], max_tokens=6, logprobs=True, top_logprobs=3,
        seed=9,
    )
    content = r.choices[0].logprobs.content
    assert len(content) >= 1
    for t in content:
        assert t.logprob <= 0
        assert len(t.top_logprobs) == 3
        assert t.top_logprobs[0].logprob >= t.top_logprobs[-1].logprob


def test_legacy_completions(client, model_id):
    r = client.completions.create(model=model_id, prompt="The capital of France is", max_tokens=5, seed=1,
                                  logprobs=2)
    assert r.choices[0].text
    assert len(r.choices[0].logprobs.tokens) >= 1


def test_eight_concurrent_requests_each_valid_against_its_schema(client, model_id):
    def schema(i):
        return {
            "type": "object",
            "properties": {f"field_{i}": {"type": "integer", "minimum": i, "maximum": i + 10},
                           "tag": {"enum": [f"t{i}", f"u{i}"]}},
            "required": [f"field_{i}", "tag"],
            "additionalProperties": False,
        }

    def one(i):
        r = client.chat.completions.create(
            model=model_id, messages=[{"role": "user", "content": f"Request {i} as JSON"}], max_tokens=40,
            response_format={"type": "json_schema", "json_schema": {"name": f"s{i}", "schema": schema(i)}},
            seed=i,
        )
        value = json.loads(r.choices[0].message.content)
        jsonschema.validate(value, schema(i))
        return value

    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        results = list(pool.map(one, range(8)))
    assert len(results) == 8


def test_errors_are_openai_errors(server, client, model_id):
    bad = openai.OpenAI(base_url=server.v1, api_key="wrong", max_retries=0)
    with pytest.raises(openai.AuthenticationError):
        bad.models.list()
    status, body = server.get("/v1/models", key=None)
    assert status == 401 and json.loads(body)["error"]["code"] == "invalid_api_key"
    status, _ = server.get("/health", key=None)
    assert status == 200

    status, body = server.get("/v1/nothing-here")
    assert status == 404 and "error" in json.loads(body)

    with pytest.raises(openai.BadRequestError) as e:
        client.chat.completions.create(
            model=model_id, messages=ASK, max_tokens=5,
            response_format={"type": "json_schema", "json_schema": {"name": "bad", "schema": {
                "type": "object", "properties": {"age": {"type": "integer", "minimum": "zero"}}}}},
        )
    message = e.value.body["message"]
    assert "minimum" in message and "/properties/age" in message, message

    with pytest.raises(openai.BadRequestError):
        client.chat.completions.create(model="no-such-model", messages=ASK, max_tokens=5)

    headers = {"Authorization": f"Bearer {API_KEY}", "Content-Type": "application/json"}
    r = httpx.post(server.v1 + "/chat/completions", content=b"{not json", headers=headers)
    assert r.status_code == 400 and r.json()["error"]["type"] == "invalid_request_error"
    big = json.dumps({"messages": [{"role": "user", "content": "x" * (MAX_BODY + 10)}]})
    r = httpx.post(server.v1 + "/chat/completions", content=big, headers=headers)
    assert r.status_code == 413 and r.json()["error"]["code"] == "request_too_large"


def test_metrics_and_openapi(server):
    status, text = server.get("/metrics")
    assert status == 200
    for name in ("constrain_requests_total", "constrain_generated_tokens_total", "constrain_queue_length",
                 "constrain_mask_duration_seconds_sum", "constrain_compile_duration_seconds_count",
                 "constrain_eval_duration_seconds_bucket"):
        assert name in text
    status, body = server.get("/openapi.json")
    doc = json.loads(body)
    assert status == 200 and "/v1/chat/completions" in doc["paths"]


def test_request_log_line(server, client, model_id):
    """One JSON line per request on stderr, its times split into compiling, queueing, generating."""
    schema = {"type": "object", "properties": {f"f{uuid.uuid4().hex[:8]}": {"type": "integer"}},
              "required": [], "additionalProperties": False}
    r = client.chat.completions.create(
        model=model_id, messages=[{"role": "user", "content": "JSON:"}], max_tokens=16, seed=1,
        response_format={"type": "json_schema", "json_schema": {"name": "n", "schema": schema}})
    line = None
    for _ in range(50):
        found = [json.loads(l) for l in list(server.log) if l.startswith('{"event":"request"')]
        line = next((f for f in found if f["id"] == r.id), None)
        if line:
            break
        time.sleep(0.1)
    assert line is not None, "no log line for " + r.id
    assert line["outcome"] == "ok" and line["status"] == 200
    assert line["completion_tokens"] == r.usage.completion_tokens
    assert line["compile_ms"] > 0, "a schema never seen before is compiled"
    assert line["compile_ms"] <= line["queue_ms"] <= line["total_ms"]
    assert line["ttft_ms"] is None or line["queue_ms"] <= line["ttft_ms"] <= line["total_ms"]
