"""On every shipped planted deck, and the planted decks kept with the tests whose pair disagrees
without a negation word (two with a persona who grants each side its point), seeds 1-5
(scripted path): rooms open for the planted pair and no bystander, no claim is carded twice,
and every card's stances are what its cited messages say."""

from __future__ import annotations

import json

import pytest
from debate_support import DECKS, TEST_DECKS, plan, run

from loom_sim.debate.deck import load_deck
from loom_sim.debate.stance import Side, closest, side

PLANTED = sorted(DECKS.glob("planted_*.yaml")) + sorted(TEST_DECKS.glob("paraphrased_*.yaml"))


@pytest.mark.slow
@pytest.mark.parametrize("deck", PLANTED, ids=lambda p: p.stem)
def test_planted_decks_open_rooms_only_for_the_planted_pair_and_cards_hold(tmp_path, deck):
    planted = [sorted(c.pair) for c in load_deck(deck).planted or []]
    for seed in range(1, 6):
        out = tmp_path / f"{deck.stem}-{seed}"
        assert run(plan(deck, out, seed=seed)).status == "done"
        rounds = [json.loads(x) for x in (out / "detections.jsonl").read_text().splitlines()]
        rooms = [s for r in rounds for s in r["rooms"]]
        assert all(sorted(s["pair"]) in planted for s in rooms), (seed, rooms)
        assert {tuple(p) for p in planted} <= {tuple(sorted(s["pair"])) for s in rooms}, seed
        texts = {
            json.loads(x)["id"]: json.loads(x)["text"]
            for x in (out / "messages.jsonl").read_text().splitlines()
            if json.loads(x).get("id")
        }
        for path in (out / "rooms").glob("*/transcript.jsonl"):
            for x in path.read_text().splitlines():
                line = json.loads(x)
                if line.get("id") and line.get("text"):
                    texts[line["id"]] = line["text"]
        cards = json.loads((out / "cards.json").read_text())["cards"] if rooms else []
        carded: list[tuple[str, str]] = []
        for record in cards:
            pair = "+".join(sorted(record["pair"]))
            assert not any(p == pair and closest(q, record["question"]) for p, q in carded)
            carded.append((pair, record["question"]))
            for position in record["card"]["positions"]:
                assert position["stance"] in ("YES", "NO"), (seed, position)
                want = Side.FOR if position["stance"] == "YES" else Side.AGAINST
                for cited in position["cites"]:
                    assert side(texts[cited], record["question"]) == want, (seed, cited)
