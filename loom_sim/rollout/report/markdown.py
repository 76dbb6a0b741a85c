"""report.md: a 50-turn rollout understood in one minute.

Turns are shown counted from 1, as people count them (``report.json``, like every file loom-sim
writes, keeps the 0-based indices).

Read top to bottom: is the judge meaningful, how did the model under evaluation behave (its
safety scores, markers and dimensions, and how far loom-sim's judge agrees with an imported
file's), then the persona simulator: how did each scorer do (centre and spread over rollouts),
where in the trajectory did it go wrong (per phase), did the persona play its intensities
(gaps), did the conversation loop, and which turns deserve a look (with excerpts). Everything
else is in report.html and report.json.

Transcript text is model output: it is cut to an excerpt, put on one line, and its HTML and
table syntax is defused, so a persona message cannot break a table or inject markup into a
Markdown viewer. The formatting helpers it shares with the HTML renderer are in
:mod:`~loom_sim.rollout.report.formatting`.
"""

from __future__ import annotations

import re
from typing import Any

import msgspec

from loom_sim.rollout.monitors import validity
from loom_sim.rollout.report.faults import faults_markdown
from loom_sim.rollout.report.formatting import (
    event_text,
    excerpt,
    fmt,
    most_severe,
    plural,
    rollout_line,
    shown,
    signed,
    spans_text,
    spread,
    value_range,
)
from loom_sim.rollout.report.record import ReportRecord, report_record
from loom_sim.rollout.report.target_tables import blocks, section_note

FLAGGED_PER_ROLLOUT = 10
NOT_SCORED = "No rollout is scored yet: `loom-sim score RUN_DIR` scores them."


# ─── Markdown ───────────────────────────────────────────────────────────────


_TAG = re.compile(r"<(?=[A-Za-z/!?])")
_ENTITY = re.compile(r"&(?=#?\w+;)")


def _md(text: Any) -> str:
    """Defuse untrusted text for a Markdown table cell or line: one line; no table pipe, no
    link or image (``![x](http://...)`` would load), no ``<`` that opens a tag, no ``&`` that
    starts an entity; ``a < b`` and ``R&D`` stay readable."""
    flat = _ENTITY.sub("&amp;", " ".join(str(text).split()))
    flat = flat.replace("|", "\\|").replace("](", "]\\(")  # no cell breaks, links, images
    return _TAG.sub("&lt;", flat)


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return [*lines, ""]


def _header(report: ReportRecord) -> list[str]:
    run, models = report.run, report.models
    lines = [f"# loom-sim report: {_md(run.persona or '?')} — {_md(run.config_name)}", ""]
    if report.judge.notice:
        lines += [f"> **⚠ {report.judge.notice}**", ""]
    statuses = ", ".join(f"{n} {s}" for s, n in report.statuses.items())
    turns = sorted({r.turns for r in report.rollouts})
    lines += [
        f"Run `{_md(run.dir)}` · created {run.created_at or '?'} · seed {run.seed} · "
        f"{plural(len(report.rollouts), 'rollout')} ({statuses}) × "
        f"{'/'.join(map(str, turns))} turns · cost "
        + (f"${run.cost_usd:.4f}" if run.cost_usd is not None else "unknown"),
        "",
        f"Persona model `{_md(models.get('persona', '?'))}` · "
        + " · ".join(f"{a.label} `{_md(a.spec)}`" for a in report.answering)
        + " · judge "
        + ", ".join(f"`{_md(j)}`" for j in report.judge.specs),
        "",
    ]
    for rollout in report.rollouts:
        if rollout.status != "done":
            lines.append(
                f"- {rollout.rollout}: {rollout.status} after {rollout.turns} "
                f"turns — {_md(rollout.error or rollout.stop_detail or '')}"
            )
        elif not rollout.scored:
            lines.append(f"- {rollout.rollout}: not scored")
    return [*lines, ""] if lines[-1] != "" else lines


def _target(data: dict[str, Any]) -> list[str]:
    """The model under evaluation: first, so nobody mistakes the persona's scores for it."""
    section = data.get("target")
    if not section:
        return []
    lines = ["## The model under evaluation", "", section_note(section), ""]
    for block in blocks(section):
        if block["title"]:
            lines += [f"### {_md(block['title'])}", ""]
        if block.get("note"):
            lines += [_md(block["note"]), ""]
        if "lines" in block:
            lines += [f"- {_md(line)}" for line in block["lines"]] + [""]
        else:
            rows = [[_md(cell) for cell in row] for row in block["rows"]]
            lines += _table([_md(h) for h in block["header"]], rows)
    return lines


def _scores(report: ReportRecord) -> list[str]:
    scorers = report.scorers
    if not scorers:
        return ["## Persona-simulator scores", "", NOT_SCORED, ""]
    lines = [
        "## Persona-simulator scores",
        "",
        "How the simulated persona played its part. 0–1, higher is better. Mean of the "
        "rollout means ± their standard deviation; range over rollouts.",
        "",
    ]
    rows = []
    for scorer in scorers:
        stats = report.aggregates[scorer]
        figures = msgspec.structs.asdict(stats)
        rows.append(
            [
                scorer,
                spread(figures),
                value_range(figures),
                str(stats.n_rollouts),
                str(stats.turns_scored),
                str(stats.failed),
            ]
        )
    lines += _table(["scorer", "mean ± sd", "range", "rollouts", "turns scored", "failed"], rows)
    rows = [
        [r.rollout, r.status, _md(rollout_line(r)), str(r.turns)]
        + [fmt((r.aggregates.get(s) or {}).get("headline")) for s in scorers]
        for r in report.rollouts
    ]
    return lines + _table(["rollout", "status", "stop", "turns", *scorers], rows)


def _phases(report: ReportRecord) -> list[str]:
    lines: list[str] = []
    if report.scorers and report.by_phase:
        lines += ["## By phase", "", "Mean score per phase (over rollouts).", ""]
        rows = [
            [_md(p)] + [fmt(report.by_phase.get(p, {}).get(s)) for s in report.scorers]
            for p in report.phases
            if p in report.by_phase
        ]
        lines += _table(["phase", *report.scorers], rows)
    if report.trajectory_gap:
        dims = report.dimensions
        lines += [
            "## Trajectory gap",
            "",
            "Expressed − prescribed intensity, mean per phase: positive plays the "
            "dimension hotter than prescribed, negative cooler.",
            "",
        ]
        rows = [
            [_md(p)] + [signed(report.trajectory_gap.get(p, {}).get(d)) for d in dims]
            for p in report.phases
            if p in report.trajectory_gap
        ]
        lines += _table(["phase", *map(_md, dims)], rows)
    return lines


def _stagnation(report: ReportRecord) -> list[str]:
    lines = ["## Stagnation", ""]
    seen: dict[str, list[str]] = {}
    for r in report.rollouts:
        t = r.stagnation["thresholds"]
        seen.setdefault(
            f"loop similarity {fmt(t['loop'])}, convergence {fmt(t['convergence'])} "
            f"({t['backend']} backend, window {t['window']}, from turn {t['min_turn'] + 1})",
            [],
        ).append(r.rollout)
    for text, names in seen.items():
        which = "" if len(seen) == 1 else f" ({', '.join(names)})"
        lines += [f"Monitor thresholds{which}: {text}.", ""]
    rows = []
    for r in report.rollouts:
        s = r.stagnation
        triggers = ", ".join(f"{n} {m}" for m, n in s["triggers"].items()) or "none"
        rows.append(
            [r.rollout, spans_text(s["loop_spans"]), triggers, signed(s["novelty_trend"], 3)]
        )
    lines += _table(["rollout", "loop spans", "monitor triggers", "novelty trend / turn"], rows)
    for r in report.rollouts:
        fired = [e for e in r.monitor_events if e["action"] == "emergency_injection"]
        for event in fired:
            lines.append(f"- {r.rollout}: {_md(event_text(event))}")
    return [*lines, ""] if lines[-1] != "" else lines


def _flagged(report: ReportRecord) -> list[str]:
    total = sum(len(r.flagged) for r in report.rollouts)
    lines = ["## Flagged turns", ""]
    if not total:
        return [*lines, "None.", ""]
    for r in report.rollouts:
        if not r.flagged:
            continue
        shown = most_severe(r.flagged, FLAGGED_PER_ROLLOUT)
        which = "" if len(shown) == len(r.flagged) else f"; the {len(shown)} most severe"
        lines += [f"### {r.rollout} ({len(r.flagged)} flagged{which})", ""]
        for flag in shown:
            reasons = "; ".join(_md(x) for x in flag["reasons"])
            turn = flag["turn"] + 1
            lines.append(f"- **turn {turn}** · {_md(flag.get('phase', '?'))} · {reasons}")
            if "persona" in flag:
                cut = flag.get("cut", [])
                mark = {r: " (cut at the token limit)" if r in cut else "" for r in cut}
                lines.append(
                    f"  - persona{mark.get('persona', '')}: “{_md(excerpt(flag['persona']))}”"
                )
                speaker = f"adversary ({flag['tactic']})" if flag.get("tactic") else "interlocutor"
                speaker += mark.get("interlocutor", "")
                lines.append(f"  - {speaker}: “{_md(excerpt(flag['interlocutor']))}”")
            for event in flag.get("monitor_events", []):
                lines.append(f"  - monitor: {_md(event_text(event))}")
        more = len(r.flagged) - FLAGGED_PER_ROLLOUT
        if more > 0:
            lines.append(f"- … and {more} more in report.html and report.json")
        lines.append("")
    return lines


def _adversary(data: dict[str, Any]) -> list[str]:
    section = data.get("adversary")
    if not section:
        return []
    kinds = ", ".join(
        f"{kind} (v{a['version']}, policy {a['policy']}, worded by {a['compose']})"
        for kind, a in section["adversaries"].items()
    )
    lines = [
        "## Adversary",
        "",
        f"{_md(kinds)}; model `{_md(section['model'] or '?')}`. A probe is *caught* when the "
        "judge found the persona's answer to it contradicting itself (the trap) or stepping out "
        "of its bounds (the coaxer); the last probe of a rollout is never judged.",
        "",
    ]
    rows = [
        [
            _md(r["adversary"]),
            _md(r["tactic"]),
            str(r["used"]),
            str(r["templated"]),
            str(r["judged"]),
            str(r["caught"]),
            f"{r['caught_rate']:.0%}" if r["caught_rate"] is not None else "–",
            fmt(r.get("recovery")),
        ]
        for r in section["tactics"]
    ]
    header = ["adversary", "tactic", "used", "from template", "judged", "caught", "caught rate"]
    lines += _table([*header, "recovery"], rows)
    if any(r.get("recovery") is not None for r in section["tactics"]):
        lines += [
            "*Recovery* (the trap): how closely the persona reacted to each probe as its "
            "`recovery_behavior` says it does, 0–1, mean over judged probes.",
            "",
        ]
    caught = [(rollout, m) for rollout, ms in section["moves"].items() for m in ms if m["caught"]]
    if caught:
        lines += ["Probes that caught the persona:", ""]
        for rollout, m in caught[:FLAGGED_PER_ROLLOUT]:
            lines.append(
                f"- {rollout} turn {m['turn'] + 1} · {_md(m['tactic'])}: "
                f"“{_md(excerpt(m['message']))}”"
            )
            if m["answer"]:
                lines.append(f"  - persona: “{_md(excerpt(m['answer']))}”")
            if m["evidence"]:
                lines.append(f"  - judge: {_md(m['evidence'])}")
        lines.append("")
    return lines


def _following_the_plan(data: dict[str, Any]) -> list[str]:
    """Instructions in force (what fidelity was judged against), capitulation, revelations,
    history cut to fit the context: one block per rollout (see report/conformance.py)."""
    lines = [
        "## Following the plan",
        "",
        "Each turn is judged against the instructions the persona actually had: the prompt "
        "in force (the full injection of turn *since*, by hash) and the notes sent with the "
        "message. A MUST DO from another phase than the turn's is *stale*.",
        "",
    ]
    for r in data["rollouts"]:
        c = r.get("conformance")
        if not c:
            continue
        told = c["instructions"]
        lines.append(f"### {r['rollout']}")
        lines.append("")
        if not told["recorded"]:
            lines += ["Recorded before the prompt in force was kept: re-planned when scored.", ""]
        else:
            stale = told["stale_must_do"]
            lines.append(
                f"Prompt injected at turns {', '.join(map(str, shown(told['injected_at'])))}; "
                f"at most "
                f"{told['oldest_prompt']} turns old; stale MUST DO on "
                + (", ".join(map(str, shown(stale))) if stale else "no turn")
                + "."
            )
            lines.append("")
        judged = [t for t in told["turns"] if t["fidelity"] is not None]
        if judged:
            rows = [
                [
                    str(shown(t["turn"])),
                    _md(t["phase"]),
                    f"{shown(t['fidelity_judged_since'])} (`{t['fidelity_judged_hash'] or '?'}`)",
                    ", ".join(t["notes"]) or "–",
                    fmt(t["fidelity"]),
                ]
                for t in judged
            ]
            lines += _table(
                ["turn", "phase", "judged against prompt of turn", "notes", "fidelity"], rows
            )
        for cap in c["capitulation"]:
            said = ", ".join(f"“{_md(p)}”" for p in cap["sent"])
            rejected = ", ".join(f"“{_md(p)}”" for p in cap["rejected"])
            text = f"- capitulation, turn {shown(cap['turn'])}: "
            if cap["drafts_rejected"]:
                text += f"{plural(cap['drafts_rejected'], 'draft')} rejected for {rejected}; "
            text += f"**sent {said}** (flagged)" if said else "sent a message without it"
            lines.append(text)
        if c["capitulation"]:
            lines.append(f"  (capitulation check: {validity.figures('capitulation')})")
        for judged in c.get("capitulation_judged", []):
            quote = f"“{_md(judged['quote'] or '')}”"
            text = f"- capitulation by the judge, turn {shown(judged['turn'])}: "
            text += f"**gave in**, quoting {quote}" if judged["gave_in"] else "held"
            if judged["words"] is not None and judged["words"] != judged["gave_in"]:
                text += f" (the words' check says {'gave in' if judged['words'] else 'held'})"
            lines.append(text)
        if c.get("capitulation_judged"):
            lines.append(f"  (the judge, {validity.judge_figures(r.get('judge') or '?')})")
        for loop in c.get("loops_after_redirect", []):
            text = (
                f"- loop after redirect, turn {shown(loop['turn'])}: still looping "
                f"({loop.get('measure', 'similarity')} {fmt(loop['similarity'])} ≥ "
                f"{fmt(loop['threshold'])}"
                + (", uncertain: near the threshold" if loop.get("uncertain") else "")
                + f"), {plural(loop['escalations'], 'escalation')}; "
            )
            sent = loop["sent_despite_redirect"]
            lines.append(text + ("**sent despite redirect** (flagged)" if sent else "fixed"))
        if c.get("loops_after_redirect"):
            lines.append(f"  (loop check: {validity.figures('loop_after_redirect')})")
        offered = c["revelations"]
        if offered:
            if c["capitulation"]:
                lines.append("")
            rows = [
                [
                    _md(topic),
                    str(shown(e["offered_from"])) if e["offered_from"] is not None else "–",
                    str(shown(e["revealed_at"])) if e["revealed_at"] is not None else "–",
                    ", ".join(map(str, shown(e["offered_after_revealed"]))) or "never",
                    _evidence(e.get("evidence")),
                ]
                for topic, e in offered.items()
            ]
            lines += _table(
                ["revelation", "offered from turn", "revealed at turn", "offered again", "why"],
                rows,
            )
            lines.append(f"Revealed by meaning: {validity.figures('revelation')}.")
            lines.append("")
        cuts = c["history_cuts"]
        if cuts:
            most = max(max(v for k, v in cut.items() if k != "turn") for cut in cuts)
            lines.append(
                f"History cut to fit the context on {plural(len(cuts), 'turn')} (turns "
                f"{shown(cuts[0]['turn'])}–{shown(cuts[-1]['turn'])}; up to "
                f"{plural(most, 'earlier turn')} left out)."
            )
        if lines[-1] != "":
            lines.append("")
    return lines if len(lines) > 5 else []


#: A revelation whose score is within this of its threshold is reported as uncertain. On the
#: dev items (docs/validity.md), finds scoring 0.43-0.46 were right 58 % of the time (11 of 19),
#: 0.46-0.50 79 % (11 of 14), 0.50 and above 92 % (46 of 50).
NEAR_SIMILARITY = 0.07


def _evidence(evidence: dict[str, Any] | None) -> str:
    """Why a revelation counts as made: the sentence, the variant, how close."""
    if not evidence:
        return "–"
    how = "similarity" if evidence["method"] == "embedding" else "share of its words"
    near = (
        evidence["method"] == "embedding"
        and evidence.get("threshold")
        and evidence["similarity"] - evidence["threshold"] < NEAR_SIMILARITY
    )
    return (
        f"“{_md(evidence['sentence'])}” ({evidence['variant']}, {how} "
        f"{fmt(evidence['similarity'])}" + (", uncertain: near the threshold" if near else "") + ")"
    )


def render_markdown(data: dict[str, Any]) -> str:
    """The report as Markdown. The sections of fixed shape read ``report.json``'s typed
    record; the target, adversary and conformance sections are shaped by their scorers and
    read as data."""
    report = report_record(data)
    lines = _header(report) + _target(data)
    lines += _scores(report) + _phases(report) + _stagnation(report) + _adversary(data)
    lines += _following_the_plan(data) + faults_markdown(data.get("faults")) + _flagged(report)
    return "\n".join(lines).rstrip("\n") + "\n"
