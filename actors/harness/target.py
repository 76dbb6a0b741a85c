"""The target: the program under test, behind its adapter, owned by one actor.

Protocol: ``StartTarget`` -> ``TargetReply`` (its greeting); ``Dispatch`` (type a line) ->
``Dispatched``; ``Collect`` -> ``TargetReply`` (the reply once it has ended and the event
delta window has closed, with the new events and the new files, measured); ``StopTarget``.

The actor owns the adapter and whatever it runs — a process in a pseudo-terminal and the task
reading it — in a nursery of its own, so the program lives exactly as long as the actor: when
the session ends, fails or is cancelled, ``serve`` closes the adapter (shielded) and nothing is
left running. A program that cannot go on raises :class:`~loom_sim.harness.targets.TargetFatal`
through the request, as itself.

Whether an action failed is decided here, from what came back: an unusable reply, no reply in
time, the program left at its continuation prompt, a reply matching the target's
``failure_pattern`` (or, where the pack gives one, not matching its ``success_pattern``), or an
event reporting an error. A reply with no output is not a failure unless the target says so.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import trio
from loom_sim.actors.base import Actor, ActorContext, Delivery, ProtocolError
from PIL import UnidentifiedImageError

from loom_sim.core.text import printable
from loom_sim.harness.messages import (
    Artifact,
    Collect,
    Dispatch,
    Dispatched,
    StartTarget,
    StopTarget,
    TargetReply,
    TargetStopped,
)
from loom_sim.harness.targets import AdapterContext, Exchange, TargetAdapter, open_target
from loom_sim.harness.targets.observe import ArtifactWatch, EventTail
from loom_sim.imagery import load_rgb, measure, quality
from loom_sim.messages import Body
from loom_sim.plugins.actors import actor
from loom_sim.plugins.adapters import TargetSettings
from loom_sim.plugins.outcomes import error_line

IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".webp", ".bmp", ".gif", ".tif", ".tiff")
EVENT_WINDOW_S = 0.1  # how long events may trail the reply that caused them


@dataclass
class TargetSetup:
    """What the target actor is built with (``ActorContext.settings``)."""

    settings: TargetSettings
    adapter: AdapterContext
    events_offset: int = 0  # a resumed session's: how far the event file was read
    seen: list[str] = field(default_factory=list)  # files that were there before


def measure_artifact(path: Path, bundle: Path) -> Artifact:
    """An output file as the scorecard sees it: images measured, other files listed."""
    try:
        where = str(path.relative_to(bundle))
    except ValueError:
        where = str(path)
    if path.suffix.lower() not in IMAGE_SUFFIXES:
        return Artifact(where)
    try:
        image = load_rgb(path)
    except (OSError, UnidentifiedImageError) as exc:
        return Artifact(where, error=f"not a readable image: {exc}")
    measures = measure(image)
    values = {k: float(v) for k, v in measures.to_dict().items()}
    return Artifact(where, quality(measures).overall, values)


def failure_of(
    exchange: Exchange, events: list[dict[str, Any]], settings: TargetSettings
) -> str | None:
    """Why the action failed, or None.

    Silence is not failure: a statement that worked often prints nothing (``INSERT …;`` in
    sqlite3, ``x = 1000`` in bc), so a reply that ended (at the prompt, after the idle window)
    with no output is "no output", failed only where the target says ``on_silence: failed``.
    """
    if exchange.error:
        return exchange.error
    if exchange.ended_by == "timeout":
        return "no complete reply before the timeout"
    if exchange.ended_by == "continuation":
        return (
            "the program was left waiting for the rest of the statement (continuation prompt "
            f"{exchange.continuation!r}); later lines would be appended to it"
        )
    if line := error_line(exchange.text, settings.failure_pattern):
        return f"the target reported an error: {line[:160]}"
    for event in events:
        if event.get("ok") is False or event.get("type") == "error":
            said = event.get("message") or event.get("error") or event.get("type")
            return f"an error event: {str(said)[:160]}"
    if not exchange.text.strip():
        return "no output" if settings.on_silence == "failed" else None
    if settings.success_pattern and not re.search(settings.success_pattern, exchange.text):
        return "the reply does not look like success (success_pattern)"
    return None


@actor("target", summary="the program a simulated user drives, behind its adapter", order=62)
class TargetActor(Actor):
    role = "target"

    def __init__(self, setup: TargetSetup):
        self.setup = setup
        self.settings = setup.settings
        self.adapter: TargetAdapter = open_target(setup.settings, setup.adapter)
        file = setup.adapter.file
        events = Path(file(setup.settings.events)) if setup.settings.events else None
        self._tail = EventTail(events, setup.events_offset)
        pattern = file(setup.settings.artifacts) if setup.settings.artifacts else None
        self._watch = ArtifactWatch(pattern, setup.seen)
        self._nursery: trio.Nursery | None = None

    @classmethod
    def from_context(cls, context: ActorContext) -> TargetActor:
        if not isinstance(context.settings, TargetSetup):
            raise ProtocolError("the target actor needs a TargetSetup as its settings")
        return cls(context.settings)

    async def serve(self, inbox: trio.MemoryReceiveChannel[Delivery], name: str) -> None:
        async with trio.open_nursery() as nursery:
            self._nursery = nursery
            try:
                await super().serve(inbox, name)
            finally:
                await self.adapter.close()  # shielded: the program never outlives the actor
                nursery.cancel_scope.cancel()

    async def handle(self, body: Body) -> Body | None:
        match body:
            case StartTarget():
                assert self._nursery is not None
                self._watch.new()  # what is there before the session is not the session's
                greeting = await self.adapter.start(self._nursery)
                return self._reply(greeting, self._tail.read(), [])
            case Dispatch():
                await self.adapter.send(body.text)
                return Dispatched(body.turn)
            case Collect():
                exchange = await self.adapter.receive()
                await trio.sleep(EVENT_WINDOW_S if self._tail.path is not None else 0)
                bundle = self.setup.adapter.bundle
                artifacts = [measure_artifact(Path(p), bundle) for p in self._watch.new()]
                return self._reply(exchange, self._tail.read(), artifacts)
            case StopTarget():
                await self.adapter.close()
                return TargetStopped()
        raise TypeError(f"the target cannot handle {type(body).__name__}")

    def _reply(
        self, exchange: Exchange, events: list[dict[str, Any]], artifacts: list[Artifact]
    ) -> TargetReply:
        failure = failure_of(exchange, events, self.settings)
        return TargetReply(
            text=printable(exchange.text),  # whatever the adapter: no C1 or bidi controls
            ended_by=exchange.ended_by,
            duration_s=exchange.duration_s,
            truncated=exchange.truncated,
            received_bytes=exchange.received_bytes,
            screen=[printable(line) for line in exchange.screen],
            events=events,
            artifacts=artifacts,
            failed=failure is not None,
            failure=failure,
            usage=exchange.usage,
            events_offset=self._tail.offset,
            notes=exchange.notes,
            continuation=exchange.continuation,
        )
