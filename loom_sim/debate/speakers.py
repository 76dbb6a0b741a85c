"""Who speaks next: the speaker policy as data, and the floor it reads.

AG2's GroupChat and ChatArena write speaker selection as code, and AG2's "auto" mode can
livelock: a selector that names nobody valid is asked again, and again. Here a policy is a
small record (:class:`SpeakerPolicy`: an order, a fallback, two fairness rules) and selection
is a pure function of the floor's history and the debate's seed, so:

* it always returns a persona — there is no "ask again" — and every turn, said or failed,
  uses up one message of the budget, so a debate ends within its budget whatever the
  debaters do (``tests/test_debate_livelock.py`` checks this over random policies and
  failure patterns);
* a resumed debate rebuilds the floor from ``messages.jsonl`` and picks exactly the speakers
  an uninterrupted one would have.

Orders: ``round_robin`` (the deck's order, in turn), ``random`` (seeded per
turn), ``least_recent`` (whoever has waited longest), ``addressed`` (whoever the last message
named, or else replied to; the fallback order when it addressed nobody who may speak).
``never_twice`` keeps one persona from speaking twice in a row; ``max_silence`` hands the
floor to a persona who has waited that many turns, so two personas addressing each other
cannot starve the rest.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

from pydantic import Field

from loom_sim.debate.contract import Strict
from loom_sim.seeds import derive_seed

Order = Literal["round_robin", "random", "least_recent", "addressed"]
Fallback = Literal["round_robin", "random", "least_recent"]


class SpeakerPolicy(Strict):
    order: Order = Field("round_robin", description="How the next speaker is chosen.")
    fallback: Fallback = Field(
        "least_recent", description="For `addressed`: the order used when nobody is addressed."
    )
    never_twice: bool = Field(True, description="Nobody speaks twice in a row.")
    max_silence: int | None = Field(
        None,
        ge=1,
        le=1000,
        description="A persona who has not had a turn for this many turns gets the floor "
        "(default: twice the number of personas for `addressed`, else off).",
    )

    @property
    def label(self) -> str:
        return self.order if self.order != "addressed" else f"addressed/{self.fallback}"


@dataclass(frozen=True)
class Taken:
    """One main-chat turn, as the floor remembers it."""

    turn: int
    speaker: str
    said: str | None = None  # the message's id, when something was said
    text: str = ""
    reply_to: str | None = None


@dataclass
class Floor:
    """The personas of a debate and who has had the floor when."""

    personas: list[str]  # ids, in the deck's order
    names: dict[str, str] = field(default_factory=dict)  # id -> display name
    history: list[Taken] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._authors: dict[str, str] = {t.said: t.speaker for t in self.history if t.said}

    def take(self, taken: Taken) -> None:
        self.history.append(taken)
        if taken.said:
            self._authors[taken.said] = taken.speaker

    @property
    def last_speaker(self) -> str | None:
        return self.history[-1].speaker if self.history else None

    def last_turn_of(self, persona: str) -> int:
        for taken in reversed(self.history):
            if taken.speaker == persona:
                return taken.turn
        return -1

    def addressed(self) -> tuple[str | None, str]:
        """Whom the last said message addressed: a persona it names, else the author of the
        message it replied to."""
        last = next((t for t in reversed(self.history) if t.said), None)
        if last is None:
            return None, ""
        for persona in self.personas:
            if persona != last.speaker and _names(last.text, persona, self.names.get(persona, "")):
                return persona, "named"
        author = self._authors.get(last.reply_to or "")
        if author is not None and author != last.speaker:
            return author, "replied to"
        return None, ""


def _names(text: str, persona: str, name: str) -> bool:
    first = name.split()[0] if name.split() else persona
    words = {w for w in {first, name, persona, f"@{persona}"} if w}
    return any(re.search(rf"(?<!\w){re.escape(w)}(?!\w)", text, flags=re.I) for w in words)


def _round_robin(floor: Floor, allowed: list[str], rng: random.Random) -> str:
    order = floor.personas
    last = floor.last_speaker
    start = order.index(last) + 1 if last in order else 0
    for step in range(len(order)):
        persona = order[(start + step) % len(order)]
        if persona in allowed:
            return persona
    return allowed[0]


def _random(floor: Floor, allowed: list[str], rng: random.Random) -> str:
    return rng.choice(allowed)


def _least_recent(floor: Floor, allowed: list[str], rng: random.Random) -> str:
    return min(allowed, key=lambda p: (floor.last_turn_of(p), floor.personas.index(p)))


ORDERS: dict[str, Callable[[Floor, list[str], random.Random], str]] = {
    "round_robin": _round_robin,
    "random": _random,
    "least_recent": _least_recent,
}


def choose(policy: SpeakerPolicy, floor: Floor, seed: int, turn: int) -> tuple[str, str]:
    """The speaker of ``turn`` and why (for the record); never fails to name one."""
    rng = random.Random(derive_seed(seed, "speaker", turn))
    allowed = list(floor.personas)
    last = floor.last_speaker
    if policy.never_twice and len(allowed) > 1 and last in allowed:
        allowed.remove(last)
    silence = policy.max_silence
    if silence is None and policy.order == "addressed":
        silence = 2 * len(floor.personas)
    if silence is not None:
        waited = {p: turn - max(floor.last_turn_of(p), -1) - 1 for p in allowed}
        starved = [p for p in allowed if waited[p] >= silence]
        if starved:
            persona = max(starved, key=lambda p: (waited[p], -floor.personas.index(p)))
            return persona, f"silent for {waited[persona]} turns"
    if policy.order == "addressed":
        named, how = floor.addressed()
        if named is not None and named in allowed:
            return named, f"addressed ({how})"
        return ORDERS[policy.fallback](floor, allowed, rng), f"{policy.fallback} (nobody addressed)"
    return ORDERS[policy.order](floor, allowed, rng), policy.order
