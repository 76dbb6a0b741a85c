"""Any run directory — a single run or a matrix — as one list of rollouts, each knowing its
config, its target and its cell.

``compare``, ``export``, ``runs`` and the web viewer all start here, so they agree on what a
run holds: the cells its folder holds (a cell whose rollout is still going or was killed is
``incomplete``), and how many more it planned. Those planned cells that never started
(``pending``) are counted, not listed: ``run.json`` may plan a hundred thousand of them, and
what a reader does must follow what the folder holds, not what a number in a file says.
:meth:`RunResults.every_cell` makes them one at a time for the one reader that wants a row per
planned cell (``export``). Reading never writes: a torn ``turns.jsonl`` is read up to its last
whole line and left as it is.

With ``within``, every file read must lie inside that folder once its links are followed: a
run of the viewer's folder with a link leading elsewhere is refused whole
(:class:`LeadsOutside`), so nothing outside is read through it.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from loom_sim.errors import LoomError
from loom_sim.rollout.report.data import load_transcript, partial_transcript
from loom_sim.store.artifacts import TRACE_FILE, TRANSCRIPT_FILE, TURNS_FILE
from loom_sim.store.matrix_file import (
    CellRef,
    MatrixRecord,
    read_any,
    run_target,
    single_run_cell,
)
from loom_sim.store.records import Transcript
from loom_sim.store.run_file import RUN_FILE, RunRecord, placeholder_transcript

__all__ = [
    "Arm",
    "LeadsOutside",
    "RolloutResult",
    "RunResults",
    "check_confined",
    "load_results",
]

PENDING = "pending"  # planned, not started


@dataclass(frozen=True)
class Arm:
    """One (config, target) of a run: the whole of a single run, one arm of a matrix."""

    key: str  # "" for a single run
    dir: Path
    record: RunRecord
    index: int = 0  # its place among the matrix's arms
    config: str = ""
    target: str = ""


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
    rollouts: list[RolloutResult]  # the cells that started (files on disk), in the run's order
    cells: int  # every cell the run planned, started or not

    @property
    def name(self) -> str:
        return self.dir.resolve().name

    @property
    def kind(self) -> str:
        return "matrix" if isinstance(self.record, MatrixRecord) else "run"

    @property
    def configs(self) -> list[str]:
        return list(dict.fromkeys(a.config for a in self.arms))

    @property
    def targets(self) -> list[str]:
        return list(dict.fromkeys(a.target for a in self.arms))

    @property
    def created_at(self) -> str:
        return self.record.created_at

    @property
    def pending(self) -> int:
        """Planned cells that have not started."""
        return self.cells - len(self.rollouts)

    @property
    def planned_turns(self) -> int:
        return sum(a.record.turns for a in self.arms) * self.per_arm

    @property
    def per_arm(self) -> int:
        return self.record.rollouts

    def every_cell(self) -> Iterator[RolloutResult]:
        """Every planned cell in the run's order, those not started made as they are reached."""
        started = {r.cell.position: r for r in self.rollouts}
        name = self.dir.resolve().name
        for rollout in range(self.per_arm):
            for arm in self.arms:
                position = rollout * len(self.arms) + arm.index
                found = started.get(position)
                if found is None:
                    cell = _cell(self.record, arm, rollout)
                    found = RolloutResult(name, cell, arm, _pending(cell, arm.record))
                yield found


def _cell(record: RunRecord | MatrixRecord, arm: Arm, rollout: int) -> CellRef:
    if isinstance(record, MatrixRecord):
        return record.cell(rollout, arm.index)
    return single_run_cell(record, rollout)


def _pending(cell: CellRef, record: RunRecord) -> Transcript:
    return placeholder_transcript(
        Path(cell.id).name, cell.rollout, record, status=PENDING, detail="not started"
    )


def _transcript(folder: Path, cell: CellRef, record: RunRecord) -> Transcript:
    if (folder / TRANSCRIPT_FILE).is_file():
        return load_transcript(folder / TRANSCRIPT_FILE)
    if (folder / TURNS_FILE).is_file():
        return partial_transcript(folder, record)
    return _pending(cell, record)


_ROLLOUT = re.compile(r"rollout_(\d{3,9})")


def _started(arm_dir: Path, rollouts: int) -> list[int]:
    """The indexes of the planned rollouts that have a folder in ``arm_dir``: what the folder
    holds decides the work, whatever the plan's count."""
    found = []
    try:
        with os.scandir(arm_dir) as entries:
            for entry in entries:
                match = _ROLLOUT.fullmatch(entry.name)
                if match is None:
                    continue
                index = int(match[1])
                if index < rollouts and entry.name == f"rollout_{index:03d}":
                    found.append(index)
    except OSError:
        return []
    return sorted(found)


def _arms(run_dir: Path, record: RunRecord | MatrixRecord) -> list[Arm]:
    if isinstance(record, MatrixRecord):
        return [
            Arm(a.key, run_dir / a.key, read_any_arm(run_dir / a.key), i, a.config, a.target)
            for i, a in enumerate(record.arms)
        ]
    return [Arm("", run_dir, record, 0, record.config_name, run_target(record))]


def load_results(run_dir: Path | str, *, within: Path | None = None) -> RunResults:
    """Every started cell of the run in ``run_dir``, in order, and the count of every planned
    one; a LoomError when it is not a run (a :class:`LeadsOutside` when, with ``within``, one
    of its files leads outside that folder)."""
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        raise LoomError(f"{run_dir}: not a directory (give a run directory)")
    if within is not None:
        check_confined(run_dir, within)
    record = read_any(run_dir)
    name = run_dir.resolve().name
    arms = _arms(run_dir, record)
    started = []
    for arm in arms:
        for index in _started(arm.dir, record.rollouts):
            cell = _cell(record, arm, index)
            transcript = _transcript(arm.dir / Path(cell.id).name, cell, arm.record)
            if transcript.status != PENDING:
                started.append(RolloutResult(name, cell, arm, transcript))
    started.sort(key=lambda r: r.cell.position)
    return RunResults(run_dir, record, arms, started, record.rollouts * len(arms))


def read_any_arm(arm_dir: Path) -> RunRecord:
    found = read_any(arm_dir)
    if not isinstance(found, RunRecord):
        raise LoomError(f"{arm_dir}: an arm of a matrix must be a single run")
    return found


# ─── confinement ────────────────────────────────────────────────────────────


class LeadsOutside(LoomError):
    """A file of a run is a link leading outside the folder it is read within."""


_CELL_FILES = (TRANSCRIPT_FILE, TURNS_FILE, TRACE_FILE)


def check_confined(run_dir: Path, root: Path) -> None:
    """Refuse ``run_dir`` when its ``run.json``, a rollout folder, a file in one, or a matrix
    arm's folder resolves (links followed) outside ``root``. It looks at what the folder holds,
    never at what the plan counts, and names the file relative to the run, never where it
    leads."""
    base = root.resolve()

    def check(path: Path) -> None:
        if not os.path.lexists(path):
            return
        try:
            real: Path | None = path.resolve()
        except (OSError, RuntimeError):  # a loop of links
            real = None
        if real is None or not real.is_relative_to(base):
            shown = path.relative_to(run_dir).as_posix() if path != run_dir else "its folder"
            raise LeadsOutside(
                f"{run_dir.name}: {shown} is a link leading outside the results folder; "
                "it is not read"
            )

    def folder(path: Path, arms: bool) -> None:
        check(path)
        check(path / RUN_FILE)
        try:
            with os.scandir(path) as found:
                entries = [Path(e.path) for e in found]
        except OSError:
            return
        for entry in entries:
            if _ROLLOUT.fullmatch(entry.name):
                check(entry)
                for name in _CELL_FILES:
                    check(entry / name)
            elif arms and os.path.lexists(entry / RUN_FILE):
                folder(entry, arms=False)

    folder(run_dir, arms=True)
