"""``loom-sim merge``: shards' folders joined into the run one process would have made.

Each shard (``run --shard k/N``) planned the whole run and ran the cells it owns; its folder
holds a complete ``run.json`` (saying which shard it is) and those cells' folders. Merging
checks that the shards planned the same run — the same configs, seed, models, turns,
rollouts, arms — then copies each cell's folder from the shard that owns it into a new run
directory and writes the run's ``run.json`` without the shard. The result is an ordinary run
(a matrix, or a single run): ``report``, ``compare``, ``serve``, ``export`` read it as they
read any other, and its cells are the unsharded run's, byte for byte.

A missing shard is not an error: its cells are simply not there yet, so the merged run is
partial and ``run --resume`` finishes it. Two shards claiming the same ``k`` are.

Every cell is checked against the plan before anything is written (:func:`verify_cell`): a
shard folder is files anyone can copy, link or edit, and a merged run is read as one process's
work. A cell must be the shard's own folder (no link to another run's), its transcript must be
the cell's (rollout, index, seed, config, models), its ``turns.jsonl`` must run 0, 1, 2... with
no line duplicated or missing and be the transcript's turns, and its trace must be the cell's
and show each turn's persona message sent. The first cell that is not is refused, by name, and
nothing is merged.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec

from loom_sim.core.lock import refuse_if_held
from loom_sim.errors import LoomError
from loom_sim.store.artifacts import (
    TRACE_FILE,
    TRANSCRIPT_FILE,
    TURNS_FILE,
    TurnLog,
    read_transcript,
    write_json,
)
from loom_sim.store.distribution import Shard
from loom_sim.store.matrix_file import CellRef, MatrixRecord, read_any, single_run_cells
from loom_sim.store.records import TurnRecord
from loom_sim.store.run_file import RUN_FILE, RunRecord, read_run

__all__ = ["Merged", "merge_shards", "verify_cell"]

# What may differ between shards of one run: when and how each was started, on which machine,
# from which path; none of it changes a turn.
_RUN_VOLATILE = frozenset(
    {
        "created_at",
        "argv",
        "header",  # when and by which command line, as above (its seed is the record's)
        "shard",
        "executions",
        "versions",
        "config_path",
        "concurrency",
        "base_url",
        "timeout_s",
    }
)
_MATRIX_VOLATILE = frozenset(
    {
        "created_at",
        "argv",
        "header",  # when and by which command line, as above (its seed is the record's)
        "shard",
        "executions",
        "versions",
        "config_paths",
        "concurrency",
        "suite",
    }
)
# Left behind in a cell's folder by a Ray attempt that was lost: not part of the run.
_NOT_COPIED = shutil.ignore_patterns(".attempt", ".attempt.tmp")


@dataclass
class Merged:
    dir: Path
    kind: str  # "run" or "matrix"
    shards: int  # N
    cells: int  # cells copied
    missing_shards: list[int] = field(default_factory=list)  # k of the shards not given
    missing_cells: list[str] = field(default_factory=list)  # owned by a given shard, not run


def merge_shards(
    shard_dirs: list[Path], output: Path, claim: Callable[[Path], object] | None = None
) -> Merged:
    """Join ``shard_dirs`` into a new run directory ``output``. ``claim`` takes ``output``'s
    lock (:func:`loom_sim.core.lock.hold`) once the shards are checked, before anything is
    written there, so nothing is left behind by a merge refused earlier."""
    if not shard_dirs:
        raise LoomError("give the shards' folders to merge")
    _check_new(output)
    records = [read_any(d) for d in shard_dirs]
    shards = _shards(shard_dirs, records)
    first, first_dir = records[0], shard_dirs[0]
    for other, other_dir in zip(records[1:], shard_dirs[1:], strict=True):
        _same_run(first_dir, first, other_dir, other)
    owner = {s.index: d for s, d in zip(shards, shard_dirs, strict=True)}
    count = shards[0].count
    merged = Merged(
        output,
        first.kind,
        count,
        0,
        missing_shards=[k for k in range(1, count + 1) if k not in owner],
    )
    if isinstance(first, MatrixRecord):
        cells = first.cells()
        plans = {arm.key: read_run(first_dir / arm.key) for arm in first.arms}
    else:
        cells = single_run_cells(first)
        plans = {"": first}
    for cell in cells:  # every cell checked before anything is written
        shard_dir = owner.get(cell.position % count + 1)
        if shard_dir is not None:
            verify_cell(cell, shard_dir, plans[cell.arm])
    if claim is not None:
        claim(output)
        _check_new(output)  # again: no other process can start writing it now
    output.mkdir(parents=True, exist_ok=True)
    if isinstance(first, MatrixRecord):
        for arm in first.arms:
            (output / arm.key).mkdir(exist_ok=True)
            write_json(output / arm.key / RUN_FILE, plans[arm.key])
    for cell in cells:
        _copy_cell(cell, owner, count, output, merged)
    header = first.header and msgspec.structs.replace(
        first.header, command=_unsharded(first.header.command)
    )
    whole = msgspec.structs.replace(
        first,
        shard=None,
        executions=_executions(records),
        argv=_unsharded(first.argv),
        header=header,
    )
    write_json(output / RUN_FILE, whole)  # last: a folder with run.json has every cell copied
    return merged


def _check_new(output: Path) -> None:
    refuse_if_held(output)
    if (output / RUN_FILE).exists():
        raise LoomError(f"{output} already holds a run; merge into a new folder")


def _shards(dirs: list[Path], records: list[RunRecord | MatrixRecord]) -> list[Shard]:
    shards: list[Shard] = []
    seen: dict[int, Path] = {}
    for folder, record in zip(dirs, records, strict=True):
        if record.shard is None:
            raise LoomError(f"{folder} is not a shard (it was run without --shard)")
        shard = record.shard
        if shards and shard.count != shards[0].count:
            raise LoomError(
                f"{folder} is shard {shard} but {dirs[0]} is shard {shards[0]}: the shards of "
                "one run all have the same N"
            )
        if shard.index in seen:
            raise LoomError(f"{folder} and {seen[shard.index]} are both shard {shard}")
        seen[shard.index] = folder
        shards.append(shard)
    return shards


def _same_run(
    a_dir: Path, a: RunRecord | MatrixRecord, b_dir: Path, b: RunRecord | MatrixRecord
) -> None:
    if type(a) is not type(b):
        raise LoomError(f"{b_dir} is a {b.kind} run but {a_dir} is a {a.kind} run")
    _same_plan(a_dir, a, b_dir, b)
    if isinstance(a, MatrixRecord):
        for arm in a.arms:
            _same_plan(
                a_dir / arm.key, read_run(a_dir / arm.key), b_dir / arm.key, _arm(b_dir, arm.key)
            )


def _arm(run_dir: Path, key: str) -> RunRecord:
    if not (run_dir / key / RUN_FILE).is_file():
        raise LoomError(f"{run_dir}: its arm {key} has no {RUN_FILE}; it cannot be merged")
    return read_run(run_dir / key)


def _same_plan(a_dir: Path, a: Any, b_dir: Path, b: Any) -> None:
    volatile = _MATRIX_VOLATILE if isinstance(a, MatrixRecord) else _RUN_VOLATILE
    left, right = msgspec.to_builtins(a), msgspec.to_builtins(b)
    for key in dict.fromkeys([*left, *right]):
        if key in volatile or left.get(key) == right.get(key):
            continue
        shown = "" if key == "config" else f" ({_short(left.get(key))} vs {_short(right.get(key))})"
        raise LoomError(
            f"{b_dir} is not a shard of the same run as {a_dir}: their {key} differs{shown}; "
            "shards must be started with the same configs, targets, options and --seed"
        )


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _copy_cell(cell: CellRef, owner: dict[int, Path], count: int, output: Path, merged: Merged):
    shard_dir = owner.get(cell.position % count + 1)
    if shard_dir is None:
        return  # its shard was not given: the merged run is partial, resumable
    source = shard_dir / cell.id
    if not source.is_dir():
        merged.missing_cells.append(cell.id)
        return
    target = output / cell.id
    if target.exists():
        shutil.rmtree(target)
    shutil.copytree(source, target, ignore=_NOT_COPIED)
    merged.cells += 1


class _Refused(LoomError):
    pass


def verify_cell(cell: CellRef, shard_dir: Path, plan: RunRecord) -> None:
    """Refuse, naming the cell, a cell folder of ``shard_dir`` that is not what the plan says
    this cell is (see the module's docstring). A cell never started (no folder) passes."""
    source = shard_dir / cell.id

    def refuse(why: str) -> _Refused:
        return _Refused(f"cannot merge: cell {cell.id} of {shard_dir} {why}; nothing was merged")

    if not os.path.lexists(source):
        return
    for part in (source, source.parent) if cell.arm else (source,):
        if part.is_symlink():
            raise refuse(f"is a link ({part.name} -> {os.readlink(part)}), not the shard's own")
    if not source.is_dir():
        raise refuse("is not a folder")
    for folder, dirs, files in os.walk(source):
        for name in [*dirs, *files]:
            if (Path(folder) / name).is_symlink():
                raise refuse(f"holds a link ({name}); a cell's files are its own")
    try:
        turns: list[TurnRecord] = TurnLog(source / TURNS_FILE).read()
        transcript = (
            read_transcript(source / TRANSCRIPT_FILE)
            if (source / TRANSCRIPT_FILE).is_file()
            else None
        )
    except LoomError as err:
        raise refuse(f"has a damaged file ({err})") from None
    if len(turns) > plan.turns:
        raise refuse(f"has {len(turns)} turns where the plan has {plan.turns}")
    if transcript is not None:
        expected = {
            "rollout": source.name,
            "index": cell.rollout,
            "seed": plan.seed,
            "config": plan.config_name,
        }
        for key, value in expected.items():
            found = getattr(transcript, key)
            if found != value:
                raise refuse(f"holds another cell's transcript ({key} {found!r}, not {value!r})")
        for role, spec in transcript.models.items():
            if role in plan.models and plan.models[role] != spec:
                raise refuse(
                    f"holds another run's transcript ({role} {spec}, not {plan.models[role]})"
                )
        if [_said(t) for t in transcript.turns] != [_said(t) for t in turns]:
            raise refuse(f"has a {TURNS_FILE} that is not its transcript's turns")
    trace = _read_trace(source / TRACE_FILE)
    if trace.rollout is not None and trace.rollout != source.name:
        raise refuse(f"has the trace of {trace.rollout}")
    for record in turns:
        sent = trace.sent.get(record.turn)
        if sent and record.persona not in sent:
            raise refuse(f"has a {TURNS_FILE} whose turn {record.turn} is not in its trace")


def _said(record: Any) -> tuple[int, str, str]:
    return (record.turn, record.persona, record.interlocutor)


class _Body(msgspec.Struct):
    type: str = ""
    text: str | None = None


class _Line(msgspec.Struct):
    rollout: str
    turn: int
    body: _Body


@dataclass
class _Trace:
    rollout: str | None = None  # the rollout its first envelope names
    sent: dict[int, set[str]] = field(default_factory=dict)  # turn -> persona messages sent


def _read_trace(path: Path) -> _Trace:
    """What a cell's trace says the cell did: its rollout, and each turn's persona message as
    sent to the responder (every attempt: a resumed turn was sent again). Lines that do not
    decode (a torn last one) are passed over: the trace checks the turns, not itself."""
    found = _Trace()
    decoder = msgspec.json.Decoder(_Line)
    try:
        with path.open("rb") as fh:
            for line in fh:
                try:
                    envelope = decoder.decode(line)
                except (msgspec.DecodeError, msgspec.ValidationError):
                    continue
                if found.rollout is None:
                    found.rollout = envelope.rollout
                if envelope.body.type == "Respond" and envelope.body.text is not None:
                    found.sent.setdefault(envelope.turn, set()).add(envelope.body.text)
    except OSError:
        pass
    return found


def _executions(records: list[RunRecord | MatrixRecord]) -> list[Any]:
    return [e for record in records for e in record.executions]


def _unsharded(argv: list[str]) -> list[str]:
    """The command line without its ``--shard``: what one process would have been given."""
    out: list[str] = []
    skip = False
    for arg in argv:
        if skip:
            skip = False
        elif arg == "--shard":
            skip = True
        elif not arg.startswith("--shard="):
            out.append(arg)
    return out
