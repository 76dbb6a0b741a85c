"""The probe summary: Wilson intervals, the paired comparison, regret, the page and the JSON."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from probe_support import make_plan, run_plan

from loom_sim.cli import cli
from loom_sim.models.base import Usage
from loom_sim.probe import stats
from loom_sim.probe.records import JudgeOutcome, Message, ProbeLog, ProbeRecord, read_log
from loom_sim.probe.summary import summarise, write_summary
from loom_sim.probe.summary_md import checkpoints


@pytest.mark.parametrize(
    ("successes", "n", "low", "high"),
    [  # reference values: scipy.stats.binomtest(k, n).proportion_ci(method="wilson")
        (0, 10, 0.0, 0.27753279986288926),
        (5, 10, 0.236593090512564, 0.7634069094874361),
        (10, 10, 0.7224672001371109, 1.0),
        (81, 263, 0.2552885198782742, 0.36620957698280004),
        (1, 1, 0.20654931437723745, 1.0),
        (24, 200, 0.08197992706375513, 0.17234252098296748),
    ],
)
def test_wilson_interval_known_values(successes, n, low, high):
    assert stats.wilson(successes, n) == pytest.approx((low, high), abs=1e-12)


def test_wilson_edge_cases():
    assert stats.wilson(0, 0) is None
    with pytest.raises(ValueError):
        stats.wilson(3, 2)


def test_rates_count_unjudged_runs_apart():
    rate = stats.Rate()
    for success in (True, False, None, True):
        rate = rate.add(success)
    assert (rate.successes, rate.judged, rate.unjudged, rate.runs) == (2, 3, 1, 4)
    assert rate.rate == pytest.approx(2 / 3)
    assert rate.text() == "2/3 · 67% (21%–94%), 1 unjudged"
    assert stats.Rate().text() == "—" and stats.Rate(0, 0, 2).text() == "— (2 unjudged)"


def test_regret_curve_skips_unknown_pairs_and_uses_the_best_known_rate():
    rates = {"confident": {"escalate": 0.5, "accuse": 0.2}}
    choices = [("confident", "accuse"), ("confident", "escalate"), ("hedging", "accuse")]
    assert stats.regret_curve(choices, rates) == pytest.approx([0.3, 0.3, 0.3])


def test_checkpoints_end_at_the_last_run():
    assert checkpoints(200) == list(range(20, 201, 20))
    assert checkpoints(7) == [1, 2, 3, 4, 5, 6, 7]
    assert checkpoints(25) == [3, 6, 9, 12, 15, 18, 21, 24, 25]
    assert checkpoints(0) == []


def record(mode: str, run_id: int, success: bool | None, category: str, strategy: str):
    answer = f"{mode} answer {run_id}"
    return ProbeRecord(
        run_id=run_id,
        mode=mode,
        seed=run_id,
        target="scripted/x",
        prompt_id=f"p{run_id % 2}",
        prompt=f"prompt {run_id % 2}",
        prompt_category="test",
        category=category,
        classifier_evidence={},
        strategy=strategy,
        rationale="r",
        success=success,
        judge=JudgeOutcome(model="scripted/j", evidence="e" if success else None),
        conversation=[
            Message("user", "q"),
            Message("assistant", "a"),
            Message("user", "q2"),
            Message("assistant", answer),
        ],
        usage={"target": Usage()},
        timings={},
    )


def write_logs(directory: Path, logs: dict[str, list[ProbeRecord]], true_rates=None) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    mode = {"runs": 5, "status": "done", "argv": [], "base_url": None, "timeout_s": 1.0}
    probe = {
        "format": "loom-sim.probe",
        "format_version": 1,
        "loom_sim_version": "0",
        "created_at": "2026-01-01T00:00:00+00:00",
        "config_path": "t.yaml",
        "config_name": "t.yaml",
        "config_sha256": "0",
        "seed": 1,
        "models": {"target": "openai/gpt-4.1", "judge": "openai/gpt-4.1"},
        "target_system_prompt": None,
        "rubric": {"id": "probe_contradiction", "version": "1.1", "digest": "0"},
        "true_rates": true_rates,
        "versions": {},
        "config": {},
        "modes": {name: {**mode, "concurrency": 1} for name in logs},
    }  # from before the plan header: reading it builds one
    (directory / "probe.json").write_text(json.dumps(probe))
    for mode, records in logs.items():
        log = ProbeLog(directory / f"{mode}.jsonl")
        for r in reversed(records):  # out of order: the log puts them in run order
            log.add(r)
        log.close()


STATIC = [
    record("static", 0, False, "confident", "default"),
    record("static", 1, False, "hedging", "default"),
    record("static", 2, True, "confident", "default"),
    record("static", 3, False, "hesitant", "default"),
    record("static", 4, None, "confident", "default"),
]
ADAPTIVE = [
    record("adaptive", 0, True, "confident", "escalate"),
    record("adaptive", 1, True, "hedging", "exploit_nuance"),
    record("adaptive", 2, False, "confident", "escalate"),
    record("adaptive", 3, False, "hesitant", "accuse"),
    record("adaptive", 4, True, "confident", "escalate"),
]


def test_the_log_writes_in_run_order_and_reads_back(tmp_path):
    write_logs(tmp_path, {"static": STATIC})
    assert read_log(tmp_path / "static.jsonl") == STATIC
    with (tmp_path / "static.jsonl").open("ab") as handle:
        handle.write(b'{"run_id": 5, "mo')  # a torn last line
    assert read_log(tmp_path / "static.jsonl") == STATIC


def test_summary_numbers_and_the_adaptive_found_static_missed_list(tmp_path):
    write_logs(tmp_path, {"static": STATIC, "adaptive": ADAPTIVE})
    summary = summarise(tmp_path)
    static, adaptive = summary["modes"]["static"], summary["modes"]["adaptive"]
    assert (static["runs"], static["judged"], static["successes"], static["unjudged"]) == (
        5,
        4,
        1,
        1,
    )
    assert static["ci95"] == pytest.approx([0.0456, 0.6994], abs=1e-4)
    assert (adaptive["successes"], adaptive["judged"]) == (3, 5)
    assert summary["by_category"]["adaptive"]["confident"]["successes"] == 2
    assert summary["by_strategy"]["static"]["default"]["judged"] == 4
    [comparison] = summary["comparisons"]
    assert {k: comparison[k] for k in ("paired", "only_adaptive", "only_static", "both")} == {
        "paired": 5,
        "only_adaptive": 2,
        "only_static": 1,
        "both": 0,
    }
    assert (comparison["neither"], comparison["unjudged"]) == (1, 1)
    assert [f["run_id"] for f in comparison["found"]] == [0, 1]
    found = comparison["found"][1]
    assert (found["prompt_id"], found["category"], found["strategy"]) == (
        "p1",
        "hedging",
        "exploit_nuance",
    )
    assert found["baseline_strategy"] == "default" and found["answer"] == "adaptive answer 1"
    assert found["baseline_answer"] == "static answer 1"


def test_regret_uses_empirical_rates_unless_true_rates_are_known(tmp_path):
    bandit = [
        record("bandit", 0, True, "confident", "escalate"),
        record("bandit", 1, False, "confident", "default"),
    ]
    write_logs(tmp_path / "e", {"static": STATIC, "adaptive": ADAPTIVE, "bandit": bandit})
    regret = summarise(tmp_path / "e")["regret"]
    assert regret["reference"] == "empirical" and "pooled over the 11 judged runs" in regret["note"]
    # confident: escalate 3/4 (adaptive 2/3 + bandit 1/1), default 1/3 (static 1/2 + bandit 0/1)
    assert regret["rates"]["confident"] == pytest.approx({"default": 1 / 3, "escalate": 0.75})
    assert regret["curves"]["bandit"] == pytest.approx([0.0, 0.75 - 1 / 3])
    true_rates = {"confident": {"escalate": 0.9, "default": 0.1}}
    write_logs(tmp_path / "t", {"bandit": bandit}, true_rates=true_rates)
    regret = summarise(tmp_path / "t")["regret"]
    assert regret["reference"] == "true" and regret["curves"]["bandit"] == [0.0, 0.8]


def test_summary_files_and_page(tmp_path):
    write_logs(tmp_path, {"static": STATIC, "adaptive": ADAPTIVE})
    summary, paths = write_summary(tmp_path)
    assert [p.name for p in paths] == ["summary.md", "summary.json"]
    assert json.loads((tmp_path / "summary.json").read_text()) == json.loads(json.dumps(summary))
    page = (tmp_path / "summary.md").read_text()
    for heading in (
        "## Modes side by side",
        "## Contradictions adaptive found that static missed",
        "## Success by Turn-1 category",
        "## Success by strategy",
        "## Success by prompt category",
        "## Bandit: cumulative regret",
    ):
        assert heading in page
    assert "| static | 5 | 1/4 | 25.0% | 4.6% – 69.9% | 1 |" in page
    assert "| 1 | p1 (test) | hedging | exploit_nuance / default | adaptive answer 1 |" in page
    assert "No bandit runs in this directory." in page


async def test_stand_ins_are_noted_and_a_mode_added_later_joins_the_summary(tmp_path):
    plan = make_plan(tmp_path, modes=("static",), runs=6)
    await run_plan(plan)
    first, _ = write_summary(plan.dir)
    assert list(first["modes"]) == ["static"] and not first["comparisons"]
    assert any("scripted stand-in" in note for note in first["notes"])
    later = make_plan(tmp_path, modes=("adaptive", "bandit"), runs=6, seed=None)
    assert later.seed == 7  # the directory's seed: runs stay paired
    await run_plan(later)
    summary, _ = write_summary(plan.dir)
    assert list(summary["modes"]) == ["static", "adaptive", "bandit"]
    assert [c["found_by"] for c in summary["comparisons"]] == ["adaptive", "bandit"]
    assert summary["regret"]["reference"] == "true"
    page = (plan.dir / "summary.md").read_text()
    assert "> **Note.** The target `scripted/probe-target` is a scripted stand-in" in page
    assert "```text" in page and "cumulative regret of the bandit" in page


async def test_summary_only_rebuilds_and_prints(tmp_path):
    plan = make_plan(tmp_path, runs=4)
    await run_plan(plan)
    (plan.dir / "summary.md").unlink(missing_ok=True)
    result = CliRunner().invoke(cli, ["probe", "--summary-only", str(plan.dir)])
    assert result.exit_code == 0, result.output
    assert (plan.dir / "summary.md").is_file() and (plan.dir / "summary.json").is_file()
    assert "contradictions found, by mode" in result.stdout
    assert "adaptive found" in result.stdout and "bandit cumulative regret" in result.stdout
    refused = CliRunner().invoke(cli, ["probe", "x.yaml", "--summary-only", str(plan.dir)])
    assert refused.exit_code == 1
    assert (
        refused.stderr.strip()
        == "--summary-only rebuilds an existing probe's summary; leave out x.yaml"
    )
