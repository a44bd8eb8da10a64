#!/usr/bin/env python3
"""Throughput and latency of `constrain serve` under concurrent clients, with and without batching.

Usage: scripts/bench-server-load.py BINARY [--model PATH] [--parallel 4 1] [--clients 1 2 4 8]
                                    [--requests 3] [--max-tokens 64] [--schema schemas/person.json]
                                    [--lookup K]

For each `--parallel` value the script starts `BINARY serve --parallel P` on a free loopback
port, warms it up (the schema's grammar is compiled once), then for each client count runs that
many threads at once, each sending `--requests` streamed chat completions constrained by the
schema (fixed seeds, `max_tokens`) with the official `openai` client. It prints one Markdown row
per (parallel, clients): aggregate generated tokens per second (all tokens over the wall time),
request latency p50/p95, time to first token p50, and per-token latency p50 (a request's time
after its first token over the tokens after the first). From the server's `/metrics` before
and after, it adds the decode steps, the mean sequences per step and the share of the wall time
spent in the model's forward passes (the rest is sampling, masks and the HTTP side). With
`--lookup K` every request drafts by prompt lookup (`lookup: K`). Then it stops the server with
SIGTERM and checks it exits 0.
"""

import argparse
import json
import pathlib
import statistics
import threading
import time

import urllib.request

import openai

import serverproc

ROOT = pathlib.Path(__file__).resolve().parents[1]


def one(client: openai.OpenAI, schema: dict, seed: int, max_tokens: int, lookup: int) -> dict:
    start = time.perf_counter()
    first = None
    tokens = 0
    text = []
    stream = client.chat.completions.create(
        model="default",
        messages=[{"role": "user", "content": "Describe a person as JSON."}],
        response_format={"type": "json_schema",
                         "json_schema": {"name": "person", "schema": schema, "strict": True}},
        max_tokens=max_tokens, seed=seed, stream=True, stream_options={"include_usage": True},
        extra_body={"lookup": lookup} if lookup else None,
    )
    for chunk in stream:
        if chunk.usage is not None:
            tokens = chunk.usage.completion_tokens
        for c in chunk.choices:
            if c.delta.content:
                text.append(c.delta.content)
                if first is None:
                    first = time.perf_counter() - start
    total = time.perf_counter() - start
    if tokens < max_tokens:
        json.loads("".join(text))  # complete answers are JSON (the schema's, by construction)
    first = first if first is not None else total
    per_token = (total - first) / (tokens - 1) if tokens > 1 else float("nan")
    return {"latency": total, "ttft": first, "tokens": tokens, "per_token": per_token}


def pct(values: list[float], p: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, round(p / 100 * (len(values) - 1)))]


def metrics(base: str) -> dict[str, float]:
    """The server's counters and histogram sums, by name (labels included)."""
    with urllib.request.urlopen(base + "/metrics", timeout=30) as r:
        text = r.read().decode()
    values = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            name, _, value = line.rpartition(" ")
            values[name] = float(value)
    return values


def run(base: str, clients: int, requests: int, schema: dict, max_tokens: int,
        lookup: int) -> dict:
    results: list[dict] = []
    lock = threading.Lock()

    def worker(k: int):
        client = openai.OpenAI(base_url=base + "/v1", api_key="none", max_retries=0, timeout=600)
        for i in range(requests):
            r = one(client, schema, 1000 * k + i, max_tokens, lookup)
            with lock:
                results.append(r)

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(clients)]
    before = metrics(base)
    start = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - start
    after = metrics(base)
    delta = {k: after[k] - before.get(k, 0.0) for k in after}
    steps = delta["constrain_batch_sequences_count"]
    tokens = sum(r["tokens"] for r in results)
    return {
        "requests": len(results),
        "tokens": tokens,
        "wall": wall,
        "tok_s": tokens / wall,
        "p50": pct([r["latency"] for r in results], 50),
        "p95": pct([r["latency"] for r in results], 95),
        "ttft50": pct([r["ttft"] for r in results], 50),
        "per_token": statistics.median(r["per_token"] for r in results if r["tokens"] > 1),
        "steps": int(steps),
        "seqs_per_step": delta["constrain_batch_sequences_sum"] / steps if steps else 0.0,
        "eval_share": delta["constrain_eval_duration_seconds_sum"] / wall,
        "accepted": int(delta.get('constrain_draft_tokens_total{outcome="accepted"}', 0)),
        "rejected": int(delta.get('constrain_draft_tokens_total{outcome="rejected"}', 0)),
    }


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("binary")
    p.add_argument("--model")
    p.add_argument("--parallel", type=int, nargs="+", default=[4, 1])
    p.add_argument("--clients", type=int, nargs="+", default=[1, 2, 4, 8])
    p.add_argument("--requests", type=int, default=3)
    p.add_argument("--max-tokens", type=int, default=64)
    p.add_argument("--schema", default=str(ROOT / "schemas" / "person.json"))
    p.add_argument("--lookup", type=int, default=0)
    a = p.parse_args()
    schema = json.loads(pathlib.Path(a.schema).read_text())
    drafts = " drafts kept/made |" if a.lookup else ""
    print("| --parallel | clients | requests | tokens | wall s | tokens/s | latency p50 s | "
          "latency p95 s | TTFT p50 s | per-token ms p50 | steps | sequences/step | "
          "forward share |" + drafts)
    print("| ---: " * (13 + bool(a.lookup)) + "|")
    for parallel in a.parallel:
        server = serverproc.start(a.binary, ["--parallel", str(parallel), "--ctx-size", "1024",
                                             "--max-queue", "64"], model=a.model)
        base = server.base
        try:
            client = openai.OpenAI(base_url=base + "/v1", api_key="none", max_retries=0, timeout=600)
            one(client, schema, 1, a.max_tokens, a.lookup)
            for clients in a.clients:
                r = run(base, clients, a.requests, schema, a.max_tokens, a.lookup)
                kept = (f" {r['accepted']}/{r['accepted'] + r['rejected']} |"
                        if a.lookup else "")
                print(f"| {parallel} | {clients} | {r['requests']} | {r['tokens']} | {r['wall']:.1f} | "
                      f"{r['tok_s']:.1f} | {r['p50']:.2f} | {r['p95']:.2f} | {r['ttft50']:.2f} | "
                      f"{1000 * r['per_token']:.1f} | {r['steps']} | {r['seqs_per_step']:.2f} | "
                      f"{100 * r['eval_share']:.0f}% |{kept}", flush=True)
        finally:
            code = server.stop()
            print(f"<!-- --parallel {parallel}: SIGTERM, exit status {code} -->", flush=True)


if __name__ == "__main__":
    main()
