"""The stagnation circuit breaker: agreement loops and convergence, caught while they happen.

Two signals over the last ``window`` turns, from the shared similarity code:

- **stagnation** — the mean pairwise similarity of the persona's recent messages: a persona
  saying the same thing in other words every turn;
- **convergence** — the mean similarity of each recent persona message to the interlocutor
  message it answers: a persona echoing the interlocutor's framing back.

Both are known before a message is sent: a persona message is paired with the interlocutor
message it *answers*, which came earlier. So the monitor checks each **candidate** as if it
were sent (:meth:`StagnationMonitor.candidate`): either signal above its threshold, from
``min_turn`` on and outside the ``cooldown`` after the last trigger, means the looping message
is regenerated with the emergency redirect before the interlocutor sees it — the Loom plan's
"inject the emergency redirect and re-prompt the persona". The committed message then joins
the window (:meth:`StagnationMonitor.add`). Each message is embedded once, in a worker thread
(a candidate's vector is kept for when it is committed); only the vectors a window needs are
kept, so the cost per turn does not grow with the conversation.
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
        self._candidate: _Turn | None = None  # the last candidate checked, with its vector
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

    def candidate(self, turn: int, persona: str) -> list[Trigger]:
        """What fires if ``persona`` is sent at ``turn``: the window with the candidate as its
        newest message. Only the candidate's vector is kept (for :meth:`add`); a trigger starts
        the cooldown, so the regenerated candidate is not redirected again."""
        if not self.spec.enabled:
            return []
        entry = _Turn(turn, persona, "")
        if self.embeds:
            entry.persona_vec = self.backend.vectors([persona])[0]
        self._candidate = entry
        return self._fire(turn, [*self._turns, entry])

    def restore(self, turns: list[tuple[int, str, str]]) -> None:
        """Rebuild the window from the last turns of a resumed rollout."""
        for turn, persona, interlocutor in turns[-(self.spec.window + 1) :]:
            self.add(turn, persona, interlocutor)

    def add(self, turn: int, persona: str, interlocutor: str) -> None:
        """A completed turn joins the window (embedded now, once, with the embedding backend)."""
        entry = _Turn(turn, persona, interlocutor)
        if self.embeds:
            seen = self._candidate
            if seen is not None and (seen.turn, seen.persona) == (turn, persona):
                entry.persona_vec = seen.persona_vec
                entry.interlocutor_vec = self.backend.vectors([interlocutor])[0]
            else:
                vectors = self.backend.vectors([persona, interlocutor])
                entry.persona_vec, entry.interlocutor_vec = vectors[0], vectors[1]
        self._candidate = None
        self._turns.append(entry)

    def current(self) -> tuple[float, float] | None:
        """(stagnation, convergence) over the last ``window`` turns; None before a full window."""
        return self._values(list(self._turns))

    def _values(self, turns: list[_Turn]) -> tuple[float, float] | None:
        window = turns[-self.spec.window :]
        if len(window) < self.spec.window:
            return None
        return self._signals(window, turns)

    def check(self, turn: int) -> list[Trigger]:
        """What fires at ``turn``: respects ``min_turn`` and the cooldown after a trigger."""
        return self._fire(turn, list(self._turns))

    def _fire(self, turn: int, turns: list[_Turn]) -> list[Trigger]:
        spec = self.spec
        if turn < spec.min_turn:
            return []
        if self._last_trigger is not None and turn - self._last_trigger <= spec.cooldown:
            return []
        values = self._values(turns)
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

    def _signals(self, window: list[_Turn], turns: list[_Turn]) -> tuple[float, float]:
        # Each persona message of the window with the interlocutor message it answers.
        before = {t.turn: t for t in turns}
        answered = [(k, before[t.turn - 1]) for k, t in enumerate(window) if t.turn - 1 in before]
        if self.embeds:  # every turn in the window was embedded when it was added
            persona = np.stack([_vec(t.persona_vec) for t in window])
            replies = [_vec(t.interlocutor_vec) for _, t in answered]
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


def _vec(vector: np.ndarray | None) -> np.ndarray:
    if vector is None:
        raise RuntimeError("a message in the window was not embedded")
    return vector
