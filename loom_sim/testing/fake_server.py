"""The fake OpenAI / Anthropic server, run from Python: ``with FakeOpenAIServer() as server:``.

It starts ``python -m loom_sim.testing.fake_openai`` in a subprocess (its own process, so it
never competes with the client under test for the GIL), reads the port it listens on, and
stops it by closing its stdin, which the server takes as the signal to exit.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import subprocess
import sys
import time
import urllib.request
from typing import Any

from loom_sim.testing.fake_openai import build_parser

__all__ = ["FakeOpenAIServer"]


class FakeOpenAIServer:
    """Starts the fake server in a subprocess; ``with FakeOpenAIServer(latency=0.1) as s:``.

    Options mirror the command line: ``latency``, ``fault_rate``, ``faults`` (iterable or
    comma string), ``fault_sequence``, ``seed``, ``retry_after``, ``reject_json_schema``,
    ``require_key``, ``context_tokens``, ``keepalive_timeout``, ``seeded_replies``,
    ``max_lifetime``.
    """

    def __init__(self, **options: Any) -> None:
        known = {a.dest for a in build_parser()._actions} - {"help", "port", "ignore_stdin"}
        unknown = set(options) - known
        if unknown:
            raise TypeError(f"unknown FakeOpenAIServer options: {', '.join(sorted(unknown))}")
        self.options = options
        self.port: int | None = None
        self._proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        if self.port is None:
            raise RuntimeError("the fake server is not running")
        return f"http://127.0.0.1:{self.port}"

    @property
    def base_url(self) -> str:
        """The OpenAI-style base URL (with ``/v1``)."""
        return self.url + "/v1"

    @property
    def anthropic_base_url(self) -> str:
        """The Anthropic-style base URL (without ``/v1``, like ``ANTHROPIC_BASE_URL``)."""
        return self.url

    def _argv(self) -> list[str]:
        argv = [sys.executable, "-m", "loom_sim.testing.fake_openai", "--port", "0"]
        for name, value in self.options.items():
            if value is None or value is False:
                continue
            flag = "--" + name.replace("_", "-")
            if value is True:
                argv.append(flag)
            elif isinstance(value, list | tuple | set | frozenset):
                argv += [flag, ",".join(str(v) for v in value)]
            else:
                argv += [flag, str(value)]
        return argv

    def start(self, timeout: float = 15.0) -> FakeOpenAIServer:
        env = dict(os.environ)
        root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        env["PYTHONPATH"] = root + os.pathsep + env.get("PYTHONPATH", "")
        self._proc = subprocess.Popen(
            self._argv(), stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env
        )
        assert self._proc.stdout is not None
        deadline = time.monotonic() + timeout
        line = b""
        while time.monotonic() < deadline:
            ready, _, _ = select.select([self._proc.stdout], [], [], 0.1)
            if ready:
                line = self._proc.stdout.readline()
                break
            if self._proc.poll() is not None:
                break
        if not line.startswith(b"LISTENING "):
            self.stop()
            raise RuntimeError(f"the fake server did not start (said {line!r})")
        self.port = int(line.split()[1])
        return self

    def stats(self) -> dict[str, Any]:
        with urllib.request.urlopen(self.url + "/stats", timeout=5) as reply:
            return json.loads(reply.read())

    def stop(self) -> None:
        proc, self._proc = self._proc, None
        if proc is None:
            return
        with contextlib.suppress(Exception):
            assert proc.stdin is not None
            proc.stdin.close()  # EOF: the server exits on its own
        try:
            proc.wait(timeout=2)
        except subprocess.TimeoutExpired:
            proc.terminate()
            try:
                proc.wait(timeout=2)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()

    def __enter__(self) -> FakeOpenAIServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
