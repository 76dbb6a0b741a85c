"""Driving the real ``loom-sim`` for the hostile workbench cases: a bounded command (a hang is
a failure, not a stuck CI job), a refusal checked to be one plain line, and ``loom-sim serve``
on a free loopback port with a client that sets its own ``Host`` header."""

from __future__ import annotations

import contextlib
import http.client
import os
import re
import resource
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from servers import free_port

LOOM_SIM = Path(sys.executable).parent / "loom-sim"
HANG_S = 30.0
CPU_LIMIT_S = 5.0


@dataclass(frozen=True)
class Outcome:
    code: int
    stdout: str
    stderr: str
    cpu_s: float

    @property
    def text(self) -> str:
        return self.stdout + self.stderr


def loom(*args: str, cwd: Path | None = None) -> Outcome:
    """The real ``loom-sim``, bounded: a hang is a failure, not a stuck CI job."""
    env = {k: v for k, v in os.environ.items() if k != "LOOM_SIM_DEBUG"}
    env["COLUMNS"] = "200"
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    try:
        proc = subprocess.run(
            [str(LOOM_SIM), *args],
            capture_output=True,
            text=True,
            timeout=HANG_S,
            env=env,
            cwd=cwd,
            check=False,
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"loom-sim {' '.join(args)} hung (no answer in {HANG_S:g} s)")
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return Outcome(proc.returncode, proc.stdout, proc.stderr, cpu)


def refused(outcome: Outcome, *expected: str) -> str:
    """Non-zero, one line on stderr, no traceback, little work; returns the line."""
    assert outcome.code != 0, outcome.text
    assert "Traceback" not in outcome.text and "internal error" not in outcome.text, outcome.text
    assert outcome.cpu_s < CPU_LIMIT_S, f"took {outcome.cpu_s:.1f} s of CPU"
    lines = outcome.stderr.strip().splitlines()
    assert len(lines) == 1, f"expected one line, got:\n{outcome.text}"
    for fragment in expected:
        assert re.search(fragment, lines[0]), f"{fragment!r} not in {lines[0]!r}"
    return lines[0]


@contextlib.contextmanager
def serving(
    root: Path, *args: str, address: str = "127.0.0.1"
) -> Iterator[tuple[int, subprocess.Popen]]:
    """``loom-sim serve ROOT`` on a free loopback port, answering before it is yielded;
    stopped (and waited for) when the block ends."""
    port = free_port()
    proc = subprocess.Popen(
        [str(LOOM_SIM), "serve", str(root), "--port", str(port), *args],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + HANG_S
        while True:  # until it answers (or has died, or the deadline passes)
            assert proc.poll() is None, proc.stderr.read().decode() if proc.stderr else ""
            try:
                get(port, "/static/viewer.css", address=address)
                break
            except OSError:
                assert time.monotonic() < deadline, "serve never answered"
                time.sleep(0.05)
        yield port, proc
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
            try:
                proc.wait(timeout=HANG_S)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


@dataclass(frozen=True)
class Reply:
    status: int
    headers: dict[str, str]
    body: str


def get(
    port: int,
    path: str,
    host: str | None = None,
    timeout: float = HANG_S,
    address: str = "127.0.0.1",
) -> Reply:
    conn = http.client.HTTPConnection(address, port, timeout=timeout)
    try:
        conn.putrequest("GET", path, skip_host=True)
        conn.putheader("Host", f"{address}:{port}" if host is None else host)
        conn.endheaders()
        reply = conn.getresponse()
        body = reply.read().decode("utf-8", "replace")
        return Reply(reply.status, {k.lower(): v for k, v in reply.getheaders()}, body)
    finally:
        conn.close()


def assert_plain_page(reply: Reply, status: int) -> None:
    assert reply.status == status, (reply.status, reply.body[:500])
    assert "content-security-policy" in reply.headers and "x-content-type-options" in reply.headers
    assert "Traceback" not in reply.body and "Internal Server Error" not in reply.body


def cpu_s(pid: int) -> float:
    """CPU time a process has used so far (user + system), from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
