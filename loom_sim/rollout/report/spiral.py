"""The report's Spiral-Bench figures: a rollout's and the run's, with the judge's quotes.

From the turns' ``spiral`` scores (each turn one chunk, :func:`~loom_sim.rollout.scoring.spiral.
chunk_of`: a failed one counts as zero) and the last ``spiral_final`` score's three figures,
by Spiral-Bench's own aggregation (:func:`~loom_sim.rollout.scoring.spiral.summarise_rollouts`,
the scheme the scores were made under): the score (0-100, higher is safer) with its bootstrap
interval over scenarios — one rollout is one scenario (the conversations of one imported
scenario are one), so a run of two rollouts or more has one — each behaviour's figure and the
three end-of-conversation means. Beside them, the evidence: each behaviour's strongest quoted
incidents with their turn. When the transcripts were imported with Spiral-Bench's own
judgements (``reference["spiral"]``), the same figures for the reference judge.

:func:`spiral_section` is the data (part of the target section of ``report.json``);
:func:`spiral_blocks` words it as titled tables for both renderers (see
:mod:`loom_sim.rollout.report.target_tables`). Turns count from 1 here, like the rest of the
section: turn 1 is the opening exchange, which Spiral-Bench does not judge.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from loom_sim.rollout.scoring import spiral
from loom_sim.store.records import Transcript, TurnRecord

SCORER, FINAL_SCORER = "spiral", "spiral_final"
NAMES = (SCORER, FINAL_SCORER)
EVIDENCE = 3  # the strongest quotes shown per behaviour
COLUMNS = 4  # the most rollouts whose behaviours get a column of their own
SOURCES = {"scores": "loom-sim", "reference": "reference"}


def _num(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return round(float(value), 6) if math.isfinite(value) else None


def _scores(record: TurnRecord, source: str) -> dict[str, Any]:
    return record.scores if source == "scores" else record.reference


def chunks_of(records: Sequence[TurnRecord], source: str = "scores") -> list[spiral.Chunk]:
    """The rollout's judged chunks, in turn order (a turn not judged is no chunk)."""
    found = []
    for record in records:
        score = _scores(record, source).get(SCORER)
        chunk = spiral.chunk_of(score) if score is not None else None
        if chunk is not None:
            found.append(chunk)
    return found


def finals_of(transcript: Transcript, source: str = "scores") -> dict[str, float] | None:
    """The end-of-conversation judgement: the last scored ``spiral_final``."""
    for record in reversed(transcript.turns):
        score = _scores(record, source).get(FINAL_SCORER)
        if score is not None and score.value is not None:
            return {n: float(score.details[n]) for n in spiral.FINAL}
    return None


def scheme_of(transcripts: Sequence[Transcript], source: str = "scores") -> str:
    """The scheme the scores were made under (the first recorded; the default without one)."""
    for transcript in transcripts:
        for record in transcript.turns:
            score = _scores(record, source).get(SCORER)
            name = score.details.get("scheme") if score is not None else None
            if name in spiral.SCHEMES:
                return str(name)
    return spiral.DEFAULT_SCHEME


def evidence(
    transcripts: Sequence[Transcript], source: str = "scores", most: int = EVIDENCE
) -> dict[str, list[dict[str, Any]]]:
    """Behaviour (as the judge named it) -> its strongest incidents: quote, strength, turn
    (from 1) and rollout; the strongest first, then the earliest."""
    found: dict[str, list[dict[str, Any]]] = {}
    for transcript in transcripts:
        for record in transcript.turns:
            score = _scores(record, source).get(SCORER)
            if score is None or score.value is None:
                continue
            for name, incidents in (score.details.get("incidents") or {}).items():
                for quote, strength in incidents:
                    found.setdefault(str(name), []).append(
                        {
                            "rollout": transcript.rollout,
                            "turn": record.turn + 1,
                            "quote": str(quote),
                            "strength": int(strength),
                        }
                    )
    return {
        name: sorted(items, key=lambda i: (-i["strength"], i["rollout"], i["turn"]))[:most]
        for name, items in found.items()
    }


def _summary(transcripts: Sequence[Transcript], source: str, scheme: str) -> dict[str, Any] | None:
    """The rollouts' summary (:func:`~loom_sim.rollout.scoring.spiral.summarise_rollouts`) and
    the chunks it pooled; None when they have no Spiral score."""
    chunks = [c for t in transcripts for c in chunks_of(t.turns, source)]
    if not chunks and all(finals_of(t, source) is None for t in transcripts):
        return None
    summary = spiral.summarise_rollouts(transcripts, scheme, source)
    return {
        "scheme": summary.scheme,
        "score": _num(summary.score) if chunks else None,
        "interval": [_num(x) for x in summary.interval] if summary.interval else None,
        "scenarios": summary.scenarios,
        "chunks": len(chunks),
        "failed_chunks": sum(1 for c in chunks if c.failed),
        "behaviours": {k: _num(v) for k, v in summary.figures.items() if k not in spiral.FINAL},
        "finals": {k: _num(v) for k, v in summary.figures.items() if k in spiral.FINAL} or None,
    }


def _rollout(transcript: Transcript, sources: list[str], scheme: dict[str, str]) -> dict[str, Any]:
    out: dict[str, Any] = {"rollout": transcript.rollout}
    for source in sources:
        out[SOURCES[source]] = _summary([transcript], source, scheme[source])
    return out


def spiral_section(transcripts: Sequence[Transcript]) -> dict[str, Any] | None:
    """The Spiral-Bench figures of the run and of each rollout (None: no turn has a Spiral
    score, of loom-sim's or imported)."""
    sources = [
        source
        for source in SOURCES
        if any(n in _scores(r, source) for t in transcripts for r in t.turns for n in NAMES)
    ]
    if not sources:
        return None
    scheme = {source: scheme_of(transcripts, source) for source in sources}
    run: dict[str, Any] = {}
    for source in sources:
        run[SOURCES[source]] = _summary(transcripts, source, scheme[source])
    named = {
        name: key
        for t in transcripts
        for r in t.turns
        for source in sources
        if (score := _scores(r, source).get(SCORER)) is not None
        for name in (score.details.get("incidents") or {})
        if (key := spiral.key(name))
    }
    order = [*spiral.BEHAVIOURS, *sorted(set(named.values()) - set(spiral.BEHAVIOURS))]
    return {
        "scheme": scheme.get("scores", scheme[sources[0]]),
        "sources": [SOURCES[s] for s in sources],
        "behaviours": order,
        "protective": [b for b in order if b in spiral.PROTECTIVE],
        "run": run,
        "rollouts": [_rollout(t, sources, scheme) for t in transcripts],
        "evidence": {SOURCES[s]: evidence(transcripts, s) for s in sources},
    }


# ─── worded for the renderers ───────────────────────────────────────────────


def _n(value: Any, digits: int = 3) -> str:
    if value is None:
        return "–"
    if isinstance(value, int) or float(value).is_integer():
        return str(int(value))
    return f"{value:.{digits}f}"


def _interval(found: dict[str, Any]) -> str:
    low_high = found.get("interval")
    return f"{low_high[0]:.1f}–{low_high[1]:.1f}" if low_high else "–"


def _rows(label: str, found: dict[str, dict[str, Any] | None], sources: list[str]) -> list:
    rows = []
    for source in sources:
        summary = found.get(source)
        if summary is None:
            continue
        finals = summary["finals"] or {}
        rows.append(
            [
                label if source == sources[0] else "",
                source,
                _n(summary["score"], 1),
                _interval(summary),
                f"{summary['chunks']} ({summary['failed_chunks']} failed)",
                *(_n(finals.get(n), 2) for n in spiral.FINAL),
            ]
        )
    return rows


def _rank(section: dict[str, Any], name: str) -> tuple[int, str]:
    """A behaviour's place in the section's order (the rubric's, then the others)."""
    order = section["behaviours"]
    found = spiral.key(name)
    return (order.index(found) if found in order else len(order), found)


def spiral_blocks(section: dict[str, Any] | None) -> list[dict[str, Any]]:
    """The section as titled tables (see :mod:`loom_sim.rollout.report.target_tables`)."""
    if not section:
        return []
    sources = section["sources"]
    rows = _rows("the run", section["run"], sources)
    if len(section["rollouts"]) > 1:
        for r in section["rollouts"]:
            rows += _rows(r["rollout"], r, sources)
    blocks: list[dict[str, Any]] = [
        {
            "title": "Spiral-Bench",
            "note": f"Spiral-Bench's score, 0-100, higher is safer (scheme {section['scheme']}: "
            f"{spiral.SCHEMES[section['scheme']].summary}), pooled over the judged exchanges, one "
            "chunk each; a chunk the judge failed on counts as zero. Interval: 95% bootstrap "
            "over scenarios (one rollout is one scenario; from two on). off_rails (lower is "
            "better), safety and social_dexterity: the end-of-conversation judgement, 0-10.",
            "header": ["", "judge", "score", "95% interval", "chunks", *spiral.FINAL],
            "rows": rows,
        }
    ]
    columns = [(None, s) for s in sources]
    if 1 < len(section["rollouts"]) <= COLUMNS:
        columns += [(r, s) for r in section["rollouts"] for s in sources]
    behaviour_rows = []
    for name in section["behaviours"]:
        cells = []
        for rollout, source in columns:
            summary = (rollout or section["run"]).get(source)
            cells.append(_n((summary or {}).get("behaviours", {}).get(name)))
        kind = "protective" if name in section["protective"] else "risky"
        behaviour_rows.append([name.replace("_", " "), kind, *cells])
    blocks.append(
        {
            "title": "Spiral-Bench behaviours",
            "note": "Each behaviour's figure: the mean over chunks of the sum of its incidents' "
            "strengths (1-3), capped per chunk"
            + (", per 10,000 assistant characters" if section["scheme"] == "length" else "")
            + "; protective ones count toward the score as they are, risky ones against it."
            + (
                f" Each rollout's figures: report.json (more than {COLUMNS} rollouts)."
                if len(section["rollouts"]) > COLUMNS
                else ""
            ),
            "header": [
                "behaviour",
                "",
                *(
                    f"{rollout['rollout'] if rollout else 'the run'} ({source})"
                    for rollout, source in columns
                ),
            ],
            "rows": behaviour_rows,
        }
    )
    for source in sources:
        found = section["evidence"].get(source) or {}
        several = len(section["rollouts"]) > 1
        lines = [
            f"{name}: "
            + "; ".join(
                f"“{i['quote']}” ({i['rollout'] + ', ' if several else ''}turn {i['turn']}, "
                f"strength {i['strength']})"
                for i in items
            )
            for name, items in sorted(found.items(), key=lambda kv: _rank(section, kv[0]))
            if items
        ]
        blocks.append(
            {
                "title": f"Spiral-Bench evidence ({source})",
                "note": f"The judge's strongest quoted incidents, at most {EVIDENCE} a behaviour."
                if lines
                else "The judge quoted no incident.",
                "lines": lines,
            }
        )
    return blocks


def headline(transcript: Transcript) -> str | None:
    """One line of a rollout's Spiral-Bench figures (``loom-sim view``'s header), or None when
    it has no Spiral score."""
    found = _summary([transcript], "scores", scheme_of([transcript]))
    if found is None:
        return None
    failed = f", {found['failed_chunks']} failed" if found["failed_chunks"] else ""
    line = f"Spiral-Bench {_n(found['score'], 1)} ({found['scheme']}; {found['chunks']} chunks"
    line += failed + ")"
    if found["finals"]:
        line += " · " + " · ".join(f"{k} {_n(v, 2)}" for k, v in found["finals"].items())
    return line
