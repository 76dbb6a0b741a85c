"""``loom-sim view``: every turn with its annotations; --turns slices; the pager on terminals."""

from __future__ import annotations

import contextlib
import re
from pathlib import Path

import pytest
from click.testing import CliRunner
from rich.console import Console

from loom_sim.cli import cli
from loom_sim.cli.view import parse_turns
from loom_sim.store.artifacts import RolloutFiles, rollout_dir
from tests.scored_runs import make_run

WIDE = {"COLUMNS": "300"}  # no wrapping inside the texts the tests look for


def view(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, ["view", *args], env=WIDE)
    return result.exit_code, result.output


def shown_turns(output: str) -> list[int]:
    return [int(n) for n in re.findall(r"^\s*turn (\d+) · ", output, flags=re.M)]


@pytest.fixture(scope="module")
def fifty(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("view")
    return rollout_dir(make_run(root, rollouts=1, turns=50, texts={(0, 7): "[bold red]x[/] ok"}), 0)


def test_every_turn_with_its_annotations(fifty):
    code, out = view(str(fifty))
    assert code == 0, out
    transcript = RolloutFiles(fifty).transcript()
    assert shown_turns(out) == list(range(1, 51))  # people count turns from 1
    blocks = re.split(r"^\s*turn \d+ · ", out, flags=re.M)[1:]
    for record, block in zip(transcript.turns, blocks, strict=True):
        assert block.startswith(f"{record.phase} · injection {record.injection}")
        assert record.persona in block and record.interlocutor in block
        for dim, value in record.intensities.items():
            assert f"{dim} {value:.2f}" in block
        if record.reminder:
            assert "reminder" in block
        if record.emergency:
            assert "EMERGENCY" in block and record.emergency in block
        for draft in record.rejected:
            assert f"rejected #{draft.attempt}" in block and draft.text in block
        for event in record.monitor_events:
            assert f"{event.monitor} " in block and event.action in block
        for name, score in record.scores.items():
            shown = "–" if score.value is None else f"{score.value:.2f}"
            assert f"{name} {shown}" in block
            if score.error:
                assert score.error in block
    # the header
    assert "Marcus Chen" in out and "status done" in out and "stop max_turns" in out
    assert "interlocutor openai/gpt-4o" in out and "judge openai/gpt-4.1" in out
    # model output is shown, never interpreted as markup
    assert "[bold red]x[/] ok" in out


def test_a_turn_slice_shows_only_those_turns(fifty):
    code, out = view(str(fifty / "transcript.json"), "--turns", "11:12")
    assert code == 0, out
    assert shown_turns(out) == [11, 12]  # as numbered on screen, both ends included
    assert "Reply 10:" in out and "Reply 11:" in out  # the records' own 0-based indices
    assert "Reply 9:" not in out and "Reply 12:" not in out
    assert "50 turns, showing 11–12" in out


@pytest.mark.parametrize(
    ("turns", "expected"),
    [
        ("45:", list(range(45, 51))),
        (":3", [1, 2, 3]),
        ("-2:", [49, 50]),
        ("7", [7]),
        ("-1", [50]),
        ("60:70", []),
    ],
)
def test_slices_count_turns_from_one(fifty, turns, expected):
    code, out = view(str(fifty), "--turns", turns)
    assert code == 0, out
    assert shown_turns(out) == expected


@pytest.mark.parametrize("bad", ["1-5", "a:b", "1:2:3", "", "0", "0:4", "3:-1"])
def test_bad_slice_is_one_clear_line(fifty, bad):
    code, out = view(str(fifty), "--turns", bad)
    assert code == 1
    assert out.strip().splitlines() == [
        f"--turns {bad!r}: write FIRST:LAST (turns counted from 1, both included), "
        "e.g. 10:20, 5: or :5"
    ]


def test_parse_turns():
    assert parse_turns(None) == slice(None)
    assert parse_turns("10:20") == slice(9, 20)
    assert parse_turns(" 5 : ") == slice(4, None)
    assert parse_turns("-1") == slice(-1, None)
    assert parse_turns("12") == slice(11, 12)


def test_unscored_error_and_interrupted_rollouts(tmp_path):
    run_dir = make_run(tmp_path, rollouts=2, turns=8, scored=False, error_rollout=1)
    code, out = view(str(rollout_dir(run_dir, 1)))
    assert code == 0, out
    assert "status error" in out and "HTTP 500" in out and "not scored" in out
    assert shown_turns(out) == [1, 2, 3, 4]
    # a rollout with only turns.jsonl (running, or killed)
    first = rollout_dir(run_dir, 0)
    records = RolloutFiles(first).transcript().turns
    (first / "transcript.json").unlink()
    log = RolloutFiles(first).turns
    for record in records[:2]:
        log.append(record)
    log.close()
    code, out = view(str(first))
    assert code == 0, out
    assert "status incomplete" in out and shown_turns(out) == [1, 2]


def test_embedded_judge_notice(tmp_path):
    run_dir = make_run(tmp_path, rollouts=1, turns=3, judge="local/smollm2")
    code, out = view(str(run_dir))  # a run with one rollout: that rollout
    assert code == 0, out
    assert "embedded SmolLM2-135M" in out


def test_which_transcript(tmp_path):
    run_dir = make_run(tmp_path, rollouts=2, turns=3)
    code, out = view(str(run_dir))
    assert code == 1 and "holds 2 rollouts; name one" in out
    (tmp_path / "empty").mkdir()
    code, out = view(str(tmp_path / "empty"))
    assert code == 1 and "no transcript" in out
    broken = tmp_path / "broken.json"
    broken.write_text("{}")
    code, out = view(str(broken))
    assert code == 1 and "not a readable transcript" in out


def test_pager_only_on_a_terminal_with_many_turns(fifty, monkeypatch):
    paged = []

    @contextlib.contextmanager
    def pager(self, *args, **kwargs):
        paged.append(kwargs)
        yield

    monkeypatch.setattr(Console, "pager", pager)
    view(str(fifty))
    assert paged == []  # not a terminal
    monkeypatch.setattr(Console, "is_terminal", property(lambda self: True))
    monkeypatch.setenv("LESS", "-R")
    view(str(fifty), "--turns", ":5")
    assert paged == []  # few turns
    view(str(fifty))
    assert paged == [{"styles": True}]


def test_history_cut_to_fit_the_context_is_shown_in_view_and_report(tmp_path):
    import yaml

    root = Path(__file__).parent.parent
    config = yaml.safe_load((root / "configs" / "examples" / "mania_patient.yaml").read_text())
    config["conversation"] = {"history_budget_tokens": 256}
    path = tmp_path / "small.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    out = tmp_path / "run"
    result = CliRunner().invoke(
        cli,
        ["run", str(path), "--turns", "8", "-o", str(out), "--seed", "1", "--no-score",
         "--persona-model", "scripted/varied", "--target", "scripted/varied",
         "--judge-model", "scripted/judge"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    transcript = RolloutFiles(rollout_dir(out, 0)).transcript()
    cut = [t for t in transcript.turns if t.cut_turns.get("persona")]
    assert cut, "the budget cut nothing"
    code, shown = view(str(rollout_dir(out, 0)))
    assert code == 0, shown
    parts = re.split(r"^\s*turn \d+ · ", shown, flags=re.M)[1:]
    blocks = dict(zip(shown_turns(shown), parts, strict=True))  # by turn as shown, from 1
    for record in transcript.turns:
        expected = (
            f"persona {record.cut_turns['persona']}" if record.cut_turns.get("persona") else None
        )
        if expected:
            assert "history cut" in blocks[record.turn + 1] and expected in blocks[record.turn + 1]
        else:
            assert "history cut" not in blocks[record.turn + 1]
    assert CliRunner().invoke(cli, ["report", str(out)]).exit_code == 0
    report = (out / "report.md").read_text()
    assert f"History cut to fit the context on {len(cut)} turn" in report
