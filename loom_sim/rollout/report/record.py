"""``report.json`` as a typed record: what the report of a run holds, and how a file an earlier
loom-sim wrote is read.

:func:`~loom_sim.rollout.report.data.build_report` builds the data; :func:`report_record` checks
it against these structs before it is written, so a field of the wrong type is a bug found
when the report is made, not by a script reading it later. Numbers keep the type they were
computed in (``Number``: a count stays ``3``, a mean ``0.5``), so the bytes written are the
data's own. The sections whose shape belongs to a plug-in (a scorer's aggregates, the target
and adversary sections, each rollout's series and conformance) are JSON data here.

Format version: ``report_version`` ``"1"`` (a string, as it has always been written). Earlier
loom-sims wrote version 1 without some fields; reading such a file fills them in: ``answering``
(the models that answered the persona) is worked out from ``models`` as the report does;
``header`` (runs planned before the plan header), ``target`` and each rollout's
``conformance`` are ``None``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec

from loom_sim.core.header import PlanHeader
from loom_sim.core.records import RecordFormat
from loom_sim.errors import LoomError

REPORT_FILE = "report.json"
REPORT_VERSION = "1"

Number = int | float


class AnsweringModel(msgspec.Struct, frozen=True):
    role: str
    spec: str
    label: str


class ReportRun(msgspec.Struct, kw_only=True):
    """The run reported: its folder's name, its persona, and fields copied from run.json."""

    dir: str
    persona: str | None
    persona_description: str | None
    config_name: str | None
    config_path: str | None
    config_sha256: str | None
    created_at: str | None
    seed: int | None
    turns: int | None
    rollouts: int | None
    loom_sim_version: str | None
    schema_version: str | None
    template_version: str | None
    rubric_version: str | None
    versions: dict[str, str] | None
    budgets: dict[str, Number | None] | None
    interlocutor_system_prompt: str | None
    cost_usd: Number | None


class ReportJudge(msgspec.Struct, kw_only=True):
    specs: list[str]
    embedded: bool
    notice: str | None


class ScorerAggregate(msgspec.Struct, kw_only=True):
    """One scorer over the run: the spread of the rollouts' means."""

    mean: Number | None
    std: Number | None
    min: Number | None
    max: Number | None
    n_rollouts: int
    turns_scored: int
    failed: int


class RunStagnation(msgspec.Struct, kw_only=True):
    loop_spans: int
    rollouts_with_loops: int
    triggers: dict[str, int]


class RolloutReport(msgspec.Struct, kw_only=True):
    """One rollout's part of the report."""

    rollout: str
    index: int
    seed: int
    status: str
    stop_reason: str | None
    stop_detail: str | None
    error: str | None
    turns: int
    cost_usd: Number | None
    duration_s: Number | None
    models: dict[str, str]
    scored: bool
    aggregates_source: str | None
    rubric_version: str | None
    judge: str | None
    judge_window: int | None
    scorers: list[str]
    aggregates: dict[str, dict[str, Any]]
    by_phase: dict[str, dict[str, Any]]
    trajectory_gap: dict[str, Any]
    flagged: list[dict[str, Any]]
    monitor_events: list[dict[str, Any]]
    stagnation: dict[str, Any]
    series: dict[str, Any]
    conformance: dict[str, Any] | None = None  # None in reports written before it existed


class ReportRecord(msgspec.Struct, kw_only=True):
    """A run's ``report.json``."""

    report_version: str = REPORT_VERSION
    header: PlanHeader | None = None  # the run's plan header (None: planned before headers)
    run: ReportRun
    models: dict[str, str]
    answering: list[AnsweringModel]
    judge: ReportJudge
    dimensions: list[str]
    phases: list[str]
    scorers: list[str]
    statuses: dict[str, int]
    aggregates: dict[str, ScorerAggregate]
    by_phase: dict[str, dict[str, Number | None]]
    trajectory_gap: dict[str, dict[str, Number | None]]
    stagnation: RunStagnation
    adversary: dict[str, Any] | None
    target: dict[str, Any] | None = None  # None in reports written before it existed
    # model calls retried and given up, budgets (None in reports written before it existed)
    faults: dict[str, Any] | None = None
    rollouts: list[RolloutReport]

    def data(self) -> dict[str, Any]:
        """The record as JSON data (what ``report.json`` holds)."""
        return msgspec.to_builtins(self)


def answering(models: dict[str, str]) -> list[dict[str, str]]:
    """The models that answered the persona (every role but the persona's and the judge's)."""
    labels = {"interlocutor": "interlocutor (under evaluation)"}
    return [
        {"role": role, "spec": spec, "label": labels.get(role, role)}
        for role, spec in models.items()
        if role not in ("persona", "judge")
    ] or [{"role": "interlocutor", "spec": "?", "label": labels["interlocutor"]}]


def _fill_in(data: dict[str, Any]) -> dict[str, Any]:
    """Version 1 as an earlier loom-sim wrote it: the fields it had not yet, filled in."""
    if "answering" not in data and isinstance(data.get("models"), dict):
        data["answering"] = answering(data["models"])
    return data


REPORT_FORMAT: RecordFormat[ReportRecord] = RecordFormat(
    ReportRecord,
    noun="report file",
    version=int(REPORT_VERSION),
    version_key="report_version",
    shape=_fill_in,
)


def report_record(data: dict[str, Any]) -> ReportRecord:
    """``data`` (as :func:`build_report` made it) checked against the record's types."""
    try:
        return msgspec.convert(data, ReportRecord)
    except msgspec.ValidationError as err:  # a bug in the report's code, said plainly
        raise LoomError(f"the report's data does not fit report.json's format ({err})") from None


def read_report(path: Path) -> ReportRecord:
    """A ``report.json`` of any version this loom-sim reads; one plain sentence naming the file
    when it is not usable. A folder is read as the run (or output folder) holding it."""
    path = Path(path)
    if path.is_dir():
        path = path / REPORT_FILE
    return REPORT_FORMAT.read(path)
