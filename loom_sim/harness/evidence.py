"""Whether the program did what the user asked of it: an ability is credited on evidence only.

Why: typing ``/diagnose`` at a program is not using an ability — a chat model answers it with
small talk, and a scorecard that counted the typing would say the job's tools were used. An
ability counts as used in a turn only when the *target* shows it was: an event of its own that
names the ability (``"command"`` or ``"ability"``, not an error), a new file it made in that
turn, or a reply matching the ability's ``evidence`` pattern from the pack. A target that offers
no abilities (``offers_abilities: false``, and every ``--target KIND:ADDRESS``) earns none.
"""

from __future__ import annotations

import re

from loom_sim.harness.messages import Action, TargetReply
from loom_sim.harness.packs.spec import Ability


def ability_evidence(action: Action, reply: TargetReply, offered: list[Ability]) -> str | None:
    """What the target left that shows the turn's command worked, or None."""
    if action.kind != "command" or not action.name or reply.failed:
        return None
    ability = next((a for a in offered if a.name == action.name), None)
    if ability is None:
        return None  # not an ability this target offers: nothing to credit
    for event in reply.events:
        named = {event.get("command"), event.get("ability")}
        if action.name in named and event.get("ok") is not False and event.get("type") != "error":
            return f"event {event.get('type') or 'event'} ({action.name})"
    made = [a for a in reply.artifacts if a.error is None]
    if made:
        return f"new file {made[0].path}"
    if ability.evidence and (found := re.search(ability.evidence, reply.text)):
        start = reply.text.rfind("\n", 0, found.start()) + 1
        line = reply.text[start:].split("\n", 1)[0].strip()
        return f"reply: {line[:120]}"
    return None
