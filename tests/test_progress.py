"""Progress reporting: plain lines for pipes and CI, a live table on terminals."""

from __future__ import annotations

import io

from rich.console import Console

from loom_sim.rollout.runtime.progress import PlainProgress, RichProgress
from loom_sim.rollout.scoring.progress import PlainScoreProgress, RichScoreProgress


def test_plain_progress_writes_one_line_per_event():
    stream = io.StringIO()
    progress = PlainProgress(stream)
    progress.rollout_started("rollout_000", 12, 0)
    progress.turn_done("rollout_000", 0, "rapport", 1234, 0.0123, 4.5)
    progress.turn_done("rollout_000", 1, "rapport", 2000, None, 6.0)
    progress.rollout_ended("rollout_000", "done", "12 of 12 turns")
    lines = stream.getvalue().splitlines()
    assert lines == [
        "rollout_000: started (12 turns)",
        "rollout_000: turn 1/12 · rapport · 1234 tokens · $0.0123 · 4.5s",
        "rollout_000: turn 2/12 · rapport · 2000 tokens · unknown · 6.0s",
        "rollout_000: done (12 of 12 turns)",
    ]


def test_plain_progress_says_where_a_resumed_rollout_continues():
    stream = io.StringIO()
    PlainProgress(stream).rollout_started("rollout_001", 10, 4)
    assert stream.getvalue().strip() == "rollout_001: started (10 turns, resuming after turn 4)"


def test_rich_progress_renders_a_row_per_rollout():
    progress = RichProgress()
    progress.rollout_started("rollout_000", 12, 0)
    progress.rollout_started("rollout_001", 12, 0)
    progress.turn_done("rollout_000", 2, "disclosure", 900, 0.5, 3.0)
    progress.rollout_ended("rollout_001", "error", "openai/x: 5 attempts failed")
    console = Console(file=io.StringIO(), width=160, color_system=None)
    console.print(progress)
    text = console.file.getvalue()
    assert "rollout_000" in text and "3/12" in text and "disclosure" in text and "$0.5000" in text
    assert "error: openai/x: 5 attempts failed" in text


def render(renderable) -> str:
    console = Console(file=io.StringIO(), width=160, color_system=None)
    console.print(renderable)
    return console.file.getvalue()


def test_rich_progress_elapsed_ticks_while_a_turn_is_in_flight(monkeypatch):
    now = [100.0]
    monkeypatch.setattr("loom_sim.rollout.runtime.progress.time.monotonic", lambda: now[0])
    progress = RichProgress()
    progress.rollout_started("rollout_000", 12, 0)
    now[0] = 107.5  # no turn has finished yet: the clock still moves
    assert "7.5s" in render(progress)
    progress.rollout_ended("rollout_000", "done", "12 of 12 turns")
    now[0] = 200.0  # and stops when the rollout ends
    assert "7.5s" in render(progress)


def test_rich_progress_marks_running_rollouts_interrupted():
    progress = RichProgress()
    progress.rollout_started("rollout_000", 12, 0)
    progress.rollout_started("rollout_001", 12, 0)
    progress.rollout_ended("rollout_001", "done", None)
    progress.interrupted()
    text = render(progress)
    assert "interrupted" in text and text.count("interrupted") == 1


def test_score_progress_counts_per_scorer_with_elapsed_and_remaining(monkeypatch):
    now = [10.0]
    monkeypatch.setattr("loom_sim.rollout.scoring.progress.time.monotonic", lambda: now[0])
    live = RichScoreProgress()
    live.planned("rollout_000", 4, {"naturalness": 4, "fidelity": 2})
    live.planned("rollout_001", 4, {"naturalness": 4, "fidelity": 1})
    now[0] = 40.0
    live.turn_scored("rollout_000", ["naturalness", "fidelity"], ["fidelity"])
    live.turn_scored("rollout_001", ["naturalness"], [])
    text = render(live)
    assert "2/8 turns" in text and "30s elapsed" in text and "~1m 30s left" in text
    assert "naturalness" in text and "2/8" in text and "1/3" in text
    stream = io.StringIO()
    plain = PlainScoreProgress(stream)
    plain.planned("rollout_000", 2, {"naturalness": 2})
    plain.turn_scored("rollout_000", ["naturalness"], [])
    assert stream.getvalue().startswith("scoring rollout_000: turn 1/2 · all rollouts 1/2")
