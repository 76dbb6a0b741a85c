"""What a rollout's turn record holds beside its messages: the monitors' events, the
revelations a message made with their evidence, and an adversary's move and the verdict on it.

They travel in the rollout's messages (:mod:`loom_sim.rollout.messages`) and are written into
each turn's record (:class:`loom_sim.store.records.TurnRecord`), which is why they live here,
below both.
"""

from __future__ import annotations

import msgspec


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
