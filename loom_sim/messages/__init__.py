"""Every message actors exchange, as frozen msgspec Structs.

Bodies are tagged (``"type": "Speak"``) so a line of ``trace.jsonl`` decodes back to its class;
the :class:`Envelope` around a body says who sent it to whom, in which rollout and turn, and
which request it answers. Actors never share state: what one needs from another travels here.

A request names its reply type — ``class Judge(Request[Judgement])`` — so
``await post.request("judge", Judge(...))`` is a ``Judgement`` to the type checker and is
checked once, in the post, at run time: no call site asserts what it got back. A :class:`Tell`
gets no reply.

The bodies live by system (``base``: the kinds of message; ``rollout``, ``harness``,
``debate``); this module gathers them, with the union a trace line decodes to.
"""

from __future__ import annotations

import msgspec

from loom_sim.messages.base import (
    Body,
    Failure,
    R,
    Request,
    Tell,
)
from loom_sim.messages.debate import (
    Assignment,
    CardAnswer,
    CheckExit,
    Compose,
    Detect,
    Detection,
    Disagreement,
    ExitVerdict,
    ExtractCard,
    Line,
    NextTurn,
    PairSignal,
    Posted,
    TurnTaken,
)
from loom_sim.messages.harness import (
    Action,
    Artifact,
    AttributedArtifact,
    Collect,
    CriterionResult,
    Dispatch,
    Dispatched,
    Evaluate,
    Evaluation,
    Observed,
    PlanAction,
    PlannedAction,
    Reflect,
    Reflected,
    Reflection,
    StartTarget,
    StopTarget,
    TargetReply,
    TargetStopped,
)
from loom_sim.messages.rollout import (
    LOOP_AFTER_REDIRECT,
    LOOP_CHECK,
    AdversaryMove,
    CheckCandidate,
    Embed,
    Embeddings,
    Heard,
    Judge,
    Judgement,
    MonitorEvent,
    Observation,
    Observe,
    Prefetch,
    Probe,
    ProbeOutcome,
    Respond,
    RevelationEvidence,
    Speak,
    Utterance,
    Verdict,
    WindowTurn,
)

__all__ = [
    "ENVELOPE_DECODER",
    "LOOP_AFTER_REDIRECT",
    "LOOP_CHECK",
    "Action",
    "AdversaryMove",
    "AnyBody",
    "Artifact",
    "Assignment",
    "AttributedArtifact",
    "Body",
    "CardAnswer",
    "CheckCandidate",
    "CheckExit",
    "Collect",
    "Compose",
    "CriterionResult",
    "Detect",
    "Detection",
    "Disagreement",
    "Dispatch",
    "Dispatched",
    "Embed",
    "Embeddings",
    "Envelope",
    "Evaluate",
    "Evaluation",
    "ExitVerdict",
    "ExtractCard",
    "Failure",
    "Heard",
    "Judge",
    "Judgement",
    "Line",
    "MonitorEvent",
    "NextTurn",
    "Observation",
    "Observe",
    "Observed",
    "PairSignal",
    "PlanAction",
    "PlannedAction",
    "Posted",
    "Prefetch",
    "Probe",
    "ProbeOutcome",
    "R",
    "Reflect",
    "Reflected",
    "Reflection",
    "Request",
    "Respond",
    "RevelationEvidence",
    "Speak",
    "StartTarget",
    "StopTarget",
    "TargetReply",
    "TargetStopped",
    "Tell",
    "TurnTaken",
    "Utterance",
    "Verdict",
    "WindowTurn",
]

AnyBody = (
    Speak
    | Utterance
    | Heard
    | Respond
    | Probe
    | CheckCandidate
    | Verdict
    | Observe
    | Observation
    | Judge
    | Judgement
    | Failure
    | PlanAction
    | PlannedAction
    | Observed
    | StartTarget
    | Dispatch
    | Dispatched
    | Collect
    | TargetReply
    | StopTarget
    | TargetStopped
    | Reflect
    | Reflected
    | Evaluate
    | Evaluation
    | Posted
    | Compose
    | NextTurn
    | Assignment
    | TurnTaken
    | Detect
    | Detection
    | CheckExit
    | ExitVerdict
    | ExtractCard
    | CardAnswer
)


class Envelope(msgspec.Struct, frozen=True):
    """A message in flight: the unit the trace records."""

    id: int
    ts: float
    rollout: str
    turn: int
    sender: str
    recipient: str
    body: AnyBody
    reply_to: int | None = None


ENVELOPE_DECODER = msgspec.json.Decoder(Envelope)
