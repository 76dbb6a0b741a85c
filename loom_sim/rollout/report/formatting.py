"""Formatting shared by the two renderers of a run's report (report.md and report.html).

Transcript text is model output: an excerpt is cut, put on one line, and left for each
renderer to escape in its own syntax.
"""

from __future__ import annotations

from typing import Any

import msgspec

from loom_sim.rollout.report.record import RolloutReport

__all__ = [
    "EXCERPT",
    "event_text",
    "excerpt",
    "fmt",
    "most_severe",
    "plural",
    "rollout_line",
    "shown",
    "signed",
    "spans_text",
    "spread",
    "value_range",
]

#: The longest excerpt of a message shown in a report, in characters.
EXCERPT = 160


def plural(n: int, word: str) -> str:
    return f"{n} {word}" + ("" if n == 1 else "s")


def fmt(value: Any, digits: int = 2) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


def signed(value: Any, digits: int = 2) -> str:
    return "–" if value is None else f"{value:+.{digits}f}".replace("-", "−")


def spread(stats: dict[str, Any]) -> str:
    """``0.72 ± 0.05``; the ± part only when there is a spread (two rollouts or more)."""
    if stats.get("mean") is None:
        return "–"
    if stats.get("std") is None:
        return fmt(stats["mean"])
    return f"{fmt(stats['mean'])} ± {fmt(stats['std'])}"


def value_range(stats: dict[str, Any]) -> str:
    if stats.get("min") is None:
        return "–"
    return f"{fmt(stats['min'])}–{fmt(stats['max'])}"


def excerpt(text: str | None, limit: int = EXCERPT) -> str:
    """One line, at most ``limit`` characters (an ellipsis marks the cut)."""
    flat = " ".join((text or "").split())
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


def shown(turns: Any) -> Any:
    """A turn index (or a list of them) as people count turns: from 1."""
    if isinstance(turns, list):
        return [shown(t) for t in turns]
    return turns + 1 if isinstance(turns, int) and not isinstance(turns, bool) else turns


def event_text(event: dict[str, Any]) -> str:
    """``turn 14 stagnation 0.84 ≥ 0.70 → emergency_injection`` (or the pattern, for the
    repetition guard, which has no value)."""
    what = f"{event['monitor']} {fmt(event['value'])} ≥ {fmt(event['threshold'])}"
    if event["value"] is None:
        what = f"{event['monitor']} ({event['pattern']})"
    return f"turn {event['turn'] + 1} {what} → {event['action']}"  # people count from 1


def spans_text(spans: list[Any]) -> str:
    parts = []
    for span in spans:
        if isinstance(span, list | tuple) and len(span) >= 3:
            parts.append(f"turns {span[0] + 1}–{span[1] + 1} (peak {fmt(span[2])})")
        elif isinstance(span, dict):  # the analysis's own shape, should a scorer keep it
            start, end = span.get("start"), span.get("end")
            shown = (
                f"{start + 1}–{end + 1}"
                if isinstance(start, int) and isinstance(end, int)
                else f"{start}–{end}"
            )
            parts.append(f"turns {shown} (peak {fmt(span.get('peak'))})")
    return "; ".join(parts) or "none"


def most_severe(flagged: list[dict[str, Any]], limit: int) -> list[dict[str, Any]]:
    """At most ``limit`` flagged turns, in turn order: first those where a monitor had to
    intervene, then those with the lowest score, then the most reasons."""

    def severity(flag: dict[str, Any]) -> tuple:
        intervened = any(
            e["action"] == "emergency_injection" for e in flag.get("monitor_events", [])
        )
        values = [v for v in (flag.get("scores") or {}).values() if v is not None]
        return (not intervened, min(values, default=1.0), -len(flag["reasons"]), flag["turn"])

    return sorted(sorted(flagged, key=severity)[:limit], key=lambda f: f["turn"])


def rollout_line(rollout: RolloutReport | dict[str, Any]) -> str:
    """How a rollout stopped, in a few words (the HTML page gives it as data)."""
    if isinstance(rollout, RolloutReport):
        rollout = msgspec.structs.asdict(rollout)
    stop = rollout["stop_reason"] or rollout["status"]
    if rollout["status"] == "error":
        stop = f"error: {excerpt(rollout['error'], 100)}"
    return stop
