"""Message types are an open registry: a plug-in's own message, defined in its code, is traced,
read back as itself and survives a resume — no list in loom-sim is edited to add it."""

from __future__ import annotations

import json
import signal
import subprocess
import time

import msgspec
import pytest
from click.testing import CliRunner

from loom_sim.cli import cli
from loom_sim.core.messages import (
    MESSAGE_TYPES,
    Envelope,
    MessageTypeError,
    Tell,
    decode_envelope,
    forget_message,
    register_message,
)
from loom_sim.store.trace import TraceRecorder, read_trace, summarize
from tests.harness_support import command, lines, toy_pack
from tests.test_harness_cli import MODELS, _bin


class Nudge(Tell, frozen=True):
    """A plug-in's message: defined here, in test code, and nowhere in loom-sim."""

    text: str
    strength: int = 1

    def summary(self) -> str:
        return f"nudge x{self.strength}: {self.text}"


@pytest.fixture
def nudge():
    register_message(Nudge)  # registered when the class was defined; again after a forget
    assert MESSAGE_TYPES["Nudge"] is Nudge
    yield Nudge
    forget_message(Nudge)


def _envelope(id_: int, body) -> Envelope:
    return Envelope(id_, 0.0, "toy-1", 0, "plugin", "simulated_user", body)


def test_a_plugin_message_is_traced_and_read_back_as_itself(tmp_path, nudge):
    trace = tmp_path / "trace.jsonl"
    recorder = TraceRecorder(trace)
    recorder.record(_envelope(1, nudge(text="try the other tool", strength=2)))
    recorder.close()
    (read,) = read_trace(trace)
    assert type(read.body) is nudge and read.body.strength == 2
    assert summarize(read) == "nudge x2: try the other tool"


def test_an_unregistered_message_type_is_refused_by_name(tmp_path, nudge):
    line = msgspec.json.encode(_envelope(1, nudge(text="x")))
    forget_message(nudge)
    with pytest.raises(msgspec.ValidationError, match="Nudge"):
        decode_envelope(line)


def test_two_types_with_one_tag_are_refused():
    with pytest.raises(MessageTypeError, match="two message types are tagged 'Failure'"):

        class Failure(Tell, frozen=True):  # the core's Failure already has this tag
            what: str


def test_a_plugin_message_in_the_trace_survives_a_resume(tmp_path, nudge):
    """A harness session killed mid-run, whose trace holds a plug-in's message, resumes: the
    resumed session reads the whole trace back (its envelope ids continue after the last)."""
    pack = toy_pack(tmp_path, budget={"max_turns": 5})
    answers = tmp_path / "user.json"
    answers.write_text(json.dumps([command("ok")] + [json.loads(command("wait"))] * 5))
    out = tmp_path / "run"
    args = ["harness", "run", str(pack), "--seed", "4", "-o", str(out), *MODELS]
    args += ["--model", f"user=scripted/{answers}"]
    proc = subprocess.Popen([_bin(), *args], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    turns = out / "toy-1" / "turns.jsonl"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None:
        if turns.exists() and len(turns.read_bytes().splitlines()) >= 2:
            break
        time.sleep(0.05)  # polls the file the run writes; the outcome does not depend on it
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    done = len(turns.read_bytes().splitlines())
    assert done >= 2
    trace = out / "toy-1" / "trace.jsonl"
    last = max(e.id for e in read_trace(trace))
    with trace.open("ab") as file:  # the plug-in's message, as its actor would have traced it
        file.write(msgspec.json.encode(_envelope(last + 1, nudge(text="look again"))) + b"\n")

    resumed = CliRunner().invoke(cli, ["harness", "run", "--resume", str(out)])
    assert resumed.exit_code == 0, resumed.output
    assert [r["turn"] for r in lines(turns)] == list(range(5))
    envelopes = read_trace(trace)
    assert [type(e.body) for e in envelopes].count(nudge) == 1
    ids = [e.id for e in envelopes]
    assert ids == sorted(set(ids)) and ids[-1] > last + 1  # numbering went on after it
