"""Benchmarks of the Python package (numbers for docs/python.md).

1. ``fill_next_token_bitmasks`` on batches of 1, 8, 32 and 128 matchers (llama3_1 vocabulary,
   one MaskBench dev schema per matcher), against a loop of ``fill_next_token_bitmask`` over the
   same matchers; XGrammar's ``BatchGrammarMatcher`` and llguidance's
   ``fill_next_token_bitmask_par`` on the same schemas, if they are installed.
2. The per-call overhead: ``Matcher.fill_next_token_bitmask`` at a state whose mask is cached,
   against the Rust ``Matcher::fill_mask`` at the same state (the reference binary).
3. ``apply_token_bitmask_inplace`` on (128, 128256) float32 logits against the plain NumPy and
   torch expressions (and XGrammar's and llguidance's CPU functions, if installed).

Each engine walks its own matchers: per step, one batch fill (timed), then one random allowed
token per matcher (seeded, not timed). Grammars are compiled and walked once before timing,
so the times are of warm grammars, as in serving.

    python crates/constrain-python/bench/bench_bitmask.py [--shared DIR] [--steps N]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

import constrain

REPO = Path(__file__).resolve().parents[3]
BATCHES = [1, 8, 32, 128]


def allowed(row: np.ndarray, width: int) -> np.ndarray:
    return np.flatnonzero(np.unpackbits(row.view(np.uint8), bitorder="little")[:width])


def pick_text_token(row: np.ndarray, width: int, rng: random.Random):
    """A random allowed token below llama3_1's special tokens, or None."""
    ids = allowed(row, width)
    ids = ids[ids < 128000]
    return int(ids[rng.randrange(len(ids))]) if len(ids) else None


def load_schemas(shared: Path, count: int) -> list[str]:
    files = sorted((shared / "data" / "maskbench-dev").glob("*.json"))
    random.Random(0).shuffle(files)
    return [json.dumps(json.loads(f.read_text())["schema"]) for f in files[: count * 3]]


class Engine:
    """One engine's matchers over a batch: fill all (timed), then step each."""

    name = ""

    def walk_times(self, steps: int, batch_fill: bool) -> list[float]:
        times = []
        rng = random.Random(1)
        self.reset()
        for _ in range(steps):
            start = time.perf_counter()
            if batch_fill:
                self.fill_batch()
            else:
                self.fill_loop()
            times.append(time.perf_counter() - start)
            if not self.step(rng):
                break
        return times


class Ours(Engine):
    name = "constrain"

    def __init__(self, vocab, schemas):
        self.vocab = vocab
        self.compiled = []
        for s in schemas:
            try:
                self.compiled.append(constrain.compile_json_schema(s, vocab))
            except constrain.CompileError:
                continue

    def setup(self, batch):
        self.grammars = self.compiled[:batch]
        self.bitmask = constrain.allocate_token_bitmask(batch, self.vocab.width)

    def reset(self):
        self.matchers = [constrain.Matcher(c) for c in self.grammars]

    def fill_batch(self):
        constrain.fill_next_token_bitmasks(self.matchers, self.bitmask)

    def fill_loop(self):
        for i, m in enumerate(self.matchers):
            m.fill_next_token_bitmask(self.bitmask, i)

    def step(self, rng):
        for i, m in enumerate(self.matchers):
            if m.is_terminated():
                continue
            token = pick_text_token(self.bitmask[i], self.vocab.width, rng)
            if token is not None:  # a complete document stays where only the end is allowed
                m.accept_token(token)
        return True


class XGrammar(Engine):
    name = "xgrammar"

    def __init__(self, hf_tokenizer, schemas):
        import xgrammar as xgr

        self.xgr = xgr
        info = xgr.TokenizerInfo.from_huggingface(hf_tokenizer, vocab_size=128256)
        compiler = xgr.GrammarCompiler(info, max_threads=2)
        self.compiled = [compiler.compile_json_schema(s) for s in schemas]
        self.batcher = xgr.BatchGrammarMatcher(max_threads=os.cpu_count())
        self.width = 128256

    def setup(self, batch):
        self.grammars = self.compiled[:batch]
        self.bitmask = self.xgr.allocate_token_bitmask(batch, self.width)

    def reset(self):
        self.matchers = [self.xgr.GrammarMatcher(c) for c in self.grammars]

    def fill_batch(self):
        self.batcher.batch_fill_next_token_bitmask(self.matchers, self.bitmask)

    def fill_loop(self):
        for i, m in enumerate(self.matchers):
            m.fill_next_token_bitmask(self.bitmask, i)

    def step(self, rng):
        rows = self.bitmask.numpy()
        for i, m in enumerate(self.matchers):
            if m.is_terminated():
                continue
            token = pick_text_token(rows[i], self.width, rng)
            if token is not None:
                m.accept_token(token)
        return True


class LLGuidance(Engine):
    name = "llguidance"

    def __init__(self, hf_tokenizer, schemas):
        import llguidance
        import llguidance.hf
        import llguidance.numpy

        self.ll = llguidance
        self.tokenizer = llguidance.hf.from_tokenizer(hf_tokenizer)
        self.grammars_all = [llguidance.LLMatcher.grammar_from_json_schema(s) for s in schemas]
        self.executor = llguidance.LLExecutor()
        self.width = 128256

    def setup(self, batch):
        self.grammars = self.grammars_all[:batch]
        self.bitmask = self.ll.numpy.allocate_token_bitmask(batch, self.width)

    def reset(self):
        self.matchers = [self.ll.LLMatcher(self.tokenizer, g) for g in self.grammars]

    def fill_batch(self):
        self.ll.numpy.fill_next_token_bitmask_par(
            self.executor, [(m, i) for i, m in enumerate(self.matchers)], self.bitmask
        )

    def fill_loop(self):
        for i, m in enumerate(self.matchers):
            self.ll.numpy.fill_next_token_bitmask(m, self.bitmask, i)

    def step(self, rng):
        for i, m in enumerate(self.matchers):
            if m.is_stopped():
                continue
            token = pick_text_token(self.bitmask[i], self.width, rng)
            if token is not None:
                m.consume_token(token)
        return True


def common_schemas(schemas, vocab, hf_tokenizer, need):
    """Schemas every installed engine compiles (ours first), up to `need`."""
    keep = []
    others = []
    try:
        import xgrammar as xgr

        info = xgr.TokenizerInfo.from_huggingface(hf_tokenizer, vocab_size=128256)
        compiler = xgr.GrammarCompiler(info, max_threads=2)
        others.append(lambda s: compiler.compile_json_schema(s))
    except ImportError:
        pass
    try:
        import llguidance
        import llguidance.hf

        tok = llguidance.hf.from_tokenizer(hf_tokenizer)

        def ll_compile(s):
            m = llguidance.LLMatcher(tok, llguidance.LLMatcher.grammar_from_json_schema(s))
            if m.is_error():
                raise ValueError(m.get_error())

        others.append(ll_compile)
    except ImportError:
        pass
    for s in schemas:
        try:
            constrain.compile_json_schema(s, vocab)
            for other in others:
                other(s)
        except Exception:
            continue
        keep.append(s)
        if len(keep) == need:
            break
    return keep


def median_ms(times):
    return 1000 * float(np.median(times))


def bench_batches(engines, steps):
    print("\n## fill_next_token_bitmasks: median ms per step (batch of matchers, llama3_1)\n")
    print("| engine | batch | batch fill | loop of single fills | speed-up |")
    print("|---|---:|---:|---:|---:|")
    for engine in engines:
        for batch in BATCHES:
            engine.setup(batch)
            engine.walk_times(steps, batch_fill=True)  # warm the grammars along the walk
            par = engine.walk_times(steps, batch_fill=True)
            loop = engine.walk_times(steps, batch_fill=False)
            print(f"| {engine.name} | {batch} | {median_ms(par):.3f} | {median_ms(loop):.3f} | "
                  f"{median_ms(loop) / median_ms(par):.1f}x |", flush=True)


def bench_overhead(vocab, shared, schema, reference):
    print("\n## Per-call overhead: one fill at a cached state, ns per call\n")
    compiled = constrain.compile_json_schema(schema, vocab)
    m = constrain.Matcher(compiled)
    rng = random.Random(3)
    bitmask = constrain.allocate_token_bitmask(1, vocab.width)
    tokens = []
    for _ in range(10):
        m.fill_next_token_bitmask(bitmask)
        ids = [t for t in allowed(bitmask[0], vocab.width).tolist() if t < 128000]
        if not ids:
            break
        tokens.append(rng.choice(ids))
        m.accept_token(tokens[-1])
    n = 20000
    m.fill_next_token_bitmask(bitmask)
    start = time.perf_counter()
    for _ in range(n):
        m.fill_next_token_bitmask(bitmask)
    python_ns = (time.perf_counter() - start) / n * 1e9
    with tempfile.TemporaryDirectory() as tmp:
        request = {"tokenizer": str(shared / "tokenizers" / "llama3_1" / "tokenizer.json"), "kind": "json_schema",
                   "source": schema, "tokens": tokens, "out": str(Path(tmp) / "m.bin"), "time_fills": n}
        out = subprocess.run([str(reference)], input=json.dumps(request) + "\n", capture_output=True,
                             text=True, check=True).stdout.split()
    rust_ns = float(out[1])
    print("| call | ns per call |")
    print("|---|---:|")
    print(f"| Rust `Matcher::fill_mask` (reference binary) | {rust_ns:.0f} |")
    print(f"| Python `Matcher.fill_next_token_bitmask` | {python_ns:.0f} |")
    print(f"| overhead of the Python call | {python_ns - rust_ns:.0f} |")


def time_call(fn, setup, repeat=20):
    times = []
    for _ in range(repeat):
        arg = setup()
        start = time.perf_counter()
        fn(arg)
        times.append(time.perf_counter() - start)
    return median_ms(times)


def bench_apply():
    print("\n## apply_token_bitmask_inplace on (128, 128256) float32: median ms\n")
    rng = np.random.default_rng(0)
    base = rng.normal(size=(128, 128256)).astype(np.float32)
    bitmask = rng.integers(-(2**31), 2**31, size=(128, 4008), dtype=np.int64).astype(np.int32)
    bitmask[::2] &= 0x00FF00FF  # some rows sparse
    rows = [("constrain, NumPy array", lambda a: constrain.apply_token_bitmask_inplace(a, bitmask),
             lambda: base.copy())]

    def numpy_expression(a):
        bits = np.unpackbits(bitmask.view(np.uint8), axis=1, bitorder="little")[:, : a.shape[1]]
        a[bits == 0] = -np.inf

    rows.append(("plain NumPy (unpackbits, boolean index)", numpy_expression, lambda: base.copy()))
    try:
        import torch

        tmask = torch.from_numpy(bitmask)
        rows.append(("constrain, torch CPU tensor", lambda t: constrain.apply_token_bitmask_inplace(t, tmask),
                     lambda: torch.from_numpy(base.copy())))
        shifts = torch.arange(32, dtype=torch.int32)

        def torch_expression(t):
            bits = ((tmask.unsqueeze(-1) >> shifts) & 1).bool().reshape(tmask.shape[0], -1)[:, : t.shape[1]]
            t.masked_fill_(~bits, float("-inf"))

        rows.append(("plain torch (shift, masked_fill_)", torch_expression, lambda: torch.from_numpy(base.copy())))
        try:
            import xgrammar as xgr

            rows.append(("xgrammar.apply_token_bitmask_inplace (CPU)",
                         lambda t: xgr.apply_token_bitmask_inplace(t, tmask), lambda: torch.from_numpy(base.copy())))
        except ImportError:
            pass
    except ImportError:
        pass
    try:
        import llguidance.numpy as lnp

        rows.append(("llguidance.numpy.apply_token_bitmask_inplace",
                     lambda a: lnp.apply_token_bitmask_inplace(a, bitmask), lambda: base.copy()))
    except ImportError:
        pass
    print("| implementation | ms |")
    print("|---|---:|")
    for name, fn, setup in rows:
        print(f"| {name} | {time_call(fn, setup):.2f} |", flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shared", type=Path,
                        default=Path(os.environ.get("CONSTRAIN_SHARED_DIR") or REPO.parent / "shared"))
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--no-others", action="store_true", help="skip XGrammar and llguidance")
    args = parser.parse_args()
    target = Path(os.environ.get("CARGO_TARGET_DIR") or REPO / "crates" / "constrain-python" / "target")
    subprocess.run(["cargo", "build", "--release", "-q", "-p", "constrain-mask-reference"],
                   cwd=REPO / "crates" / "constrain-python", check=True)
    reference = target / "release" / "constrain-mask-reference"

    tokenizer_json = args.shared / "tokenizers" / "llama3_1" / "tokenizer.json"
    vocab = constrain.Vocabulary.from_tokenizer_json(tokenizer_json)
    from transformers import PreTrainedTokenizerFast

    hf = PreTrainedTokenizerFast(tokenizer_file=str(tokenizer_json), eos_token="<|eot_id|>")
    schemas = load_schemas(args.shared, max(BATCHES))
    schemas = common_schemas(schemas, vocab, hf, max(BATCHES)) if not args.no_others else schemas
    print(f"{len(schemas)} MaskBench dev schemas; {os.cpu_count()} CPUs; {args.steps} steps per walk",
          file=sys.stderr)
    engines = [Ours(vocab, schemas)]
    if not args.no_others:
        for cls in (XGrammar, LLGuidance):
            try:
                engines.append(cls(hf, schemas))
            except ImportError:
                print(f"{cls.name} is not installed: skipped", file=sys.stderr)
    bench_batches(engines, args.steps)
    bench_overhead(vocab, args.shared, schemas[0], reference)
    bench_apply()


if __name__ == "__main__":
    main()
