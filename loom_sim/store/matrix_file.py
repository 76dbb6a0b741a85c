"""A matrix run's ``run.json``: configs × targets × rollouts in one run directory.

A matrix run is a folder of *arms*, one per (config, target), each an ordinary single run in
a folder of its own (its own ``run.json``, ``rollout_NNN/``...), so everything that reads a
single run — ``score``, ``report``, ``view``, ``trace``, ``run --resume`` — reads an arm as it
is. The matrix's ``run.json`` (:class:`MatrixRecord`, ``"kind": "matrix"``) names the arms and
what they share: the seed, the rollouts per arm, the budgets, the concurrency::

    results/<suite>-<time>/
        run.json                              kind "matrix": configs, targets, arms, seed
        report.json, report.md, report.html   one column per target
        mania_patient--scripted-varied/       an arm: a single run, as `run` writes one
            run.json
            rollout_000/ rollout_001/
        mania_patient--local-smollm2/
            ...

The unit of work is the **cell**: one rollout of one arm. Its id is its folder relative to
the matrix (``mania_patient--local-smollm2/rollout_001``), so the id says where its files
are; :meth:`MatrixRecord.cells` lists them in one deterministic order. Every arm has the
matrix's seed, so the cells of one config and rollout index share their seeds across
targets: the persona starts the same way against each target, which is what makes the
targets' scores comparable pair by pair.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec

from loom_sim.core.header import PlanHeader
from loom_sim.errors import LoomError
from loom_sim.seeds import derive_seed
from loom_sim.store.artifacts import rollout_dir
from loom_sim.store.distribution import Execution, Shard
from loom_sim.store.run_file import (
    FORMAT_VERSION,
    MATRIX_KIND,
    MAX_ROLLOUTS,
    RUN_FILE,
    Budgets,
    FaultRecord,
    Rollouts,
    RunRecord,
    check_counts,
    count_faults,
    read_raw,
    read_run,
)

if TYPE_CHECKING:
    from loom_sim.models.retry import Faults

__all__ = [
    "CellRef",
    "MatrixArm",
    "MatrixRecord",
    "arm_key",
    "is_matrix",
    "read_any",
    "read_matrix",
    "run_target",
    "single_run_cell",
    "single_run_cells",
]


class MatrixArm(msgspec.Struct, frozen=True):
    """One (config, target) of the matrix: a single run in the folder ``key``."""

    key: str
    config: str  # the config's name, as its run.json has it
    target: str  # the model under evaluation (the interlocutor's spec)


class CellRef(msgspec.Struct, frozen=True):
    """One rollout of one arm: what a scheduler hands out. ``id`` is also its folder."""

    id: str
    position: int  # its place in the matrix's order
    arm: str  # the arm's key ("" for a single run)
    config: str
    target: str
    rollout: int  # the rollout's index within its arm
    seed: int  # the rollout's own seed, derived from the arm's seed and the index


class MatrixRecord(msgspec.Struct, kw_only=True):
    format_version: int = FORMAT_VERSION
    kind: str = MATRIX_KIND
    loom_sim_version: str
    created_at: str
    seed: int
    rollouts: Rollouts  # per arm
    concurrency: int = 4  # cells running at once, across all arms
    configs: list[str]  # the configs' names, in order
    config_paths: list[str]
    targets: list[str]  # in order
    arms: list[MatrixArm]  # config-major: (config 0, target 0), (config 0, target 1), ...
    budgets: Budgets = msgspec.field(default_factory=Budgets)  # shared by every cell
    suite: str | None = None  # the suite file the matrix came from, if any
    argv: list[str] = msgspec.field(default_factory=list)
    header: PlanHeader | None = None  # the plan header every system's record carries
    versions: dict[str, str] = msgspec.field(default_factory=dict)
    shard: Shard | None = None  # --shard k/N: this folder holds only that shard's cells
    executions: list[Execution] = msgspec.field(default_factory=list)  # --executor ray passes
    # Model calls of the cells' sessions, by spec (each arm's run.json has its scoring's): one
    # hub serves every arm, so a persona model's retries belong to no arm alone.
    faults: dict[str, FaultRecord] = msgspec.field(default_factory=dict)

    def add_faults(self, faults: Faults) -> None:
        """Count a session's model-call faults in (retries by reason, calls given up)."""
        count_faults(self.faults, faults)

    def arm(self, config: str, target: str) -> MatrixArm:
        for arm in self.arms:
            if arm.config == config and arm.target == target:
                return arm
        raise KeyError((config, target))

    def cells(self) -> list[CellRef]:
        """Every cell, rollout-major: rollout 0 of every arm, then rollout 1... so a run cut
        short by a budget, or the first cells a scheduler hands out, cover every arm evenly."""
        return [self.cell(r, a) for r in range(self.rollouts) for a in range(len(self.arms))]

    def cell(self, rollout: int, arm_index: int) -> CellRef:
        """One cell, made alone: readers make the cells a folder holds, not every one planned."""
        arm = self.arms[arm_index]
        return CellRef(
            id=f"{arm.key}/{rollout_dir(Path(), rollout).name}",
            position=rollout * len(self.arms) + arm_index,
            arm=arm.key,
            config=arm.config,
            target=arm.target,
            rollout=rollout,
            seed=derive_seed(self.seed, "rollout", rollout),
        )

    def data(self) -> dict[str, Any]:
        return msgspec.to_builtins(self)


def single_run_cells(record: RunRecord) -> list[CellRef]:
    """A single run's rollouts as cells, so the same code can walk either kind of run."""
    return [single_run_cell(record, index) for index in range(record.rollouts)]


def single_run_cell(record: RunRecord, index: int) -> CellRef:
    """Rollout ``index`` of a single run as a cell."""
    return CellRef(
        id=rollout_dir(Path(), index).name,
        position=index,
        arm="",
        config=record.config_name,
        target=run_target(record),
        rollout=index,
        seed=derive_seed(record.seed, "rollout", index),
    )


def run_target(record: RunRecord) -> str:
    """The model under evaluation of a single run (its interlocutor, or the responder's)."""
    return record.models.get("interlocutor") or next(
        (s for r, s in record.models.items() if r not in ("persona", "judge")), "?"
    )


_UNSAFE = re.compile(r"[^A-Za-z0-9._]+")


def arm_key(config_stem: str, target: str, taken: set[str]) -> str:
    """A folder name for an arm, readable and unique: ``<config>--<target>`` with every
    character outside ``[A-Za-z0-9._]`` turned into ``-`` (``local/smollm2`` ->
    ``local-smollm2``), and ``-2``, ``-3``... when two arms would share one."""
    base = f"{_UNSAFE.sub('-', config_stem).strip('-.')}--{_UNSAFE.sub('-', target).strip('-.')}"
    key, n = base, 1
    while key in taken:
        n += 1
        key = f"{base}-{n}"
    taken.add(key)
    return key


_DECODER = msgspec.json.Decoder(MatrixRecord)

# Cells are arms x rollouts; the runtime lists them one by one, so their product is bounded
# too (a real matrix has tens of arms and at most thousands of cells).
MAX_ARMS = 10_000
MAX_CELLS = 10 * MAX_ROLLOUTS


def read_matrix(run_dir: Path) -> MatrixRecord:
    """The matrix in ``run_dir``; one plain sentence when it is not usable."""
    path = run_dir / RUN_FILE
    if not os.path.lexists(path):
        raise LoomError(f"{run_dir}: not a loom-sim run directory (no {RUN_FILE})")
    raw = read_raw(path)
    if raw.get("kind") != MATRIX_KIND:
        raise LoomError(f"{run_dir}: a single run, not a matrix run")
    check_counts(path, raw)
    try:
        record = _DECODER.decode(msgspec.json.encode(raw))
    except msgspec.ValidationError as err:
        raise LoomError(f"{path}: not a matrix run file this loom-sim can read ({err})") from None
    if len(record.arms) > MAX_ARMS or len(record.arms) * record.rollouts > MAX_CELLS:
        raise LoomError(
            f"{path}: {len(record.arms)} arms of {record.rollouts} rollouts is more cells than "
            f"a matrix run holds (at most {MAX_ARMS} arms and {MAX_CELLS} cells)"
        )
    for arm in record.arms:
        if Path(arm.key).name != arm.key or arm.key in ("", ".", ".."):
            raise LoomError(f"{path}: the arm folder {arm.key!r} is not a plain folder name")
    return record


def is_matrix(run_dir: Path) -> bool:
    """Whether ``run_dir`` holds a matrix run (a readable run.json of kind "matrix")."""
    path = run_dir / RUN_FILE
    return path.is_file() and read_raw(path).get("kind") == MATRIX_KIND


def read_any(run_dir: Path) -> RunRecord | MatrixRecord:
    """Whichever kind of run ``run_dir`` holds."""
    path = run_dir / RUN_FILE
    if os.path.lexists(path) and read_raw(path).get("kind") == MATRIX_KIND:
        return read_matrix(run_dir)
    return read_run(run_dir)
