"""The report's verdict on a deck's planted crux, and the measured figures it quotes: each case
on its own."""

from __future__ import annotations

from loom_sim.debate.records import RoomStart
from loom_sim.debate.validity import measured
from loom_sim.debate.verdicts import card_trust, detection_trust, planted_lines

CRUX = {"pair": ["petra", "hugo"], "claim": "The night ferry pays for itself.", "type": "horizon"}


def room(n: int, pair: list[str], question: str) -> RoomStart:
    return RoomStart(id=f"room-{n}", pair=pair, question=question, after=9, last_message="m8")


def lines(planted, rooms, types=None):
    return planted_lines(planted, rooms, types or {}, str.title)


def test_a_room_for_the_pair_on_the_claim_however_put_is_found_with_its_card_type():
    [line] = lines(
        [CRUX], [room(1, ["hugo", "petra"], "The night ferry loses money.")], {"room-1": "claim"}
    )
    assert "horizon disagreement between Hugo and Petra" in line
    assert "FOUND — room-1 opened after 9 messages" in line
    assert "its card types it claim (planted: horizon)" in line


def test_no_room_for_the_pair_is_not_found():
    [line] = lines([CRUX], [])
    assert line.endswith("NOT FOUND — no crux room opened for the pair.")


def test_a_room_for_the_pair_on_another_claim_is_not_found_and_a_stray_room_is_named():
    rooms = [
        room(1, ["petra", "hugo"], "The harbour cafe should close at ten."),
        room(2, ["petra", "wren"], "The night ferry pays for itself."),
    ]
    first, stray = lines([CRUX], rooms)
    assert "NOT FOUND — room-1 opened for the pair, but on" in first
    assert stray == "Rooms for a pair nobody planted: room-2 (Petra × Wren)."


def test_a_deck_that_plants_nothing_says_so_and_counts_any_room():
    assert lines([], []) == [
        "This deck plants no disagreement: none found, and no crux room opened."
    ]
    [line] = lines([], [room(1, ["a", "b"], "X is so.")])
    assert line == "This deck plants no disagreement: 1 crux room(s) opened where none was planted."
    assert lines(None, [room(1, ["a", "b"], "X is so.")]) == []  # no answer key, nothing said


def test_a_model_loom_sim_has_not_measured_is_named_as_such_beside_the_measured_figures():
    figures = measured()
    said = detection_trust("openai/gpt-4.1", "embedding")
    assert "the detector here is openai/gpt-4.1, whose error loom-sim has not measured" in said
    assert str(figures.get("gate", "embedded")) in said and "MiniLM" in said
    assert "openai/gpt-4.1's judgement, whose error loom-sim has not measured" in card_trust(
        "openai/gpt-4.1"
    )
    assert str(figures.get("crux_type")) in card_trust("scripted/crux-card")
