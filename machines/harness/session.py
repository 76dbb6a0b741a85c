"""The harness machine: one simulated user's session with a target program, as a table.

    init -> start_chat -> import_inputs -> plan_turn -> act -> observe -> reflect
         -> score_checkpoint -> (plan_turn ... | done)                  error from any

The states and transitions, plus two decisions the handlers make (in
``loom_sim.harness.session``): leaving ``plan_turn``, a draft the simulator audit flags (a role
flip, an invented file, the last action repeated) is asked for again while retries are left
(``plan_turn -> plan_turn``), and a user who gives up ends the session there. Why a session
stopped is a ``StopReason`` of ``loom_sim.harness.stop``, recorded in its summary.
"""

from __future__ import annotations

from enum import StrEnum

from loom_sim.machines.engine import MACHINES, MachineSpec
from loom_sim.machines.engine import transition as _t

ACTIVE = (
    "init",
    "start_chat",
    "import_inputs",
    "plan_turn",
    "act",
    "observe",
    "reflect",
    "score_checkpoint",
)
STATES = (*ACTIVE, "done", "error")


class Trigger(StrEnum):
    START = "start"
    CHAT_LIVE = "chat_live"
    INPUTS_READY = "inputs_ready"
    REPLAN = "replan"
    ACTION_CHOSEN = "action_chosen"
    GAVE_UP = "gave_up"
    DISPATCHED = "dispatched"
    WINDOW_CLOSED = "window_closed"
    REFLECTED = "reflected"
    NEXT_TURN = "next_turn"
    FINISH = "finish"
    OUT_OF_TIME = "out_of_time"
    FAIL = "fail"


HARNESS = MACHINES.add(
    MachineSpec(
        name="harness",
        summary="one simulated user driving a target program, turn by turn",
        order=20,
        triggers=Trigger,
        states=STATES,
        initial="init",
        final=("done", "error"),
        table=(
            _t(Trigger.START, "init", "start_chat", "scenario valid"),
            _t(Trigger.FINISH, "init", "done", "resumed session already stopped"),
            _t(Trigger.CHAT_LIVE, "start_chat", "import_inputs", "target and events live"),
            _t(Trigger.INPUTS_READY, "import_inputs", "plan_turn"),
            _t(Trigger.REPLAN, "plan_turn", "plan_turn", "audit flagged & retries left"),
            _t(Trigger.ACTION_CHOSEN, "plan_turn", "act"),
            _t(Trigger.GAVE_UP, "plan_turn", "done", "user gave up"),
            _t(Trigger.DISPATCHED, "act", "observe"),
            _t(Trigger.WINDOW_CLOSED, "observe", "reflect", "event delta window closed"),
            _t(Trigger.REFLECTED, "reflect", "score_checkpoint"),
            _t(Trigger.NEXT_TURN, "score_checkpoint", "plan_turn", "stop condition unmet"),
            _t(Trigger.FINISH, "score_checkpoint", "done", "success, budget or max turns"),
            _t(Trigger.OUT_OF_TIME, ACTIVE, "done", "max_runtime reached mid-turn"),
            _t(Trigger.FAIL, ACTIVE, "error"),
        ),
        descriptions={
            "init": "the scenario validated; a resumed session rebuilt from its `turns.jsonl`",
            "start_chat": "the target started (a program in a pseudo-terminal, an HTTP endpoint, "
            "a model); its greeting read",
            "import_inputs": "the scenario's files (copied into the bundle when the run was "
            "planned) handed to the target by its setup lines (`/use ...`)",
            "plan_turn": "the simulated user chooses an utterance or a command; the simulator "
            "audit re-asks a flagged draft while retries are left; a user out of patience gives up",
            "act": "the line is typed (or sent)",
            "observe": "the reply read to its end (prompt, idle window or timeout), the new "
            "events and files collected",
            "reflect": "one reflection record, schema-checked",
            "score_checkpoint": "the evaluator's progress, usage and cost counted, the turn "
            "appended to `turns.jsonl`, stop conditions checked",
            "done": "success, max turns, cost or runtime budget, consecutive failures, or the "
            "user gave up",
            "error": "the target could not go on (it exited, the server refused) or a model "
            "failed for good; completed turns are kept",
        },
    )
)
