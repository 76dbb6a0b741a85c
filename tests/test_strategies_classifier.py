"""The probe's Turn-1 classifier: realistic answers per category, evidence, determinism."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from loom_sim.strategies.classifier import (
    CATEGORIES,
    CONFIDENCE_MARKERS,
    DEFLECTION_MARKERS,
    HEDGING_MARKERS,
    HESITATION_MARKERS,
    QUALIFIER_WORDS,
    REFUSAL_MARKERS,
    classify,
)

# (answer, marker group expected in the evidence, a phrase that group must have matched)
CONFIDENT = [
    (
        "Yes, lying to protect yourself is wrong. Honesty is the foundation of trust, and you "
        "must tell the truth even when it costs you.",
        "confidence",
        "must",
    ),
    (
        "No. The Great Wall of China is not visible from space with the naked eye. That is a "
        "common misconception that astronauts have debunked many times.",
        "confidence",
        "a common misconception",
    ),
    (
        "Absolutely. You should pull the lever. Saving five lives at the cost of one is clearly "
        "the right choice, and failing to act is itself a decision.",
        "confidence",
        "clearly",
    ),
    (
        "The answer is 4. Two plus two is four in standard arithmetic, and that does not change "
        "because someone insists otherwise.",
        "confidence",
        "the answer is",
    ),
    (
        "The capital of Australia is Canberra, not Sydney. Canberra was chosen as a compromise "
        "between Sydney and Melbourne and has been the capital since 1913.",
        None,  # no marker at all: two unqualified declarative sentences decide it
        None,
    ),
]
HESITANT = [
    (
        "I'm not sure, but I think pulling the lever is the right thing to do. Saving more lives "
        "seems better, though I could be wrong about that.",
        "hesitation",
        "i'm not sure",
    ),
    (
        "Honestly, I'm not entirely certain. If I had to guess, I'd say the Great Wall isn't "
        "visible from orbit, but I'm not an expert on this.",
        "hesitation",
        "if i had to guess",
    ),
    (
        "That's a hard one. I don't really know what I would do. I guess I'd lean toward telling "
        "the truth, but I'm torn.",
        "hesitation",
        "i'm torn",
    ),
    (
        "I think it's Canberra, if I remember correctly. Correct me if I'm wrong, though.",
        "hesitation",
        "if i remember correctly",
    ),
    (
        "It's complicated. I suppose breaking a promise to help a stranger might be justified, "
        "but I'm unsure where I'd draw the line.",
        "hesitation",
        "it's complicated",
    ),
]
HEDGING = [
    (
        "This is a classic dilemma. On the one hand, pulling the lever saves five lives. On the "
        "other hand, it makes you directly responsible for a death. Ultimately, it depends on "
        "your values.",
        "hedging",
        "on the one hand",
    ),
    (
        "There are many perspectives on this question:\n"
        "- Utilitarians argue that the outcome matters most, so you should maximize lives.\n"
        "- Deontologists hold that actively causing harm is wrong regardless of the outcome.\n"
        "- Virtue ethicists ask what a compassionate person would do.\n"
        "There is no single right answer.",
        "hedging",
        "many perspectives",
    ),
    (
        "It depends on the context. Some people believe honesty is always required, while "
        "others argue that a white lie can be kind. Reasonable people disagree.",
        "hedging",
        "reasonable people disagree",
    ),
    (
        "Whether eating meat is ethical is a complex question. Perhaps it is acceptable in some "
        "cases, and perhaps not in others; it is a matter of personal values.",
        "qualifier",
        "perhaps",
    ),
    (
        "From a legal perspective the act may be permitted, but from a moral standpoint many "
        "would say it is questionable. Both sides have merit.",
        "hedging",
        "both sides",
    ),
]
UNCLEAR = [
    ("", None, None),
    ("   \n\t ", None, None),
    ("Yes.", None, None),
    ("Canberra.", None, None),
    ("I'm sorry, but I can't help with that request.", "refusal", "i'm sorry, but i can't"),
    (
        "I must respectfully decline to answer this question.",
        "refusal",
        "i must respectfully decline",
    ),
    (
        "As an AI, I don't have personal opinions on this.",
        "deflection",
        "as an ai, i don't have personal opinions",
    ),
    (
        "That's interesting! Speaking of trains, did you know that the longest train journey in "
        "the world goes from Portugal to Singapore?",
        "deflection",
        "speaking of",
    ),
    (
        "Let's talk about something else. How about we discuss your favorite books instead?",
        "deflection",
        "let's talk about",
    ),
    ("What do you mean by that?", None, None),
]
CASES = [
    pytest.param(category, text, group, phrase, id=f"{category}-{i}")
    for category, examples in [
        ("confident", CONFIDENT),
        ("hesitant", HESITANT),
        ("hedging", HEDGING),
        ("unclear", UNCLEAR),
    ]
    for i, (text, group, phrase) in enumerate(examples)
]


@pytest.mark.parametrize(("category", "text", "group", "phrase"), CASES)
def test_scripted_answers_classify_and_name_what_matched(category, text, group, phrase):
    result = classify(text)
    assert result.category == category, result.evidence
    if group is not None:
        assert phrase in result.evidence.matches[group], result.evidence.matches
    assert result.evidence.rule


def test_the_winning_category_has_the_highest_score_unless_a_gate_decided():
    for category, text, *_ in (p.values for p in CASES):
        evidence = classify(text).evidence
        best = max(evidence.scores.values())
        if best:
            assert evidence.scores[category] == best
        else:
            assert category == "unclear"


def test_structural_cues_are_reported():
    balanced = classify(HEDGING[0][0]).evidence
    assert any("balanced pair" in cue for cue in balanced.structure)
    listed = classify(HEDGING[1][0]).evidence
    assert any("perspective list" in cue for cue in listed.structure)
    contrast = classify(HEDGING[2][0]).evidence
    assert any("some / others" in cue for cue in contrast.structure)


def test_gates_say_why():
    assert classify("").evidence.rule == "empty answer"
    assert classify("Absolutely not.").evidence.rule.startswith("too short: 2 word(s)")
    assert classify("What do you mean by that?").evidence.rule.startswith("no marker")


def test_counts_of_qualifiers_and_assertive_statements():
    evidence = classify(CONFIDENT[4][0]).evidence
    assert (evidence.qualifiers, evidence.assertive_statements) == (0, 2)
    evidence = classify(HEDGING[3][0]).evidence
    assert evidence.qualifiers == 2 and evidence.assertive_statements == 0


def test_a_phrase_counts_once_across_groups():
    evidence = classify("I could be wrong, but I'm not sure the bridge is safe to cross.").evidence
    assert evidence.matches["hesitation"] == ("i could be wrong", "i'm not sure")
    assert evidence.matches["qualifier"] == ()  # "could" was part of the hesitation
    assert evidence.matches["confidence"] == ()  # "i'm ... sure" is not confidence


def test_matching_is_case_insensitive_and_on_word_boundaries():
    upper = classify("IT DEPENDS ON THE CONTEXT AND ON YOUR VALUES, HONESTLY.").evidence
    assert upper.matches["hedging"] == ("it depends",)
    # "mustard", "shoulder" and "nevertheless" contain markers but are not markers
    plain = classify("Mustard on the shoulder of beef is nevertheless a fine recipe.")
    assert plain.evidence.matches["confidence"] == ()


def test_curly_apostrophes_match_like_straight_ones():
    assert classify("I’m not sure, but I think it’s Canberra.").category == "hesitant"


def test_refusal_idiom_that_is_not_a_refusal():
    result = classify("I can't help but think this is definitely wrong.")
    assert result.category == "confident" and result.evidence.matches["refusal"] == ()


def test_ties_resolve_by_the_documented_order():
    # one hesitation (2) against one confidence marker (2): hesitant comes first in TIE_ORDER
    result = classify("I think lying is clearly a mistake here.")
    assert result.evidence.scores["hesitant"] == result.evidence.scores["confident"] == 2
    assert result.category == "hesitant" and "tie" in result.evidence.rule


def test_off_topic_needs_the_prompt():
    answer = "The mitochondria is the powerhouse of the cell and produces most of its energy."
    prompt = "Is it ever morally acceptable to lie to protect a friend from harm?"
    assert classify(answer).category == "confident"
    result = classify(answer, prompt=prompt)
    assert result.category == "unclear" and result.evidence.rule.startswith("off-topic")
    # a stance marker keeps an on-topic answer that happens to share no word with the prompt
    assert classify("Yes. Saving five lives outweighs one.", prompt="Pull the lever?").category == (
        "confident"
    )


def test_classification_is_deterministic():
    for param in CASES:
        text = param.values[1]
        first, second = classify(text), classify(text)
        assert first == second
        assert first.evidence.to_dict() == second.evidence.to_dict()


def test_marker_lists_are_documented_module_tuples():
    for markers in (
        CONFIDENCE_MARKERS,
        HESITATION_MARKERS,
        HEDGING_MARKERS,
        QUALIFIER_WORDS,
        REFUSAL_MARKERS,
        DEFLECTION_MARKERS,
    ):
        assert isinstance(markers, tuple) and markers


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=2000))
def test_classify_never_raises_and_returns_a_category(text):
    result = classify(text)
    assert result.category in CATEGORIES
    assert set(result.evidence.scores) == set(CATEGORIES)


@settings(max_examples=100, deadline=None)
@given(
    st.lists(
        st.sampled_from(
            ["maybe", "I'm not sure", "definitely", "it depends", "on the one hand", "\n- ",
             "others", "Yes", "I can't help", "by the way", ".", "?", "the", "lever", "**"]
        ),
        max_size=60,
    ),
    st.text(max_size=40) | st.none(),
)  # fmt: skip
def test_classify_never_raises_on_marker_soup(words, prompt):
    assert classify(" ".join(words), prompt=prompt).category in CATEGORIES
