"""What every target adapter is: start, send a line and get the reply, close.

An adapter turns "the simulated user typed this" into whatever reaches the program — keys in a
pseudo-terminal, an HTTP request, a model call — and the program's answer into an
:class:`Exchange`. It reports a program that cannot go on (it exited, the server refused) as
:class:`TargetFatal`, which ends the session in ``error`` with that one line; a reply that is
merely bad (an error message, a garbled body, no reply within the window) is an ordinary
exchange the session counts as a failed action.
"""

from __future__ import annotations

import os
import shlex
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import msgspec
import trio

from loom_sim.errors import LoomError
from loom_sim.models.base import ModelClient, Usage
from loom_sim.plugins.adapters import ADAPTERS, TargetSettings


class TargetFatal(LoomError):
    """The target cannot go on: the program exited, the server refused or keeps failing."""


class Exchange(msgspec.Struct, frozen=True):
    """One reply of the target, as the transcript keeps it."""

    text: str  # what a reader sees: escape sequences and the echo of the input removed
    ended_by: str  # prompt | idle | timeout | continuation | complete (a whole HTTP/model reply)
    duration_s: float = 0.0
    truncated: bool = False  # the reply was longer than the adapter keeps
    received_bytes: int = 0
    screen: list[str] = msgspec.field(default_factory=list)  # the rendered terminal, if any
    usage: Usage = msgspec.field(default_factory=Usage)  # what answering cost (model targets)
    error: str | None = None  # why the reply is unusable (a bad HTTP body), if it is
    notes: list[dict[str, Any]] = msgspec.field(default_factory=list)  # adapter events
    continuation: str | None = None  # the continuation prompt the program was left at, if any


@dataclass
class AdapterContext:
    """What an adapter is opened with, beyond its settings."""

    workdir: Path  # the target's own folder in the session's bundle
    bundle: Path
    inputs: list[Path]
    seed: int
    model: Callable[[str], ModelClient]  # a model spec -> its client (model: targets)
    history: list[tuple[str, str]] = field(default_factory=list)  # (sent, replied), on resume
    cast: Path | None = None  # where a terminal adapter records the session
    env: dict[str, str] = field(default_factory=dict)

    def placeholders(self) -> dict[str, str]:
        return {
            "python": sys.executable,
            "workdir": str(self.workdir),
            "bundle": str(self.bundle),
            "inputs": " ".join(shlex.quote(str(p)) for p in self.inputs),
            "seed": str(self.seed),
        }

    def fill(self, text: str) -> str:
        return text.format(**self.placeholders())

    def file(self, template: str) -> str:
        """A file setting (``events``, ``artifacts``) filled in; a relative one is the
        target's folder's, never the folder loom-sim happens to run in."""
        return os.path.join(self.workdir, self.fill(template))


class TargetAdapter(Protocol):
    async def start(self, nursery: trio.Nursery) -> Exchange:
        """Bring the target up; its greeting (a banner, or nothing)."""
        ...

    async def send(self, text: str) -> None:
        """Send one line (an utterance or a command), as typed."""
        ...

    async def receive(self) -> Exchange:
        """The whole reply to the line sent."""
        ...

    async def close(self) -> None:
        """Stop the target and release everything; safe to call twice, and when cancelled."""
        ...

    def describe(self) -> dict[str, Any]:
        """What was reached, resolved (the command, the URL), for session.json — no secrets."""
        ...


def open_target(settings: TargetSettings, context: AdapterContext) -> TargetAdapter:
    return ADAPTERS.get(settings.adapter).open(settings, context)


def target_from_option(text: str, named: dict[str, TargetSettings]) -> tuple[str, TargetSettings]:
    """``--target``: a target of the pack by name, or ``KIND:ADDRESS`` (``pty:llm chat``,
    ``http:http://127.0.0.1:8080/v1``, ``model:openai/gpt-4.1``). A program named only by its
    address offers none of the pack's abilities: they were written for another program, and
    nothing says this one understands them."""
    if text in named:
        return text, named[text]
    kind, sep, address = text.partition(":")
    if not sep or kind not in ADAPTERS:
        known = ", ".join(named) or "none"
        raise LoomError(
            f"--target {text!r}: not a target of this pack ({known}) nor KIND:ADDRESS with a "
            f"kind of {', '.join(ADAPTERS.names())} (e.g. pty:'llm chat', http:URL, model:SPEC)"
        )
    if not address.strip():
        raise LoomError(f"--target {text!r}: nothing after {kind}:")
    entry = ADAPTERS.get(kind)
    try:
        settings = {"adapter": kind, "offers_abilities": False, **entry.shorthand(address)}
        return text, entry.settings.model_validate(settings)
    except (ValueError, msgspec.ValidationError) as exc:
        raise LoomError(f"--target {text!r}: {exc}") from None
