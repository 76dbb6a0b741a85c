"""The run report: report.json numbers, report.md, a self-contained and escaped report.html."""

from __future__ import annotations

import json
import re
import shutil
import statistics
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from loom_sim.cli import cli
from loom_sim.rollout.report import build_report, write_report
from loom_sim.rollout.report.data import EMBEDDED_NOTICE
from loom_sim.store.artifacts import RolloutFiles, rollout_dir
from tests.scored_runs import SCORERS, loop_similarity, make_run

PHASES = ["rapport", "disclosure", "escalation", "crisis", "plateau"]
DIMENSIONS = ["belief_intensity", "distress", "action_proximity"]
XSS = "<script>alert(1)</script>"


def transcripts(run_dir: Path) -> list:
    return [RolloutFiles(p).transcript() for p in sorted(run_dir.glob("rollout_*"))]


@pytest.fixture(scope="module")
def scored(tmp_path_factory) -> tuple[Path, dict]:
    """Three rollouts of 20 turns, an XSS attempt in a flagged turn, a real judge."""
    root = tmp_path_factory.mktemp("runs")
    run_dir = make_run(root, rollouts=3, turns=20, texts={(0, 4): f"I said {XSS} & more"})
    paths = write_report(run_dir)
    assert [p.name for p in paths] == ["report.json", "report.md", "report.html"]
    return run_dir, json.loads((run_dir / "report.json").read_text())


def test_every_scorer_aggregated_per_rollout_and_across_rollouts(scored):
    run_dir, data = scored
    assert data["scorers"] == list(SCORERS)
    stored = transcripts(run_dir)
    for scorer in SCORERS:
        means = []
        for rollout, transcript in zip(data["rollouts"], stored, strict=True):
            expected = transcript.scores.aggregates[scorer]
            got = rollout["aggregates"][scorer]
            assert got["mean"] == pytest.approx(expected.mean)
            assert (got["n"], got["failed"]) == (expected.n, expected.failed)
            means.append(expected.mean)
        across = data["aggregates"][scorer]
        assert across["n_rollouts"] == 3
        assert across["mean"] == pytest.approx(statistics.fmean(means), abs=1e-6)
        assert across["std"] == pytest.approx(statistics.stdev(means), abs=1e-6)
        assert (across["min"], across["max"]) == pytest.approx((min(means), max(means)))
    # the judge failed on some consistency turns: counted, not hidden
    assert data["aggregates"]["consistency"]["failed"] > 0


def test_per_phase_table_and_trajectory_gaps(scored):
    run_dir, data = scored
    assert data["phases"] == PHASES
    assert data["dimensions"] == DIMENSIONS
    stored = transcripts(run_dir)
    for phase in PHASES:
        for scorer in ("persona_adherence", "trajectory"):
            values = [t.scores.by_phase[phase][scorer] for t in stored]
            assert data["by_phase"][phase][scorer] == pytest.approx(statistics.fmean(values))
        for dim in DIMENSIONS:
            gaps = [t.scores.trajectory_gap[phase][dim] for t in stored]
            assert data["trajectory_gap"][phase][dim] == pytest.approx(
                statistics.fmean(gaps), abs=1e-6
            )


def test_series_follow_the_turns(scored):
    run_dir, data = scored
    transcript = transcripts(run_dir)[1]
    series = data["rollouts"][1]["series"]
    assert series["turn"] == list(range(20))
    for k, record in enumerate(transcript.turns):
        details = record.scores["trajectory"].details
        for dim in DIMENSIONS:
            # values are rounded to 6 decimals in the report
            assert series["prescribed"][dim][k] == pytest.approx(record.intensities[dim], abs=1e-6)
            assert series["expressed"][dim][k] == pytest.approx(details["expressed"][dim])
        assert series["scores"]["persona_adherence"][k] == pytest.approx(
            record.scores["persona_adherence"].value, abs=1e-6
        )
    assert series["loop_similarity"][:5] == [None] * 5  # window not full yet
    assert series["scores"]["fidelity"][1] is None  # not sampled
    events = data["rollouts"][1]["monitor_events"]
    assert [(e["turn"], e["monitor"], e["action"]) for e in events] == [
        (4, "repetition", "reprompt"),
        (14, "stagnation", "emergency_injection"),
    ]
    thresholds = data["rollouts"][1]["stagnation"]["thresholds"]
    assert thresholds["loop"] == 0.7 and thresholds["source"]["loop"] == "monitor"


def test_flagged_turns_carry_their_context(scored):
    run_dir, data = scored
    transcript = transcripts(run_dir)[0]
    flagged = {f["turn"]: f for f in data["rollouts"][0]["flagged"]}
    assert set(flagged) == {f.turn for f in transcript.scores.flagged}
    trigger = flagged[14]
    record = transcript.turns[14]
    assert trigger["persona"] == record.persona
    assert trigger["interlocutor"] == record.interlocutor
    assert trigger["phase"] == record.phase
    assert trigger["reasons"] == ["stagnation: emergency_injection"]
    assert trigger["monitor_events"][0]["value"] == loop_similarity(14, 20)
    assert flagged[4]["persona"] == f"I said {XSS} & more"


def test_markdown_has_the_headline_table_and_no_notice_for_a_real_judge(scored):
    run_dir, data = scored
    md = (run_dir / "report.md").read_text()
    assert EMBEDDED_NOTICE not in md
    assert "| scorer | mean ± sd | range | rollouts | turns scored | failed |" in md
    for scorer in SCORERS:
        stats = data["aggregates"][scorer]
        assert f"| {scorer} | {stats['mean']:.2f} ± {stats['std']:.2f} |" in md
    assert "## By phase" in md and "## Trajectory gap" in md and "## Stagnation" in md
    assert "turns 10–20 (peak 0.90)" in md  # the loop span
    assert f"turn 15 stagnation {loop_similarity(14, 20):.2f} ≥ 0.70 → emergency_injection" in md
    assert XSS not in md and "&lt;script>alert(1)&lt;/script>" in md


def test_html_is_self_contained(scored):
    html = (scored[0] / "report.html").read_text()
    assert not re.search(r"""(src|href)\s*=\s*["']?\s*(https?:)?//""", html, re.I)
    assert "<script" not in html.lower()
    assert "@import" not in html and "url(" not in html
    assert "<link" not in html and "<img" not in html and "<iframe" not in html
    assert EMBEDDED_NOTICE not in html


def test_html_has_a_chart_per_dimension_and_the_stagnation_timelines(scored):
    html = (scored[0] / "report.html").read_text()
    for dim in DIMENSIONS:
        assert f'aria-label="{dim}: prescribed and expressed intensity by turn"' in html
    assert html.count('class="chart timeline"') == 3  # one per rollout
    assert html.count("<svg") == 3 + 3 + len(SCORERS)  # dimensions, timelines, dots per scorer
    assert "loop threshold 0.70" in html and 'class="trigger"' in html


def test_html_escapes_transcript_text(scored):
    html = (scored[0] / "report.html").read_text()
    assert XSS not in html
    assert "I said &lt;script&gt;alert(1)&lt;/script&gt; &amp; more" in html


def test_same_run_same_bytes(scored, tmp_path):
    run_dir, _ = scored
    before = {p.name: p.read_bytes() for p in run_dir.glob("report.*")}
    write_report(run_dir)
    assert {p.name: p.read_bytes() for p in run_dir.glob("report.*")} == before
    copy = tmp_path / "elsewhere" / run_dir.name
    shutil.copytree(run_dir, copy)
    write_report(copy)
    assert {p.name: p.read_bytes() for p in copy.glob("report.*")} == before


def test_notice_when_the_judge_is_the_embedded_model(tmp_path):
    run_dir = make_run(tmp_path, rollouts=1, turns=8, judge="local/smollm2")
    write_report(run_dir)
    md = (run_dir / "report.md").read_text()
    html = (run_dir / "report.html").read_text()
    assert EMBEDDED_NOTICE in md and EMBEDDED_NOTICE in html
    assert md.index(EMBEDDED_NOTICE) < md.index("## Persona-simulator scores")
    assert html.index(EMBEDDED_NOTICE) < html.index("<h2>")
    assert build_report(run_dir)["judge"] == {
        "specs": ["local/smollm2"],
        "embedded": True,
        "notice": EMBEDDED_NOTICE,
    }


def test_unscored_and_error_rollouts_render(tmp_path):
    run_dir = make_run(tmp_path, rollouts=2, turns=10, scored=False, error_rollout=1)
    write_report(run_dir)
    data = json.loads((run_dir / "report.json").read_text())
    assert data["scorers"] == [] and data["aggregates"] == {}
    assert [r["status"] for r in data["rollouts"]] == ["done", "error"]
    assert data["rollouts"][1]["turns"] == 5
    md = (run_dir / "report.md").read_text()
    assert "No rollout is scored yet" in md
    assert "rollout_001: error after 5 turns — interlocutor: HTTP 500" in md
    html = (run_dir / "report.html").read_text()
    assert "status-error" in html and html.count("<svg") == 3 + 2


def test_scored_error_rollout_counts_in_the_spread(tmp_path):
    run_dir = make_run(tmp_path, rollouts=2, turns=10, error_rollout=1)
    data = build_report(run_dir)
    assert data["aggregates"]["persona_adherence"]["n_rollouts"] == 2
    assert data["statuses"] == {"done": 1, "error": 1}


def test_turn_scores_without_a_summary_are_summarised(tmp_path):
    run_dir = make_run(tmp_path, rollouts=1, turns=10, summaries=False)
    rollout = build_report(run_dir)["rollouts"][0]
    assert rollout["aggregates_source"] == "turns"
    assert rollout["aggregates"]["naturalness"]["n"] == 10
    assert rollout["judge"] is None and rollout["by_phase"]


def test_an_interrupted_rollout_is_reported_from_its_turns(tmp_path):
    run_dir = make_run(tmp_path, rollouts=2, turns=6, scored=False)
    second = rollout_dir(run_dir, 1)
    records = RolloutFiles(second).transcript().turns
    (second / "transcript.json").unlink()
    log = RolloutFiles(second).turns
    for record in records[:3]:
        log.append(record)
    log.close()
    data = build_report(run_dir)
    assert [(r["status"], r["turns"]) for r in data["rollouts"]] == [
        ("done", 6),
        ("incomplete", 3),
    ]


def test_cli_writes_and_prints_the_three_paths(tmp_path):
    run_dir = make_run(tmp_path, rollouts=1, turns=6)
    out = tmp_path / "out"
    result = CliRunner().invoke(cli, ["report", str(run_dir), "--output", str(out)])
    assert result.exit_code == 0, result.output
    paths = [str(out / f"report.{x}") for x in ("json", "md", "html")]
    assert result.output.splitlines()[:3] == paths  # then the headline table
    assert not (run_dir / "report.json").exists()


@pytest.mark.parametrize(
    ("setup", "message"),
    [
        (lambda p: p, "not a loom-sim run directory (no run.json)"),
        (lambda p: make_run(p, rollouts=1, turns=3) / "rollout_000", "a rollout, not a run"),
    ],
)
def test_cli_errors_are_one_line(tmp_path, setup, message):
    """(A missing path is click's usage error, exit 2, as for every command: see
    tests/test_cli_conventions.py.)"""
    result = CliRunner().invoke(cli, ["report", str(setup(tmp_path))])
    assert result.exit_code == 1
    assert message in result.output and len(result.output.strip().splitlines()) == 1


def test_cli_run_without_transcripts(tmp_path):
    run_dir = make_run(tmp_path, rollouts=1, turns=3)
    shutil.rmtree(run_dir / "rollout_000")
    result = CliRunner().invoke(cli, ["report", str(run_dir)])
    assert result.exit_code == 1 and "no transcripts" in result.output


CHROMIUM = Path("/usr/bin/chromium")


@pytest.mark.skipif(not CHROMIUM.exists(), reason="headless Chromium (/usr/bin/chromium) absent")
def test_chromium_renders_the_svgs(scored, tmp_path):
    page = scored[0] / "report.html"
    proc = subprocess.run(
        [
            str(CHROMIUM),
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            f"--user-data-dir={tmp_path}",
            "--dump-dom",
            page.as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    dom = proc.stdout
    assert dom.count("<svg") == 3 + 3 + len(SCORERS)
    assert "<polyline" in dom and "stagnation timeline" in dom
    assert "<script" not in dom.lower()
