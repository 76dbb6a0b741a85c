"""Decks, contracts and voices as validated data: every problem located, contracts in files
beside the deck, the JSON Schema, the model allocation per role."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
import yaml

from loom_sim.config.errors import ConfigError
from loom_sim.debate.deck import deck_schema, load_deck
from loom_sim.debate.roles import DEFAULT_ROLES, ModelAllocation
from loom_sim.debate.voice import GENERIC_VOICE

ROOT = Path(__file__).resolve().parent.parent
DECKS = ROOT / "configs" / "decks"
PORT_CALDER = DECKS / "port_calder.yaml"


def shipped():
    return sorted(DECKS.glob("*.yaml"))


@pytest.mark.parametrize("path", shipped(), ids=lambda p: p.stem)
def test_every_shipped_deck_loads_and_matches_the_schema(path):
    deck = load_deck(path)
    assert len(deck.personas) >= 2
    jsonschema.validate(yaml.safe_load(path.read_text()), deck_schema())


def test_the_example_deck_has_four_invented_personas_with_contracts_and_voices():
    deck = load_deck(PORT_CALDER)
    assert len(deck.personas) >= 4
    for persona in deck.personas:
        assert persona.voice is not None and 2 <= len(persona.voice.voice_examples) <= 3
        assert persona.contract.persona_id == persona.id and persona.contract.anchor_excerpts


def data() -> dict:
    return yaml.safe_load(PORT_CALDER.read_text())


def write(tmp_path: Path, content: dict, name: str = "deck.yaml") -> Path:
    path = tmp_path / name
    path.write_text(yaml.safe_dump(content, sort_keys=False))
    return path


def test_a_contract_may_live_in_a_file_beside_the_deck(tmp_path):
    deck = data()
    contract = deck["personas"][0]["contract"]
    (tmp_path / "contracts").mkdir()
    (tmp_path / "contracts" / "ines-varga.json").write_text(json.dumps(contract, indent=1))
    deck["personas"][0]["contract"] = "contracts/ines-varga.json"
    loaded = load_deck(write(tmp_path, deck))
    assert loaded.personas[0].contract.anchor_excerpts[0].id == "a1"


def test_problems_in_a_deck_are_each_located(tmp_path):
    deck = data()
    deck["personas"][0]["contract"]["anchor_excerpts"][0]["content"] = "x" * 281
    deck["personas"][1]["contract"]["persona_id"] = "someone-else"
    deck["personas"][2]["contract"] = "contracts/nobody.json"
    deck["personas"][3]["voice"]["forbiden_phrases"] = ["x"]
    deck["debate"] = {"models": {"cheap": "gpt4"}}
    with pytest.raises(ConfigError) as err:
        load_deck(write(tmp_path, deck))
    text = str(err.value)
    for expected in (
        "personas[0].contract.anchor_excerpts[0].content: string should have at most 280",
        "personas[1].contract.persona_id: this contract is 'someone-else''s, not 'tobias-rehn''s",
        "personas[2].contract: no contract file",
        "personas[3].voice.forbiden_phrases: unknown key 'forbiden_phrases' (did you mean "
        "'forbidden_phrases'?)",
        "debate.models.cheap: model spec 'gpt4' needs a provider",
    ):
        assert expected in text, text
    assert all(line.startswith(f"{tmp_path}/deck.yaml:") for line in text.splitlines())


def test_cross_field_problems_are_located_once_the_fields_are_valid(tmp_path):
    deck = data()
    deck["planted"] = [{"pair": ["ines-varga", "zed"], "claim": "x", "type": "horizon"}]
    deck["personas"][1]["id"] = "ines-varga"
    deck["personas"][1]["contract"]["persona_id"] = "ines-varga"
    with pytest.raises(ConfigError) as err:
        load_deck(write(tmp_path, deck))
    text = str(err.value)
    assert "planted[0].pair[1]: no persona 'zed' in this deck" in text
    assert "personas[1].id: a second persona is 'ines-varga'" in text
    deck = data()
    deck["debate"] = {"detection": {"every": 5, "window": 4}}
    with pytest.raises(ConfigError, match=r"detection.window \(4\) must be at least"):
        load_deck(write(tmp_path, deck))


def test_a_bad_contract_file_is_reported_in_that_file(tmp_path):
    deck = data()
    contract = dict(deck["personas"][0]["contract"])
    del contract["bias"]
    (tmp_path / "c.yaml").write_text(yaml.safe_dump(contract))
    deck["personas"][0]["contract"] = "c.yaml"
    with pytest.raises(ConfigError, match=r"c\.yaml:1:1: bias: missing required field"):
        load_deck(write(tmp_path, deck))


def test_a_persona_without_a_voice_speaks_with_the_generic_one(tmp_path):
    deck = data()
    del deck["personas"][0]["voice"]
    assert load_deck(write(tmp_path, deck)).personas[0].speaks_with == GENERIC_VOICE


def test_the_model_allocation_defaults_to_the_seed_table_and_takes_overrides():
    table = ModelAllocation().table()
    assert {r: (t.temperature, t.max_tokens) for r, t in table.items()} == {
        r: (temp, tokens) for r, (_, temp, tokens) in DEFAULT_ROLES.items()
    }
    given = ModelAllocation().overridden(
        {"strong": "scripted/echo", "detection": "scripted/judge", "cheap": "scripted/varied"}
    )
    resolved = given.table()
    assert resolved["card"].spec == "scripted/echo" and resolved["turn"].spec == "scripted/varied"
    assert resolved["detection"].spec == "scripted/judge"
    assert resolved["detection"].temperature == 0.2
    with pytest.raises(ValueError, match="neither a tier"):
        ModelAllocation().overridden({"moderator": "scripted/echo"})


def test_the_deck_schema_in_the_docs_is_current():
    namespace: dict = {"__name__": "gen_docs", "__file__": str(ROOT / "scripts" / "gen-docs")}
    exec(compile((ROOT / "scripts" / "gen-docs").read_text(), "gen-docs", "exec"), namespace)
    current = (ROOT / "docs" / "deck.schema.json").read_text()
    assert current == namespace["deck_schema_text"](), "docs/deck.schema.json: run scripts/gen-docs"
