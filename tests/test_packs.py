"""Scenario packs: the shipped benchmark pack, located errors, the JSON Schema, --target."""

from __future__ import annotations

import json

import jsonschema
import pytest
from PIL import Image

from loom_sim.config.errors import ConfigError
from loom_sim.errors import LoomError
from loom_sim.harness.packs import load_pack
from loom_sim.harness.packs.schema import json_schema
from loom_sim.harness.targets import target_from_option
from loom_sim.resources import find, shipped_names
from loom_sim.studio.abilities import ABILITIES


@pytest.fixture(scope="module")
def shipped():
    return load_pack(find("studio_benchmarks", "packs"))


def test_the_shipped_pack_has_the_seeds_three_benchmarks(shipped):
    assert "studio_benchmarks" in shipped_names("packs")
    pack = shipped.pack
    required = {s.id: s.required_abilities for s in pack.scenarios}
    assert required == {
        "drop_lookbook_rescue": ["diagnose", "bridge|blend", "argue"],
        "tattoo_flash_direction_find": ["triforce", "extract_rule", "odd_one_out"],
        "creator_thumbnail_pack": ["swap_dna|bridge", "diagnose", "argue"],
    }
    personas = {s.id: pack.personas[s.persona].who for s in pack.scenarios}
    assert "streetwear" in personas["drop_lookbook_rescue"]
    assert "tattoo" in personas["tattoo_flash_direction_find"]
    assert "creator" in personas["creator_thumbnail_pack"]
    for scenario in pack.scenarios:
        weights = scenario.scorecard.weights
        assert (weights.goal_progress, weights.artifact_quality_proxy) == (0.35, 0.20)
        assert (weights.ability_usage_quality, weights.efficiency_cost_time) == (0.15, 0.15)
        assert (weights.resilience, weights.reflection_quality) == (0.10, 0.05)
        assert scenario.scorecard.gate.min_goal_progress == 0.7
        assert len(scenario.inputs) == 3
        for entry in scenario.inputs:  # real photos, small
            path = shipped.input_path(entry)
            assert 4_000 < path.stat().st_size < 50_000
            with Image.open(path) as image:
                assert min(image.size) >= 150
    assert scenario.budget.max_turns < 12


def test_the_pack_lists_exactly_the_studios_abilities(shipped):
    listed = [(a.name, a.usage, a.summary) for a in shipped.pack.abilities]
    assert listed == [(a.name, a.usage, a.summary) for a in ABILITIES.values()]


def test_the_json_schema_accepts_the_shipped_pack_and_knows_every_adapter(shipped):
    schema = json_schema()
    jsonschema.validate(json.loads(shipped.path.read_text()), schema)
    adapters = schema["properties"]["targets"]["additionalProperties"]["anyOf"]
    assert [a["title"] for a in adapters] == ["pty", "http", "model"]
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"personas": {}, "scenarios": [], "bogus": 1}, schema)


BROKEN = """{
  "personas": {"p": {"who": "x", "patience": 0}},
  "targets": {"t": {"adapter": "pty", "command": ["x"], "prompt": "(", "bogus": 1},
              "u": {"adapter": "ptty"}},
  "scenarios": [{"id": "s", "persona": "p", "goal": "g",
                 "success_criteria": [{"id": "c", "type": "magic"}],
                 "scorecard": {"weights": {"goal_progress": 0.5}}}]
}
"""

CROSS = """{
  "personas": {"p": {"who": "x"}},
  "targets": {"t": {"adapter": "pty", "command": ["{pyhton}"]}},
  "abilities": [{"name": "blend"}],
  "defaults": {"target": "nope"},
  "scenarios": [
    {"id": "s1", "persona": "q", "goal": "g", "inputs": ["missing.jpg"],
     "required_abilities": ["blend|brige"],
     "success_criteria": [{"id": "a", "type": "artifacts", "by": ["blen"]},
                          {"id": "a", "type": "judged", "text": "t"}]},
    {"id": "s1", "persona": "p", "goal": "g",
     "success_criteria": [{"id": "a", "type": "events", "event": "x"}]}
  ]
}
"""


def _problems(tmp_path, text: str, name: str = "pack.json") -> list[str]:
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(ConfigError) as caught:
        load_pack(path)
    return str(caught.value).splitlines()


def test_field_errors_are_located(tmp_path):
    lines = _problems(tmp_path, BROKEN)
    where = {line.split(": ")[1]: line.split(": ")[0].split(":", 1)[1] for line in lines}
    assert where["personas.p.patience"] == "2:46"
    assert where["targets.t.prompt"] == "3:67" and "regular expression" in " ".join(lines)
    assert where["targets.t.bogus"] == "3:81"
    assert "did you mean 'pty'" in next(line for line in lines if "targets.u.adapter" in line)
    assert any("success_criteria[0]" in line and "magic" in line for line in lines)
    assert any("weights must sum to 1, not 1.15" in line for line in lines)


def test_cross_field_errors_are_located(tmp_path):
    lines = _problems(tmp_path, CROSS)
    text = "\n".join(lines)
    assert "pack.json:3:51: targets.t.command[0]: unknown placeholder {pyhton}" in text
    assert "pack.json:5:26: defaults.target: no target named 'nope'; targets: t" in text
    assert "scenarios[0].persona: no persona named 'q'" in text
    assert f"scenarios[0].inputs[0]: no such file: {tmp_path / 'missing.jpg'}" in text
    assert "scenarios[0].required_abilities[0]: unknown ability 'brige'" in text
    assert "scenarios[0].success_criteria[0].by: unknown ability 'blen'" in text
    assert "scenarios[0].success_criteria[1].id: a second criterion is named 'a'" in text
    assert "scenarios[1].id: a second scenario is named 's1'" in text


def test_json_syntax_errors_say_where_and_tabs_are_whitespace(tmp_path):
    assert _problems(tmp_path, '{"personas": {,}}') == [
        f"{tmp_path / 'pack.json'}:1:15: JSON syntax error: Expecting property name enclosed "
        "in double quotes"
    ]
    tabbed = json.dumps(json.loads(CROSS.replace("{pyhton}", "x")), indent="\t")
    assert len(_problems(tmp_path, tabbed)) == 7  # read, and its own problems found


def test_a_yaml_pack_loads(tmp_path):
    (tmp_path / "p.yaml").write_text(
        "personas:\n  p: {who: someone}\nscenarios:\n  - id: s\n    persona: p\n    goal: g\n"
        "    success_criteria:\n      - {id: c, type: output, pattern: 'done'}\n"
    )
    pack = load_pack(tmp_path / "p.yaml").pack
    assert pack.scenarios[0].budget.max_turns == 12 and pack.defaults.policy.audit_retries == 1


def test_target_option(shipped):
    targets = shipped.pack.targets
    assert target_from_option("studio", targets)[1] is targets["studio"]
    _, pty = target_from_option("pty:llm chat -m SmolLM2", targets)
    assert pty.command == ["llm", "chat", "-m", "SmolLM2"] and pty.idle_window == 2.0
    assert target_from_option("http:http://127.0.0.1:9/v1", targets)[1].url.endswith("/v1")
    assert target_from_option("model:scripted/echo", targets)[1].spec == "scripted/echo"
    with pytest.raises(LoomError, match="not a target of this pack"):
        target_from_option("sudio", targets)
    with pytest.raises(LoomError, match="nothing after pty:"):
        target_from_option("pty:", targets)
