"""The persona rollout's messages, with the kinds every message shares.

Bodies are tagged (``"type": "Speak"``) so a line of ``trace.jsonl`` decodes back to its class;
the :class:`Envelope` around a body says who sent it to whom, in which rollout and turn, and
which request it answers. The kinds and the open registry of message types live in
:mod:`loom_sim.core.messages`; the harness's and the debate's bodies in their own systems
(:mod:`loom_sim.harness.messages`, :mod:`loom_sim.debate.messages`).
"""

from __future__ import annotations

from loom_sim.core.messages import (
    MESSAGE_TYPES,
    Body,
    Envelope,
    Failure,
    R,
    Request,
    Tell,
    decode_envelope,
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
    "LOOP_AFTER_REDIRECT",
    "LOOP_CHECK",
    "MESSAGE_TYPES",
    "AdversaryMove",
    "Body",
    "CheckCandidate",
    "Embed",
    "Embeddings",
    "Envelope",
    "Failure",
    "Heard",
    "Judge",
    "Judgement",
    "MonitorEvent",
    "Observation",
    "Observe",
    "Prefetch",
    "Probe",
    "ProbeOutcome",
    "R",
    "Request",
    "Respond",
    "RevelationEvidence",
    "Speak",
    "Tell",
    "Utterance",
    "Verdict",
    "WindowTurn",
    "decode_envelope",
]
