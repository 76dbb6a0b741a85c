"""The stagnation circuit breaker: agreement loops and convergence, caught while they happen.

Two signals over the last ``window`` turns, from the shared similarity code:

- **stagnation** — the mean pairwise similarity of the persona's recent messages: a persona
  saying the same thing in other words every turn;
- **convergence** — the mean similarity of each recent persona message to the interlocutor
  message it answers: a persona echoing the interlocutor's framing back.

Either above its threshold, from ``min_turn`` on and outside the ``cooldown`` after the last
trigger, schedules an emergency injection for the next turn. Each message is embedded once,
when its turn completes, in a worker thread; only the vectors a window needs are kept, so the
cost per turn does not grow with the conversation.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

import numpy as np
import trio

from loom_sim.config.spec import StagnationDetectionSpec
from loom_sim.signals.embedding import Backend
from loom_sim.signals.similarity import mean_pairwise, rowwise


@dataclass(frozen=True)
class Trigger:
    kind: str  # "stagnation" | "convergence"
    value: float
    threshold: float
    window: int


@dataclass
class _Turn:
    turn: int
    persona: str
    interlocutor: str
    persona_vec: np.ndarray | None = None
    interlocutor_vec: np.ndarray | None = None


class StagnationMonitor:
    def __init__(
        self, spec: StagnationDetectionSpec, backend: Backend, *, last_trigger: int | None = None
    ):
        self.spec = spec
        self.backend = backend
        # window turns for the persona's messages, plus the interlocutor message before them
        self._turns: deque[_Turn] = deque(maxlen=spec.window + 1)
        self._last_trigger = last_trigger
        self.last_values: dict[str, float] = {}

    @property
    def embeds(self) -> bool:
        return self.backend.name == "embedding"

    @property
    def thresholds(self) -> tuple[float, float]:
        """(loop, convergence) thresholds for the backend actually in use."""
        spec = self.spec
        if self.embeds:
            return spec.similarity_threshold, spec.convergence_threshold
        return spec.tfidf.similarity_threshold, spec.tfidf.convergence_threshold

    async def observe(self, turn: int, persona: str, interlocutor: str) -> list[Trigger]:
        """Take in a completed turn; return what fired (empty when nothing did).

        Embedding and comparing run in a worker thread: the event loop never waits on them.
        """
        if not self.spec.enabled:
            return []

        def step() -> list[Trigger]:
            self.add(turn, persona, interlocutor)
            return self.check(turn)

        return await trio.to_thread.run_sync(step)

    def restore(self, turns: list[tuple[int, str, str]]) -> None:
        """Rebuild the window from the last turns of a resumed rollout."""
        for turn, persona, interlocutor in turns[-(self.spec.window + 1) :]:
            self.add(turn, persona, interlocutor)

    def add(self, turn: int, persona: str, interlocutor: str) -> None:
        """A completed turn joins the window (embedded now, once, with the embedding backend)."""
        entry = _Turn(turn, persona, interlocutor)
        if self.embeds:
            vectors = self.backend.vectors([persona, interlocutor])
            entry.persona_vec, entry.interlocutor_vec = vectors[0], vectors[1]
        self._turns.append(entry)

    def current(self) -> tuple[float, float] | None:
        """(stagnation, convergence) over the last ``window`` turns; None before a full window."""
        window = list(self._turns)[-self.spec.window :]
        if len(window) < self.spec.window:
            return None
        return self._signals(window)

    def check(self, turn: int) -> list[Trigger]:
        """What fires at ``turn``: respects ``min_turn`` and the cooldown after a trigger."""
        spec = self.spec
        if turn < spec.min_turn:
            return []
        if self._last_trigger is not None and turn - self._last_trigger <= spec.cooldown:
            return []
        values = self.current()
        if values is None:
            return []
        stagnation, convergence = values
        self.last_values = {"stagnation": stagnation, "convergence": convergence}
        loop_at, echo_at = self.thresholds
        fired = []
        if stagnation >= loop_at:
            fired.append(Trigger("stagnation", stagnation, loop_at, spec.window))
        if convergence >= echo_at:
            fired.append(Trigger("convergence", convergence, echo_at, spec.window))
        if fired:
            self._last_trigger = turn
        return fired

    def _signals(self, window: list[_Turn]) -> tuple[float, float]:
        # Each persona message of the window with the interlocutor message it answers.
        before = {t.turn: t for t in self._turns}
        answered = [(k, before[t.turn - 1]) for k, t in enumerate(window) if t.turn - 1 in before]
        if self.embeds:
            persona = np.stack([t.persona_vec for t in window])
            replies = [t.interlocutor_vec for _, t in answered]
        else:
            # TF-IDF: fitted on exactly the texts compared, the window and the replies answered
            vectors = self.backend.vectors(
                [t.persona for t in window] + [t.interlocutor for _, t in answered]
            )
            persona, replies = vectors[: len(window)], list(vectors[len(window) :])
        stagnation = mean_pairwise(persona)
        if not answered:
            return stagnation, 0.0
        echoed = rowwise(persona[[k for k, _ in answered]], np.stack(replies))
        return stagnation, float(echoed.mean())
