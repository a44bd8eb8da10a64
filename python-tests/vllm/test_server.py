"""vLLM's OpenAI server with ``--structured-outputs-config '{"backend": "constrain"}'``, driven
by the official ``openai`` client: response formats, tool calls, vLLM's ``structured_outputs``
field, concurrency, and a bad schema refused while the server keeps serving."""

from __future__ import annotations

import json
import re
from concurrent.futures import ThreadPoolExecutor

import jsonschema
import openai
import pytest

from conftest import load_schema

# Tools are `strict`: only then does vLLM's tool parser put the parameters' schema into the
# structural tag it sends (a tool without it gets any JSON value as arguments, by design).
WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "The weather in a city.",
        "strict": True,
        "parameters": {
            "type": "object",
            "properties": {
                "city": {"type": "string", "maxLength": 40},
                "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
            },
            "required": ["city", "unit"],
            "additionalProperties": False,
        },
    },
}
TIME = {
    "type": "function",
    "function": {
        "name": "get_time",
        "description": "The time in a time zone.",
        "strict": True,
        "parameters": {
            "type": "object",
            "properties": {"zone": {"type": "string", "maxLength": 40}},
            "required": ["zone"],
            "additionalProperties": False,
        },
    },
}


def _chat(client, text: str, max_tokens: int = 200, **kwargs):
    return client.chat.completions.create(
        model="gemma", messages=[{"role": "user", "content": text}],
        temperature=0.8, max_tokens=max_tokens, **kwargs,
    )


def _stopped(response) -> str:
    choice = response.choices[0]
    assert choice.finish_reason in ("stop", "tool_calls"), (choice.finish_reason, choice.message)
    return choice.message.content


@pytest.mark.parametrize("name", ["person.json", "tool_call.json", "sensor_readings.json"])
def test_response_format_json_schema(client, name):
    schema = load_schema(name)
    response = _chat(client, f"Give an example: {schema['description']}", response_format={
        "type": "json_schema", "json_schema": {"name": "answer", "schema": schema}})
    jsonschema.validate(json.loads(_stopped(response)), schema)


def test_response_format_json_object(client):
    response = _chat(client, "Describe a cat as JSON.", response_format={"type": "json_object"})
    assert isinstance(json.loads(_stopped(response)), dict)


def _check_calls(response, tools):
    calls = response.choices[0].message.tool_calls
    assert calls, response.choices[0].message
    by_name = {t["function"]["name"]: t["function"]["parameters"] for t in tools}
    for call in calls:
        jsonschema.validate(json.loads(call.function.arguments), by_name[call.function.name])
    return calls


def test_tools_with_tool_choice_required(client):
    tools = [WEATHER, TIME]
    response = _chat(client, "What is the weather in Paris?", tools=tools, tool_choice="required")
    _check_calls(response, tools)


def test_tools_with_a_named_function(client):
    response = _chat(client, "What time is it in Tokyo?", tools=[WEATHER, TIME],
                     tool_choice={"type": "function", "function": {"name": "get_time"}})
    calls = _check_calls(response, [WEATHER, TIME])
    assert [c.function.name for c in calls] == ["get_time"]


def test_structured_outputs_regex_choice_and_grammar(client):
    regex = _chat(client, "A date?", max_tokens=30,
                  extra_body={"structured_outputs": {"regex": r"20[0-9]{2}-[01][0-9]-[0-3][0-9]"}})
    assert re.fullmatch(r"20[0-9]{2}-[01][0-9]-[0-3][0-9]", _stopped(regex))
    choice = _chat(client, "Is the sky blue?", max_tokens=10,
                   extra_body={"structured_outputs": {"choice": ["yes", "no"]}})
    assert _stopped(choice) in ("yes", "no")
    grammar = _chat(client, "Count.", max_tokens=40,
                    extra_body={"structured_outputs": {"grammar": 'root ::= "n=" [1-9] [0-9]*'}})
    assert re.fullmatch(r"n=[1-9][0-9]*", _stopped(grammar))


def test_eight_concurrent_requests(client):
    schemas = [load_schema(n) for n in ("person.json", "message.json", "tool_call.json", "tree.json")] * 2

    def one(schema):
        response = _chat(client, f"Example JSON: {schema['description']}", max_tokens=160,
                         response_format={"type": "json_schema",
                                          "json_schema": {"name": "x", "schema": schema}})
        jsonschema.validate(json.loads(_stopped(response)), schema)

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(one, schemas))


def test_a_bad_schema_is_an_error_and_the_server_keeps_serving(client):
    bad = {"type": "object", "properties": {"when": {"type": "string", "pattern": "(unclosed"}}}
    with pytest.raises(openai.BadRequestError) as error:
        _chat(client, "x", response_format={"type": "json_schema",
                                             "json_schema": {"name": "x", "schema": bad}})
    message = str(error.value)
    assert "pattern" in message and "/properties/when" in message, message
    response = _chat(client, "Is it raining?", max_tokens=10,
                     extra_body={"structured_outputs": {"choice": ["yes", "no"]}})
    assert _stopped(response) in ("yes", "no")
