"""The rollout machine: one conversation, turn by turn, as a table.

    init -> plan -> act -> observe -> monitor -> score -> (plan ... | done)      error from any

The table says where each decision leads; the decisions are the handlers' (in
``loom_sim.rollout.runtime.rollout``). Leaving ``act``, the handler weighs the repetition guard's
verdict on the candidate: a rejected candidate with retries left is ``reprompt`` (``act ->
act``, with a re-prompt), anything else ``accepted``, so a rejected draft never reaches the
interlocutor.
"""

from __future__ import annotations

from enum import StrEnum

from loom_sim.machines.engine import MACHINES, MachineSpec
from loom_sim.machines.engine import transition as _t

ACTIVE = ("init", "plan", "act", "observe", "monitor", "score")
STATES = (*ACTIVE, "done", "error")


class Trigger(StrEnum):
    START = "start"
    PROMPT_READY = "prompt_ready"
    REPROMPT = "reprompt"
    ACCEPTED = "accepted"
    EXCHANGED = "exchanged"
    OBSERVED = "observed"
    NEXT_TURN = "next_turn"
    FINISH = "finish"
    TURN_FAILED = "turn_failed"
    FAIL = "fail"


ROLLOUT = MACHINES.add(
    MachineSpec(
        name="rollout",
        summary="one persona conversation, turn by turn",
        order=10,
        triggers=Trigger,
        states=STATES,
        initial="init",
        final=("done", "error"),
        table=(
            _t(Trigger.START, "init", "plan"),
            _t(Trigger.PROMPT_READY, "plan", "act"),
            _t(Trigger.REPROMPT, "act", "act", "rejected & retries left"),  # vary your output
            _t(Trigger.ACCEPTED, "act", "observe", "accepted, or out of retries"),
            _t(Trigger.EXCHANGED, "observe", "monitor"),
            _t(Trigger.OBSERVED, "monitor", "score"),
            _t(Trigger.NEXT_TURN, "score", "plan"),
            # from init: a resumed rollout that is already complete
            _t(Trigger.FINISH, ("score", "init"), "done"),
            # an unusable reply: counted, and the turn is tried again
            _t(Trigger.TURN_FAILED, ("act", "observe"), "score"),
            _t(Trigger.FAIL, ACTIVE, "error"),
        ),
        descriptions={
            "init": "actors spawned; a resumed rollout rebuilt from its `turns.jsonl`",
            "plan": "the assembler's plan for this turn (phase, intensities, injection, any "
            "pending emergency)",
            "act": "the persona's candidate; the monitor's verdict guards the way out (banned "
            "and formulaic patterns, capitulation phrases, and the stagnation and convergence "
            "checks of the candidate as if sent; after a redirect, whether the candidate still "
            "continues the loop): a rejected draft loops `act -> act` with a re-prompt — the "
            "emergency redirect for a loop, a stronger one for a message that still loops after "
            "it — while retries are left, so it never reaches the interlocutor; one still "
            "looping out of retries is sent and flagged `sent_despite_redirect`",
            "observe": "the responder (the interlocutor, or an adversary) answers the committed "
            "message",
            "monitor": "the committed exchange joins the monitor's windows",
            "score": "trigger conditions judged, usage and cost counted, the turn appended to "
            "`turns.jsonl` (with the prompt in force: its blocks on the turn that "
            "injected them, a reference on the others), stop conditions checked",
            "done": "max turns, the last phase ended (phase-gated), cost or runtime budget, "
            "consecutive failed turns",
            "error": "a model call failed after its retries, or an actor crashed; completed "
            "turns are kept",
        },
    )
)


def diagram(fmt: str = "mermaid") -> str:
    return ROLLOUT.diagram(fmt)
