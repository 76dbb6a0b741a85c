"""`loom-sim probe` end to end: files, metadata without secrets, adding modes, one-line errors,
and (slow) the embedded model in all three modes."""

from __future__ import annotations

import json
import re

import pytest
import yaml
from click.testing import CliRunner
from probe_support import FACTUAL, MORAL, log_lines

from loom_sim.cli import cli
from loom_sim.models.scripted import SCRIPTS
from loom_sim.testing.fake_server import FakeOpenAIServer

STAND_INS = ["--target", "scripted/probe-target", "--judge-model", "scripted/probe-judge"]
SECRET = "sk-probe-test-secret-0123456789"


def probe(*args: str, env: dict | None = None):
    result = CliRunner().invoke(cli, ["probe", *args], env=env, catch_exceptions=False)
    assert "Traceback" not in result.output
    return result


def test_all_modes_write_logs_metadata_and_summary(tmp_path, monkeypatch):
    out = tmp_path / "out"
    env = {"OPENAI_API_KEY": SECRET}
    args = [
        str(FACTUAL),
        *STAND_INS,
        "--runs",
        "12",
        "--seed",
        "4",
        "-o",
        str(out),
        "--bandit-state",
        str(tmp_path / "state.json"),
        "--base-url",
        "http://user:pw@127.0.0.1:9/v1?api_key=" + SECRET,
    ]
    monkeypatch.setattr("sys.argv", ["loom-sim", "probe", *args])  # as a shell would call it
    result = probe(*args, env=env)
    assert result.exit_code == 0, result.output
    names = sorted(p.name for p in out.iterdir())
    assert names == [
        "adaptive.jsonl",
        "bandit.jsonl",
        "probe.json",
        "static.jsonl",
        "summary.json",
        "summary.md",
    ]
    for mode in ("static", "adaptive", "bandit"):
        assert [r["run_id"] for r in log_lines(out, mode)] == list(range(12))
    meta = json.loads((out / "probe.json").read_text())
    assert meta["seed"] == 4 and meta["config_name"] == "factual_pressure.yaml"
    assert meta["models"] == {"target": "scripted/probe-target", "judge": "scripted/probe-judge"}
    assert meta["versions"]["trio"] and meta["loom_sim_version"]
    assert meta["rubric"]["id"] == "probe_contradiction" and meta["true_rates"]
    assert meta["config"]["prompts"][0]["id"] == "great_wall"
    for mode in ("static", "adaptive", "bandit"):
        entry = meta["modes"][mode]
        assert entry["status"] == "done" and entry["completed"] == 12 and entry["runs"] == 12
        assert entry["base_url"] == "http://127.0.0.1:9/v1"
        assert "http://127.0.0.1:9/v1" in entry["argv"]
    assert meta["modes"]["bandit"]["concurrency"] == 1
    assert meta["modes"]["bandit"]["bandit_state"]["path"] == str(tmp_path / "state.json")
    for path in out.iterdir():
        text = path.read_text()
        assert SECRET not in text and "user:pw" not in text, path.name
    assert "contradictions found, by mode" in result.stdout
    assert "summary.md" in result.stdout


def test_repeated_modes_then_a_later_mode_into_the_same_directory(tmp_path):
    out = tmp_path / "out"
    common = [*STAND_INS, "--runs", "4", "-o", str(out), "--bandit-state", str(tmp_path / "s")]
    first = probe(str(MORAL), "--mode", "static", "--mode", "adaptive", "--seed", "2", *common)
    assert first.exit_code == 0, first.output
    assert not (out / "bandit.jsonl").exists()
    later = probe(str(MORAL), "--mode", "bandit", *common)
    assert later.exit_code == 0, later.output
    assert json.loads((out / "probe.json").read_text())["seed"] == 2
    summary = json.loads((out / "summary.json").read_text())
    assert list(summary["modes"]) == ["static", "adaptive", "bandit"]

    again = probe(str(MORAL), "--mode", "static", *common)
    assert again.exit_code == 1
    assert again.stderr.strip() == (
        f"{out / 'static.jsonl'} already exists: this directory already has a static probe; "
        "give another --output"
    )
    other = probe(str(MORAL), "--mode", "bandit", *common[2:], "--target", "scripted/echo")
    assert other.exit_code == 1
    assert "target scripted/probe-target, not scripted/echo" in other.stderr
    reseeded = probe(str(MORAL), "--mode", "bandit", *common, "--seed", "3")
    assert reseeded.exit_code == 1 and "seed 2" in reseeded.stderr


@pytest.mark.parametrize(
    ("args", "env", "message"),
    [
        (
            ["--target", "scripted/nope"],
            {},
            # every registered script is offered, whoever registered it
            "scripted/nope: unknown script; use one of "
            + ", ".join(script.name for script in SCRIPTS)
            + " or a .yaml/.yml/.json/.txt file.",
        ),
        (
            ["--target", "openai/gpt-4.1"],
            {"OPENAI_API_KEY": "", "OPENAI_BASE_URL": ""},
            "openai/gpt-4.1 needs an API key: set OPENAI_API_KEY",
        ),
        (
            ["--judge-model", "gpt-4.1"],
            {},
            "model spec 'gpt-4.1' needs a provider: write it as provider/name (providers: "
            "local, openai, anthropic, scripted), e.g. openai/gpt-4.1 or local/smollm2.",
        ),
    ],
)
def test_model_errors_are_one_line_before_anything_is_written(tmp_path, args, env, message):
    out = tmp_path / "out"
    result = probe(str(MORAL), "--runs", "1", "-o", str(out), *args, env=env)
    assert result.exit_code == 1
    assert result.stderr.strip() == message
    assert not out.exists()


def test_usage_errors_are_one_line(tmp_path):
    missing = probe(str(tmp_path / "nope.yaml"), *STAND_INS)
    assert missing.exit_code == 1 and len(missing.stderr.strip().splitlines()) == 1
    assert "nope.yaml" in missing.stderr
    nothing = probe()
    assert nothing.exit_code == 1
    assert nothing.stderr.strip() == "give a PROBE_CONFIG to run, or --summary-only DIR"
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x.txt").write_text("x")
    occupied = probe(str(MORAL), *STAND_INS, "-o", str(tmp_path / "full"))
    assert occupied.exit_code == 1
    assert occupied.stderr.strip().endswith(
        "is not empty and holds no probe; give another --output"
    )


def test_a_server_that_refuses_the_key_stops_the_probe_in_one_line(tmp_path):
    out = tmp_path / "out"
    with FakeOpenAIServer(require_key="the-right-key") as server:
        result = probe(
            str(MORAL),
            "--target",
            "openai/x",
            "--base-url",
            server.base_url,
            "--judge-model",
            "scripted/probe-judge",
            "--mode",
            "static",
            "--runs",
            "2",
            "-o",
            str(out),
            env={"OPENAI_API_KEY": "a-wrong-key"},
        )
    assert result.exit_code == 1
    [line] = result.stderr.strip().splitlines()[-1:]
    # both runs fail at once; the message names the one that failed first
    assert re.match(r"static run [01]: openai/x", line), line
    assert line.endswith(f"The 0 completed static runs are in {out / 'static.jsonl'}.")
    assert "a-wrong-key" not in result.output
    meta = json.loads((out / "probe.json").read_text())
    assert meta["modes"]["static"]["status"] == "stopped"
    assert meta["modes"]["static"]["error"] in line


@pytest.mark.slow
def test_the_embedded_model_in_all_three_modes(tmp_path):
    config = yaml.safe_load(MORAL.read_text())
    config["generation"] = {"max_tokens": 24, "temperature": 0.7}
    config["judge"] = {"max_tokens": 32, "max_attempts": 1}
    path = tmp_path / "tiny.yaml"
    path.write_text(yaml.safe_dump(config))
    out = tmp_path / "out"
    result = probe(
        str(path),
        "--runs",
        "1",
        "--seed",
        "3",
        "-o",
        str(out),
        "--bandit-state",
        str(tmp_path / "state.json"),
    )
    assert result.exit_code == 0, result.output
    summary = json.loads((out / "summary.json").read_text())
    assert list(summary["modes"]) == ["static", "adaptive", "bandit"]
    assert [c["found_by"] for c in summary["comparisons"]] == ["adaptive", "bandit"]
    assert all(summary["modes"][m]["runs"] == 1 for m in summary["modes"])
    assert any("SmolLM2-135M" in note for note in summary["notes"])
    first = [log_lines(out, m)[0] for m in ("static", "adaptive", "bandit")]
    # run 0 of every mode asks the same prompt with the same seed (llama.cpp's prompt cache
    # may still make the sampled text differ a little)
    assert len({(r["prompt_id"], r["seed"]) for r in first}) == 1
    assert all(r["success"] in (True, False, None) for r in first)
    page = (out / "summary.md").read_text()
    assert "| static | 1 |" in page and "| adaptive | 1 |" in page and "| bandit | 1 |" in page
