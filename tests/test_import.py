"""psychosis-bench transcripts imported as loom-sim runs: phases, intensities, score, report."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from loom_sim.cli import cli

ROOT = Path(__file__).parent.parent
DATA = ROOT / "tests" / "data" / "psychosis-bench-2.0"  # a copy of the public data, with its README
RESULTS = DATA / "results"

PATTERN_DECODER = [
    RESULTS / "gpt_4o_pattern_decoder_20260125_170052.json",
    RESULTS / "gpt_4.1_pattern_decoder_20260126_094430.json",  # stopped after one exchange
    RESULTS / "run_20260126_095743" / "gpt_5.2_chat_latest_pattern_decoder.json",  # API error
    RESULTS
    / "run_20260126_095844_claude_sonnet_4"
    / "claude_sonnet_4_20250514_pattern_decoder.json",
]


def invoke(*args: str):
    result = CliRunner().invoke(cli, list(args))
    assert "Traceback" not in result.output
    return result


def test_import_keeps_the_sources_phases_and_intensities(tmp_path):
    out = tmp_path / "run"
    result = invoke("import", "psychosis-bench", *map(str, PATTERN_DECODER), "-o", str(out))
    assert result.exit_code == 0, result.output
    assert "4 rollouts" in result.stdout and "API error" in result.stdout
    run = json.loads((out / "run.json").read_text())
    assert run["rollouts"] == 4 and run["config"]["persona"]["identity"]["name"]
    source = json.loads(PATTERN_DECODER[0].read_text())
    patient = [c for c in source["conversation"] if c["speaker"] == "patient"]
    first = json.loads((out / "rollout_000" / "transcript.json").read_text())
    assert first["models"]["interlocutor"] == "imported/gpt-4o"
    assert len(first["turns"]) == 10
    for turn, entry in zip(first["turns"], patient, strict=True):
        assert turn["phase"] == entry["phase_name"]
        assert turn["intensities"] == pytest.approx(entry["intensity"])
        assert turn["persona"] == entry["content"]
    partial = json.loads((out / "rollout_001" / "transcript.json").read_text())
    assert len(partial["turns"]) == 1 and "in_progress" in partial["stop_detail"]
    errored = json.loads((out / "rollout_002" / "transcript.json").read_text())
    assert errored["turns"] == []


@pytest.mark.slow
def test_an_imported_transcript_scores_and_reports(tmp_path):
    out = tmp_path / "run"
    assert (
        invoke("import", "psychosis-bench", str(PATTERN_DECODER[0]), "-o", str(out)).exit_code == 0
    )
    scored = invoke("score", str(out), "--judge-model", "scripted/judge")
    assert scored.exit_code == 0, scored.output
    transcript = json.loads((out / "rollout_000" / "transcript.json").read_text())
    assert all(t["scores"] for t in transcript["turns"])
    assert "qa_skipped" in transcript["turns"][0]["scores"]["consistency"]["details"]
    reported = invoke("report", str(out))
    assert reported.exit_code == 0, reported.output
    report = json.loads((out / "report.json").read_text())
    assert set(report["rollouts"][0]["aggregates"]) >= {
        "persona_adherence",
        "trajectory",
        "stagnation",
    }
    assert (out / "report.html").read_text().count("<svg") >= 3


def test_several_profiles_become_one_run_each(tmp_path):
    files = [RESULTS / "gpt_4.1_ai_confidant_20260126_093546.json", PATTERN_DECODER[0]]
    result = invoke("import", "psychosis-bench", *map(str, files), "-o", str(tmp_path / "runs"))
    assert result.exit_code == 0, result.output
    runs = sorted(p.name for p in (tmp_path / "runs").iterdir())
    assert runs == ["ai_confidant.standard", "pattern_decoder.standard"]


def test_bad_inputs_are_one_line_errors(tmp_path):
    junk = tmp_path / "junk.json"
    junk.write_text('{"hello": 1}')
    result = invoke("import", "psychosis-bench", str(junk), "-o", str(tmp_path / "x"))
    assert result.exit_code == 1 and "not a psychosis-bench result file" in result.stderr
    missing_profiles = invoke(
        "import",
        "psychosis-bench",
        str(PATTERN_DECODER[0]),
        "-o",
        str(tmp_path / "y"),
        "--profiles",
        str(tmp_path),
    )
    assert missing_profiles.exit_code == 1 and "cannot find the profile" in missing_profiles.stderr
