"""The probe summary: ``summary.json`` and ``summary.md``, rebuilt from every ``<mode>.jsonl``.

The summary is a pure function of the logs and ``probe.json``, so it can be regenerated at any
time (``loom-sim probe --summary-only DIR``) and always describes every mode in the directory,
including modes added later. It answers the probe's questions in order:

1. Do the modes differ? Success rate per mode, with 95% Wilson intervals, side by side.
2. Which contradictions did adapting find that the baseline missed? Run *i* of two modes asked
   the same prompt with the same Turn-1 seed, so a run where adaptive succeeded and static did
   not is a contradiction the adaptation found (on a deterministic target, from the very same
   Turn-1 answer).
3. Where does it work? Success by Turn-1 category, by strategy, by prompt category.
4. Does the bandit learn? Its cumulative expected regret, run by run, against the true success
   rates when the target's are known (the scripted stand-in) or else the empirical rates per
   (category, strategy) pooled over every logged run of every mode.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec

from loom_sim.probe import stats
from loom_sim.probe.plan import read_probe_file
from loom_sim.probe.probe_file import BanditStateRecord, ProbeFileRecord
from loom_sim.probe.records import MODES, ProbeRecord, log_path, read_log
from loom_sim.probe.stand_ins import JUDGE_SPEC, TARGET_SPEC
from loom_sim.probe.summary_md import render_markdown
from loom_sim.store.artifacts import write_json

SUMMARY_JSON = "summary.json"
SUMMARY_MD = "summary.md"
EXCERPT_WORDS = 24


def shorten(text: str, words: int = EXCERPT_WORDS) -> str:
    """The first ``words`` words of ``text`` on one line ("…" when cut)."""
    parts = text.split()
    return " ".join(parts[:words]) + ("…" if len(parts) > words else "")


def load_logs(directory: Path) -> dict[str, list[ProbeRecord]]:
    """The records of every mode logged in ``directory``, in the order static, adaptive,
    bandit."""
    return {
        mode: read_log(log_path(directory, mode))
        for mode in MODES
        if log_path(directory, mode).exists()
    }


def stand_in_notes(models: dict[str, str]) -> list[str]:
    """Warnings for models whose answers or verdicts are not evidence about a real model."""
    notes = []
    for role, spec in models.items():
        if spec == TARGET_SPEC:
            notes.append(
                f"The {role} `{spec}` is a scripted stand-in, not a model: its answers follow "
                "fixed reversal rates per category and strategy (docs/probe.md). These numbers "
                "test the probe, not a model."
            )
        elif spec == JUDGE_SPEC:
            notes.append(
                f"The {role} `{spec}` is a scripted stand-in that reads explicit recantations "
                '("I was wrong", "I stand corrected") by keyword; it is not a model.'
            )
        elif spec.startswith("scripted/"):
            notes.append(
                f"The {role} `{spec}` is a scripted model: its "
                + ("verdicts are random." if role == "judge" else "answers are canned.")
            )
        elif spec == "local/smollm2":
            notes.append(
                f"The {role} `{spec}` is the embedded SmolLM2-135M, a tiny model: its "
                + ("verdicts mean little." if role == "judge" else "answers mean little.")
            )
    return notes


def summarise(directory: Path) -> dict[str, Any]:
    probe = read_probe_file(directory)
    logs = load_logs(directory)
    everything = [r for records in logs.values() for r in records]
    models = dict(probe.models)
    summary: dict[str, Any] = {
        "directory": str(directory),
        "config_name": probe.config_name,
        "seed": probe.seed,
        "models": models,
        "rubric": msgspec.to_builtins(probe.rubric),
        "notes": stand_in_notes(models),
        "modes": {},
    }
    for key, name in (
        ("by_category", lambda r: r.category),
        ("by_strategy", lambda r: r.strategy),
        ("by_prompt_category", lambda r: r.prompt_category),
    ):
        summary[key] = {
            mode: {k: v.to_dict() for k, v in stats.tally(records, name).items()}
            for mode, records in logs.items()
        }
    summary["comparisons"] = [
        _comparison(logs, found_by, baseline)
        for found_by, baseline in (("adaptive", "static"), ("bandit", "static"))
        if found_by in logs and baseline in logs
    ]
    summary["regret"] = _regret(probe, logs, everything)
    summary["regret"]["bandit_state"] = _bandit_state(probe)
    final = summary["regret"]["curves"]
    for mode, records in logs.items():
        entry = stats.tally(records)["all"].to_dict() if records else stats.Rate().to_dict()
        curve = final.get(mode) or []
        entry["regret_per_run"] = round(curve[-1] / len(curve), 4) if curve else None
        planned = probe.modes.get(mode)
        entry["status"] = planned.status if planned is not None else None
        summary["modes"][mode] = entry
    return summary


def _comparison(logs: dict[str, list[ProbeRecord]], found_by: str, baseline: str) -> dict:
    matched = stats.pairs(logs[found_by], logs[baseline])
    counts = stats.pair_counts(matched)
    found = [
        {
            "run_id": p.run_id,
            "prompt_id": p.first.prompt_id,
            "prompt": p.first.prompt,
            "prompt_category": p.first.prompt_category,
            "category": p.first.category,
            "baseline_category": p.second.category,
            "strategy": p.first.strategy,
            "baseline_strategy": p.second.strategy,
            "turn1_answer": shorten(p.first.turn1_answer),
            "answer": shorten(p.first.turn2_answer),
            "baseline_answer": shorten(p.second.turn2_answer),
            "evidence": p.first.judge.evidence,
        }
        for p in matched
        if p.first.success is True and p.second.success is False
    ]
    return {
        "found_by": found_by,
        "baseline": baseline,
        "paired": counts["paired"],
        f"only_{found_by}": counts["only_first"],
        f"only_{baseline}": counts["only_second"],
        "both": counts["both"],
        "neither": counts["neither"],
        "unjudged": counts["unjudged"],
        "found": found,
    }


def _regret(
    probe: ProbeFileRecord, logs: dict[str, list[ProbeRecord]], everything: list[ProbeRecord]
) -> dict[str, Any]:
    true_rates = probe.true_rates
    if true_rates:
        rates = true_rates
        reference = "true"
        note = "true success rates of the scripted stand-in target per (Turn-1 category, strategy)"
    else:
        rates = stats.empirical_rates(everything)
        reference = "empirical"
        judged = sum(1 for r in everything if r.success is not None)
        note = (
            "empirical success rates per (Turn-1 category, strategy), pooled over the "
            f"{judged} judged runs of every mode in this directory; a strategy never judged "
            "in a category is left out of that category's best"
        )
    curves = {
        mode: stats.regret_curve(((r.category, r.strategy) for r in records), rates)
        for mode, records in logs.items()
    }
    return {"reference": reference, "note": note, "rates": rates, "curves": curves}


def _bandit_state(probe: ProbeFileRecord) -> dict[str, Any] | None:
    """Where the bandit's counts live and how many outcomes it had learned before and after
    this directory's bandit runs (it may have started from an earlier probe's)."""
    bandit = probe.modes.get("bandit")
    state = bandit.bandit_state if bandit is not None else msgspec.UNSET
    if not isinstance(state, BanditStateRecord):
        return None

    def learned(counts: dict[str, Any] | None) -> int | None:
        if counts is None:
            return None
        return sum(
            n["successes"] + n["failures"] for arms in counts.values() for n in arms.values()
        )

    return {
        "path": state.path,
        "learned_before": learned(state.counts_before),
        "learned_after": learned(
            None if state.counts_after is msgspec.UNSET else state.counts_after
        ),
    }


def write_summary(directory: Path) -> tuple[dict[str, Any], list[Path]]:
    """Rebuild ``summary.json`` and ``summary.md`` from the directory's logs."""
    summary = summarise(directory)
    json_path, md_path = directory / SUMMARY_JSON, directory / SUMMARY_MD
    write_json(json_path, summary)
    tmp = md_path.with_suffix(".md.tmp")
    tmp.write_text(render_markdown(summary), encoding="utf-8")
    tmp.replace(md_path)
    return summary, [md_path, json_path]
