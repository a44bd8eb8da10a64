"""XGrammar structural tags as `response_format: {"type": "structural_tag", ...}`, through the
official `openai` client: outputs follow the tags (parsed back, the JSON inside validated), on
both routes and in vLLM's older `structures`/`triggers` form, and a bad tag is a 400 naming the
JSON pointer."""

import json
import re

import jsonschema
import openai
import pytest

CITY = {
    "type": "object",
    "properties": {"city": {"type": "string", "maxLength": 20}},
    "required": ["city"],
    "additionalProperties": False,
}
ASK = [{"role": "user", "content": "Think briefly, then call the weather tool for Paris."}]


def think_then_call(**flags):
    return {
        "type": "structural_tag",
        "format": {
            "type": "sequence",
            "elements": [
                {"type": "tag", "begin": "<think>", "content": {"type": "any_text"}, "end": "</think>"},
                {
                    "type": "triggered_tags",
                    "triggers": ["<tool_call>"],
                    "tags": [
                        {
                            "begin": '<tool_call>{"name": "weather", "arguments": ',
                            "content": {"type": "json_schema", "json_schema": CITY},
                            "end": "}</tool_call>",
                        }
                    ],
                    **flags,
                },
            ],
        },
    }


CALL = re.compile(r'<tool_call>\{"name": "weather", "arguments": (.*?)\}</tool_call>', re.S)


def calls_in(text):
    """The arguments of every call in `text`, each validated; the text around them holds no
    stray `<tool_call>`."""
    args = [json.loads(m) for m in CALL.findall(text)]
    for a in args:
        jsonschema.validate(a, CITY)
    assert "<tool_call>" not in CALL.sub("", text), text
    return args


@pytest.mark.parametrize("seed", [1, 2])
def test_a_forced_call_after_thinking_follows_the_tags(client, model_id, seed):
    r = client.chat.completions.create(
        model=model_id, messages=ASK, max_tokens=60, seed=seed, temperature=1.0,
        response_format=think_then_call(at_least_one=True, stop_after_first=True),
    )
    c = r.choices[0]
    assert c.finish_reason == "stop", c
    text = c.message.content
    m = re.fullmatch(r"<think>(.*?)</think>(.*)", text, re.S)
    assert m and "</think>" not in m.group(1), text
    assert CALL.fullmatch(m.group(2)), text
    assert len(calls_in(m.group(2))) == 1
    assert r.model_extra["constraint"]["type"] == "structural_tag"


def test_free_text_with_triggered_calls_streams_and_keeps_the_tags(client, model_id):
    stream = client.chat.completions.create(
        model=model_id, messages=ASK, max_tokens=60, seed=3, temperature=1.0, stream=True,
        response_format=think_then_call(),
    )
    text = ""
    for chunk in stream:
        for c in chunk.choices:
            text += c.delta.content or ""
    assert text.startswith("<think>") and "</think>" in text, text
    calls_in(text.split("</think>", 1)[1])


def test_the_completions_route_and_vllms_older_form(client, model_id):
    legacy = {
        "type": "structural_tag",
        "structures": [{"begin": "<city>", "schema": CITY, "end": "</city>"}],
        "triggers": ["<city>"],
    }
    r = client.completions.create(
        model=model_id, prompt="The weather tool takes <city>", max_tokens=40, seed=2,
        extra_body={"response_format": legacy},
    )
    text = r.choices[0].text
    for body in re.findall(r"<city>(.*?)</city>", text, re.S):
        jsonschema.validate(json.loads(body), CITY)
    assert "<city>" not in re.sub(r"<city>.*?</city>", "", text, flags=re.S), text


@pytest.mark.parametrize("format_, pointer", [
    ({"type": "sequence", "elements": [{"type": "const_string", "value": "a"}, {"type": "nope"}]},
     "/format/elements/1/type"),
    ({"type": "triggered_tags", "triggers": ["<f="],
      "tags": [{"begin": "<g>", "content": {"type": "any_text"}, "end": "</g>"}]},
     "/format/tags/0/begin"),
    ({"type": "tag", "begin": "<a>", "end": "</a>",
      "content": {"type": "json_schema", "json_schema": {"type": "strnig"}}},
     "/format/content"),
])
def test_a_bad_structural_tag_is_a_400_naming_the_pointer(client, model_id, format_, pointer):
    with pytest.raises(openai.BadRequestError) as e:
        client.chat.completions.create(
            model=model_id, messages=ASK, max_tokens=10,
            response_format={"type": "structural_tag", "format": format_},
        )
    assert e.value.status_code == 400
    error = e.value.body
    assert error["type"] == "invalid_request_error", error
    assert error["param"] == "response_format", error
    assert error["code"] == "invalid_structural_tag", error
    assert pointer in error["message"], error
