"""`loom-sim export`: a row per turn and per rollout, in CSV and JSONL, that pandas reads with
the columns docs/workbench.md documents; failures and "not applicable" are states, not 0."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner
from workbench_runs import FAILS_AT, ROLLOUTS, TARGETS, TURNS, make_matrix

from loom_sim.cli import cli
from loom_sim.runs.export import ROLLOUT_COLUMNS, ROLLOUT_FAMILIES, TURN_COLUMNS, TURN_FAMILIES

DOCS = Path(__file__).resolve().parent.parent / "docs" / "workbench.md"
CELLS = ROLLOUTS * len(TARGETS)


@pytest.fixture(scope="module")
def matrix(tmp_path_factory) -> Path:
    return make_matrix(tmp_path_factory.mktemp("export"))


def export(*args: str):
    result = CliRunner().invoke(cli, ["export", *args], catch_exceptions=False)
    assert "Traceback" not in result.output, result.output
    return result


def documented(column: str, fixed: dict[str, str], families: dict[str, str]) -> bool:
    if column in fixed:
        return True
    for family in families:
        pattern = (
            "^" + re.escape(family).replace("<scorer>", r"\w+").replace("<dimension>", r"\w+") + "$"
        )
        if re.match(pattern, column):
            return True
    return False


def test_pandas_reads_the_csv_with_the_documented_columns(matrix, tmp_path):
    result = export(str(matrix), "-o", str(tmp_path))
    assert result.exit_code == 0, result.output
    turns = pd.read_csv(tmp_path / "turns.csv")
    rollouts = pd.read_csv(tmp_path / "rollouts.csv")
    assert len(turns) == CELLS * TURNS and len(rollouts) == CELLS
    for column in turns.columns:
        assert documented(column, TURN_COLUMNS, TURN_FAMILIES), column
    for column in rollouts.columns:
        assert documented(column, ROLLOUT_COLUMNS, ROLLOUT_FAMILIES), column
    assert set(turns["target"]) == set(TARGETS)
    assert set(turns["config"]) == {"mania_patient.yaml"}
    assert {"intensity_belief_intensity", "score_reply_length", "score_mirrors"} <= set(
        turns.columns
    )
    # Pandas does the rest: mean per target, straight from the file.
    means = rollouts.groupby("target")["score_mirrors"].mean()
    assert means["scripted/paraphrase"] == 1.0 and means["scripted/varied"] == 0.0


def test_failures_and_not_applicable_turns_are_states_not_zeros(matrix, tmp_path):
    export(str(matrix), "-o", str(tmp_path))
    turns = pd.read_csv(tmp_path / "turns.csv")
    first = turns[turns["turn"] == 0]
    failed = turns[turns["turn"] == FAILS_AT]
    assert set(first["score_reply_length_state"]) == {"not_applicable"}
    assert first["score_reply_length"].isna().all()
    assert set(failed["score_reply_length_state"]) == {"failed"}
    assert set(failed["score_reply_length_error"]) == {"judge reply did not parse"}
    assert failed["score_reply_length"].isna().all()
    scored = turns[~turns["turn"].isin([0, FAILS_AT])]
    assert set(scored["score_reply_length_state"]) == {"scored"}
    assert scored["score_reply_length"].between(0, 1).all()
    rollouts = pd.read_csv(tmp_path / "rollouts.csv")
    assert (rollouts["score_reply_length_n"] == TURNS - 2).all()
    assert (rollouts["score_reply_length_failed"] == 1).all()
    assert (rollouts["score_reply_length_not_applicable"] == 1).all()


def test_every_column_is_documented_in_the_docs():
    text = DOCS.read_text(encoding="utf-8")
    for name in [*TURN_COLUMNS, *TURN_FAMILIES, *ROLLOUT_COLUMNS, *ROLLOUT_FAMILIES]:
        assert f"`{name}`" in text, f"docs/workbench.md does not document {name}"


def test_jsonl_has_the_same_rows_with_nulls(matrix, tmp_path):
    export(str(matrix), "--json", "-o", str(tmp_path))
    export(str(matrix), "-o", str(tmp_path))
    rows = [json.loads(line) for line in (tmp_path / "turns.jsonl").read_text().splitlines()]
    table = pd.read_csv(tmp_path / "turns.csv")
    assert list(rows[0]) == list(table.columns) and len(rows) == len(table)
    assert rows[0]["score_reply_length"] is None  # turn 0: null, not 0
    assert pd.read_json(tmp_path / "rollouts.jsonl", lines=True).shape[0] == CELLS


def test_one_table_to_stdout(matrix):
    result = export(str(matrix), "--rows", "rollouts", "-o", "-")
    assert result.exit_code == 0
    lines = result.stdout.splitlines()
    assert lines[0].startswith("run,cell,config,target,rollout,seed,status")
    assert len(lines) == CELLS + 1


def test_unfinished_cells_are_rows_too(matrix, tmp_path):
    cut = tmp_path / "m"
    shutil.copytree(matrix, cut)
    shutil.rmtree(cut / "mania_patient--scripted-varied" / "rollout_002")
    assert export(str(cut), "-o", str(tmp_path / "out")).exit_code == 0
    rollouts = pd.read_csv(tmp_path / "out" / "rollouts.csv")
    pending = rollouts[rollouts["status"] == "pending"]
    assert list(pending["cell"]) == ["mania_patient--scripted-varied/rollout_002"]
    assert pending["turns"].iloc[0] == 0 and pd.isna(pending["score_mirrors"].iloc[0])
    turns = pd.read_csv(tmp_path / "out" / "turns.csv")
    assert len(turns) == (CELLS - 1) * TURNS
