#!/usr/bin/env python3
"""Time to first token of `constrain serve` for a schema it has seen before and for new ones.

Usage: scripts/server-ttft.py [--base http://127.0.0.1:8080] [--api-key KEY] [--rounds 5]

Each round streams one chat completion with a JSON Schema the server has never seen (a fresh
property name makes the schema text new, so its grammar is compiled for this request), then the
same schema again (its grammar comes from the cache). The time is from sending the request to
the first streamed content. Only the standard library is used.
"""

import argparse
import json
import statistics
import time
import urllib.request
import uuid


def ttft(base: str, key: str | None, schema: dict) -> tuple[float, float]:
    body = {
        "messages": [{"role": "user", "content": "A person as JSON"}],
        "response_format": {"type": "json_schema", "json_schema": {"name": "p", "schema": schema}},
        "max_tokens": 24,
        "temperature": 0,
        "stream": True,
    }
    req = urllib.request.Request(base + "/v1/chat/completions", data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    if key:
        req.add_header("Authorization", f"Bearer {key}")
    start = time.perf_counter()
    first = None
    with urllib.request.urlopen(req, timeout=300) as r:
        for raw in r:
            line = raw.decode().strip()
            if not line.startswith("data: ") or line == "data: [DONE]":
                continue
            chunk = json.loads(line[6:])
            for c in chunk.get("choices", []):
                if c.get("delta", {}).get("content") and first is None:
                    first = time.perf_counter() - start
    return first if first is not None else float("nan"), time.perf_counter() - start


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--base", default="http://127.0.0.1:8080")
    p.add_argument("--api-key")
    p.add_argument("--rounds", type=int, default=5)
    a = p.parse_args()
    new, seen = [], []
    for _ in range(a.rounds):
        field = "f_" + uuid.uuid4().hex[:8]
        schema = {
            "type": "object",
            "properties": {
                "name": {"type": "string", "maxLength": 20},
                "age": {"type": "integer", "minimum": 0, "maximum": 120},
                "email": {"type": "string", "format": "email"},
                "tags": {"type": "array", "items": {"enum": ["a", "b", "c"]}, "maxItems": 3},
                field: {"type": "boolean"},
            },
            "required": ["name", "age", field],
        }
        new.append(ttft(a.base, a.api_key, schema)[0])
        seen.append(ttft(a.base, a.api_key, schema)[0])
    ms = lambda xs: f"median {statistics.median(xs) * 1000:.0f} ms (min {min(xs) * 1000:.0f}, max {max(xs) * 1000:.0f})"
    print(f"new schema:  {ms(new)}")
    print(f"seen schema: {ms(seen)}")


if __name__ == "__main__":
    main()
