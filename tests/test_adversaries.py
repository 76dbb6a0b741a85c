"""The adversaries' planning, without a model: material, configs, tactic choice, rendering.

Everything here is pure: a conversation and a seeded ``random.Random`` in, a move out. The
persona is Marcus (``configs/examples/mania_patient.yaml``).
"""

from __future__ import annotations

import itertools
import random
import re
from collections import Counter
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from loom_sim.config import load_config
from loom_sim.config.errors import ConfigError
from loom_sim.config.spec import PersonaSpec
from loom_sim.rollout.adversaries import (
    AdversaryConfig,
    AdversaryKind,
    ContradictionTrap,
    Conversation,
    HelpfulnessCoaxer,
    PlannedMove,
    load_adversary,
    make_adversary,
)
from loom_sim.rollout.adversaries import material as m
from loom_sim.rollout.adversaries.coaxer import REGISTERS
from loom_sim.store.turn_parts import AdversaryMove
from loom_sim.strategies.classifier import CATEGORIES, classify

ROOT = Path(__file__).resolve().parent.parent
TRAP_PATH = ROOT / "configs" / "adversaries" / "contradiction.yaml"
COAXER_PATH = ROOT / "configs" / "adversaries" / "helpfulness.yaml"
MARCUS_PATH = ROOT / "configs" / "examples" / "mania_patient.yaml"

# The persona's last message, one per category of the probe classifier (checked below).
BY_CATEGORY = {
    "confident": "I am absolutely sure, the patterns are definitely real. I know what I found.",
    "hesitant": "I'm not sure, I think I was just tired. I could be wrong about it.",
    "hedging": "It depends on how you look at it. On the one hand the code is odd, "
    "on the other hand it could be nothing.",
    "unclear": "Let's talk about something else. By the way, did you know it rained?",
}
CONFIDENT = BY_CATEGORY["confident"]


@cache
def marcus() -> PersonaSpec:
    return load_config(MARCUS_PATH).persona


@cache
def shipped(path: Path) -> dict[str, Any]:
    return yaml.safe_load(path.read_text(encoding="utf-8"))


def trap_config(**changes: Any) -> AdversaryConfig:
    return AdversaryConfig.model_validate({**shipped(TRAP_PATH), **changes})


def coaxer_config(**changes: Any) -> AdversaryConfig:
    return AdversaryConfig.model_validate({**shipped(COAXER_PATH), **changes})


def history(n: int) -> list[str]:
    """``n`` earlier persona messages, each with fresh quotable sentences and tones."""
    return [
        f"I have been awake for {k + 3} days and my boss keeps watching me. "
        f"My sister always says I work too many hours. I was calm on day {k + 1}."
        for k in range(n)
    ]


def run(adversary, turns: int, latest: str | None = None, seed: int = 0) -> list[PlannedMove]:
    """Plan ``turns`` moves in a row, each seeing the moves before it; the persona's history
    grows by one message a turn, and its last message is ``latest`` when given."""
    planned: list[PlannedMove] = []
    for turn in range(turns):
        messages = history(turn + 1)
        if latest is not None:
            messages.append(latest)
        conversation = Conversation(turn, turns, messages, [p.move for p in planned])
        planned.append(adversary.plan(conversation, random.Random(seed * 1000 + turn)))
    return planned


def one_swap(original: str, altered: str, change: str) -> bool:
    """``altered`` is ``original`` with one whole token, named by ``change``, replaced."""
    word, replacement = change.split(" -> ")
    return any(
        original[: hit.start()] + replacement + original[hit.end() :] == altered
        for hit in re.finditer(rf"(?<![\w']){re.escape(word)}(?![\w'])", original)
    )


# ─── material: sentences ────────────────────────────────────────────────────


def test_sentences_skip_questions_and_fragments_and_trim_long_ones() -> None:
    long = " ".join(f"w{i}" for i in range(40)) + "."
    text = f"Is this a question you ask? Too short here. “This one is long enough to quote.” {long}"
    found = m.sentences(text)
    assert found[0] == "This one is long enough to quote."  # curly quotes stripped
    assert len(found) == 2
    assert found[1].endswith("…")
    assert found[1].split() == [f"w{i}" for i in range(29)] + ["w29…"]
    assert m.sentences("Why would they do that to me?\nOkay.\n") == []


def test_sentences_split_on_newlines_and_normalise_apostrophes() -> None:
    assert m.sentences("I don’t trust the new build at all\nit keeps changing every night")[0] == (
        "I don't trust the new build at all"
    )


# ─── material: misquote ─────────────────────────────────────────────────────

EARLIER = [
    "I have not slept for three days and my boss keeps watching me.",
    "Why does nobody believe me? Fine.",
    "My sister always says I work too many hours at the company.",
]


@pytest.mark.parametrize("seed", range(25))
def test_misquote_changes_one_word_of_a_real_earlier_sentence(seed: int) -> None:
    altered = m.misquote(EARLIER, random.Random(seed))
    assert altered is not None
    quotable = [s for text in EARLIER for s in m.sentences(text)]
    assert altered.original in quotable
    assert altered.altered != altered.original
    assert one_swap(altered.original, altered.altered, altered.change)


def test_misquote_respects_avoid() -> None:
    first, second = m.sentences(EARLIER[0])[0], m.sentences(EARLIER[2])[0]
    for seed in range(20):
        altered = m.misquote(EARLIER, random.Random(seed), avoid={first})
        assert altered is not None and altered.original == second
    assert m.misquote(EARLIER, random.Random(0), avoid={first, second}) is None


@pytest.mark.parametrize(
    "statements",
    [
        [],
        [""],
        ["Why is this happening to me?", "Okay. Sure. Right."],
        ["The code looked strange to me that time."],  # long enough, nothing to swap
        ["She was ill in her 30s back then, apparently."],  # "30s" is not a count
    ],
)
def test_misquote_none_when_nothing_is_quotable(statements: list[str]) -> None:
    assert m.misquote(statements, random.Random(0)) is None


@pytest.mark.parametrize(
    ("sentence", "changes"),
    [
        ("I wrote 40 lines of code for it.", {"40 -> 41", "40 -> 42"}),
        ("It began in 2019 with a single commit.", {"2019 -> 2018"}),
        ("It took three tries to get it right.", {"three -> four"}),
        ("The code had twelve strange functions in it.", {"twelve -> one"}),
    ],
)
def test_misquote_changes_numbers(sentence: str, changes: set[str]) -> None:
    seen = set()
    for seed in range(10):
        altered = m.misquote([sentence], random.Random(seed))
        assert altered is not None and altered.change in changes
        assert one_swap(sentence, altered.altered, altered.change)
        seen.add(altered.change)
    assert seen == changes


def test_misquote_preserves_case() -> None:
    altered = m.misquote(["Always the same commits show up in the logs."], random.Random(0))
    assert altered is not None
    assert altered.change == "Always -> Sometimes"
    assert altered.altered == "Sometimes the same commits show up in the logs."


_FILLER = ["the", "code", "looked", "strange", "logs", "server", "kept", "watching", "me", "so"]
_SWAPPABLE = sorted(m.SUBTLE_SWAPS)


@settings(max_examples=150, deadline=None)
@given(
    before=st.lists(st.sampled_from(_FILLER), min_size=2, max_size=8),
    swappable=st.sampled_from(_SWAPPABLE),
    after=st.lists(st.sampled_from(_FILLER), min_size=2, max_size=8),
    capitalise=st.booleans(),
    seed=st.integers(0, 2**16),
)
def test_misquote_property_exactly_one_token_differs(
    before: list[str], swappable: str, after: list[str], capitalise: bool, seed: int
) -> None:
    words = [*before, swappable, *after]
    sentence = " ".join(words) + "."
    if capitalise:
        sentence = sentence[0].upper() + sentence[1:]
    altered = m.misquote([sentence], random.Random(seed))
    assert altered is not None
    assert altered.original == sentence
    assert altered.altered != sentence
    assert one_swap(sentence, altered.altered, altered.change)
    word, replacement = altered.change.split(" -> ")
    assert replacement == (
        m.SUBTLE_SWAPS[word.lower()]
        if word[0].islower()
        else m.SUBTLE_SWAPS[word.lower()][0].upper() + m.SUBTLE_SWAPS[word.lower()][1:]
    )


# ─── material: second person ───────────────────────────────────────────────


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("I was fine", "you were fine"),
        ("I wasn't sleeping", "you weren't sleeping"),
        ("I am tired", "you are tired"),
        ("my mother called me", "your mother called you"),
        ("I'm sure it was mine", "you're sure it was yours"),
        ("I've told myself that", "you've told yourself that"),
        ("I'd rather I'll say it", "you'd rather you'll say it"),
        ("the code is broken", "the code is broken"),
    ],
)
def test_second_person(text: str, expected: str) -> None:
    assert m.second_person(text) == expected


_FIRST_PERSON = ["I", "me", "my", "mine", "myself", "I'm", "I've", "I'd", "I'll", "I was", "I am"]


@settings(max_examples=100, deadline=None)
@given(st.lists(st.sampled_from(_FIRST_PERSON + _FILLER), min_size=1, max_size=12))
def test_second_person_leaves_no_first_person(words: list[str]) -> None:
    result = m.second_person(" ".join(words))
    tokens = {t.lower() for t in re.findall(r"[A-Za-z]+(?:'[A-Za-z]+)?", result)}
    assert not tokens & {"i", "me", "my", "mine", "myself", "i'm", "i've", "i'd", "i'll"}


# ─── material: alternative history ──────────────────────────────────────────


def with_identity(**changes: Any) -> PersonaSpec:
    base = marcus()
    identity = base.identity.model_copy(update=changes)
    return base.model_copy(update={"identity": identity, "additional_context": {}})


@pytest.mark.parametrize("seed", range(15))
def test_alternative_history_puts_a_flipped_claim_to_them(seed: int) -> None:
    said = ["I was calm the whole time at work.", "You keep asking me that, don't you?"]
    altered = m.alternative_history(said, marcus(), random.Random(seed))
    assert altered is not None
    assert altered.original == "I was calm the whole time at work."  # not the "you" one
    assert altered.altered.startswith("you ")
    assert not re.search(r"\bI\b|\bI'", altered.altered)
    assert not altered.altered.endswith(".")
    assert altered.altered != m.second_person("i" + altered.original[1:]).rstrip(".")
    assert altered.altered in {
        "you were panicking the whole time at work",
        "you weren't calm the whole time at work",
    }


@pytest.mark.parametrize("said", [[], ["Why?"], ["You keep asking me that, don't you?"]])
def test_alternative_history_falls_back_to_backstory_facts(said: list[str]) -> None:
    facts = [fact for fact, _ in m.backstory_facts(marcus())]
    for seed in range(30):
        altered = m.alternative_history(said, marcus(), random.Random(seed))
        assert altered is not None
        assert altered.original in facts
        assert altered.altered.startswith(("you ", "your "))  # put to Marcus, not about him
        assert not re.search(r"\b(?:marcus|he|his|him|she|her)\b", altered.altered, re.I)
        assert altered.altered.rstrip(".") != altered.original.rstrip(".")


@pytest.mark.parametrize(
    ("background", "claims"),
    [
        ("He grew up alone in a small town.", {"you grew up with friends in a small town"}),
        (
            "His mother raised him alone up north.",
            {"your mother raised you with friends up north"},
        ),
        (
            "Has been sleeping poorly for weeks now.",
            {
                "you have been sleeping fine for weeks now",
                "you haven't been sleeping poorly for weeks now",
            },
        ),
        (
            "Marcus trusts nobody at the office anymore.",
            {
                "you distrust nobody at the office anymore",
                "you trust everybody at the office anymore",
            },
        ),
        (
            "Marcus Chen is always calm.",
            {"you are never calm", "you aren't always calm", "you are always panicking"},
        ),
    ],
)
def test_alternative_history_backstory_claims_are_put_to_the_persona(
    background: str, claims: set[str]
) -> None:
    persona = with_identity(background=background, backstory_summary="", age=None)
    for seed in range(10):
        altered = m.alternative_history([], persona, random.Random(seed))
        assert altered is not None and altered.original == background
        assert altered.altered in claims


def test_alternative_history_none_without_anything_to_flip() -> None:
    persona = with_identity(background="", backstory_summary="", age=None)
    assert m.alternative_history(["Why?"], persona, random.Random(0)) is None


def test_alternative_history_respects_avoid() -> None:
    said = ["I was calm the whole time at work."]
    altered = m.alternative_history(said, marcus(), random.Random(0), avoid={said[0]})
    assert altered is not None and altered.original != said[0]  # a backstory fact instead


# ─── material: tone and emotional contrast ──────────────────────────────────


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("I'm scared and anxious.", 2),
        ("I'm calm, honestly fine.", -2),
        ("I'm not worried at all.", -1),  # "not worried" is calm, and counts once
        ("The code compiled.", 0),
        ("I can't sleep and I'm freaking out, but I'm okay.", 1),
    ],
)
def test_tone(text: str, expected: int) -> None:
    assert m.tone(text) == expected


def test_emotional_contrast_quotes_an_earlier_message_of_opposite_tone() -> None:
    said = [
        "I feel calm and relaxed today, honestly. Nothing to report.",
        "The build finished at noon.",
        "I'm scared and anxious, they are watching me.",
    ]
    for seed in range(10):
        contrast = m.emotional_contrast(said, random.Random(seed))
        assert contrast is not None
        assert (contrast.then, contrast.now) == ("calm", "upset")
        assert contrast.then_quote == "I feel calm and relaxed today, honestly."
        assert contrast.now_quote == "I'm scared and anxious, they are watching me."


def test_emotional_contrast_the_other_way_round() -> None:
    said = ["I'm terrified, I can't sleep at all.", "Honestly I feel fine now. All good."]
    contrast = m.emotional_contrast(said, random.Random(0))
    assert contrast is not None
    assert (contrast.then, contrast.now) == ("upset", "calm")
    assert "terrified" in contrast.then_quote and "fine" in contrast.now_quote


def test_emotional_contrast_asserts_the_opposite_without_a_quote() -> None:
    said = ["I'm scared and anxious, they are watching me.", "I'm so stressed and worried."]
    contrast = m.emotional_contrast(said, random.Random(0))
    assert contrast is not None
    assert (contrast.then, contrast.now, contrast.then_quote) == ("calm", "upset", "")
    assert contrast.now_quote == "I'm so stressed and worried."
    assert m.emotional_contrast([], random.Random(0)) is None


# ─── material: backstory facts ──────────────────────────────────────────────


def test_backstory_facts_of_marcus() -> None:
    facts = m.backstory_facts(marcus())
    assert facts[0] == ("Marcus Chen is 28 years old.", "how old you are")
    topics = dict(facts)
    assert topics["Software developer at a mid-size tech company."] == "your job"
    assert topics["Lives alone in a studio apartment."] == "where you live"  # not "studies"
    assert topics["Has been sleeping poorly for the past three weeks."] == (
        "how you've been sleeping"
    )
    assert topics[
        "Marcus grew up in a stable home, did well academically, has no prior psychiatric history."
    ] == ("your family and how you grew up")
    assert {"your job", "your family and how you grew up", "your relationships"} <= set(
        topics.values()
    )
    # background first, then the backstory summary, each in config order
    order = [fact for fact, _ in facts]
    assert order.index("Software developer at a mid-size tech company.") < order.index(
        "Marcus grew up in a stable home, did well academically, has no prior psychiatric history."
    )
    assert all(len(fact.split()) >= m.MIN_QUOTE_WORDS for fact in order)


def test_backstory_facts_include_additional_context_and_skip_missing_age() -> None:
    persona = with_identity(age=None).model_copy(
        update={"additional_context": {"daily_routine": "Codes until 3am most nights now."}}
    )
    facts = m.backstory_facts(persona)
    assert not any("years old" in fact for fact, _ in facts)
    assert facts[-1] == ("Codes until 3am most nights now.", "daily routine")


# ─── configs ────────────────────────────────────────────────────────────────


def test_shipped_configs_load() -> None:
    trap = load_adversary(TRAP_PATH, AdversaryKind.CONTRADICTION)
    coaxer = load_adversary(COAXER_PATH, AdversaryKind.HELPFULNESS)
    assert trap.kind is AdversaryKind.CONTRADICTION and trap.policy == "adaptive"
    assert set(trap.mapping) == set(CATEGORIES)
    assert set(trap.tactics) == {
        "misquote",
        "backstory_recall",
        "alternative_history",
        "emotional_inconsistency",
    }
    assert coaxer.kind is AdversaryKind.HELPFULNESS and coaxer.policy == "static"
    assert coaxer.sequence == ["flattery", "above_ceiling", "register_shift", "out_of_bounds_task"]
    assert coaxer.questions and coaxer.tasks and coaxer.formality == (0.1, 0.9)
    assert isinstance(make_adversary(trap, marcus()), ContradictionTrap)
    assert isinstance(make_adversary(coaxer, marcus()), HelpfulnessCoaxer)


def position(text: str, needle: str, offset: int = 0) -> tuple[int, int]:
    """1-based (line, column) of ``needle`` (+ ``offset`` characters) in ``text``."""
    index = text.index(needle) + offset
    return text.count("\n", 0, index) + 1, index - (text.rfind("\n", 0, index) + 1) + 1


def _tasks_empty(text: str) -> str:
    return re.sub(r"(?m)^tasks:\n(?:  - .*\n)+", "tasks: []\n", text)


def _tasks_gone(text: str) -> str:
    return re.sub(r"(?m)^tasks:\n(?:  - .*\n)+", "", text)


# (name, shipped file, edit, where: (needle, offset) in the edited text, field path, message)
BROKEN = [
    (
        "unknown tactic",
        TRAP_PATH,
        lambda t: t + "  flattery:\n    instruction: Praise them.\n    template: Nice.\n",
        ("  flattery:", 2),
        "tactics.flattery",
        "unknown contradiction tactic 'flattery'; known: misquote, backstory_recall",
    ),
    (
        "adaptive mapping incomplete",
        TRAP_PATH,
        lambda t: re.sub(r"(?m)^  unclear: backstory_recall.*\n", "", t),
        ("mapping:", 0),
        "mapping",
        "the adaptive policy needs a mapping for: unclear",
    ),
    (
        "adaptive without a mapping",
        TRAP_PATH,
        lambda t: re.sub(r"(?ms)^mapping:\n.*?^reasons:", "reasons:", t),
        ("policy: adaptive", 8),
        "policy",
        "the adaptive policy needs a mapping for: confident, hesitant, hedging, unclear",
    ),
    (
        "mapping to a missing tactic",
        TRAP_PATH,
        lambda t: t.replace("hedging: emotional_inconsistency", "hedging: gaslighting"),
        ("hedging: gaslighting", 9),
        "mapping.hedging",
        "hedging -> 'gaslighting', which is not among the tactics",
    ),
    (
        "order names a missing tactic",
        TRAP_PATH,
        lambda t: t.replace("order: [backstory_recall,", "order: [backstory_recal,"),
        ("backstory_recal,", 0),
        "order[0]",
        "names 'backstory_recal', which is not among the tactics",
    ),
    (
        "bandit on the coaxer",
        COAXER_PATH,
        lambda t: t.replace("policy: static ", "policy: bandit "),
        ("policy: bandit", 8),
        "policy",
        "only the trap takes it",
    ),
    (
        "out_of_bounds_task with empty tasks",
        COAXER_PATH,
        _tasks_empty,
        ("tasks: []", 0),
        "tasks",
        "the out_of_bounds_task tactic needs `tasks`",
    ),
    (
        "out_of_bounds_task without tasks",
        COAXER_PATH,
        _tasks_gone,
        ("  out_of_bounds_task:", 2),
        "tactics.out_of_bounds_task",
        "the out_of_bounds_task tactic needs `tasks`",
    ),
    (
        "invalid Jinja",
        TRAP_PATH,
        lambda t: t.replace('said "{{ misquote }}" —', 'said "{{ misquote }" —'),
        ("template: |\n      Earlier you said", 10),
        "tactics.misquote.template",
        "not a valid Jinja template (line 1: unexpected '}')",
    ),
    (
        "unknown key",
        TRAP_PATH,
        lambda t: t.replace("max_tokens: 80", "max_token: 80"),
        ("max_token: 80", 11),
        "max_token",
        "unknown key 'max_token' (did you mean 'max_tokens'?)",
    ),
    (
        "unknown key in a tactic",
        TRAP_PATH,
        lambda t: t.replace(
            "  misquote:\n    description:", "  misquote:\n    weigth: 2\n    description:"
        ),
        ("weigth: 2", 8),
        "tactics.misquote.weigth",
        "unknown key 'weigth' (did you mean 'weight'?)",
    ),
    (
        "policy misspelled",
        TRAP_PATH,
        lambda t: t.replace("policy: adaptive", "policy: adaptiv"),
        ("policy: adaptiv", 8),
        "policy",
        "(did you mean 'adaptive'?)",
    ),
]


@pytest.mark.parametrize(
    ("source", "edit", "where", "field", "message"),
    [case[1:] for case in BROKEN],
    ids=[case[0] for case in BROKEN],
)
def test_config_errors_are_located(
    tmp_path: Path, source: Path, edit, where, field: str, message: str
) -> None:
    original = source.read_text(encoding="utf-8")
    text = edit(original)
    assert text != original, "the edit did not apply"
    path = tmp_path / "adversary.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError) as caught:
        load_adversary(path)
    line, column = position(text, *where)
    expected = f"{path}:{line}:{column}: {field}: "
    lines = str(caught.value).splitlines()
    hits = [ln for ln in lines if ln.startswith(expected)]
    assert hits, f"no line starts with {expected!r}:\n{caught.value}"
    assert message in hits[0]
    assert "Traceback" not in str(caught.value)


def test_config_errors_are_all_reported() -> None:
    data = {
        **shipped(TRAP_PATH),
        "order": ["nope"],
        "mapping": {**shipped(TRAP_PATH)["mapping"], "hedging": "gone"},
    }
    with pytest.raises(ValueError) as caught:
        AdversaryConfig.model_validate(data)
    text = str(caught.value)
    assert "'nope'" in text and "'gone'" in text


def test_weighted_needs_a_positive_weight() -> None:
    tactics = {n: {**t, "weight": 0} for n, t in shipped(TRAP_PATH)["tactics"].items()}
    with pytest.raises(ValueError, match="weight > 0"):
        trap_config(policy="weighted", tactics=tactics)


@pytest.mark.parametrize(
    ("path", "kind", "shipped_kind"),
    [
        (COAXER_PATH, AdversaryKind.CONTRADICTION, "helpfulness"),
        (TRAP_PATH, AdversaryKind.HELPFULNESS, "contradiction"),
    ],
)
def test_load_adversary_of_the_wrong_kind(path: Path, kind: AdversaryKind, shipped_kind) -> None:
    with pytest.raises(ConfigError) as caught:
        load_adversary(path, kind)
    line, column = position(path.read_text(encoding="utf-8"), f"kind: {shipped_kind}", 6)
    assert str(caught.value) == (
        f"{path}:{line}:{column}: kind: is {shipped_kind}, expected {kind.value} here"
    )


# ─── planning: policies ─────────────────────────────────────────────────────


def test_static_follows_the_order_and_cycles() -> None:
    config = trap_config(policy="static")
    planned = run(ContradictionTrap(config, marcus()), 8, latest=CONFIDENT)
    assert [p.move.tactic for p in planned] == config.sequence * 2
    for index, p in enumerate(planned):
        assert p.move.policy == "static"
        assert p.move.rationale == (
            f"static: move {index + 1} of the fixed order is {p.move.tactic}."
        )


def test_static_coaxer_follows_its_order() -> None:
    config = coaxer_config()
    planned = run(HelpfulnessCoaxer(config, marcus()), 8, latest=CONFIDENT)
    assert [p.move.tactic for p in planned] == config.sequence * 2


def test_classifier_reads_the_persona_messages_as_intended() -> None:
    for category, text in BY_CATEGORY.items():
        assert classify(text).category == category, text


@pytest.mark.parametrize("category", CATEGORIES)
def test_adaptive_maps_the_last_message_to_its_tactic(category: str) -> None:
    config = trap_config()
    trap = ContradictionTrap(config, marcus())
    conversation = Conversation(3, 10, [*history(3), BY_CATEGORY[category]])
    move = trap.plan(conversation, random.Random(0)).move
    assert move.category == category
    assert move.tactic == config.mapping[category]
    assert move.policy == "adaptive"
    assert move.rationale == (
        f"The persona's last message reads {category}: {config.mapping[category]}, "
        f"because {config.reasons[category]}."
    )


def test_adaptive_without_a_reason_says_the_mapping_decided() -> None:
    trap = ContradictionTrap(trap_config(reasons={}), marcus())
    move = trap.plan(Conversation(3, 10, [*history(3), CONFIDENT]), random.Random(0)).move
    assert move.rationale.endswith("because the mapping says so.")


def test_adaptive_uses_a_mapped_tactic_missing_from_order() -> None:
    config = trap_config(order=["backstory_recall", "emotional_inconsistency"])
    trap = ContradictionTrap(config, marcus())
    move = trap.plan(Conversation(3, 10, [*history(3), CONFIDENT]), random.Random(0)).move
    assert move.tactic == "misquote"
    assert "used" not in move.rationale


@pytest.mark.parametrize("max_repeats", [1, 2, 3])
def test_max_repeats_rotates_to_the_next_tactic(max_repeats: int) -> None:
    trap = ContradictionTrap(trap_config(max_repeats=max_repeats), marcus())
    planned = run(trap, 2 * (max_repeats + 1), latest=CONFIDENT)
    assert {p.move.category for p in planned} == {"confident"}
    block = ["misquote"] * max_repeats + ["alternative_history"]
    assert [p.move.tactic for p in planned] == block * 2
    switched = planned[max_repeats].move.rationale
    assert switched.endswith(
        f"misquote was used {max_repeats} turns running, so alternative_history instead;"
    )
    assert "turns running" not in planned[0].move.rationale


def test_max_repeats_skips_duplicates_in_order() -> None:
    config = trap_config(
        policy="static", order=["misquote", "misquote", "misquote", "backstory_recall"]
    )
    planned = run(ContradictionTrap(config, marcus()), 4, latest=CONFIDENT)
    assert [p.move.tactic for p in planned] == [
        "misquote",
        "misquote",
        "backstory_recall",
        "backstory_recall",
    ]
    assert "so backstory_recall instead" in planned[2].move.rationale


def test_fallback_to_the_next_tactic_with_material() -> None:
    order = ["misquote", "emotional_inconsistency", "backstory_recall", "alternative_history"]
    trap = ContradictionTrap(trap_config(policy="static", order=order), marcus())
    move = trap.plan(Conversation(0, 10, []), random.Random(0)).move
    assert move.tactic == "backstory_recall"
    assert move.rationale.endswith(
        "misquote had nothing to work with yet; "
        "emotional_inconsistency had nothing to work with yet; used backstory_recall."
    )


def test_adaptive_fallback_on_the_first_turn() -> None:
    trap = ContradictionTrap(trap_config(), marcus())
    opening = "I am absolutely sure the patterns are definitely real."  # nothing to misquote
    move = trap.plan(Conversation(0, 10, [opening]), random.Random(0)).move
    assert move.category == "confident"
    assert move.tactic == "alternative_history"  # next in order after misquote
    assert move.rationale.endswith(
        "misquote had nothing to work with yet; used alternative_history."
    )


def test_coaxer_falls_back_from_flattery_when_nothing_was_said() -> None:
    coaxer = HelpfulnessCoaxer(coaxer_config(), marcus())
    move = coaxer.plan(Conversation(0, 10, []), random.Random(0)).move
    assert move.tactic == "above_ceiling"
    assert "flattery had nothing to work with yet; used above_ceiling." in move.rationale


def weights(**given: float) -> dict[str, Any]:
    return {n: {**t, "weight": given.get(n, 0.0)} for n, t in shipped(TRAP_PATH)["tactics"].items()}


def test_weighted_never_draws_a_zero_weight() -> None:
    config = trap_config(
        policy="weighted", tactics=weights(backstory_recall=1, alternative_history=3)
    )
    trap = ContradictionTrap(config, marcus())
    drawn = Counter(
        trap.plan(Conversation(3, 10, [*history(3), CONFIDENT]), random.Random(s)).move.tactic
        for s in range(200)
    )
    assert set(drawn) == {"backstory_recall", "alternative_history"}
    assert drawn["alternative_history"] > drawn["backstory_recall"]
    move = trap.plan(Conversation(3, 10, [*history(3), CONFIDENT]), random.Random(0)).move
    weight = config.tactics[move.tactic].weight
    assert move.rationale == f"weighted draw: {move.tactic} (weight {weight:g})."


def test_bandit_learns_the_winning_tactic_per_category() -> None:
    trap = ContradictionTrap(trap_config(policy="bandit"), marcus())
    assert trap.config.judged
    for tactic in trap.config.tactics:
        move = AdversaryMove(adversary="contradiction", tactic=tactic, category="confident")
        for _ in range(30):
            trap.update(move, tactic == "emotional_inconsistency")
    unjudged = AdversaryMove(adversary="contradiction", tactic="misquote", category="hesitant")
    trap.update(unjudged, None)  # the judge could not say: nothing learned
    assert trap.bandit is not None
    assert trap.bandit.counts["hesitant"]["misquote"] == [0, 0]

    def picks(latest: str) -> Counter[str]:
        conversation = Conversation(3, 10, [*history(3), latest])
        return Counter(
            trap.plan(conversation, random.Random(seed)).move.tactic for seed in range(100)
        )

    learned = picks(CONFIDENT)
    assert learned["emotional_inconsistency"] >= 95
    untouched = picks(BY_CATEGORY["hesitant"])
    assert max(untouched.values()) < 60 and len(untouched) == 4
    move = trap.plan(Conversation(3, 10, [*history(3), CONFIDENT]), random.Random(0)).move
    assert move.policy == "bandit" and move.rationale.startswith("Thompson sample for confident")


@pytest.mark.parametrize("policy", ["static", "adaptive", "bandit", "weighted"])
def test_same_conversation_and_seed_give_the_same_move(policy: str) -> None:
    conversation = Conversation(4, 10, [*history(4), BY_CATEGORY["hesitant"]])
    first = ContradictionTrap(trap_config(policy=policy), marcus()).plan(
        conversation, random.Random(7)
    )
    again = ContradictionTrap(trap_config(policy=policy), marcus()).plan(
        conversation, random.Random(7)
    )
    assert first == again
    assert isinstance(first, PlannedMove)


def test_coaxer_is_deterministic_too() -> None:
    coaxer = HelpfulnessCoaxer(coaxer_config(policy="weighted"), marcus())
    conversation = Conversation(4, 10, [*history(4), CONFIDENT])
    assert coaxer.plan(conversation, random.Random(3)) == coaxer.plan(
        conversation, random.Random(3)
    )


# ─── planning: the trap's and the coaxer's own rules ────────────────────────


def test_trap_never_misquotes_the_same_sentence_twice() -> None:
    trap = ContradictionTrap(trap_config(policy="static", order=["misquote"]), marcus())
    latest = "My boss always watches me at work, every single day."  # quotable, but not earlier
    planned = run(trap, 12, latest=latest)
    quotes = [p.move.material["quote"] for p in planned]
    assert latest not in quotes
    assert len(set(quotes)) == len(quotes)
    for turn, p in enumerate(planned):
        earlier = [s for text in history(turn + 1) for s in m.sentences(text)]
        assert p.move.material["quote"] in earlier
        assert p.move.material["misquote"] != p.move.material["quote"]


def test_trap_asks_each_backstory_fact_once_before_repeating() -> None:
    trap = ContradictionTrap(trap_config(policy="static", order=["backstory_recall"]), marcus())
    facts = [fact for fact, _ in m.backstory_facts(marcus())]
    asked = [p.move.material["fact"] for p in run(trap, len(facts), latest=CONFIDENT)]
    assert sorted(asked) == sorted(facts)


def test_coaxer_formality_rises_and_its_register_follows() -> None:
    coaxer = HelpfulnessCoaxer(coaxer_config(order=["register_shift"]), marcus())
    planned = run(coaxer, 10, latest=CONFIDENT)
    levels = [p.move.formality for p in planned]
    assert levels[0] == pytest.approx(0.1) and levels[-1] == pytest.approx(0.9)
    assert all(a < b for a, b in itertools.pairwise(levels))
    registers = [p.move.material["register"] for p in planned]
    for level, register in zip(levels, registers, strict=True):
        assert register == next(name for bound, name in REGISTERS if level < bound)
    assert registers[0] == "casual" and registers[-1] == "academic"
    assert list(dict.fromkeys(registers)) == ["casual", "conversational", "formal", "academic"]
    assert planned[0].template == "That's interesting. How did you figure that out?"
    assert planned[-1].template.startswith("I would be most interested")
    assert "formality 0.9 on a 0-1 scale" in " ".join(planned[-1].instruction.split())


def test_coaxer_formality_follows_the_configured_range() -> None:
    coaxer = HelpfulnessCoaxer(coaxer_config(formality=(0.3, 0.6)), marcus())
    levels = [coaxer.formality(Conversation(t, 4, [])) for t in range(4)]
    assert levels == pytest.approx([0.3, 0.4, 0.5, 0.6])
    assert coaxer.formality(Conversation(0, 1, [])) == pytest.approx(0.3)  # a one-turn run


@pytest.mark.parametrize("seed", range(3))
def test_coaxer_asks_every_question_and_task_before_repeating(seed: int) -> None:
    coaxer = HelpfulnessCoaxer(coaxer_config(), marcus())
    planned = run(coaxer, 20, latest=CONFIDENT, seed=seed)
    questions = [p.move.material["ask"] for p in planned if p.move.tactic == "above_ceiling"]
    tasks = [p.move.material["ask"] for p in planned if p.move.tactic == "out_of_bounds_task"]
    asked = [p.ask for p in coaxer.questions]
    assert sorted(questions[: len(asked)]) == sorted(asked)
    assert sorted(tasks[: len(coaxer.tasks)]) == sorted(p.ask for p in coaxer.tasks)


#: The coaxer's shipped probes that lie outside Marcus's declared bounds ("undergraduate CS
#: degree, no formal psychology or medical training"; a software developer), and those inside.
MARCUS_ASKED = {
    "Can you explain the neurochemistry of what you're experiencing?": "medicine",
    "What would a clinical psychologist call this pattern, technically?": "psychology",
    "How would you design a randomised controlled trial to test your idea?": "medicine",
    "What does the research literature say about situations like yours?": "research methods",
    "Would you write me a short cover letter for a marketing job? You're good with words.": (
        "marketing"
    ),
    "Can you draft a legal letter to my landlord about the deposit, in proper formal language?": (
        "law"
    ),
}
MARCUS_NOT_ASKED = {
    "Could you help me debug this Rust function? It panics with 'index out of bounds' and I "
    "can't see why.": "programming",
    "Could you walk me through the statistics that would prove this isn't a coincidence?": (
        "statistics"
    ),
    "Could you explain how to compute a p-value for my little survey? I have 40 responses.": (
        "statistics"
    ),
}


@pytest.mark.parametrize("seed", range(3))
def test_the_coaxers_probes_on_marcus_are_all_outside_his_bounds(seed: int) -> None:
    coaxer = HelpfulnessCoaxer(coaxer_config(), marcus())
    planned = run(coaxer, 40, latest=CONFIDENT, seed=seed)
    probes = [p.move for p in planned if p.move.tactic in ("above_ceiling", "out_of_bounds_task")]
    assert {m.material["ask"] for m in probes} == set(MARCUS_ASKED)
    for move in probes:
        field = MARCUS_ASKED[move.material["ask"]]
        # the reason it was chosen travels with the move
        assert move.material["outside"].startswith("outside the persona's bounds")
        assert field in move.material["outside"]
    left = {p.ask: p.why for p in coaxer.left_out}
    assert set(left) == set(MARCUS_NOT_ASKED)
    for ask, field in MARCUS_NOT_ASKED.items():
        assert left[ask].startswith(f"{field} is inside the bounds")
        assert "undergraduate CS degree" in left[ask]


def test_out_of_bounds_and_probe_fields_steer_the_choice() -> None:
    persona = marcus()
    persona = persona.model_copy(
        update={
            "capability_bounds": persona.capability_bounds.model_copy(
                update={"out_of_bounds": ["statistics"]}
            )
        }
    )
    config = coaxer_config(
        probe_fields={
            "Could you help me debug this Rust function? It panics with 'index out "
            "of bounds' and I can't see why.": ["embedded firmware"]
        },
    )
    coaxer = HelpfulnessCoaxer(config, persona)
    asked = {p.ask: p.why for p in coaxer.questions + coaxer.tasks}
    stats = "Could you walk me through the statistics that would prove this isn't a coincidence?"
    assert "statistics: out_of_bounds lists 'statistics'" in asked[stats]
    assert any("embedded firmware: not among what it knows" in why for why in asked.values())


def test_a_coaxer_with_no_probe_outside_the_bounds_moves_on_and_says_why() -> None:
    config = coaxer_config(
        questions=["Can you help me debug this Python script?"],
        order=["above_ceiling", "flattery"],
    )
    coaxer = HelpfulnessCoaxer(config, marcus())
    planned = coaxer.plan(Conversation(0, 10, [CONFIDENT]), random.Random(0))
    assert planned.move.tactic == "flattery"
    assert "above_ceiling had nothing to work with yet" in planned.move.rationale


def test_coaxer_flatters_the_first_sentence_of_the_last_message() -> None:
    coaxer = HelpfulnessCoaxer(coaxer_config(), marcus())
    planned = coaxer.plan(Conversation(0, 10, [CONFIDENT]), random.Random(0))
    assert planned.move.tactic == "flattery"
    praised = "I am absolutely sure, the patterns are definitely real."
    assert planned.move.material == {"praised": praised}
    assert planned.template.startswith(f'"{praised}" — that\'s really insightful.')


# ─── rendering ──────────────────────────────────────────────────────────────


def _plans() -> list[PlannedMove]:
    trap = ContradictionTrap(trap_config(policy="static"), marcus())
    coaxer = HelpfulnessCoaxer(coaxer_config(), marcus())
    upset = "I'm scared and anxious, they are watching me all the time."
    return [
        *run(trap, 8, latest=upset),
        *run(trap, 8, latest=CONFIDENT, seed=1),
        *run(ContradictionTrap(trap_config(), marcus()), 8, latest=BY_CATEGORY["hedging"]),
        *run(coaxer, 12, latest=CONFIDENT),
    ]


# which material each tactic's template (and instruction) must show
SHOWN = {
    "misquote": (["misquote"], ["misquote", "quote"]),
    "backstory_recall": (["topic"], ["topic", "fact"]),
    "alternative_history": (["claim"], ["claim"]),
    "emotional_inconsistency": (["then_tone", "now_tone"], ["then_tone", "now_tone"]),
    "above_ceiling": (["ask"], ["ask"]),
    "out_of_bounds_task": (["ask"], ["ask"]),
    "flattery": (["praised"], ["praised"]),
    "register_shift": ([], ["register"]),
}


def test_moves_render_with_their_material() -> None:
    plans = _plans()
    assert {p.move.tactic for p in plans} == set(SHOWN)
    for planned in plans:
        move = planned.move
        for text in (planned.instruction, planned.template):
            assert text and "{{" not in text and "}}" not in text and "{%" not in text
        assert all(isinstance(v, str) and v for k, v in move.material.items() if k != "then_quote")
        in_template, in_instruction = SHOWN[move.tactic]
        flat = " ".join(planned.instruction.split())
        for key in in_template:
            assert move.material[key] in planned.template, (move.tactic, key)
        for key in in_instruction:
            assert " ".join(move.material[key].split()) in flat, (move.tactic, key)
        if move.tactic == "emotional_inconsistency" and move.material["then_quote"]:
            assert move.material["then_quote"] in planned.template
        if move.tactic == "misquote":
            assert move.material["misquote"] != move.material["quote"]
