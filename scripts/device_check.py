#!/usr/bin/env python3
"""The measuring half of `scripts/device-check`: run on a GPU machine with a CUDA build of
`constrain` (scripts/build-cuda) and the model, it prints a Markdown report and writes it, with
every run's stats line and output, under --out.

What it measures, each on the GPU (`--gpu-layers all`) and on the CPU (`--gpu-layers 0`, every
core), at temperature 0:
- unconstrained generation on free-form prompts: tokens per second;
- constrained generation on the extraction prompts of fixtures/extraction/prompts.json (one per
  schema of schemas/): tokens per second counting sampled tokens only and counting forced tokens
  too, the median mask time against the model's time per step (`eval_s` over the sampled tokens:
  each sampled token is one evaluation, forced tokens ride in those batches), and whether every
  output is valid against its schema (with Python's jsonschema when the machine has it; the
  outputs are kept in runs.jsonl to validate elsewhere otherwise);
- that the binary falls back to the CPU with one line when no GPU is visible;
- the Python package's torch masking of CUDA logits (constrain/_torch_mask.py, which needs no
  compiled extension) against the same code on the CPU, and its time per call.

The CUDA build links cuBLAS 13 dynamically: the machine's own libcublas.so.13 and
libcublasLt.so.13 are found in the usual folders and in Python's nvidia packages and put on
LD_LIBRARY_PATH.

Usage: scripts/device_check.py --bin PATH --model PATH [--out DIR] [--repeats N]
"""

import argparse
import glob
import json
import os
import pathlib
import shutil
import statistics
import subprocess
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
FREE_FORM = [
    "Once upon a time, in a village at the edge of a great forest,",
    "The history of the steam engine begins",
    "Here are some tips for growing tomatoes at home:",
]
CUBLAS = ("libcublas.so.13", "libcublasLt.so.13")
FALLBACK = "running on the CPU"


def cuda_library_dirs():
    """Folders holding cuBLAS 13, first the toolkit's, then Python's nvidia wheels."""
    candidates = [os.environ.get("CUDA_HOME", ""), "/usr/local/cuda"]
    dirs = []
    for base in filter(None, candidates):
        dirs += [f"{base}/lib64", f"{base}/lib", f"{base}/targets/x86_64-linux/lib"]
    for pattern in ("/usr/local/cuda-13*/lib64", "/usr/lib/x86_64-linux-gnu",
                    "/opt/*/.venv/lib/python3*/site-packages/nvidia/cu13/lib",
                    "/opt/*/.venv/lib/python3*/site-packages/nvidia/cublas/lib",
                    "/usr/local/lib/python3*/dist-packages/nvidia/cu13/lib",
                    "/usr/local/lib/python3*/dist-packages/nvidia/cublas/lib"):
        dirs += sorted(glob.glob(pattern))
    try:
        import nvidia  # the pip wheels' namespace package, where torch's CUDA libraries live
        for root in nvidia.__path__:
            dirs += [f"{root}/cu13/lib", f"{root}/cublas/lib"]
    except ImportError:
        pass
    found = {}
    for d in dirs:
        for lib in CUBLAS:
            if lib not in found and os.path.exists(os.path.join(d, lib)):
                found[lib] = d
    return found


def environment():
    env = dict(os.environ)
    found = cuda_library_dirs()
    missing = [lib for lib in CUBLAS if lib not in found]
    if missing:
        sys.exit(f"device-check: {', '.join(missing)} not found on this machine (the CUDA build "
                 "links CUDA 13's cuBLAS; set CUDA_HOME to a CUDA 13 toolkit)")
    path = list(dict.fromkeys(found.values()))
    if os.environ.get("LD_LIBRARY_PATH"):
        path.append(os.environ["LD_LIBRARY_PATH"])
    env["LD_LIBRARY_PATH"] = ":".join(path)
    return env, found


def run(binary, env, args, prompt, timeout=300):
    command = [*binary, "--ctx-size", "2048", "--stats", "--temperature", "0", *args, prompt]
    started = time.monotonic()
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=timeout, check=False)
    wall = time.monotonic() - started
    if done.returncode not in (0, 1):
        sys.exit(f"device-check: {' '.join(command[:-1])} exited {done.returncode}:\n{done.stderr}")
    lines = done.stderr.strip().splitlines()
    stats = json.loads(lines[-1])
    return {"args": args, "stdout": done.stdout, "stats": stats, "notices": lines[:-1],
            "wall_s": wall}


def cases():
    fixture = json.loads((ROOT / "fixtures/extraction/prompts.json").read_text())
    for entry in fixture["prompts"]:
        schema = json.loads((ROOT / "schemas" / entry["schema"]).read_text())
        prompt = f"Text: {entry['facts']}\n{schema['title']} as JSON: "
        yield "constrained", entry["schema"], schema, ["--schema", f"schemas/{entry['schema']}",
                                                       "--max-tokens", "160"], prompt
    for i, prompt in enumerate(FREE_FORM):
        yield "unconstrained", f"free-form {i + 1}", None, ["--max-tokens", "128"], prompt


def validator():
    try:
        import jsonschema
    except ImportError:
        return None

    def valid(schema, text):
        try:
            jsonschema.validate(json.loads(text), schema)
            return True
        except (ValueError, jsonschema.ValidationError):
            return False
    return valid


def measure(binary, env, device, repeats, log):
    layers = ["--gpu-layers", "all"] if device == "GPU" else \
        ["--gpu-layers", "0", "--threads", str(os.cpu_count() or 1)]
    valid = validator()
    rows = {}
    for mode, name, schema, args, prompt in cases():
        for _ in range(repeats):
            result = run(binary, env, [*layers, *args], prompt)
            result.update(device=device, mode=mode, case=name)
            if schema is not None:
                result["valid"] = None if valid is None else valid(schema, result["stdout"])
            log.write(json.dumps(result) + "\n")
            rows.setdefault(mode, []).append(result)
    return rows


def summary(device, mode, results):
    def median(values):
        values = [v for v in values if v is not None]
        return statistics.median(values) if values else None

    def rate(r, forced):
        s = r["stats"]
        tokens = s["sampled_tokens"] + (s["forced_tokens"] if forced else 0)
        return tokens / s["decode_s"] if s["decode_s"] > 0 else None

    forward_ms = median([r["stats"]["eval_s"] * 1e3 / r["stats"]["sampled_tokens"]
                         for r in results if r["stats"]["sampled_tokens"]])
    mask_us = median([r["stats"].get("mask_us_p50") for r in results])
    checked = [r["valid"] for r in results if r.get("valid") is not None]
    valid = "-" if mode == "unconstrained" else \
        (f"{sum(checked)}/{len(results)}" if len(checked) == len(results) else "not checked")
    forced = sum(r["stats"]["forced_tokens"] for r in results)
    total = forced + sum(r["stats"]["sampled_tokens"] for r in results)
    fmt = lambda v, spec: "-" if v is None else format(v, spec)  # noqa: E731
    return (f"| {device} | {mode} | {len(results)} | {fmt(median([rate(r, False) for r in results]), '.1f')} "
            f"| {fmt(median([rate(r, True) for r in results]), '.1f')} | {forced}/{total} "
            f"| {fmt(mask_us, '.0f')} | {fmt(forward_ms, '.2f')} "
            f"| {fmt(None if mask_us is None or not forward_ms else mask_us / 10 / forward_ms, '.1f')} "
            f"| {valid} |")


def torch_masking():
    """The torch path of apply_token_bitmask_inplace on CUDA logits: same bits as on the CPU,
    logits left on the GPU, and the time per call."""
    try:
        import numpy as np
        import torch
    except ImportError as e:
        return [f"torch masking: not run ({e})"]
    if not torch.cuda.is_available():
        return ["torch masking: not run (torch sees no CUDA device)"]
    sys.path.insert(0, str(ROOT / "crates/constrain-python/python/constrain"))
    from _torch_mask import apply_with_torch

    lines = []
    rng = np.random.default_rng(0)
    width = 262_144
    for batch in (1, 64):
        words = (width + 31) // 32
        bitmask = rng.integers(-(2**31), 2**31, size=(batch, words), dtype=np.int64).astype(np.int32)
        logits = rng.normal(size=(batch, width)).astype(np.float32)
        on_cpu = torch.from_numpy(logits.copy())
        apply_with_torch(on_cpu, torch.from_numpy(bitmask))
        on_gpu = torch.from_numpy(logits).cuda()
        pointer = on_gpu.data_ptr()
        apply_with_torch(on_gpu, bitmask)
        same = bool(torch.equal(on_gpu.cpu(), on_cpu)) and on_gpu.data_ptr() == pointer
        pinned = torch.from_numpy(bitmask).pin_memory()
        fresh = torch.from_numpy(logits).cuda()
        for _ in range(3):
            apply_with_torch(fresh, pinned)
        torch.cuda.synchronize()
        calls = 50
        started = time.perf_counter()
        for _ in range(calls):
            apply_with_torch(fresh, pinned)
        torch.cuda.synchronize()
        us = (time.perf_counter() - started) / calls * 1e6
        lines.append(f"torch masking, {batch} x {width} float32 on {torch.cuda.get_device_name()}: "
                     f"{'same bits as the CPU, logits stayed on the GPU' if same else 'DIFFERS from the CPU'}; "
                     f"{us:.0f} us per call (bitmask from pinned host memory)")
    return lines


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--bin", required=True)
    parser.add_argument("--model", required=True)
    parser.add_argument("--out", default=os.environ.get("OUT", "device-check-out"))
    parser.add_argument("--repeats", type=int, default=2)
    options = parser.parse_args()
    out = pathlib.Path(options.out)
    out.mkdir(parents=True, exist_ok=True)
    env, found = environment()
    binary = [options.bin, "--model", options.model]
    report = ["# constrain on a GPU", ""]
    if shutil.which("nvidia-smi"):
        smi = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version,memory.total",
                              "--format=csv,noheader"], capture_output=True, text=True, check=False)
        report.append(f"GPU: {smi.stdout.strip() or smi.stderr.strip()}")
    report.append(f"cuBLAS: {', '.join(f'{lib} in {d}' for lib, d in found.items())}")
    report.append(f"CPU: {os.cpu_count()} cores")

    # Where the layers went, from the binary's own line and llama.cpp's log.
    load = subprocess.run([*binary, "--verbose", "--max-tokens", "1", "Hello"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=300, check=False)
    (out / "gpu-load.log").write_text(load.stderr)
    placed = [line for line in load.stderr.splitlines()
              if line.startswith("model ") or "offloaded" in line]
    report += [f"load: {line}" for line in placed] or ["load: no placement line (see gpu-load.log)"]

    # No visible GPU: the same binary must run on the CPU and say so in one line.
    hidden = dict(env, CUDA_VISIBLE_DEVICES="")
    fallback = subprocess.run([*binary, "--max-tokens", "4", "--stats", "Hello"], cwd=ROOT,
                              env=hidden, capture_output=True, text=True, timeout=300, check=False)
    notices = fallback.stderr.strip().splitlines()[:-1]
    report.append(f"without a visible GPU: exit {fallback.returncode}, stderr before the stats "
                  f"line: {notices!r}")

    rows = []
    with open(out / "runs.jsonl", "w") as log:
        for device in ("GPU", "CPU"):
            measured = measure(binary, env, device, options.repeats, log)
            rows += [summary(device, mode, results) for mode, results in measured.items()]
    report += ["", "| device | mode | runs | tok/s sampled | tok/s with forced | forced/all tokens "
               "| mask p50 us | forward ms/step | mask % of forward | valid |",
               "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |", *rows, ""]
    report += torch_masking()
    text = "\n".join(report) + "\n"
    (out / "report.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
