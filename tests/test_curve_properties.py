"""Property tests: no curve ever leaves its bounds or the safety ceiling, for any turn count."""

from __future__ import annotations

import itertools

from hypothesis import given, settings
from hypothesis import strategies as st

from loom_sim.assembler import Assembler, IntensityResolver
from loom_sim.config.spec import LoomConfig

unit = st.floats(min_value=0.0, max_value=1.0, allow_nan=False)


@st.composite
def dimension_and_ceiling(draw):
    ceiling = draw(st.floats(min_value=0.05, max_value=1.0))
    low = draw(st.floats(min_value=0.0, max_value=ceiling * 0.9))
    high = draw(st.one_of(st.none(), st.floats(min_value=low + 1e-3, max_value=ceiling)))
    top = high if high is not None else ceiling
    inside = st.floats(min_value=low, max_value=top)
    kind = draw(st.sampled_from(["linear", "sigmoid", "delayed_ramp", "step", "custom"]))
    dim = {"min_value": low}
    if high is not None:
        dim["max_value"] = high
    if kind == "custom":
        pcts = sorted(set(draw(st.lists(unit, min_size=1, max_size=6))))
        dim["curve"] = {
            "type": "custom",
            "points": [{"pct": p, "value": draw(inside)} for p in pcts],
            "interpolation": draw(st.sampled_from(["linear", "step"])),
        }
    else:
        dim["start_value"] = draw(inside)
        dim["end_value"] = draw(inside)
        if kind == "sigmoid":
            dim["curve"] = {
                "type": "sigmoid",
                "midpoint_pct": draw(st.floats(min_value=0.01, max_value=0.99)),
                "steepness": draw(st.floats(min_value=0.1, max_value=100.0)),
            }
        elif kind == "delayed_ramp":
            delay = draw(st.floats(min_value=0.0, max_value=0.95))
            end = draw(st.floats(min_value=delay + 0.01, max_value=1.0))
            dim["curve"] = {"type": "delayed_ramp", "delay_pct": delay, "ramp_end_pct": end}
        elif kind == "step":
            steps = sorted(
                set(
                    draw(
                        st.lists(st.floats(min_value=0.01, max_value=0.99), min_size=1, max_size=5)
                    )
                )
            )
            dim["curve"] = {"type": "step", "at_pct": steps}
        else:
            dim["curve"] = "linear"
    return dim, ceiling


def config_with(dim: dict, ceiling: float) -> LoomConfig:
    return LoomConfig.model_validate(
        {
            "schema_version": "0.1.0",
            "persona": {"identity": {"name": "P"}},
            "trajectory": {
                "expected_turns": 10,
                "dimensions": {"d": dim},
                "phases": [{"name": "all", "end_condition": {"type": "pct", "value": 1.0}}],
            },
            "safety": {"intensity_ceiling": ceiling},
        }
    )


@settings(max_examples=300, deadline=None)
@given(dimension_and_ceiling(), st.integers(min_value=1, max_value=500))
def test_no_curve_leaves_its_bounds_or_the_ceiling(dim_ceiling, turns):
    dim, ceiling = dim_ceiling
    config = config_with(dim, ceiling)
    spec = config.trajectory.dimensions["d"]
    upper = min(spec.max_value if spec.max_value is not None else ceiling, ceiling)
    resolver = IntensityResolver(config, horizon=turns)
    for turn in range(turns + 5):  # and a little past the end
        value = resolver.value("d", turn)
        assert spec.min_value - 1e-12 <= value <= upper + 1e-12
        assert value <= ceiling + 1e-12


@settings(max_examples=200, deadline=None)
@given(dimension_and_ceiling(), st.integers(min_value=2, max_value=300))
def test_start_end_curves_are_monotone_and_start_at_start_value(dim_ceiling, turns):
    dim, ceiling = dim_ceiling
    if dim["curve"] == "linear" or dim["curve"]["type"] != "custom":
        config = config_with(dim, ceiling)
        resolver = IntensityResolver(config, horizon=turns)
        series = [resolver.value("d", t) for t in range(turns + 1)]
        assert abs(series[0] - dim["start_value"]) < 1e-9
        assert abs(series[-1] - dim["end_value"]) < 1e-9
        rising = dim["end_value"] >= dim["start_value"]
        for a, b in itertools.pairwise(series):
            assert (b >= a - 1e-12) if rising else (b <= a + 1e-12)


@settings(max_examples=100, deadline=None)
@given(dimension_and_ceiling(), st.integers(min_value=1, max_value=120))
def test_every_turn_of_a_dry_run_is_in_one_phase_and_inside_the_ceiling(dim_ceiling, turns):
    dim, ceiling = dim_ceiling
    plans = list(Assembler(config_with(dim, ceiling), turns=turns).plans())
    assert [p.turn for p in plans] == list(range(turns))
    assert all(p.phase == "all" and p.intensities["d"] <= ceiling + 1e-12 for p in plans)
