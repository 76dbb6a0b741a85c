"""A run directory as a typed Python object: :class:`Run`, what :func:`loom_sim.load` and
:func:`loom_sim.run` return."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from loom_sim.api import frames
from loom_sim.runs.load import RunResults, load_results

if TYPE_CHECKING:
    import pandas as pd

    from loom_sim.store.records import Transcript


@dataclass(frozen=True)
class Run:
    """A run directory (a single run or a matrix) as it was when loaded: the records on
    disk, read once, and the data frames made from them.

    ``failure`` is set when :func:`loom_sim.run` saw rollouts end in error: the sentence
    saying how many and how to continue. It is kept here rather than raised so that what
    completed (and its scores) stays in your hands.
    """

    dir: Path
    results: RunResults
    failure: str | None = None

    @property
    def kind(self) -> str:
        """``"run"`` (one config against one target) or ``"matrix"`` (configs × targets)."""
        return self.results.kind

    @property
    def configs(self) -> list[str]:
        """The configs' names, in the run's order."""
        return list(dict.fromkeys(arm.config or arm.record.config_name for arm in self.arms))

    @property
    def targets(self) -> list[str]:
        """The models under evaluation, in the run's order."""
        return list(dict.fromkeys(r.target for r in self.results.rollouts))

    @property
    def arms(self) -> list[Any]:
        """The (config, target) single runs this run is made of (one for a single run)."""
        return list(self.results.arms)

    @property
    def transcripts(self) -> list[Transcript]:
        """Every started rollout's transcript (turns, scores, outcome), in the run's order."""
        return [r.transcript for r in self.results.rollouts]

    def turns(self) -> pd.DataFrame:
        """One row per completed turn, with its messages and ``score_<scorer>`` columns."""
        return frames.turns_frame([self.results])

    def rollouts(self) -> pd.DataFrame:
        """One row per started rollout: outcome, turns, cost and each scorer's headline."""
        return frames.rollouts_frame([self.results])

    def compare(self) -> pd.DataFrame:
        """``loom-sim compare`` on this run as a frame: per (config, target, scorer) the mean
        over rollouts and its 95% interval (see :func:`loom_sim.compare_runs` for several runs)."""
        return frames.compare_frame(_compare_data([self.results]))

    def differences(self) -> pd.DataFrame:
        """Per (config, pair of targets, scorer) the difference ``b - a`` with its interval;
        empty unless the run has two targets or more."""
        return frames.differences_frame(_compare_data([self.results]))


def load_run(run_dir: str | Path) -> Run:
    """The run in ``run_dir`` (a LoomError, one sentence, when it is not a run)."""
    path = Path(run_dir)
    return Run(path, load_results(path))


def _compare_data(results: list[RunResults]) -> dict[str, Any]:
    from loom_sim.compare.data import build_compare

    return build_compare(results)
