"""`constrain serve`'s `/v1/responses` driven by the official `openai` package's
`client.responses`: a tool turn, structured output, streaming, stored responses and errors."""

import json

import jsonschema
import openai
import pytest
from pydantic import BaseModel, Field

from test_openai_client import WEATHER as CHAT_WEATHER

# The chat suite's tool in the Responses API's flat form.
WEATHER = {"type": "function", **CHAT_WEATHER["function"]}
REPORT = {
    "type": "object",
    "properties": {
        "city": {"type": "string", "maxLength": 20},
        "degrees": {"type": "integer", "minimum": -50, "maximum": 50},
    },
    "required": ["city", "degrees"],
    "additionalProperties": False,
}
REPORT_FORMAT = {"format": {"type": "json_schema", "name": "report", "schema": REPORT, "strict": True}}
ASK = [{"role": "user", "content": "What is the weather in Oslo right now?"}]


def calls_of(response):
    return [item for item in response.output if item.type == "function_call"]


def test_a_tool_turn_forced_call_output_fed_back_then_the_answer(client, model_id):
    first = client.responses.create(
        model=model_id, input=ASK, tools=[WEATHER], tool_choice={"type": "function", "name": "get_weather"},
        max_output_tokens=80, temperature=0, extra_body={"seed": 1},
    )
    assert first.object == "response" and first.id.startswith("resp_")
    assert first.status == "completed"
    calls = calls_of(first)
    assert calls, first.output
    call = calls[0]
    assert call.name == "get_weather" and call.call_id and call.status == "completed"
    jsonschema.validate(json.loads(call.arguments), WEATHER["parameters"])
    assert first.usage.input_tokens > 0 and first.usage.output_tokens > 0
    assert first.usage.total_tokens == first.usage.input_tokens + first.usage.output_tokens

    # The whole conversation sent back: the call as the model made it, then its output.
    history = ASK + [call.model_dump(exclude_none=True)]
    history.append({"type": "function_call_output", "call_id": call.call_id,
                    "output": json.dumps({"city": "Oslo", "degrees": 12})})
    final = client.responses.create(
        model=model_id, input=history, tools=[WEATHER], tool_choice="none", text=REPORT_FORMAT,
        max_output_tokens=60, temperature=0, extra_body={"seed": 1},
    )
    assert final.status == "completed"
    assert not calls_of(final)
    assert final.output[0].type == "message" and final.output[0].role == "assistant"
    jsonschema.validate(json.loads(final.output_text), REPORT)


def test_a_stored_response_is_continued_by_its_id(client, model_id):
    first = client.responses.create(
        model=model_id, input=ASK, tools=[WEATHER], tool_choice="required", parallel_tool_calls=False,
        max_output_tokens=80, extra_body={"seed": 2},
    )
    [call] = calls_of(first)
    kwargs = dict(
        model=model_id, tools=[WEATHER], tool_choice="none", text=REPORT_FORMAT, max_output_tokens=60,
        input=[{"type": "function_call_output", "call_id": call.call_id, "output": "12 degrees, sunny"}],
        extra_body={"seed": 2},
    )
    follow = client.responses.create(previous_response_id=first.id, **kwargs)
    assert follow.previous_response_id == first.id
    jsonschema.validate(json.loads(follow.output_text), REPORT)
    # The stored turns (the question, the call) are in the prompt: more input than the new
    # item alone.
    alone = client.responses.create(**kwargs)
    assert follow.usage.input_tokens > alone.usage.input_tokens + 10


def test_text_format_json_schema_validates(client, model_id):
    for seed in range(3):
        r = client.responses.create(
            model=model_id, instructions="Report the weather as JSON.",
            input="The weather in Oslo is 12 degrees.", text=REPORT_FORMAT, max_output_tokens=60,
            temperature=0.8, extra_body={"seed": seed},
        )
        assert r.status == "completed"
        jsonschema.validate(json.loads(r.output_text), REPORT)
        assert r.text.format.type == "json_schema"
        assert r.model_extra["constraint"]["type"] == "json_schema"


def test_json_object_format_is_a_json_object(client, model_id):
    r = client.responses.create(
        model=model_id, input="A JSON object about cats", text={"format": {"type": "json_object"}},
        max_output_tokens=60, temperature=0, extra_body={"seed": 4},
    )
    assert isinstance(json.loads(r.output_text), dict)


def test_streaming_events_in_order_rebuild_the_whole_response(client, model_id):
    kwargs = dict(model=model_id, input="The weather in Oslo is 12 degrees.", text=REPORT_FORMAT,
                  max_output_tokens=60, temperature=0.8, extra_body={"seed": 42})
    whole = client.responses.create(**kwargs)
    events = list(client.responses.create(stream=True, **kwargs))
    kinds = [e.type for e in events]
    assert kinds[:4] == ["response.created", "response.in_progress", "response.output_item.added",
                         "response.content_part.added"]
    assert kinds[-4:] == ["response.output_text.done", "response.content_part.done",
                          "response.output_item.done", "response.completed"]
    assert set(kinds[4:-4]) == {"response.output_text.delta"}
    assert [e.sequence_number for e in events] == list(range(len(events)))
    text = "".join(e.delta for e in events if e.type == "response.output_text.delta")
    assert text == whole.output_text
    assert events[-4].text == text
    done = events[-1].response
    assert done.status == "completed" and done.output_text == text
    assert [item.type for item in done.output] == [item.type for item in whole.output]
    assert done.usage.output_tokens == whole.usage.output_tokens
    jsonschema.validate(json.loads(text), REPORT)


def test_streaming_a_call_sends_its_arguments(client, model_id):
    events = list(client.responses.create(
        model=model_id, input=ASK, tools=[WEATHER], tool_choice="required", parallel_tool_calls=False,
        max_output_tokens=80, stream=True, extra_body={"seed": 8},
    ))
    added = next(e for e in events if e.type == "response.output_item.added")
    assert added.item.type == "function_call" and added.item.name == "get_weather"
    pieces = "".join(e.delta for e in events if e.type == "response.function_call_arguments.delta")
    done = next(e for e in events if e.type == "response.function_call_arguments.done")
    assert done.arguments == pieces
    jsonschema.validate(json.loads(pieces), WEATHER["parameters"])
    assert events[-1].type == "response.completed"
    assert events[-1].response.output[0].arguments == pieces


def test_the_stream_helper_parses_into_a_pydantic_model(client, model_id):
    class Report(BaseModel):
        city: str = Field(max_length=20)
        degrees: int = Field(ge=-50, le=50)

    with client.responses.stream(model=model_id, input="The weather in Oslo is 12 degrees.", text_format=Report,
                                 max_output_tokens=60, extra_body={"seed": 5}) as stream:
        for _ in stream:
            pass
        final = stream.get_final_response()
    assert final.status == "completed"
    assert isinstance(final.output_parsed, Report)


def test_max_output_tokens_cut_is_incomplete(client, model_id):
    r = client.responses.create(model=model_id, input="Tell me a long story about a cat.", max_output_tokens=4,
                                extra_body={"seed": 3})
    assert r.status == "incomplete", r
    assert r.incomplete_details.reason == "max_output_tokens"
    assert r.usage.output_tokens == 4


@pytest.mark.parametrize("kwargs,param", [
    (dict(tools=[{"type": "web_search"}]), "tools[0].type"),
    (dict(text={"format": {"type": "json_schema", "name": "x", "strict": True,
                           "schema": {"type": "string", "format": "no-such-format"}}}), "text.format.strict"),
    (dict(text={"format": {"type": "json_schema", "name": "x", "schema": {"type": "strnig"}}}), "text.format"),
    (dict(max_output_tokens=0), "max_output_tokens"),
    (dict(temperature=5), "temperature"),
    (dict(previous_response_id="resp_unknown"), "previous_response_id"),
    (dict(tools=[WEATHER], tool_choice={"type": "function", "name": "nope"}), "tool_choice.name"),
    (dict(input=[{"role": "user", "content": [{"type": "input_image", "image_url": "http://x/y.png"}]}]),
     "input[0].content[0].type"),
    (dict(input=[{"type": "item_reference", "id": "msg_1"}]), "input[0].type"),
])
def test_bad_requests_are_400_error_objects_naming_the_parameter(client, model_id, kwargs, param):
    kwargs = {"model": model_id, "input": "hi", **kwargs}
    with pytest.raises(openai.BadRequestError) as e:
        client.responses.create(**kwargs)
    assert e.value.status_code == 400
    assert e.value.param == param, e.value.message
    assert e.value.type == "invalid_request_error"
    assert e.value.message
