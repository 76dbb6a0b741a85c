"""What a rollout's actors say to each other: the persona, the interlocutor or adversary, the
monitor, the judge, and the embedding service."""

from __future__ import annotations

from typing import Any

import msgspec

from loom_sim.core.messages import Body, Request, Tell
from loom_sim.models.base import Usage

# ─── persona ────────────────────────────────────────────────────────────────


class Utterance(Body, frozen=True):
    """What a model-backed actor said, with what it cost."""

    text: str
    usage: Usage = msgspec.field(default_factory=Usage)
    latency_s: float = 0.0
    attempts: int = 1
    cut_turns: int = 0  # history turns left out to fit the context budget
    # why the model stopped ("stop", or "length"/"max_tokens": cut at the token limit)
    finish_reason: str | None = None

    def summary(self) -> str:
        text = self.text
        return text


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


class Heard(Tell, frozen=True):
    """To the persona and to the responders that listen (adversaries): this exchange is now
    part of the conversation."""

    turn: int
    persona: str
    interlocutor: str

    def summary(self) -> str:
        text = f"turn {self.turn + 1} exchange committed"
        return text


# ─── interlocutor (or adversary) ────────────────────────────────────────────


class Respond(Request[Utterance], frozen=True):
    """Interlocutor (or adversary): answer the persona's message."""

    turn: int
    text: str

    def summary(self) -> str:
        text = self.text
        return text


class AdversaryMove(msgspec.Struct, frozen=True):
    """What an adversary did with one message, and why: the record a reader audits.

    ``material`` is what the tactic was built from (the quote it misquoted and how, the
    backstory fact it asks about, the tone it contrasts, the task it offers), so a reader can
    check the probe against the transcript without re-deriving it. Whether the probe worked is
    known only once the persona has answered; that verdict travels in a later :class:`Probe`
    as a :class:`ProbeOutcome`.
    """

    adversary: str  # contradiction | helpfulness
    tactic: str  # e.g. misquote, backstory_recall, above_ceiling, register_shift
    policy: str = ""  # how the tactic was chosen: static | adaptive | bandit | cycle | weighted
    category: str | None = None  # the persona's last message, as the probe classifier read it
    rationale: str = ""
    material: dict[str, str] = msgspec.field(default_factory=dict)
    composed: str = "model"  # model | template (the set template: asked for, or the fallback)
    formality: float | None = None  # the coaxer's register, 0 casual .. 1 academic


class ProbeOutcome(msgspec.Struct, frozen=True):
    """The judge's reading of the persona's answer to an earlier probe: did the probe catch
    the persona (contradicting itself for the trap; stepping out of its bounds for the coaxer)?
    """

    turn: int  # the turn of the probe
    adversary: str
    tactic: str
    caught: bool | None  # None: the judge could not say
    evidence: str = ""
    error: str | None = None
    recovery: float | None = None  # the trap: how well it recovered as its spec says, 0..1


class Probe(Utterance, frozen=True, kw_only=True):
    """An adversary's message: an utterance with the move behind it."""

    move: AdversaryMove
    judged: ProbeOutcome | None = None  # the verdict on this adversary's previous probe
    judge_usage: Usage = msgspec.field(default_factory=Usage)


# ─── monitor ────────────────────────────────────────────────────────────────


#: The monitor that checks a redirect worked, and the pattern of a candidate that still
#: continues the loop after the redirect given for it.
LOOP_CHECK = "loop_check"
LOOP_AFTER_REDIRECT = "loop_after_redirect"


class MonitorEvent(msgspec.Struct, frozen=True):
    """A monitor trigger: which monitor, which pattern fired, what was done about it."""

    monitor: str  # repetition | stagnation | convergence
    pattern: str  # e.g. "banned:Have you ever felt", "ends_with_question_to_interlocutor"
    action: str  # reprompt | accepted_after_retries | emergency_injection
    detail: str = ""
    attempt: int | None = None
    values: dict[str, float] = msgspec.field(default_factory=dict)


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


class RevelationEvidence(msgspec.Struct, frozen=True):
    """Why a persona message counts as making a revelation: the variant it says, in which
    sentence, how close (for ``method`` "embedding" the score: the cosine of the sentence and
    the variant, discounted for the words they share; for "words" the share of the variant's
    words), and whether a judge confirmed it."""

    topic: str
    variant: str
    similarity: float
    sentence: str
    method: str  # "embedding" | "words"
    threshold: float = 0.0
    judge: str | None = None  # the judge's quote when one confirmed it
    cosine: float | None = None  # "embedding": the cosine before the discount
    shared: tuple[str, ...] = ()  # "embedding": the sentence's words the variant shares


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


# ─── judge ──────────────────────────────────────────────────────────────────


class WindowTurn(msgspec.Struct, frozen=True):
    turn: int
    persona: str
    interlocutor: str


class Judgement(Body, frozen=True):
    ok: bool
    parsed: Any = None
    raw: str = ""
    error: str | None = None
    attempts: int = 1
    usage: Usage = msgspec.field(default_factory=Usage)
    fitted: str | None = None  # what of the window was left out to fit the judge's context

    def summary(self) -> str:
        text = f"ok {self.parsed}" if self.ok else f"failed: {self.error}"
        return text


class Judge(Request[Judgement], frozen=True):
    """Judge: score a window of turns against a rubric; answer as JSON matching ``schema``.

    ``rubric`` (the question, after the transcript) and ``brief`` (what is judged and by which
    criteria, before it) are trusted text (loom-sim's templates and the config); everything a
    model wrote travels in ``window`` and ``material`` (an adversary probe's quotes and claims),
    which reach the judge only fenced (:mod:`loom_sim.judging.fence`). The brief is the same for
    every turn of a rollout, so it belongs to the prompt's shared prefix.
    """

    turn: int
    rubric: str
    window: list[WindowTurn]
    schema: dict[str, Any]
    rubric_id: str = ""
    material: dict[str, str] = msgspec.field(default_factory=dict)
    brief: str = ""

    def summary(self) -> str:
        text = f"rubric {self.rubric_id or '?'} over turns {[w.turn + 1 for w in self.window]}"
        return text


# ─── embedding service ──────────────────────────────────────────────────────
# One service per run embeds every rollout's texts (``loom_sim.actors.embedder``). These travel
# on the service's own channel, never through a rollout's post: they carry vectors, which the
# trace has no use for.


class Embeddings(Body, frozen=True):
    """The vectors of the texts asked for, one row each, in order (a read-only float32 array
    of shape (n, 384)); or, when the embedding model could not be loaded, none, and the
    backend the monitor should use instead."""

    backend: str  # "embedding", or "tfidf" (the fallback: vectors is None then)
    vectors: Any = None


class Embed(Request[Embeddings], frozen=True):
    """Embedding service: the vectors of ``texts`` (a verdict waits on them)."""

    texts: list[str]


class Prefetch(Tell, frozen=True):
    """Embedding service: ``texts`` will be needed; embed them when the model is free."""

    texts: list[str]
