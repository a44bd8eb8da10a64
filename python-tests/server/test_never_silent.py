"""Constraints are enforced or refused, never dropped: `response_format: {"type": "json_object",
"schema": ...}` (llama-server's form) is enforced, and a constraint field the server does not
support is a 400 naming it, through the official `openai` client."""

import json

import jsonschema
import openai
import pytest

PERSON = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "maxLength": 16},
        "age": {"type": "integer", "minimum": 0, "maximum": 120},
    },
    "required": ["name", "age"],
    "additionalProperties": False,
}
ASK = [{"role": "user", "content": "Ada is 36. Describe her as JSON."}]


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_json_object_with_a_schema_is_enforced(client, model_id, seed):
    r = client.chat.completions.create(
        model=model_id, messages=ASK, max_tokens=40, seed=seed, temperature=1.0,
        response_format={"type": "json_object", "schema": PERSON},
    )
    c = r.choices[0]
    assert c.finish_reason == "stop"
    jsonschema.validate(json.loads(c.message.content), PERSON)
    info = r.model_extra["constraint"]
    assert info["enforced"] is True and info["type"] == "json_schema"


def test_json_object_with_a_schema_streams_valid_json(client, model_id):
    stream = client.chat.completions.create(
        model=model_id, messages=ASK, max_tokens=40, seed=5, stream=True,
        response_format={"type": "json_object", "schema": PERSON},
    )
    text, finish = "", None
    for chunk in stream:
        for c in chunk.choices:
            text += c.delta.content or ""
            finish = c.finish_reason or finish
    assert finish == "stop"
    jsonschema.validate(json.loads(text), PERSON)


def test_json_object_with_a_schema_on_the_completions_route(client, model_id):
    schema = {"enum": ["red", "green", "blue"]}
    r = client.completions.create(
        model=model_id, prompt="My favourite colour is", max_tokens=8, seed=2,
        extra_body={"response_format": {"type": "json_object", "schema": schema}},
    )
    assert json.loads(r.choices[0].text) in schema["enum"]
    assert r.choices[0].finish_reason == "stop"


@pytest.mark.parametrize("extra, param", [
    ({"response_format": {"type": "json_object", "schema": PERSON, "strict": True}},
     "response_format.strict"),
    ({"response_format": {"type": "json_schema", "schema": PERSON, "json_schema": {"name": "p"}}},
     "response_format.schema"),
    ({"response_format": {"type": "json_schema",
                          "json_schema": {"name": "p", "schema": PERSON, "pattern": "x"}}},
     "response_format.json_schema.pattern"),
    ({"tools": [{"type": "web_search"}]}, "tools[0].type"),
    ({"tools": [{"type": "custom", "custom": {"name": "sql", "format": {"type": "grammar", "grammar": {
        "syntax": "ebnf", "definition": "root ::= x"}}}}]}, "tools[0].custom.format.grammar.syntax"),
    ({"response_format": {"type": "json_schema", "json_schema": {
        "name": "p", "strict": True, "schema": {"type": "string", "format": "no-such-format"}}}},
     "response_format.json_schema.strict"),
    ({"guided_json": PERSON}, "guided_json"),
])
def test_constraints_the_server_cannot_keep_are_refused_by_name(client, model_id, extra, param):
    with pytest.raises(openai.BadRequestError) as e:
        client.chat.completions.create(model=model_id, messages=ASK, max_tokens=20, extra_body=extra)
    assert e.value.status_code == 400
    error = e.value.body
    assert error["param"] == param, error
    assert error["type"] == "invalid_request_error"


def test_finish_reason_is_length_only_for_a_cut_output(client, model_id):
    # Free text at a budget of 3 tokens is cut; a schema-constrained output completes within it.
    r = client.chat.completions.create(
        model=model_id, messages=[{"role": "user", "content": "Tell me a long story."}],
        max_tokens=3, temperature=0, logit_bias={"1": -100, "106": -100},
    )
    assert r.choices[0].finish_reason == "length"
    assert r.usage.completion_tokens == 3
    r = client.chat.completions.create(
        model=model_id, messages=ASK, max_tokens=16, seed=4,
        response_format={"type": "json_object", "schema": PERSON},
    )
    assert r.choices[0].finish_reason == "stop"
    jsonschema.validate(json.loads(r.choices[0].message.content), PERSON)
