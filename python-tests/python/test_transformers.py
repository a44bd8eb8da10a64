"""The real model through ``transformers``: Gemma 3 270M, loaded from the default GGUF on CPU,
generates with ``constrain.transformers.LogitsProcessor`` for every schema in ``schemas/``; every
output is valid (Python ``jsonschema``) and ends within ``max_new_tokens``, greedy and sampled,
at an ample budget and at a tight one.

Loading the GGUF (reading its 262k-token vocabulary and dequantizing) takes about three minutes
on two cores; it is done once for the module.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

import constrain
from conftest import REPO, model_path

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
jsonschema = pytest.importorskip("jsonschema")
from constrain.transformers import LogitsProcessor  # noqa: E402

SCHEMAS = sorted((REPO / "schemas").glob("*.json"))
MAX_NEW_TOKENS = 160
# Budgets a sampled model overruns when left alone (nesting `tree` without end), yet above every
# schema's shortest output.
TIGHT_NEW_TOKENS = 64


def load_model(gguf: Path):
    tokenizer = transformers.AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
    model = transformers.AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name, dtype=torch.float32)
    return tokenizer, model


@pytest.fixture(scope="module")
def gemma():
    gguf = model_path()
    if not gguf.exists():
        reason = f"the default model is not at {gguf}: run `cargo run --release -p constrain-cli -- fetch-model`"
        if os.environ.get("CONSTRAIN_REQUIRE_MODEL"):
            pytest.fail(reason)
        pytest.skip(reason)
    tokenizer, model = load_model(gguf)
    model.eval()
    eos = model.generation_config.eos_token_id
    eos = [eos] if isinstance(eos, int) else list(eos or [])
    vocab = constrain.Vocabulary.from_huggingface(
        tokenizer, eos_ids=eos, width=max(model.config.vocab_size, len(tokenizer))
    )
    return tokenizer, model, vocab


def prompt_ids(tokenizer, schema: dict):
    """One user turn in Gemma's chat format, then the model's turn."""
    text = (
        "<start_of_turn>user\nWrite one JSON document valid against this JSON Schema, "
        f"with realistic values:\n{json.dumps(schema)}<end_of_turn>\n<start_of_turn>model\n"
    )
    ids = [tokenizer.bos_token_id] + tokenizer.encode(text, add_special_tokens=False)
    return torch.tensor([ids])


@pytest.mark.parametrize("budget", [MAX_NEW_TOKENS, TIGHT_NEW_TOKENS], ids=["ample", "tight"])
@pytest.mark.parametrize("mode", ["greedy", "sampled"])
@pytest.mark.parametrize("schema_path", SCHEMAS, ids=[p.stem for p in SCHEMAS])
def test_generation_is_valid(gemma, schema_path, mode, budget):
    tokenizer, model, vocab = gemma
    schema = json.loads(schema_path.read_text())
    compiled = constrain.compile_json_schema(
        schema, vocab, whitespace="compact", separators=(", ", ": "), escapes="canonical"
    )
    ids = prompt_ids(tokenizer, schema)
    settings = {"do_sample": False} if mode == "greedy" else {"do_sample": True, "temperature": 1.0, "top_k": 0, "top_p": 1.0}
    torch.manual_seed(hash(schema_path.stem) % 1000)
    processor = LogitsProcessor(compiled, max_new_tokens=budget)
    with torch.no_grad():
        out = model.generate(
            ids,
            attention_mask=torch.ones_like(ids),
            max_new_tokens=budget,
            logits_processor=[processor],
            eos_token_id=vocab.eos_ids,
            pad_token_id=tokenizer.pad_token_id,
            **settings,
        )
    new = out[0, ids.shape[1]:].tolist()
    assert len(new) <= budget
    assert new and new[-1] in vocab.eos_ids, f"did not finish in {budget} tokens: {tokenizer.decode(new)!r}"
    text = b"".join(vocab.token_bytes(t) for t in new[:-1]).decode("utf-8")
    document = json.loads(text)
    jsonschema.validate(document, schema)
    # generate stops at the end token without showing it to the processor: the matcher is
    # left where the end token was allowed.
    assert processor.matchers[0].is_accepting()


def test_budget_below_the_shortest_output_is_refused(gemma):
    tokenizer, model, vocab = gemma
    schema = json.loads((REPO / "schemas" / "signup_form.json").read_text())
    compiled = constrain.compile_json_schema(schema, vocab)
    processor = LogitsProcessor(compiled, max_new_tokens=8)
    ids = prompt_ids(tokenizer, schema)
    with pytest.raises(ValueError, match="needs at least"):
        processor(ids, torch.zeros((1, vocab.width)))
