"""Any run directory — a single run or a matrix — as one list of rollouts, each knowing its
config, its target and its cell.

``compare``, ``export``, ``runs`` and the web viewer all start here, so they agree on what a
run holds: every planned cell, finished or not (a cell that never started is ``pending``, one
whose rollout is still going or was killed is ``incomplete``). Reading never writes: a torn
``turns.jsonl`` is read up to its last whole line and left as it is.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from loom_sim.errors import LoomError
from loom_sim.rollout.report.data import load_transcript, partial_transcript
from loom_sim.store.artifacts import TRANSCRIPT_FILE, TURNS_FILE
from loom_sim.store.matrix_file import CellRef, MatrixRecord, read_any, single_run_cells
from loom_sim.store.records import Transcript
from loom_sim.store.run_file import RunRecord

__all__ = ["Arm", "RolloutResult", "RunResults", "load_results"]

PENDING = "pending"  # planned, not started


@dataclass(frozen=True)
class Arm:
    """One (config, target) of a run: the whole of a single run, one arm of a matrix."""

    key: str  # "" for a single run
    dir: Path
    record: RunRecord


@dataclass(frozen=True)
class RolloutResult:
    """One cell of a run and what is on disk for it."""

    run: str  # the run directory's name
    cell: CellRef
    arm: Arm
    transcript: Transcript  # a pending cell's has no turns

    @property
    def config(self) -> str:
        return self.cell.config

    @property
    def target(self) -> str:
        return self.cell.target

    @property
    def status(self) -> str:
        return self.transcript.status

    @property
    def dir(self) -> Path:
        return self.arm.dir / Path(self.cell.id).name


@dataclass(frozen=True)
class RunResults:
    dir: Path
    record: RunRecord | MatrixRecord
    arms: list[Arm]
    rollouts: list[RolloutResult]  # in the run's cell order

    @property
    def name(self) -> str:
        return self.dir.resolve().name

    @property
    def kind(self) -> str:
        return "matrix" if isinstance(self.record, MatrixRecord) else "run"

    @property
    def configs(self) -> list[str]:
        return list(dict.fromkeys(r.config for r in self.rollouts))

    @property
    def targets(self) -> list[str]:
        return list(dict.fromkeys(r.target for r in self.rollouts))

    @property
    def created_at(self) -> str:
        return self.record.created_at


def _pending(cell: CellRef, record: RunRecord) -> Transcript:
    return Transcript(
        rollout=Path(cell.id).name,
        index=cell.rollout,
        seed=record.seed,
        status=PENDING,
        stop_reason=None,
        stop_detail="not started",
        error=None,
        persona=_persona_name(record),
        config=record.config_name,
        models=dict(record.models),
        template_version=record.template_version,
        opener="",
        opening=None,
        turns=[],
        usage={},
        cost_usd=None,
        started_at=0.0,
        ended_at=0.0,
        duration_s=0.0,
    )


def _persona_name(record: RunRecord) -> str:
    """From the recorded config as data: validating it would need every plug-in it names."""
    identity = (record.config.get("persona") or {}).get("identity") or {}
    return str(identity.get("name") or "?")


def _transcript(folder: Path, cell: CellRef, record: RunRecord) -> Transcript:
    if (folder / TRANSCRIPT_FILE).is_file():
        return load_transcript(folder / TRANSCRIPT_FILE)
    if (folder / TURNS_FILE).is_file():
        return partial_transcript(folder, record)
    return _pending(cell, record)


def load_results(run_dir: Path | str) -> RunResults:
    """Every cell of the run in ``run_dir``, in order; a LoomError when it is not a run."""
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        raise LoomError(f"{run_dir}: not a directory (give a run directory)")
    record = read_any(run_dir)
    name = run_dir.resolve().name
    if isinstance(record, MatrixRecord):
        arms = {
            a.key: Arm(a.key, run_dir / a.key, read_any_arm(run_dir / a.key)) for a in record.arms
        }
        cells = record.cells()
    else:
        arms = {"": Arm("", run_dir, record)}
        cells = single_run_cells(record)
    rollouts = []
    for cell in cells:
        arm = arms[cell.arm]
        folder = arm.dir / Path(cell.id).name
        rollouts.append(RolloutResult(name, cell, arm, _transcript(folder, cell, arm.record)))
    return RunResults(run_dir, record, list(arms.values()), rollouts)


def read_any_arm(arm_dir: Path) -> RunRecord:
    found = read_any(arm_dir)
    if not isinstance(found, RunRecord):
        raise LoomError(f"{arm_dir}: an arm of a matrix must be a single run")
    return found
