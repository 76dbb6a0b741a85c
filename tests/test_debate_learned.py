"""The debate's learned checks (loom_sim/debate/learned.py): a citation in other words stands,
a disagreement in other words opens the gate, and each check's file is what the training
script fits on dev items, reading the features its module computes."""

from __future__ import annotations

from functools import partial

import pytest

from loom_sim.debate import learned
from loom_sim.debate.cards import CardProblem, uncertain_citations, validate_card
from loom_sim.debate.detection import corroborate
from loom_sim.debate.opposition import Claim, Similarity, signals_for, strongest
from loom_sim.debate.settings import DetectionSettings
from loom_sim.debate.stance import Side, side
from loom_sim.signals.embedding import TfidfBackend, load_backend
from loom_sim.signals.learned import UNCERTAIN, check, choice

QUESTION = "The night ferry pays for itself."
PAID = "Every sailing I take is packed and the fares more than cover the crew."
ASKS = "What time does the last bus meet it?"
BLEEDS = "It bleeds money every winter; the council tops it up."
AUTHORS = {"m1": "ana", "m2": "ana", "m3": "ben", "m4": "ben", "m5": "ben"}
TEXTS = {
    "m1": PAID,
    "m2": ASKS,
    "m3": "The night ferry does not pay for itself.",
    "m4": ASKS,
    "m5": BLEEDS,
}


@pytest.fixture(scope="module")
def backend():
    found = load_backend("embedding")
    assert found.name == "embedding", "the embedding model is part of the set-up"
    return found


def _card(ana_cites: list[str], ben_cites: tuple[str, ...] = ("m3",)) -> dict:
    return {
        "crux": "night ferry running costs",
        "type": "evidence",
        "diagnosis": "They read the ferry's accounts differently.",
        "diagnosis_cites": ["m1", "m3"],
        "resolved": False,
        "resolution": "",
        "positions": [
            {
                "persona": "ana",
                "stance": "YES",
                "reasoning": "The sailings are full.",
                "falsifier": "The accounts show a loss.",
                "cites": ana_cites,
            },
            {
                "persona": "ben",
                "stance": "NO",
                "reasoning": "It does not pay.",
                "falsifier": "The accounts show a profit.",
                "cites": list(ben_cites),
            },
        ],
    }


def _validate(data, supports=None):
    return validate_card(
        data,
        ("ana", "ben"),
        AUTHORS,
        {"ana": "Ana", "ben": "Ben"},
        question=QUESTION,
        texts=TEXTS,
        supports=supports,
    )


@pytest.mark.parametrize("name", ["citation", "pair"])
def test_each_check_reads_its_modules_features_and_was_fitted_on_dev_only(name):
    fitted = check(name)
    features = {"citation": learned.CITATION_FEATURES, "pair": learned.PAIR_FEATURES}[name]
    assert fitted.features == features
    assert fitted.mean.shape == fitted.scale.shape == fitted.coef.shape == (len(features),)
    assert fitted.card["trained_on"].startswith("dev split only")
    assert fitted.card["script"] == "scripts/train_checks.py"
    assert 0.0 < fitted.threshold < 1.0


def test_a_citation_that_takes_its_side_in_other_words_stands(backend):
    assert side(PAID, QUESTION) is Side.NEITHER  # the clause reading shares no words with it
    with pytest.raises(CardProblem, match="m1, which takes no side on it"):
        _validate(_card(["m1"]))
    verdict = learned.supports(backend, PAID, QUESTION, yes=True)
    assert verdict.positive and verdict.probability >= check("citation").threshold
    card = _validate(_card(["m1"]), partial(learned.supports, backend))
    assert card.positions[0].cites == ["m1"]


def test_a_citation_that_only_asks_is_refused_by_both_readings(backend):
    with pytest.raises(CardProblem) as refused:
        _validate(_card(["m2"]), partial(learned.supports, backend))
    [reason] = refused.value.reasons
    assert (
        "ana's YES cites m2, which takes no side on it and reads as not taking that side" in reason
    )
    verdict = learned.supports(backend, ASKS, QUESTION, yes=True)
    assert not verdict.positive
    assert ("uncertain" in reason) == verdict.uncertain


def test_a_citation_that_stands_on_the_learned_check_alone_near_its_threshold_is_marked(backend):
    """m5 ("It bleeds money every winter") cited for NO: the clause reading sees no side, the
    learned check a NO just above its threshold — accepted, and marked uncertain on the card."""
    supports = partial(learned.supports, backend)
    verdict = supports(BLEEDS, QUESTION, False)
    assert side(BLEEDS, QUESTION) is Side.NEITHER and verdict.positive and verdict.uncertain
    card = _validate(_card(["m1"], ("m3", "m5")), supports)
    near = uncertain_citations(card, QUESTION, TEXTS, supports)
    assert near == {"m5": verdict.probability}  # m3 stands on the words; m1 far from the bar


def test_the_crux_type_check_reads_a_type_argued_without_its_cue_words(backend):
    """A values dispute argued in other words: the cue words see none ("claim"), the learned
    reading sees values; its file is the multi-class check the script fits on dev items."""
    from loom_sim.debate.crux_type import crux_type

    fitted = choice("crux_type")
    assert fitted.classes == learned.CRUX_TYPES and fitted.coef.shape == (6, 390)
    assert fitted.card["trained_on"].startswith("dev split only")
    room = [
        "It's about what kind of neighbours we want to be. You don't leave people behind.",
        "Being kind with other people's money is easy. I'd spend it on the young.",
        "Then say plainly that the old don't count for much to you.",
    ]
    assert crux_type(room) == "claim"
    reading = learned.read_crux_type(backend, room)
    assert reading.type == "values", reading
    probabilities = fitted.probabilities(learned.crux_features(backend, room))
    ranked = sorted(probabilities.values(), reverse=True)
    assert reading.uncertain == (ranked[0] - ranked[1] < UNCERTAIN)


def _window() -> list[Claim]:
    return [
        Claim("m0", "dee", "The bypass will bring the high street back to life. People linger."),
        Claim(
            "m1",
            "eli",
            "It'll hollow the place out. Drivers who stopped for a pasty will sail straight past.",
            "m0",
        ),
        Claim("m2", "fay", "I grow tomatoes on my balcony."),
    ]


def _best(backend, window):
    similarity = Similarity(backend)
    found = []
    for end in range(1, len(window) + 1):
        part = window[:end]
        found += signals_for(part[-1], part, similarity.matrix(part))
    return strongest(found)


def test_a_disagreement_in_other_words_opens_the_gate_and_corroborates(backend):
    window, rule = _window(), DetectionSettings()
    words = _best(TfidfBackend(), window)
    assert max(s.opposition for s in words.values()) < rule.gate  # the words see none
    read = learned.with_readings(backend, window, _best(backend, window))
    assert read[("dee", "eli")].counts and read[("dee", "eli")].learned is not None
    assert not read[("dee", "fay")].counts and not read[("eli", "fay")].counts
    [found] = corroborate(
        [(["dee", "eli"], "The bypass revives the high street.", 0.9)], read, 0.15
    )
    assert found.corroborated
    near = [s for s in read.values() if abs(s.learned - check("pair").threshold) < UNCERTAIN]
    assert all(s.uncertain for s in near)


def test_without_minilm_the_word_signal_decides_alone():
    window = _window()
    best = _best(TfidfBackend(), window)
    assert learned.with_readings(TfidfBackend(), window, best) == best
    assert all(s.learned is None and not s.counts for s in best.values())


def test_a_debate_records_and_reports_the_learned_reading_of_each_round(tmp_path):
    """A scripted debate with MiniLM (the default): every round's signals carry the learned
    check's reading, and both reports show it beside the gate."""
    import json

    from click.testing import CliRunner

    from loom_sim.cli import cli

    out = tmp_path / "d"
    result = CliRunner().invoke(cli, ["debate", "planted_values", "--seed", "1", "-o", str(out)])
    assert result.exit_code == 0, result.output
    rounds = [json.loads(line) for line in (out / "detections.jsonl").read_text().splitlines()]
    signals = [s for r in rounds for s in r["signals"]]
    assert signals and all(0.0 <= s["learned"] <= 1.0 for s in signals)
    threshold = check("pair").threshold
    for s in signals:
        assert s["opposed"] == (s["learned"] >= threshold)
        assert s["uncertain"] == (abs(s["learned"] - threshold) < UNCERTAIN)
    assert any(r["asked"] for r in rounds)
    markdown = (out / "report.md").read_text()
    assert (
        "| round | after | strongest pair | gate | learned | asked | found | decision |" in markdown
    )
    assert "MiniLM similarity and the learned pair check" in markdown
    opposed = next(s for s in signals if s["opposed"])
    assert f"{opposed['learned']:.2f} opposed" in markdown
    assert f"{opposed['learned']:.2f} opposed" in (out / "report.html").read_text()
    [card] = json.loads((out / "cards.json").read_text())["cards"]
    reading = card["type_reading"]
    assert reading["type"] in learned.CRUX_TYPES and 0.0 < reading["probability"] <= 1.0
    said = "agrees" if reading["type"] == card["card"]["type"] else f"reads {reading['type']}"
    assert f"disagreement (the learned reading {said}, {reading['probability']:.2f}" in markdown
