"""The real ``loom-sim`` in a pseudo-terminal, read through a terminal emulator (pyte).

What a person sees at a terminal is not what a pipe gets: rich draws a live table only on a
TTY, Ctrl-C arrives as SIGINT to the foreground process group. These tests need both, so they
start the command on a PTY in its own session, send signals to its process group as the
terminal would, and read the screen as pyte renders it.
"""

from __future__ import annotations

import fcntl
import os
import pty
import select
import signal
import struct
import subprocess
import sys
import termios
import time
from collections.abc import Callable
from pathlib import Path

import pyte

LOOM_SIM = Path(sys.executable).parent / "loom-sim"


class Terminal:
    """``loom-sim ARGS`` on a ``columns`` x ``lines`` pseudo-terminal."""

    def __init__(self, *args: str, columns: int = 100, lines: int = 40, env: dict | None = None):
        self.screen = pyte.Screen(columns, lines)
        self._stream = pyte.ByteStream(self.screen)
        self.raw = b""
        master, slave = pty.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", lines, columns, 0, 0))
        environ = {k: v for k, v in os.environ.items() if k not in ("LOOM_SIM_DEBUG", "COLUMNS")}
        environ.update(TERM="xterm-256color", LINES=str(lines), COLUMNS=str(columns))
        environ.update(env or {})
        self.proc = subprocess.Popen(
            [str(LOOM_SIM), *args],
            stdin=slave,
            stdout=slave,
            stderr=slave,
            env=environ,
            start_new_session=True,  # its own process group, which Ctrl-C is sent to
            close_fds=True,
        )
        os.close(slave)
        self._master = master

    def pump(self, seconds: float = 0.05) -> None:
        """Read what the program writes in the next ``seconds`` (less if it closes the PTY)."""
        deadline = time.monotonic() + seconds
        while (left := deadline - time.monotonic()) > 0:
            ready, _, _ = select.select([self._master], [], [], left)
            if not ready:
                return
            try:
                data = os.read(self._master, 65536)
            except OSError:  # the program exited and closed the PTY
                return
            if not data:
                return
            self.raw += data
            self._stream.feed(data)

    def wait_for(self, test: Callable[[], bool], timeout: float, what: str) -> None:
        deadline = time.monotonic() + timeout
        while not test():
            if time.monotonic() > deadline:
                raise AssertionError(f"waited {timeout:g} s for {what}; screen:\n{self.text}")
            if self.proc.poll() is not None:
                self.pump(0.2)
                if test():
                    return
                raise AssertionError(f"exited ({self.proc.returncode}) before {what}:\n{self.text}")
            self.pump(0.1)

    def ctrl_c(self) -> None:
        """What pressing Ctrl-C does: SIGINT to the foreground process group."""
        os.killpg(self.proc.pid, signal.SIGINT)

    def finish(self, timeout: float) -> int:
        """Wait for the program to exit; its status."""
        deadline = time.monotonic() + timeout
        while self.proc.poll() is None:
            if time.monotonic() > deadline:
                self.kill()
                raise AssertionError(f"still running after {timeout:g} s:\n{self.text}")
            self.pump(0.1)
        self.pump(0.2)
        return self.proc.returncode

    def kill(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()

    def close(self) -> None:
        self.kill()
        os.close(self._master)

    @property
    def text(self) -> str:
        """The screen, as a person would see it now."""
        return "\n".join(line.rstrip() for line in self.screen.display).strip("\n")

    @property
    def output(self) -> str:
        """Everything written, escape sequences included, decoded."""
        return self.raw.decode("utf-8", "replace")

    def __enter__(self) -> Terminal:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
