"""``run.json``: what a run is — its config, seed, models, responders, budgets, versions — as one
typed record that planning writes and resuming, scoring, the report and the viewer read.

Written once, atomically, when a run is planned; a resumed run never re-reads the files it was
planned from (the config and every responder's settings are in here). Keys never appear: they
are read from the environment by the model hub and go nowhere else; URLs are stored redacted.

Format versions: 1 (loom-sim 0.1 before responders were plug-ins: ``adversaries`` held the
adversary configs by kind) and 2 (before matrix runs) are read and migrated in memory; 3 is
written. Version 3 added a second kind of ``run.json``, the matrix run's
(:mod:`loom_sim.store.matrix_file`, ``"kind": "matrix"``), which :func:`read_run` refuses with
a sentence naming its arms; a single run's record is unchanged, and says ``"kind": "run"``.
``faults`` (model calls retried and given up, by spec) was added with a default, so files
without it still load; it is the one part rewritten after planning, when a session ends.
"""

from __future__ import annotations

import os
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import msgspec

from loom_sim.config.spec import LoomConfig
from loom_sim.core.header import PlanHeader
from loom_sim.core.records import read_bytes
from loom_sim.errors import LoomError
from loom_sim.store.artifacts import write_json
from loom_sim.store.distribution import Execution, Shard
from loom_sim.store.records import Transcript, TurnRecord

if TYPE_CHECKING:
    from loom_sim.models.retry import Faults

RUN_FILE = "run.json"
FORMAT_VERSION = 3
RUN_KIND = "run"
MATRIX_KIND = "matrix"
DEFAULT_JUDGE = "local/smollm2"

# Planned counts are read by every command that lists or compares runs; an absurd one (a
# hand-edited or damaged file) is refused when the record is read, before anything counts to
# it. The bounds are far above any real run: a config's `expected_turns` is at most 100,000,
# and `run --rollouts` stops at MAX_ROLLOUTS.
MAX_TURNS = 100_000
MAX_ROLLOUTS = 100_000
Turns = Annotated[int, msgspec.Meta(ge=0, le=MAX_TURNS)]
Rollouts = Annotated[int, msgspec.Meta(ge=0, le=MAX_ROLLOUTS)]
# A run.json holds a config and a few hundred fields: kilobytes. Read at most this much, so a
# file swapped for something endless (a link to /dev/zero) costs nothing.
MAX_RUN_FILE_BYTES = 16 * 1024 * 1024


class Budgets(msgspec.Struct, frozen=True):
    max_cost_usd: float | None = None
    max_runtime_s: float | None = None


class PriceRecord(msgspec.Struct, frozen=True):
    input_per_mtok: float
    output_per_mtok: float


class FaultRecord(msgspec.Struct):
    """Model-call faults of one spec, over every session of the run (rollouts and scoring)."""

    retried: dict[str, int] = msgspec.field(default_factory=dict)  # reason -> attempts retried
    gave_up: int = 0  # calls that failed after their last attempt


class RunRecord(msgspec.Struct, kw_only=True, dict=True):
    """One run, as ``run.json`` holds it (``dict=True``: the validated config is cached)."""

    format_version: int = FORMAT_VERSION
    kind: str = RUN_KIND  # "run"; a matrix run's run.json is a MatrixRecord
    loom_sim_version: str
    schema_version: str
    template_version: str
    rubric_version: str
    created_at: str
    config_path: str
    config_name: str
    config_sha256: str
    seed: int
    turns: Turns
    rollouts: Rollouts
    concurrency: int = 4
    models: dict[str, str]  # model role -> spec
    interlocutor_system_prompt: str
    responders: list[str] = msgspec.field(default_factory=lambda: ["interlocutor"])
    settings: dict[str, Any] = msgspec.field(default_factory=dict)  # responder -> settings
    prices: dict[str, PriceRecord] = msgspec.field(default_factory=dict)  # --price, by spec
    base_url: str | None = None
    budgets: Budgets = msgspec.field(default_factory=Budgets)
    timeout_s: float = 120.0
    argv: list[str] = msgspec.field(default_factory=list)
    header: PlanHeader | None = None  # the plan header every system's record carries
    versions: dict[str, str] = msgspec.field(default_factory=dict)
    imported_from: list[str] | None = None  # transcripts imported from another tool
    faults: dict[str, FaultRecord] = msgspec.field(default_factory=dict)  # by model spec
    shard: Shard | None = None  # --shard k/N: this folder holds only that shard's rollouts
    executions: list[Execution] = msgspec.field(default_factory=list)  # --executor ray passes
    config: dict[str, Any]

    @cached_property
    def loom_config(self) -> LoomConfig:
        """The run's config, validated once per process (it was valid when the run began)."""
        try:
            return LoomConfig.model_validate(self.config)
        except ValueError as err:
            first = str(err).splitlines()[0]
            raise LoomError(
                f"the config recorded in this run.json no longer validates ({first})"
            ) from None

    @property
    def judge(self) -> str:
        return self.models.get("judge") or DEFAULT_JUDGE

    def data(self) -> dict[str, Any]:
        """The record as JSON data (what ``run.json`` holds)."""
        return msgspec.to_builtins(self)

    def add_faults(self, faults: Faults) -> None:
        """Count a session's model-call faults in (retries by reason, calls given up)."""
        count_faults(self.faults, faults)


def count_faults(into: dict[str, FaultRecord], faults: Faults) -> None:
    """Add a session's model-call faults to ``into`` (by spec: retries by reason, calls given
    up): a run's record and a matrix's keep them the same way."""
    for spec in set(faults.retried) | set(faults.gave_up):
        record = into.setdefault(spec, FaultRecord())
        for reason, count in faults.retried.get(spec, {}).items():
            record.retried[reason] = record.retried.get(reason, 0) + count
        record.gave_up += faults.gave_up.get(spec, 0)


_DECODER = msgspec.json.Decoder(RunRecord)


def migrate(data: dict[str, Any]) -> dict[str, Any]:
    """An older record in the current shape, one version step at a time."""
    version = int(data.get("format_version") or 1)
    if version >= FORMAT_VERSION:
        return data
    data = dict(data)
    if version < 2:  # the adversaries became responders
        adversaries = data.pop("adversaries", None) or {}
        if "responders" not in data:
            order = [k for k in ("contradiction", "helpfulness") if k in adversaries]
            data["responders"] = order + sorted(set(adversaries) - set(order)) or ["interlocutor"]
            data["settings"] = dict(adversaries)
    if version < 3:  # matrix runs arrived: a record says which kind of run.json it is
        data["kind"] = RUN_KIND
    data["format_version"] = FORMAT_VERSION
    return data


def read_raw(path: Path) -> dict[str, Any]:
    """``run.json`` as JSON data, checked to be an object this loom-sim's format covers."""
    try:
        raw = msgspec.json.decode(read_bytes(path))
    except msgspec.DecodeError as err:
        raise LoomError(f"{path}: not JSON ({err})") from None
    if not isinstance(raw, dict):
        raise LoomError(f"{path}: not a run file (a JSON object was expected)")
    version = raw.get("format_version") or 1
    if not isinstance(version, int) or version > FORMAT_VERSION:
        raise LoomError(
            f"{path}: run format {version!r} is newer than this loom-sim reads "
            f"({FORMAT_VERSION}); upgrade loom-sim to resume, score or report it"
        )
    return raw


def check_counts(path: Path, raw: dict[str, Any]) -> None:
    """A planned count out of bounds, said plainly (the decoder would say it in its terms)."""
    for key, bound in (("rollouts", MAX_ROLLOUTS), ("turns", MAX_TURNS)):
        value = raw.get(key)
        if isinstance(value, int) and not isinstance(value, bool) and not 0 <= value <= bound:
            raise LoomError(
                f"{path}: {key} is {value:,}, which no run plans (at most {bound:,}); "
                "this run.json was edited or damaged"
            )


def read_run(run_dir: Path) -> RunRecord:
    """The run in ``run_dir``; one plain sentence naming the file when it is not usable."""
    path = run_dir / RUN_FILE
    if not os.path.lexists(path):
        raise LoomError(f"{run_dir}: not a loom-sim run directory (no {RUN_FILE})")
    raw = read_raw(path)  # a run.json that is a folder, a FIFO or a device: one sentence
    if raw.get("kind") == MATRIX_KIND:
        arms = [a.get("key") for a in raw.get("arms") or [] if isinstance(a, dict)]
        first = f" (e.g. {run_dir / str(arms[0])})" if arms else ""
        raise LoomError(
            f"{run_dir} is a matrix run of {len(arms)} arms; give one of its arms{first}, "
            "or use a command that reads whole matrices (run --resume, score, report, "
            "compare, export, serve)"
        )
    check_counts(path, raw)
    try:
        return _DECODER.decode(msgspec.json.encode(migrate(raw)))
    except msgspec.ValidationError as err:
        raise LoomError(f"{path}: not a run file this loom-sim can read ({err})") from None


def add_execution(run_dir: Path, execution: Execution) -> None:
    """Append ``execution`` to the ``executions`` of ``run_dir``'s ``run.json`` (a run's or a
    matrix's), atomically. Edited as JSON data, so either kind of record keeps every field."""
    path = run_dir / RUN_FILE
    data = read_raw(path)
    data["executions"] = [*(data.get("executions") or []), msgspec.to_builtins(execution)]
    write_json(path, data)


def placeholder_transcript(
    rollout: str,
    index: int,
    record: RunRecord | None,
    *,
    status: str,
    detail: str,
    turns: list[TurnRecord] | None = None,
) -> Transcript:
    """The transcript shown for a rollout that has no ``transcript.json`` (not started, or
    running, or killed): ``turns`` as far as they go, the rest from the plan (``record``;
    without one, ``?`` and zeros; the persona's name from the recorded config as data, since
    validating it would need every plug-in it names). Every reader that lists such a rollout
    builds it here."""
    turns = turns or []
    config = record.config if record is not None else {}
    identity = config.get("persona") if isinstance(config, dict) else None
    identity = identity.get("identity") if isinstance(identity, dict) else None
    persona = identity.get("name") if isinstance(identity, dict) else None
    started = turns[0].started_at if turns else 0.0
    ended = turns[-1].ended_at if turns else 0.0
    return Transcript(
        rollout=rollout,
        index=index,
        seed=record.seed if record is not None else 0,
        status=status,
        stop_reason=None,
        stop_detail=detail,
        error=None,
        persona=str(persona or "?"),
        config=(record.config_name if record is not None else "") or "?",
        models=dict(record.models) if record is not None else {},
        template_version=record.template_version if record is not None else "",
        opener="",
        opening=None,
        turns=turns,
        usage={},
        cost_usd=None,
        started_at=started,
        ended_at=ended,
        duration_s=ended - started,
    )
