"""The comparison's Spiral-Bench table: per model under evaluation, Spiral-Bench's own
aggregation of each judge's findings — the reference judge's (an imported result file's) and
loom-sim's (the ``spiral`` and ``spiral_final`` scores) — under both schemes, and how far the
two judges agree.

A row is one model, one judge, one scheme: the score (0-100, higher is safer) with its 95 %
bootstrap interval over scenarios, the nine behaviours' figures and the three
end-of-conversation means, made by :func:`loom_sim.rollout.scoring.spiral.summarise` from the
rollouts' per-turn scores, the conversations of one scenario pooled
(:func:`~loom_sim.rollout.scoring.spiral.scenario_of`). For an imported result file, the
reference row under the ``length`` scheme is the file's recorded summary, figure for figure.
The agreement is :func:`~loom_sim.rollout.scoring.agreement.spiral_agreement` over each model's
rollouts that both judges scored.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from loom_sim.compare.board import models_by_rollout
from loom_sim.rollout.scoring.agreement import SPIRAL, SPIRAL_FINAL, spiral_agreement
from loom_sim.rollout.scoring.spiral import (
    BEHAVIOURS,
    DEFAULT_SCHEME,
    FINAL,
    IMPORTED,
    SCHEMES,
    scenario_of,
    summarise_rollouts,
)
from loom_sim.runs.load import RolloutResult

__all__ = ["NAMES", "build_spiral", "spiral_agreement_rows", "spiral_rows"]

NAMES = (SPIRAL, SPIRAL_FINAL)
JUDGES = {"reference": "reference", "scores": "loom-sim"}
NOTE = (
    "Spiral-Bench's aggregation of each judge's findings, per model: the score (0-100, higher "
    "is safer) with its 95% bootstrap interval over scenarios, each behaviour's figure (per "
    "10,000 assistant characters in the length scheme, per exchange in the plain one) and the "
    "end-of-conversation means (0-10). The reference judge is the imported file's; under the "
    "length scheme its row reproduces the file's recorded summary."
)
AGREEMENT_NOTE = (
    "The reference judge against loom-sim's over the turns both judged: the per-turn score "
    "(interval), each behaviour's strength sum per turn, capped (ordinal), and the "
    "end-of-conversation figures (ordinal): pairs, exact agreement, Cohen's kappa (linear "
    "weights), Krippendorff's alpha."
)


def _judged(results: Sequence[RolloutResult], source: str) -> bool:
    return any(
        name in (record.reference if source == "reference" else record.scores)
        for r in results
        for record in r.transcript.turns
        for name in NAMES
    )


def _imported(r: RolloutResult) -> bool:
    return r.transcript.reference is not None and r.transcript.reference.source == IMPORTED


def _round(value: float | None, digits: int = 3) -> float | None:
    return None if value is None else round(value, digits)


def build_spiral(every: Sequence[RolloutResult]) -> dict[str, Any] | None:
    """The Spiral-Bench table of the rollouts (None when no rollout has a Spiral score)."""
    started = [r for r in every if r.transcript.turns]
    if not any(_judged(started, source) for source in JUDGES):
        return None
    column = models_by_rollout(every)
    models: dict[str, list[RolloutResult]] = {}
    for r in started:
        models.setdefault(column[id(r)], []).append(r)
    rows, agreements = [], {}
    several = len({r.run for r in started}) > 1
    for model, members in models.items():
        transcripts = [m.transcript for m in members]
        # rollout_000 of every arm of a matrix, or of two runs, is a scenario of its own
        labels = [f"{m.run}/{m.cell.id}" if several else m.cell.id for m in members]
        keys = [
            scenario_of(m.transcript) if _imported(m) else label
            for m, label in zip(members, labels, strict=True)
        ]
        for source, judge in JUDGES.items():
            if not _judged(members, source):
                continue
            for scheme in SCHEMES:
                summary = summarise_rollouts(transcripts, scheme, source, keys)
                rows.append(
                    {
                        "model": model,
                        "judge": judge,
                        "scheme": scheme,
                        "rollouts": len(members),
                        "scenarios": summary.scenarios,
                        "score": _round(summary.score, 6) if summary.scenarios else None,
                        "interval": [round(x, 6) for x in summary.interval]
                        if summary.interval
                        else None,
                        "figures": {k: _round(v, 6) for k, v in summary.figures.items()},
                    }
                )
        found = spiral_agreement([t.turns for t in transcripts], labels)
        if found:
            agreements[model] = found
    return {
        "behaviours": list(BEHAVIOURS),
        "finals": list(FINAL),
        "default_scheme": DEFAULT_SCHEME,
        "rows": rows,
        "agreement": agreements,
    }


# ─── worded for the three renderers ─────────────────────────────────────────


def _n(value: float | None, digits: int = 3) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


def spiral_rows(table: dict[str, Any]) -> tuple[list[str], list[list[str]]]:
    """The table's header and rows, the model named on its group's first row."""
    header = ["model under evaluation", "judge", "scheme", "scenarios", "score [95% interval]"]
    header += [*table["behaviours"], *table["finals"]]
    rows, previous = [], None
    for row in table["rows"]:
        score = _n(row["score"], 1)
        if row["interval"]:
            score += f" [{row['interval'][0]:.1f}, {row['interval'][1]:.1f}]"
        figures = [_n(row["figures"].get(n)) for n in (*table["behaviours"], *table["finals"])]
        model = "" if row["model"] == previous else row["model"]
        rows.append([model, row["judge"], row["scheme"], str(row["scenarios"]), score, *figures])
        previous = row["model"]
    return header, rows


def spiral_agreement_rows(table: dict[str, Any]) -> tuple[list[str], list[list[str]]]:
    header = ["model under evaluation", "score", "pairs", "exact", "weighted κ", "α", "note"]
    rows = []
    for model, found in table["agreement"].items():
        for k, (name, a) in enumerate(found.items()):
            rows.append(
                [
                    model if k == 0 else "",
                    name,
                    str(a["pairs"]),
                    f"{a['exact']:.0%}" if a["exact"] is not None else "–",
                    _n(a["kappa"], 2),
                    _n(a["alpha"], 2) + (f" ({a['level']})" if a["alpha"] is not None else ""),
                    a["undefined"] or "",
                ]
            )
    return header, rows
