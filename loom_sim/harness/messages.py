"""What the simulated-user harness's actors say: the simulated user's plans and reflections,
the program under test's replies, the evaluator's verdicts."""

from __future__ import annotations

from typing import Annotated, Any

import msgspec

from loom_sim.core.messages import Body, Request, Tell
from loom_sim.messages import WindowTurn
from loom_sim.models.base import Usage

# ─── simulated-user harness ─────────────────────────────────────────────────


class Action(msgspec.Struct, frozen=True):
    """What a simulated user does in a turn: an ``utterance`` (natural language) or a
    ``command`` (``name`` and ``args``); ``text`` is the line as typed."""

    kind: str  # utterance | command
    text: str
    name: str | None = None
    args: list[str] = msgspec.field(default_factory=list)


class PlannedAction(Body, frozen=True):
    action: Action
    gave_up: bool = False
    reason: str = ""  # why it gave up, or how the reply had to be read
    raw: str = ""  # the model's answer as it came
    usage: Usage = msgspec.field(default_factory=Usage)
    attempts: int = 1

    def summary(self) -> str:
        text = ("gives up: " + self.reason) if self.gave_up else self.action.text
        return text


class PlanAction(Request[PlannedAction], frozen=True):
    """Simulated user: what do you do next? ``feedback``: why the last draft was refused."""

    turn: int
    attempt: int = 0
    feedback: str | None = None

    def summary(self) -> str:
        text = f"attempt {self.attempt}" + (f", after: {self.feedback}" if self.feedback else "")
        return text


class Observed(Tell, frozen=True):
    """To the simulated user: this turn happened (what you did, what came back, how you felt)."""

    turn: int
    action: Action
    reply: str
    signals: list[str] = msgspec.field(default_factory=list)
    failed: bool = False
    confidence: float | None = None
    next_hypothesis: str = ""

    def summary(self) -> str:
        text = f"turn {self.turn}: {self.action.text}" + (" (failed)" if self.failed else "")
        return text


class Artifact(msgspec.Struct, frozen=True):
    """A file the target produced, measured by the harness (never taken from the target)."""

    path: str  # relative to the session's bundle
    quality: float | None = None  # imagery.quality(...).overall, for images
    measures: dict[str, float] = msgspec.field(default_factory=dict)
    error: str | None = None  # why it could not be measured


class TargetReply(Body, frozen=True):
    """What came back from the target for one line, with what it left behind."""

    text: str
    ended_by: str  # prompt | idle | timeout | complete
    duration_s: float = 0.0
    truncated: bool = False
    received_bytes: int = 0
    screen: list[str] = msgspec.field(default_factory=list)
    events: list[dict[str, Any]] = msgspec.field(default_factory=list)  # new in the event file
    artifacts: list[Artifact] = msgspec.field(default_factory=list)  # new files
    failed: bool = False
    failure: str | None = None
    usage: Usage = msgspec.field(default_factory=Usage)  # a model target's
    events_offset: int = 0  # how far the event file has been read
    notes: list[dict[str, Any]] = msgspec.field(default_factory=list)
    continuation: str | None = None  # the continuation prompt the program stopped at, if any

    def summary(self) -> str:
        text = f"({self.ended_by}{', failed' if self.failed else ''}) {self.text}"
        return text


class StartTarget(Request[TargetReply], frozen=True):
    """Target: come up (its greeting is the reply)."""

    turn: int = -1


class Dispatched(Body, frozen=True):
    turn: int


class Dispatch(Request[Dispatched], frozen=True):
    """Target: type this line (the reply is collected by :class:`Collect`)."""

    turn: int
    text: str

    def summary(self) -> str:
        text = self.text
        return text


class Collect(Request[TargetReply], frozen=True):
    """Target: the reply to the line dispatched, once it has ended and the event delta window
    has closed."""

    turn: int


class TargetStopped(Body, frozen=True):
    pass


class StopTarget(Request[TargetStopped], frozen=True):
    turn: int = -1


class Reflection(msgspec.Struct, frozen=True):
    """One turn's open pondering, a fixed contract."""

    turn: int
    action_taken: dict[str, Any]
    observed_signals: list[str]
    what_worked: str
    what_failed: str
    open_questions: list[str]
    next_hypothesis: str
    confidence: Annotated[float, msgspec.Meta(ge=0.0, le=1.0)]


class Reflected(Body, frozen=True):
    reflection: Reflection
    status: str  # valid | repaired | invalid (schema-checked; invalid after every re-ask)
    attempts: int = 1
    error: str | None = None
    raw: str = ""
    usage: Usage = msgspec.field(default_factory=Usage)

    def summary(self) -> str:
        text = f"{self.status}, confidence {self.reflection.confidence}: "
        text += self.reflection.next_hypothesis
        return text


class Reflect(Request[Reflected], frozen=True):
    """Reflector: one reflection record on this turn."""

    turn: int
    action: Action
    reply: str
    signals: list[str] = msgspec.field(default_factory=list)
    failed: bool = False

    def summary(self) -> str:
        text = f"turn {self.turn}: {self.action.text}"
        return text


class CriterionResult(msgspec.Struct, frozen=True):
    id: str
    met: bool | None  # None: the evaluator could not say
    detail: str = ""
    judged: bool = False


class Evaluation(Body, frozen=True):
    results: list[CriterionResult]
    progress: float  # weighted share of the criteria met, 0..1
    ok: bool = True
    error: str | None = None
    usage: Usage = msgspec.field(default_factory=Usage)

    def summary(self) -> str:
        text = f"progress {self.progress}: " + ", ".join(f"{r.id}={r.met}" for r in self.results)
        return text


class AttributedArtifact(msgspec.Struct, frozen=True):
    artifact: Artifact
    ability: str | None  # the command of the turn that produced it


class Evaluate(Request[Evaluation], frozen=True):
    """Evaluator: how far is the goal, by the success criteria, after this turn? Carries what
    is new since the last evaluation; the evaluator keeps the tally."""

    turn: int
    window: list[WindowTurn]  # the last turns, for judged criteria
    events: list[dict[str, Any]] = msgspec.field(default_factory=list)  # new events
    artifacts: list[AttributedArtifact] = msgspec.field(default_factory=list)  # new files
    reply: str = ""  # this turn's reply

    def summary(self) -> str:
        text = f"turn {self.turn}: {len(self.events)} events, {len(self.artifacts)} files"
        return text
