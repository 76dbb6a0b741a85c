"""What a rollout's actors say to each other: the persona, the interlocutor or adversary, and
the monitor. (The judge's and the embedding service's messages, which every system's actors
use, are :mod:`loom_sim.messages`.)"""

from __future__ import annotations

import msgspec

from loom_sim.core.messages import Request
from loom_sim.messages import Body, Utterance
from loom_sim.models.base import Usage
from loom_sim.store.turn_parts import AdversaryMove, MonitorEvent, ProbeOutcome, RevelationEvidence

# ─── persona ────────────────────────────────────────────────────────────────


class Speak(Request[Utterance], frozen=True):
    """Persona: produce your next message (a candidate until the repetition guard accepts it)."""

    turn: int
    attempt: int = 0
    injection: str = "none"  # full | reminder | none
    scaffolding: str | None = None  # the full prompt, on full-injection turns
    # on a full injection after the first: the parts that changed, as the persona reads them
    update: str | None = None
    reminder: str | None = None
    emergency: str | None = None  # a monitor's intervention, scheduled for this turn
    vary: str | None = None  # the guard's re-prompt after a rejected candidate

    def summary(self) -> str:
        parts = [f"attempt {self.attempt}", f"injection {self.injection}"]
        parts += [n for n in ("update", "reminder", "emergency", "vary") if getattr(self, n)]
        text = ", ".join(parts)
        return text


# ─── interlocutor (or adversary) ────────────────────────────────────────────


class Respond(Request[Utterance], frozen=True):
    """Interlocutor (or adversary): answer the persona's message."""

    turn: int
    text: str

    def summary(self) -> str:
        text = self.text
        return text


class Probe(Utterance, frozen=True, kw_only=True):
    """An adversary's message: an utterance with the move behind it."""

    move: AdversaryMove
    judged: ProbeOutcome | None = None  # the verdict on this adversary's previous probe
    judge_usage: Usage = msgspec.field(default_factory=Usage)


# ─── monitor ────────────────────────────────────────────────────────────────


class Verdict(Body, frozen=True):
    accepted: bool
    events: list[MonitorEvent] = msgspec.field(default_factory=list)
    vary: str | None = None  # the re-prompt to use when rejected
    redirect: str | None = None  # the stagnation monitor's emergency redirect, for the turn
    offered: list[str] = msgspec.field(default_factory=list)  # revelation topics it offers

    def summary(self) -> str:
        text = (
            "accepted"
            if self.accepted
            else "rejected: " + ", ".join(e.pattern for e in self.events)
        )
        return text


class CheckCandidate(Request[Verdict], frozen=True):
    """Monitor: may this persona candidate be sent? (with where the trajectory stands, for
    the emergency redirect a looping candidate gets)"""

    turn: int
    attempt: int
    text: str
    phase_index: int = 0
    intensities: dict[str, float] = msgspec.field(default_factory=dict)

    def summary(self) -> str:
        text = f"attempt {self.attempt}: {self.text}"
        return text


class Observation(Body, frozen=True):
    events: list[MonitorEvent] = msgspec.field(default_factory=list)
    emergency: str | None = None  # an intervention for the next turn's prompt
    revealed: list[RevelationEvidence] = msgspec.field(default_factory=list)  # made this turn
    judge_usage: Usage = msgspec.field(default_factory=Usage)  # the judge's confirmations

    def summary(self) -> str:
        text = ", ".join(f"{e.monitor}:{e.pattern}" for e in self.events) or "nothing to report"
        return text


class Observe(Request[Observation], frozen=True):
    """Monitor: examine the completed exchange (with where the trajectory stands)."""

    turn: int
    persona: str
    interlocutor: str
    phase_index: int = 0
    intensities: dict[str, float] = msgspec.field(default_factory=dict)

    def summary(self) -> str:
        text = f"turn {self.turn + 1} exchange"
        return text
