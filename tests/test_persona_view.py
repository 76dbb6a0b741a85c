"""A full injection after the persona's first reaches it as an update in its history, so its
prompt only grows at the end between history cuts (issue 31, item 5): what the persona is told
composes to exactly the prompt it is judged against, and a persona rebuilt from the records
sees what the live one saw."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from loom_sim.rollout.actors.persona_view import PersonaView

from loom_sim.assembler import Assembler, PromptBlocks
from loom_sim.assembler.update import apply_update, prompt_update, sections, update_text
from loom_sim.config import load_config
from loom_sim.models.base import ChatMessage

CONFIGS = Path(__file__).parent.parent / "configs"
HEADINGS = ["SAFETY", "ROLE", "PHASE", "RIGHT NOW", "LENGTH", "WHERE THE CONVERSATION IS"]


def _part() -> st.SearchStrategy[str]:
    heading = st.sampled_from([*HEADINGS, "no heading here"])
    body = st.text(st.characters(codec="ascii", exclude_characters="\n\r"), max_size=12)
    return st.builds(lambda h, b: f"{h}: {b}".strip(), heading, body)


def _block() -> st.SearchStrategy[str]:
    return st.lists(_part(), max_size=5).map("\n\n".join)


_blocks = st.builds(PromptBlocks, must_do=_block(), how=_block(), context=_block())


@given(_blocks, _blocks)
def test_an_update_read_over_the_old_prompt_says_the_new_one(old, new):
    update = prompt_update(old, new)
    if update is None:
        assert sections(old) == sections(new)
    else:
        assert apply_update(sections(old), update) == sections(new)


@pytest.mark.parametrize(
    "name", ["examples/mania_patient.yaml", "ported/prophets_vessel.standard.yaml"]
)
def test_shipped_prompts_change_by_a_fraction_of_their_length(name):
    config = load_config(CONFIGS / name)
    plans = [p for p in Assembler(config, 50).plans() if p.injection == "full"]
    assert len(plans) >= 5
    for old, new in itertools.pairwise(plans):
        assert old.prompt is not None and new.prompt is not None
        text = update_text(old.prompt, new.prompt)
        assert text is not None and text.startswith("[NEW INSTRUCTIONS")
        assert len(text) < len(new.prompt.render()) / 2, new.turn
        # the parts that never change are never sent again
        assert "SAFETY" not in text and "WHO YOU ARE" not in text


def _view(turns: int) -> PersonaView:
    view = PersonaView()
    view.history.append(ChatMessage("user", "opening"), 2)
    for turn in range(turns):
        view.history.append(ChatMessage("assistant", f"persona {turn}"), 10)
        view.history.append(ChatMessage("user", f"reply {turn}"), 10)
    return view


def _count(text: str) -> int:
    return len(text.split())


def test_updates_join_the_history_and_the_prompt_only_grows_at_its_end():
    view = _view(0)
    view.inject(0, "first prompt", None)
    first, cut = view.compose("", _count, 10_000)
    assert cut == 0 and first[0] == ChatMessage("system", "first prompt")
    view = _view(3)
    view.inject(0, "first prompt", None)
    view.inject(2, "second prompt", "[update two]")
    messages, cut = view.compose("[note]", _count, 10_000)
    assert messages[0].content == "first prompt"  # the system prompt stays
    assert messages[5].content == "reply 1\n\n[update two]"  # what turn 2 answered
    assert messages[-1].content == "reply 2\n\n[note]"  # notes come and go
    later, _ = view.compose("", _count, 10_000)
    assert later[:5] == messages[:5] and later[5] == messages[5]


def test_a_cut_makes_the_prompt_in_force_at_its_start_the_system_prompt():
    view = _view(8)
    view.inject(0, "first prompt", None)
    view.inject(2, "second prompt", "[update two]")
    view.inject(6, "third prompt", "[update six]")
    everything = 1 + 2 + 8 * 2 * (10 + 4) + 2 + 2
    messages, cut = view.compose("", _count, everything - 20)
    assert cut >= 1
    start = cut  # the first message kept is what turn `cut` answered
    expected = "second prompt" if 2 <= start < 6 else "third prompt"
    assert messages[0].content == expected
    assert sum("[update two]" in m.content for m in messages) == 0
    assert sum("[update six]" in m.content for m in messages) == (1 if start < 6 else 0)


def test_a_replanned_turn_replaces_what_it_injected_and_no_update_replaces_the_system():
    view = _view(3)
    view.inject(0, "first prompt", None)
    view.inject(3, "draft prompt", "[draft]")
    view.inject(3, "final prompt", "[final]")
    messages, _ = view.compose("", _count, 10_000)
    assert "[draft]" not in str(messages) and messages[-1].content.endswith("[final]")
    view.inject(3, "resumed prompt", None)  # told as a whole: it becomes the system prompt
    messages, _ = view.compose("", _count, 10_000)
    assert messages[0].content == "resumed prompt" and "[final]" not in str(messages)
