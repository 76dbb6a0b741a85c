"""A rollout monitor registered from test code: its section of the config, its findings on real
rollouts (re-prompt, event, never sent), its switch, and its window rebuilt on resume."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import yaml
from pydantic import Field

from loom_sim.cli.plugins import sections as plugin_sections
from loom_sim.config import LoomConfig
from loom_sim.config.errors import ConfigError
from loom_sim.config.loader import parse_config
from loom_sim.config.monitors import MonitorSettings
from loom_sim.plugins.monitors import MONITORS, monitor
from loom_sim.rollout.monitors.base import Draft, Finding, Monitor
from tests.factories import minimal
from tests.fakes import turn_of
from tests.harness import fakes, run_rollout

INSTRUCTION = "[Open your message differently: do not start as you started before.]"


class SameOpeningSettings(MonitorSettings):
    words: int = Field(3, ge=1, description="How many opening words count as the same opening.")


class SameOpening(Monitor):
    """Rejects a draft that opens with the same words as one of the persona's sent messages."""

    heard: list[int]  # the turns observed, in order (the test reads it)

    def __init__(self, settings: SameOpeningSettings, config: LoomConfig) -> None:
        super().__init__(settings, config)
        self.words = settings.words
        self.heard = []
        BUILT.append(self)

    def _opening(self, text: str) -> str:
        return " ".join(text.lower().split()[: self.words])

    async def check(self, draft: Draft) -> list[Finding]:
        opening = self._opening(draft.text)
        if any(self._opening(sent) == opening for sent in draft.previous):
            return [
                Finding(
                    f"opening:{opening}",
                    f'opens with "{opening}" again',
                    instruction=INSTRUCTION,
                )
            ]
        return []

    def observe(self, turn: int, persona: str, interlocutor: str) -> None:
        self.heard.append(turn)


BUILT: list[SameOpening] = []


@pytest.fixture
def registered() -> Iterator[None]:
    BUILT.clear()
    register = monitor(
        "same_opening",
        order=50,
        summary="rejects a draft opening like an earlier message",
        settings=SameOpeningSettings,
    )
    register(SameOpening)
    try:
        yield
    finally:
        MONITORS.remove("same_opening")


def config_with(monitors: dict | None = None) -> LoomConfig:
    data = minimal()
    if monitors is not None:
        data["interaction"] = {"monitors": monitors}
    return LoomConfig.model_validate(data)


def persona(request) -> str:
    """Every turn's first draft opens like turn 0's message; a re-prompt gets a fresh one."""
    if INSTRUCTION in request.messages[-1].content:
        return f"Something else entirely, turn {turn_of(request)}."
    return f"I checked the logs, turn {turn_of(request)}."


async def test_a_registered_monitor_rejects_a_draft_and_the_turn_records_what_it_said(
    tmp_path, registered
):
    transcript, models = await run_rollout(
        tmp_path, config_with(), 3, models=fakes(persona=persona)
    )
    first, second = transcript.turns[0], transcript.turns[1]
    assert first.persona_attempts == 1 and first.monitor_events == []
    assert second.persona_attempts == 2
    assert [(e.monitor, e.pattern, e.action) for e in second.monitor_events] == [
        ("same_opening", "opening:i checked the", "reprompt")
    ]
    assert second.monitor_events[0].detail == 'opens with "i checked the" again'
    assert second.rejected[0].text == "I checked the logs, turn 1."
    assert second.persona == "Something else entirely, turn 1."
    # the persona was re-asked with the monitor's own instruction, recorded with the turn
    assert INSTRUCTION in models["persona"].calls[2].messages[-1].content
    assert second.vary is not None and INSTRUCTION in second.vary
    heard = [c.messages[-1].content for c in models["interlocutor"].calls]
    assert "I checked the logs, turn 1." not in heard and "I checked the logs, turn 2." not in heard


async def test_its_section_switches_it_off_and_sets_it(tmp_path, registered):
    off, _ = await run_rollout(
        tmp_path / "off",
        config_with({"same_opening": {"enabled": False}}),
        3,
        models=fakes(persona=persona),
    )
    assert all(t.monitor_events == [] and t.persona_attempts == 1 for t in off.turns)
    assert BUILT == []  # a switched-off monitor is not even built
    # with six opening words, "I checked the logs, turn 0." and "... turn 1." differ
    wide = config_with({"same_opening": {"words": 6}})
    assert wide.interaction.monitors.of("same_opening").words == 6  # type: ignore[attr-defined]
    loose, _ = await run_rollout(tmp_path / "wide", wide, 3, models=fakes(persona=persona))
    assert all(t.persona_attempts == 1 for t in loose.turns)


def test_a_misspelled_section_or_setting_is_an_error_at_its_line(registered):
    data = minimal()
    data["interaction"] = {"monitors": {"same_openign": {"words": 2}}}
    with pytest.raises(ConfigError) as caught:
        parse_config(yaml.safe_dump(data, sort_keys=False), "persona.yaml")
    message = str(caught.value)
    assert "persona.yaml:" in message
    assert "interaction.monitors.same_openign" in message
    assert "did you mean 'same_opening'?" in message
    data["interaction"] = {"monitors": {"same_opening": {"words": 0}}}
    with pytest.raises(ConfigError, match=r"interaction\.monitors\.same_opening\.words"):
        parse_config(yaml.safe_dump(data, sort_keys=False), "persona.yaml")


def test_the_json_schema_and_plugins_list_it_with_its_settings(registered):
    schema = LoomConfig.model_json_schema()
    section = schema["$defs"]["MonitorsSpec"]["properties"]["same_opening"]
    assert section["description"] == "rejects a draft opening like an earlier message"
    assert set(section["properties"]) == {"enabled", "words"}
    listed = {title: list(entries) for title, entries, _, _ in plugin_sections()}
    (monitors,) = [v for k, v in listed.items() if k.startswith("monitors")]
    listed_monitors = [(m.name, m.monitor) for m in monitors]
    assert ("same_opening", SameOpening) in listed_monitors
    builtin = ["capitulation", "repetition", "stagnation", "revelations"]
    assert [name for name, _ in listed_monitors if name in builtin] == builtin


async def test_on_resume_it_hears_the_completed_turns_again_before_the_first_new_draft(
    tmp_path, registered
):
    await run_rollout(tmp_path, config_with(), 2, models=fakes(persona=persona))
    BUILT.clear()
    resumed, _ = await run_rollout(tmp_path, config_with(), 3, models=fakes(persona=persona))
    (rebuilt,) = BUILT
    assert rebuilt.heard == [0, 1, 2]  # turns 0 and 1 replayed, then turn 2 observed live
    # and its window held the replayed messages: turn 2's first draft opens like turn 0's, its
    # second like turn 1's
    patterns = [e.pattern for e in resumed.turns[2].monitor_events]
    assert patterns[:2] == ["opening:i checked the", "opening:something else entirely,"]


def test_the_monitor_actor_knows_no_monitor():
    """loom-sim's own monitors are plug-ins like this one: the actor's module names none."""
    import re

    import loom_sim.rollout.actors.monitor as actor_module

    source = open(actor_module.__file__, encoding="utf-8").read()
    code = re.sub(r'"""(.*?)"""', "", source, flags=re.S)  # its docstrings may name them
    for name in ("repetition", "capitulation", "stagnation", "revelation", "guard"):
        assert name not in code.lower(), name
