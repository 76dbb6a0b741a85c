"""Matrix runs: configs × targets × rollouts in one run directory, each arm a single run, every
cell resumable; single runs exactly as before; run.json format 3 reads formats 1 and 2."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner
from workbench_runs import quick_config

from loom_sim.cli import cli
from loom_sim.errors import LoomError
from loom_sim.seeds import derive_seed
from loom_sim.store.matrix_file import MatrixRecord, arm_key, read_any, read_matrix
from loom_sim.store.run_file import FORMAT_VERSION, RunRecord, migrate, read_run
from loom_sim.testing.fake_server import FakeOpenAIServer

ROOT = Path(__file__).parent.parent
EXAMPLES = ROOT / "configs" / "examples"
MANIA = EXAMPLES / "mania_patient.yaml"
DEPRESSED = EXAMPLES / "depressed_patient.yaml"
DATA = Path(__file__).parent / "data"
LOOM_SIM = Path(sys.executable).parent / "loom-sim"
MODELS = ["--persona-model", "scripted/varied", "--judge-model", "scripted/judge"]
TARGETS = ["--target", "scripted/varied", "--target", "scripted/paraphrase"]


def invoke(*args: str):
    result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    assert "Traceback" not in result.output, result.output
    return result


def without_times(transcript: dict) -> dict:
    transcript = {k: v for k, v in transcript.items() if k not in ("started_at", "ended_at")}
    transcript.pop("duration_s", None)
    transcript["turns"] = [
        # envelope ids number on across a resume (unique in the trace), so they are not compared
        {
            k: v
            for k, v in t.items()
            if k not in ("started_at", "ended_at", "timings", "next_envelope_id")
        }
        for t in transcript["turns"]
    ]
    return transcript


def cell_files(run_dir: Path) -> dict[str, dict]:
    return {
        str(p.parent.relative_to(run_dir)): without_times(json.loads(p.read_text()))
        for p in sorted(run_dir.glob("*/rollout_*/transcript.json"))
    }


@pytest.fixture(scope="module")
def matrix(tmp_path_factory) -> Path:
    """2 configs x 2 scripted targets x 2 rollouts, 2 turns, scored and reported."""
    out = tmp_path_factory.mktemp("matrix") / "m"
    result = invoke(
        "run", str(MANIA), str(DEPRESSED), *TARGETS, "--rollouts", "2", "--turns", "2",
        "--seed", "5", "-o", str(out), *MODELS,
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    return out


def test_a_matrix_run_is_a_folder_of_single_runs(matrix):
    record = read_matrix(matrix)
    assert isinstance(record, MatrixRecord) and record.format_version == FORMAT_VERSION
    assert record.configs == ["mania_patient.yaml", "depressed_patient.yaml"]
    assert record.targets == ["scripted/varied", "scripted/paraphrase"]
    assert [a.key for a in record.arms] == [
        "mania_patient--scripted-varied",
        "mania_patient--scripted-paraphrase",
        "depressed_patient--scripted-varied",
        "depressed_patient--scripted-paraphrase",
    ]
    for arm in record.arms:
        single = read_run(matrix / arm.key)  # an ordinary run.json
        assert single.kind == "run" and single.seed == record.seed == 5
        assert single.models["interlocutor"] == arm.target
        assert single.config_name == arm.config and single.rollouts == 2 and single.turns == 2
        for index in range(2):
            transcript = json.loads(
                (matrix / arm.key / f"rollout_{index:03d}" / "transcript.json").read_text()
            )
            assert transcript["status"] == "done" and len(transcript["turns"]) == 2
            assert transcript["scores"] is not None  # scored at the end of the run
        assert (matrix / arm.key / "report.md").is_file()  # each arm's own report


def test_cells_are_a_deterministic_unit_with_their_own_seed(matrix):
    record = read_matrix(matrix)
    cells = record.cells()
    assert len(cells) == 8 and [c.position for c in cells] == list(range(8))
    # Rollout-major: every arm's rollout 0 before any rollout 1.
    assert [c.rollout for c in cells] == [0, 0, 0, 0, 1, 1, 1, 1]
    for cell in cells:
        assert (matrix / cell.id / "transcript.json").is_file()  # the id is its folder
        assert cell.seed == derive_seed(5, "rollout", cell.rollout)
    # The same config and rollout share their seed across targets: the pairs of `compare`.
    first = {(c.config, c.rollout): c.seed for c in cells if c.target == "scripted/varied"}
    other = {(c.config, c.rollout): c.seed for c in cells if c.target == "scripted/paraphrase"}
    assert first == other
    assert record.cells() == cells  # the same order every time


def test_the_persona_starts_the_same_way_against_each_target(matrix):
    a = json.loads(
        (matrix / "mania_patient--scripted-varied/rollout_000/transcript.json").read_text()
    )
    b = json.loads(
        (matrix / "mania_patient--scripted-paraphrase/rollout_000/transcript.json").read_text()
    )
    assert a["turns"][0]["persona"] == b["turns"][0]["persona"]
    assert a["turns"][0]["interlocutor"] != b["turns"][0]["interlocutor"]


def test_the_matrix_report_has_one_column_per_target(matrix):
    report = (matrix / "report.md").read_text()
    header = next(line for line in report.splitlines() if line.startswith("| scorer |"))
    assert "scripted/varied" in header and "scripted/paraphrase" in header
    data = json.loads((matrix / "report.json").read_text())
    assert data["targets"] == ["scripted/varied", "scripted/paraphrase"]
    assert set(data["table"]) == {"mania_patient.yaml", "depressed_patient.yaml", "all configs"}
    cell = data["table"]["mania_patient.yaml"]["scripted/varied"]["scores"]["persona_adherence"]
    assert cell["n"] == 2 and len(cell["ci95"]) == 2
    assert (matrix / "report.html").read_text().count("<svg") >= 6  # per-turn curves


def test_single_commands_read_an_arm_and_refuse_the_matrix_plainly(matrix):
    arm = matrix / "mania_patient--scripted-varied"
    assert invoke("view", str(arm / "rollout_001")).exit_code == 0
    assert invoke("report", str(arm)).exit_code == 0
    assert invoke("trace", str(arm / "rollout_000")).exit_code == 0
    with pytest.raises(LoomError, match="matrix run of 4 arms; give one of its arms"):
        read_run(matrix)
    viewed = invoke("view", str(matrix))
    assert viewed.exit_code == 1 and "is a matrix run; name one of its cells" in viewed.stderr


def test_score_and_report_walk_every_arm(matrix, tmp_path):
    copy = tmp_path / "m"
    shutil.copytree(matrix, copy)
    scored = invoke("score", str(copy), "--force")
    assert scored.exit_code == 0, scored.output
    assert scored.output.count("scored 4 turns") == 4  # each arm: 2 rollouts x 2 turns
    reported = invoke("report", str(copy))
    assert reported.exit_code == 0 and str(copy / "report.html") in reported.output


def test_a_single_config_and_target_run_is_laid_out_as_before(tmp_path):
    out = tmp_path / "run"
    result = invoke(
        "run", str(MANIA), "--target", "scripted/varied", "--turns", "2", "-o", str(out), *MODELS
    )
    assert result.exit_code == 0, result.output
    assert sorted(p.name for p in out.iterdir()) == [
        ".loom-sim.lock", "report.html", "report.json", "report.md", "rollout_000", "run.json",
    ]  # fmt: skip
    record = read_any(out)
    assert isinstance(record, RunRecord) and record.kind == "run"
    assert record.format_version == 3


def test_a_matrix_that_cannot_vary_its_target_is_refused(tmp_path):
    result = invoke(
        "run", str(MANIA), *TARGETS, "--adversary", "contradiction", "--turns", "1",
        "-o", str(tmp_path / "m"), *MODELS,
    )  # fmt: skip
    assert result.exit_code == 1
    assert "do not call the model under evaluation" in result.stderr
    assert not (tmp_path / "m" / "run.json").exists()


def test_arm_keys_are_plain_unique_folder_names():
    taken: set[str] = set()
    assert arm_key("mania", "openai/gpt-4.1", taken) == "mania--openai-gpt-4.1"
    assert arm_key("mania", "openai/gpt-4.1", taken) == "mania--openai-gpt-4.1-2"
    assert arm_key("../x", "local//a b", taken) == "x--local-a-b"


# ─── resuming, cell by cell ─────────────────────────────────────────────────


def test_resume_finishes_each_cell_as_an_uninterrupted_run_would(matrix, tmp_path):
    """A copy of the matrix cut as a kill leaves it: one cell torn after its first turn, one
    never started; --resume makes exactly what the uninterrupted run made."""
    cut = tmp_path / "m"
    shutil.copytree(matrix, cut)
    torn = cut / "depressed_patient--scripted-paraphrase" / "rollout_001"
    (torn / "transcript.json").unlink()
    lines = (torn / "turns.jsonl").read_bytes().splitlines(keepends=True)
    (torn / "turns.jsonl").write_bytes(lines[0] + lines[1][:40])  # died mid-write
    shutil.rmtree(cut / "mania_patient--scripted-varied" / "rollout_001")
    listed = invoke("runs", str(tmp_path))
    assert "partial" in listed.output
    resumed = invoke("run", "--resume", str(cut), "--no-score")
    assert resumed.exit_code == 0, resumed.output
    ran = [line for line in resumed.output.splitlines() if ": done," in line]
    assert len(ran) == 8
    for cell in (
        "depressed_patient--scripted-paraphrase/rollout_001",
        "mania_patient--scripted-varied/rollout_001",
    ):
        again = without_times(json.loads((cut / cell / "transcript.json").read_text()))
        before = without_times(json.loads((matrix / cell / "transcript.json").read_text()))
        again.pop("scores"), before.pop("scores")
        for turn in before["turns"]:
            turn["scores"] = {}
        assert again == before


def test_resume_refuses_a_new_target_for_a_matrix(matrix):
    result = invoke("run", "--resume", str(matrix), "--target", "scripted/echo")
    assert result.exit_code == 1 and "leave out --target" in result.stderr


@pytest.mark.slow
def test_kill_9_then_resume_completes_every_cell(tmp_path):
    turns = 6
    out = tmp_path / "m"
    with FakeOpenAIServer(latency=0.03) as server:
        argv = [
            str(LOOM_SIM), "run", str(MANIA), "--target", "openai/a", "--target", "openai/b",
            "--turns", str(turns), "--rollouts", "2", "-o", str(out),
            "--persona-model", "openai/persona", "--judge-model", "scripted/echo",
            "--base-url", server.base_url, "--seed", "8", "--no-score",
        ]  # fmt: skip
        proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        first = out / "mania_patient--openai-a" / "rollout_000" / "turns.jsonl"
        deadline = time.monotonic() + 60
        while not first.exists() or len(first.read_bytes().splitlines()) < 2:
            assert proc.poll() is None and time.monotonic() < deadline
            time.sleep(0.01)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        cells = read_matrix(out).cells()
        counts = [
            len((out / c.id / "turns.jsonl").read_bytes().splitlines())
            if (out / c.id / "turns.jsonl").exists()
            else 0
            for c in cells
        ]
        assert min(counts) < turns  # it really was interrupted
        resumed = subprocess.run(
            [str(LOOM_SIM), "run", "--resume", str(out), "--no-score"],
            capture_output=True, text=True, timeout=120, check=False,
        )  # fmt: skip
    assert resumed.returncode == 0, resumed.stderr
    for cell in cells:
        transcript = json.loads((out / cell.id / "transcript.json").read_text())
        assert transcript["status"] == "done"
        assert [t["turn"] for t in transcript["turns"]] == list(range(turns))


# ─── suites ─────────────────────────────────────────────────────────────────


def test_a_suite_file_names_the_same_matrix(tmp_path, matrix):
    (tmp_path / "configs").mkdir()
    shutil.copy(DEPRESSED, tmp_path / "configs" / "depressed_patient.yaml")
    suite = tmp_path / "suite.yaml"
    suite.write_text(
        "suite: pair\n"
        "configs: [mania_patient, configs/depressed_patient.yaml]\n"
        "targets: [scripted/varied, scripted/paraphrase]\n"
        "rollouts: 2\nturns: 2\nseed: 5\n"
        "models: {persona: scripted/varied, judge: scripted/judge}\n"
    )
    out = tmp_path / "from-suite"
    result = invoke("run", str(suite), "-o", str(out), "--no-score")
    assert result.exit_code == 0, result.output
    record = read_matrix(out)
    assert record.suite == str(suite) and len(record.arms) == 4
    ours, theirs = cell_files(out), cell_files(matrix)
    assert set(ours) == set(theirs)
    for cell, transcript in ours.items():  # the same conversations as the command line made
        expected = dict(theirs[cell], scores=None)
        expected["turns"] = [dict(t, scores={}) for t in expected["turns"]]
        assert transcript == expected


def test_flags_win_over_the_suite_and_its_errors_are_located(tmp_path):
    suite = tmp_path / "suite.yaml"
    suite.write_text(
        "configs: [mania_patient]\ntargets: [scripted/varied, scripted/echo]\n"
        "rollouts: 3\nturns: 4\nseed: 1\n"
        "models: {persona: scripted/varied, judge: scripted/judge}\n"
    )
    out = tmp_path / "m"
    result = invoke(
        "run", str(suite), "--rollouts", "1", "--turns", "1", "-o", str(out), "--no-score"
    )
    assert result.exit_code == 0, result.output
    record = read_matrix(out)
    assert record.rollouts == 1 and read_run(out / record.arms[0].key).turns == 1
    bad = tmp_path / "bad.yaml"
    bad.write_text("configs: [mania_patient]\ntargets: [scripted/varied]\nrolouts: 2\n")
    result = invoke("run", str(bad))
    assert result.exit_code == 1 and f"{bad}:3" in result.stderr and "rolouts" in result.stderr


# ─── run.json formats ───────────────────────────────────────────────────────


def test_a_version_2_run_resumes_as_it_would_have(tmp_path):
    """tests/data/run_v2: a real format-2 run (made before matrix runs) cut after turn 2."""
    run = tmp_path / "run_v2"
    shutil.copytree(DATA / "run_v2", run)
    assert json.loads((run / "run.json").read_text())["format_version"] == 2
    record = read_run(run)
    assert record.format_version == 3 and record.kind == "run"
    assert migrate({"format_version": 2})["kind"] == "run"
    resumed = invoke("run", "--resume", str(run))
    assert resumed.exit_code == 0, resumed.output
    transcript = json.loads((run / "rollout_000" / "transcript.json").read_text())
    third = transcript["turns"][2]
    expected = json.loads((DATA / "run_v2_expected.json").read_text())
    assert {k: third[k] for k in ("persona", "interlocutor")} == expected["turn_2"]
    assert invoke("view", str(run)).exit_code == 0
    assert invoke("export", str(run)).exit_code == 0


def test_one_budget_is_shared_by_every_cell(tmp_path):
    """The matrix has one budget, not one per arm. A first turn costs c; the budget is 1.5 c.
    One cell at a time, in the matrix's order (arm A, arm B, arm A, arm B): the first cell
    spends c, goes on, and crosses the budget after its second turn; every later cell makes
    the one turn a rollout always makes and stops. Budgets per arm would let arm B's first
    cell make two turns too."""
    price = "100000/100000"  # USD per million tokens
    common = [
        "--seed", "1", "--persona-model", "openai/persona", "--judge-model", "scripted/judge",
        "--price", f"openai/a={price}", "--price", f"openai/b={price}",
        "--price", f"openai/persona={price}", "--no-score",
    ]  # fmt: skip
    with FakeOpenAIServer() as server:
        first = tmp_path / "first"
        made = invoke(
            "run", str(MANIA), "--target", "openai/a", "--turns", "1", "-o", str(first),
            "--base-url", server.base_url, *common,
        )  # fmt: skip
        assert made.exit_code == 0, made.output
        turn = json.loads((first / "rollout_000" / "turns.jsonl").read_text())
        cost = sum(u["cost_usd"] for u in turn["usage"].values())
        out = tmp_path / "m"
        result = invoke(
            "run", str(MANIA), "--target", "openai/a", "--target", "openai/b",
            "--rollouts", "2", "--turns", "4", "--max-cost", str(1.5 * cost),
            "--concurrency", "1", "-o", str(out), "--base-url", server.base_url, *common,
        )  # fmt: skip
    assert result.exit_code == 0, result.output
    transcripts = [
        json.loads((out / cell.id / "transcript.json").read_text())
        for cell in read_matrix(out).cells()
    ]
    assert [t["rollout"] for t in transcripts] == ["rollout_000", "rollout_000"] + [
        "rollout_001"
    ] * 2
    assert {t["stop_reason"] for t in transcripts} == {"cost_budget"}
    assert [len(t["turns"]) for t in transcripts] == [2, 1, 1, 1]


@pytest.mark.slow
def test_the_embedded_model_is_a_target_like_any_other(tmp_path):
    """The done-when matrix, cut to what a test can afford: the embedded SmolLM2 beside a
    scripted target, one turn each; the report and compare put them side by side."""
    out = tmp_path / "m"
    result = invoke(
        "run", str(quick_config(tmp_path)), "--target", "scripted/varied",
        "--target", "local/smollm2", "--turns", "1", "--seed", "3", "-o", str(out), *MODELS,
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    embedded = json.loads(
        (out / "mania_patient--local-smollm2" / "rollout_000" / "transcript.json").read_text()
    )
    assert embedded["status"] == "done" and embedded["models"]["interlocutor"] == "local/smollm2"
    assert embedded["turns"][0]["interlocutor"].strip()  # the model really answered
    header = next(
        line for line in (out / "report.md").read_text().splitlines() if line.startswith("| scorer")
    )
    assert "scripted/varied" in header and "local/smollm2" in header
    compared = invoke("compare", str(out), "--json")
    assert json.loads(compared.stdout)["targets"] == ["scripted/varied", "local/smollm2"]
