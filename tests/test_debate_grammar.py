"""Debate messages written under their shape's grammar by the embedded model pass the shape's
checks by construction, even when the prompt asks for what the shape forbids."""

from __future__ import annotations

import pytest

from loom_sim.debate.checks import Shape, sentences
from loom_sim.debate.grammar import shape_grammar
from loom_sim.debate.intents import INTENTS, OPENING_SHAPE, ROOM_OPENING_SHAPE, ROOM_SHAPE
from loom_sim.models import ChatMessage, LocalLlamaClient, ModelRequest

SHAPES: dict[str, Shape] = {
    **{intent.value: spec.shape for intent, spec in INTENTS.items()},
    "opening": OPENING_SHAPE,
    "room_opening": ROOM_OPENING_SHAPE,
    "room": ROOM_SHAPE,
}

#: Prompts that pull against every shape: a list, line breaks, several questions, no number.
PULLS = (
    "List three reasons, one per line, why ports should be dredged. Ask me questions too.",
    "Write a long essay about harbours with headings.",
)


def test_every_shape_has_a_grammar_of_its_own_rules():
    grammars = {name: shape_grammar(shape) for name, shape in SHAPES.items()}
    assert grammars["ASK"] != grammars["CLARIFY"] != grammars["EVIDENCE"]
    assert 'last ::= words "?"' in grammars["ASK"]  # a question by construction
    assert "?" not in grammars["CLARIFY"].split("last ::= ")[1]  # a statement: no "?" end
    assert "named" in grammars["EVIDENCE"]  # a number or a name inside
    assert "{1,3}" in grammars["opening"]  # 2 to 4 sentences


@pytest.mark.slow
@pytest.mark.parametrize("name", list(SHAPES))
async def test_the_embedded_model_writes_each_shape_by_construction(name):
    shape = SHAPES[name]
    model = LocalLlamaClient("local/smollm2")
    for seed, pull in enumerate(PULLS):
        reply = await model.complete(
            ModelRequest(
                messages=[
                    ChatMessage("system", "You are a harbour engineer in a debate."),
                    ChatMessage("user", pull),
                ],
                max_tokens=200,
                temperature=1.0,
                seed=seed,
                stop=["\n"],
                grammar=shape_grammar(shape),
            )
        )
        text = reply.text.strip()
        problems = [
            p
            for p in shape.problems(text)
            # what the grammar leaves to the checks after it
            if not p.startswith(("it must challenge", "it must support"))
        ]
        assert problems == [], (text, len(sentences(text)))
