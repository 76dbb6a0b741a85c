"""Typed, versioned records: probe.json and report.json are read through their structs, files
earlier loom-sims wrote are migrated, and a newer or damaged file is refused in one sentence
naming it (the shared machinery in loom_sim/core/records.py, tested on its own first)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import msgspec
import pytest
from click.testing import CliRunner
from probe_support import FACTUAL

from loom_sim.cli import cli
from loom_sim.core.records import RecordFormat
from loom_sim.debate.files import PLAN_FILE, SUMMARY_FILE, DebateFiles
from loom_sim.debate.report import html, load_debate, markdown
from loom_sim.debate.stop import DebateStopReason
from loom_sim.errors import LoomError
from loom_sim.harness.plan import HARNESS_FILE, HARNESS_FORMAT
from loom_sim.harness.records import SESSION_FILE
from loom_sim.harness.session_file import SESSION_FORMAT, given, read_session
from loom_sim.probe.config import load_probe_config
from loom_sim.probe.plan import read_probe_file
from loom_sim.probe.probe_file import PROBE_FILE, ProbeFileRecord
from loom_sim.rollout.report import read_report, report_json, report_record
from loom_sim.rollout.report.record import REPORT_FILE
from loom_sim.store.artifacts import config_hash, write_json

RECORDS = Path(__file__).parent / "data" / "records"


def one_sentence(err: pytest.ExceptionInfo[LoomError], path: Path) -> str:
    message = str(err.value)
    assert "\n" not in message and "Traceback" not in message
    assert str(path) in message
    return message


# ─── the shared machinery ───────────────────────────────────────────────────


class Point(msgspec.Struct, kw_only=True):
    format_version: int = 3
    x: int
    y: int
    label: str


def _v1_to_v2(data: dict) -> dict:  # v1 had "pos": [x, y]
    data["x"], data["y"] = data.pop("pos")
    return data


def _v2_to_v3(data: dict) -> dict:  # v3 added a label
    data.setdefault("label", "")
    return data


POINT = RecordFormat(Point, noun="point file", version=3, migrations={1: _v1_to_v2, 2: _v2_to_v3})


def test_a_record_of_each_earlier_version_is_migrated_step_by_step(tmp_path):
    path = tmp_path / "point.json"
    for written in ({"pos": [1, 2]}, {"format_version": 2, "x": 1, "y": 2}):
        path.write_text(json.dumps(written))
        assert POINT.read(path) == Point(x=1, y=2, label="")
    path.write_text(json.dumps({"format_version": 3, "x": 1, "y": 2, "label": "a"}))
    assert POINT.read(path) == Point(x=1, y=2, label="a")


def test_a_newer_version_a_damaged_file_and_a_folder_are_one_sentence(tmp_path):
    path = tmp_path / "point.json"
    path.write_text(json.dumps({"format_version": 4, "x": 1}))
    with pytest.raises(LoomError) as err:
        POINT.read(path)
    assert "point file format 4 is newer than this loom-sim reads (3)" in one_sentence(err, path)
    for damaged in ('{"format_version": 3, "x": 1, "y"', "[1, 2]", '{"x": "one", "y": 2}'):
        path.write_text(damaged)
        with pytest.raises(LoomError) as err:
            POINT.read(path)
        one_sentence(err, path)
    path.write_text(json.dumps({"format_version": "three"}))
    with pytest.raises(LoomError) as err:
        POINT.read(path)
    assert "edited or damaged" in one_sentence(err, path)
    with pytest.raises(LoomError) as err:
        POINT.read(tmp_path)
    assert "a folder, not a file" in one_sentence(err, tmp_path)


def test_a_format_missing_a_migration_step_is_refused_when_defined():
    with pytest.raises(ValueError, match="no migration from version 2"):
        RecordFormat(Point, noun="point file", version=3, migrations={1: _v1_to_v2})


# ─── probe.json ─────────────────────────────────────────────────────────────


def test_probe_json_as_written_today_reads_and_writes_back_the_same_bytes(tmp_path):
    sample = RECORDS / "probe_v1" / PROBE_FILE
    record = read_probe_file(sample.parent)
    assert isinstance(record, ProbeFileRecord)
    assert record.seed == 4 and record.rubric.id == "probe_contradiction"
    assert record.modes["bandit"].bandit_state.path == "probe-out-state.json"
    assert record.modes["static"].bandit_state is msgspec.UNSET  # not a bandit: not written
    assert record.header.command[-1] == "http://127.0.0.1:9/v1"
    write_json(tmp_path / PROBE_FILE, record)
    assert (tmp_path / PROBE_FILE).read_bytes() == sample.read_bytes()
    assert read_probe_file(tmp_path) == record


def test_probe_json_from_before_the_plan_header_gets_one_from_its_own_fields(tmp_path):
    shutil.copy(RECORDS / "probe_v1_before_header" / PROBE_FILE, tmp_path / PROBE_FILE)
    assert "header" not in json.loads((tmp_path / PROBE_FILE).read_text())
    record = read_probe_file(tmp_path)
    header = record.header
    assert header.seed == record.seed == 4
    assert header.created_at == record.created_at
    assert header.command == record.modes["static"].argv  # redacted when it was written
    assert "pw" not in " ".join(header.command)
    assert header.versions == record.versions
    assert header.rubric_versions == {record.rubric.id: record.rubric.version}
    write_json(tmp_path / PROBE_FILE, record)  # written back in today's shape
    assert read_probe_file(tmp_path) == record


def test_probe_json_newer_damaged_or_not_a_probe_is_one_sentence(tmp_path):
    data = json.loads((RECORDS / "probe_v1" / PROBE_FILE).read_text())
    path = tmp_path / PROBE_FILE
    path.write_text(json.dumps({**data, "format_version": 2}))
    with pytest.raises(LoomError) as err:
        read_probe_file(tmp_path)
    assert "probe file format 2 is newer than this loom-sim reads (1)" in one_sentence(err, path)
    path.write_text(json.dumps(data)[:500])
    with pytest.raises(LoomError) as err:
        read_probe_file(tmp_path)
    one_sentence(err, path)
    path.write_text(json.dumps({**data, "seed": "four"}))
    with pytest.raises(LoomError) as err:
        read_probe_file(tmp_path)
    assert "$.seed" in one_sentence(err, path)
    path.write_text(json.dumps({**data, "format": "something-else"}))
    with pytest.raises(LoomError) as err:
        read_probe_file(tmp_path)
    assert "not a loom-sim probe file" in one_sentence(err, path)


def test_a_mode_added_to_a_probe_an_earlier_loom_sim_planned(tmp_path):
    """The migration in the real flow: ``probe -o`` into a folder whose probe.json has no
    header runs the new mode and writes the file back, header included, keeping its seed."""
    out = tmp_path / "probe-old"
    out.mkdir()
    old = json.loads((RECORDS / "probe_v1_before_header" / PROBE_FILE).read_text())
    config = load_probe_config(FACTUAL).model_dump(mode="json")
    old["config_sha256"] = config_hash(config)  # the same probe as today's config file
    (out / PROBE_FILE).write_text(json.dumps(old, indent=2))
    args = [str(FACTUAL), "--mode", "static", "--runs", "3", "-o", str(out)]
    stand_ins = ["--target", "scripted/probe-target", "--judge-model", "scripted/probe-judge"]
    result = CliRunner().invoke(cli, ["probe", *args, *stand_ins], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    record = read_probe_file(out)
    assert record.seed == old["seed"] and record.header.seed == old["seed"]
    assert record.header.created_at == old["created_at"]  # made from the file, not now
    assert record.modes["static"].status == "done" and record.modes["static"].completed == 3
    assert record.modes["adaptive"].status == "planned"  # the modes not run are kept
    assert "header" in json.loads((out / PROBE_FILE).read_text())


# ─── report.json ────────────────────────────────────────────────────────────


def test_report_json_as_written_today_reads_and_writes_back_the_same_bytes():
    sample = RECORDS / "report_v1" / REPORT_FILE
    record = read_report(sample)
    assert record.report_version == "1" and record.header is not None
    assert record.run.turns == 4 and len(record.rollouts) == record.run.rollouts == 2
    assert record.rollouts[0].conformance is not None and record.target is not None
    assert [a.role for a in record.answering] == ["interlocutor"]
    assert report_json(record.data()) == sample.read_text(encoding="utf-8")
    assert report_record(json.loads(sample.read_text())) == record


def test_report_json_an_earlier_loom_sim_wrote_is_migrated():
    sample = RECORDS / "report_v1_early" / REPORT_FILE
    raw = json.loads(sample.read_text())
    assert "answering" not in raw and "header" not in raw and "target" not in raw
    record = read_report(sample.parent)  # a folder: the report.json in it
    assert record.header is None and record.target is None
    assert [(a.role, a.spec) for a in record.answering] == [("interlocutor", "scripted/varied")]
    assert all(r.conformance is None for r in record.rollouts)
    today = read_report(RECORDS / "report_v1" / REPORT_FILE).aggregates  # the same run
    assert {name: record.aggregates[name] for name in today} == today


def test_report_json_newer_or_damaged_is_one_sentence(tmp_path):
    data = json.loads((RECORDS / "report_v1" / REPORT_FILE).read_text())
    path = tmp_path / REPORT_FILE
    path.write_text(json.dumps({**data, "report_version": "2"}))
    with pytest.raises(LoomError) as err:
        read_report(path)
    assert "report file format 2 is newer than this loom-sim reads (1)" in one_sentence(err, path)
    path.write_text(json.dumps(data)[:1000])
    with pytest.raises(LoomError) as err:
        read_report(path)
    one_sentence(err, path)
    path.write_text(json.dumps({**data, "rollouts": [{"rollout": 3}]}))
    with pytest.raises(LoomError) as err:
        read_report(path)
    assert "$.rollouts[0]" in one_sentence(err, path)


def test_report_data_that_does_not_fit_the_format_is_refused_before_writing():
    data = json.loads((RECORDS / "report_v1" / REPORT_FILE).read_text())
    with pytest.raises(LoomError, match=r"does not fit report.json's format .*\$\.statuses"):
        report_record({**data, "statuses": {"done": "two"}})


# ─── the harness: harness.json and session.json ─────────────────────────────


def test_harness_json_and_session_json_as_written_today_read_and_write_back(tmp_path):
    run = RECORDS / "harness_v1"
    plan = HARNESS_FORMAT.read(run / HARNESS_FILE)
    assert plan.pack_name == "studio_benchmarks" and plan.seed == 1
    assert plan.sessions[0].name == "drop_lookbook_rescue-1"
    write_json(tmp_path / HARNESS_FILE, plan)
    assert (tmp_path / HARNESS_FILE).read_bytes() == (run / HARNESS_FILE).read_bytes()
    sample = run / "drop_lookbook_rescue-1" / SESSION_FILE
    session = SESSION_FORMAT.read(sample)
    assert session.status == "done" and session.seeds.run == 1
    assert session.pack.sha256 == plan.pack_sha256
    assert given(session.stop_reason) is not None and given(session.error) is None
    write_json(tmp_path / SESSION_FILE, session)
    assert (tmp_path / SESSION_FILE).read_bytes() == sample.read_bytes()


def test_a_running_session_json_writes_only_what_happened(tmp_path):
    data = json.loads(
        (RECORDS / "harness_v1" / "drop_lookbook_rescue-1" / SESSION_FILE).read_text()
    )
    ended = ("stop_reason", "stop_detail", "error", "ended_at", "elapsed_s")
    running = {**{k: v for k, v in data.items() if k not in ended}, "status": "running"}
    (tmp_path / SESSION_FILE).write_text(json.dumps(running))
    session = read_session(tmp_path / SESSION_FILE)
    assert session is not None and session.error is msgspec.UNSET
    assert msgspec.to_builtins(session) == running  # no null where nothing happened yet


def test_harness_records_newer_or_damaged_are_one_sentence(tmp_path):
    run = RECORDS / "harness_v1"
    for name, source, noun in (
        (HARNESS_FILE, run / HARNESS_FILE, "harness file"),
        (SESSION_FILE, run / "drop_lookbook_rescue-1" / SESSION_FILE, "session file"),
    ):
        fmt = HARNESS_FORMAT if name == HARNESS_FILE else SESSION_FORMAT
        data = json.loads(source.read_text())
        path = tmp_path / name
        path.write_text(json.dumps({**data, "format_version": 2}))
        with pytest.raises(LoomError) as err:
            fmt.read(path)
        assert f"{noun} format 2 is newer than this loom-sim reads (1)" in one_sentence(err, path)
        path.write_text(json.dumps(data)[:700])
        with pytest.raises(LoomError) as err:
            fmt.read(path)
        one_sentence(err, path)
    assert read_session(tmp_path / SESSION_FILE) is None  # a resumed run starts it afresh


# ─── debate.json ────────────────────────────────────────────────────────────


def test_debate_json_as_written_today_reads_and_writes_back(tmp_path):
    record = DebateFiles(RECORDS / "debate_v1").read_plan()
    assert record.seed == 4 and record.header is not None
    DebateFiles(tmp_path).write_plan(record)
    sample = (RECORDS / "debate_v1" / PLAN_FILE).read_bytes()
    assert (tmp_path / PLAN_FILE).read_bytes() == sample


def test_debate_json_without_the_fields_added_later_still_reads(tmp_path):
    data = json.loads((RECORDS / "debate_v1" / PLAN_FILE).read_text())
    for key in ("command", "base_url", "created", "header"):
        data.pop(key)
    (tmp_path / PLAN_FILE).write_text(json.dumps(data))
    record = DebateFiles(tmp_path).read_plan()
    assert record.header is None and record.command == [] and record.topic == data["topic"]


def test_debate_json_newer_damaged_or_missing_is_one_sentence(tmp_path):
    data = json.loads((RECORDS / "debate_v1" / PLAN_FILE).read_text())
    path = tmp_path / PLAN_FILE
    files = DebateFiles(tmp_path)
    with pytest.raises(LoomError, match="not a debate directory"):
        files.read_plan()
    path.write_text(json.dumps({**data, "format_version": 2}))
    with pytest.raises(LoomError) as err:
        files.read_plan()
    assert "debate file format 2 is newer than this loom-sim reads (1)" in one_sentence(err, path)
    path.write_text(json.dumps({**data, "personas": "two"}))
    with pytest.raises(LoomError) as err:
        files.read_plan()
    assert "$.personas" in one_sentence(err, path)


# ─── the debate's summary.json ──────────────────────────────────────────────


def test_a_summary_json_from_before_the_typed_stop_reason_reads_as_key_and_sentence(tmp_path):
    """An earlier loom-sim wrote the sentence in ``stop_reason``: it becomes the detail, the key
    is read from it, the report says the same words, and it writes back in today's format."""
    shutil.copytree(RECORDS / "debate_v1", tmp_path / "d")
    old = json.loads((tmp_path / "d" / SUMMARY_FILE).read_text())
    assert old["stop_reason"] == "budget: 6 messages" and "format_version" not in old
    files = DebateFiles(tmp_path / "d")
    summary = files.summary()
    assert summary is not None and summary.status == "done" and summary.said == 6
    assert summary.stop_reason is DebateStopReason.MAX_MESSAGES
    assert summary.stop_detail == "budget: 6 messages"
    view = load_debate(tmp_path / "d")
    assert "Status **done** (budget: 6 messages) · 6 messages" in markdown(view)
    assert "status <b>done</b> (budget: 6 messages)" in html(view)
    files.write_summary(summary)
    written = json.loads((tmp_path / "d" / SUMMARY_FILE).read_text())
    assert (written["format_version"], written["stop_reason"], written["stop_detail"]) == (
        2,
        "max_messages",
        "budget: 6 messages",
    )
    assert files.summary() == summary


@pytest.mark.parametrize(
    ("sentence", "reason"),
    [
        ("6 failed turns in a row", DebateStopReason.CONSECUTIVE_FAILURES),
        ("budget: 12 messages", DebateStopReason.MAX_MESSAGES),
        ("the moderator left", None),  # no rule writes it: the words are kept, the key unknown
        (None, None),  # a debate that ended in error had none
    ],
)
def test_each_old_stop_sentence_reads_as_its_reason(tmp_path, sentence, reason):
    data = json.loads((RECORDS / "debate_v1" / SUMMARY_FILE).read_text())
    (tmp_path / SUMMARY_FILE).write_text(json.dumps({**data, "stop_reason": sentence}))
    summary = DebateFiles(tmp_path).summary()
    assert summary is not None
    assert (summary.stop_reason, summary.stop_detail) == (reason, sentence)


def test_a_summary_json_newer_or_damaged_is_one_sentence(tmp_path):
    data = json.loads((RECORDS / "debate_v1" / SUMMARY_FILE).read_text())
    path = tmp_path / SUMMARY_FILE
    for written, said in (
        ({**data, "format_version": 3}, "debate summary format 3 is newer than this loom-sim"),
        ({**data, "format_version": 2, "stop_reason": "bored"}, "not a debate summary"),
    ):
        path.write_text(json.dumps(written))
        with pytest.raises(LoomError) as err:
            DebateFiles(tmp_path).summary()
        assert said in one_sentence(err, path)
