"""``pty:``: a program driven through a real pseudo-terminal, as a person at a keyboard would.

The program is started on the slave side of a fresh pty (so it sees a terminal: prompts,
colours and line editing behave as they do for a person); one reader task owned by the adapter
drains the master side the whole time — between turns too, so a chatty program never blocks
on a full terminal buffer — and feeds three consumers: the reply in progress (decoded, kept up
to ``max_reply_chars``), a ``pyte`` screen (what the terminal shows), and the asciicast
recording.

The program is stopped as a whole: its process group gets SIGTERM, then SIGKILL after a
grace period, whether or not the program itself is still alive (a child that ignores SIGTERM
is not left behind), and the program's own exit is watched directly, so a program that exits
while a child of it still holds the terminal is seen to exit at once. What it writes is made
printable (:func:`loom_sim.core.text.printable`): no C1 controls or bidi overrides reach a
transcript.

A reply has ended when the line the program is waiting on matches ``prompt`` and nothing more
arrives for ``settle_s``, or — with no prompt configured, or ``idle_s`` given — when nothing
arrives for ``idle_s``; ``reply_timeout_s`` bounds it either way. A program that exits is a
:class:`~loom_sim.harness.targets.base.TargetFatal` naming its exit status and its last words.

A program can also stop at its *continuation* prompt (sqlite3's ``   ...> ``, Python's
``... ``, psql's ``db-> ``): the line typed was not a whole statement, and every later line
would be appended to it. That is noticed (``continuation_prompt``, a default covering the
common ones), the reply ends there and says so, and where the pack declares how to get out
(``continuation_reset``, e.g. ``;`` for sqlite3) that line is sent and its answer joins the
reply.
"""

from __future__ import annotations

import errno
import fcntl
import os
import re
import shlex
import shutil
import struct
import sys
import termios
from pathlib import Path
from typing import Any, ClassVar, Literal

import pyte
import trio
from pydantic import Field, field_validator

from loom_sim.core.text import printable
from loom_sim.harness.targets.base import AdapterContext, Exchange, TargetFatal
from loom_sim.harness.targets.continuation import (
    DEFAULT_CONTINUATION,
    after_reset,
    continuation_for,
)
from loom_sim.harness.targets.group import stop_group
from loom_sim.harness.targets.terminal import CastRecorder, Decoder, clean
from loom_sim.plugins.adapters import TargetSettings, adapter, check_regex

_TAIL = 4096  # characters kept past the reply's limit, for the prompt and the last words


class PtySettings(TargetSettings):
    """A program in a pseudo-terminal."""

    templated: ClassVar[tuple[str, ...]] = ("setup", "events", "artifacts", "command", "cwd", "env")

    adapter: Literal["pty"] = "pty"
    command: list[str] = Field(min_length=1, description="The program and its arguments.")
    prompt: str | None = Field(
        None,
        description="A regular expression the line the program waits on matches when it is "
        "ready for input, e.g. `^> $`.",
    )
    idle_s: float | None = Field(
        None,
        gt=0,
        description="A reply ends after this long without output (default 2 s when there is "
        "no prompt; with a prompt, only if given).",
    )
    settle_s: float = Field(0.15, ge=0, description="Quiet needed after the prompt appears.")
    continuation_prompt: str | None = Field(
        DEFAULT_CONTINUATION,
        description="A regular expression the line the program waits on matches when it is "
        "waiting for the rest of a statement (sqlite3's `   ...> `); the reply ends there and "
        "says so. The default covers sqlite3, Python, IPython, node, psql, mysql, R, ghci, irb "
        "and duckdb, and a shell's, the perl debugger's and gdb's when the command is one of "
        "them; null: none.",
    )
    continuation_reset: str | None = Field(
        None,
        description="A line that gets the program out of its continuation prompt (`;` for "
        "sqlite3), sent when it is left there; its answer joins the reply. Without it the "
        "action failed and the program is still mid-statement.",
    )
    start_timeout_s: float = Field(60.0, gt=0, description="Longest wait for the first prompt.")
    max_reply_chars: int = Field(65_536, ge=256, description="Reply text kept per turn.")
    read: Literal["stream", "screen"] = Field(
        "stream",
        description="stream: the reply is the program's output since the input; screen: the "
        "rendered screen (for full-screen programs).",
    )
    newline: str = Field("\r", description="What Enter sends.")
    exit: str | None = Field(None, description="A line that makes the program quit, sent first.")
    cols: int = Field(120, ge=20, le=1000)
    rows: int = Field(40, ge=5, le=1000)
    cwd: str | None = Field(None, description="Where the program runs (default: {workdir}).")
    env: dict[str, str] = Field(default_factory=dict, description="Extra environment variables.")

    _regex = field_validator("prompt", "continuation_prompt")(
        classmethod(lambda cls, v: check_regex(v))
    )

    @property
    def idle_window(self) -> float | None:
        if self.idle_s is not None:
            return self.idle_s
        return None if self.prompt else 2.0


def shorthand(address: str) -> dict[str, Any]:
    """``pty:llm chat -m SmolLM2`` (split like a shell would)."""
    return {"command": shlex.split(address)}


class _Reply:
    """The output since the last input: kept up to a limit, its tail always."""

    def __init__(self, limit: int):
        self.limit = limit
        self.head: list[str] = []
        self.kept = 0
        self.tail = ""
        self.dropped = 0
        self.received = 0  # bytes

    def add(self, text: str, size: int) -> None:
        self.received += size
        room = self.limit - self.kept
        if room > 0:
            self.head.append(text[:room])
            self.kept += min(len(text), room)
        self.dropped += max(0, len(text) - max(room, 0))
        self.tail = (self.tail + text)[-_TAIL:]

    def last_line(self) -> str:
        return clean(self.tail).rsplit("\n", 1)[-1]

    def text(self) -> str:
        text = "".join(self.head)
        if self.dropped:
            text += f"\n[… {self.dropped} more characters not kept …]\n" + self.tail[-400:]
        return text


class PtyAdapter:
    def __init__(self, settings: PtySettings, context: AdapterContext):
        self.settings = settings
        self.context = context
        self.argv = [context.fill(part) for part in settings.command]
        self.argv[0] = _program(self.argv[0])
        self.cwd = context.fill(settings.cwd) if settings.cwd else str(context.workdir)
        self._prompt = re.compile(settings.prompt) if settings.prompt else None
        more = settings.continuation_prompt
        if more == DEFAULT_CONTINUATION:  # the default, with the program's own prompt
            more = continuation_for(self.argv[0])
        self._continuation = re.compile(more) if more else None
        self._screen = pyte.Screen(settings.cols, settings.rows)
        self._stream = pyte.Stream(self._screen)
        self._decoder = Decoder()
        self._reply = _Reply(settings.max_reply_chars)
        self._changed = trio.Event()
        self._last_data = 0.0
        self._eof = False
        self._leader_exited = False  # the program itself ended (children may hold the pty)
        self._master: int | None = None
        self._process: trio.Process | None = None
        self._cast: CastRecorder | None = None
        self._sent = ""

    def describe(self) -> dict[str, Any]:
        return {"adapter": "pty", "command": self.argv, "cwd": self.cwd}

    # ── starting and reading ──

    async def start(self, nursery: trio.Nursery) -> Exchange:
        settings = self.settings
        master, slave = os.openpty()
        winsize = struct.pack("HHHH", settings.rows, settings.cols, 0, 0)
        fcntl.ioctl(slave, termios.TIOCSWINSZ, winsize)
        os.set_blocking(master, False)
        env = {**os.environ, **self.context.env, "TERM": "xterm-256color"}
        env.update({"COLUMNS": str(settings.cols), "LINES": str(settings.rows)})
        env.update({k: self.context.fill(v) for k, v in settings.env.items()})
        self.context.workdir.mkdir(parents=True, exist_ok=True)
        try:
            self._process = await trio.lowlevel.open_process(
                self.argv,
                stdin=slave,
                stdout=slave,
                stderr=slave,
                cwd=self.cwd,
                env=env,
                start_new_session=True,  # its own process group: it can be stopped as a whole
            )
        except OSError as exc:
            os.close(master)
            raise TargetFatal(
                f"cannot start the target {shlex.join(self.argv)}: {exc.strerror or exc}"
            ) from None
        finally:
            os.close(slave)
        self._master = master
        if self.context.cast is not None:
            self._cast = CastRecorder(
                self.context.cast, settings.cols, settings.rows, shlex.join(self.argv)
            )
        self._last_data = trio.current_time()
        nursery.start_soon(self._read, name=f"pty reader {self.argv[0]}")
        nursery.start_soon(self._watch, self._process, name=f"pty exit {self.argv[0]}")
        return await self._await_reply(settings.start_timeout_s, "starting")

    async def _watch(self, process: trio.Process) -> None:
        """Notice the program's own exit: a child it left holding the terminal keeps the
        terminal open, so the reader alone would never see the end."""
        await process.wait()
        self._leader_exited = True
        self._changed.set()

    async def _read(self) -> None:
        """Drain the terminal until the program closes it (the adapter's own task)."""
        assert self._master is not None
        master = self._master
        while True:
            try:
                await trio.lowlevel.wait_readable(master)
                data = os.read(master, 65536)
            except BlockingIOError:
                continue
            except trio.ClosedResourceError:  # close() took the terminal away
                return
            except OSError as exc:  # EIO: every process holding the slave side is gone
                if exc.errno not in (errno.EIO, errno.EBADF):
                    raise
                data = b""
            if not data:
                tail = self._decoder.flush()
                if tail:
                    self._take(tail, 0)
                self._eof = True
                self._changed.set()
                return
            self._take(self._decoder.feed(data), len(data))

    def _take(self, text: str, size: int) -> None:
        within = self._reply.kept < self._reply.limit
        self._reply.add(text, size)
        if within:  # a flood past the limit is not rendered: pyte would spend seconds on it
            self._stream.feed(text)
        if self._cast is not None:
            self._cast.output(text)
        self._last_data = trio.current_time()
        self._changed.set()

    # ── a reply ──

    def _waiting_line(self) -> str:
        if self.settings.read == "screen":
            row = self._screen.display[self._screen.cursor.y]
            return row[: self._screen.cursor.x]
        return self._reply.last_line()

    def _prompted(self) -> bool:
        return self._prompt is not None and bool(self._prompt.search(self._waiting_line()))

    def _continued(self) -> bool:
        """Whether the program waits at its continuation prompt (and not at its main one)."""
        return self._continuation is not None and bool(
            self._continuation.search(self._waiting_line())
        )

    async def _await_reply(self, timeout_s: float, doing: str, sent: str = "") -> Exchange:
        settings = self.settings
        started = trio.current_time()
        deadline = started + timeout_s
        idle = settings.idle_window
        while True:
            if self._eof or self._leader_exited:
                await self._exited(doing)
            now = trio.current_time()
            quiet = now - self._last_data
            prompted = self._prompted()
            if prompted and quiet >= settings.settle_s:
                return self._exchange("prompt", started, sent)
            if not prompted and self._continued():
                prompted = True  # settles like a prompt
                if quiet >= settings.settle_s:
                    return self._exchange("continuation", started, sent)
            if idle is not None and not prompted and quiet >= idle:
                return self._exchange("idle", started, sent)
            if now >= deadline:
                return self._exchange("timeout", started, sent)
            wake = deadline
            if prompted:
                wake = min(wake, self._last_data + settings.settle_s)
            elif idle is not None:
                wake = min(wake, self._last_data + idle)
            self._changed = trio.Event()
            with trio.move_on_at(wake):
                await self._changed.wait()

    def _exchange(self, ended_by: str, started: float, sent: str) -> Exchange:
        waiting = self._waiting_line() if ended_by == "continuation" else None
        reply, self._reply = self._reply, _Reply(self.settings.max_reply_chars)
        if self.settings.read == "screen":
            text = "\n".join(line.rstrip() for line in self._screen.display).strip("\n")
        else:
            last = self._continuation if waiting is not None else self._prompt
            text = _without_echo_and_prompt(clean(reply.text()), sent, last)
        return Exchange(
            text=printable(text),
            ended_by=ended_by,
            duration_s=round(trio.current_time() - started, 3),
            truncated=reply.dropped > 0,
            received_bytes=reply.received,
            screen=[printable(line.rstrip()) for line in self._screen.display if line.strip()],
            continuation=waiting,
        )

    async def _exited(self, doing: str) -> None:
        assert self._process is not None
        with trio.move_on_after(5):
            await self._process.wait()
        await self._last_output()
        code = self._process.returncode
        status = (
            "was still running"
            if code is None
            else f"was killed by signal {-code}"
            if code < 0
            else f"exited with status {code}"
        )
        last = [line for line in clean(self._reply.tail).splitlines() if line.strip()][-2:]
        said = f"; its last output: {' / '.join(last)[-200:]}" if last else ""
        raise TargetFatal(f"the target program {self.argv[0]} {status} while {doing}{said}")

    async def _last_output(self) -> None:
        """Let the reader take what the program wrote before it exited: until the terminal
        closes, or — when a child still holds it — until it has been quiet a moment."""
        with trio.move_on_after(1.0):
            while not self._eof:
                self._changed = trio.Event()
                with trio.move_on_after(0.2) as quiet:
                    await self._changed.wait()
                if quiet.cancelled_caught:
                    return

    async def send(self, text: str) -> None:
        """Type ``text`` and Enter (the reply is awaited by :meth:`receive`)."""
        if self._master is None:
            raise TargetFatal("the target program was never started")
        if self._eof or self._leader_exited:
            await self._exited("waiting for input")
        line = text.replace("\r", " ").replace("\n", " ") + self.settings.newline
        if self._cast is not None:
            self._cast.input(line)
        self._last_data = trio.current_time()
        data = line.encode()
        try:
            while data:
                await trio.lowlevel.wait_writable(self._master)
                try:
                    data = data[os.write(self._master, data) :]
                except BlockingIOError:
                    continue
        except OSError:
            await self._exited("reading its input")
        self._sent = text

    async def receive(self) -> Exchange:
        """The reply to the line sent: until the prompt, an idle window or the timeout."""
        sent, self._sent = self._sent, ""
        reply = await self._await_reply(self.settings.reply_timeout_s, "answering", sent)
        reset = self.settings.continuation_reset
        if reply.ended_by != "continuation" or reset is None:
            return reply
        await self.send(reset)
        self._sent = ""
        after = await self._await_reply(self.settings.reply_timeout_s, "answering", reset)
        return after_reset(reply, after, reset)

    # ── stopping ──

    async def close(self) -> None:
        """Ask the program to quit (``exit``), then stop its whole process group; shielded,
        so a cancelled session still leaves no process behind."""
        with trio.CancelScope(shield=True):
            process, master = self._process, self._master
            self._process = self._master = None
            if process is not None:
                if self.settings.exit and not self._eof and master is not None:
                    try:
                        os.write(master, (self.settings.exit + self.settings.newline).encode())
                    except OSError:
                        pass
                    with trio.move_on_after(2):
                        await process.wait()
                await stop_group(process)
            if master is not None:
                trio.lowlevel.notify_closing(master)
                os.close(master)
            if self._cast is not None:
                self._cast.close()


def _program(name: str) -> str:
    """``name`` as found on PATH, else beside the Python running loom-sim (a tool installed in
    the same virtualenv, e.g. ``llm``, whose ``bin`` is not on PATH), else as given."""
    if os.sep in name or shutil.which(name):
        return name
    beside = Path(sys.executable).parent / name
    return str(beside) if beside.is_file() and os.access(beside, os.X_OK) else name


def _without_echo_and_prompt(text: str, sent: str, prompt: re.Pattern[str] | None) -> str:
    """The reply without the terminal's echo of the input and without the closing prompt."""
    if sent:
        stripped = text.lstrip("\n")
        if stripped.startswith(sent):
            text = stripped[len(sent) :]
    lines = text.split("\n")
    if prompt is not None and lines and prompt.search(lines[-1]):
        lines.pop()
    return "\n".join(lines).strip("\n")


@adapter(
    "pty",
    settings=PtySettings,
    shorthand=shorthand,
    summary="a program in a pseudo-terminal: replies end at its prompt or an idle window; "
    "recorded as asciicast v2",
    order=10,
)
def open_pty(settings: PtySettings, context: AdapterContext) -> PtyAdapter:
    return PtyAdapter(settings, context)
