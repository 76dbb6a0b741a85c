"""What the persona sees at a turn: a system prompt, its history with the instruction updates
in it, and the turn's notes at the end.

Every full injection makes a new prompt in force. The first is the persona's system prompt;
each later one reaches it as an update (``loom_sim.assembler.update``) appended to the message
the injecting turn answers, where it stays: from turn to turn the prompt only grows at its end,
which is what prompt caches reuse. When the history is cut, the prompt is read from the start
anyway, so the system prompt becomes the one in force at the first message kept and only the
updates after it stay in the history. A full injection with no update (one the persona could
not be told as a change: a resumed run recorded before the prompts were kept) replaces the
system prompt, as every full injection once did.

All of it is a function of the history, the injections and the token counts, so a persona
rebuilt from a run's records (resuming it, or answering a probe about a past turn) sees what
the persona saw when the run was made.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from loom_sim.actors.history import MESSAGE_OVERHEAD, History

from loom_sim.assembler.update import update_text
from loom_sim.models.base import ChatMessage
from loom_sim.store.records import TurnRecord


@dataclass(frozen=True)
class Injection:
    """A prompt that came into force at ``turn``."""

    turn: int
    prompt: str  # the whole prompt, rendered
    update: str | None  # how the persona was told (None: as its system prompt)


@dataclass
class PersonaView:
    history: History = field(default_factory=History)
    injections: list[Injection] = field(default_factory=list)

    def inject(self, turn: int, prompt: str, update: str | None) -> None:
        """``prompt`` is in force from ``turn`` on. A turn planned again (after a failed
        attempt) replaces what its earlier plan injected."""
        while self.injections and self.injections[-1].turn >= turn:
            self.injections.pop()
        if not self.injections or self.injections[-1].prompt != prompt:
            self.injections.append(Injection(turn, prompt, update))

    def rebuild(
        self, records: list[TurnRecord], scaffolding: str = "", *, as_updates: bool = True
    ) -> None:
        """The injections a run's records show, with the updates computed as the rollout did
        (``scaffolding``: the prompt in force, for records that do not keep their prompts;
        ``as_updates`` false: each one replaced the system prompt, as the config can ask)."""
        held = None
        for record in records:
            ref = record.scaffolding
            if ref is None or ref.blocks is None or ref.since != record.turn:
                continue
            update = update_text(held, ref.blocks) if as_updates else None
            self.inject(record.turn, ref.blocks.render(), update)
            held = ref.blocks
        if held is None and scaffolding:
            full = [r.turn for r in records if r.injection == "full"]
            self.inject(max(full, default=0), scaffolding, None)

    def compose(
        self, notes: str, count: Callable[[str], int], budget: int
    ) -> tuple[list[ChatMessage], int]:
        """The messages to send (notes appended to the newest) and the exchanges cut.

        The history is cut in steps of half the room the prompt in force leaves it (see
        ``actors/history.py``), so the prompt keeps its prefix from turn to turn; the step
        ignores this turn's notes, which come and go."""
        messages = self.history.messages
        base = max((i for i, j in enumerate(self.injections) if j.update is None), default=0)
        usable = self.injections[base:]
        in_force = usable[-1].prompt if usable else ""
        prompt_tokens = count(in_force)
        fixed = prompt_tokens + (count(notes) if notes else 0)
        added = {2 * j.turn: count(j.update) + 2 for j in usable if j.update is not None}
        start = self.history.start(
            fixed, budget, step_tokens=max(1, (budget - prompt_tokens) // 2), added=added
        )
        while True:
            # the system prompt: the one in force when the first message kept was answered
            system = usable[0] if usable else None
            for injection in usable:
                if injection.turn <= start // 2:
                    system = injection
            extra = count(system.prompt) - prompt_tokens if system is not None else 0
            kept = sum(self.history.tokens[start:]) + sum(t for i, t in added.items() if i >= start)
            if extra <= 0 or fixed + extra + MESSAGE_OVERHEAD + kept <= budget:
                break
            if start + 2 > len(messages):
                break
            start += 2  # an older, longer system prompt: cut one more exchange
        shown = {
            2 * j.turn: j.update
            for j in usable
            if j.update is not None and system is not None and j.turn > system.turn
        }
        out = [ChatMessage("system", system.prompt if system is not None else "")]
        for index in range(start, len(messages)):
            message = messages[index]
            if index in shown:
                message = ChatMessage(message.role, f"{message.content}\n\n{shown[index]}")
            out.append(message)
        if notes:  # the history always ends with what the persona is answering
            last = out[-1]
            out[-1] = ChatMessage(last.role, f"{last.content}\n\n{notes}")
        return out, start // 2
