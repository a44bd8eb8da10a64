"""One compiled grammar used from 8 threads at once gives every thread the masks it gets alone."""

from __future__ import annotations

import random
from concurrent.futures import ThreadPoolExecutor

import numpy as np

import constrain
from conftest import REPO

THREADS = 8


def walk(compiled: constrain.CompiledGrammar, width: int, seed: int, steps: int = 30):
    rng = random.Random(seed)
    matcher = constrain.Matcher(compiled)
    bitmask = constrain.allocate_token_bitmask(1, width)
    trace = []
    for _ in range(steps):
        matcher.fill_next_token_bitmask(bitmask)
        allowed = np.flatnonzero(np.unpackbits(bitmask[0].view(np.uint8), bitorder="little")[:width])
        trace.append(hash(bitmask.tobytes()))
        choices = [t for t in allowed.tolist() if t < width - 256]  # text tokens of llama3_1
        if not choices:
            break
        token = rng.choice(choices)
        assert matcher.accept_token(token)
        trace.append(token)
    return trace


def test_one_grammar_from_eight_threads(llama_vocab):
    schema = (REPO / "schemas" / "sensor_readings.json").read_text()
    # Compiled once, then walked: first concurrently on a fresh grammar (the lazily built
    # automaton is shared and grows under concurrent use), then alone on another.
    shared_grammar = constrain.compile_json_schema(schema, llama_vocab)
    with ThreadPoolExecutor(THREADS) as pool:
        concurrent = list(pool.map(lambda s: walk(shared_grammar, llama_vocab.width, s), range(THREADS)))
    alone_grammar = constrain.compile_json_schema(schema, llama_vocab)
    alone = [walk(alone_grammar, llama_vocab.width, s) for s in range(THREADS)]
    assert concurrent == alone
    assert len({tuple(t) for t in alone}) == THREADS  # the walks differ


def test_batch_fill_from_threads(llama_vocab):
    compiled = constrain.compile_any_json(llama_vocab)

    def run(seed: int):
        matchers = [constrain.Matcher(compiled) for _ in range(4)]
        for i, m in enumerate(matchers):
            assert m.accept_string('{"k%d": [%d, ' % (seed, i))
        bitmask = constrain.allocate_token_bitmask(4, llama_vocab.width)
        constrain.fill_next_token_bitmasks(matchers, bitmask)
        return bitmask

    with ThreadPoolExecutor(THREADS) as pool:
        results = list(pool.map(run, range(THREADS)))
    for r in results:
        assert np.array_equal(r, results[0])
