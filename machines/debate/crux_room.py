"""The crux-room machine: two personas, one disputed claim, until the crux surfaces.

    open -> exchange -> (exchange | check -> (exchange | extract) | extract) -> closed

Two opening statements, then alternating exchanges of 2-3 sentences, up to ``max_exchanges``
(20); after the third exchange an exit check every second one asks whether the crux has
surfaced (both named the point they cannot agree on, one changed their mind with a reason, or
both called it an irreducible difference of values or time horizon); then the card is
extracted. Drafts are checked and regenerated as in the main chat.
"""

from __future__ import annotations

from enum import StrEnum

from loom_sim.machines.engine import MACHINES, MachineSpec
from loom_sim.machines.engine import transition as _t

ACTIVE = ("open", "exchange", "check", "extract")
STATES = (*ACTIVE, "closed", "error")


class Trigger(StrEnum):
    REDRAFT = "redraft"
    NEXT_OPENING = "next_opening"
    OPENED = "opened"
    SPOKE = "spoke"
    CHECK_DUE = "check_due"
    GO_ON = "go_on"
    SURFACED = "surfaced"
    CAPPED = "capped"
    CARDED = "carded"
    FAIL = "fail"


CRUX_ROOM = MACHINES.add(
    MachineSpec(
        name="crux_room",
        summary="a crux room: openings, exchanges, exit checks, the card",
        order=30,
        triggers=Trigger,
        states=STATES,
        initial="open",
        final=("closed", "error"),
        table=(
            _t(Trigger.REDRAFT, "open", "open", "failed its checks, tries left"),
            _t(Trigger.REDRAFT, "exchange", "exchange", "failed its checks, tries left"),
            _t(Trigger.NEXT_OPENING, "open", "open", "the second opening"),
            _t(Trigger.OPENED, "open", "exchange"),
            _t(Trigger.SPOKE, "exchange", "exchange"),
            _t(Trigger.CHECK_DUE, "exchange", "check", "after the 3rd, every 2nd exchange"),
            _t(Trigger.GO_ON, "check", "exchange", "not surfaced"),
            _t(Trigger.SURFACED, "check", "extract"),
            _t(Trigger.CAPPED, "exchange", "extract", "max exchanges"),
            _t(Trigger.CARDED, "extract", "closed", "a valid card, or its rejection recorded"),
            _t(Trigger.FAIL, ACTIVE, "error"),
        ),
        descriptions={
            "open": "each persona's opening statement on the disputed claim",
            "exchange": "the next persona answers the last message, checked like any draft",
            "check": "the exit check: has the crux surfaced?",
            "extract": "the crux card, its citations validated, asked again with the reasons",
            "closed": "the card (or why there is none) is in cards.json",
            "error": "a model call failed after its retries; the room resumes where it stopped",
        },
    )
)
