#!/usr/bin/env python3
"""The same structured-output requests through vLLM's backends, side by side.

Each backend runs in a fresh vLLM engine (its own process: vLLM serves one backend per engine),
on the default model converted by ``scripts/vllm-env``, with the same requests: MaskBench dev
schemas (every k-th file in name order, so the families are mixed) with two prompts each,
sampled at temperature 0.8 (the engine seeded), ``max_num_seqs`` requests at a time.

Per backend: requests refused (by vLLM's request check or when the grammar failed to compile
in the engine), outputs valid and complete (parsed by ``json``, validated by ``jsonschema``
with formats checked, and ended by a stop token rather than ``max_tokens``), wall time of the
run, engine steps and time per step, output tokens per second. Run it in the vLLM environment::

    venv=$(scripts/vllm-env)
    "$venv/bin/python" crates/constrain-python/bench/bench_vllm.py --schemas 100

It prints a Markdown table and, with ``--json FILE``, writes every request's result.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "2")

PROMPTS = [
    "Write one JSON value valid against this JSON Schema, and nothing else.\nSchema: {schema}",
    "Here is a JSON Schema:\n{schema}\nGive a realistic example instance as JSON.",
]
MAX_SCHEMA_CHARS = 2500


def pick_schemas(data: Path, count: int) -> list[tuple[str, dict]]:
    files = sorted(data.glob("*.json"))
    step = max(1, len(files) // count)
    picked = files[::step][:count]
    return [(f.name, json.loads(f.read_text())["schema"]) for f in picked]


def requests(data: Path, count: int) -> list[dict]:
    out = []
    for name, schema in pick_schemas(data, count):
        text = json.dumps(schema)[:MAX_SCHEMA_CHARS]
        for p, prompt in enumerate(PROMPTS):
            turn = f"<start_of_turn>user\n{prompt.format(schema=text)}<end_of_turn>\n<start_of_turn>model\n"
            out.append({"id": f"{name}#{p}", "schema": schema, "prompt": turn})
    return out


def check(schema: dict, text: str) -> str:
    """``valid``, ``invalid_json``, ``invalid_schema`` or ``unverifiable``."""
    import jsonschema

    try:
        value = json.loads(text)
    except json.JSONDecodeError:
        return "invalid_json"
    try:
        cls = jsonschema.validators.validator_for(schema)
        cls(schema, format_checker=cls.FORMAT_CHECKER).validate(value)
    except jsonschema.ValidationError:
        return "invalid_schema"
    except Exception:  # noqa: BLE001 - a schema the validator itself cannot read
        return "unverifiable"
    return "valid"


def run_backend(backend: str, model: str, reqs: list[dict], max_tokens: int, batch: int) -> dict:
    """One backend in this process: refusals, then the accepted requests to the end."""
    if backend == "constrain":
        import constrain.vllm  # noqa: F401
    from vllm import LLM, SamplingParams
    from vllm.sampling_params import StructuredOutputsParams

    llm = LLM(model, structured_outputs_config={"backend": backend}, max_model_len=4096,
              max_num_seqs=batch, enforce_eager=True, seed=0)
    engine = llm.llm_engine
    results: dict[str, dict] = {}
    for r in reqs:
        # No per-request seed: vLLM 0.32's CPU runner fails ("CPU Generator does not use
        # offset") when a seeded request's prefill is split; the engine's seed fixes the run.
        params = SamplingParams(temperature=0.8, max_tokens=max_tokens,
                                structured_outputs=StructuredOutputsParams(json=r["schema"]))
        try:
            engine.add_request(r["id"], r["prompt"], params)
        except Exception as e:  # noqa: BLE001 - the front end refused the request
            results[r["id"]] = {"status": "refused", "error": str(e)[:300]}
    steps, tokens = 0, 0
    start = time.perf_counter()
    while engine.has_unfinished_requests():
        for out in engine.step():
            if not out.finished:
                continue
            completion = out.outputs[0]
            tokens += len(completion.token_ids)
            results[out.request_id] = {"finish": completion.finish_reason, "text": completion.text,
                                       "tokens": len(completion.token_ids)}
        steps += 1
    wall = time.perf_counter() - start
    by_id = {r["id"]: r for r in reqs}
    for rid, res in results.items():
        if "finish" in res:
            if res["finish"] not in ("stop", "length"):
                res["status"] = "refused"  # failed in the engine (grammar compile)
            elif res["finish"] != "stop":
                res["status"] = "incomplete"
            else:
                res["status"] = check(by_id[rid]["schema"], res["text"])
    return {"backend": backend, "wall_s": wall, "steps": steps, "tokens": tokens, "results": results}


def summarize(run: dict, total: int) -> dict:
    statuses = [r["status"] for r in run["results"].values()]
    refused = statuses.count("refused")
    ran = total - refused
    valid = statuses.count("valid")
    return {
        "backend": run["backend"], "requests": total, "refused": refused, "ran": ran,
        "valid": valid, "incomplete": statuses.count("incomplete"),
        "invalid": statuses.count("invalid_json") + statuses.count("invalid_schema"),
        "unverifiable": statuses.count("unverifiable"),
        "wall_s": run["wall_s"], "steps": run["steps"], "tokens": run["tokens"],
        "ms_per_step": 1000 * run["wall_s"] / max(1, run["steps"]),
        "tokens_per_s": run["tokens"] / run["wall_s"] if run["wall_s"] else 0.0,
    }


def table(rows: list[dict]) -> str:
    lines = ["| backend | refused (schemas) | valid and complete / ran | cut at max_tokens | invalid | wall s | steps | ms/step | tokens/s |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for s in rows:
        lines.append(
            f"| {s['backend']} | {s['refused']} ({s['refused_schemas']}) | {s['valid']} / {s['ran']} "
            f"({100 * s['valid'] / max(1, s['ran']):.1f}%) | {s['incomplete']} | {s['invalid']} | "
            f"{s['wall_s']:.1f} | {s['steps']} | {s['ms_per_step']:.1f} | {s['tokens_per_s']:.1f} |")
    return "\n".join(lines)


def main() -> None:
    cache = Path(os.environ.get("CONSTRAIN_CACHE_DIR", Path.home() / ".cache" / "constrain"))
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--backends", default="xgrammar,guidance,constrain")
    parser.add_argument("--schemas", type=int, default=100)
    parser.add_argument("--max-tokens", type=int, default=128)
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--model", default=str(cache / "gemma-3-270m-vllm"))
    parser.add_argument("--data", default=str(Path(__file__).resolve().parents[3].parent / "shared" / "data" / "maskbench-dev"))
    parser.add_argument("--json", help="write every request's result here")
    parser.add_argument("--one", help=argparse.SUPPRESS)  # internal: run one backend, print JSON
    args = parser.parse_args()
    reqs = requests(Path(args.data), args.schemas)

    if args.one:
        run = run_backend(args.one, args.model, reqs, args.max_tokens, args.batch)
        Path(os.environ["BENCH_OUT"]).write_text(json.dumps(run))
        return

    summaries, runs = [], {}
    for backend in args.backends.split(","):
        with tempfile.NamedTemporaryFile(suffix=".json") as out:
            env = dict(os.environ, BENCH_OUT=out.name)
            subprocess.run([sys.executable, __file__, *sys.argv[1:], "--one", backend], check=True, env=env)
            run = json.loads(Path(out.name).read_text())
        runs[backend] = run
        summary = summarize(run, len(reqs))
        summary["refused_schemas"] = len({rid.split("#")[0] for rid, r in run["results"].items()
                                          if r["status"] == "refused"})
        summaries.append(summary)
        print(json.dumps(summary), flush=True)
    print(f"\n{len(reqs)} requests ({args.schemas} schemas x {len(PROMPTS)} prompts), "
          f"max_tokens {args.max_tokens}, batch {args.batch}, temperature 0.8\n")
    print(table(summaries))
    if args.json:
        Path(args.json).write_text(json.dumps({"summaries": summaries, "runs": runs}, indent=1))


if __name__ == "__main__":
    main()
