"""What a scorer is, and what it sees of a turn.

A scorer turns one recorded turn into a :class:`~loom_sim.store.records.Score` (0..1, higher is
better; ``None`` with the reason when it cannot say). It reads the turn through a
:class:`TurnView`: the record and its neighbours, the config, the post-hoc signals, and three
ways to ask — a part of the turn's *joint* judge call (the turn rubric, the target turn rubric:
every part the turn's scorers declare, asked in one call over the window), a judge call of its
own (or one shared with other scorers), and questions to the persona itself. Scorers are
registered with :func:`loom_sim.plugins.scorers.scorer` and run by the engine in registry order.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

from loom_sim.config.spec import LoomConfig, PhaseSpec, ScorerSettings
from loom_sim.judging.prompts import Rubric
from loom_sim.messages import Judgement, WindowTurn
from loom_sim.store.records import Score, TurnRecord
from loom_sim.store.scaffolding import Instructions, instructions_at

if TYPE_CHECKING:  # types only: registering a scorer (validating a config) loads neither
    from loom_sim.assembler import Assembler, TurnPlan
    from loom_sim.signals.analysis import TurnSignals

#: (rubric id, rubric, JSON schema, window or None for the turn's) -> the judge's answer


class AskJudge(Protocol):
    """(rubric id, rubric, schema, window or None for the turn's) -> the judgement. ``slot``
    names the llama.cpp slot an in-process judge answers in (default: the rubric id's):
    calls that share a slot extend each other's prompts."""

    def __call__(
        self,
        rubric_id: str,
        rubric: Rubric,
        schema: dict[str, Any],
        window: list[WindowTurn] | None,
        /,
        *,
        slot: str | None = None,
    ) -> Awaitable[Judgement]: ...


#: The slot of every turn's joint call, whichever parts it holds this turn.
JOINT_SLOT = "joint"
#: questions -> the persona's answers, in order ("(no answer)" where it gave none)
AskPersona = Callable[[list[str]], Awaitable[list[str]]]


@dataclass(frozen=True)
class JointPart:
    """A scorer's part of a turn's joint judge call: its rubric, and the properties it adds to
    the answer's schema (an object schema; every part shares the answer's one "reason").

    The parts the scorers of a turn declare (:meth:`Scorer.joint`) are asked in one call over
    the turn's window: the judge reads the window once for all of them, and writes one answer."""

    id: str
    rubric: Rubric
    schema: dict[str, Any]


REASON = 'Give a one-sentence "reason".'


def joint_rubric(parts: list[JointPart]) -> Rubric:
    """The parts' briefs and questions one after another, and the one reason asked last."""
    brief = "\n\n".join(p.rubric.brief for p in parts if p.rubric.brief)
    questions = [p.rubric.question for p in parts if p.rubric.question]
    return Rubric(brief, "\n\n".join([*questions, REASON]))


def joint_schema(parts: list[JointPart]) -> dict[str, Any]:
    """An object with every part's properties, in part order, and a "reason" last."""
    properties: dict[str, Any] = {}
    required: list[str] = []
    for part in parts:
        for name, spec in part.schema.get("properties", {}).items():
            if name != "reason" and name not in properties:
                properties[name] = spec
        required += [
            n for n in part.schema.get("required", ()) if n != "reason" and n not in required
        ]
    properties["reason"] = {"type": "string"}
    return {"type": "object", "properties": properties, "required": [*required, "reason"]}


@dataclass
class TurnView:
    """One turn as a scorer sees it. Earlier turns carry the scores already given this pass."""

    index: int  # position in ``records``
    records: list[TurnRecord]
    window: list[TurnRecord]  # the judge's window, ending at this turn (it moves in steps)
    config: LoomConfig
    assembler: Assembler  # the run's, for the turn's prescribed plan
    phase: PhaseSpec
    signals: TurnSignals | None  # post-hoc signals of this turn, when a scorer asked for them
    probe_turns: frozenset[int]  # turns at which the persona is asked about itself
    persona_model: str
    ask_judge: AskJudge = field(repr=False)
    ask_persona: AskPersona | None = field(repr=False)  # None: the model cannot be asked again
    planned_turns: int = 0  # the turns the run was planned for (0: as many as were recorded)
    window_size: int = 0  # judge_window: the most turns ``window`` holds (0: as many)
    #: The parts of this turn's joint judge call, by id (set by the engine from the scorers'
    #: :meth:`Scorer.joint`).
    joint_parts: dict[str, JointPart] = field(default_factory=dict, repr=False)
    _shared: dict[str, Judgement] = field(default_factory=dict, repr=False)
    _parts: dict[str, JointPart] = field(default_factory=dict, repr=False)

    @property
    def record(self) -> TurnRecord:
        return self.records[self.index]

    @property
    def turn(self) -> int:
        return self.record.turn

    @property
    def planned(self) -> int:
        """N of the activation rules: the planned length of the conversation."""
        return self.planned_turns or len(self.records)

    @property
    def is_last(self) -> bool:
        """The last recorded turn: the end of the conversation as far as scoring can see."""
        return self.index == len(self.records) - 1

    def plan(self) -> TurnPlan:
        """What the assembler prescribed for this turn (with the triggers fired by then)."""
        return self.assembler.plan(self.record.turn, self.record.fired)

    def instructions(self) -> Instructions:
        """What the persona was actually told for this turn: the prompt in force (a full
        injection's, possibly turns old) and the notes sent with the message. Judge
        fidelity and trajectory against this, not :meth:`plan`."""
        return instructions_at(self.records, self.index, self.config, self.assembler)

    @property
    def recent(self) -> list[TurnRecord]:
        """The last ``judge_window`` turns, ending at this one: what a deterministic measure
        over "the window" reads. The judge's own window moves in steps (it may hold fewer
        turns), a measure's need not."""
        if not self.window_size:
            return self.records[: self.index + 1]
        return self.records[max(0, self.index - self.window_size + 1) : self.index + 1]

    @property
    def window_turns(self) -> list[WindowTurn]:
        return [WindowTurn(r.turn, r.persona, r.interlocutor) for r in self.window]

    async def turn_rubric(self) -> Judgement:
        """The shared turn rubric's judgement (persona adherence, naturalness, initiative,
        consistency and the expressed intensities), asked at most once per turn: in the turn's
        joint call when a scorer declared its part (:class:`TurnRubricScorer`), else alone."""
        return await self.joint_answer(self.turn_part())

    def part(self, part_id: str, build: Callable[[], JointPart]) -> JointPart:
        """This turn's part ``part_id``, built once however many scorers declare and read it."""
        if part_id not in self._parts:
            self._parts[part_id] = build()
        return self._parts[part_id]

    def turn_part(self) -> JointPart:
        """The turn rubric as a part of the joint call."""
        from loom_sim.judging import rubrics

        return self.part(
            "turn",
            lambda: JointPart(
                "turn",
                rubrics.turn_rubric(self.config, self.record.turn, self.phase),
                rubrics.turn_schema(self.config),
            ),
        )

    async def joint_answer(self, part: JointPart) -> Judgement:
        """The judge's answer to ``part``: the turn's joint call (every declared part, one
        call, made when the first of them is asked for), or a call of its own when no scorer
        declared it. The answer holds the other parts' properties too; read your own."""
        if part.id not in self._shared:
            parts = list(self.joint_parts.values()) if part.id in self.joint_parts else [part]
            judgement = await self.ask_judge(
                "+".join(p.id for p in parts),
                joint_rubric(parts),
                joint_schema(parts),
                None,
                slot=JOINT_SLOT,
            )
            for answered in parts:
                self._shared[answered.id] = judgement
        return self._shared[part.id]

    async def judge(
        self,
        rubric_id: str,
        rubric: Rubric | str,
        schema: dict[str, Any],
        window: list[WindowTurn] | None = None,
    ) -> Judgement:
        """A judge call of the scorer's own, over the turn's window unless another is given.

        ``rubric`` is a :class:`~loom_sim.judging.prompts.Rubric` (a brief before the
        transcript, the question after it), or a text: then all of it is the question. Put
        what is the same at every turn in the brief: the judge reads it once per rollout."""
        if isinstance(rubric, str):
            rubric = Rubric("", rubric)
        return await self.ask_judge(rubric_id, rubric, schema, window)

    async def shared_judge(
        self,
        rubric_id: str,
        rubric: Rubric | str,
        schema: dict[str, Any],
        window: list[WindowTurn] | None = None,
    ) -> Judgement:
        """A judge call several scorers read (DCS, HES and SIS share one), asked at most once
        per turn: the first asker's call is the one made, keyed by ``rubric_id``."""
        if rubric_id not in self._shared:
            self._shared[rubric_id] = await self.judge(rubric_id, rubric, schema, window)
        return self._shared[rubric_id]


class Scorer(ABC):
    """Base of every scorer; ``settings`` is its section of ``evaluation.scoring``."""

    #: Needs the post-hoc signals (the similarity backend is loaded once per rollout for them).
    uses_signals: ClassVar[bool] = False

    def __init__(self, settings: ScorerSettings):
        self.settings = settings

    def joint(self, turn: TurnView) -> JointPart | None:
        """The part of the turn's joint judge call this scorer reads (None: none). Declared
        before any scorer of the turn runs, so the call holds every part; read the answer
        with :meth:`TurnView.joint_answer`."""
        return None

    def persona_questions(self, turn: TurnView) -> list[str]:
        """The questions this scorer will put to the persona at ``turn`` (none: []). The engine
        may ask them early, when that is cheaper; ``turn.ask_persona`` then answers from what
        it kept."""
        return []

    @abstractmethod
    async def score(self, turn: TurnView) -> Score:
        """This scorer's verdict on ``turn``."""


class TurnRubricScorer(Scorer):
    """A scorer that reads the turn rubric (:meth:`TurnView.turn_rubric`): it declares the
    rubric as its part of the joint call."""

    def joint(self, turn: TurnView) -> JointPart | None:
        return turn.turn_part()
