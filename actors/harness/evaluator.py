"""The evaluator: how far the simulated user is from its goal, by the scenario's criteria.

Protocol: ``Evaluate`` -> ``Evaluation``. A separate model role from the user (an actor
must not grade itself). Measured criteria — artifacts, events, replies —
are counted in code from what the target produced; judged criteria go to the evaluator model
through the judge call (:func:`loom_sim.judging.judge.judge`: fenced transcript, structured
output, tolerant parsing, bounded retries). A judged criterion, once met, stays met: the user
reached it, whatever later turns did — but only a *supported* "met" counts: its evidence must
quote the transcript or name an event or file the session has
(:func:`loom_sim.judging.support.support`, checked against the records), so the rubric's own
placeholder, or a "met" before anything happened, is not met. When the model gives no usable
answer the criterion is unknown (``met: null``) and counts as not met; the evaluation says why.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from loom_sim.actors.base import Actor, ActorContext, ProtocolError

from loom_sim.harness.messages import (
    AttributedArtifact,
    CriterionResult,
    Evaluate,
    Evaluation,
)
from loom_sim.harness.packs import (
    ArtifactsCriterion,
    Criterion,
    EventsCriterion,
    JudgedCriterion,
    OutputCriterion,
    Scenario,
)
from loom_sim.judging.judge import judge
from loom_sim.judging.support import support
from loom_sim.messages import Body, Judge
from loom_sim.models.base import ModelClient, Usage
from loom_sim.plugins.actors import actor
from loom_sim.seeds import SeedSource

RUBRIC_VERSION = "evaluator-2"


@dataclass
class Tally:
    """Everything the session produced so far, as the measured criteria count it."""

    events: list[dict[str, Any]] = field(default_factory=list)
    artifacts: list[AttributedArtifact] = field(default_factory=list)
    replies: list[str] = field(default_factory=list)

    def add(self, request: Evaluate) -> None:
        self.events += request.events
        self.artifacts += request.artifacts
        self.replies.append(request.reply)


@dataclass
class EvaluatorSetup:
    scenario: Scenario
    met: list[str] = field(default_factory=list)  # judged criteria met before (a resume's)
    tally: Tally = field(default_factory=Tally)  # what earlier turns produced (a resume's)


def measured(criterion: Criterion, tally: Tally) -> CriterionResult:
    """A criterion counted from the session's artifacts, events or replies."""
    if isinstance(criterion, ArtifactsCriterion):
        found = [a for a in tally.artifacts if _counts(a, criterion)]
        detail = f"{len(found)} of {criterion.min} images"
        if criterion.by:
            detail += " by " + "|".join(criterion.by)
        if criterion.min_quality is not None:
            detail += f" with quality ≥ {criterion.min_quality}"
        return CriterionResult(criterion.id, len(found) >= criterion.min, detail)
    if isinstance(criterion, EventsCriterion):
        hits = [
            e
            for e in tally.events
            if e.get("type") == criterion.event
            and all(e.get(k) == v for k, v in criterion.where.items())
        ]
        detail = f"{len(hits)} of {criterion.min} {criterion.event} events"
        return CriterionResult(criterion.id, len(hits) >= criterion.min, detail)
    if isinstance(criterion, OutputCriterion):
        pattern = re.compile(criterion.pattern)
        matching = sum(1 for reply in tally.replies if pattern.search(reply))
        detail = f"{matching} of {criterion.min} replies match"
        return CriterionResult(criterion.id, matching >= criterion.min, detail)
    raise TypeError(type(criterion).__name__)


def _counts(item: AttributedArtifact, criterion: ArtifactsCriterion) -> bool:
    artifact = item.artifact
    if artifact.error is not None or artifact.quality is None:
        return False  # not an image the harness could measure
    if criterion.by and item.ability not in criterion.by:
        return False
    return criterion.min_quality is None or artifact.quality >= criterion.min_quality


def judged_schema(criteria: list[JudgedCriterion]) -> dict[str, Any]:
    ids = [c.id for c in criteria]
    return {
        "type": "object",
        "properties": {
            "met": {
                "type": "object",
                "properties": {i: {"type": "boolean"} for i in ids},
                "required": ids,
            },
            "evidence": {"type": "string", "maxLength": 120},
        },
        "required": ["met", "evidence"],
    }


def judged_rubric(scenario: Scenario, criteria: list[JudgedCriterion]) -> str:
    lines = [
        "The transcript is a session of a user with a program: PERSONA lines are what the user "
        "typed, INTERLOCUTOR lines what the program answered.",
        f"The user's goal: {scenario.goal}",
        "For each statement below, decide whether the transcript shows it is true by now. Be "
        "strict: true only with clear evidence in the transcript.",
    ]
    lines += [f"- {c.id}: {c.text}" for c in criteria]
    lines.append(
        'Answer {"met": {ID: true or false, ...}, "evidence": "..."} where evidence quotes, in '
        "double quotes, the program's words that show it, or names the event or file that "
        "does. A statement without such evidence is not met."
    )
    return "\n".join(lines)


@actor("evaluator", summary="progress towards a scenario's success criteria", order=63)
class Evaluator(Actor):
    role = "evaluator"

    def __init__(self, model: ModelClient, seeds: SeedSource, setup: EvaluatorSetup):
        self._model = model
        self._seeds = seeds
        self.scenario = setup.scenario
        self.met_before: set[str] = set(setup.met)
        self.tally = setup.tally
        self._judged = [
            c for c in setup.scenario.success_criteria if isinstance(c, JudgedCriterion)
        ]

    @classmethod
    def from_context(cls, context: ActorContext) -> Evaluator:
        if not isinstance(context.settings, EvaluatorSetup):
            raise ProtocolError("the evaluator needs an EvaluatorSetup as its settings")
        return cls(context.model("evaluator"), context.seeds, context.settings)

    async def handle(self, body: Body) -> Body | None:
        match body:
            case Evaluate():
                return await self._evaluate(body)
        raise TypeError(f"the evaluator cannot handle {type(body).__name__}")

    def _support(self, evidence: str, request: Evaluate) -> str | None:
        """What of the session the evidence quotes or names (the transcript judged, the events
        and files so far), or None."""
        texts = [t for w in request.window for t in (w.persona, w.interlocutor)]
        files = [a.artifact.path for a in self.tally.artifacts]
        return support(evidence, texts, self.tally.events, files)

    async def _evaluate(self, request: Evaluate) -> Evaluation:
        self.tally.add(request)
        by_id: dict[str, CriterionResult] = {}
        usage, ok, error = Usage(), True, None
        pending = [c for c in self._judged if c.id not in self.met_before]
        for criterion in self._judged:
            if criterion.id in self.met_before:
                by_id[criterion.id] = CriterionResult(criterion.id, True, "met earlier", True)
        if pending and request.window:
            judgement = await judge(
                self._model,
                self._seeds,
                Judge(
                    turn=request.turn,
                    rubric=judged_rubric(self.scenario, pending),
                    window=request.window,
                    schema=judged_schema(pending),
                    rubric_id=RUBRIC_VERSION,
                ),
                max_tokens=200,
            )
            usage = judgement.usage
            verdicts = judgement.parsed.get("met") if judgement.ok else None
            if not isinstance(verdicts, dict):
                ok, error = False, judgement.error or "the evaluator's answer had no `met` object"
                verdicts = {}
            evidence = str(judgement.parsed.get("evidence", "")) if judgement.ok else ""
            backing = self._support(evidence, request) if evidence else None
            for criterion in pending:
                value = verdicts.get(criterion.id)
                met = value if isinstance(value, bool) else None
                detail = evidence[:300]
                if met and backing is None:
                    met = False
                    detail = f"unsupported: {detail!r} quotes nothing and names nothing here"
                if met:
                    self.met_before.add(criterion.id)
                    detail = f"{detail} ({backing})"
                by_id[criterion.id] = CriterionResult(criterion.id, met, detail, True)
        elif pending:
            by_id.update(
                {c.id: CriterionResult(c.id, False, "nothing to judge yet", True) for c in pending}
            )
        for each in self.scenario.success_criteria:
            if not isinstance(each, JudgedCriterion):
                by_id[each.id] = measured(each, self.tally)
        results = [by_id[c.id] for c in self.scenario.success_criteria]
        weights = {c.id: c.weight for c in self.scenario.success_criteria}
        progress = sum(weights[r.id] for r in results if r.met) / sum(weights.values())
        return Evaluation(results, round(progress, 4), ok, error, usage)
