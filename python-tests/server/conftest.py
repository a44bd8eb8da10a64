"""Starts the real `constrain serve` with the default model on a free loopback port.

The binary is built with `cargo build -p constrain-cli` (or taken from $CONSTRAIN_BIN); the
default model must be in the cache (`constrain fetch-model`). Without it the suite fails with
instructions, unless CONSTRAIN_SKIP_MODEL_TESTS=1 (then it is skipped).
"""

import json
import os
import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))
import serverproc  # noqa: E402

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


@pytest.fixture(scope="session")
def server():
    model = _default_model()
    if not model.is_file():
        if os.environ.get("CONSTRAIN_SKIP_MODEL_TESTS") == "1":
            pytest.skip(f"no model at {model} (CONSTRAIN_SKIP_MODEL_TESTS=1)")
        pytest.fail(f"the server tests need the default model at {model}: run `constrain fetch-model`")
    binary = _build()
    server = serverproc.start(
        binary,
        ["--max-body-bytes", str(MAX_BODY), "--ctx-size", "2048", "--max-queue", "16"],
        key=API_KEY,
        timeout=180,
    )
    try:
        yield server
    finally:
        try:
            server.stop(timeout=20)
        except subprocess.TimeoutExpired:
            pass


@pytest.fixture(scope="session")
def client(server):
    import openai

    return openai.OpenAI(base_url=server.v1, api_key=API_KEY, max_retries=0, timeout=120)


@pytest.fixture(scope="session")
def model_id(client):
    return client.models.list().data[0].id


@pytest.fixture(scope="session")
def start_server():
    """Starts another server with its own options (`start(args)` gives an `openai` client for
    it); each one stops at the end of the session."""
    import openai

    model = _default_model()
    if not model.is_file():
        pytest.fail(f"the server tests need the default model at {model}: run `constrain fetch-model`")
    binary = _build()
    started = {}

    def start(args: list[str]):
        key = tuple(args)
        if key not in started:
            started[key] = serverproc.start(binary, ["--ctx-size", "2048", *args], key=API_KEY, timeout=180)
        return openai.OpenAI(base_url=started[key].v1, api_key=API_KEY, max_retries=0, timeout=120)

    yield start
    for server in started.values():
        try:
            server.stop(timeout=20)
        except subprocess.TimeoutExpired:
            pass
