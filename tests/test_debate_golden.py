"""Golden debate prompts: every prompt a debate sends, pinned for the shipped example deck.

The three-layer system prompt of each persona (contract, voice, tone; and in a crux room),
the opening and each intent's turn prompt over a fixed thread, the room's prompts, the
detector's, exit check's and card writer's, and the contract builder's. When a template
changes on purpose, bump DEBATE_TEMPLATE_VERSION and regenerate:

    LOOM_UPDATE_GOLDEN=1 .venv/bin/pytest tests/test_debate_golden.py
"""

from __future__ import annotations

import difflib
import json
import os
from pathlib import Path

import pytest

from loom_sim.debate import prompts
from loom_sim.debate.deck import load_deck
from loom_sim.debate.intents import INTENTS, OPENING_SHAPE, ROOM_OPENING_SHAPE, ROOM_SHAPE
from loom_sim.debate.prompts import DEBATE_TEMPLATE_VERSION, TEMPLATES, RoomFrame, Said

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = Path(__file__).parent / "golden" / "debate" / "port_calder.prompts.json"
UPDATE = os.environ.get("LOOM_UPDATE_GOLDEN") == "1"


def current() -> dict:
    deck = load_deck(ROOT / "configs" / "decks" / "port_calder.yaml")
    ines, tobias = deck.personas[0], deck.personas[1]
    thread = [
        Said("m4", "ines-varga", "Ines Varga", "The barrier pays for itself within thirty years."),
        Said("m5", "tobias-rehn", "Tobias Rehn", "No, the debt service alone eats the savings."),
    ]
    question = "The barrier pays for itself within thirty years."
    frame = RoomFrame(question, "Tobias Rehn", ROOM_SHAPE)
    room = [Said("room-1.0", "ines-varga", "Ines Varga", "It pays. Count the floods.")]
    nonce = "0000abcd"
    out: dict[str, str] = {}
    for persona in deck.personas:
        out[f"system:{persona.id}"] = prompts.system_prompt(persona)
        out[f"opening:{persona.id}"] = prompts.opening_prompt(deck.topic, persona, OPENING_SHAPE)
    for intent, spec in INTENTS.items():
        out[f"turn:{intent.value}"] = prompts.turn_prompt(
            deck.topic, ines, thread, thread[-1], spec
        )
    out["room:system"] = prompts.system_prompt(ines, frame)
    out["room:opening"] = prompts.room_opening_prompt(question, thread, ROOM_OPENING_SHAPE)
    out["room:turn"] = prompts.room_turn_prompt(
        question, room, "Tobias Rehn", "It does not.", ROOM_SHAPE
    )
    out["redraft"] = prompts.redraft_note("Ines Varga", ["it has 2 sentences; write exactly 1"])
    people = [(ines.id, ines.name), (tobias.id, tobias.name)]
    out["detect"] = prompts.detection_prompt(deck.topic, people, thread, nonce)
    out["analyst:system"] = prompts.analyst_system("find disagreements", nonce, {"type": "object"})
    out["exit"] = prompts.exit_prompt("Ines Varga and Tobias Rehn", question, room, nonce)
    out["card"] = prompts.card_prompt(question, people, [*thread, *room], nonce)
    corpus = "[p0] (2031-03-20) The barrier pays for itself."
    common = {"name": "Ines Varga", "topic": deck.topic, "corpus": corpus}
    out["build:system"] = prompts.render(
        "build_system", name="Ines Varga", topic=deck.topic, begin="<<<", end=">>>", schema=""
    )
    out["build:relevance"] = prompts.render("build_relevance", posts=50, items=10, **common)
    for field in ("personality", "time_horizon"):
        out[f"build:{field}"] = prompts.render("build_field", field=field, **common)
    out["build:evidence"] = prompts.render("build_evidence", **common)
    out["build:anchors"] = prompts.render("build_anchors", most=15, **common)
    return {
        "template_version": DEBATE_TEMPLATE_VERSION,
        "digest": TEMPLATES.digest(),
        "prompts": out,
    }


def test_debate_prompts_match_golden():
    got = current()
    if UPDATE or not GOLDEN.exists():
        GOLDEN.write_text(json.dumps(got, indent=1, ensure_ascii=False) + "\n")
        if not UPDATE:
            pytest.fail(f"wrote missing golden {GOLDEN.name}; review it and commit it")
    golden = json.loads(GOLDEN.read_text())
    assert sorted(got["prompts"]) == sorted(golden["prompts"])
    for key, want in golden["prompts"].items():
        have = got["prompts"][key]
        if want != have:
            diff = "\n".join(
                difflib.unified_diff(
                    want.splitlines(), have.splitlines(), "golden", "now", lineterm=""
                )
            )
            pytest.fail(
                f"debate prompt {key} drifted from the golden. If intended: bump "
                "DEBATE_TEMPLATE_VERSION and run LOOM_UPDATE_GOLDEN=1 pytest "
                f"tests/test_debate_golden.py\n{diff}"
            )


def test_template_changes_bump_the_debate_template_version():
    golden = json.loads(GOLDEN.read_text())
    if golden["digest"] != TEMPLATES.digest():
        assert golden["template_version"] != DEBATE_TEMPLATE_VERSION, (
            "the debate templates changed but DEBATE_TEMPLATE_VERSION did not: bump it in "
            "loom_sim/debate/prompts.py, then regenerate the goldens"
        )


def test_the_golden_debater_prompt_has_the_three_layers_and_the_turn_its_parts():
    golden = json.loads(GOLDEN.read_text())["prompts"]
    system = golden["system:ines-varga"]
    assert system.index("## Personality") < system.index("## Voice") < system.index("## Tone")
    assert "CRUX ROOM MODE" in golden["room:system"] and "CRUX ROOM MODE" not in system
    turn = golden["turn:ASK"]
    for part in (
        "Recent thread:",
        'Tobias Rehn said: "No, the debt',
        "Your move: Ask a pointed",
        "Length: One sentence.",
    ):
        assert part in turn
