"""Builds and installs the package under test, and finds the shared data and the model.

The package is installed from this checkout (``pip install ./crates/constrain-python``) before
any test imports it, so a clean clone tests its own code; ``CONSTRAIN_PYTHON_SKIP_INSTALL=1``
skips that when the package was just installed by hand.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
CRATE = REPO / "crates" / "constrain-python"


def _install_package() -> None:
    if os.environ.get("CONSTRAIN_PYTHON_SKIP_INSTALL") == "1":
        return
    env = dict(os.environ)
    # maturin's build backend runs the `maturin` executable of this environment.
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--no-build-isolation", "--no-deps", str(CRATE)],
        check=True,
        env=env,
    )


_install_package()


def target_dir() -> Path:
    """Where cargo (and maturin) put this crate's builds."""
    return Path(os.environ.get("CARGO_TARGET_DIR") or CRATE / "target")


def shared_dir() -> Path | None:
    """The shared data (tokenizers, MaskBench): ``$CONSTRAIN_SHARED_DIR``, or ``shared``
    beside the repository (a worktree's parent, or the clone's)."""
    configured = os.environ.get("CONSTRAIN_SHARED_DIR")
    candidates = [Path(configured)] if configured else [REPO.parent / "shared", REPO / "shared"]
    for candidate in candidates:
        if (candidate / "tokenizers").is_dir():
            return candidate
    return None


def require_shared() -> Path:
    """The shared data, or a skip with the reason (a failure under ``CONSTRAIN_REQUIRE_SHARED``)."""
    found = shared_dir()
    if found is not None:
        return found
    reason = "shared data not found: set CONSTRAIN_SHARED_DIR to the directory holding tokenizers/"
    if os.environ.get("CONSTRAIN_REQUIRE_SHARED"):
        pytest.fail(reason)
    pytest.skip(reason)


TOKENIZERS = ["llama3_1", "qwen3", "gpt4o", "deepseek_v3", "gemma3"]


@pytest.fixture(scope="session")
def shared() -> Path:
    return require_shared()


@pytest.fixture(scope="session")
def llama_vocab(shared: Path):
    import constrain

    return constrain.Vocabulary.from_tokenizer_json(shared / "tokenizers" / "llama3_1" / "tokenizer.json")


@pytest.fixture(scope="session")
def toy_vocab():
    """A small vocabulary: single characters, a few words, two specials and an end token."""
    import constrain

    pieces = [bytes([c]) for c in range(32, 127)] + [
        b'{"', b'":', b'",', b"true", b"false", b"null", b"name", b"age", b"  ", b"\n",
    ]
    tokens = pieces + [b"<special>", b"<eos>"]
    return constrain.Vocabulary.from_tokens(tokens, [len(tokens) - 1], special_ids=[len(tokens) - 2])


def model_path() -> Path:
    """Where ``constrain fetch-model`` caches the default model (as ``model_store`` does)."""
    if os.environ.get("CONSTRAIN_CACHE_DIR"):
        cache = Path(os.environ["CONSTRAIN_CACHE_DIR"])
    elif os.environ.get("XDG_CACHE_HOME"):
        cache = Path(os.environ["XDG_CACHE_HOME"]) / "constrain"
    else:
        cache = Path.home() / ".cache" / "constrain"
    return cache / "gemma-3-270m-q4_k_m.gguf"


@pytest.fixture(scope="session")
def mask_reference() -> Path:
    """The Rust reference binary (built here, in the package's cargo workspace)."""
    subprocess.run(
        ["cargo", "build", "--release", "-q", "-p", "constrain-mask-reference"],
        cwd=CRATE,
        check=True,
    )
    binary = target_dir() / "release" / "constrain-mask-reference"
    assert binary.exists(), binary
    return binary
