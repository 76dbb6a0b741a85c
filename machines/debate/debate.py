"""The debate machine: the main chat of a group debate, turn by turn, with its crux rooms.

    init -> assign -> speak -> commit -> (assign | detect -> (assign | room -> assign))
                        ^__| redraft                                  done | error

The decisions are the handlers' (``loom_sim.debate.runtime.run``): the moderator names the speaker
and intent in ``assign`` (or the budget is spent: ``finish``); a draft that fails its checks
loops ``speak -> speak`` with the reasons while tries are left, and is recorded as a failed
turn when they run out — never skipped; every ``every`` messages ``detect`` runs a round, and
the rooms it opens run in ``room`` (the crux-room machine,
:mod:`loom_sim.debate.machines.crux_room`) while the main chat waits.
"""

from __future__ import annotations

from enum import StrEnum

from loom_sim.machines.engine import MACHINES, MachineSpec
from loom_sim.machines.engine import transition as _t

ACTIVE = ("init", "assign", "speak", "commit", "detect", "room")
STATES = (*ACTIVE, "done", "error")


class Trigger(StrEnum):
    START = "start"
    RESUME_ROUND = "resume_round"
    RESUME_ROOM = "resume_room"
    ASSIGNED = "assigned"
    REDRAFT = "redraft"
    ACCEPTED = "accepted"
    OUT_OF_TRIES = "out_of_tries"
    NEXT = "next"
    ROUND_DUE = "round_due"
    SPAWN = "spawn"
    NEXT_ROOM = "next_room"
    FINISH = "finish"
    FAIL = "fail"


DEBATE = MACHINES.add(
    MachineSpec(
        name="debate",
        summary="a group debate: the main chat, detection rounds and crux rooms",
        order=20,
        triggers=Trigger,
        states=STATES,
        initial="init",
        final=("done", "error"),
        table=(
            _t(Trigger.START, "init", "assign"),
            _t(Trigger.RESUME_ROUND, "init", "detect", "a round was due when it stopped"),
            _t(Trigger.RESUME_ROOM, "init", "room", "a room was open when it stopped"),
            _t(Trigger.ASSIGNED, "assign", "speak"),
            _t(Trigger.REDRAFT, "speak", "speak", "failed its checks, tries left"),
            _t(Trigger.ACCEPTED, "speak", "commit"),
            _t(Trigger.OUT_OF_TRIES, "speak", "commit", "recorded as a failed turn"),
            _t(Trigger.NEXT, ("commit", "detect", "room"), "assign"),
            _t(Trigger.ROUND_DUE, "commit", "detect", "every N messages"),
            _t(Trigger.SPAWN, "detect", "room", "the spawn rule holds"),
            _t(Trigger.NEXT_ROOM, "room", "room", "another room opened in the round"),
            _t(Trigger.FINISH, ("init", "assign"), "done", "budget spent, or failures in a row"),
            _t(Trigger.FAIL, ACTIVE, "error"),
        ),
        descriptions={
            "init": "actors spawned; a resumed debate rebuilt from its files",
            "assign": "the moderator names the speaker, the intent and the message replied to",
            "speak": "the debater drafts; the draft is checked against its intent, the banned "
            "patterns and the persona's forbidden phrases",
            "commit": "the turn (said or failed) appended to messages.jsonl and told to all",
            "detect": "cheap signals gate the detector model; the registry's spawn rule",
            "room": "each room opened runs the crux-room machine while the main chat waits",
            "done": "the message budget spent, or too many failed turns in a row",
            "error": "a model call failed after its retries, or an actor crashed; every "
            "completed message is kept and `--resume` continues",
        },
    )
)
