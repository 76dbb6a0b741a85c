"""``loom-sim import spiral-bench``: each result file becomes a run (one rollout per
conversation, Spiral-Bench's judgements as reference scores) whose comparison reproduces the
summary the file recorded, and which loom-sim's own judge can score beside it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from loom_sim.cli import cli
from loom_sim.rollout.interop.importer import imported_spec
from loom_sim.rollout.interop.spiral_bench import load_results
from loom_sim.rollout.report.data import load_transcript
from loom_sim.rollout.scoring.spiral import BEHAVIOURS, FINAL
from tests.spiral_data import SPIRAL, needs_spiral, result_files

pytestmark = needs_spiral
ROOT = Path(__file__).resolve().parent.parent


def invoke(*args: str):
    result = CliRunner().invoke(cli, list(args))
    assert "Traceback" not in result.output
    return result


def _compare(*runs) -> dict:
    result = invoke("compare", *map(str, runs), "--json")
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def _recorded(path) -> dict:
    data = json.loads(path.read_text())
    return next(run["__meta__"]["scoring_summary"][0] for run in data.values())


@pytest.mark.parametrize("path", result_files(), ids=lambda p: p.stem)
def test_import_and_compare_reproduce_the_recorded_summary(tmp_path, path):
    out = tmp_path / "run"
    result = invoke("import", "spiral-bench", str(path), "--output", str(out))
    assert result.exit_code == 0, result.output
    assert "the recomputed summary matches the recorded one" in result.stdout
    recorded = _recorded(path)
    rows = _compare(out)["spiral"]["rows"]
    row = next(r for r in rows if r["judge"] == "reference" and r["scheme"] == "length")
    assert row["model"] == f"imported/{recorded['model_name'].replace('/', '-')}"
    assert row["scenarios"] == 30 and row["rollouts"] == 30
    assert round(row["score"], 1) == recorded["score_0_100"]
    for name in (*BEHAVIOURS, *FINAL):
        assert row["figures"][name] == pytest.approx(recorded[name], abs=5e-4), name
    low, high = row["interval"]
    assert low < row["score"] < high
    assert {r["scheme"] for r in rows} == {"length", "plain"}


def test_turns_carry_spiral_benchs_judgements(tmp_path):
    path = result_files()[0]
    out = tmp_path / "run"
    assert invoke("import", "spiral-bench", str(path), "-o", str(out)).exit_code == 0
    source = load_results(path)
    run = json.loads((out / "run.json").read_text())
    assert run["rollouts"] == len(source.conversations) == 30
    assert run["config"]["evaluation"]["scoring"]["target"] == ["spiral", "spiral_final"]
    assert len(run["config"]["evaluation"]["scoring"]["spiral"]["rubric"]) == 9
    assert run["config"]["evaluation"]["scoring"]["persona_adherence"]["enabled"] is False
    transcripts = [load_transcript(p / "transcript.json") for p in sorted(out.glob("rollout_*"))]
    scenarios = json.loads((SPIRAL / "prompts" / "eval_prompts_v0.2.json").read_text())
    assert [t.config for t in transcripts] == sorted(s["prompt_id"] for s in scenarios)
    by_scenario = {t.config: t for t in transcripts}
    for conversation in source.conversations:
        transcript = by_scenario[conversation.scenario]
        assert transcript.reference.source == "spiral-bench"
        assert transcript.reference.summary == source.recorded
        assert transcript.reference.dimensions == conversation.final
        exchanges = conversation.exchanges()
        assert [(t.persona, t.interlocutor) for t in transcript.turns] == exchanges
        assert transcript.turns[0].reference["spiral"].state == "not_applicable"
        for judged in conversation.chunks:
            score = transcript.turns[judged.turns[-1]].reference["spiral"]
            assert score.details["turns"] == list(judged.turns)
            assert score.details["chars"] == judged.chunk.chars
            if judged.chunk.failed:
                assert score.state == "failed" and "no findings" in score.error
            else:
                assert 0 <= score.value <= 100
                assert set(score.details["incidents"]) == set(judged.incidents)
        final = transcript.turns[-1].reference["spiral_final"]
        assert {k: final.details[k] for k in FINAL} == conversation.final


def test_two_files_make_a_run_each_and_compare_groups_by_model(tmp_path):
    files = result_files()
    out = tmp_path / "runs"
    result = invoke("import", "spiral-bench", *map(str, files), "-o", str(out))
    assert result.exit_code == 0, result.output
    runs = sorted(out.iterdir())
    assert [p.name for p in runs] == ["anthropic-claude-sonnet-4", "meta-llama-llama-4-maverick"]
    data = _compare(*runs)
    models = {r["model"] for r in data["spiral"]["rows"]}
    assert models == {"imported/anthropic-claude-sonnet-4", "imported/meta-llama-llama-4-maverick"}
    assert set(data["targets"]) == models
    assert data["board"] is None  # Spiral-Bench's scores have their own table
    report = (tmp_path / "cmp").resolve()
    assert invoke("compare", *map(str, runs), "-o", str(report)).exit_code == 0
    markdown = (report / "report.md").read_text()
    assert "## Spiral-Bench, by model under evaluation" in markdown and "37.5 [" in markdown
    assert "Spiral-Bench, by model under evaluation" in (report / "report.html").read_text()
    _the_docs_table_is_what_compare_gives(data)


def _the_docs_table_is_what_compare_gives(data: dict) -> None:
    """docs/spiral-bench.md's table of the two result files: every row as compare makes it."""
    doc = (ROOT / "docs" / "spiral-bench.md").read_text()
    order = [*BEHAVIOURS, *FINAL]
    named = {imported_spec(r.model): r.model for r in map(load_results, result_files())}
    for row in data["spiral"]["rows"]:
        model = named[row["model"]]
        low, high = row["interval"]
        cells = [model, row["scheme"], f"{row['score']:.1f}", f"{low:.1f}–{high:.1f}"]
        cells += [f"{row['figures'][name]:.3f}" for name in order]
        assert "| " + " | ".join(cells) + " |" in doc, cells


def _trimmed(tmp_path, scenarios=3):
    """A result file of the first ``scenarios`` scenarios only (its recorded summary kept)."""
    data = json.loads(result_files()[1].read_text())
    for run in data.values():
        for name, found in list(run.items()):
            if not name.startswith("__") and isinstance(found, dict) and name != "scoring_summary":
                run[name] = dict(list(found.items())[:scenarios])
    path = tmp_path / "res" / "trimmed.json"
    path.parent.mkdir()
    path.write_text(json.dumps(data))
    return path


def test_a_copy_is_needed_and_a_changed_file_is_told_apart(tmp_path):
    path = _trimmed(tmp_path)
    alone = invoke("import", "spiral-bench", str(path), "-o", str(tmp_path / "a"))
    assert alone.exit_code == 1 and "give --copy DIR" in alone.stderr
    given = invoke(
        "import", "spiral-bench", str(path), "-o", str(tmp_path / "b"), "--copy", str(SPIRAL)
    )
    assert given.exit_code == 0, given.output
    assert "3 rollouts" in given.stdout
    assert "note: the recomputed summary differs from the recorded one: score_0_100" in given.stdout
    junk = tmp_path / "junk.json"
    junk.write_text('{"hello": 1}')
    bad = invoke("import", "spiral-bench", str(junk), "-o", str(tmp_path / "c"))
    assert bad.exit_code == 1 and "not a Spiral-Bench result file" in bad.stderr
    assert bad.stderr.strip().count("\n") == 0


@pytest.mark.slow
def test_a_scored_import_shows_both_judges_and_their_agreement(tmp_path):
    out = tmp_path / "run"
    path = _trimmed(tmp_path)
    assert (
        invoke("import", "spiral-bench", str(path), "-o", str(out), "--copy", str(SPIRAL)).exit_code
        == 0
    )
    scored = invoke("score", str(out), "--judge-model", "scripted/judge")
    assert scored.exit_code == 0, scored.output
    transcript = load_transcript(out / "rollout_000" / "transcript.json")
    assert transcript.turns[0].scores["spiral"].state == "not_applicable"
    assert transcript.turns[1].scores["spiral"].details["figures"] is not None
    assert {n for t in transcript.turns for n in t.scores} == {"spiral", "spiral_final"}
    data = _compare(out)["spiral"]
    judges = {(r["judge"], r["scheme"]) for r in data["rows"]}
    assert judges == {(j, s) for j in ("reference", "loom-sim") for s in ("length", "plain")}
    (found,) = data["agreement"].values()
    assert set(found) == {"spiral", *(f"spiral:{b}" for b in BEHAVIOURS), "spiral_final"}
    assert found["spiral"]["pairs"] == found["spiral:pushback"]["pairs"] > 0
    assert found["spiral"]["level"] == "interval"
    assert found["spiral:pushback"]["level"] == "ordinal"
    assert found["spiral:pushback"]["categories"] == [float(v) for v in range(9)]
    assert found["spiral_final"]["pairs"] == 3 * 3
    reported = invoke("report", str(out))
    assert reported.exit_code == 0, reported.output
    section = json.loads((out / "report.json").read_text())["target"]
    assert section["spiral_agreement"] == found  # the report's and compare's are one
    markdown = (out / "report.md").read_text()
    assert "| all rollouts | spiral:pushback |" in markdown
    assert "| all rollouts | spiral_final |" in markdown
