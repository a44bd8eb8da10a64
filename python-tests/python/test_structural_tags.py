"""``compile_structural_tag``: XGrammar's structural-tag JSON in each form XGrammar's
``compile_structural_tag`` takes it (JSON text, dict, pydantic model, the older tags and
triggers), outputs sampled under it that follow the tags (parsed back, the JSON inside
validated), and errors naming the JSON pointer."""

from __future__ import annotations

import json
import re

import jsonschema
import numpy as np
import pytest

import constrain

CITY = {
    "type": "object",
    "properties": {"city": {"type": "string", "maxLength": 12}},
    "required": ["city"],
    "additionalProperties": False,
}


def calls(**flags):
    return {
        "type": "structural_tag",
        "format": {
            "type": "triggered_tags",
            "triggers": ["<call>"],
            "tags": [{"begin": "<call>", "content": {"type": "json_schema", "json_schema": CITY}, "end": "</call>"}],
            **flags,
        },
    }


def accepts(compiled, text: str) -> bool:
    m = constrain.Matcher(compiled)
    return m.accept_string(text) and m.is_accepting()


GOOD = ['<call>{"city": "Paris"}</call>', 'prose <call>{"city": "Oslo"}</call> more', ""]
BAD = ['<call>{"town": "Paris"}</call>', '<call>{"city": "Paris"}']


@pytest.mark.parametrize("form", ["dict", "text"])
def test_dicts_and_json_text_compile_the_same_language(toy_vocab, form):
    tag = calls() if form == "dict" else json.dumps(calls())
    compiled = constrain.compile_structural_tag(tag, toy_vocab, whitespace="compact", separators=(", ", ": "))
    for text in GOOD:
        assert accepts(compiled, text), text
    for text in BAD:
        assert not accepts(compiled, text), text


def test_the_older_tags_and_triggers_form(toy_vocab):
    class Item:  # XGrammar's StructuralTagItem keeps the schema as `schema_`
        def __init__(self, begin, schema, end):
            self.begin, self.schema_, self.end = begin, schema, end

    for tags in (
        [{"begin": "<call>", "schema": CITY, "end": "</call>"}],
        [Item("<call>", json.dumps(CITY), "</call>")],
    ):
        compiled = constrain.compile_structural_tag(
            tags, toy_vocab, triggers=["<call>"], whitespace="compact", separators=(", ", ": ")
        )
        for text in GOOD:
            assert accepts(compiled, text), text
        for text in BAD:
            assert not accepts(compiled, text), text


def test_a_pydantic_structural_tag(toy_vocab):
    pydantic = pytest.importorskip("pydantic")

    class ConstString(pydantic.BaseModel):
        type: str = "const_string"
        value: str

    class StructuralTag(pydantic.BaseModel):
        type: str = "structural_tag"
        format: ConstString

    compiled = constrain.compile_structural_tag(StructuralTag(format=ConstString(value="yes")), toy_vocab)
    assert accepts(compiled, "yes") and not accepts(compiled, "no")


def test_errors_name_the_json_pointer(toy_vocab):
    with pytest.raises(constrain.CompileError) as e:
        constrain.compile_structural_tag(
            {"type": "structural_tag", "format": {"type": "sequence", "elements": [{"type": "nope"}]}}, toy_vocab
        )
    assert e.value.kind == "structural_tag" and e.value.pointer == "/format/elements/0/type"
    with pytest.raises(constrain.CompileError) as e:
        constrain.compile_structural_tag(
            {"format": {"type": "tag", "begin": "<a>", "end": "</a>",
                        "content": {"type": "json_schema", "json_schema": {"type": "strnig"}}}},
            toy_vocab,
        )
    assert e.value.kind == "structural_tag" and e.value.pointer == "/format/content"
    with pytest.raises(constrain.CompileError) as e:
        constrain.compile_structural_tag('{"format": ', toy_vocab)
    assert e.value.kind == "structural_tag" and e.value.line == 1
    with pytest.raises(TypeError, match="structural_tag must be JSON text"):
        constrain.compile_structural_tag(object(), toy_vocab)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_sampled_outputs_follow_the_tags(llama_vocab, seed):
    tag = {
        "type": "structural_tag",
        "format": {
            "type": "sequence",
            "elements": [
                {"type": "tag", "begin": "<think>", "content": {"type": "any_text"}, "end": "</think>"},
                calls(at_least_one=True, stop_after_first=True)["format"],
            ],
        },
    }
    compiled = constrain.compile_structural_tag(tag, llama_vocab, whitespace="compact")
    matcher = constrain.Matcher(compiled, max_tokens=80)
    bitmask = constrain.allocate_token_bitmask(1, llama_vocab.width)
    rng = np.random.default_rng(seed)
    out = b""
    while not matcher.is_terminated():
        matcher.fill_next_token_bitmask(bitmask)
        logits = rng.standard_normal((1, llama_vocab.width)).astype(np.float32) * 4
        constrain.apply_token_bitmask_inplace(logits, bitmask)
        token = int(np.argmax(logits[0]))
        assert matcher.accept_token(token)
        if token not in llama_vocab.eos_ids:
            out += llama_vocab.token_bytes(token)
    text = out.decode()
    m = re.fullmatch(r"<think>(.*?)</think><call>(.*)</call>", text, re.S)
    assert m and "</think>" not in m.group(1), text
    jsonschema.validate(json.loads(m.group(2)), CITY)
