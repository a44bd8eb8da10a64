#!/usr/bin/env python3
"""Faults under load against `constrain serve`: the server survives, answers stay valid, nothing leaks.

Usage: scripts/server-fault-test.py BINARY [--model PATH] [--requests 300] [--clients 16]
                                     [--max-tokens 32] [--parallel 4] [--warmup 64]
                                     [--max-rss-growth 10] [--threads N] [--lookup K]

Starts `BINARY serve` on a free loopback port, warms it up, reads its resident memory, then runs
`--clients` threads sending `--requests` requests in all, drawn (with a fixed seed) from: a
repeated JSON Schema, a new JSON Schema each time, the same streamed, a tool call, a malformed
body, an oversized body, a wrong API key, and a stream the client drops after its first chunk.
Checks: every completed answer validates against its schema (tool arguments against the tool's
parameters); every bad request gets its status (400, 413, 401); the server is still up;
`/metrics` returns to idle (0 active, 0 queued, 0 busy slots); resident memory after is within
`--max-rss-growth` percent (10) of before; SIGTERM while requests run exits 0. Prints a summary
and exits 1 on any failure. The test suite runs a short version (`python-tests/server/
test_fault_test.py`).
"""

import argparse
import collections
import json
import random
import re
import signal
import sys
import threading
import time
import uuid

import httpx
import jsonschema
import openai

import serverproc

KEY = "fault-key"
MAX_BODY = 200_000
SCHEMA = {
    "type": "object",
    "properties": {"name": {"type": "string", "maxLength": 12},
                   "age": {"type": "integer", "minimum": 0, "maximum": 120}},
    "required": ["name", "age"], "additionalProperties": False,
}
TOOL = {"type": "function", "function": {
    "name": "get_weather", "description": "Current weather in a city",
    "parameters": {"type": "object",
                   "properties": {"city": {"type": "string", "maxLength": 16},
                                  "unit": {"enum": ["celsius", "fahrenheit"]}},
                   "required": ["city", "unit"], "additionalProperties": False}}}
KINDS = ["schema", "new_schema", "stream", "tool", "malformed", "oversized", "bad_key", "disconnect"]


def start(binary, model, parallel, extra):
    return serverproc.start(binary, extra + [
        "--parallel", str(parallel), "--ctx-size", "1024", "--max-queue", "64",
        "--max-body-bytes", str(MAX_BODY), "--shutdown-timeout-s", "10",
        # A small grammar cache, full after the warm-up: new schemas then replace old ones, so
        # memory after the run is comparable with memory before it.
        "--grammar-cache", "16"], model=model, key=KEY)


def metrics(base):
    text = httpx.get(base + "/metrics", headers={"Authorization": f"Bearer {KEY}"}, timeout=30).text
    values = {}
    for name in ["constrain_active_requests", "constrain_queue_length", "constrain_active_slots"]:
        m = re.search(rf"^{name} (\S+)$", text, re.M)
        values[name] = float(m.group(1)) if m else None
    return values


def response_format(schema):
    return {"type": "json_schema", "json_schema": {"name": "x", "schema": schema, "strict": True}}


def request(kind, base, client, max_tokens, rng):
    """Sends one request of `kind`; returns (ok, detail)."""
    messages = [{"role": "user", "content": "A person as JSON."}]
    seed = rng.randrange(1 << 30)
    if kind in ("schema", "new_schema"):
        schema = json.loads(json.dumps(SCHEMA))
        if kind == "new_schema":
            schema["properties"]["f_" + uuid.uuid4().hex[:8]] = {"type": "boolean"}
            schema["required"].append(next(k for k in schema["properties"] if k.startswith("f_")))
        r = client.chat.completions.create(model="default", messages=messages, seed=seed,
                                           response_format=response_format(schema),
                                           max_tokens=max_tokens)
        jsonschema.validate(json.loads(r.choices[0].message.content), schema)
        return True, r.choices[0].finish_reason
    if kind == "stream":
        text = []
        for chunk in client.chat.completions.create(model="default", messages=messages, seed=seed,
                                                    response_format=response_format(SCHEMA),
                                                    max_tokens=max_tokens, stream=True):
            for c in chunk.choices:
                text.append(c.delta.content or "")
        jsonschema.validate(json.loads("".join(text)), SCHEMA)
        return True, "stream"
    if kind == "tool":
        r = client.chat.completions.create(
            model="default", seed=seed, tools=[TOOL], tool_choice="required",
            messages=[{"role": "user", "content": "Weather in Oslo?"}],
            # The forced call's shortest output needs more than the small default budget.
            max_tokens=max(max_tokens, 64))
        calls = r.choices[0].message.tool_calls or []
        if not calls:
            return False, f"no tool call: {r.choices[0]}"
        for call in calls:
            jsonschema.validate(json.loads(call.function.arguments), TOOL["function"]["parameters"])
        return True, "tool"
    headers = {"Authorization": f"Bearer {KEY}", "Content-Type": "application/json"}
    url = base + "/v1/chat/completions"
    if kind == "malformed":
        r = httpx.post(url, headers=headers, content=b'{"messages": [', timeout=60)
        return r.status_code == 400, r.status_code
    if kind == "oversized":
        body = json.dumps({"messages": [{"role": "user", "content": "x" * (MAX_BODY + 10)}]})
        r = httpx.post(url, headers=headers, content=body.encode(), timeout=60)
        return r.status_code == 413, r.status_code
    if kind == "bad_key":
        r = httpx.post(url, headers={**headers, "Authorization": "Bearer wrong"},
                       json={"messages": messages, "max_tokens": 4}, timeout=60)
        return r.status_code == 401, r.status_code
    if kind == "disconnect":
        body = {"messages": messages, "max_tokens": 200, "stream": True, "seed": seed,
                "response_format": response_format(SCHEMA)}
        with httpx.stream("POST", url, headers=headers, json=body, timeout=120) as r:
            if r.status_code != 200:
                return False, r.status_code
            for _ in r.iter_lines():
                break  # the first line only; leaving closes the connection mid-stream
        return True, "dropped"
    raise ValueError(kind)


def load(base, requests, clients, max_tokens, seed):
    rng = random.Random(seed)
    kinds = [KINDS[i % len(KINDS)] for i in range(requests)]
    rng.shuffle(kinds)
    todo = collections.deque(enumerate(kinds))
    lock = threading.Lock()
    outcomes = collections.Counter()
    failures = []

    def worker(k):
        client = openai.OpenAI(base_url=base + "/v1", api_key=KEY, max_retries=0, timeout=300)
        local = random.Random(seed * 100 + k)
        while True:
            with lock:
                if not todo:
                    return
                i, kind = todo.popleft()
            try:
                ok, detail = request(kind, base, client, max_tokens, local)
            except Exception as e:  # noqa: BLE001 - any exception is a failed check
                ok, detail = False, f"{type(e).__name__}: {e}"
            with lock:
                outcomes[(kind, ok)] += 1
                if not ok:
                    failures.append((i, kind, str(detail)[:300]))

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return outcomes, failures


def main():
    p = argparse.ArgumentParser()
    p.add_argument("binary")
    p.add_argument("--model")
    p.add_argument("--requests", type=int, default=300)
    p.add_argument("--clients", type=int, default=16)
    p.add_argument("--max-tokens", type=int, default=32)
    p.add_argument("--parallel", type=int, default=4)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--warmup", type=int, default=8 * len(KINDS),
                   help="requests before memory is first read (caches and pools fill)")
    p.add_argument("--max-rss-growth", type=float, default=10.0, help="percent")
    p.add_argument("--threads", type=int,
                   help="the model's threads (fewer than the cores: masks fill during decodes)")
    p.add_argument("--lookup", type=int, default=0,
                   help="every request drafts by prompt lookup (the server's --lookup)")
    a = p.parse_args()
    extra = (["--threads", str(a.threads)] if a.threads else []) + ["--lookup", str(a.lookup)]
    server = start(a.binary, a.model, a.parallel, extra)
    process, base, log = server.process, server.base, server.log
    problems = []
    try:
        # Warm-up: every kind once, a few times, so caches and allocator pools are filled.
        load(base, a.warmup, a.clients, a.max_tokens, a.seed + 1)
        time.sleep(1)
        before = server.memory_kib()["VmRSS"]
        t = time.perf_counter()
        outcomes, failures = load(base, a.requests, a.clients, a.max_tokens, a.seed)
        took = time.perf_counter() - t
        idle = None
        for _ in range(60):
            idle = metrics(base)
            if all(v == 0 for v in idle.values()):
                break
            time.sleep(0.5)
        after = server.memory_kib()["VmRSS"]
        up = httpx.get(base + "/health", timeout=10).status_code == 200
        print(f"{a.requests} requests from {a.clients} clients in {took:.1f} s")
        for kind in KINDS:
            print(f"  {kind:11} ok {outcomes[(kind, True)]:3}  failed {outcomes[(kind, False)]:3}")
        print(f"metrics after: {idle}")
        print(f"VmRSS before {before} KiB, after {after} KiB ({100 * (after - before) / before:+.1f}%)")
        print(f"server up after: {up}")
        problems += [f"request {i} ({kind}): {d}" for i, kind, d in failures]
        if not up:
            problems.append("the server is down")
        if not idle or any(v != 0 for v in idle.values()):
            problems.append(f"/metrics not idle: {idle}")
        if after > before * (1 + a.max_rss_growth / 100):
            problems.append(f"resident memory grew {100 * (after - before) / before:.1f}%")
        # SIGTERM while requests run: the server finishes or cancels them, and exits 0.
        streams = threading.Thread(target=load, args=(base, 8, 8, a.max_tokens, a.seed + 2))
        streams.start()
        time.sleep(1.0)
        t = time.perf_counter()
        process.send_signal(signal.SIGTERM)
        code = process.wait(timeout=60)
        print(f"SIGTERM under load: exit status {code} after {time.perf_counter() - t:.1f} s")
        streams.join()
        if code != 0:
            problems.append(f"exit status {code} after SIGTERM")
        lines = [l for l in log if l.startswith('{"event":"request"')]
        print(f"request log lines: {len(lines)}")
    finally:
        if process.poll() is None:
            process.kill()
    for problem in problems:
        print("FAIL:", problem)
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
