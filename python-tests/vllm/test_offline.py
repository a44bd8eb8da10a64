"""``LLM.generate`` with the constrain backend: every request kind of vLLM, sampled at
temperature 0.8, each output checked by an independent validator (``jsonschema``, Python's
``re``, ``json``) and required to end with a stop token, not at ``max_tokens``."""

from __future__ import annotations

import json
import re

import jsonschema
import pytest

from conftest import gemma_prompt, load_schema

SCHEMAS = ["person.json", "message.json", "sensor_readings.json", "signup_form.json",
           "tool_call.json", "tree.json"]


def _params(max_tokens: int = 200, **structured):
    """Sampling at 0.8 without a per-request seed (the engine is seeded): vLLM 0.32's CPU
    runner fails when a seeded request's prefill is split."""
    from vllm import SamplingParams
    from vllm.sampling_params import StructuredOutputsParams

    return SamplingParams(
        temperature=0.8, max_tokens=max_tokens,
        structured_outputs=StructuredOutputsParams(**structured),
    )


def _complete(output) -> str:
    """The text of a finished output; fails unless a stop token ended it."""
    completion = output.outputs[0]
    assert completion.finish_reason == "stop", (completion.finish_reason, completion.text)
    return completion.text


def test_the_engine_runs_the_constrain_backend(llm):
    config = llm.llm_engine.vllm_config.structured_outputs_config
    assert config.backend == "constrain"


def test_json_schemas_give_valid_complete_documents(llm):
    schemas = [load_schema(name) for name in SCHEMAS]
    prompts = [gemma_prompt(f"Write one JSON example of: {s.get('description', s.get('title'))}")
               for s in schemas]
    params = [_params(json=s) for s in schemas]
    outputs = llm.generate(prompts, params)
    for schema, output in zip(schemas, outputs):
        document = json.loads(_complete(output))
        jsonschema.validate(document, schema, format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER)


def test_a_small_max_tokens_still_ends_in_a_complete_document(llm):
    """The request's ``max_tokens`` reaches the matcher: the document closes in time."""
    schema = load_schema("tree.json")
    outputs = llm.generate([gemma_prompt("A deep tree as JSON.")] * 4,
                           [_params(json=schema, max_tokens=40)] * 4)
    for output in outputs:
        assert len(output.outputs[0].token_ids) <= 40
        jsonschema.validate(json.loads(_complete(output)), schema)


def test_whitespace_between_tokens_is_bounded(llm):
    outputs = llm.generate([gemma_prompt("Some JSON object please.")] * 4,
                           [_params(json_object=True, max_tokens=120)] * 4)
    for output in outputs:
        text = _complete(output)
        assert isinstance(json.loads(text), dict)
        assert not re.search(r"\s{17}", text), text


def test_regex_choice_and_grammars(llm):
    gbnf = 'root ::= "The answer is " [0-9]+ "."'
    lark = 'start: "color: " COLOR\nCOLOR: "red" | "green" | "blue"'
    cases = [
        (dict(regex=r"[A-Z][a-z]{2,8} [0-9]{1,3}"), lambda t: re.fullmatch(r"[A-Z][a-z]{2,8} [0-9]{1,3}", t)),
        (dict(choice=["yes", "no", "maybe (later)"]), lambda t: t in ("yes", "no", "maybe (later)")),
        (dict(grammar=gbnf), lambda t: re.fullmatch(r"The answer is [0-9]+\.", t)),
        (dict(grammar=lark), lambda t: re.fullmatch(r"color: (red|green|blue)", t)),
    ]
    outputs = llm.generate([gemma_prompt("Answer briefly.")] * len(cases),
                           [_params(max_tokens=40, **c) for c, _ in cases])
    for (case, check), output in zip(cases, outputs):
        text = _complete(output)
        assert check(text), (case, text)


def test_structural_tag_with_a_schema_inside(llm):
    tag = {
        "type": "structural_tag",
        "format": {"type": "sequence", "elements": [
            {"type": "const_string", "value": "Call: "},
            {"type": "tag", "begin": "<call>", "end": "</call>",
             "content": {"type": "json_schema", "json_schema": load_schema("person.json")}},
        ]},
    }
    output = llm.generate([gemma_prompt("Call the tool.")],
                          [_params(structural_tag=json.dumps(tag), max_tokens=160)])[0]
    text = _complete(output)
    match = re.fullmatch(r"Call: <call>(.*)</call>", text, re.S)
    assert match, text
    jsonschema.validate(json.loads(match.group(1)), load_schema("person.json"))


def test_a_schema_that_cannot_compile_is_refused_with_keyword_and_pointer(llm):
    from vllm.exceptions import VLLMValidationError

    bad = {"type": "object", "properties": {"n": {"type": "integer", "minimum": "zero"}}}
    with pytest.raises((VLLMValidationError, ValueError)) as error:
        llm.generate([gemma_prompt("x")], [_params(json=bad)])
    message = str(error.value)
    assert "minimum" in message and "/properties/n" in message, message
    # The engine keeps serving.
    output = llm.generate([gemma_prompt("Yes or no?")], [_params(choice=["yes", "no"], max_tokens=8)])[0]
    assert _complete(output) in ("yes", "no")


def _counter(llm, name: str) -> float:
    return sum(getattr(m, "value", 0) for m in llm.get_metrics() if m.name == name)


def test_ngram_drafts_are_checked_by_the_grammar(llm):
    """The n-gram speculator drafts from the prompt, which holds a document to copy: drafts
    are proposed and some accepted, each checked by ``validate_tokens`` and rolled back when
    rejected, and the outputs stay valid."""
    drafted = _counter(llm, "vllm:spec_decode_num_draft_tokens")
    accepted = _counter(llm, "vllm:spec_decode_num_accepted_tokens")
    schema = load_schema("person.json")
    example = '{"name": "Ada Lovelace", "age": 36, "email": "ada@example.org", "languages": ["en", "fr"], "employed": true}'
    prompt = gemma_prompt(f"Repeat this JSON exactly, then stop: {example} {example}")
    outputs = llm.generate([prompt] * 4, [_params(json=schema)] * 4)
    for output in outputs:
        jsonschema.validate(json.loads(_complete(output)), schema)
    assert _counter(llm, "vllm:spec_decode_num_draft_tokens") > drafted
    assert _counter(llm, "vllm:spec_decode_num_accepted_tokens") > accepted


def test_a_grammar_longer_than_max_tokens_fails_instead_of_being_cut(llm):
    schema = {"type": "object", "properties": {"a": {"const": "constrained decoding " * 8}}, "required": ["a"]}
    output = llm.generate([gemma_prompt("x")], [_params(json=schema, max_tokens=6)])[0]
    assert output.outputs[0].finish_reason == "error", output.outputs[0]
    assert output.outputs[0].text == ""
