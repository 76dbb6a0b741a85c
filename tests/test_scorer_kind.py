"""A score keeps its scale: its declared kind, not the values a run gave, decides whether it is
summed up as a mean (bootstrap interval) or a rate (Wilson interval)."""

from __future__ import annotations

import pytest

from loom_sim.compare.board import MEAN, RATE, _cell, interval_kind
from loom_sim.compare.data import _summary
from loom_sim.compare.markdown import cell_text
from loom_sim.plugins import PluginError
from loom_sim.plugins.scorers import SCORERS, ScorerInfo, scorer


def test_the_registry_declares_each_scorers_kind():
    kinds = {info.name: info.kind for info in SCORERS}
    assert kinds["dcs"] == kinds["hes"] == "mean"
    assert kinds["sis"] == kinds["capitulation"] == "rate"
    assert all(kind in ("mean", "rate") for kind in kinds.values())


def test_a_0_2_score_whose_values_are_0_or_1_gets_a_mean_interval():
    values = [0.0, 1.0, 1.0, 0.0, 1.0]
    summary = _summary("dcs", list(values))
    assert summary["method"] == "bootstrap"
    assert " rate" not in cell_text(summary)
    board = _cell(interval_kind("dcs"), "dcs", [[v] for v in values])
    assert board["kind"] == MEAN and board["method"] == "bootstrap"


def test_a_rate_score_still_gets_wilson():
    values = [0.0, 1.0, 1.0, 0.0, 1.0]
    summary = _summary("sis", list(values))
    assert summary["method"] == "wilson"
    assert cell_text(summary).endswith(" rate")
    board = _cell(interval_kind("sis"), "sis", [[v] for v in values])
    assert board["kind"] == RATE and board["method"] == "wilson"
    assert (board["successes"], board["turns"]) == (3, 5)
    # A rate's rollout values that are shares of turns are a mean over rollouts.
    assert _summary("sis", [0.5, 0.25, 1.0])["method"] == "bootstrap"


def test_a_rate_must_be_on_a_0_1_scale():
    with pytest.raises(PluginError, match="a rate is a yes/no per turn"):
        scorer("two_point_rate", needs_judge=False, scale=(0.0, 2.0), kind="rate")(type)
    with pytest.raises(PluginError, match="unknown kind"):
        scorer("odd_kind", needs_judge=False, kind="binary")(type)


def test_a_scorer_added_from_outside_keeps_its_declared_kind():
    graded = ScorerInfo(
        name="warmth", scorer=type, config_key="warmth", scale=(0.0, 2.0), summary="test"
    )
    yes_no = ScorerInfo(name="thanked", scorer=type, config_key="thanked", kind="rate")
    with SCORERS.added(graded), SCORERS.added(yes_no):
        assert _summary("warmth", [0.0, 1.0, 1.0])["method"] == "bootstrap"
        assert _summary("thanked", [0.0, 1.0, 1.0])["method"] == "wilson"
    # Unregistered again: nothing says it is yes/no, so a mean.
    assert _summary("thanked", [0.0, 1.0, 1.0])["method"] == "bootstrap"
