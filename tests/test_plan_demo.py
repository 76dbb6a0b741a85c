"""Issue 20's "done when", end to end through the CLI: the mania example, scripted models, 50
turns, fidelity on every turn. The report shows every turn judged against the prompt in force,
the capitulation check firing on a scripted "you're right" persona, and no revelation offered
twice."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from loom_sim.cli import cli

ROOT = Path(__file__).parent.parent
MANIA = ROOT / "configs" / "examples" / "mania_patient.yaml"
SCRIPTED = ROOT / "configs" / "scripted"
GIVES_IN = (14, 38)  # the script's "You're right" line, and again when the script cycles


@pytest.fixture(scope="module")
def report(tmp_path_factory) -> tuple[dict, str, Path]:
    tmp = tmp_path_factory.mktemp("demo")
    config = yaml.safe_load(MANIA.read_text())
    config["evaluation"]["scoring"]["fidelity"]["sample_rate"] = 1.0  # every turn
    path = tmp / "mania_patient.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    out = tmp / "run"
    result = CliRunner().invoke(
        cli,
        [
            "run",
            str(path),
            "--turns",
            "50",
            "-o",
            str(out),
            "--seed",
            "5",
            "--persona-model",
            f"scripted/{SCRIPTED / 'marcus_agrees.yaml'}",
            "--target",
            f"scripted/{SCRIPTED / 'assistant.yaml'}",
            "--judge-model",
            "scripted/judge",
        ],
    )
    assert result.exit_code == 0, result.output
    return json.loads((out / "report.json").read_text()), (out / "report.md").read_text(), out


@pytest.mark.slow
def test_fidelity_is_judged_against_the_prompt_in_force_on_every_turn(report):
    data, markdown, _ = report
    (rollout,) = data["rollouts"]
    told = rollout["conformance"]["instructions"]
    assert told["recorded"] and len(told["turns"]) == 50
    assert told["stale_must_do"] == []  # no turn held another phase's MUST DO
    for turn in told["turns"]:
        assert turn["fidelity"] is not None, turn["turn"]
        assert (turn["fidelity_judged_since"], turn["fidelity_judged_hash"]) == (
            turn["since"],
            turn["hash"],
        )
    assert {8, 18, 33, 43} <= set(told["injected_at"])  # every phase start
    assert "## Following the plan" in markdown
    assert "stale MUST DO on no turn" in markdown
    assert markdown.count("| judged against prompt of turn |") == 1


@pytest.mark.slow
def test_the_capitulation_check_fires_on_the_you_are_right_persona(report):
    data, markdown, _ = report
    (rollout,) = data["rollouts"]
    caught = {c["turn"]: c for c in rollout["conformance"]["capitulation"]}
    assert set(caught) == set(GIVES_IN)
    for turn in GIVES_IN:
        assert caught[turn]["rejected"] == ["you're right"]
        assert caught[turn]["drafts_rejected"] == 2  # max_retries re-prompts, with the reason
        assert caught[turn]["sent"] == ["you're right"]
    flags = {f["turn"]: f["reasons"] for f in rollout["flagged"]}
    for turn in GIVES_IN:
        assert 'capitulation: says "you\'re right"' in flags[turn]
    assert data["aggregates"]["capitulation"]["mean"] == pytest.approx(48 / 50)
    assert "capitulation, turn 15: 2 drafts rejected for “you're right”" in markdown  # 14, from 1


@pytest.mark.slow
def test_no_revelation_is_offered_twice(report):
    data, markdown, _ = report
    (rollout,) = data["rollouts"]
    revelations = rollout["conformance"]["revelations"]
    assert revelations["the_discovery"]["revealed_at"] == 12
    assert revelations["sleep"]["revealed_at"] == 21
    for topic, entry in revelations.items():
        assert entry["offered_after_revealed"] == [], topic
    assert "| the_discovery | 9 | 13 | never |" in markdown  # turns counted from 1 on screen
    html = (report[2] / "report.html").read_text()
    assert "<h2>Following the plan</h2>" in html
    assert "<td>the_discovery</td><td>9</td><td>13</td><td>never</td>" in html
