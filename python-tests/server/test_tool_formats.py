"""Each model family's tool-call format, end to end: `constrain serve --tool-format F` with the
default model, a call forced with `tool_choice`, streamed and reassembled by the official
`openai` client's own stream state, its arguments valid against the tool's schema; and the
raw text the model generated (its tokens, from `logprobs`) exactly what the family's published
chat template writes when it renders that call back into the conversation (the templates of
Qwen 3 and DeepSeek V3 from ../shared, rendered with Jinja2), or, for families whose template
is not on this machine, their documented spelling.
"""

import json
import os
import pathlib

import jinja2
import jsonschema
import pytest
from openai.lib.streaming.chat import ChatCompletionStreamState

WEATHER = {
    "type": "object",
    "properties": {"city": {"type": "string", "maxLength": 20}, "days": {"type": "integer", "minimum": 1, "maximum": 7}},
    "required": ["city", "days"],
    "additionalProperties": False,
}
TOOLS = [{"type": "function", "function": {"name": "get_weather", "description": "Forecast for a city.", "parameters": WEATHER}}]
MESSAGES = [{"role": "user", "content": "What will the weather be in Oslo for the next 3 days?"}]


def shared_template(name: str) -> str | None:
    root = pathlib.Path(os.environ.get("CONSTRAIN_SHARED_DIR") or pathlib.Path(__file__).resolve().parents[3] / "shared")
    path = root / "tokenizers" / name / "tokenizer_config.json"
    if not path.is_file():
        if os.environ.get("CONSTRAIN_REQUIRE_SHARED") == "1":
            pytest.fail(f"{path} is missing")
        return None
    return json.loads(path.read_text())["chat_template"]


def render(template: str, messages: list, tools: list) -> str:
    env = jinja2.Environment(trim_blocks=True, lstrip_blocks=True, extensions=["jinja2.ext.loopcontrols"])
    return env.from_string(template).render(messages=messages, tools=tools, bos_token="", add_generation_prompt=False)


def documented(family: str, args: str) -> str:
    """How each family spells one call to get_weather (see docs/tool-calls.md)."""
    return {
        "generic": f'<tool_call>{{"name": "get_weather", "arguments": {args}}}</tool_call>',
        "hermes": f'<tool_call>\n{{"name": "get_weather", "arguments": {args}}}\n</tool_call>',
        "llama3": f'{{"name": "get_weather", "parameters": {args}}}',
        "mistral": f'[TOOL_CALLS] [{{"name": "get_weather", "arguments": {args}}}]',
        "deepseek": "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>get_weather\n```json\n"
        f"{args}\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>",
        "harmony": f"<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{args}<|call|>",
    }[family]


FAMILIES = ["generic", "hermes", "llama3", "mistral", "deepseek", "harmony"]


@pytest.mark.parametrize(("family", "choice"), [(f, "required") for f in FAMILIES] + [("hermes", "named")])
def test_a_forced_call_streams_parses_and_renders_back_as_generated(start_server, family, choice):
    client = start_server(["--tool-format", family])
    tool_choice = "required" if choice == "required" else {"type": "function", "function": {"name": "get_weather"}}
    state = ChatCompletionStreamState()
    raw = b""
    for chunk in client.chat.completions.create(
        model="default", messages=MESSAGES, tools=TOOLS, tool_choice=tool_choice, parallel_tool_calls=False,
        temperature=0.7, seed=7, max_tokens=120, stream=True, logprobs=True,
    ):
        state.handle_chunk(chunk)
        for choice_ in chunk.choices:
            for lp in (choice_.logprobs.content if choice_.logprobs and choice_.logprobs.content else []):
                raw += bytes(lp.bytes)
    completion = state.get_final_completion()
    choice_ = completion.choices[0]
    assert choice_.finish_reason == "tool_calls", raw
    calls = choice_.message.tool_calls
    assert len(calls) == 1 and calls[0].function.name == "get_weather"
    args = json.loads(calls[0].function.arguments)
    jsonschema.validate(args, WEATHER)
    assert isinstance(args["days"], int)
    text = raw.decode()
    assert text == documented(family, calls[0].function.arguments), text

    # The published template renders the parsed call back as exactly the generated text.
    published = {"hermes": "qwen3", "deepseek": "deepseek_v3"}.get(family)
    template = shared_template(published) if published else None
    if template is not None:
        history = MESSAGES + [{"role": "assistant", "content": "", "tool_calls": [
            {"id": calls[0].id, "type": "function",
             "function": {"name": "get_weather", "arguments": calls[0].function.arguments}}]}]
        if family == "deepseek":
            # That template writes `content is none` turns as calls, and closes the calls only
            # after a second one (its `<｜tool▁calls▁end｜>` sits in the loop's else branch).
            history[-1]["content"] = None
            text = text.removesuffix("<｜tool▁calls▁end｜>")
        rendered = render(template, history, TOOLS)
        assert text in rendered, rendered
