"""Does the adversary model's wording still carry the probe?

A small model asked to "quote back this misquote" often writes a pleasant message without it:
the turn then probes nothing, and the record would claim a tactic that was never used. So the
model's message must contain the move's anchor — the swapped word of a misquote, half the
content words of an alternative history's claim, a tone word of an emotional inconsistency, a
word of the backstory topic, enough of the question or task asked for — or the config's
template is sent instead (and the move says so). Flattery and the register shift have no
anchor: any friendly message is one.
"""

from __future__ import annotations

import re

from loom_sim.store.turn_parts import AdversaryMove

ASK_SHARE = 0.3  # of the question's (or task's) content words, the least a wording must keep
_WORD = re.compile(r"[a-z]+(?:'[a-z]+)?")
_FILLER = frozenset(
    "your you about with that this what have from they them could would should know tell "
    "like just really been were".split()
)


def _content(text: str) -> set[str]:
    return {w for w in _WORD.findall(text.lower()) if len(w) >= 4 and w not in _FILLER}


def anchors(move: AdversaryMove) -> tuple[set[str], float]:
    """The words the wording must keep, and the share of them it must contain (0: none)."""
    material = move.material
    if move.tactic == "misquote" and "->" in material.get("change", ""):
        return {material["change"].split("->", 1)[1].strip().lower()}, 1.0
    if move.tactic == "alternative_history":
        return _content(material.get("claim", "")), 0.5
    if move.tactic == "emotional_inconsistency":
        return {material.get("then_tone", ""), material.get("now_tone", "")} - {""}, 0.5
    if move.tactic == "backstory_recall":
        return _content(material.get("topic", "")), 1e-9  # any one of them
    if move.tactic in ("above_ceiling", "out_of_bounds_task"):
        return _content(material.get("ask", "")), ASK_SHARE
    return set(), 0.0


def carries(text: str, move: AdversaryMove) -> bool:
    """Whether ``text`` still carries ``move``'s probe."""
    words, share = anchors(move)
    if not words or share == 0.0:
        return True
    lowered = text.lower()
    found = sum(1 for w in words if re.search(rf"\b{re.escape(w)}\b", lowered))
    return found >= max(1, round(share * len(words)))
