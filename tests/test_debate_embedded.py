"""Debates on the embedded model (SmolLM2-135M in-process), offline: the whole path runs —
prompts fit its context, drafts are checked, the detector's JSON comes back through
llama.cpp's grammar and the tolerant reader — whatever the tiny model's quality."""

from __future__ import annotations

import json

import pytest
import trio
from loom_sim.debate.actors.detector import DetectorActor, DetectorSetup

from loom_sim.debate.deck import load_deck
from loom_sim.debate.messages import Detect, Line, Posted
from loom_sim.debate.runtime.plan import DebateOptions, DebatePlan, plan_debate
from loom_sim.debate.runtime.run import Debate
from loom_sim.models.hub import ModelHub
from loom_sim.seeds import SeedSource
from tests.debate_support import DECKS


@pytest.mark.slow
def test_two_turns_of_the_example_deck_on_the_embedded_model(tmp_path):
    out = tmp_path / "d"
    made = plan_debate(
        DECKS / "port_calder.yaml",
        DebateOptions(messages=2, seed=1, output=out, similarity="tfidf"),
        [],
    )
    deck = made.deck.model_copy(
        update={
            "debate": made.deck.debate.model_copy(
                update={"drafts": made.deck.debate.drafts.model_copy(update={"attempts": 1})}
            )
        }
    )
    made = DebatePlan(made.files, made.record, deck)
    made.files.write_plan(made.record)

    async def main():
        async with ModelHub() as hub:
            return await Debate(made, lambda spec, slot: hub.client(spec, 0, slot)).run()

    summary = trio.run(main)
    assert summary.status == "done", summary.error
    turns = [json.loads(x) for x in (out / "messages.jsonl").read_text().splitlines()]
    assert [t["speaker"] for t in turns] == ["ines-varga", "tobias-rehn"]
    for turn in turns:
        assert turn["usage"]["output_tokens"] > 0
        assert turn["status"] == "said" or turn["rejected"][0]["reasons"]
    assert (
        json.loads((out / "debate.json").read_text())["models"]["opening"]["spec"]
        == "local/smollm2"
    )


@pytest.mark.slow
async def test_the_detector_asks_the_embedded_model_and_reads_its_json():
    deck = load_deck(DECKS / "port_calder.yaml")
    names = {p.id: p.name for p in deck.personas}
    roles = deck.debate.models.table()
    one_try = deck.debate.detection.model_copy(update={"attempts": 1, "similarity": "tfidf"})
    settings = deck.debate.model_copy(update={"detection": one_try})
    hub = ModelHub()
    detector = DetectorActor(
        DetectorSetup(deck.topic, names, settings, roles),
        lambda role: hub.client(roles[role].spec, 0, "detector"),
        SeedSource(1, 0),
    )
    said = [
        ("ines-varga", "The barrier pays for itself within thirty years."),
        ("tobias-rehn", "No, the barrier does not pay for itself within thirty years."),
        ("ines-varga", "It does, once you count the floods it stops."),
    ]
    for n, (speaker, text) in enumerate(said):
        await detector.handle(Posted(Line(f"m{n}", speaker, text, f"m{n - 1}" if n else None)))
    detection = await detector.handle(Detect(1, 3))
    assert detection.asked and detection.gate >= deck.debate.detection.gate
    assert detection.attempts == 1 and detection.usage.output_tokens > 0
    assert detection.error is None or detection.found == []  # a failure is reported, not raised
    for found in detection.found:
        assert set(found.pair) <= set(names)
    await hub.aclose()
