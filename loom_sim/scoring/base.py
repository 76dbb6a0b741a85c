"""What a scorer is, and what it sees of a turn.

A scorer turns one recorded turn into a :class:`~loom_sim.store.records.Score` (0..1, higher is
better; ``None`` with the reason when it cannot say). It reads the turn through a
:class:`TurnView`: the record and its neighbours, the config, the post-hoc signals, and three
ways to ask — the shared turn rubric (one judge call per turn, however many scorers read it),
a judge call of its own (or one shared with other scorers), and questions to the persona
itself. Scorers are registered with
:func:`loom_sim.plugins.scorers.scorer` and run by the engine in registry order.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from loom_sim.config.spec import LoomConfig, PhaseSpec, ScorerSettings
from loom_sim.messages import Judgement, WindowTurn
from loom_sim.store.records import Score, TurnRecord
from loom_sim.store.scaffolding import Instructions, instructions_at

if TYPE_CHECKING:  # types only: registering a scorer (validating a config) loads neither
    from loom_sim.assembler import Assembler, TurnPlan
    from loom_sim.signals.analysis import TurnSignals

#: (rubric id, rubric text, JSON schema, window or None for the turn's) -> the judge's answer
AskJudge = Callable[[str, str, dict[str, Any], list[WindowTurn] | None], Awaitable[Judgement]]
#: questions -> the persona's answers, in order ("(no answer)" where it gave none)
AskPersona = Callable[[list[str]], Awaitable[list[str]]]


@dataclass
class TurnView:
    """One turn as a scorer sees it. Earlier turns carry the scores already given this pass."""

    index: int  # position in ``records``
    records: list[TurnRecord]
    window: list[TurnRecord]  # the judge's window, ending at this turn
    config: LoomConfig
    assembler: Assembler  # the run's, for the turn's prescribed plan
    phase: PhaseSpec
    signals: TurnSignals | None  # post-hoc signals of this turn, when a scorer asked for them
    probe_turns: frozenset[int]  # turns at which the persona is asked about itself
    persona_model: str
    ask_judge: AskJudge = field(repr=False)
    ask_persona: AskPersona | None = field(repr=False)  # None: the model cannot be asked again
    shared_rubric: Callable[[], Awaitable[Judgement]] = field(repr=False)
    planned_turns: int = 0  # the turns the run was planned for (0: as many as were recorded)
    _shared: dict[str, Judgement] = field(default_factory=dict, repr=False)

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
        """What the persona was actually told for this turn: the system prompt in force (a
        full injection's, possibly turns old) and the notes sent with the message. Judge
        fidelity and trajectory against this, not :meth:`plan`."""
        return instructions_at(self.records, self.index, self.config, self.assembler)

    @property
    def window_turns(self) -> list[WindowTurn]:
        return [WindowTurn(r.turn, r.persona, r.interlocutor) for r in self.window]

    async def turn_rubric(self) -> Judgement:
        """The shared turn rubric's judgement (persona adherence, naturalness, initiative,
        consistency and the expressed intensities), asked at most once per turn."""
        return await self.shared_rubric()

    async def judge(
        self,
        rubric_id: str,
        rubric: str,
        schema: dict[str, Any],
        window: list[WindowTurn] | None = None,
    ) -> Judgement:
        """A judge call of the scorer's own, over the turn's window unless another is given."""
        return await self.ask_judge(rubric_id, rubric, schema, window)

    async def shared_judge(
        self,
        rubric_id: str,
        rubric: str,
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

    @abstractmethod
    async def score(self, turn: TurnView) -> Score:
        """This scorer's verdict on ``turn``."""
