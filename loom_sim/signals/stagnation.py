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
is regenerated with the emergency redirect before the interlocutor sees it. The committed
message then joins
the window (:meth:`StagnationMonitor.add`). Each message is embedded once, and only when a
verdict could depend on it (a candidate's vector is kept for when it is committed); at run
time the vectors come from the run's embedding service, batched across rollouts and computed
off the event loop. Only the vectors a window needs are kept, so the cost per turn does not
grow with the conversation.

A redirect is a fix, and a fix is checked: from the trigger to the end of the ``cooldown`` the
window signals stay quiet (the window still holds the loop, so they would fire on any
message), but each candidate is asked whether it *continues* the loop
(:meth:`StagnationMonitor.recheck`, :func:`loop_repeat`): its mean similarity to the persona's
messages in the window. The regenerated message of the turn that fired is checked so, and so
is every message of the turns after it; one that still loops is escalated by the monitor and,
sent anyway, flagged.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from loom_sim.config.spec import StagnationDetectionSpec
from loom_sim.signals.embedding import Backend
from loom_sim.signals.similarity import mean_pairwise, rowwise

#: Without embeddings, a candidate continues the loop when its mean TF-IDF similarity to the
#: persona's messages in the window reaches this (benchmarks/validity_loom.py measures it as
#: ``loop_after_redirect[fallback]``; docs/validity.md). With them the learned check decides.
REPEAT_TFIDF = 0.10


@dataclass(frozen=True)
class Repeat:
    """A candidate that continues the loop: the similarity that decided it, and both."""

    value: float
    threshold: float
    backend: str  # what decided: "learned" (the check over MiniLM features) or "tfidf"
    values: dict[str, float]
    compared: int = 0  # how many earlier messages the candidate was compared with


def loop_repeat(
    earlier: list[str], candidate: str, vectors: np.ndarray | None = None
) -> Repeat | None:
    """Whether ``candidate`` continues the loop the persona's ``earlier`` messages make.

    Given unit ``vectors`` (one row per earlier message, then the candidate's), the learned
    loop check decides (:mod:`loom_sim.signals.learned.loop`: how close the candidate is to
    the loop beside how close the loop is to itself, and what it adds), reported as its
    probability against its threshold. Without them — no embedding model — its mean TF-IDF
    similarity to them (fitted on these texts) against :data:`REPEAT_TFIDF`."""
    if not earlier:
        return None
    from loom_sim.signals.embedding import TfidfBackend

    tf = TfidfBackend().vectors([*earlier, candidate])
    values = {"tfidf": float(np.clip((tf[:-1] @ tf[-1]).mean(), -1.0, 1.0))}
    if vectors is not None:
        from loom_sim.signals.learned import check, loop

        values["embedding"] = float(np.clip((vectors[:-1] @ vectors[-1]).mean(), -1.0, 1.0))
        learned = check("loop")
        repeats, p = learned.decide(loop.features(earlier, candidate, vectors, tf))
        values["learned"] = round(p, 4)
        if repeats:
            return Repeat(p, learned.threshold, "learned", values, len(earlier))
        return None
    if values["tfidf"] >= REPEAT_TFIDF:
        return Repeat(values["tfidf"], REPEAT_TFIDF, "tfidf", values, len(earlier))
    return None


@dataclass(frozen=True)
class Trigger:
    kind: str  # "stagnation" | "convergence"
    value: float
    threshold: float
    window: int


@dataclass(eq=False)  # compared by identity: its vectors are arrays
class _Turn:
    turn: int
    persona: str
    interlocutor: str
    persona_vec: np.ndarray | None = None
    interlocutor_vec: np.ndarray | None = None


class StagnationMonitor:
    """The window of recent turns and the two signals over it.

    Vectors come from outside or from the backend. The runtime monitor gets them from the
    run's embedding service (batched across rollouts, in a worker thread) and hands them in
    with :meth:`candidate` and :meth:`supply`; the post-hoc analysis lets the monitor ask its
    backend directly. A turn added without vectors is embedded only when a signal needs it
    (:meth:`missing` lists what is lacking), so no message is embedded before a verdict could
    depend on it, and none twice: the accepted candidate's vector is the one its turn keeps.
    """

    def __init__(
        self,
        spec: StagnationDetectionSpec,
        backend: Backend | None = None,
        *,
        last_trigger: int | None = None,
    ):
        self.spec = spec
        self._backend = backend  # None until known: the runtime monitor learns it late
        # window turns for the persona's messages, plus the interlocutor message before them
        self._turns: deque[_Turn] = deque(maxlen=spec.window + 1)
        self._last_trigger = last_trigger
        self._candidate: _Turn | None = None  # the last candidate checked, with its vector
        self.last_values: dict[str, float] = {}

    @property
    def backend(self) -> Backend:
        if self._backend is None:
            raise RuntimeError("the stagnation monitor has no similarity backend yet")
        return self._backend

    @property
    def has_backend(self) -> bool:
        return self._backend is not None

    def use(self, backend: Backend) -> None:
        """Compare with ``backend`` from now on (its thresholds too)."""
        self._backend = backend

    @property
    def embeds(self) -> bool:
        return self._backend is not None and self._backend.name == "embedding"

    @property
    def thresholds(self) -> tuple[float, float]:
        """(loop, convergence) thresholds for the backend actually in use."""
        spec = self.spec
        if self.embeds:
            return spec.similarity_threshold, spec.convergence_threshold
        return spec.tfidf.similarity_threshold, spec.tfidf.convergence_threshold

    def quiet(self, turn: int) -> bool:
        """Nothing can fire at ``turn``: the monitor is off, ``turn`` is before ``min_turn``,
        or it is within the ``cooldown`` after the last trigger. No signal is computed then,
        and nothing needs embedding yet."""
        spec = self.spec
        if not spec.enabled or turn < spec.min_turn:
            return True
        return self._last_trigger is not None and turn - self._last_trigger <= spec.cooldown

    @property
    def last_trigger(self) -> int | None:
        return self._last_trigger

    def after_trigger(self, turn: int) -> bool:
        """``turn`` is the one that fired or within the cooldown after it: a candidate is then
        checked for continuing the loop (:meth:`recheck`), not against the window's signals."""
        last = self._last_trigger
        return self.spec.enabled and last is not None and 0 <= turn - last <= self.spec.cooldown

    def recheck(self, turn: int, persona: str, vector: np.ndarray | None = None) -> Repeat | None:
        """Whether ``persona``, sent at ``turn`` after a redirect, still continues the loop:
        compared with the persona's messages in the window (the last ``window - 1``)."""
        earlier = list(self._turns)[-(self.spec.window - 1) :]
        entry = _Turn(turn, persona, "", persona_vec=vector)
        self._candidate = entry
        vectors = None
        if self.embeds and earlier:
            self._embed_missing([*earlier, entry])
            vectors = np.stack([_vec(t.persona_vec) for t in [*earlier, entry]])
        return loop_repeat([t.persona for t in earlier], persona, vectors)

    def candidate(self, turn: int, persona: str, vector: np.ndarray | None = None) -> list[Trigger]:
        """What fires if ``persona`` is sent at ``turn``: the window with the candidate as its
        newest message. The candidate's vector (given, or computed now) is kept for
        :meth:`add`; a trigger starts the cooldown, so the regenerated candidate is not
        redirected again."""
        if not self.spec.enabled:
            return []
        entry = _Turn(turn, persona, "", persona_vec=vector)
        self._candidate = entry
        return self._fire(turn, [*self._turns, entry])

    def restore(self, turns: list[tuple[int, str, str]]) -> None:
        """Rebuild the window from the last turns of a resumed rollout."""
        for turn, persona, interlocutor in turns[-(self.spec.window + 1) :]:
            self.add(turn, persona, interlocutor)

    def add(
        self,
        turn: int,
        persona: str,
        interlocutor: str,
        vectors: tuple[np.ndarray, np.ndarray] | None = None,
    ) -> None:
        """A completed turn joins the window, with its two vectors if known. The persona
        message checked as the last candidate keeps the vector it was checked with."""
        entry = _Turn(turn, persona, interlocutor)
        if vectors is not None:
            entry.persona_vec, entry.interlocutor_vec = vectors
        seen = self._candidate
        if (
            entry.persona_vec is None
            and seen is not None
            and (seen.turn, seen.persona)
            == (
                turn,
                persona,
            )
        ):
            entry.persona_vec = seen.persona_vec
        self._candidate = None
        self._turns.append(entry)

    def missing(self) -> list[str]:
        """The window's texts whose vectors are not known yet (TF-IDF needs none: it fits its
        vectors on each comparison)."""
        texts = []
        for entry in self._turns:
            if entry.persona_vec is None:
                texts.append(entry.persona)
            if entry.interlocutor_vec is None:
                texts.append(entry.interlocutor)
        return list(dict.fromkeys(texts))

    def supply(self, vectors: Mapping[str, np.ndarray]) -> None:
        """Vectors for texts :meth:`missing` named."""
        for entry in self._turns:
            if entry.persona_vec is None:
                entry.persona_vec = vectors.get(entry.persona)
            if entry.interlocutor_vec is None:
                entry.interlocutor_vec = vectors.get(entry.interlocutor)

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
        if self.quiet(turn):
            return []
        values = self._values(turns)
        if values is None:
            return []
        spec = self.spec
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

    def _embed_missing(self, turns: list[_Turn]) -> None:
        """Vectors the backend must compute now (the analysis, or a monitor given none)."""
        needed = list(
            dict.fromkeys(
                text
                for entry in turns
                for text, vector in (
                    (entry.persona, entry.persona_vec),
                    (entry.interlocutor, entry.interlocutor_vec),
                )
                if vector is None and entry is not self._candidate
            )
        )
        candidate = self._candidate
        checking = candidate is not None and any(entry is candidate for entry in turns)
        if checking and candidate is not None and candidate.persona_vec is None:
            needed.append(candidate.persona)
        if not needed:
            return
        vectors = dict(zip(needed, self.backend.vectors(needed), strict=True))
        self.supply(vectors)
        if checking and candidate is not None and candidate.persona_vec is None:
            candidate.persona_vec = vectors.get(candidate.persona)

    def _signals(self, window: list[_Turn], turns: list[_Turn]) -> tuple[float, float]:
        # Each persona message of the window with the interlocutor message it answers.
        before = {t.turn: t for t in turns}
        answered = [(k, before[t.turn - 1]) for k, t in enumerate(window) if t.turn - 1 in before]
        if self.embeds:
            self._embed_missing(turns)
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
