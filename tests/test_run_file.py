"""run.json as one typed record: written once, read by resume, score, report and view; the
previous format (version 1, written by loom-sim 0.1 before responders were plug-ins) still
loads.

``tests/data/run_v1`` is a real version-1 run — three turns of the mania example with both
adversaries and scripted models, made by the earlier loom-sim — cut to its first two turns,
as a run killed after turn 2 would be. ``run_v1_expected.json`` holds the third turn that
earlier version made.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import msgspec
import pytest
from click.testing import CliRunner

from loom_sim.cli import cli
from loom_sim.errors import LoomError
from loom_sim.store.run_file import FORMAT_VERSION, RunRecord, read_run

DATA = Path(__file__).parent / "data"


def invoke(*args: str):
    result = CliRunner().invoke(cli, list(args))
    assert "Traceback" not in result.output, result.output
    return result


@pytest.fixture
def v1_run(tmp_path) -> Path:
    run = tmp_path / "run_v1"
    shutil.copytree(DATA / "run_v1", run)
    return run


def test_a_version_1_record_is_read_as_version_2(v1_run):
    record = read_run(v1_run)
    assert isinstance(record, RunRecord)
    assert record.format_version == FORMAT_VERSION
    assert record.responders == ["contradiction", "helpfulness"]
    assert set(record.settings) == {"contradiction", "helpfulness"}
    assert record.loom_config.persona_name == "Marcus Chen"


def test_a_version_1_run_resumes_scores_reports_and_views(v1_run):
    resumed = invoke("run", "--resume", str(v1_run))
    assert resumed.exit_code == 0, resumed.output
    transcript = json.loads((v1_run / "rollout_000" / "transcript.json").read_text())
    assert [t["turn"] for t in transcript["turns"]] == [0, 1, 2]
    expected = json.loads((DATA / "run_v1_expected.json").read_text())
    third = transcript["turns"][2]
    # The earlier version's third turn, made again by this one from the same records.
    assert {k: third[k] for k in ("persona", "interlocutor")} == expected["turn_2"]
    assert third["adversary"]["tactic"] == expected["adversary"]["tactic"]
    assert third["adversary"]["adversary"] == "contradiction"
    assert (v1_run / "report.json").is_file()  # resumed runs are scored and reported
    assert transcript["scores"]["aggregates"]["fidelity"]["n"] >= 1
    assert invoke("view", str(v1_run)).exit_code == 0
    assert invoke("report", str(v1_run)).exit_code == 0


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"{not json", "not JSON"),
        (b"[1, 2]", "a JSON object was expected"),
        (b'{"format_version": 99}', "newer than this loom-sim reads"),
        (b'{"format_version": 2, "seed": "x"}', "not a run file this loom-sim can read"),
    ],
)
def test_an_unusable_run_file_is_one_plain_sentence(tmp_path, content, message):
    (tmp_path / "run.json").write_bytes(content)
    with pytest.raises(LoomError, match=message):
        read_run(tmp_path)
    result = invoke("report", str(tmp_path))
    assert result.exit_code != 0 and message in result.output


def test_the_record_round_trips(v1_run):
    record = read_run(v1_run)
    again = msgspec.json.decode(msgspec.json.encode(record.data()), type=RunRecord)
    assert again.data() == record.data()


def test_a_run_file_from_before_faults_loads_and_takes_them(v1_run):
    from loom_sim.models.retry import AttemptFailed, Faults

    assert "faults" not in json.loads((v1_run / "run.json").read_text())
    record = read_run(v1_run)
    assert record.faults == {}
    faults = Faults()
    faults.retry("openai/x", AttemptFailed("HTTP 429 (rate limited)"))
    faults.retry("openai/x", AttemptFailed("no answer within 5 s", kind="timeout"))
    faults.give_up("openai/x")
    record.add_faults(faults)
    record.add_faults(faults)  # a second session adds up
    data = record.data()["faults"]["openai/x"]
    assert data == {"retried": {"HTTP 429": 2, "timeout": 2}, "gave_up": 2}
