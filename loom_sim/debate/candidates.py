"""The candidate registry: when a detected disagreement earns a crux room.

The rule, each condition checked and reported on its own (so a reader sees *which*
one held a room back, and a test can make each fail alone):

1. **consecutive** — the same pair was detected in ``consecutive`` detection rounds in a row
   (2 by default; a round where the detector was not asked, or failed, breaks the run);
2. **confidence** — this round's confidence is at least ``confidence`` (0.8);
3. **no active room** — no room for that pair is open or waiting;
4. **cooldown** — at least ``cooldown`` main-chat *messages* since that pair's last room
   opened. Faultline's cooldown is five minutes of wall-clock time, so the same debate spawns
   rooms in different places on a fast and a slow model; a message count replays the same.

5. **not carded** — the pair has no card yet on the same claim (a claim the two have already
   argued to a card is settled for them: the cooldown only spaces rooms, it does not re-open
   one). Two claims are the same when their clauses are about each other
   (:func:`loom_sim.debate.stance.closest`), whichever way each is phrased.

Only corroborated detections count (the cheap signals must agree with the model). A spawn
resets the pair's run, so another room needs fresh rounds as well as the cooldown. The
registry holds no clock and no randomness: a resumed debate replays ``detections.jsonl``
through it and reaches the same state.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import msgspec

from loom_sim.debate.messages import Disagreement
from loom_sim.debate.settings import DetectionSettings
from loom_sim.debate.stance import closest

Pair = tuple[str, str]


class Decision(msgspec.Struct, frozen=True, kw_only=True):
    pair: list[str]
    claim: str
    spawn: bool
    held_back: list[str] = msgspec.field(default_factory=list)  # the conditions that failed


@dataclass
class CandidateRegistry:
    rule: DetectionSettings
    _run: dict[Pair, int] = field(default_factory=dict)  # rounds in a row the pair was seen
    _seen_in: dict[Pair, int] = field(default_factory=dict)  # the last round it was seen in
    _active: set[Pair] = field(default_factory=set)
    _last_room: dict[Pair, int] = field(default_factory=dict)  # messages when it last opened
    _carded: dict[Pair, list[str]] = field(default_factory=dict)  # claims with a card

    def consider(self, round_: int, messages: int, found: list[Disagreement]) -> list[Decision]:
        """Round ``round_`` (after ``messages`` main-chat messages) found these; decide."""
        decisions = []
        for detection in found:
            if not detection.corroborated:
                continue
            pair = (detection.pair[0], detection.pair[1])
            in_a_row = self._run.get(pair, 0) + 1 if self._seen_in.get(pair) == round_ - 1 else 1
            self._run[pair] = in_a_row
            self._seen_in[pair] = round_
            held_back = []
            if in_a_row < self.rule.consecutive:
                held_back.append(
                    f"consecutive: seen in {in_a_row} round(s) in a row, needs "
                    f"{self.rule.consecutive}"
                )
            if detection.confidence < self.rule.confidence:
                held_back.append(
                    f"confidence: {detection.confidence:.2f} is below {self.rule.confidence:.2f}"
                )
            if pair in self._active:
                held_back.append("active: a room for this pair is already open")
            since = messages - self._last_room[pair] if pair in self._last_room else None
            if since is not None and since < self.rule.cooldown:
                held_back.append(
                    f"cooldown: {since} of {self.rule.cooldown} messages since its last room"
                )
            settled = next(
                (c for c in self._carded.get(pair, []) if closest(detection.claim, c)), None
            )
            if settled is not None:
                held_back.append(f"carded: this pair already has a card on {settled!r}")
            decisions.append(
                Decision(
                    pair=list(pair), claim=detection.claim, spawn=not held_back, held_back=held_back
                )
            )
        return decisions

    def opened(self, pair: Pair, messages: int) -> None:
        self._active.add(pair)
        self._last_room[pair] = messages
        self._run[pair] = 0  # a new room needs fresh rounds, not the ones that opened this one

    def closed(self, pair: Pair) -> None:
        self._active.discard(pair)

    def carded(self, pair: Pair, claim: str) -> None:
        """The room on ``claim`` ended with a valid card: the pair does not argue it again."""
        self._carded.setdefault(pair, []).append(claim)

    def is_active(self, pair: Pair) -> bool:
        return pair in self._active
