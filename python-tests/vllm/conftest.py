"""vLLM (CPU build) with the constrain backend: one offline engine and one OpenAI server per
test session, both on the default model converted for vLLM by ``scripts/vllm-env``.

The package is installed from this checkout first, as in the package's own suite
(``CONSTRAIN_PYTHON_SKIP_INSTALL=1`` skips that). The model is required: without it the suite
fails rather than skipping, since nothing here can be checked without vLLM generating.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
CRATE = REPO / "crates" / "constrain-python"
SCHEMAS = REPO / "schemas"

# vLLM's CPU build needs its KV-cache size in GiB, or start-up fails asking for too much memory.
os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")

MAX_MODEL_LEN = 2048
MAX_NUM_SEQS = 16
# Both engines run eagerly: compiling the model graph takes minutes on a small CPU and changes
# nothing that is tested here.


def _install_package() -> None:
    if os.environ.get("CONSTRAIN_PYTHON_SKIP_INSTALL") == "1":
        return
    env = dict(os.environ)
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--no-build-isolation", "--no-deps", str(CRATE)],
        check=True,
        env=env,
    )


_install_package()


def model_dir() -> Path:
    """The safetensors model ``scripts/vllm-env`` converts from the default GGUF."""
    if os.environ.get("CONSTRAIN_CACHE_DIR"):
        cache = Path(os.environ["CONSTRAIN_CACHE_DIR"])
    elif os.environ.get("XDG_CACHE_HOME"):
        cache = Path(os.environ["XDG_CACHE_HOME"]) / "constrain"
    else:
        cache = Path.home() / ".cache" / "constrain"
    return cache / "gemma-3-270m-vllm"


def load_schema(name: str) -> dict:
    schema = json.loads((SCHEMAS / name).read_text())
    for key in ("$schema", "examples"):
        schema.pop(key, None)
    return schema


def gemma_prompt(text: str) -> str:
    """A user turn in Gemma's chat format, the model's turn opened."""
    return f"<start_of_turn>user\n{text}<end_of_turn>\n<start_of_turn>model\n"


@pytest.fixture(scope="session")
def model() -> Path:
    found = model_dir()
    if not (found / ".complete").exists():
        pytest.fail(f"{found} is missing: run scripts/vllm-env (it converts the default model)")
    return found


@pytest.fixture(scope="session")
def llm(model: Path):
    """One offline engine with the constrain backend and n-gram speculative decoding, so every
    offline test also goes through vLLM's draft validation and rollback."""
    import constrain.vllm  # noqa: F401 - names the backend before vLLM builds its config
    from vllm import LLM

    engine = LLM(
        str(model),
        structured_outputs_config={"backend": "constrain"},
        speculative_config={"method": "ngram", "num_speculative_tokens": 3,
                            "prompt_lookup_max": 3, "prompt_lookup_min": 1},
        max_model_len=MAX_MODEL_LEN,
        max_num_seqs=MAX_NUM_SEQS,
        enforce_eager=True,
        disable_log_stats=False,  # the speculator's counters are read by a test
        seed=0,
    )
    yield engine
    del engine


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="session")
def server(model: Path, tmp_path_factory):
    """vLLM's OpenAI server with ``--structured-outputs-config '{"backend": "constrain"}'``;
    yields its base URL. Its log is printed when it does not come up."""
    port = _free_port()
    log_path = tmp_path_factory.mktemp("server") / "vllm.log"
    command = [
        sys.executable, "-m", "vllm.entrypoints.openai.api_server",
        "--model", str(model), "--served-model-name", "gemma",
        "--host", "127.0.0.1", "--port", str(port),
        "--max-model-len", str(MAX_MODEL_LEN), "--max-num-seqs", str(MAX_NUM_SEQS),
        "--structured-outputs-config", json.dumps({"backend": "constrain"}),
        "--enforce-eager",
        # Named and required tool choices are turned into a JSON schema by vLLM, which asks for
        # a parser of the model's tool-call text all the same.
        "--enable-auto-tool-choice", "--tool-call-parser", "hermes",
    ]
    with open(log_path, "w") as log:
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        _wait_until_up(process, url, log_path)
        yield {"url": url, "log": log_path}
    finally:
        process.terminate()
        try:
            process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            process.kill()


def _wait_until_up(process: subprocess.Popen, url: str, log_path: Path, timeout: float = 600) -> None:
    import urllib.request

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            pytest.fail(f"vLLM's server exited ({process.returncode}):\n{log_path.read_text()[-6000:]}")
        try:
            with urllib.request.urlopen(url + "/health", timeout=2) as response:
                if response.status == 200:
                    return
        except OSError:
            pass
        time.sleep(2)
    pytest.fail(f"vLLM's server did not come up in {timeout:.0f} s:\n{log_path.read_text()[-6000:]}")


@pytest.fixture(scope="session")
def client(server):
    from openai import OpenAI

    return OpenAI(base_url=server["url"] + "/v1", api_key="unused", timeout=600, max_retries=0)
