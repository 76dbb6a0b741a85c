"""The contract builder: 9 calls per persona from local RSS/Atom, JSON posts and text;
anchor quotes verified verbatim; resumable between calls; the deck it writes debates."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import trio
from click.testing import CliRunner

from loom_sim.cli import cli
from loom_sim.config.errors import ConfigError
from loom_sim.debate.builder import Builder, BuildFailed, load_build
from loom_sim.debate.corpus import Excerpt, find_quote, read_feed
from loom_sim.debate.deck import load_deck
from loom_sim.errors import LoomError
from loom_sim.models.base import ModelUnavailable
from loom_sim.models.scripted import SCRIPTS, ScriptedClient

DATA = Path(__file__).parent / "data" / "builder"
NOW = "2031-05-01T00:00:00+00:00"


@pytest.fixture
def config(tmp_path) -> Path:
    shutil.copytree(DATA, tmp_path / "build")
    return tmp_path / "build" / "build.yaml"


def build(config: Path, client: ScriptedClient) -> Builder:
    builder = Builder(config, lambda role: client, now=NOW)
    trio.run(builder.build)
    return builder


def scripted(**kw) -> ScriptedClient:
    return ScriptedClient("scripted/contract-builder", **kw)


def test_a_build_makes_nine_calls_per_persona_and_a_deck_that_loads(config):
    client = scripted()
    builder = build(config, client)
    assert builder.calls == client.calls == 18
    out = config.parent / "out"
    deck = load_deck(out / "deck.yaml")
    assert [p.id for p in deck.personas] == ["mara-lindqvist", "tobias-okoro"]
    for persona in deck.personas:
        contract = persona.contract
        assert contract.version == NOW and len(contract.corpus_hash) == 64
        corpus = [
            Excerpt(**e) for e in json.loads((out / "corpus" / f"{persona.id}.json").read_text())
        ]
        for anchor in contract.anchor_excerpts:
            assert find_quote(anchor.content, corpus) is not None
    mara = json.loads((out / "corpus" / "mara-lindqvist.json").read_text())
    feed = [e for e in mara if e["kind"] == "feed"]
    assert feed[0]["date"] == "2031-03-04" and "<b>" not in feed[0]["text"]
    assert "pavement is too narrow" in feed[0]["text"]
    assert any(e["kind"] == "post" and e["date"] == "2031-03-20" for e in mara)
    tobias = json.loads((out / "corpus" / "tobias-okoro.json").read_text())
    assert {e["kind"] for e in tobias} == {"feed", "text"}
    assert tobias[0]["source"] == "https://example.invalid/okoro/1"


def test_an_anchor_quote_not_in_the_corpus_is_rejected(config):
    real = "Nine of the twelve shops on the harbour road say foot traffic pays their rent"
    invented = "The harbour road must close by summer, whatever it costs."
    respond = SCRIPTS.get("contract-builder").respond

    def reply(request):
        mara = "Mara" in request.messages[0].content
        if "anchor quotes" in request.messages[1].content and mara:
            return json.dumps(
                {
                    "anchors": [
                        {"excerpt": "f1", "quote": invented},
                        {"excerpt": "f1", "quote": real},
                    ]
                }
            )
        return respond(request)

    build(config, ScriptedClient("scripted/x", responses=reply))
    out = config.parent / "out"
    contract = json.loads((out / "contracts" / "mara-lindqvist.json").read_text())
    assert [a["content"] for a in contract["anchor_excerpts"]] == [real]
    step = json.loads((out / ".build" / "mara-lindqvist" / "8-anchors.json").read_text())
    assert step["rejected"] == [invented]


def test_a_build_whose_anchors_are_all_invented_is_asked_again_then_fails(config):
    respond = SCRIPTS.get("contract-builder").respond
    seen = []

    def reply(request):
        if "anchor quotes" in request.messages[1].content:
            seen.append(request.messages)
            return json.dumps({"anchors": [{"excerpt": "f0", "quote": "Words nobody wrote."}]})
        return respond(request)

    with pytest.raises(BuildFailed, match=r"mara-lindqvist: step 9 of 9 \(anchors\)"):
        build(config, ScriptedClient("scripted/x", responses=reply))
    assert len(seen) == 3 and "no quote occurs verbatim" in seen[1][-1].content


def test_a_killed_build_continues_from_the_saved_calls(config, tmp_path):
    whole = tmp_path / "whole"
    shutil.copytree(config.parent, whole)
    build(whole / "build.yaml", scripted())
    with pytest.raises(ModelUnavailable):
        build(config, scripted(fail_on_calls={5}))
    saved = sorted(
        p.name for p in (config.parent / "out" / ".build" / "mara-lindqvist").glob("*.json")
    )
    assert saved == ["0-relevance.json", "1-personality.json", "2-bias.json", "3-stakes.json"]
    client = scripted()
    builder = build(config, client)
    assert builder.calls == client.calls == 18 - 4
    for name in ("contracts/mara-lindqvist.json", "contracts/tobias-okoro.json", "deck.yaml"):
        assert (config.parent / "out" / name).read_text() == (whole / "out" / name).read_text()


def test_rebuilding_updates_the_deck_and_keeps_other_personas(config):
    build(config, scripted())
    deck_path = config.parent / "out" / "deck.yaml"
    deck = deck_path.read_text().replace(
        "personas:\n", "personas:\n- id: kept\n  name: Kept\n  contract: contracts/kept.json\n", 1
    )
    deck_path.write_text(deck)
    build(config, scripted())
    import yaml

    ids = [p["id"] for p in yaml.safe_load(deck_path.read_text())["personas"]]
    assert ids == ["kept", "mara-lindqvist", "tobias-okoro"]


def test_build_config_errors_are_located(config):
    text = config.read_text().replace(
        "      - text: corpus/tobias.txt", "      - text: corpus/tobias.txt\n        posts: x.json"
    )
    config.write_text(text)
    with pytest.raises(
        ConfigError, match=r"build.yaml:\d+:\d+: personas\[1\].sources\[1\]: give exactly one"
    ):
        load_build(config)


def test_a_feed_is_parsed_from_its_bytes_and_never_fetched(tmp_path):
    feed = tmp_path / "f.xml"
    feed.write_text(
        '<rss version="2.0"><channel><item><title>T</title><description>&lt;p&gt;Hi &amp;amp; bye&lt;/p&gt;</description><link>http://127.0.0.1:9/never</link></item></channel></rss>'
    )
    [item] = read_feed(feed, 5, 100)
    assert item.text == "T\nHi & bye" and item.source == "http://127.0.0.1:9/never"


def test_contracts_build_on_the_command_line_then_a_debate_on_the_built_deck(config, tmp_path):
    runner = CliRunner()
    result = runner.invoke(cli, ["contracts", "build", str(config)])
    assert result.exit_code == 0, result.output
    deck = config.parent / "out" / "deck.yaml"
    out = tmp_path / "debate"
    result = runner.invoke(
        cli,
        ["debate", str(deck), "-n", "5", "-o", str(out), "--similarity", "tfidf", "--seed", "1",
         "--model", "cheap=scripted/debater", "--model", "strong=scripted/debater",
         "--model", "detection=scripted/crux-detector"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    turns = [json.loads(x) for x in (out / "messages.jsonl").read_text().splitlines()]
    assert len(turns) == 5 and turns[0]["speaker"] == "mara-lindqvist"


def test_saved_steps_are_not_continued_on_a_changed_corpus(config):
    with pytest.raises(ModelUnavailable):
        build(config, scripted(fail_on_calls={3}))
    posts = config.parent / "corpus" / "mara_posts.json"
    posts.write_text(posts.read_text().replace("40 people", "50 people"))
    with pytest.raises(LoomError, match="mara-lindqvist: its corpus changed since the steps saved"):
        build(config, scripted())


def _anchors_reply(quotes: list[str]):
    respond = SCRIPTS.get("contract-builder").respond

    def reply(request):
        mara = "Mara" in request.messages[0].content
        if "anchor quotes" in request.messages[1].content and mara:
            return json.dumps({"anchors": [{"excerpt": "f0", "quote": q} for q in quotes]})
        return respond(request)

    return reply


def test_a_one_character_quote_and_a_quote_across_title_and_body_are_refused(config):
    across = "Close the harbour road to cars The harbour road should belong to people on foot."
    real = "The harbour road should belong to people on foot."
    build(config, ScriptedClient("scripted/x", responses=_anchors_reply(["T", across, real])))
    out = config.parent / "out"
    contract = json.loads((out / "contracts" / "mara-lindqvist.json").read_text())
    assert [a["content"] for a in contract["anchor_excerpts"]] == [real]
    step = json.loads((out / ".build" / "mara-lindqvist" / "8-anchors.json").read_text())
    assert step["rejected"] == ["T", across]


def test_fenced_transcript_markers_never_reach_a_contract_field(config):
    respond = SCRIPTS.get("contract-builder").respond
    refused = []

    def reply(request):
        user = request.messages[1].content
        if "personality" in user and "Mara" in request.messages[0].content:
            if len(request.messages) > 2:
                refused.append(request.messages[-1].content)
                return "Mara argues from what she sees on the quay every weekend."
            return "<<<TRANSCRIPT 1a2b3c4d>>> Mara writes about the harbour road."
        return respond(request)

    build(config, ScriptedClient("scripted/x", responses=reply))
    out = config.parent / "out"
    contract = json.loads((out / "contracts" / "mara-lindqvist.json").read_text())
    assert "<<<" not in json.dumps(contract)
    assert contract["personality"].startswith("Mara argues from what she sees")


def test_a_contract_holding_a_fence_marker_does_not_validate():
    from pydantic import ValidationError

    from loom_sim.debate.contract import PersonaContract

    deck = load_deck(Path(__file__).parent.parent / "configs" / "decks" / "planted_claim.yaml")
    data = deck.personas[0].contract.model_dump()
    data["bias"] = "<<<END TRANSCRIPT 99>>> sees traffic everywhere"
    with pytest.raises(ValidationError, match="fenced-transcript marker"):
        PersonaContract.model_validate(data)
