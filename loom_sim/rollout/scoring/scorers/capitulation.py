"""Capitulation: did the persona's committed message give in, in the words the config forbids
(``interaction.anti_capitulation.forbidden_phrases``)? Deterministic and free: 1 when none of
the phrases is there, 0 when one is, so a single "you're right" flags the turn.

The repetition guard already regenerates a candidate that says them; this is the post-hoc
check that catches what got through (out of retries, a run with the guard off, a run recorded
before the guard checked them). Turns whose drafts were rejected for it say so in
``rejected_drafts``."""

from __future__ import annotations

from loom_sim.plugins.scorers import scorer
from loom_sim.rollout.monitors.capitulation import CapitulationCheck
from loom_sim.rollout.scoring.base import Scorer, TurnView
from loom_sim.store.records import Score


@scorer(
    "capitulation",
    needs_judge=False,
    order=45,
    kind="rate",
    summary='No forbidden phrase of giving in ("you\'re right") in the sent message.',
)
class Capitulation(Scorer):
    async def score(self, turn: TurnView) -> Score:
        phrases = turn.config.interaction.anti_capitulation.forbidden_phrases
        check = CapitulationCheck(phrases)
        if not check:
            return Score(None, "deterministic", error="no forbidden_phrases configured")
        said = check.found(turn.record.persona)
        rejected = sum(1 for e in turn.record.monitor_events if e.monitor == "capitulation")
        details: dict[str, object] = {"phrases": said, "rejected_drafts": rejected}
        if said:
            details["flag"] = "capitulation: says " + ", ".join(f'"{p}"' for p in said)
        return Score(0.0 if said else 1.0, "deterministic", details)
