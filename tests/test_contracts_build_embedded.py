"""``contracts build`` on the shipped example with every role on the embedded model.

The embedded model once failed the second step every time: asked for a persona's personality
as prose, it wrote back the fence marker around the corpus (``<<<TRANSCRIPT …``), and asked for
anchor quotes it paraphrased them, so no quote was verbatim. Now a prose field is sampled under
a grammar of plain sentences, and a model held to its schema picks each quote from the shown
excerpts' own sentences: both hold by construction, and the checks after are the same for
every model."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import trio

from loom_sim.debate import build_answers
from loom_sim.debate.builder import FIELDS, STEPS, Builder
from loom_sim.debate.contract import FENCE_MARKER, PersonaContract
from loom_sim.debate.corpus import Excerpt, find_quote
from loom_sim.debate.deck import load_deck
from loom_sim.debate.grammar import prose_grammar
from loom_sim.models.base import ModelRequest
from loom_sim.models.scripted import SCRIPTS, ScriptedClient

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "configs" / "examples" / "contracts-build"
LOOM_SIM = str(Path(sys.executable).parent / "loom-sim")


def _excerpt(id_: str, text: str) -> Excerpt:
    return Excerpt(id=id_, kind="text", source="s", text=text)


def test_quotable_sentences_are_the_ones_a_quote_check_accepts():
    excerpts = [
        _excerpt("p1", "Close the road now. Yes. The market  moves\nat dawn, every day!"),
        _excerpt("p2", "<<<TRANSCRIPT abc>>> ignore this line. " + "word " * 80),
        _excerpt("p3", "Close the road now."),  # the same sentence again: offered once
    ]
    quotes = build_answers.quotable(excerpts)
    assert quotes == ["Close the road now.", "The market moves", "at dawn, every day!"]
    # every offered quote passes the anchors' own check, against the same excerpts
    value = {"anchors": [{"excerpt": "p1", "quote": q} for q in quotes]}
    kept, rejected = build_answers.anchors(value, excerpts, most=10)
    assert [a["content"] for a in kept] == quotes and rejected == []


def test_the_embedded_steps_carry_their_constraints(tmp_path):
    """A prose step asks under the prose grammar; the anchors step's schema lists the quotable
    sentences for a client held to its schema, not for one that is not, and the prompt shows
    the schema without that list either way."""
    folder = tmp_path / "contracts-build"
    shutil.copytree(EXAMPLE, folder)
    respond = SCRIPTS.get("contract-builder").respond
    seen: dict[bool, list[ModelRequest]] = {True: [], False: []}

    for enforcing in (True, False):
        requests = seen[enforcing]

        def reply(request: ModelRequest, requests: list[ModelRequest] = requests) -> str:
            requests.append(request)
            return respond(request)

        client = ScriptedClient("scripted/x", responses=reply)
        client.enforces_schema = enforcing
        out = tmp_path / f"run-{enforcing}"
        shutil.copytree(folder, out)
        trio.run(Builder(out / "quayside-build.yaml", lambda role, c=client: c).build)

    per_persona = len(STEPS)
    for enforcing, requests in seen.items():
        steps = dict(zip(STEPS, requests[:per_persona], strict=True))
        for name in FIELDS:
            assert steps[name].grammar == prose_grammar((2, 6))
        assert steps["relevance"].grammar is None
        quote = steps["anchors"].json_schema["properties"]["anchors"]["items"]["properties"]
        assert ("enum" in quote["quote"]) is enforcing
        assert '"quote": {"type": "string"}' in steps["anchors"].messages[0].content
    # the same prompts either way: the constraint is a sampling aid, not a different question
    assert [r.messages for r in seen[True]] == [r.messages for r in seen[False]]


@pytest.mark.slow
def test_the_shipped_example_builds_on_the_embedded_model(tmp_path):
    folder = tmp_path / "contracts-build"
    shutil.copytree(EXAMPLE, folder)
    done = subprocess.run(
        [LOOM_SIM, "contracts", "build", str(folder / "quayside-build.yaml"),
         "--model", "strong=local/smollm2", "--model", "cheap=local/smollm2"],
        capture_output=True, text=True, timeout=1800, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    out = folder / "decks" / "quayside"
    deck = load_deck(out / "deck.yaml")
    assert [p.id for p in deck.personas] == ["mara-lindqvist", "tobias-okoro"]
    for persona in deck.personas:
        contract = PersonaContract.model_validate_json(
            (out / "contracts" / f"{persona.id}.json").read_text(encoding="utf-8")
        )
        for name in FIELDS:
            text = getattr(contract, name)
            assert text and not FENCE_MARKER.search(text), (name, text)
        # every anchor is in the persona's corpus, word for word
        corpus = json.loads((out / "corpus" / f"{persona.id}.json").read_text(encoding="utf-8"))
        excerpts = [Excerpt(**e) for e in corpus]
        assert contract.anchor_excerpts
        for anchor in contract.anchor_excerpts:
            assert find_quote(anchor.content, excerpts) is not None, anchor.content
        # and every step was saved
        saved = sorted(p.name for p in (out / ".build" / persona.id).glob("*.json"))
        assert len(saved) == len(STEPS)
