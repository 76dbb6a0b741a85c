"""Golden prompts: catch any drift in what the persona is given, turn by turn.

Each ``tests/golden/<name>.yaml`` has a ``<name>.prompts.json`` holding every turn's plan, and
the update each full injection after the first sends the persona (the parts of its prompt that
changed; the whole prompt is the persona's system prompt only until then). When a template or
the builder changes on purpose, bump ``TEMPLATE_VERSION`` and regenerate:

    LOOM_UPDATE_GOLDEN=1 .venv/bin/pytest tests/test_golden.py
"""

from __future__ import annotations

import difflib
import itertools
import json
import os
from pathlib import Path

import msgspec
import pytest

from loom_sim.assembler import TEMPLATE_VERSION, Assembler
from loom_sim.assembler.rendering import template_digest
from loom_sim.assembler.update import update_text
from loom_sim.config import load_config

GOLDEN = Path(__file__).parent / "golden"
CONFIGS = sorted(GOLDEN.glob("*.yaml"))
UPDATE = os.environ.get("LOOM_UPDATE_GOLDEN") == "1"
OPEN_ENDED_TURNS = 60


def current(config_path: Path, turns: int | None) -> dict:
    assembler = Assembler(load_config(config_path), turns)
    plans = list(assembler.plans())
    full = [p for p in plans if p.prompt is not None and p.injection == "full"]
    return {
        "config": config_path.name,
        "turns": assembler.turns,
        "template_version": TEMPLATE_VERSION,
        "template_digest": template_digest(),
        "plans": [msgspec.to_builtins(plan) for plan in plans],
        "updates": [
            {"turn": new.turn, "update": update_text(old.prompt, new.prompt)}
            for old, new in itertools.pairwise(full)
        ],
    }


def expected_path(config_path: Path) -> Path:
    return config_path.with_suffix(".prompts.json")


@pytest.mark.parametrize("config_path", CONFIGS, ids=lambda p: p.stem)
def test_prompts_match_golden(config_path: Path):
    path = expected_path(config_path)
    if UPDATE or not path.exists():
        if path.exists():
            turns = json.loads(path.read_text())["turns"]
        else:  # open-ended configs have no length of their own: pin one
            turns = None if load_config(config_path).trajectory.expected_turns else OPEN_ENDED_TURNS
        path.write_text(
            json.dumps(current(config_path, turns), indent=1, ensure_ascii=False) + "\n"
        )
        if not UPDATE:
            pytest.fail(f"wrote missing golden {path.name}; review it and commit it")
    golden = json.loads(path.read_text())
    got = current(config_path, golden["turns"])
    assert len(got["plans"]) == len(golden["plans"])
    pairs = zip(golden["plans"], got["plans"], strict=False)
    for want, have in [*pairs, *zip(golden["updates"], got["updates"], strict=True)]:
        if want != have:
            diff = "\n".join(
                difflib.unified_diff(
                    json.dumps(want, indent=1, ensure_ascii=False).splitlines(),
                    json.dumps(have, indent=1, ensure_ascii=False).splitlines(),
                    "golden",
                    "now",
                    lineterm="",
                )
            )
            pytest.fail(
                f"turn {want['turn']} of {config_path.name} drifted from the golden prompts. "
                "If intended: bump TEMPLATE_VERSION and run LOOM_UPDATE_GOLDEN=1 pytest "
                f"tests/test_golden.py\n{diff}"
            )


@pytest.mark.parametrize("config_path", CONFIGS, ids=lambda p: p.stem)
def test_template_changes_bump_the_version(config_path: Path):
    golden = json.loads(expected_path(config_path).read_text())
    if golden["template_digest"] != template_digest():
        assert golden["template_version"] != TEMPLATE_VERSION, (
            "the templates changed but TEMPLATE_VERSION did not: bump it in "
            "loom_sim/assembler/rendering.py, then regenerate the goldens"
        )


def test_every_golden_config_has_expected_prompts():
    assert CONFIGS, "no golden configs"
    for config_path in CONFIGS:
        assert expected_path(config_path).exists(), config_path.name
