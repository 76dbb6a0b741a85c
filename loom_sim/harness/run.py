"""Running a planned harness run: its sessions, then each session's scorecard and summary.

Sessions run ``concurrency`` at a time (one by default: a terminal program and the embedded
model each want the CPU), each in the run's nursery; a session that ends in ``error`` does not
stop the others. As each ends, its bundle gets ``scorecard.json``, ``summary.json`` and the
final ``session.json``.
"""

from __future__ import annotations

import json
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import trio

from loom_sim import __version__
from loom_sim.harness.actors.evaluator import RUBRIC_VERSION
from loom_sim.harness.actors.reflector import PROMPT_VERSION as REFLECTOR_VERSION
from loom_sim.harness.actors.simulated_user import PROMPT_VERSION as USER_VERSION
from loom_sim.harness.packs.spec import SCHEMA_VERSION
from loom_sim.harness.plan import HarnessPlan, SessionSpec, finished
from loom_sim.harness.records import SCORECARD_FILE, SESSION_FILE, SUMMARY_FILE, HarnessTurn
from loom_sim.harness.scorecard import Outcome, abilities_used, scorecard
from loom_sim.harness.session import ModelSource, Session
from loom_sim.harness.session_file import FORMAT_VERSION as SESSION_FORMAT_VERSION
from loom_sim.harness.session_file import (
    PackRef,
    SessionRecord,
    SessionSeeds,
    TargetRef,
    read_session,
)
from loom_sim.harness.targets.continuation import DEFAULT_CONTINUATION
from loom_sim.harness.targets.pty import PtySettings
from loom_sim.harness.turn import SessionProgress, SessionResult
from loom_sim.plugins.adapters import TargetSettings
from loom_sim.plugins.outcomes import DEFAULT_FAILURE_PATTERN
from loom_sim.redaction import redact_data


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def resolved(spec: SessionSpec, target: TargetSettings) -> dict[str, Any]:
    """The target's settings with placeholders filled in (what was actually run)."""
    out: dict[str, Any] = {}
    for name in type(target).templated:
        value = getattr(target, name)
        if isinstance(value, str):
            out[name] = spec.fill(value)
        elif isinstance(value, list):
            out[name] = [spec.fill(v) for v in value]
        elif isinstance(value, dict):
            out[name] = {k: spec.fill(v) for k, v in value.items()}
    return out


def session_record(
    spec: SessionSpec, plan: HarnessPlan, previous: SessionRecord | None
) -> SessionRecord:
    starts = [*(previous.starts if previous is not None else []), _now()]
    return SessionRecord(
        format_version=SESSION_FORMAT_VERSION,
        session=spec.name,
        index=spec.index,
        repeat=spec.repeat,
        pack=PackRef(
            name=plan.record.pack_name,
            path=plan.record.pack_path,
            sha256=plan.record.pack_sha256,
        ),
        persona_id=spec.persona_id,
        persona=spec.persona.model_dump(mode="json"),
        scenario=spec.scenario.model_dump(mode="json"),
        policy=spec.policy.model_dump(mode="json"),
        target=TargetRef(
            name=spec.target_name,
            # what the target was, without the credentials a URL of it may carry
            settings=redact_data(spec.target.model_dump(mode="json")),
            resolved=redact_data(resolved(spec, spec.target)),
        ),
        models=spec.models,
        seeds=SessionSeeds(run=spec.seed, session=spec.session_seed),
        versions={
            "loom_sim": __version__,
            "pack_schema": SCHEMA_VERSION,
            "user_prompt": USER_VERSION,
            "reflector_prompt": REFLECTOR_VERSION,
            "evaluator_rubric": RUBRIC_VERSION,
        },
        inputs=spec.input_names,
        starts=starts,
        status="running",
    )


def summary(spec: SessionSpec, result: SessionResult, card: dict[str, Any]) -> dict[str, Any]:
    """The compact outcome: no times, no absolute paths (byte-identical across seeded runs)."""
    turns: list[HarnessTurn] = result.turns
    flags = Counter(f.kind for t in turns for f in t.audit)
    drafts = Counter(f.kind for t in turns for d in t.rejected for f in d.flags)
    return {
        "session": spec.name,
        "scenario": spec.scenario.id,
        "persona": spec.persona_id,
        "repeat": spec.repeat,
        "target": spec.target_name,
        "models": spec.models,
        "seed": spec.session_seed,
        "status": result.status,
        "stop_reason": result.stop.reason.value if result.stop else None,
        "turns": len(turns),
        "passed": card["passed"],
        "score": card["score"],
        "components": {name: c["value"] for name, c in card["components"].items()},
        "criteria": {r.id: r.met for r in turns[-1].evaluation.results} if turns else {},
        "abilities_used": abilities_used(turns),
        "required_covered": card["components"]["ability_usage_quality"]["covered"],
        "artifacts": sum(len(t.artifacts) for t in turns),
        "failed_actions": sum(t.failed for t in turns),
        "audit": {
            kind: {"taken": flags.get(kind, 0), "redrafted": drafts.get(kind, 0)}
            for kind in ("role_flip", "invented_reference", "repeated_action")
        },
        "reflections": dict(Counter(t.reflection_status for t in turns)),
        "cost_usd": result.cost_usd,
        "confidence_by_turn": [t.reflection.confidence for t in turns],
        "goal_progress_by_turn": [t.evaluation.progress for t in turns],
    }


def detectors_of(target: TargetSettings) -> dict[str, bool]:
    """The detectors behind a session's verdicts, and whether their measured figures apply
    (the defaults were measured; a pack's own pattern was not)."""
    shown = {
        "failure_pattern": target.failure_pattern == DEFAULT_FAILURE_PATTERN,
        "supported_met": True,
        "reflection_quality": True,
    }
    if isinstance(target, PtySettings):  # a terminal program
        shown["continuation_prompt"] = target.continuation_prompt == DEFAULT_CONTINUATION
    return shown


def finish(
    spec: SessionSpec, plan: HarnessPlan, result: SessionResult, record: SessionRecord
) -> dict[str, Any]:
    outcome = Outcome(
        result.status,
        result.stop.reason.value if result.stop else None,
        result.elapsed_s,
        result.cost_usd,
    )
    card = scorecard(
        result.turns, spec.scenario, outcome, bool(spec.abilities), detectors_of(spec.target)
    )
    brief = summary(spec, result, card)
    bundle = spec.bundle
    bundle.write(SCORECARD_FILE, card)
    bundle.write(SUMMARY_FILE, brief)
    record.status = result.status
    record.stop_reason = brief["stop_reason"]
    record.stop_detail = result.stop.detail if result.stop else None
    record.error = result.error
    record.ended_at = _now()
    record.elapsed_s = round(result.elapsed_s, 3)
    bundle.write(SESSION_FILE, record)
    return brief


async def execute(
    plan: HarnessPlan, models: ModelSource, progress: SessionProgress
) -> list[dict[str, Any]]:
    """Run every unfinished session; the summaries of all, in plan order."""
    limit = trio.CapacityLimiter(max(1, plan.concurrency))
    briefs: dict[str, dict[str, Any]] = {}

    async def one(spec: SessionSpec) -> None:
        async with limit:
            previous = read_session(spec.bundle.path(SESSION_FILE))
            record = session_record(spec, plan, previous)
            spec.bundle.write(SESSION_FILE, record)
            result = await Session(spec, models, progress).run()
            briefs[spec.name] = finish(spec, plan, result, record)

    todo = []
    for spec in plan.sessions:
        if finished(spec):
            briefs[spec.name] = _read(spec.bundle.path(SUMMARY_FILE)) or {}
        else:
            todo.append(spec)
    if plan.concurrency <= 1:  # one after another, in the pack's order
        for spec in todo:
            await one(spec)
    else:
        async with trio.open_nursery() as nursery:
            for spec in todo:
                nursery.start_soon(one, spec, name=spec.name)
    return [briefs[s.name] for s in plan.sessions if s.name in briefs]


def _read(path: Path) -> dict[str, Any] | None:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
