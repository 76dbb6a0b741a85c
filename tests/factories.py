"""Small valid configs built in code, for tests that vary one thing at a time."""

from __future__ import annotations

import copy
from typing import Any

from loom_sim.config import LoomConfig


def minimal(**trajectory: Any) -> dict[str, Any]:
    """A minimal valid config as data; keyword arguments replace trajectory fields."""
    data: dict[str, Any] = {
        "schema_version": "0.1.0",
        "persona": {"identity": {"name": "Ada"}},
        "trajectory": {
            "mode": "fixed_length",
            "expected_turns": 20,
            "dimensions": {
                "tension": {"curve": "linear", "start_value": 0.1, "end_value": 0.8},
            },
            "phases": [
                {"name": "early", "end_condition": {"type": "pct", "value": 0.5}},
                {"name": "late", "end_condition": {"type": "pct", "value": 1.0}},
            ],
        },
    }
    data["trajectory"].update(trajectory)
    return data


def build(data: dict[str, Any]) -> LoomConfig:
    return LoomConfig.model_validate(copy.deepcopy(data))


def with_dimension(curve: Any, **fields: Any) -> LoomConfig:
    data = minimal()
    data["trajectory"]["dimensions"] = {"d": {"curve": curve, **fields}}
    return build(data)
