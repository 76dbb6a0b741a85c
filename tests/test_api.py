"""The Python API (docs/python.md): a 2-turn scripted run and a matrix of two targets from
plain Python and from inside a running asyncio loop, results as data frames, load/score of a
folder, shipped names in the library, and the docs' example executed as written."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

import pandas as pd
import pytest

import loom_sim
from loom_sim.errors import LoomError

ROOT = Path(__file__).parent.parent
SCRIPTED = {
    "persona_model": "scripted/varied",
    "judge_model": "scripted/judge",
    "quiet": True,
    "cache": False,
}
TARGETS = ["scripted/varied", "scripted/paraphrase"]


def test_the_public_surface_is_declared():
    for name in ("run", "run_async", "score", "score_async", "load", "compare_runs", "Run"):
        assert name in loom_sim.__all__
        assert getattr(loom_sim, name).__doc__


def _check_single(run: loom_sim.Run, folder: Path) -> None:
    assert run.dir == folder and run.kind == "run" and run.failure is None
    assert (folder / "report.md").is_file()  # scored and reported, as the command does
    turns = run.turns()
    assert isinstance(turns, pd.DataFrame)
    assert list(turns["turn"]) == [1, 2]
    assert set(turns["target"]) == {"scripted/varied"}
    assert "score_dcs" in turns.columns and turns["score_dcs"].notna().all()
    rollouts = run.rollouts()
    assert list(rollouts["status"]) == ["done"] and list(rollouts["turns"]) == [2]


def _check_matrix(run: loom_sim.Run) -> None:
    assert run.kind == "matrix" and run.targets == TARGETS and run.failure is None
    table = run.compare()
    assert set(table["target"]) == set(TARGETS)
    assert (table["rollouts"] == 2).all()
    differences = run.differences()
    assert not differences.empty
    assert set(zip(differences["a"], differences["b"], strict=True)) == {tuple(TARGETS)}
    assert differences["paired"].all()  # same config and seed against both targets
    assert len(run.rollouts()) == 4 and len(run.turns()) == 8


def test_a_two_turn_run_and_a_matrix_from_plain_python(tmp_path):
    single = loom_sim.run(
        "mania_patient",
        target="scripted/varied",
        turns=2,
        seed=3,
        output=tmp_path / "one",
        **SCRIPTED,
    )
    _check_single(single, tmp_path / "one")
    matrix = loom_sim.run(
        "mania_patient",
        target=TARGETS,
        turns=2,
        rollouts=2,
        seed=3,
        output=tmp_path / "two",
        **SCRIPTED,
    )
    _check_matrix(matrix)


def test_the_same_from_inside_a_running_asyncio_loop(tmp_path):
    """A notebook's cell: the synchronous call (trio in a worker thread) and the awaited one."""

    async def cell() -> tuple[loom_sim.Run, loom_sim.Run]:
        asyncio.get_running_loop()  # this is the situation trio.run cannot start in
        single = loom_sim.run(
            "mania_patient",
            target="scripted/varied",
            turns=2,
            seed=3,
            output=tmp_path / "one",
            **SCRIPTED,
        )
        matrix = await loom_sim.run_async(
            "mania_patient",
            target=TARGETS,
            turns=2,
            rollouts=2,
            seed=3,
            output=tmp_path / "two",
            **SCRIPTED,
        )
        return single, matrix

    single, matrix = asyncio.run(cell())
    _check_single(single, tmp_path / "one")
    _check_matrix(matrix)


def test_score_fills_an_unscored_run_and_load_reads_it(tmp_path):
    folder = tmp_path / "run"
    unscored = loom_sim.run(
        "mania_patient",
        target="scripted/varied",
        turns=2,
        seed=3,
        output=folder,
        score=False,
        **SCRIPTED,
    )
    assert not any(c.startswith("score_") for c in unscored.turns().columns)
    scored = loom_sim.score(folder, quiet=True, cache=False)
    assert scored.turns()["score_dcs"].notna().all()
    loaded = loom_sim.load(folder)
    pd.testing.assert_frame_equal(loaded.turns(), scored.turns())


def test_shipped_names_resolve_in_the_library():
    from loom_sim.rollout.runtime.run import RunOptions, plan_run

    plan = plan_run("mania_patient", RunOptions(turns=2, output=Path("unused")))
    assert plan.config.persona.identity.name == "Marcus Chen"


def test_bad_input_is_one_sentence(tmp_path):
    with pytest.raises(LoomError, match="no_such_config: no such file"):
        loom_sim.run("no_such_config", output=tmp_path / "x", **SCRIPTED)
    with pytest.raises(LoomError, match="leave out target"):
        loom_sim.run(resume=tmp_path, target="scripted/varied")
    with pytest.raises(LoomError, match="not a directory"):
        loom_sim.load(tmp_path / "missing")


def python_blocks(markdown: str) -> list[str]:
    return re.findall(r"^```python\n(.*?)^```", markdown, flags=re.S | re.M)


def test_the_docs_example_runs_as_written(tmp_path, monkeypatch):
    """docs/python.md's code blocks, in order, in one namespace, as a notebook runs them:
    the docs cannot drift from the API."""
    blocks = python_blocks((ROOT / "docs" / "python.md").read_text())
    assert len(blocks) >= 3
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("LOOM_SIM_CACHE_DIR", str(tmp_path / "cache"))
    namespace: dict = {}
    for block in blocks:
        exec(compile(block, "docs/python.md", "exec"), namespace)
    assert (tmp_path / "runs" / "first" / "report.md").is_file()
    assert (tmp_path / "runs" / "two-targets" / "matrix.md").exists() or any(
        (tmp_path / "runs" / "two-targets").glob("*.md")
    )


def test_the_command_line_and_the_api_make_the_same_run(tmp_path):
    """Two thin callers of one pipeline: the same config, models and seed give the same turns
    and scores, and the same files, whether run by ``loom-sim run`` or ``loom_sim.run``."""
    from click.testing import CliRunner

    from loom_sim.cli import cli

    args = ["run", "mania_patient", "--turns", "2", "--seed", "3", "--no-cache"]
    args += ["--persona-model", "scripted/varied", "--target", "scripted/varied"]
    args += ["--judge-model", "scripted/judge", "-o", str(tmp_path / "cli")]
    result = CliRunner().invoke(cli, args, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    api = loom_sim.run(
        "mania_patient",
        target="scripted/varied",
        turns=2,
        seed=3,
        output=tmp_path / "api",
        **SCRIPTED,
    )
    by_cli = loom_sim.load(tmp_path / "cli")
    pd.testing.assert_frame_equal(
        by_cli.turns().drop(columns="run"), api.turns().drop(columns="run")
    )

    def files(folder: Path) -> set[str]:
        return {str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file()}

    assert files(tmp_path / "cli") == files(tmp_path / "api")
