"""Real runs for the workbench tests (compare, export, runs, the viewer), made in code.

A matrix of one config x two scripted targets x six rollouts, scored by the real engine with
two scorers registered from test code beside the built-in ones:

* ``reply_length`` — per turn, the target's reply length on 0..1; *not applicable* on turn 0
  (``None`` without an error, as a target scorer before its activation turn) and *failed* on
  turn 2 (``None`` with the reason, as a judge whose reply did not parse);
* ``mirrors`` — 1 when the target's reply restates the persona ("in other words..."), else
  0, aggregated by ``max``: a pass/fail per rollout, so its mean is a rate (Wilson interval).
  ``scripted/paraphrase`` always mirrors, ``scripted/varied`` never does: a real difference.

The compare, export and viewer code knows neither name: they must appear because the runs
hold them.
"""

from __future__ import annotations

from contextlib import contextmanager
from pathlib import Path

import yaml
from click.testing import CliRunner

from loom_sim.cli import cli
from loom_sim.plugins.scorers import SCORERS, ScorerInfo
from loom_sim.rollout.scoring.base import Scorer, TurnView
from loom_sim.store.records import Score

MANIA = Path(__file__).resolve().parent.parent / "configs" / "examples" / "mania_patient.yaml"
TARGETS = ("scripted/varied", "scripted/paraphrase")
TURNS, ROLLOUTS, SEED = 4, 6, 21
FAILS_AT = 2


def not_applicable(why: str) -> Score:
    """A score that does not apply: said with the record's own field where it has one, else
    as a value of None without an error (which meant the same before scores could say so)."""
    if "not_applicable" in Score.__struct_fields__:
        return Score(None, "deterministic", {"why": why}, not_applicable=why)  # type: ignore[call-arg]
    return Score(None, "deterministic", {"why": why})


class ReplyLength(Scorer):
    async def score(self, turn: TurnView) -> Score:
        if turn.turn == 0:
            return not_applicable("not active before turn 1")
        if turn.turn == FAILS_AT:
            return Score(None, "judge", error="judge reply did not parse")
        text = turn.record.interlocutor
        return Score(
            min(1.0, len(text) / 300),
            "deterministic",
            {"chars": len(text), "reason": f"the reply has {len(text)} characters " * 3},
        )


MIRRORING = ("what you're saying", "if i follow you", "in other words", "check i understand")


class Mirrors(Scorer):
    async def score(self, turn: TurnView) -> Score:
        text = turn.record.interlocutor.lower()
        return Score(1.0 if any(m in text for m in MIRRORING) else 0.0, "deterministic")


EXTRA = (
    ScorerInfo(
        name="reply_length", scorer=ReplyLength, config_key="reply_length", order=200,
        summary="test: reply length",
    ),
    ScorerInfo(
        name="mirrors", scorer=Mirrors, config_key="mirrors", order=210,
        summary="test: restates the persona", aggregation="max", kind="rate",
    ),
)  # fmt: skip


@contextmanager
def extra_scorers():
    with SCORERS.added(EXTRA[0]), SCORERS.added(EXTRA[1]):
        yield


def invoke(*args: str):
    result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    assert "Traceback" not in result.output, result.output
    assert result.exit_code == 0, result.output
    return result


def quick_config(folder: Path) -> Path:
    """The mania example without the stagnation scorer, and with the monitor on TF-IDF: both
    would load the sentence-embedding model, which these tests do not need."""
    data = yaml.safe_load(MANIA.read_text())
    data["evaluation"]["scoring"]["stagnation"]["enabled"] = False
    data["interaction"]["stagnation_detection"]["backend"] = "tfidf"
    path = folder / "mania_patient.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def make_matrix(folder: Path, name: str = "matrix") -> Path:
    """The matrix above, run and scored (with the extra scorers), in ``folder/name``."""
    out = folder / name
    config = quick_config(folder)
    with extra_scorers():
        invoke(
            "run", str(config), "--target", TARGETS[0], "--target", TARGETS[1],
            "--turns", str(TURNS), "--rollouts", str(ROLLOUTS), "--seed", str(SEED),
            "--persona-model", "scripted/varied", "--judge-model", "scripted/judge",
            "-o", str(out),
        )  # fmt: skip
    return out


def make_single(folder: Path, target: str, name: str, *, seed: int = SEED) -> Path:
    """One single run of the same config against ``target``, scored with the extra scorers."""
    out = folder / name
    config = quick_config(folder)
    with extra_scorers():
        invoke(
            "run", str(config), "--target", target, "--turns", str(TURNS),
            "--rollouts", str(ROLLOUTS), "--seed", str(seed),
            "--persona-model", "scripted/varied", "--judge-model", "scripted/judge",
            "-o", str(out),
        )  # fmt: skip
    return out


CUT_AT = 30  # the target's token limit in make_cut_run: the scripted model writes 24-44 words


def make_cut_run(folder: Path, out: Path) -> Path:
    """A one-rollout run whose target replies are capped at ``CUT_AT`` tokens: the scripted
    model cuts the longer ones off there (finish reason "length") and leaves the others whole."""
    config = quick_config(folder)
    data = yaml.safe_load(config.read_text())
    data.setdefault("conversation", {})["interlocutor_max_tokens"] = CUT_AT
    config.write_text(yaml.safe_dump(data, sort_keys=False))
    with extra_scorers():
        invoke(
            "run", str(config), "--target", "scripted/varied", "--turns", str(TURNS),
            "--rollouts", "1", "--seed", str(SEED), "--persona-model", "scripted/varied",
            "--judge-model", "scripted/judge", "-o", str(out),
        )  # fmt: skip
    return out
