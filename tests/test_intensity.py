"""Intensity interpolation: each curve type, bounds and the safety ceiling."""

from __future__ import annotations

import itertools

import pytest

from loom_sim.assembler import Assembler, IntensityResolver, level_of
from tests.factories import build, minimal, with_dimension


def values(config, turns: int) -> list[float]:
    resolver = IntensityResolver(config, horizon=turns)
    return [resolver.value("d", t) for t in range(turns)]


def test_linear_is_halfway_at_half():
    config = with_dimension("linear", start_value=0.2, end_value=0.8)
    resolver = IntensityResolver(config, horizon=50)
    assert resolver.value("d", 0) == pytest.approx(0.2)
    assert resolver.value("d", 25) == pytest.approx(0.5)
    assert resolver.value("d", 50) == pytest.approx(0.8)


@pytest.mark.parametrize("midpoint", [0.5, 0.3, 0.7])
def test_sigmoid_is_halfway_at_its_midpoint_and_exact_at_the_ends(midpoint):
    config = with_dimension(
        {"type": "sigmoid", "midpoint_pct": midpoint}, start_value=0.1, end_value=0.85
    )
    resolver = IntensityResolver(config, horizon=100)
    assert resolver.value("d", round(midpoint * 100)) == pytest.approx(0.475, abs=1e-9)
    assert resolver.value("d", 0) == pytest.approx(0.1, abs=1e-9)
    assert resolver.value("d", 100) == pytest.approx(0.85, abs=1e-9)


def test_sigmoid_is_slow_at_the_ends_and_steep_in_the_middle():
    config = with_dimension({"type": "sigmoid"}, start_value=0.0, end_value=0.8)
    v = values(config, 100)
    assert v[10] - v[0] < 0.05  # flat start
    assert v[55] - v[45] > 2 * 0.08  # steeper than linear (0.08 per 10%) in the middle
    assert all(b >= a for a, b in itertools.pairwise(v))


def test_delayed_ramp_holds_until_delay_then_rises():
    config = with_dimension(
        {"type": "delayed_ramp", "delay_pct": 0.6}, start_value=0.05, end_value=0.7
    )
    resolver = IntensityResolver(config, horizon=50)
    for turn in range(31):  # progress <= 0.6
        assert resolver.value("d", turn) == pytest.approx(0.05)
    assert resolver.value("d", 29) == pytest.approx(0.05)  # delay_pct - 1 turn
    assert resolver.value("d", 31) > 0.05
    assert resolver.value("d", 40) == pytest.approx(0.05 + 0.65 * 0.5)
    assert resolver.value("d", 50) == pytest.approx(0.7)


def test_delayed_ramp_can_end_early():
    config = with_dimension(
        {"type": "delayed_ramp", "delay_pct": 0.2, "ramp_end_pct": 0.4},
        start_value=0.0,
        end_value=0.6,
    )
    resolver = IntensityResolver(config, horizon=10)
    assert [round(resolver.value("d", t), 6) for t in range(6)] == [0, 0, 0, 0.3, 0.6, 0.6]


def test_step_jumps_in_equal_steps_at_thresholds():
    config = with_dimension(
        {"type": "step", "at_pct": [0.25, 0.5, 0.75]}, start_value=0.2, end_value=0.8
    )
    resolver = IntensityResolver(config, horizon=100)
    assert resolver.value("d", 24) == pytest.approx(0.2)
    assert resolver.value("d", 25) == pytest.approx(0.4)
    assert resolver.value("d", 49) == pytest.approx(0.4)
    assert resolver.value("d", 50) == pytest.approx(0.6)
    assert resolver.value("d", 75) == pytest.approx(0.8)
    assert resolver.value("d", 99) == pytest.approx(0.8)


def test_custom_points_linear_and_step_interpolation():
    points = [{"pct": 0.2, "value": 0.1}, {"pct": 0.6, "value": 0.5}, {"pct": 0.8, "value": 0.3}]
    linear = IntensityResolver(with_dimension({"type": "custom", "points": points}), horizon=10)
    assert [round(linear.value("d", t), 6) for t in range(11)] == [
        0.1,
        0.1,
        0.1,
        0.2,
        0.3,
        0.4,
        0.5,
        0.4,
        0.3,
        0.3,
        0.3,
    ]
    step = IntensityResolver(
        with_dimension({"type": "custom", "points": points, "interpolation": "step"}), horizon=10
    )
    assert [round(step.value("d", t), 6) for t in range(11)] == [
        0.1,
        0.1,
        0.1,
        0.1,
        0.1,
        0.1,
        0.5,
        0.5,
        0.3,
        0.3,
        0.3,
    ]


def test_values_respect_dimension_bounds_and_ceiling():
    data = minimal()
    data["safety"] = {"intensity_ceiling": 0.6}
    data["trajectory"]["dimensions"] = {
        "d": {"curve": "linear", "start_value": 0.2, "end_value": 0.6, "min_value": 0.2},
    }
    resolver = IntensityResolver(build(data), horizon=10)
    assert max(resolver.value("d", t) for t in range(20)) <= 0.6  # past the horizon too
    assert min(resolver.value("d", t) for t in range(20)) >= 0.2


def test_progress_past_the_horizon_holds_the_end_value():
    config = with_dimension("linear", start_value=0.0, end_value=0.5)
    resolver = IntensityResolver(config, horizon=10)
    assert resolver.value("d", 10) == resolver.value("d", 500) == pytest.approx(0.5)


def test_fixed_length_curves_stretch_to_the_requested_turns():
    config = with_dimension("linear", start_value=0.0, end_value=0.8)
    short = Assembler(config, turns=10)
    assert short.plan(5).intensities["d"] == pytest.approx(0.4)
    assert Assembler(config).plan(10).intensities["d"] == pytest.approx(0.4)  # 20 expected turns


def test_open_ended_curves_use_expected_turns_not_the_conversation_length():
    data = minimal(mode="open_ended", expected_turns=10)
    data["trajectory"]["phases"] = [{"name": "only"}]
    config = build(data)
    plan = Assembler(config, turns=100).plan(5)
    assert plan.intensities["tension"] == pytest.approx(0.45)
    assert Assembler(config, turns=100).plan(60).intensities["tension"] == pytest.approx(0.8)


def test_levels_split_the_range_into_equal_bands_in_written_order():
    config = with_dimension(
        "linear", start_value=0.0, end_value=0.9, levels={"low": "a", "medium": "b", "high": "c"}
    )
    dim = config.trajectory.dimensions["d"]
    assert [level_of(dim, v) for v in (0.0, 0.32, 0.34, 0.66, 0.67, 1.0)] == [
        "low",
        "low",
        "medium",
        "medium",
        "high",
        "high",
    ]
    assert (
        level_of(
            with_dimension("linear", start_value=0, end_value=0.5).trajectory.dimensions["d"], 0.3
        )
        is None
    )
