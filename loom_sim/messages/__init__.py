"""The messages every system's actors share, with the kinds every message has.

Bodies are tagged (``"type": "Judge"``) so a line of ``trace.jsonl`` decodes back to its class;
the :class:`Envelope` around a body says who sent it to whom, in which run and turn, and which
request it answers. The kinds and the open registry of message types live in
:mod:`loom_sim.core.messages`; each system's own bodies in its folder
(:mod:`loom_sim.rollout.messages`, :mod:`loom_sim.harness.messages`,
:mod:`loom_sim.debate.messages`).
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
from loom_sim.messages.shared import (
    Embed,
    Embeddings,
    Heard,
    Judge,
    Judgement,
    Prefetch,
    Utterance,
    WindowTurn,
)

__all__ = [
    "MESSAGE_TYPES",
    "Body",
    "Embed",
    "Embeddings",
    "Envelope",
    "Failure",
    "Heard",
    "Judge",
    "Judgement",
    "Prefetch",
    "R",
    "Request",
    "Tell",
    "Utterance",
    "WindowTurn",
    "decode_envelope",
]
