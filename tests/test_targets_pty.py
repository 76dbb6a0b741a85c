"""The PTY adapter against real programs in real pseudo-terminals: prompts, idle windows,
floods, bytes that are not UTF-8, escape sequences, crashes; the asciicast it records."""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path

import pytest
import trio

from loom_sim.harness.targets import AdapterContext, TargetFatal, open_target
from loom_sim.harness.targets.pty import PtySettings

REPL = """
import sys
out = sys.stdout
out.write("\\x1b[1mdemo\\x1b[0m ready\\n> "); out.flush()
for n, line in enumerate(sys.stdin, 1):
    line = line.strip()
    if line == "bye":
        break
    if line == "flood":
        out.write(("x" * 99 + "\\n") * 30000)
    elif line == "bytes":
        out.buffer.write(b"bad \\xff\\xfe bytes \\x1b[31mred\\x1b[0m ")
        out.buffer.write(b"\\x1b]0;title\\x07ok\\r\\n"); out.flush()
    elif line == "crash":
        out.write("fatal: boom\\n"); out.flush()
        sys.exit(3)
    elif line == "slow":
        import time
        out.write("thinking"); out.flush(); time.sleep(0.6); out.write("... done\\n")
    else:
        out.write(f"reply {n}: {line.upper()}\\n")
    out.write("> "); out.flush()
"""

SILENT = """
import sys
for line in sys.stdin:
    print("heard " + line.strip(), flush=True)
"""


@pytest.fixture
def program(tmp_path):
    def write(source: str) -> str:
        path = tmp_path / f"prog{len(list(tmp_path.glob('prog*')))}.py"
        path.write_text(textwrap.dedent(source))
        return str(path)

    return write


async def drive(settings: PtySettings, tmp_path: Path, lines: list[str]):
    context = AdapterContext(
        workdir=tmp_path / "work",
        bundle=tmp_path,
        inputs=[],
        seed=1,
        model=lambda spec: None,  # type: ignore[arg-type,return-value]
        cast=tmp_path / "session.cast",
    )
    adapter = open_target(settings, context)
    replies = []
    try:
        async with trio.open_nursery() as nursery:
            try:
                replies.append(await adapter.start(nursery))
                for line in lines:
                    await adapter.send(line)
                    replies.append(await adapter.receive())
            finally:
                await adapter.close()
    except ExceptionGroup as group:  # the nursery wraps what the adapter raised
        if len(group.exceptions) == 1:
            raise group.exceptions[0] from None
        raise
    return replies


def pty(command: list[str], **settings) -> PtySettings:
    return PtySettings(adapter="pty", command=command, **settings)


async def test_replies_end_at_the_prompt_without_echo_or_escapes(program, tmp_path):
    banner, first, second, slow = await drive(
        pty([sys.executable, program(REPL)], prompt="^> $"), tmp_path, ["hello", "again", "slow"]
    )
    assert banner.text == "demo ready" and banner.ended_by == "prompt"
    assert (first.text, first.ended_by) == ("reply 1: HELLO", "prompt")
    assert second.text == "reply 2: AGAIN"
    assert slow.text == "thinking... done"  # a pause mid-reply is not the end of it
    assert any("> " in line for line in first.screen)  # the rendered screen (pyte)


async def test_the_session_is_recorded_as_asciicast_v2(program, tmp_path):
    await drive(pty([sys.executable, program(REPL)], prompt="^> $"), tmp_path, ["hello"])
    lines = (tmp_path / "session.cast").read_text().splitlines()
    header = json.loads(lines[0])
    assert header["version"] == 2 and (header["width"], header["height"]) == (120, 40)
    events = [json.loads(line) for line in lines[1:]]
    assert ["i", "hello\r"] in [e[1:] for e in events]
    output = "".join(e[2] for e in events if e[1] == "o")
    assert "\x1b[1mdemo" in output and "REPLY 1" not in output and "reply 1: HELLO" in output
    times = [e[0] for e in events]
    assert times == sorted(times)


async def test_a_program_that_never_prompts_ends_each_reply_by_idle_window(program, tmp_path):
    started = trio.current_time()
    banner, first, second = await drive(
        pty([sys.executable, program(SILENT)], idle_s=0.5), tmp_path, ["one", "two"]
    )
    assert (banner.text, banner.ended_by) == ("", "idle")
    assert (first.text, first.ended_by) == ("heard one", "idle")
    assert second.text == "heard two"
    assert trio.current_time() - started < 10


async def test_a_flood_is_kept_up_to_the_limit_and_the_session_goes_on(program, tmp_path):
    _, flood, after = await drive(
        pty([sys.executable, program(REPL)], prompt="^> $", max_reply_chars=10_000),
        tmp_path,
        ["flood", "ok"],
    )
    assert flood.ended_by == "prompt" and flood.truncated
    assert flood.received_bytes > 3_000_000 > 20_000 > len(flood.text)
    assert "more characters not kept" in flood.text
    assert after.text == "reply 2: OK"


async def test_invalid_utf8_and_escape_sequences_are_made_readable(program, tmp_path):
    settings = pty([sys.executable, program(REPL)], prompt="^> $")
    _, reply = await drive(settings, tmp_path, ["bytes"])
    assert reply.text == "bad \ufffd\ufffd bytes red ok"
    for line in (tmp_path / "session.cast").read_text().splitlines():
        json.loads(line)  # still valid JSON, line by line


async def test_a_crash_is_fatal_with_status_and_last_words(program, tmp_path):
    with pytest.raises(TargetFatal) as caught:
        await drive(pty([sys.executable, program(REPL)], prompt="^> $"), tmp_path, ["hi", "crash"])
    message = str(caught.value)
    assert "exited with status 3 while answering" in message and "fatal: boom" in message


async def test_a_reply_that_never_ends_times_out(program, tmp_path):
    hang = (
        "import sys, time\nprint('> ', end='', flush=True)\nsys.stdin.readline()\ntime.sleep(60)\n"
    )
    _, reply = await drive(
        pty([sys.executable, program(hang)], prompt="^> $", reply_timeout_s=1.0), tmp_path, ["x"]
    )
    assert reply.ended_by == "timeout"


async def test_a_missing_program_is_fatal(tmp_path):
    with pytest.raises(TargetFatal, match="cannot start the target"):
        await drive(pty(["/nonexistent/program"]), tmp_path, [])
