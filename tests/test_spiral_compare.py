"""Spiral-Bench's judge against loom-sim's (``spiral_agreement``): per turn, the chunk score and
each behaviour's capped strength sum; at the end, the three final figures. And compare's
Spiral-Bench table over a matrix of ported scenarios run and scored by loom-sim."""

from __future__ import annotations

import pytest
import yaml
from click.testing import CliRunner

from loom_sim.cli import cli
from loom_sim.compare import build_compare
from loom_sim.compare.markdown import render_markdown
from loom_sim.rollout.scoring.agreement import spiral_agreement
from loom_sim.rollout.scoring.spiral import BEHAVIOURS
from loom_sim.store.records import Score, TurnRecord
from tests.spiral_data import SPIRAL, needs_spiral


def _spiral(figures: dict[str, float], value: float, source: str) -> Score:
    return Score(value, source, {"figures": figures, "chars": 1000, "scheme": "length"})


def _turn(number: int, reference: dict[str, Score], scores: dict[str, Score]) -> TurnRecord:
    return TurnRecord(
        turn=number,
        phase="p",
        phase_index=0,
        progress=0.0,
        intensities={},
        levels={},
        injection="none",
        persona="seeker",
        interlocutor="reply",
        reference=reference,
        scores=scores,
    )


def _final(off_rails: int, safety: int, dexterity: int, source: str) -> Score:
    found = {"off_rails": off_rails, "safety": safety, "social_dexterity": dexterity}
    return Score((safety + dexterity + 10 - off_rails) / 3, source, found)


def _rollout(pairs, finals=None) -> list[TurnRecord]:
    opening = Score(None, "reference", not_applicable="opening")
    records = [_turn(0, {"spiral": opening}, {"spiral": opening})]
    for number, (theirs, ours) in enumerate(pairs, start=1):
        records.append(
            _turn(
                number,
                {"spiral": _spiral(*theirs, "reference")},
                {"spiral": _spiral(*ours, "judge")},
            )
        )
    if finals:
        last = records[-1]
        records[-1] = _turn(
            last.turn,
            {**last.reference, "spiral_final": _final(*finals[0], "reference")},
            {**last.scores, "spiral_final": _final(*finals[1], "judge")},
        )
    return records


def test_judges_that_agree_agree_perfectly():
    pairs = [
        (({"pushback": 1.0}, 60.0), ({"pushback": 1.0}, 60.0)),
        (({"delusion_reinforcement": 3.0}, 40.0), ({"delusion_reinforcement": 3.0}, 40.0)),
        (
            ({"pushback": 2.0, "harmful_advice": 1.0}, 55.0),
            ({"pushback": 2, "harmful_advice": 1}, 55.0),
        ),
    ]
    found = spiral_agreement([_rollout(pairs, ((2, 8, 7), (2, 8, 7)))])
    assert set(found) == {"spiral", *(f"spiral:{b}" for b in BEHAVIOURS), "spiral_final"}
    assert found["spiral"]["pairs"] == 3 and found["spiral"]["exact"] == 1.0
    assert found["spiral"]["level"] == "interval" and found["spiral"]["alpha"] == pytest.approx(1.0)
    assert found["spiral:pushback"]["kappa"] == pytest.approx(1.0)
    assert found["spiral:pushback"]["level"] == "ordinal"
    assert "no variation" in found["spiral:consciousness_claims"]["undefined"]
    assert found["spiral_final"]["pairs"] == 3 and found["spiral_final"]["exact"] == 1.0


def test_strength_sums_are_capped_and_keyed_as_the_aggregation_keys_them():
    pairs = [
        (({"sycophancy or praise": 12.0}, 10.0), ({"sycophancy_or_praise": 9.0}, 10.0)),
        (({}, 50.0), ({"sycophancy_or_praise": 1.0}, 45.0)),
    ]
    found = spiral_agreement([_rollout(pairs)])["spiral:sycophancy_or_praise"]
    assert found["categories"] == [float(v) for v in range(9)]  # 0 to the chunk cap, 8
    assert found["disagreements"] == [
        {"item": 3, "reference": 0.0, "loom_sim": 1.0}
    ]  # turns from 1
    assert "spiral_final" not in spiral_agreement([_rollout(pairs)])


def test_turns_only_one_judge_scored_are_counted_apart():
    records = _rollout([(({"pushback": 1.0}, 60.0), ({"pushback": 1.0}, 60.0))] * 2)
    failed = Score(None, "judge", {}, error="unreadable")
    records[2] = _turn(2, records[2].reference, {"spiral": failed})
    other = _rollout([(({"pushback": 1.0}, 60.0), ({"pushback": 2.0}, 50.0))])
    found = spiral_agreement([records, other], ["rollout_000", "rollout_001"])
    assert found["spiral"]["pairs"] == 2
    assert (found["spiral"]["reference_only"], found["spiral"]["loom_sim_only"]) == (1, 0)
    assert found["spiral:pushback"]["disagreements"] == [
        {"item": "rollout_001 turn 2", "reference": 1.0, "loom_sim": 2.0}
    ]


def test_nothing_to_compare_is_nothing():
    records = _rollout([])
    assert spiral_agreement([records]) == {}


@needs_spiral
@pytest.mark.slow
def test_a_matrix_of_ported_scenarios_counts_every_rollout_of_every_arm_as_a_scenario(tmp_path):
    """rollout_000 of one arm and of another are two scenarios, not one."""
    ported = tmp_path / "ported"
    result = CliRunner().invoke(cli, ["port", "spiral-bench", str(SPIRAL), "-o", str(ported)])
    assert result.exit_code == 0, result.output
    configs = []
    for name in ("mp01", "eac01"):  # no sentence-embedding model: these tests do not need it
        data = yaml.safe_load((ported / f"{name}.yaml").read_text())
        data["evaluation"]["scoring"]["stagnation"] = {"enabled": False}
        data["interaction"]["stagnation_detection"]["backend"] = "tfidf"
        configs.append(tmp_path / f"{name}.yaml")
        configs[-1].write_text(yaml.safe_dump(data, sort_keys=False))
    out = tmp_path / "matrix"
    run = CliRunner().invoke(
        cli,
        [
            "run", *map(str, configs), "--target", "scripted/varied", "--turns", "3",
            "--rollouts", "2", "--persona-model", "scripted/varied",
            "--judge-model", "scripted/judge", "-o", str(out),
        ],
    )  # fmt: skip
    assert run.exit_code == 0, run.output
    table = build_compare([out])["spiral"]
    assert {(r["judge"], r["scheme"]) for r in table["rows"]} == {
        ("loom-sim", "length"),
        ("loom-sim", "plain"),
    }
    assert all(r["scenarios"] == 4 and r["rollouts"] == 4 for r in table["rows"])
    assert table["agreement"] == {}  # no reference judge to agree with
    markdown = render_markdown(build_compare([out]))
    assert "| scripted/varied | loom-sim | length | 4 |" in markdown
