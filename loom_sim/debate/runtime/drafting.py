"""One debate message in the making: tries, refused drafts and the reasons for them.

A debater drafts; the draft is checked (:func:`loom_sim.debate.checks.check_message`); a
refused draft is kept with its reasons, and the next try is asked with them. When the tries
run out the turn is recorded as failed, with every refused draft — Faultline silently skips a
reply that trips its banned list; here nothing said or refused goes unrecorded. A reply the
model's provider could not deliver in usable form (``BadModelReply``) is a refused draft like
any other; a model that cannot be reached at all is not, and ends the debate in ``error``
with every completed message kept.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from enum import Enum

from loom_sim.actors.base import Post
from loom_sim.debate.messages import Compose
from loom_sim.debate.records import Rejected
from loom_sim.models.base import BadModelReply, Usage


class Outcome(Enum):
    ACCEPTED = "accepted"
    REDRAFT = "redraft"
    FAILED = "failed"


@dataclass
class Drafting:
    speaker: str  # the debater's actor name (its persona id)
    check: Callable[[str], list[str]]
    tries: int
    attempt: int = 0
    rejected: list[Rejected] = field(default_factory=list)
    text: str = ""  # the accepted draft
    accepted: bool = False
    usage: Usage = field(default_factory=Usage)

    def request(self, base: Compose) -> Compose:
        """``base`` for this try: with the last refused draft and its reasons, if any."""
        last = self.rejected[-1] if self.rejected else None
        return Compose(
            turn=base.turn,
            kind=base.kind,
            attempt=self.attempt,
            intent=base.intent,
            reply_to=base.reply_to,
            room=base.room,
            question=base.question,
            opponent=base.opponent,
            draft=last.text if last else "",
            redraft=list(last.reasons) if last else [],
        )

    async def try_once(self, post: Post, base: Compose, *, turn: int, sender: str) -> Outcome:
        try:
            reply = await post.request(self.speaker, self.request(base), turn=turn, sender=sender)
        except BadModelReply as err:
            text, reasons = "", [f"the model's reply could not be used ({err})"]
        else:
            self.usage = self.usage + reply.usage
            text, reasons = reply.text, self.check(reply.text)
        if not reasons:
            self.text, self.accepted = text, True
            return Outcome.ACCEPTED
        self.rejected.append(Rejected(self.attempt, text, reasons))
        self.attempt += 1
        return Outcome.REDRAFT if self.attempt < self.tries else Outcome.FAILED
