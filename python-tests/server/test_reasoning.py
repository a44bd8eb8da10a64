"""Reasoning first: with `--reasoning on` the model's thinking (`<think>...</think>`) is free
text, the request's constraint applies to the answer after it, and the thinking comes back as
`reasoning_content` (whole and in stream deltas) or, on the Responses API, as a reasoning item.
A thinking budget ends the thinking in time for the answer to complete within `max_tokens`.
The default model does not think by itself: the budget is what makes it close its thought.
"""

import json

import jsonschema
import openai
import pytest

PERSON = {
    "type": "object",
    "properties": {"name": {"type": "string", "maxLength": 12}, "age": {"type": "integer", "minimum": 0, "maximum": 120}},
    "required": ["name", "age"],
    "additionalProperties": False,
}
FORMAT = {"type": "json_schema", "json_schema": {"name": "person", "schema": PERSON, "strict": True}}
ASK = [{"role": "user", "content": "Alice is 31. Reply with her as JSON."}]


@pytest.fixture(scope="module")
def thinker(start_server):
    return start_server(["--reasoning", "on", "--tool-format", "hermes"])


def test_the_answer_follows_the_schema_after_the_thinking(thinker):
    r = thinker.chat.completions.create(
        model="default", messages=ASK, response_format=FORMAT, temperature=0.8, seed=3,
        max_tokens=80, extra_body={"thinking_budget": 12},
    )
    choice = r.choices[0]
    assert choice.finish_reason == "stop"
    thought = choice.message.model_extra.get("reasoning_content")
    assert isinstance(thought, str) and thought
    assert "</think>" not in thought and "</think>" not in choice.message.content
    jsonschema.validate(json.loads(choice.message.content), PERSON)
    assert r.constraint["triggered_by"] == "</think>"


def test_max_tokens_alone_leaves_room_for_the_answer(thinker):
    # No thinking budget: the thought is cut where the answer's shortest form still fits.
    for seed in range(3):
        r = thinker.chat.completions.create(
            model="default", messages=ASK, response_format=FORMAT, temperature=1.0, seed=seed, max_tokens=40,
        )
        choice = r.choices[0]
        assert choice.finish_reason == "stop", choice
        assert r.usage.completion_tokens <= 40
        jsonschema.validate(json.loads(choice.message.content), PERSON)


def test_thinking_streams_as_reasoning_content_deltas(thinker):
    thought, content = "", ""
    for chunk in thinker.chat.completions.create(
        model="default", messages=ASK, response_format=FORMAT, temperature=0.8, seed=5, max_tokens=80,
        stream=True, extra_body={"thinking_budget": 10},
    ):
        for c in chunk.choices:
            thought += (c.delta.model_extra or {}).get("reasoning_content") or ""
            content += c.delta.content or ""
    assert thought and "</think>" not in thought + content
    jsonschema.validate(json.loads(content), PERSON)


def test_thinking_turned_off_by_the_template_switch(thinker):
    r = thinker.chat.completions.create(
        model="default", messages=ASK, response_format=FORMAT, temperature=0.8, seed=3, max_tokens=60,
        extra_body={"chat_template_kwargs": {"enable_thinking": False}},
    )
    message = r.choices[0].message
    assert message.model_extra.get("reasoning_content") is None
    jsonschema.validate(json.loads(message.content), PERSON)


def test_a_forced_call_after_thinking(thinker):
    tools = [{"type": "function", "function": {"name": "save", "parameters": PERSON}}]
    r = thinker.chat.completions.create(
        model="default", messages=ASK, tools=tools, tool_choice="required", temperature=0.8, seed=1,
        max_tokens=100, extra_body={"thinking_budget": 8},
    )
    choice = r.choices[0]
    assert choice.finish_reason == "tool_calls"
    assert choice.message.model_extra.get("reasoning_content")
    jsonschema.validate(json.loads(choice.message.tool_calls[0].function.arguments), PERSON)


def test_responses_return_the_thinking_as_a_reasoning_item(thinker):
    r = thinker.responses.create(
        model="default", input="Alice is 31. Reply with her as JSON.", max_output_tokens=80, temperature=0.8,
        text={"format": {"type": "json_schema", "name": "person", "schema": PERSON, "strict": True}},
        extra_body={"thinking_budget": 10},
    )
    assert [item.type for item in r.output] == ["reasoning", "message"]
    assert r.output[0].content[0].text
    jsonschema.validate(json.loads(r.output_text), PERSON)
    off = thinker.responses.create(
        model="default", input="Alice is 31. Reply with her as JSON.", max_output_tokens=60,
        text={"format": {"type": "json_schema", "name": "person", "schema": PERSON, "strict": True}},
        reasoning={"effort": "minimal"},
    )
    assert [item.type for item in off.output] == ["message"]


def test_what_a_model_that_does_not_think_refuses(client):
    with pytest.raises(openai.BadRequestError) as e:
        client.chat.completions.create(model="default", messages=ASK, max_tokens=5, extra_body={"thinking_budget": 5})
    assert e.value.body["param"] == "thinking_budget"
    with pytest.raises(openai.BadRequestError) as e:
        client.chat.completions.create(
            model="default", messages=ASK, max_tokens=5, extra_body={"chat_template_kwargs": {"enable_thinking": True}})
    assert e.value.body["param"] == "chat_template_kwargs.enable_thinking"
    with pytest.raises(openai.BadRequestError) as e:
        client.chat.completions.create(
            model="default", messages=ASK, max_tokens=5, extra_body={"chat_template_kwargs": {"custom": 1}})
    assert e.value.body["param"] == "chat_template_kwargs.custom"
    for fields, param in [
        ({"reasoning": {"effort": "high"}}, "chat_template_kwargs.enable_thinking"),
        ({"reasoning": {"summary": "auto"}}, "reasoning.summary"),
        ({"truncation": "auto"}, "truncation"),
        ({"text": {"verbosity": "low"}}, "text.verbosity"),
    ]:
        with pytest.raises(openai.BadRequestError) as e:
            client.responses.create(model="default", input="hi", max_output_tokens=5, **fields)
        assert e.value.body["param"] == param, fields
