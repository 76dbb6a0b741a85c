"""``loom-sim port spiral-bench``: one config per scenario of the user's Spiral-Bench copy, each
one loading, its seeker's instructions and rubric taken verbatim from the copy, its trajectory
following the scenario's category."""

from __future__ import annotations

import json

import pytest
import yaml
from click.testing import CliRunner

from loom_sim.assembler.turns import Assembler
from loom_sim.cli import cli
from loom_sim.config import load_config
from loom_sim.rollout.interop.spiral_port import ARCS, parse_rubric
from tests.spiral_data import SPIRAL, needs_spiral

pytestmark = needs_spiral

ARC_OF = {category: [p["name"] for p in arc["phases"]] for category, arc in ARCS.items()}


def invoke(*args: str):
    result = CliRunner().invoke(cli, list(args))
    assert "Traceback" not in result.output
    return result


@pytest.fixture(scope="module")
def ported(tmp_path_factory):
    out = tmp_path_factory.mktemp("spiral") / "configs"
    result = invoke("port", "spiral-bench", str(SPIRAL), "--output", str(out))
    assert result.exit_code == 0, result.output
    return out, result.output


def _scenarios():
    return json.loads((SPIRAL / "prompts" / "eval_prompts_v0.2.json").read_text())


def test_every_scenario_becomes_a_config_that_loads(ported):
    out, printed = ported
    scenarios = _scenarios()
    files = sorted(out.glob("*.yaml"))
    assert len(files) == len(scenarios) == 30
    assert {f.stem for f in files} == {s["prompt_id"] for s in scenarios}
    for path in files:
        config = load_config(path)
        assert config.evaluation.scoring.target == ("spiral", "spiral_final")
        assert config.trajectory.expected_turns == 20
    assert printed.count("kept as context") == 30
    assert "no per-turn random directions" in printed


def test_the_copys_wording_is_kept_verbatim(ported):
    out, _ = ported
    instructions = (SPIRAL / "user_instructions" / "default.txt").read_text().strip()
    categories = json.loads(
        (SPIRAL / "user_instructions" / "category_instructions.json").read_text()
    )
    directions = json.loads((SPIRAL / "user_instructions" / "entropy.json").read_text())
    rubric_text = (SPIRAL / "data" / "rubric_criteria.txt").read_text()
    for scenario in _scenarios():
        data = yaml.safe_load((out / f"{scenario['prompt_id']}.yaml").read_text())
        context = data["persona"]["additional_context"]
        assert instructions in context.values()
        if categories[scenario["category"]]:
            assert categories[scenario["category"]] in context.values()
        assert all(any(d in text for text in context.values()) for d in directions)
        opening = data["trajectory"]["phases"][0]
        assert opening["name"] == "opening" and opening["end_condition"]["value"] == 1
        assert opening["requirements"][0].endswith(scenario["prompts"][0])
        assert data["conversation"]["persona_opening"] == scenario["prompts"][0]
        rubric = data["evaluation"]["scoring"]["spiral"]["rubric"]
        assert len(rubric) == 9 and rubric == parse_rubric(rubric_text)
        for name, description in rubric.items():
            assert f"{name} ({description})" in rubric_text


def test_categories_map_to_their_arcs(ported):
    out, _ = ported
    for scenario in _scenarios():
        config = load_config(out / f"{scenario['prompt_id']}.yaml")
        phases = [p.name for p in config.trajectory.phases]
        assert phases == ["opening", *ARC_OF[scenario["category"]]], scenario["prompt_id"]
    mania = load_config(out / "mp01.yaml").trajectory
    assert [p.name for p in mania.phases][1:] == ["elevated", "accelerating", "peak", "plateau"]
    conviction = Assembler(load_config(out / "mp01.yaml"))
    rising = [conviction.plan(t).intensities["conviction"] for t in range(20)]
    assert rising == sorted(rising) and rising[-1] > rising[0] + 0.4  # an escalating arc
    probing = [p.name for p in load_config(out / "eac01.yaml").trajectory.phases]
    assert probing[1:] == ["probing", "testing", "recognising"]


def test_the_opening_reaches_the_seeker_at_its_first_turn_only(ported):
    out, _ = ported
    config = load_config(out / "mp02.yaml")
    opening = _scenarios()[21]["prompts"][0]
    plan = Assembler(config)
    assert opening in plan.plan(0).prompt.must_do
    assert opening not in plan.plan(1).prompt.must_do


@pytest.mark.parametrize("turns", [1, 2, 5, 50])
def test_any_length_gives_configs_that_load(tmp_path, turns):
    result = invoke("port", "spiral-bench", str(SPIRAL), "-o", str(tmp_path), "--turns", str(turns))
    assert result.exit_code == 0, result.output
    config = load_config(tmp_path / "mp01.yaml")
    assert config.trajectory.expected_turns == turns
    assert config.trajectory.phases[0].name == "opening"


def test_a_folder_that_is_no_copy_is_a_one_sentence_error(tmp_path):
    result = invoke("port", "spiral-bench", str(tmp_path), "-o", str(tmp_path / "out"))
    assert result.exit_code == 1
    message = result.stderr.strip()
    assert "not a Spiral-Bench copy" in message and message.count("\n") == 0
    missing = invoke("port", "spiral-bench", str(tmp_path / "nowhere"), "-o", str(tmp_path / "o"))
    assert missing.exit_code == 1 and "not a folder" in missing.stderr
    assert not (tmp_path / "out").exists()
