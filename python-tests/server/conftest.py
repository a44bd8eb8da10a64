"""Starts the real `constrain serve` with the default model on a free loopback port.

The binary is built with `cargo build -p constrain-cli` (or taken from $CONSTRAIN_BIN); the
default model must be in the cache (`constrain fetch-model`). Without it the suite fails with
instructions, unless CONSTRAIN_SKIP_MODEL_TESTS=1 (then it is skipped).
"""

import json
import os
import pathlib
import re
import subprocess
import threading
import time
import urllib.request

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
API_KEY = "test-key"
# Small enough that the 413 test sends a modest body.
MAX_BODY = 1_000_000


def _build() -> str:
    if os.environ.get("CONSTRAIN_BIN"):
        return os.environ["CONSTRAIN_BIN"]
    out = subprocess.run(
        ["cargo", "build", "-p", "constrain-cli", "--message-format=json-render-diagnostics"],
        cwd=ROOT,
        check=True,
        stdout=subprocess.PIPE,
        text=True,
    ).stdout
    for line in out.splitlines():
        msg = json.loads(line)
        if msg.get("reason") == "compiler-artifact" and msg["target"]["name"] == "constrain" and msg.get("executable"):
            return msg["executable"]
    raise RuntimeError("cargo build did not report the constrain binary")


def _default_model() -> pathlib.Path:
    cache = os.environ.get("CONSTRAIN_CACHE_DIR") or (
        pathlib.Path(os.environ["XDG_CACHE_HOME"]) / "constrain" if os.environ.get("XDG_CACHE_HOME") else None
    )
    cache = pathlib.Path(cache) if cache else pathlib.Path.home() / ".cache" / "constrain"
    return cache / "gemma-3-270m-q4_k_m.gguf"


class Server:
    def __init__(self, process: subprocess.Popen, base: str, log: list):
        self.process = process
        self.base = base
        self.log = log

    @property
    def v1(self) -> str:
        return self.base + "/v1"

    def get(self, path: str, key: str | None = API_KEY):
        req = urllib.request.Request(self.base + path)
        if key:
            req.add_header("Authorization", f"Bearer {key}")
        try:
            with urllib.request.urlopen(req, timeout=30) as r:
                return r.status, r.read().decode()
        except urllib.error.HTTPError as e:
            return e.code, e.read().decode()


@pytest.fixture(scope="session")
def server():
    model = _default_model()
    if not model.is_file():
        if os.environ.get("CONSTRAIN_SKIP_MODEL_TESTS") == "1":
            pytest.skip(f"no model at {model} (CONSTRAIN_SKIP_MODEL_TESTS=1)")
        pytest.fail(f"the server tests need the default model at {model}: run `constrain fetch-model`")
    binary = _build()
    process = subprocess.Popen(
        [binary, "serve", "--host", "127.0.0.1", "--port", "0", "--api-key", API_KEY,
         "--max-body-bytes", str(MAX_BODY), "--ctx-size", "2048", "--max-queue", "16"],
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        text=True,
    )
    log: list[str] = []
    found: dict = {}
    ready = threading.Event()

    def read_stderr():
        for line in process.stderr:
            log.append(line)
            m = re.search(r"listening on (http://\S+)", line)
            if m:
                found["base"] = m.group(1)
                ready.set()
        ready.set()

    threading.Thread(target=read_stderr, daemon=True).start()
    try:
        if not ready.wait(180) or "base" not in found:
            raise RuntimeError("the server did not start:\n" + "".join(log))
        server = Server(process, found["base"], log)
        deadline = time.time() + 60
        while True:
            status, _ = server.get("/health", key=None)
            if status == 200:
                break
            if time.time() > deadline:
                raise RuntimeError("/health never answered:\n" + "".join(log))
            time.sleep(0.2)
        yield server
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@pytest.fixture(scope="session")
def client(server):
    import openai

    return openai.OpenAI(base_url=server.v1, api_key=API_KEY, max_retries=0, timeout=120)


@pytest.fixture(scope="session")
def model_id(client):
    return client.models.list().data[0].id
