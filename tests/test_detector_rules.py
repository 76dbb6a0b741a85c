"""The detectors' rules one case at a time: what the supported-evidence check refuses, which
programs get a shell's continuation prompt, the failure shapes of real programs, the learned
checks' files, and the "uncertain" a report puts on a verdict near its threshold. The held-out
figures these rules earn are held by tests/test_bench_validity.py."""

from __future__ import annotations

import re
from types import SimpleNamespace

import numpy as np
import pytest

from loom_sim.harness.targets.continuation import continuation_for
from loom_sim.judging.support import support
from loom_sim.plugins.outcomes import error_line
from loom_sim.rollout.report.conformance import loops_after_redirect
from loom_sim.rollout.report.markdown import NEAR_SIMILARITY, _evidence
from loom_sim.signals.learned import UNCERTAIN, check
from loom_sim.store.turn_parts import LOOP_AFTER_REDIRECT, LOOP_CHECK, MonitorEvent

SESSION = {
    "transcript": [
        "add buy milk",
        "added #1 buy milk (1 task left)",
        "export --format csv",
        "wrote out/tasks.csv (1 row)",
    ],
    "events": [
        {"type": "task_added", "output": {"id": "t1"}},
        {"type": "export", "command": "export"},
    ],
    "files": ["out/tasks.csv"],
}


def _support(evidence: str) -> str | None:
    return support(evidence, SESSION["transcript"], SESSION["events"], SESSION["files"])


@pytest.mark.parametrize(
    "evidence",
    [
        'The app printed "added #1 buy milk (1 task left)".',
        "It printed “Added #1 Buy Milk (1 task left)”.",  # case and curly quotes aside
        "The task_added event for t1 is in the log.",
        "The export wrote out/tasks.csv.",
        'The user typed "add buy milk" and the task was added.',
    ],
)
def test_evidence_that_quotes_or_names_what_is_there_is_supported(evidence):
    assert _support(evidence) is not None


@pytest.mark.parametrize(
    "evidence",
    [
        'The app printed "added #1 buy milk (2 tasks left)".',  # a number changed
        'The app answered "add buy milk".',  # the user's own words, as output
        "The export went fine.",  # a plain word equal to an event type names nothing
        "A task_deleted event confirms it.",  # an event that never happened
        "It wrote out/archive/tasks.csv.",  # a path never written
        'Right after the add it said "added #1 buy milk (1 task left)" and "all synced".',
    ],
)
def test_evidence_that_misquotes_or_names_nothing_is_refused(evidence):
    assert _support(evidence) is None


def test_a_shells_continuation_prompt_is_one_only_for_a_shell():
    for shell in ("bash", "/bin/sh", "/usr/bin/dash"):
        assert re.search(continuation_for(shell), "> ")
    assert not re.search(continuation_for("node"), "> ")  # node's main prompt
    for program, line in (("psql", "shop-*> "), ("psql", "postgres-!# "), ("python3", "...     ")):
        assert re.search(continuation_for(program), line), line
    assert re.search(continuation_for("perl"), "  cont: ")
    assert not re.search(continuation_for("python3"), "  cont: ")


@pytest.mark.parametrize(
    "reply",
    [
        "HTTP/1.1 503 Service Unavailable\nRetry-After: 120",
        "curl: (6) Could not resolve host: nonexistent.invalid",
        "make: *** No rule to make target 'deploy'.  Stop.",
        "npm error code ENOENT",
        "Illegal division by zero at -e line 1.",
        "✖ adds prices (1.0ms)",
    ],
)
def test_real_programs_failures_are_failures(reply):
    assert error_line(reply) is not None


@pytest.mark.parametrize(
    "reply",
    ["HTTP/1.1 200 OK\nContent-Type: text/plain", "0 problems (0 errors, 0 warnings)", "ok 1"],
)
def test_their_successes_are_not(reply):
    assert error_line(reply) is None


def test_the_learned_loop_check_is_whole_and_says_what_it_was_fitted_on():
    learned = check("loop")
    n = len(learned.features)
    assert learned.mean.shape == learned.scale.shape == learned.coef.shape == (n,)
    assert np.all(learned.scale > 0) and 0 < learned.threshold < 1
    assert "dev split only" in learned.card["trained_on"] and learned.card["n"] > 50
    p = learned.probability(learned.mean)  # the average item: a finite probability
    assert 0.0 < p < 1.0
    with pytest.raises(ValueError):
        learned.probability(np.zeros(n + 1))


def _turn(value: float, threshold: float, learned: bool = True):
    values = {"value": value, "threshold": threshold} | ({"learned": value} if learned else {})
    event = MonitorEvent(LOOP_CHECK, LOOP_AFTER_REDIRECT, "escalated", values=values)
    return SimpleNamespace(turn=3, monitor_events=[event], sent_despite_redirect=True)


def test_a_loop_verdict_near_the_learned_checks_threshold_is_uncertain():
    threshold = check("loop").threshold
    [near] = loops_after_redirect([_turn(threshold + UNCERTAIN / 2, threshold)])
    [far] = loops_after_redirect([_turn(min(0.999, threshold + UNCERTAIN * 1.5), threshold)])
    [tfidf] = loops_after_redirect([_turn(0.101, 0.10, learned=False)])
    assert near["uncertain"] and near["measure"] == "probability"
    assert not far["uncertain"]
    assert not tfidf["uncertain"] and tfidf["measure"] == "similarity"


def test_a_revelation_scored_just_over_its_bar_is_marked_uncertain():
    found = {"sentence": "I haven't slept", "variant": "subtle", "method": "embedding"}
    near = _evidence({**found, "similarity": 0.43 + NEAR_SIMILARITY / 2, "threshold": 0.43})
    clear = _evidence({**found, "similarity": 0.43 + NEAR_SIMILARITY * 2, "threshold": 0.43})
    assert "uncertain" in near and "uncertain" not in clear
