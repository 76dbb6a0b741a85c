"""What a debate's report says about its own verdicts: whether the crux its deck planted was
found, and how far each detector that produced a verdict can be trusted.

A planted-crux deck carries its answer key (``planted:``: the pair, the claim, the type, or
``[]`` for none); a report that showed the rooms without comparing them to the key would leave
the reader to do it. A detector's verdict is only as good as its measured error, so the report
quotes the figures measured on the labelled sets (:mod:`loom_sim.debate.validity`) beside the
verdicts, and says so plainly when the model that gave them is one loom-sim has not measured.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from loom_sim.debate.records import RoomStart
from loom_sim.debate.stance import closest
from loom_sim.debate.validity import measured

SCRIPTED_DETECTOR = "scripted/crux-detector"
SCRIPTED_CARD = "scripted/crux-card"


@dataclass(frozen=True)
class PlantedResult:
    """One planted crux, and the first room opened for its pair (if any)."""

    pair: tuple[str, str]
    claim: str
    type: str
    room: RoomStart | None
    on_claim: bool  # the room argues the planted claim (either way put)
    card_type: str | None  # the type its valid card gave, if it has one

    @property
    def found(self) -> bool:
        return self.room is not None and self.on_claim


def planted_results(
    planted: Sequence[dict[str, Any]], rooms: Sequence[RoomStart], card_types: dict[str, str]
) -> tuple[list[PlantedResult], list[RoomStart]]:
    """Each planted crux's result, and the rooms opened for a pair nobody planted."""
    results = []
    for crux in planted:
        pair = tuple(sorted(crux["pair"]))
        mine = [r for r in rooms if tuple(sorted(r.pair)) == pair]
        on = [r for r in mine if closest(r.question, crux["claim"]) is not None]
        room: RoomStart | None = (on or mine)[0] if on or mine else None
        results.append(
            PlantedResult(
                (pair[0], pair[1]),
                crux["claim"],
                crux["type"],
                room,
                bool(on),
                card_types.get(room.id) if room is not None else None,
            )
        )
    planted_pairs = {tuple(sorted(c["pair"])) for c in planted}
    stray = [r for r in rooms if tuple(sorted(r.pair)) not in planted_pairs]
    return results, stray


def planted_lines(
    planted: Sequence[dict[str, Any]] | None,
    rooms: Sequence[RoomStart],
    card_types: dict[str, str],
    name: Callable[[str], str],
) -> list[str]:
    """The report's sentences on the deck's answer key (none when the deck has no key); plain
    text, the verdict in capitals, so Markdown and HTML show them alike."""
    if planted is None:
        return []
    results, stray = planted_results(planted, rooms, card_types)
    out = []
    if not planted:
        out.append(
            "This deck plants no disagreement: "
            + (
                "none found, and no crux room opened."
                if not rooms
                else f"{len(rooms)} crux room(s) opened where none was planted."
            )
        )
    for r in results:
        who = f"{name(r.pair[0])} and {name(r.pair[1])}"
        head = f"This deck plants a {r.type} disagreement between {who} on “{r.claim}”: "
        if r.room is None:
            out.append(head + "NOT FOUND — no crux room opened for the pair.")
            continue
        if not r.on_claim:
            out.append(
                head + f"NOT FOUND — {r.room.id} opened for the pair, but on "
                f"“{r.room.question}”, another claim."
            )
            continue
        typed = (
            "its card was rejected or not written"
            if r.card_type is None
            else f"its card types it {r.card_type}"
            + (" (the planted type)" if r.card_type == r.type else f" (planted: {r.type})")
        )
        out.append(
            head + f"FOUND — {r.room.id} opened after {r.room.after} messages on "
            f"“{r.room.question}”; {typed}."
        )
    if stray and planted:
        out.append(
            "Rooms for a pair nobody planted: "
            + ", ".join(f"{r.id} ({name(r.pair[0])} × {name(r.pair[1])})" for r in stray)
            + "."
        )
    return out


def detection_trust(detector: str, similarity: str) -> str:
    """The measured figures behind the detection rounds' verdicts."""
    figures = measured()
    suffix = "" if similarity == "embedding" else "[fallback]"
    gate = figures.get(f"gate{suffix}")
    round_ = figures.get(f"disagreement{suffix}")
    how = (
        "MiniLM similarity and the learned pair check"
        if similarity == "embedding"
        else "TF-IDF similarity, the words alone"
    )
    text = f"Measured on labelled windows ({figures.date}, {how}): {gate}; "
    if detector == SCRIPTED_DETECTOR:
        return text + f"{round_}."
    return (
        text + f"the detector here is {detector}, whose error loom-sim has not measured "
        f"(for comparison, {round_})."
    )


def card_trust(card_writer: str, similarity: str = "embedding") -> str:
    """The measured figures behind the cards: their citation check (the clause reading, and
    with MiniLM the learned check beside it) and their type."""
    figures = measured()
    stance = figures.get(
        "citation_stance" if similarity == "embedding" else "citation_stance[fallback]"
    )
    kind = figures.get("crux_type")
    text = f"Each citation is checked to take its side ({figures.date}: {stance}); "
    reading = figures.get("crux_type_reading") if similarity == "embedding" else None
    second = f"; beside each card's type, {reading}" if reading is not None else ""
    if card_writer == SCRIPTED_CARD:
        return text + f"{kind}{second}."
    return (
        text + f"the type is {card_writer}'s judgement, whose error loom-sim has not measured"
        f"{second}."
    )
