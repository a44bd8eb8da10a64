"""Masks through the Python package equal the Rust crate's, on random walks.

For each of the five shared tokenizers and several grammars, a seeded random walk picks allowed
tokens through the bindings (single fills, batch fills, NumPy buffers); the Rust reference
binary replays the same tokens through the engine directly. Every step's mask must be equal.
"""

from __future__ import annotations

import json
import random
import subprocess
from pathlib import Path

import numpy as np
import pytest

import constrain
from conftest import REPO, TOKENIZERS

STEPS = 40

GRAMMARS = [
    ("json_schema", (REPO / "schemas" / "person.json").read_text()),
    ("json_schema", (REPO / "schemas" / "tool_call.json").read_text()),
    ("regex", r"(\+?[0-9]{1,3} )?[a-zA-Zéß ]{1,12}-[0-9]{2,4}"),
    ("gbnf", (REPO / "grammars" / "arithmetic.gbnf").read_text()),
    ("any_json", ""),
]


def compile_for(kind: str, source: str, vocab: constrain.Vocabulary) -> constrain.CompiledGrammar:
    if kind == "json_schema":
        return constrain.compile_json_schema(source, vocab)
    if kind == "regex":
        return constrain.compile_regex(source, vocab)
    if kind == "gbnf":
        return constrain.compile_gbnf(source, vocab)
    return constrain.compile_any_json(vocab)


def walk(compiled: constrain.CompiledGrammar, vocab: constrain.Vocabulary, seed: int):
    """A random walk: tokens, and the mask before each token and after the last.

    Even steps fill one row with ``fill_next_token_bitmask``; odd steps fill through
    ``fill_next_token_bitmasks`` with a copy of the matcher beside it, into row 2 of 3.
    """
    rng = random.Random(seed)
    matcher = constrain.Matcher(compiled)
    bitmask = constrain.allocate_token_bitmask(3, vocab.width)
    masks, tokens = [], []
    for step in range(STEPS + 1):
        if step % 2 == 0:
            matcher.fill_next_token_bitmask(bitmask, 1)
            row = bitmask[1].copy()
        else:
            constrain.fill_next_token_bitmasks([matcher.copy(), matcher], bitmask, [0, 2])
            assert (bitmask[0] == bitmask[2]).all()
            row = bitmask[2].copy()
        masks.append(row)
        if step == STEPS:
            break
        allowed = np.flatnonzero(np.unpackbits(row.view(np.uint8), bitorder="little")[: vocab.width])
        text = [t for t in allowed.tolist() if vocab.token_kind(t) == "text"]
        if not text:
            break  # only the end is left
        token = rng.choice(text)
        assert matcher.accept_token(token)
        tokens.append(token)
    return tokens, np.stack(masks)


@pytest.mark.parametrize("tokenizer", TOKENIZERS)
def test_masks_equal_the_rust_crates(tokenizer, shared, mask_reference, tmp_path):
    path = shared / "tokenizers" / tokenizer / "tokenizer.json"
    vocab = constrain.Vocabulary.from_tokenizer_json(path)
    requests, walks = [], []
    for g, (kind, source) in enumerate(GRAMMARS):
        compiled = compile_for(kind, source, vocab)
        tokens, masks = walk(compiled, vocab, seed=g)
        out = tmp_path / f"{g}.bin"
        requests.append(json.dumps({"tokenizer": str(path), "kind": kind, "source": source,
                                    "tokens": tokens, "out": str(out)}))
        walks.append((kind, tokens, masks, out))
    result = subprocess.run([str(mask_reference)], input="\n".join(requests) + "\n",
                            capture_output=True, text=True, check=True)
    assert result.stdout.split() == ["ok"] * len(requests), result.stdout + result.stderr
    for kind, tokens, masks, out in walks:
        expected = np.fromfile(out, dtype="<u4").reshape(-1, masks.shape[1])
        assert expected.shape == masks.shape, kind
        got = masks.view(np.uint32)
        if not np.array_equal(got, expected):
            step = int(np.flatnonzero((got != expected).any(axis=1))[0])
            diff = np.unpackbits((got[step] ^ expected[step]).view(np.uint8), bitorder="little")
            pytest.fail(f"{tokenizer} {kind}: masks differ at step {step} after tokens "
                        f"{tokens[:step]}, for ids {np.flatnonzero(diff)[:10].tolist()}")
        assert len(tokens) >= 5, f"{tokenizer} {kind}: the walk ended after {len(tokens)} tokens"
