"""Real rollouts on real models, offline: the embedded SmolLM2 in-process, and the same model
behind llama.cpp's OpenAI-compatible server reached through `openai/...` + `--base-url`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from loom_sim.cli import cli
from tests.servers import llama_cpp_server

ROOT = Path(__file__).parent.parent
MANIA = ROOT / "configs" / "examples" / "mania_patient.yaml"

# Marcus, with short replies: the 135M model makes ~100 tokens/s here.
SHORT = """
conversation:
  persona_max_tokens: 24
  interlocutor_max_tokens: 24
"""


@pytest.fixture
def short_marcus(tmp_path) -> Path:
    path = tmp_path / "marcus.yaml"
    path.write_text(MANIA.read_text() + SHORT)
    return path


def check_two_turns(run_dir: Path, models: dict) -> None:
    transcript = json.loads((run_dir / "rollout_000" / "transcript.json").read_text())
    assert transcript["status"] == "done", transcript["error"]
    assert [t["turn"] for t in transcript["turns"]] == [0, 1]
    for turn in transcript["turns"]:
        assert turn["persona"].strip() and turn["interlocutor"].strip()
        assert turn["usage"]["persona"]["output_tokens"] > 0
    assert transcript["models"] == models


@pytest.mark.slow
def test_two_turns_on_the_embedded_model(short_marcus, tmp_path):
    out = tmp_path / "run"
    result = CliRunner().invoke(
        cli, ["run", str(short_marcus), "--turns", "2", "-o", str(out), "--seed", "1"]
    )
    assert result.exit_code == 0, result.output
    local = "local/smollm2"
    check_two_turns(out, {"persona": local, "interlocutor": local, "judge": local})


@pytest.mark.slow
def test_two_turns_through_llama_cpp_server(tmp_path):
    # Marcus, short, scored by one persona scorer and one of the target's: the judge's calls
    # go through the server like the others (the full set is 13 judge calls, ~2 minutes at
    # the server's one thread, and the embedded model's test scores them all).
    data = yaml.safe_load(MANIA.read_text())
    data["conversation"] = yaml.safe_load(SHORT)["conversation"]
    scoring = data["evaluation"]["scoring"]
    for name, scorer in scoring.items():
        if isinstance(scorer, dict) and "enabled" in scorer:
            scorer["enabled"] = name == "persona_adherence"
    scoring["target"] = ["dcs"]
    config = tmp_path / "marcus.yaml"
    config.write_text(yaml.safe_dump(data, sort_keys=False))
    out = tmp_path / "run"
    with llama_cpp_server() as base_url:
        result = CliRunner().invoke(
            cli,
            [
                "run",
                str(config),
                "--turns",
                "2",
                "-o",
                str(out),
                "--seed",
                "1",
                "--persona-model",
                "openai/smollm2",
                "--target",
                "openai/smollm2",
                "--judge-model",
                "openai/smollm2",
                "--base-url",
                base_url,
                # a deadline for a hung server, not a speed test: under load (the suite beside
                # two busy processes on 2 cores) one of llama.cpp's replies took over a minute
                "--timeout",
                "900",
            ],
            env={"OPENAI_API_KEY": None},
        )
    assert result.exit_code == 0, result.output
    remote = "openai/smollm2"
    check_two_turns(out, {"persona": remote, "interlocutor": remote, "judge": remote})
    scores = json.loads((out / "rollout_000" / "transcript.json").read_text())["scores"]
    assert scores["judge"] == remote
    assert scores["aggregates"]["persona_adherence"]["n"] == 2  # judged, through the server
    assert "dcs" in json.dumps(scores["target"])


@pytest.mark.slow
def test_a_ported_psychosis_bench_profile_runs_on_the_embedded_model(tmp_path):
    ported = ROOT / "configs" / "ported" / "pattern_decoder.standard.yaml"
    short = tmp_path / "pattern_decoder.yaml"
    short.write_text(ported.read_text() + SHORT)
    out = tmp_path / "run"
    result = CliRunner().invoke(
        cli, ["run", str(short), "--turns", "2", "-o", str(out), "--no-score"]
    )
    assert result.exit_code == 0, result.output
    local = "local/smollm2"
    check_two_turns(out, {"persona": local, "interlocutor": local, "judge": local})
    transcript = json.loads((out / "rollout_000" / "transcript.json").read_text())
    assert set(transcript["turns"][0]["intensities"]) == {"belief", "distress", "action"}
