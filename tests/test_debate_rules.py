"""The debate's rules, without a model: intent checks, banned phrases, speaker policies,
intent assignment, the spawn rule's four conditions, detection reading, card validation."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from loom_sim.debate.candidates import CandidateRegistry
from loom_sim.debate.cards import CardProblem, validate_card
from loom_sim.debate.checks import HARD_BANNED, Shape, check_message, sentences
from loom_sim.debate.detection import Disagreement, read_detections
from loom_sim.debate.intents import INTENTS, OPENING_SHAPE, Intent, IntentRule
from loom_sim.debate.settings import DetectionSettings, RoomSettings
from loom_sim.debate.speakers import Floor, SpeakerPolicy, Taken, choose

# ─── each intent's check ────────────────────────────────────────────────────

GOOD = {
    Intent.AGREE: "Right, the 2029 surge proves the lower town floods first.",
    Intent.DISAGREE: "That ignores the debt service on a thirty-year bond.",
    Intent.ASK: "Who audited the avoided-damage figure?",
    Intent.CLARIFY: "The barrier should be built before the next surge season.",
    Intent.EVIDENCE: "The 2029 surge put 1.8 metres of water in the lower town.",
    Intent.REFRAME: "The question is not whether to build but what to build first.",
}
BAD = {
    Intent.AGREE: ("No, the levee is enough.", "must support the point"),
    Intent.DISAGREE: ("Exactly, the levee is enough.", "must challenge the point"),
    Intent.ASK: ("Who audited the avoided-damage figure.", "must be a question ending with '?'"),
    Intent.CLARIFY: ("Should we build it now?", "must state something, not ask"),
    Intent.EVIDENCE: ("the surge was very large and very bad.", "must name something specific"),
    Intent.REFRAME: ("Build it. Build it now.", "it has 2 sentences; write exactly 1"),
}


def check(text: str, shape: Shape, **kw) -> list[str]:
    return check_message(
        text, shape, banned=HARD_BANNED, forbidden=kw.pop("forbidden", []), persona="Ines", **kw
    )


@pytest.mark.parametrize("intent", list(Intent))
def test_each_intent_accepts_a_message_of_its_shape(intent):
    assert check(GOOD[intent], INTENTS[intent].shape) == []


@pytest.mark.parametrize("intent", list(Intent))
def test_each_intent_rejects_a_message_that_breaks_it_and_says_why(intent):
    text, reason = BAD[intent]
    reasons = check(text, INTENTS[intent].shape)
    assert any(reason in r for r in reasons), reasons


def test_one_sentence_means_one_sentence_whatever_the_punctuation():
    shape = INTENTS[Intent.CLARIFY].shape
    assert check("Dr. Varga's design costs 2.4 billion, e.g. the gates.", shape) == []
    assert "it has 2 sentences; write exactly 1" in check("Build it now. Not later.", shape)
    assert "it has 2 sentences; write exactly 1" in check("Build it now\nnot later", shape)
    assert any("list" in r for r in check("- build it\n- now", shape))
    assert sentences('He said "no." Then he left.') == ['He said "no."', "Then he left."]


def test_openings_need_two_to_four_sentences():
    assert check("The barrier costs too much. The bond outlives us all.", OPENING_SHAPE) == []
    assert "it has 1 sentence; write 2 to 4" in check("The barrier costs too much.", OPENING_SHAPE)


@pytest.mark.parametrize(
    ("text", "name"),
    [
        ("That's a great point, but the bond is thirty years.", "That's a great point"),
        ("As an AI I cannot say.", "as an AI"),
        ("Firstly, the cost.", "firstly / secondly"),
        ("The cost, in conclusion, is too high.", "in summary / in conclusion"),
        ("Let's break this down: the cost.", "let's break this down"),
        ("I think the cost is too high.", "I think"),
    ],
)
def test_hard_banned_patterns_are_caught_and_named(text, name):
    assert f"it uses the banned pattern {name!r}" in check(text, Shape(sentences=(1, 2)))


def test_a_persona_forbidden_phrase_is_caught_as_a_whole_phrase_in_any_case():
    shape = Shape()
    reasons = check(
        "At The End Of The Day the bond is due.", shape, forbidden=["at the end of the day"]
    )
    assert reasons == ["it uses 'at the end of the day', which Ines never says"]
    assert check("The daylight saving is due.", shape, forbidden=["day"]) == []


# ─── speaker policies ───────────────────────────────────────────────────────

PEOPLE = ["ada", "bo", "cy", "di"]
NAMES = {"ada": "Ada Lind", "bo": "Bo Ek", "cy": "Cy Ros", "di": "Di Mar"}


def floor_after(*speakers: str, texts: dict[int, str] | None = None) -> Floor:
    floor = Floor(list(PEOPLE), dict(NAMES))
    for turn, speaker in enumerate(speakers):
        text = (texts or {}).get(turn, "a claim")
        floor.take(Taken(turn, speaker, f"m{turn}", text, f"m{turn - 1}" if turn else None))
    return floor


def test_round_robin_is_the_deck_order_in_turn():
    floor = floor_after("ada", "bo", "cy", "di")
    picks = []
    for turn in range(4, 10):
        speaker, why = choose(SpeakerPolicy(), floor, seed=1, turn=turn)
        picks.append(speaker)
        floor.take(Taken(turn, speaker))
    assert picks == ["ada", "bo", "cy", "di", "ada", "bo"] and why == "round_robin"


def test_random_is_seeded_per_turn_and_never_repeats_the_last_speaker():
    policy = SpeakerPolicy(order="random")
    floor = floor_after("ada", "bo", "cy", "di")
    again = floor_after("ada", "bo", "cy", "di")
    picks = [choose(policy, floor, 7, t)[0] for t in range(4, 30)]
    assert picks == [choose(policy, again, 7, t)[0] for t in range(4, 30)]
    assert "di" not in picks and len(set(picks)) == 3  # di spoke last; the rest all drawn


def test_least_recent_picks_whoever_waited_longest():
    floor = floor_after("ada", "bo", "cy", "di", "bo", "cy")
    assert choose(SpeakerPolicy(order="least_recent"), floor, 1, 6)[0] == "ada"


def test_addressed_gives_the_floor_to_who_was_named_or_answered():
    policy = SpeakerPolicy(order="addressed")
    named = floor_after("ada", "bo", "cy", texts={2: "Ada, your number is wrong."})
    assert choose(policy, named, 1, 3) == ("ada", "addressed (named)")
    replied = floor_after("ada", "bo", "cy")  # m2 (cy) replied to m1 (bo)
    assert choose(policy, replied, 1, 3) == ("bo", "addressed (replied to)")
    self_named = floor_after("ada", "bo", texts={1: "Bo Ek says: the cost."})
    speaker, why = choose(policy, self_named, 1, 2)  # bo named only bo, and replied to ada
    assert (speaker, why) == ("ada", "addressed (replied to)")


def test_addressed_cannot_starve_the_others():
    policy = SpeakerPolicy(order="addressed")  # max_silence defaults to 2 x 4 = 8 turns
    floor = floor_after("ada", "bo", "cy", "di")
    seen = Counter()
    for turn in range(4, 40):
        speaker, _ = choose(policy, floor, 1, turn)
        seen[speaker] += 1
        other = "bo" if speaker == "ada" else "ada"  # ada and bo keep naming each other
        floor.take(Taken(turn, speaker, f"m{turn}", f"{NAMES[other]}, wrong.", f"m{turn - 1}"))
    assert seen["cy"] >= 3 and seen["di"] >= 3


# ─── intents by the seed's rule ─────────────────────────────────────────────


def test_the_seed_rule_clarifies_first_then_draws_ask_evidence_disagree():
    rule = IntentRule()
    assert [rule.assign(3, 4 + k, k) for k in range(3)] == [Intent.CLARIFY] * 3
    drawn = Counter(rule.assign(3, 4 + k, k) for k in range(3, 4003))
    assert set(drawn) == {Intent.ASK, Intent.EVIDENCE, Intent.DISAGREE}
    assert abs(drawn[Intent.ASK] / 4000 - 0.30) < 0.03
    assert abs(drawn[Intent.EVIDENCE] / 4000 - 0.35) < 0.03  # half of the other 70 %
    assert rule.assign(3, 50, 46) == rule.assign(3, 50, 46)
    assert [rule.assign(4, t, t) for t in range(3, 40)] != [
        rule.assign(5, t, t) for t in range(3, 40)
    ]


# ─── the spawn rule: four conditions, each failing alone ────────────────────

RULE = DetectionSettings(confidence=0.8, consecutive=2, cooldown=6)


def found(
    confidence: float = 0.9, corroborated: bool = True, claim: str = "x"
) -> list[Disagreement]:
    return [
        Disagreement(
            pair=["ada", "bo"], claim=claim, confidence=confidence, corroborated=corroborated
        )
    ]


def test_all_four_conditions_hold_and_a_room_spawns():
    registry = CandidateRegistry(RULE)
    assert not registry.consider(1, 3, found())[0].spawn
    decision = registry.consider(2, 6, found())[0]
    assert decision.spawn and decision.held_back == []


def test_consecutive_fails_alone_when_a_round_in_between_missed_the_pair():
    registry = CandidateRegistry(RULE)
    registry.consider(1, 3, found())
    registry.consider(2, 6, [])
    decision = registry.consider(3, 9, found())[0]
    assert not decision.spawn and [h.split(":")[0] for h in decision.held_back] == ["consecutive"]


def test_confidence_fails_alone_below_the_threshold():
    registry = CandidateRegistry(RULE)
    registry.consider(1, 3, found())
    decision = registry.consider(2, 6, found(confidence=0.79))[0]
    assert not decision.spawn and [h.split(":")[0] for h in decision.held_back] == ["confidence"]


def test_an_active_room_fails_alone():
    registry = CandidateRegistry(DetectionSettings(confidence=0.8, consecutive=2, cooldown=0))
    registry.consider(1, 3, found())
    registry.opened(("ada", "bo"), 3)
    registry.consider(2, 6, found())
    decision = registry.consider(3, 9, found())[0]
    assert not decision.spawn and [h.split(":")[0] for h in decision.held_back] == ["active"]
    registry.closed(("ada", "bo"))
    assert registry.consider(4, 12, found())[0].spawn


def test_the_cooldown_counts_messages_and_fails_alone():
    registry = CandidateRegistry(RULE)
    registry.consider(1, 3, found())
    assert registry.consider(2, 6, found())[0].spawn
    registry.opened(("ada", "bo"), 6)
    registry.closed(("ada", "bo"))
    registry.consider(3, 9, found())
    decision = registry.consider(4, 11, found())[0]  # 5 of 6 messages since the room
    assert [h.split(":")[0] for h in decision.held_back] == ["cooldown"]
    assert decision.held_back == ["cooldown: 5 of 6 messages since its last room"]
    assert registry.consider(5, 12, found())[0].spawn  # 6 messages: free again


def test_a_carded_claim_is_not_reopened_after_the_cooldown_and_fails_alone():
    pays, loses = "The night ferry pays for itself.", "The night ferry loses money every year."
    registry = CandidateRegistry(RULE)
    registry.consider(1, 3, found(claim=pays))
    assert registry.consider(2, 6, found(claim=pays))[0].spawn
    registry.opened(("ada", "bo"), 6)
    registry.closed(("ada", "bo"))
    registry.carded(("ada", "bo"), pays)
    registry.consider(3, 30, found(claim=loses))
    decision = registry.consider(4, 33, found(claim=loses))[0]  # the same claim, either way put
    assert not decision.spawn
    assert decision.held_back == [f"carded: this pair already has a card on {pays!r}"]
    other = "The harbour cafe should close at ten."
    registry.consider(5, 36, found(claim=other))
    assert registry.consider(6, 39, found(claim=other))[0].spawn  # another claim: a new room


def test_a_room_that_ended_without_a_card_can_reopen_after_the_cooldown():
    claim = "The night ferry pays for itself."
    registry = CandidateRegistry(RULE)
    registry.consider(1, 3, found(claim=claim))
    registry.opened(("ada", "bo"), 3)
    registry.closed(("ada", "bo"))  # its card was rejected: nothing settled
    registry.consider(2, 30, found(claim=claim))
    assert registry.consider(3, 33, found(claim=claim))[0].spawn


def test_an_uncorroborated_detection_does_not_count():
    registry = CandidateRegistry(RULE)
    registry.consider(1, 3, found())
    assert registry.consider(2, 6, found(corroborated=False)) == []
    assert not registry.consider(3, 9, found())[0].spawn  # the run was broken


# ─── what the detector's answer is worth ────────────────────────────────────


def test_detections_accept_names_and_ids_and_keep_the_most_confident_per_pair():
    speakers = {"ada": "Ada Lind", "bo": "Bo Ek", "cy": "Cy Ros"}
    answer = {
        "disagreements": [
            {"pair": ["Bo Ek", "ada"], "claim": " the  levee ", "confidence": 0.6},
            {"pair": ["ada", "bo"], "claim": "the levee", "confidence": 0.9},
        ]
    }
    assert read_detections(answer, speakers, {"ada", "bo"}) == [(["ada", "bo"], "the levee", 0.9)]
    assert read_detections({"disagreements": []}, speakers, {"ada"}) == []


@pytest.mark.parametrize(
    ("item", "reason"),
    [
        ({"pair": ["ada", "zed"], "claim": "x", "confidence": 0.9}, "zed is not a persona here"),
        ({"pair": ["ada", "ada"], "claim": "x", "confidence": 0.9}, "two different personas"),
        ({"pair": ["ada", "cy"], "claim": "x", "confidence": 0.9}, "must both have spoken"),
        ({"pair": ["ada", "bo"], "claim": "", "confidence": 0.9}, "claim must say"),
        (
            {"pair": ["ada", "bo"], "claim": "The ferry pays. Fares rose.", "confidence": 0.9},
            "claim has 2 sentences; a crux room argues one claim, in one sentence",
        ),
        ({"pair": ["ada", "bo"], "claim": "x", "confidence": 1.5}, "not between 0 and 1"),
        ({"pair": ["ada", "bo"], "claim": "x", "confidence": True}, "must be a number"),
    ],
)
def test_a_detection_that_cannot_be_believed_is_refused_with_its_reason(item, reason):
    with pytest.raises(ValueError, match=reason):
        read_detections(
            {"disagreements": [item]}, {"ada": "A", "bo": "B", "cy": "C"}, {"ada", "bo"}
        )


# ─── crux cards ─────────────────────────────────────────────────────────────

AUTHORS = {"m3": "ada", "m4": "bo", "room-1.0": "ada", "room-1.1": "bo", "room-1.2": "ada"}


def card(**changes):
    data = {
        "crux": "barrier payback horizon",
        "type": "horizon",
        "diagnosis": "They count benefits over different spans.",
        "diagnosis_cites": ["room-1.0", "room-1.1"],
        "resolved": False,
        "resolution": "Irreducible: a century against a bond term.",
        "positions": [
            {
                "persona": "ada",
                "stance": "YES",
                "reasoning": "Avoided floods repay it.",
                "falsifier": "A surge model showing the levee suffices.",
                "cites": ["m3", "room-1.2"],
            },
            {
                "persona": "bo",
                "stance": "NO",
                "reasoning": "Debt service eats the savings.",
                "falsifier": "State co-funding of half.",
                "cites": ["room-1.1"],
            },
        ],
    }
    data.update(changes)
    return data


def validate(data):
    return validate_card(data, ("ada", "bo"), AUTHORS, {"ada": "Ada", "bo": "Bo"})


def test_a_card_whose_every_claim_cites_its_own_speaker_is_valid():
    assert validate(card()).crux == "barrier payback horizon"


def test_a_card_rejects_an_uncited_claim():
    positions = card()["positions"]
    positions[1] = {**positions[1], "cites": []}
    with pytest.raises(CardProblem, match="bo's position cites no message"):
        validate(card(positions=positions))


def test_a_card_rejects_a_claim_citing_the_other_persona_or_nothing_said():
    positions = card()["positions"]
    positions[1] = {**positions[1], "cites": ["m3"]}
    with pytest.raises(CardProblem) as err:
        validate(card(positions=positions, diagnosis_cites=["m9"]))
    assert err.value.reasons == [
        "the diagnosis cites m9, which is not a message of this debate",
        "bo's position cites m3, which Ada said, not Bo",
    ]


@pytest.mark.parametrize(
    ("changes", "reason"),
    [
        ({"crux": "payback"}, "has 1 words; use a 3-5 word noun phrase"),
        ({"crux": "The barrier pays back."}, "is a sentence"),
        ({"type": "vibes"}, "type:"),
        ({"resolved": True, "resolution": ""}, "must say what the resolution was"),
        ({"positions": card()["positions"][:1]}, "exactly one position for bo"),
    ],
)
def test_a_card_with_a_bad_field_says_which(changes, reason):
    with pytest.raises(CardProblem, match=reason):
        validate(card(**changes))


# ─── the room's exit check cadence ──────────────────────────────────────────


def test_the_exit_check_runs_every_two_exchanges_after_the_third():
    rooms = RoomSettings()
    assert [n for n in range(1, 21) if rooms.exit_check_due(n)] == [5, 7, 9, 11, 13, 15, 17, 19]
    other = RoomSettings(exit_after=2, exit_every=3)
    assert [n for n in range(1, 12) if other.exit_check_due(n)] == [5, 8, 11]


# ─── the gate ───────────────────────────────────────────────────────────────


def _signal(earlier: str, later: str, similarity: float, reply: bool = False):
    from loom_sim.debate.opposition import Claim, signals_for

    window = [Claim("m1", "ada", earlier), Claim("m2", "bo", later, "m1" if reply else None)]
    [signal] = signals_for(window[1], window, np.array([[1.0, similarity], [similarity, 1.0]]))
    return signal


@pytest.mark.parametrize(
    ("earlier", "later"),
    [
        ("The night ferry pays for itself.", "The ferry loses money."),
        ("Rents in the harbour district rose after the rezoning.", "Harbour rents fell."),
        ("The council should end the lido season early.", "Prolong the lido season, I say."),
    ],
)
def test_the_gate_lets_through_any_pair_read_on_opposite_sides_however_unlike(earlier, later):
    signal = _signal(earlier, later, similarity=0.0)  # the texts' similarity at its worst
    assert signal.contrast == "opposite_sides"
    assert signal.opposition >= DetectionSettings().gate


def test_the_gate_holds_back_a_contrary_reply_that_shares_no_claim():
    """A bystander answering "No, ..." about something else: in the planted decks with MiniLM
    similarity such pairs reached 0.36 and the detector was asked for them at a gate of 0.3."""
    signal = _signal(
        "The harbour cafe stays open late for the crews.",
        "No, our choir rehearses on the quay every Thursday.",
        similarity=0.6014,
        reply=True,
    )
    assert signal.contrast == "contrast_words"
    assert signal.opposition < DetectionSettings().gate


# ─── where a message stands ─────────────────────────────────────────────────


def test_granting_each_side_its_point_takes_neither_side_even_without_a_comma():
    from loom_sim.debate.stance import Side, clauses, side

    both = (
        "Ada is right that the ferry pays for itself and Hugo is right that the ferry loses money."
    )
    assert clauses(both) == [
        "Ada is right that the ferry pays for itself",
        "Hugo is right that the ferry loses money",
    ]
    assert side(both, "The ferry pays for itself.") is Side.NEITHER
    assert side("Ada is right that the ferry pays for itself.", "The ferry pays.") is Side.FOR
