"""A ported Spiral-Bench scenario end to end: ``port spiral-bench`` (from the copy beside the
checkout), ``run``, ``score`` and ``report``, on scripted models (the report shows the nine
behaviours and the Spiral summary the turns' scores give; the same seed writes the same files)
and on the embedded model, judge included (its answers are chunks or recorded failures, never
invented numbers)."""

from __future__ import annotations

import json
from pathlib import Path

import msgspec
import pytest
import yaml
from click.testing import CliRunner

from loom_sim.cli import cli
from loom_sim.plugins.scorers import SCORERS
from loom_sim.rollout.interop.spiral_bench import load_results
from loom_sim.rollout.report.spiral import spiral_section
from loom_sim.rollout.scoring import spiral
from loom_sim.store.records import TRANSCRIPT_DECODER
from tests.spiral_data import SPIRAL, needs_spiral

pytestmark = needs_spiral
SCENARIO = "sc01"  # a ported scenario (spiral_tropes); any would do
SCRIPTED = (
    "--persona-model", "scripted/varied", "--target", "scripted/paraphrase",
    "--judge-model", "scripted/judge",
)  # fmt: skip


def invoke(*args: str | Path):
    result = CliRunner().invoke(cli, [str(a) for a in args])
    assert result.exit_code == 0, result.output
    assert "Traceback" not in result.output
    return result


@pytest.fixture(scope="module")
def ported(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("spiral") / "configs"
    invoke("port", "spiral-bench", SPIRAL, "--output", out, "--turns", "4")
    return out


def scenario(ported: Path) -> Path:
    path = ported / f"{SCENARIO}.yaml"
    return path if path.is_file() else sorted(ported.glob("*.yaml"))[0]


def scripted_run(config: Path, out: Path) -> Path:
    invoke("run", config, "--turns", "4", "--rollouts", "2", "--seed", "7", "-o", out,
           "--no-score", *SCRIPTED)  # fmt: skip
    invoke("score", out, "--judge-model", "scripted/judge")
    invoke("report", out)
    return out


def transcripts(run_dir: Path):
    return [
        TRANSCRIPT_DECODER.decode(p.read_bytes())
        for p in sorted(run_dir.glob("rollout_*/transcript.json"))
    ]


def expected_summary(run_dir: Path, scheme: str) -> spiral.Summary:
    """Spiral-Bench's summary computed here from the turns' scores: the report must agree."""
    scenarios, finals = [], []
    for transcript in transcripts(run_dir):
        chunks = [spiral.chunk_of(r.scores["spiral"]) for r in transcript.turns]
        scenarios.append([c for c in chunks if c is not None])
        last = transcript.turns[-1].scores["spiral_final"]
        if last.value is not None:
            finals.append({k: last.details[k] for k in spiral.FINAL})
    return spiral.summarise(scenarios, spiral.final_means(finals), scheme)


def test_a_ported_scenario_run_scored_and_reported_on_scripted_models(ported, tmp_path):
    config = scenario(ported)
    ported_config = yaml.safe_load(config.read_text())
    assert ported_config["evaluation"]["scoring"]["target"] == ["spiral", "spiral_final"]
    rubric = ported_config["evaluation"]["scoring"]["spiral"]["rubric"]
    assert [spiral.key(name) for name in rubric] == list(spiral.BEHAVIOURS)
    run_dir = scripted_run(config, tmp_path / "a" / "run")

    opening = ported_config["conversation"]["persona_opening"]
    for transcript in transcripts(run_dir):
        assert transcript.turns[0].persona == opening  # the scenario's prompt, as written
        states = [r.scores["spiral"].state for r in transcript.turns]
        assert states == ["not_applicable", "scored", "scored", "scored"]
        assert [r.scores["spiral_final"].state for r in transcript.turns][-1] == "scored"

    report = json.loads((run_dir / "report.json").read_text())
    section = report["target"]["spiral"]
    assert section["behaviours"] == list(spiral.BEHAVIOURS)
    expected = expected_summary(run_dir, "length")
    run = section["run"]["loom-sim"]
    assert run["score"] == pytest.approx(expected.score, abs=1e-6)
    assert run["interval"] == pytest.approx(list(expected.interval), abs=1e-6)
    assert (run["scenarios"], run["chunks"], run["failed_chunks"]) == (2, 6, 0)
    for name in spiral.BEHAVIOURS:
        assert run["behaviours"][name] == pytest.approx(expected.figures[name], abs=1e-6)
    assert run["finals"] == {k: expected.figures[k] for k in spiral.FINAL}

    md, html = (run_dir / "report.md").read_text(), (run_dir / "report.html").read_text()
    for text in (md, html):
        assert "Spiral-Bench behaviours" in text and "Spiral-Bench evidence" in text
        for name in spiral.BEHAVIOURS:
            assert name.replace("_", " ") in text, name
    assert f"| the run | loom-sim | {expected.score:.1f} |" in md
    assert "### Summary" not in md  # psychosis-bench's summary: not scored, not shown
    # the rollout's figures head `loom-sim view`, in place of psychosis-bench's
    shown = invoke("view", run_dir / "rollout_000").output
    first_rollout = section["rollouts"][0]["loom-sim"]
    assert f"Spiral-Bench {first_rollout['score']:.1f} (length; 3 chunks)" in shown
    assert "DCS mean" not in shown
    # the judge's brief carried the copy's wording of the behaviours
    trace = (run_dir / "rollout_000" / "score_trace.jsonl").read_text()
    first = next(iter(rubric.items()))
    assert json.dumps(f'"{first[0]}": {first[1]}')[1:-1] in trace

    # the same seed: the same files (but for the clocks)
    again = scripted_run(config, tmp_path / "b" / "run")
    for path in sorted(run_dir.rglob("*")):
        if path.is_file() and path.name in ("turns.jsonl", "transcript.json", "report.json"):
            assert _timeless(path) == _timeless(again / path.relative_to(run_dir)), path


def _timeless(path: Path):
    """A file's data without its clock readings (start, end, durations, created)."""
    clocks = {"started_at", "ended_at", "duration_s", "timings", "created_at", "elapsed_s"}

    def drop(value):
        if isinstance(value, dict):
            return {k: drop(v) for k, v in value.items() if k not in clocks}
        if isinstance(value, list):
            return [drop(v) for v in value]
        return value

    if path.suffix == ".jsonl":
        return [drop(json.loads(line)) for line in path.read_text().splitlines() if line]
    return drop(json.loads(path.read_text()))


@pytest.mark.slow
def test_a_ported_scenario_on_the_embedded_model_judge_included(ported, tmp_path):
    data = yaml.safe_load(scenario(ported).read_text())
    data.setdefault("conversation", {}).update(persona_max_tokens=40, interlocutor_max_tokens=60)
    scoring = data["evaluation"]["scoring"]
    for info in SCORERS:  # the persona's scorers off: this test is about Spiral's
        if info.subject == "persona":
            scoring[info.config_key] = {"enabled": False}
    config = tmp_path / "scenario.yaml"
    config.write_text(yaml.safe_dump(data, sort_keys=False))
    out = tmp_path / "run"
    invoke("run", config, "--turns", "3", "--seed", "1", "-o", out)  # every model embedded

    [transcript] = transcripts(out)
    assert transcript.models["judge"] == "local/smollm2"
    records = transcript.turns
    assert len(records) == 3 and records[0].scores["spiral"].state == "not_applicable"
    judged = [r.scores["spiral"] for r in records[1:]]
    for score in judged:
        if score.state == "failed":  # an unreadable answer: a failure with its reason
            assert score.value is None and score.error
            continue
        assert score.state == "scored" and 0.0 <= score.value <= 100.0
        incidents = score.details["incidents"]
        assert set(incidents) == set(data["evaluation"]["scoring"]["spiral"]["rubric"])
        for name, found in incidents.items():
            assert all(len(q) <= 140 and q and 1 <= s <= 3 for q, s in found)
            assert score.details["figures"][spiral.key(name)] == sum(s for _, s in found)
    final = records[-1].scores["spiral_final"]
    assert final.state in ("scored", "failed")
    if final.state == "scored":
        assert all(0 <= final.details[k] <= 10 for k in spiral.FINAL)

    report = json.loads((out / "report.json").read_text())
    run = report["target"]["spiral"]["run"]["loom-sim"]
    assert run["chunks"] == 2
    assert run["failed_chunks"] == sum(1 for s in judged if s.state == "failed")
    md = (out / "report.md").read_text()
    assert "Spiral-Bench behaviours" in md and "embedded SmolLM2" in md


@pytest.mark.parametrize("name", ["claude-sonnet-4.json", "llama-4-maverick.json"])
def test_the_report_of_imported_results_shows_the_score_each_file_recorded(name, tmp_path):
    """The report pools the reference judge's chunks as Spiral-Bench did: its figures are the
    file's own scoring summary, the score to its one place and every figure to three."""
    path = SPIRAL / "res_v0.2" / name
    run_dir = tmp_path / "run"
    invoke("import", "spiral-bench", path, "--output", run_dir)
    invoke("report", run_dir)
    report = json.loads((run_dir / "report.json").read_text())
    section = report["target"]["spiral"]
    assert section["sources"] == ["reference"]
    found = section["run"]["reference"]
    recorded = load_results(path).recorded
    assert round(found["score"], 1) == recorded["score_0_100"]
    figures = {**found["behaviours"], **found["finals"]}
    for key in [*spiral.BEHAVIOURS, *spiral.FINAL]:
        assert round(figures[key], 3) == pytest.approx(recorded[key]), key
    assert found["scenarios"] == 30 and found["interval"][0] < found["score"]
    md = (run_dir / "report.md").read_text()
    assert f"| the run | reference | {recorded['score_0_100']:.1f} |" in md
    assert "Each rollout's figures: report.json" in md  # 30 rollouts: the run's column only
    # two conversations of one scenario are pooled into one, as Spiral-Bench pools them
    first, second = transcripts(run_dir)[:2]
    second = msgspec.structs.replace(second, config=first.config)
    pooled = spiral_section([first, second])["run"]["reference"]
    chunks = [spiral.chunk_of(r.reference["spiral"]) for t in (first, second) for r in t.turns]
    finals = [{k: t.turns[-1].reference["spiral_final"].details[k] for k in spiral.FINAL}
              for t in (first, second)]  # fmt: skip
    expected = spiral.summarise(
        [[c for c in chunks if c is not None]], spiral.final_means(finals), "length"
    )
    assert pooled["scenarios"] == 1 and pooled["score"] == pytest.approx(expected.score)
