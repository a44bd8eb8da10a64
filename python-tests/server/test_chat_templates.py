"""The model's own Jinja chat template: `constrain serve --chat-template-file` renders prompts
with a model's published template (Qwen 3's and DeepSeek V3's, from ../shared), exactly as
Jinja2 renders it with Hugging Face's settings (`POST /apply-template` returns the prompt);
the tool-call format and reasoning are read from the template; a forced call then comes back
in the family's format, after the thinking.
"""

import json
import os
import pathlib

import httpx
import jinja2
import jsonschema
import pytest

from conftest import API_KEY

SHARED = pathlib.Path(os.environ.get("CONSTRAIN_SHARED_DIR") or pathlib.Path(__file__).resolve().parents[3] / "shared")
WEATHER = {"type": "object", "properties": {"city": {"type": "string", "maxLength": 16}}, "required": ["city"],
           "additionalProperties": False}
TOOLS = [{"type": "function", "function": {"name": "get_weather", "description": "Weather in a city.",
                                           "parameters": WEATHER}}]
HISTORY = [
    {"role": "system", "content": "Be brief."},
    {"role": "user", "content": "Weather in Oslo?"},
    {"role": "assistant", "content": None, "tool_calls": [
        {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\": \"Oslo\"}"}}]},
    {"role": "tool", "tool_call_id": "call_1", "content": "12 C, rain"},
]


def config(model: str) -> dict | None:
    path = SHARED / "tokenizers" / model / "tokenizer_config.json"
    if not path.is_file():
        if os.environ.get("CONSTRAIN_REQUIRE_SHARED") == "1":
            pytest.fail(f"{path} is missing")
        pytest.skip(f"no {path}")
    return path


def hf_render(cfg: dict, messages: list, tools: list | None) -> str:
    """Jinja2 as Hugging Face's apply_chat_template sets it up."""
    env = jinja2.Environment(trim_blocks=True, lstrip_blocks=True, extensions=["jinja2.ext.loopcontrols"])
    env.filters["tojson"] = lambda x, indent=None: json.dumps(x, ensure_ascii=False, indent=indent)

    def raise_exception(message):
        raise jinja2.exceptions.TemplateError(message)

    env.globals["raise_exception"] = raise_exception
    token = lambda t: t if isinstance(t, str) or t is None else t.get("content")
    return env.from_string(cfg["chat_template"]).render(
        messages=messages, tools=tools, add_generation_prompt=True,
        bos_token=token(cfg.get("bos_token")) or "", eos_token=token(cfg.get("eos_token")) or "")


@pytest.mark.parametrize("model, messages_for_jinja2, cases", [
    # Qwen 3's template reads `content` as a string (a null one fails there): the server then
    # gives it the empty string, as Hugging Face users pass with calls.
    ("qwen3", lambda h: [dict(m, content=m["content"] if m["content"] is not None else "") for m in h],
     [(HISTORY, TOOLS), (HISTORY[:2], None)]),
    # DeepSeek V3's template writes calls and results but lists no tools (the server then lists
    # them in the system turn, which Jinja2 alone would not: compared without tools).
    ("deepseek_v3", lambda h: h, [(HISTORY, None), (HISTORY[:2], None)]),
])
def test_prompts_render_as_jinja2_renders_them(start_server, model, messages_for_jinja2, cases):
    path = config(model)
    cfg = json.loads(path.read_text())
    client = start_server(["--chat-template-file", str(path)])
    base = str(client.base_url).removesuffix("/v1/").removesuffix("/v1")
    for messages, tools in cases:
        body = {"messages": messages}
        if tools:
            body["tools"] = tools
        r = httpx.post(f"{base}/apply-template", json=body, headers={"Authorization": f"Bearer {API_KEY}"}, timeout=30)
        assert r.status_code == 200, r.text
        ours = r.json()["prompt"]
        theirs = hf_render(cfg, messages_for_jinja2(messages), tools)
        assert ours == theirs
    if model == "deepseek_v3":
        r = httpx.post(f"{base}/apply-template", json={"messages": HISTORY, "tools": TOOLS},
                       headers={"Authorization": f"Bearer {API_KEY}"}, timeout=30)
        prompt = r.json()["prompt"]
        assert prompt.startswith(cfg["bos_token"]["content"] if isinstance(cfg["bos_token"], dict) else cfg["bos_token"])
        assert '"name":"get_weather"' in prompt and "<｜tool▁call▁begin｜>function<｜tool▁sep｜>get_weather" in prompt


def test_a_call_in_the_templates_format_after_thinking(start_server):
    path = config("qwen3")
    client = start_server(["--chat-template-file", str(path)])
    r = client.chat.completions.create(
        model="default", messages=HISTORY[:2], tools=TOOLS, tool_choice="required", temperature=0.8, seed=1,
        max_tokens=80, logprobs=True, extra_body={"thinking_budget": 6},
    )
    choice = r.choices[0]
    assert choice.finish_reason == "tool_calls"
    assert choice.message.model_extra.get("reasoning_content") is not None
    call = choice.message.tool_calls[0]
    jsonschema.validate(json.loads(call.function.arguments), WEATHER)
    raw = b"".join(bytes(t.bytes) for t in choice.logprobs.content).decode()
    assert raw.endswith(f'<tool_call>\n{{"name": "get_weather", "arguments": {call.function.arguments}}}\n</tool_call>')
