"""OpenAI's custom tools on the chat route, through the official `openai` client: a tool whose
input is text in a Lark grammar (or a regular expression, or free), called by name, its input
parsed by the `lark` package's Earley parser as the oracle; streamed as `custom` deltas; fed back
in the history for the next turn.
"""

import re

import lark
import pytest

ARITHMETIC = r"""
start: expr
expr: term (("+" | "-") term)*
term: NUMBER | "(" expr ")"
NUMBER: /[0-9]{1,4}/
%ignore " "
"""
CALC = {"type": "custom", "custom": {"name": "calc", "description": "Evaluates arithmetic.",
                                     "format": {"type": "grammar", "grammar": {"syntax": "lark", "definition": ARITHMETIC}}}}
DATE = {"type": "custom", "custom": {"name": "day", "description": "A date.",
                                     "format": {"type": "grammar", "grammar": {"syntax": "regex",
                                                                               "definition": r"2026-(0[1-9]|1[0-2])-[0-2][0-9]"}}}}
ASK = [{"role": "user", "content": "What is 12 plus 30, minus 2?"}]


def test_a_custom_tool_with_a_lark_grammar(client, model_id):
    parser = lark.Lark(ARITHMETIC, parser="earley", lexer="dynamic")
    for seed in range(3):
        r = client.chat.completions.create(
            model=model_id, messages=ASK, tools=[CALC, DATE], temperature=1.0, seed=seed, max_tokens=60,
            tool_choice={"type": "custom", "custom": {"name": "calc"}},
        )
        choice = r.choices[0]
        assert choice.finish_reason == "tool_calls"
        call = choice.message.tool_calls[0]
        assert call.type == "custom" and call.custom.name == "calc"
        parser.parse(call.custom.input)  # raises if Lark refuses it


def test_a_custom_tool_with_a_regex_and_the_next_turn(client, model_id):
    r = client.chat.completions.create(
        model=model_id, messages=[{"role": "user", "content": "Pick a day in March."}], tools=[CALC, DATE],
        tool_choice={"type": "custom", "custom": {"name": "day"}}, temperature=0.8, seed=2, max_tokens=40,
    )
    call = r.choices[0].message.tool_calls[0]
    assert re.fullmatch(r"2026-(0[1-9]|1[0-2])-[0-2][0-9]", call.custom.input)
    follow = client.chat.completions.create(
        model=model_id, max_tokens=10, tools=[CALC, DATE],
        messages=[{"role": "user", "content": "Pick a day in March."},
                  {"role": "assistant", "content": None, "tool_calls": [
                      {"id": call.id, "type": "custom", "custom": {"name": "day", "input": call.custom.input}}]},
                  {"role": "tool", "tool_call_id": call.id, "content": "noted"}],
    )
    assert follow.choices[0].finish_reason in ("stop", "length", "tool_calls")


def test_custom_calls_stream_as_custom_deltas(client, model_id):
    parser = lark.Lark(ARITHMETIC, parser="earley", lexer="dynamic")
    names, inputs, kinds = {}, {}, set()
    finish = None
    for chunk in client.chat.completions.create(
        model=model_id, messages=ASK, tools=[CALC], tool_choice="required", temperature=0.9, seed=4,
        max_tokens=60, stream=True,
    ):
        for c in chunk.choices:
            finish = c.finish_reason or finish
            for tc in c.delta.tool_calls or []:
                extra = tc.model_extra or {}
                if tc.type:
                    kinds.add(tc.type)
                custom = extra.get("custom") or {}
                if custom.get("name"):
                    names[tc.index] = custom["name"]
                inputs[tc.index] = inputs.get(tc.index, "") + (custom.get("input") or "")
    assert kinds == {"custom"} and finish == "tool_calls"
    assert set(names.values()) == {"calc"} and names.keys() == inputs.keys()
    for text in inputs.values():
        parser.parse(text)


def test_custom_tools_need_a_format_with_text_calls(start_server):
    import openai

    hermes = start_server(["--tool-format", "hermes"])
    with pytest.raises(openai.BadRequestError) as e:
        hermes.chat.completions.create(model="default", messages=ASK, tools=[CALC], max_tokens=5)
    assert e.value.body["param"] == "tools[0].type"
    assert "generic" in e.value.body["message"]
