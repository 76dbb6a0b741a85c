"""A run ends with its answer: the headline table in the terminal; the model calls it took
(retries by reason, calls given up, budgets) in report.md, report.html and the viewer; and a
matrix's scoring progress names the arm being scored."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest
from click.testing import CliRunner

from loom_sim.cli import cli
from loom_sim.testing.fake_server import FakeOpenAIServer
from loom_sim.web.app import create_app

ROOT = Path(__file__).parent.parent
MANIA = ROOT / "configs" / "examples" / "mania_patient.yaml"
COMMON = ["--turns", "2", "--seed", "1", "--no-cache", "--judge-model", "scripted/echo"]


@pytest.fixture(scope="module")
def rate_limited(tmp_path_factory) -> dict:
    """A run whose target answers 429 to some of its first requests: the retries are real."""
    out = tmp_path_factory.mktemp("results") / "run"
    with FakeOpenAIServer(fault_sequence="429,ok,429,429", retry_after=0.01) as server:
        result = CliRunner().invoke(
            cli,
            ["run", str(MANIA), *COMMON, "--rollouts", "2", "-o", str(out)]
            + ["--persona-model", "scripted/varied", "--target", "openai/fake"]
            + ["--base-url", server.base_url],
        )
        injected = server.stats()["faults_by_kind"].get("429", 0)
    assert result.exit_code == 0, result.output
    return {"out": out, "stdout": result.stdout, "injected": injected}


def test_run_ends_with_the_headline_table(rate_limited):
    stdout = rate_limited["stdout"]
    headline = stdout[stdout.index("report: ") :]
    assert "mania_patient.yaml against openai/fake" in headline
    assert "model under evaluation" in headline and "persona simulator" in headline
    assert "dcs (0–2, lower is better)" in headline
    assert "capitulation" in headline and "n=2 rate" in headline  # a declared rate: Wilson
    assert "flagged turns" in headline and "rollouts (turns)" in headline
    n = rate_limited["injected"]
    assert n == 3
    assert f"faults: openai/fake: {n} retried (HTTP 429 ×{n})" in headline
    assert headline.index("report: ") < headline.index("model under evaluation")


def test_reports_show_the_retries_with_their_counts(rate_limited):
    out, n = rate_limited["out"], rate_limited["injected"]
    faults = json.loads((out / "report.json").read_text())["faults"]
    assert faults["models"] == [
        {"spec": "openai/fake", "retried": n, "by_reason": {"HTTP 429": n}, "gave_up": 0}
    ]
    markdown = (out / "report.md").read_text()
    assert "## Model calls: faults, retries and budgets" in markdown
    assert f"| openai/fake | {n} | HTTP 429 ×{n} | 0 |" in markdown
    assert f"{n} attempts retried, 0 calls failed after every retry." in markdown
    html = (out / "report.html").read_text()
    assert "<h2>Model calls: faults, retries and budgets</h2>" in html
    assert f'<tr><td>openai/fake</td><td>{n}</td><td class="text">HTTP 429 ×{n}</td>' in html


async def test_the_viewers_run_page_shows_the_retries(rate_limited):
    app = create_app(rate_limited["out"].parent, poll_s=0.05, lifetime=20)
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://localhost") as http:
        page = await http.get("/run/run")
    assert page.status_code == 200
    n = rate_limited["injected"]
    assert "Model calls: faults, retries and budgets" in page.text
    assert f"HTTP 429 ×{n}" in page.text


def test_a_run_without_faults_says_so(tmp_path):
    out = tmp_path / "run"
    result = CliRunner().invoke(
        cli,
        ["run", str(MANIA), *COMMON, "-o", str(out)]
        + ["--persona-model", "scripted/varied", "--target", "scripted/varied"]
        + ["--max-cost", "5"],
    )
    assert result.exit_code == 0, result.output
    assert "faults: no model call retried or failed; budget cost $5" in result.stdout
    markdown = (out / "report.md").read_text()
    assert "No model call was retried or failed." in markdown
    assert "Budget cost $5: stopped 0 rollouts." in markdown
    again = CliRunner().invoke(cli, ["report", str(out)])
    assert again.exit_code == 0, again.output
    lines = again.stdout.splitlines()
    assert lines[:3] == [str(out / f"report.{x}") for x in ("json", "md", "html")]
    assert "against scripted/varied" in again.stdout


@pytest.mark.slow
def test_a_matrix_ends_with_the_comparison_and_names_each_arm_scored(tmp_path):
    out = tmp_path / "matrix"
    with FakeOpenAIServer(fault_sequence="429,ok,429", retry_after=0.01) as server:
        result = CliRunner().invoke(
            cli,
            ["run", str(MANIA), *COMMON, "-o", str(out), "--persona-model", "scripted/varied"]
            + ["--target", "scripted/varied", "--target", "openai/fake"]
            + ["--base-url", server.base_url],
        )
        n = server.stats()["faults_by_kind"].get("429", 0)
    assert result.exit_code == 0, result.output
    assert n == 2
    headline = result.stdout[result.stdout.rindex("report: ") :]
    assert "scripted/varied" in headline and "openai/fake" in headline
    assert "openai/fake − scripted/varied" in headline  # the difference column
    assert "sis (yes/no)" in headline
    assert f"faults: openai/fake: {n} retried (HTTP 429 ×{n})" in headline
    arms = sorted(p.name for p in out.iterdir() if (p / "run.json").is_file())
    assert len(arms) == 2
    for arm in arms:
        assert f"scoring {arm} rollout_000: turn 1/2" in result.stderr
    # The cells' retries are the matrix's (one hub serves every arm): in its run.json and report.
    assert json.loads((out / "run.json").read_text())["faults"] == {
        "openai/fake": {"retried": {"HTTP 429": n}, "gave_up": 0}
    }
    assert f"| openai/fake | {n} | HTTP 429 ×{n} | 0 |" in (out / "report.md").read_text()
    assert f"HTTP 429 ×{n}" in (out / "report.html").read_text()
