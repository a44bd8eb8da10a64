"""Starts `constrain serve` on a free loopback port and stops it: shared by the server's test
suite and the scripts that measure it (load, faults, time to first token, bad requests).

The server prints `listening on http://HOST:PORT` on stderr once its socket is bound; that line
is how the port it picked (`--port 0`) is learned. Every stderr line is kept in `log`, so a
failure can show what the server said.
"""

import re
import signal
import subprocess
import threading
import time
import urllib.error
import urllib.request

# `Server.get`'s default: the API key the server was started with.
_OWN_KEY = object()


class Server:
    """A running `constrain serve`."""

    def __init__(self, process: subprocess.Popen, base: str, log: list[str], key: str | None):
        self.process = process
        self.base = base
        self.log = log
        self.key = key

    @property
    def v1(self) -> str:
        return self.base + "/v1"

    @property
    def pid(self) -> int:
        return self.process.pid

    def get(self, path: str, key=_OWN_KEY, timeout: float = 30) -> tuple[int, str]:
        """GET a route with the server's API key (or `key`; `None`: no key): the status and the
        body (an HTTP error is an answer, not an exception)."""
        key = self.key if key is _OWN_KEY else key
        request = urllib.request.Request(self.base + path)
        if key:
            request.add_header("Authorization", f"Bearer {key}")
        try:
            with urllib.request.urlopen(request, timeout=timeout) as r:
                return r.status, r.read().decode()
        except urllib.error.HTTPError as e:
            return e.code, e.read().decode()

    def memory_kib(self) -> dict[str, int]:
        """Resident memory now (`VmRSS`) and at its peak so far (`VmHWM`), in KiB."""
        values = {}
        with open(f"/proc/{self.pid}/status") as f:
            for line in f:
                name, _, rest = line.partition(":")
                if name in ("VmRSS", "VmHWM"):
                    values[name] = int(rest.split()[0])
        return values

    def stop(self, timeout: float = 60) -> int:
        """SIGTERM, then the exit status (killed if it does not exit within `timeout`)."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        try:
            return self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
            raise


def start(binary: str, args: list[str], model: str | None = None, key: str | None = None,
          timeout: float = 300) -> Server:
    """`binary serve --host 127.0.0.1 --port 0 ARGS [--model MODEL] [--api-key KEY]`, once
    `/health` answers.

    Raises `RuntimeError` with the server's stderr if it exits or does not listen in time.
    """
    cmd = [binary, "serve", "--host", "127.0.0.1", "--port", "0", *args]
    if model:
        cmd += ["--model", model]
    if key:
        cmd += ["--api-key", key]
    process = subprocess.Popen(cmd, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True)
    log: list[str] = []
    found: dict[str, str] = {}
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
        if not ready.wait(timeout) or "base" not in found:
            raise RuntimeError("the server did not start:\n" + "".join(log))
        server = Server(process, found["base"], log, key)
        deadline = time.time() + 60
        while server.get("/health", key=None)[0] != 200:
            if time.time() > deadline:
                raise RuntimeError("/health never answered:\n" + "".join(log))
            time.sleep(0.2)
        return server
    except BaseException:
        process.kill()
        process.wait()
        raise
