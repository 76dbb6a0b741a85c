"""psychosis-bench profiles ported to loom-sim configs: valid, lossless, true to the schedule."""

from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from loom_sim.assembler import Assembler
from loom_sim.cli import cli
from loom_sim.config import LoomConfig, load_config, parse_config
from loom_sim.rollout.interop.port import (
    DIMENSIONS,
    as_text,
    load_schedule,
    output_name,
    port_profile,
    render,
)

ROOT = Path(__file__).parent.parent
PROFILES = ROOT / "tests" / "data" / "psychosis-bench-2.0" / "profiles"
PORTED = ROOT / "configs" / "ported"
SCHEDULES = ("standard", "delayed_onset")
PROFILE_FILES = sorted(PROFILES.glob("*.yaml"))
PATTERN_DECODER = PROFILES / "pattern_decoder.yaml"


def invoke(*args: str):
    result = CliRunner().invoke(cli, list(args))
    assert "Traceback" not in result.output
    return result


def _source(path: Path) -> dict[str, Any]:
    return yaml.safe_load(path.read_text(encoding="utf-8"))["profile"]


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):  # keys too: emotional responses are keyed by their trigger
        return [s for pair in value.items() for item in pair for s in _strings(item)]
    if isinstance(value, list):
        return [s for item in value for s in _strings(item)]
    return []


def _flat(text: str) -> str:
    return " ".join(text.split())


def test_there_are_ten_profiles():
    assert len(PROFILE_FILES) == 10


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize("profile", PROFILE_FILES, ids=lambda p: p.stem)
def test_every_profile_ports_and_validates(profile: Path, schedule: str):
    config, report = port_profile(profile, schedule)
    LoomConfig.model_validate(config)
    parsed = parse_config(render(config, report), output_name(report))
    assert [p.name for p in parsed.trajectory.phases] == [
        p["name"] for p in load_schedule(PROFILES / "schedules" / f"{schedule}.yaml").phases
    ]
    assert list(parsed.trajectory.dimensions) == list(DIMENSIONS)
    assert parsed.safety.intensity_ceiling >= 0.95
    assert render(config, report).startswith(
        "# yaml-language-server: $schema=../../docs/loom-sim.schema.json\n"
    )


@pytest.mark.parametrize("profile", PROFILE_FILES, ids=lambda p: p.stem)
def test_nothing_in_a_profile_is_dropped(profile: Path):
    source = _source(profile)
    config, report = port_profile(profile, "standard")
    assert set(report.mapped) | set(report.kept_as_context) == set(source)
    assert not set(report.mapped) & set(report.kept_as_context)
    context = config["persona"]["additional_context"]
    for key, heading in report.kept_as_context.items():
        assert context[heading] == as_text(source[key])
        for text in _strings(source[key]):
            assert text.strip() in context[heading]
    # A mapped field's text reaches the config too (emotional responses split at "When X:").
    everything = _flat("\n".join(_strings(config)))
    for key in report.mapped:
        for text in _strings(source[key]):
            parts = (
                text.removeprefix("When ").split(": ", 1)
                if key == "emotional_responses"
                else [text]
            )
            for part in parts:
                assert _flat(part) in everything, (key, part)


def test_kept_fields_are_named_in_the_header():
    _, report = port_profile(PROFILES / "digital_beloved.yaml", "standard")
    assert "presentation_modes" in report.kept_as_context
    header = "\n".join(report.header)
    assert "presentation_modes" in header and "No licence file" in header
    assert "digital_beloved.yaml" in header and "schedules/standard.yaml" in header


def _reference(schedule, x: float) -> tuple[str, dict[str, float]]:
    """psychosis-bench's own rule: linear from range start to range end within each phase."""
    start = 0.0
    for phase in schedule.phases:
        if x < phase["end_pct"] or phase is schedule.phases[-1]:
            share = (x - start) / (phase["end_pct"] - start)
            return phase["name"], {
                d: phase[d][0] + share * (phase[d][1] - phase[d][0]) for d in DIMENSIONS
            }
        start = phase["end_pct"]
    raise AssertionError


@pytest.mark.parametrize("turns", [10, 20, 50, 100])
@pytest.mark.parametrize("schedule_name", SCHEDULES)
def test_dry_run_reproduces_the_schedule(schedule_name: str, turns: int):
    config, _ = port_profile(PATTERN_DECODER, schedule_name)
    assembler = Assembler(LoomConfig.model_validate(config), turns=turns)
    schedule = load_schedule(PROFILES / "schedules" / f"{schedule_name}.yaml")
    for turn in range(turns):
        plan = assembler.plan(turn)
        phase, values = _reference(schedule, turn / turns)
        assert plan.phase == phase, turn
        for dim in DIMENSIONS:
            assert plan.intensities[dim] == pytest.approx(values[dim], abs=0.01), (turn, dim)
    # At each boundary: the phase switches at its percentage, and starts at its range start.
    start = 0.0
    for phase in schedule.phases:
        first = math.ceil(start * turns - 1e-9)
        if first < turns:
            assert assembler.plan(first).phase == phase["name"]
            if first:
                assert assembler.plan(first - 1).phase != phase["name"]
            if start * turns == pytest.approx(first):
                for dim in DIMENSIONS:
                    assert assembler.plan(first).intensities[dim] == pytest.approx(
                        phase[dim][0], abs=0.01
                    )
        start = phase["end_pct"]


def test_a_schedule_whose_ranges_jump_keeps_both_values(tmp_path: Path):
    schedule = tmp_path / "jumpy.yaml"
    schedule.write_text(
        "intensity_schedule:\n  name: jumpy\n  phases:\n"
        "    - {name: calm, end_pct: 0.5,\n"
        "       belief: [0.1, 0.3], distress: [0.2, 0.2], action: [0, 0]}\n"
        "      # Patient is friendly.\n"
        "    - {name: storm, end_pct: 1.0,\n"
        "       belief: [0.6, 0.9], distress: [0.5, 0.8], action: [0.4, 0.9]}\n",
        encoding="utf-8",
    )
    config, report = port_profile(PATTERN_DECODER, schedule)
    assert report.schedule == "jumpy" and output_name(report) == "pattern_decoder.jumpy.yaml"
    calm = config["trajectory"]["phases"][0]
    assert calm["requirements"] == ["You are friendly."]
    assembler = Assembler(LoomConfig.model_validate(config), turns=20)
    before, after = assembler.plan(9), assembler.plan(10)
    assert (before.phase, after.phase) == ("calm", "storm")
    assert before.intensities["belief"] == pytest.approx(0.1 + 0.2 * 0.45 / 0.5, abs=0.01)
    assert after.intensities == pytest.approx({"belief": 0.6, "distress": 0.5, "action": 0.4})


def test_checked_in_configs_are_what_the_port_writes_now():
    files = sorted(PORTED.glob("*.yaml"))
    assert len(files) == 2 * len(PROFILE_FILES)
    for path in files:
        profile_id, schedule, _ = path.name.split(".")
        config, report = port_profile(PROFILES / f"{profile_id}.yaml", schedule)
        assert path.read_text(encoding="utf-8") == render(config, report), (
            f"{path} is stale: rerun scripts/port_mania_bench.py (see docs/psychosis-bench.md)"
        )


def test_cli_writes_validated_files_and_a_line_each(tmp_path: Path):
    out = tmp_path / "ported"
    result = invoke(
        "port",
        "psychosis-bench",
        str(PATTERN_DECODER),
        str(PROFILES / "digital_beloved.yaml"),
        "-s",
        "standard",
        "-s",
        "delayed_onset",
        "-o",
        str(out),
    )
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert len(lines) == 4 and all("kept as context:" in line for line in lines)
    assert "presentation_modes" in lines[-1]
    written = sorted(p.name for p in out.iterdir())
    assert written == [
        "digital_beloved.delayed_onset.yaml",
        "digital_beloved.standard.yaml",
        "pattern_decoder.delayed_onset.yaml",
        "pattern_decoder.standard.yaml",
    ]
    for name in written:
        load_config(out / name)
        assert str(out / name) in result.stdout


def test_cli_takes_a_folder_and_a_turn_count(tmp_path: Path):
    result = invoke("port", "psychosis-bench", str(PROFILES), "--turns", "10", "-o", str(tmp_path))
    assert result.exit_code == 0, result.output
    assert len(list(tmp_path.glob("*.standard.yaml"))) == 10
    assert load_config(tmp_path / "pattern_decoder.standard.yaml").trajectory.expected_turns == 10


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (None, "no such profile file"),
        ("profile:\n  id: x\n  name: [unclosed\n", "bad.yaml:4:1: not valid YAML"),
        ("- just\n- a list\n", "not a psychosis-bench profile"),
        ("profile:\n  id: x\n", "profile.name is missing"),
    ],
    ids=["missing", "bad-yaml", "not-a-profile", "no-name"],
)
def test_a_bad_profile_is_one_clear_line(tmp_path: Path, content: str | None, expected: str):
    profile = tmp_path / "bad.yaml"
    if content is not None:
        profile.write_text(content, encoding="utf-8")
    result = invoke("port", "psychosis-bench", str(profile), "-o", str(tmp_path / "out"))
    assert result.exit_code == 1
    assert result.stderr.count("\n") == 1 and str(profile) in result.stderr
    assert expected in result.stderr
    assert not (tmp_path / "out").exists()


def test_an_unknown_schedule_is_one_clear_line(tmp_path: Path):
    result = invoke(
        "port", "psychosis-bench", str(PATTERN_DECODER), "-s", "nope", "-o", str(tmp_path)
    )
    assert result.exit_code == 1 and result.stderr.count("\n") == 1
    assert "no schedule 'nope'" in result.stderr


def test_the_script_wrapper_ports_too(tmp_path: Path):
    script = ROOT / "scripts" / "port_mania_bench.py"
    args = [sys.executable, str(script), str(PATTERN_DECODER), "--schedule", "delayed_onset"]
    done = subprocess.run(
        [*args, "--output", str(tmp_path)], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    written = tmp_path / "pattern_decoder.delayed_onset.yaml"
    assert str(written) in done.stdout
    assert written.read_text(encoding="utf-8") == (PORTED / written.name).read_text(
        encoding="utf-8"
    )
    failed = subprocess.run(
        [sys.executable, str(script), str(tmp_path / "missing.yaml"), "-o", str(tmp_path)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert failed.returncode == 1 and "Traceback" not in failed.stderr
    assert "no such profile file" in failed.stderr
