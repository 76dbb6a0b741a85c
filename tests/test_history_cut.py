"""The persona's history is cut in steps, so a prompt cache keeps its prefix (actors/history.py).

Cutting just enough every turn moves the start of the history one exchange per turn: no prompt
shares a prefix with the last, and a model with a prompt cache rereads everything. A stepped cut
moves rarely and, between moves, the prompt only grows at its end.
"""

from __future__ import annotations

import itertools
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st
from loom_sim.actors.history import MESSAGE_OVERHEAD, History

from loom_sim.config import LoomConfig, load_config
from loom_sim.models.base import ChatMessage
from tests.fakes import turn_of
from tests.harness import fakes, run_rollout

MANIA = Path(__file__).parent.parent / "configs" / "examples" / "mania_patient.yaml"
SYSTEM = ChatMessage("system", "scaffolding")


def grown(sizes: list[int]) -> History:
    history = History()
    history.append(ChatMessage("user", "opening"), 10)
    for n, size in enumerate(sizes):
        history.append(ChatMessage("assistant", f"persona {n}"), size)
        history.append(ChatMessage("user", f"reply {n}"), size)
    return history


def cuts(step: int | None, turns: int = 40, size: int = 50, budget: int = 1000) -> list[int]:
    """The exchanges cut on each turn of a history growing one exchange a turn."""
    return [
        grown([size] * n).fit(SYSTEM, 200, [], 0, budget, step_tokens=step)[1] for n in range(turns)
    ]


def test_without_a_step_the_cut_moves_every_turn_once_the_budget_is_reached():
    moves = cuts(None)
    changed = sum(a != b for a, b in itertools.pairwise(moves))
    assert moves[-1] > 0 and changed >= 30


def test_with_a_step_the_cut_moves_rarely_and_leaves_between_half_and_all_of_the_room():
    step = (1000 - 200) // 2
    moves = cuts(step)
    changed = sum(a != b for a, b in itertools.pairwise(moves))
    # the cut moves once per step's worth of growth: 40 exchanges of 108 tokens, steps of 400
    assert moves[-1] > 0 and changed <= 40 * 2 * (50 + MESSAGE_OVERHEAD) // step + 1, moves
    for n in range(40):
        history = grown([50] * n)
        _kept, cut = history.fit(SYSTEM, 200, [], 0, 1000, step_tokens=step)
        total = 200 + MESSAGE_OVERHEAD + sum(history.tokens[2 * cut :])
        assert total <= 1000
        if cut:  # a cut leaves at least the room less one step (one exchange of slack)
            assert total > 1000 - step - 2 * (50 + MESSAGE_OVERHEAD)


@given(
    st.lists(st.integers(1, 400), max_size=30),
    st.integers(256, 4000),
    st.integers(0, 300),
    st.integers(1, 2000),
)
def test_a_stepped_cut_fits_whenever_a_plain_cut_does_and_never_cuts_less(
    sizes, budget, system, step
):
    history = grown(sizes)
    plain, plain_cut = history.fit(SYSTEM, system, [], 0, budget)
    stepped, stepped_cut = history.fit(SYSTEM, system, [], 0, budget, step_tokens=step)
    assert stepped_cut >= plain_cut
    assert stepped[0] == SYSTEM and stepped[1].role == "user"  # starts with a user message
    assert stepped[-1] == plain[-1]  # what the persona answers is never cut
    left = system + MESSAGE_OVERHEAD + sum(history.tokens[2 * stepped_cut :])
    if system + MESSAGE_OVERHEAD + history.tokens[-1] <= budget and plain_cut < len(sizes):
        assert left <= budget


async def test_the_personas_prompts_keep_their_prefix_between_cuts(tmp_path):
    data = load_config(MANIA).model_dump(mode="json")
    data["conversation"] = {"history_budget_tokens": 2500}
    config = LoomConfig.model_validate(data)
    models = fakes(persona=lambda r: "word " * 120 + str(turn_of(r)))
    transcript, used = await run_rollout(tmp_path, config, 24, models=models)
    assert transcript.status == "done"
    cut = [t.cut_turns.get("persona", 0) for t in transcript.turns]
    assert cut[-1] > 0  # the budget was reached
    moved = sum(a != b for a, b in itertools.pairwise(cut))
    calls = [c.messages for c in used["persona"].calls if turn_of(c) is not None]
    # between moves of the cut, a turn's prompt starts as the last one did (its history
    # message after the system prompt is the same), so a prompt cache reuses it
    kept = sum(a[1] == b[1] for a, b in itertools.pairwise(calls))
    assert moved <= len(cut) // 4, cut
    assert kept >= len(calls) - 1 - moved - 1
