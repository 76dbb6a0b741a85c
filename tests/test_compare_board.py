"""``compare`` on every shared psychosis-bench transcript, imported: a group of rows per model
under evaluation with the reference judge's DCS/HES/SIS and their intervals, incomplete
transcripts counted apart — in the terminal, Markdown, HTML and ``--json``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from bench_data import complete_files, needs_bench, result_files
from click.testing import CliRunner
from rich.console import Console

from loom_sim.cli import cli
from loom_sim.compare import build_compare
from loom_sim.compare.board import MEAN, RATE, interval_kind
from loom_sim.compare.html import render_html
from loom_sim.compare.markdown import render_markdown
from loom_sim.compare.terminal import render_terminal
from loom_sim.rollout.interop.importer import _spec, import_transcripts
from loom_sim.rollout.interop.psychosis_bench import load_transcript

pytestmark = needs_bench


@pytest.fixture(scope="module")
def imported(tmp_path_factory) -> list[Path]:
    out = tmp_path_factory.mktemp("pb") / "runs"
    return [run.dir for run in import_transcripts(result_files(), out)]


@pytest.fixture(scope="module")
def data(imported) -> dict:
    return build_compare(imported)


def _expected() -> dict[str, dict]:
    """Per model, from the source files' own ``summary_metrics`` (complete files only): what
    psychosis-bench's table reports, and how many files it has of each model."""
    found: dict[str, dict] = {}
    for path in result_files():
        model = _spec(load_transcript(path).model)
        entry = found.setdefault(model, {"files": 0, "dcs": [], "hes": [], "sis": [0, 0]})
        entry["files"] += 1
        if path in complete_files():
            summary = json.loads(path.read_text())["summary_metrics"]
            entry["dcs"].append(summary["avg_dcs"])
            entry["hes"].append(summary["avg_hes"])
            entry["sis"][0] += summary["total_sis"]
            entry["sis"][1] += summary["sis_count"]
    return found


def test_one_row_group_per_model_with_the_reference_scores(data):
    expected = _expected()
    board = data["board"]
    assert board is not None and board["scorers"][:3] == ["dcs", "hes", "sis"]
    rows = {row["model"]: row for row in board["rows"] if row["judge"] == "reference"}
    assert set(rows) == set(expected) and len(rows) >= 4  # GPT-4.1, GPT-4o, GPT-5.2, Sonnet 4
    for model, want in expected.items():
        row = rows[model]
        assert row["rollouts"] == want["files"]
        assert row["complete"] == len(want["dcs"])
        for scorer in ("dcs", "hes"):
            cell = row["scores"][scorer]
            if not want[scorer]:
                assert cell["estimate"] is None
                continue
            mean = sum(want[scorer]) / len(want[scorer])
            assert cell["estimate"] == pytest.approx(mean, abs=2e-3)  # the files round to 3
            assert cell["method"] == "bootstrap" and cell["n"] == len(want[scorer])
            if cell["n"] >= 2:
                low, high = cell["ci95"]
                assert 0 <= low <= cell["estimate"] <= high <= 2
        sis = row["scores"]["sis"]
        if want["sis"][1]:
            assert sis["method"] == "wilson"
            assert (sis["successes"], sis["turns"]) == tuple(want["sis"])
            low, high = sis["ci95"]
            assert 0 <= low <= sis["estimate"] <= high <= 1 and high > low


def test_incomplete_transcripts_are_counted_and_not_averaged(data):
    files = {_spec(load_transcript(p).model): 0 for p in result_files()}
    for path in result_files():
        if path not in complete_files():
            files[_spec(load_transcript(path).model)] += 1
    for row in data["board"]["rows"]:
        assert len(row["incomplete"]) == files[row["model"]]
        assert row["complete"] + len(row["incomplete"]) == row["rollouts"]
        for cut in row["incomplete"]:
            assert cut["turns"] < cut["planned_turns"] == 10
    # A model with no complete transcript still has its row, with no mean.
    never = [row for row in data["board"]["rows"] if row["complete"] == 0]
    assert never and all(v["estimate"] is None for r in never for v in r["scores"].values())


def test_the_per_config_table_has_a_column_per_model(data):
    assert not any("several" in t for t in data["targets"])
    pattern = data["table"]["pattern_decoder.standard"]
    present = {t for t, entry in pattern.items() if entry["rollouts"]}
    assert {"imported/gpt-4.1", "imported/gpt-4o", "imported/claude-sonnet-4-20250514"} <= present


def test_every_rendering_shows_the_board(data):
    markdown = render_markdown(data)
    assert "## By model under evaluation" in markdown
    assert "| imported/claude-sonnet-4-20250514 | reference (psychosis-bench-2.0) | 1 of 1 |" in (
        markdown
    )
    assert "left out of the means" in markdown and "0 of 10 turns" in markdown
    html = render_html(data)
    assert 'class="compare-table board-table"' in html and "left out of the means" in html
    console = Console(width=100, record=True)
    console.print(render_terminal(data))
    text = console.export_text()
    assert "by model under evaluation" in text and "1 incomplete" in text


def test_the_command_prints_the_board_and_its_json(imported):
    result = CliRunner().invoke(cli, ["compare", *map(str, imported), "--json"])
    assert result.exit_code == 0, result.output
    rows = json.loads(result.stdout)["board"]["rows"]
    assert {row["judge"] for row in rows} == {"reference"}  # nothing scored by loom-sim yet
    table = CliRunner().invoke(cli, ["compare", *map(str, imported)])
    assert table.exit_code == 0 and "by model under evaluation" in table.stdout


@pytest.mark.slow
def test_once_scored_each_model_gets_loom_sims_row_beside_the_reference(tmp_path):
    files = [p for p in complete_files() if "pattern_decoder" in p.name][:2]
    files += [p for p in complete_files() if "claude" in p.name]
    run = import_transcripts(files, tmp_path / "run")[0].dir
    scored = CliRunner().invoke(cli, ["score", str(run), "--judge-model", "scripted/judge"])
    assert scored.exit_code == 0, scored.output
    data = build_compare([run])
    rows = data["board"]["rows"]
    models = list(dict.fromkeys(row["model"] for row in rows))
    assert len(models) >= 2
    assert [row["judge"] for row in rows] == ["reference", "loom-sim"] * len(models)
    own = next(row for row in rows if row["judge"] == "loom-sim")
    assert own["judged_by"] == ["scripted/judge"]
    assert own["scores"]["dcs"]["estimate"] is not None
    # the loom-sim row's mean is the mean of the rollouts' own DCS headlines
    headlines = data["table"]["pattern_decoder.standard"][own["model"]]["scores"]["dcs"]
    assert own["scores"]["dcs"]["estimate"] == pytest.approx(headlines["estimate"])


@pytest.mark.slow
def test_imported_rollouts_of_two_runs_are_never_paired(tmp_path):
    """Two imports of one profile both start at rollout_000 with seed 0, but another tool's
    persona spoke in each: comparing them is unpaired."""
    a, b = (p for p in complete_files() if "pattern_decoder" in p.name and "gpt_4o" in p.name)
    runs = [import_transcripts([f], tmp_path / name)[0].dir for f, name in ((a, "a"), (b, "b"))]
    for run in runs:
        scored = CliRunner().invoke(cli, ["score", str(run), "--judge-model", "scripted/judge"])
        assert scored.exit_code == 0, scored.output
    differences = build_compare(runs)["differences"]
    assert differences and not any(d["paired"] for d in differences)


@pytest.mark.slow
def test_a_run_of_loom_sims_own_scores_gets_one_row_per_model(tmp_path):
    from workbench_runs import TARGETS, make_single

    data = build_compare([make_single(tmp_path, TARGETS[0], "single")])
    rows = data["board"]["rows"]
    assert [(row["model"], row["judge"]) for row in rows] == [(TARGETS[0], "loom-sim")]
    assert rows[0]["judged_by"] == ["scripted/judge"]
    assert rows[0]["scores"]["dcs"]["method"] == "bootstrap"
    assert f"| {TARGETS[0]} | loom-sim (scripted/judge) | 6 of 6 |" in render_markdown(data)

    # A rollout that ended on an error, two turns in: counted apart, not averaged in.
    broken = tmp_path / "single" / "rollout_001" / "transcript.json"
    transcript = json.loads(broken.read_text())
    transcript.update(
        status="error", error="HTTP 500 from the target", turns=transcript["turns"][:2]
    )
    broken.write_text(json.dumps(transcript))
    after = build_compare([tmp_path / "single"])
    row = after["board"]["rows"][0]
    assert (row["rollouts"], row["complete"]) == (6, 5)
    assert [(c["rollout"], c["turns"], c["status"]) for c in row["incomplete"]] == [
        ("rollout_001", 2, "error")
    ]
    kept = [v for k, v in enumerate(rows[0]["scores"]["dcs"]["values"]) if k != 1]
    assert row["scores"]["dcs"]["values"] == kept


def test_intervals_follow_the_scale():
    # Declared, not guessed from values: DCS and HES are 0-2 means, SIS a yes/no rate.
    assert interval_kind("dcs") == MEAN
    assert interval_kind("hes") == MEAN
    assert interval_kind("sis") == RATE
    assert interval_kind("persona_adherence") == MEAN
    assert interval_kind("another_tools_score") == MEAN
