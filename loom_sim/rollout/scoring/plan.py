"""What a scoring pass is told and reports, and which scorers it runs.

Shared by the engine (:mod:`loom_sim.rollout.scoring.engine`, which schedules rollouts) and the
rollout scorer (:mod:`loom_sim.rollout.scoring.rollout`, which walks one rollout's turns).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from loom_sim.config import LoomConfig
from loom_sim.config.spec import ScorerSettings
from loom_sim.errors import LoomError
from loom_sim.models.prose import prose_grammar
from loom_sim.plugins.scorers import SCORERS, ScorerInfo
from loom_sim.rollout.scoring.base import Scorer

QA_MAX_TOKENS = 64  # "one or two sentences": the persona's answers to Q&A probes are short
#: The persona's answers to Q&A probes, asked for "in one or two sentences", are written as that
#: by a model that can constrain its sampling (the embedded one): two sentences of at most 20
#: words fit the 64 tokens, so an answer ends at its sentence's end, not mid-word at the cap.
QA_GRAMMAR = prose_grammar((1, 2), max_words=20)
SCORE_TRACE = "score_trace.jsonl"


@dataclass(frozen=True)
class ScoreOptions:
    judge_model: str | None = None
    judge_window: int | None = None
    force: bool = False
    concurrency: int = 4


@dataclass
class ScoreSummary:
    rollouts: int = 0
    scored_turns: int = 0
    skipped_turns: int = 0
    failures: int = 0
    not_applicable: int = 0  # scores that do not apply to their turn (neither given nor failed)
    written: list[Path] = field(default_factory=list)


@dataclass(frozen=True)
class Enabled:
    info: ScorerInfo
    settings: ScorerSettings
    scorer: Scorer


def enabled_scorers(config: LoomConfig) -> list[Enabled]:
    """The registry's scorers that ``config`` switches on (a scorer of the model under
    evaluation only when listed in ``evaluation.scoring.target``), in registry order, each
    built with its settings."""
    found = []
    for info in SCORERS:
        settings = config.evaluation.scoring.of(info.config_key)
        if config.evaluation.scoring.runs(info):
            made = info.scorer(settings)
            if not isinstance(made, Scorer):
                raise LoomError(f"the scorer {info.name!r} is not a Scorer ({type(made).__name__})")
            found.append(Enabled(info, settings, made))
    return found


def window_start(index: int, size: int, step: int) -> int:
    """The first record of the judge's window for the turn at ``index``: the window holds at
    most ``size`` turns and its start moves ``step`` turns at a time, so it holds at least
    ``size - step + 1`` and the windows of consecutive turns start alike (each extends the
    last, and a judge that keeps its prompt prefix reads only the new turn)."""
    earliest = index - size + 1
    if earliest <= 0:
        return 0
    step = max(1, min(step, size))
    return -(-earliest // step) * step
