"""A short run of the fault test (`scripts/server-fault-test.py`) against a server of its own:
8 clients, 48 requests mixing schemas new and repeated, streams, tool calls, malformed and
oversized bodies, bad keys and dropped streams; every completed answer valid, every bad request
its status, `/metrics` idle after, memory bounded, SIGTERM under load exits 0. The server runs
with one model thread (a core left free: masks are filled while the model evaluates) and
prompt-lookup drafts on every request."""

import subprocess
import sys

from conftest import ROOT, _build


def test_faults_under_load():
    script = ROOT / "scripts" / "server-fault-test.py"
    # The short run's warm-up fills less, so memory gets more room than the full run's 10%.
    run = subprocess.run(
        [sys.executable, str(script), _build(), "--requests", "48", "--clients", "8",
         "--warmup", "16", "--max-tokens", "24", "--max-rss-growth", "25",
         "--threads", "1", "--lookup", "4"],
        capture_output=True, text=True, timeout=900)
    assert run.returncode == 0, run.stdout + run.stderr
