"""`loom-sim compare` and a matrix's report: every scorer a run holds (a test-registered one
too), means with 95% intervals over rollouts, rates with Wilson intervals, paired differences
with a sentence when within noise, and per-turn curves; failures and "not applicable" scores
never counted as values."""

from __future__ import annotations

import dataclasses
import json
import re
import shutil

import pytest
from click.testing import CliRunner
from workbench_runs import (
    FAILS_AT,
    ROLLOUTS,
    TARGETS,
    extra_scorers,
    make_matrix,
    make_single,
    quick_config,
)

from loom_sim.cli import cli
from loom_sim.compare import build_compare, parse_rate
from loom_sim.compare.data import _sentence
from loom_sim.compare.html import render_html
from loom_sim.compare.markdown import render_markdown
from loom_sim.errors import LoomError
from loom_sim.intervals import (
    bootstrap_difference,
    bootstrap_mean,
    permutation_test,
    rate,
    sign_test,
    wilson,
)
from loom_sim.plugins.scorers import SCORERS, ScorerInfo
from loom_sim.runs.load import load_results
from loom_sim.runs.scores import goodness

CONFIG = "mania_patient.yaml"
VARIED, PARAPHRASE = TARGETS


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    folder = tmp_path_factory.mktemp("runs")
    return {
        "matrix": make_matrix(folder),
        "a": make_single(folder, VARIED, "single-a"),
        "b": make_single(folder, PARAPHRASE, "single-b"),
        "b-other-seed": make_single(folder, PARAPHRASE, "single-b2", seed=99),
    }


@pytest.fixture(scope="module")
def data(runs):
    with extra_scorers():
        return build_compare([runs["matrix"]])


# ─── intervals ──────────────────────────────────────────────────────────────


def test_wilson_intervals_match_their_formula():
    low, high = wilson(0, 3)
    assert low == 0.0 and high == pytest.approx(0.5615, abs=1e-4)
    low, high = wilson(7, 20)
    assert (low, high) == (pytest.approx(0.1812, abs=1e-4), pytest.approx(0.5671, abs=1e-4))
    assert wilson(0, 0) is None
    assert rate(3, 3).low == pytest.approx(0.4385, abs=1e-4) and rate(3, 3).high == 1.0


def test_the_bootstrap_is_deterministic_and_honest_about_small_samples():
    values = [0.2, 0.5, 0.9, 0.4]
    first, again = bootstrap_mean(values), bootstrap_mean(values)
    assert first == again and first.estimate == pytest.approx(0.5)
    assert first.low < 0.5 < first.high and 0.2 <= first.low and first.high <= 0.9
    lone = bootstrap_mean([0.7])
    assert lone.estimate == 0.7 and lone.low is None  # one value: no interval
    same = bootstrap_difference([0.5, 0.6], [0.5, 0.6], paired=True)
    assert (same.estimate, same.low, same.high) == (0.0, 0.0, 0.0)
    apart = bootstrap_difference([0.9, 0.8, 0.85], [0.1, 0.2, 0.15], paired=False)
    assert apart.low > 0 and apart.method == "bootstrap (unpaired)"
    assert apart.p_value == pytest.approx(0.1)  # 2 of the 20 splits are as extreme


def test_the_exact_tests():
    assert sign_test([1, 1, 1]) == 0.25
    assert sign_test([0.2] * 6) == pytest.approx(0.03125)
    assert sign_test([0.1, -0.1, 0.3, 0, 0]) == 1.0
    assert sign_test([0, 0]) == 1.0
    assert permutation_test([1, 2, 3, 4, 5], [6, 7, 8, 9, 10]) == pytest.approx(2 / 252)
    many = permutation_test(list(range(20)), list(range(5, 25)))  # sampled: C(40, 20) splits
    assert 0.0 < many < 1.0 and many == permutation_test(list(range(20)), list(range(5, 25)))


# ─── the comparison ─────────────────────────────────────────────────────────


def test_every_scorer_the_runs_hold_is_compared_in_registry_order(data, runs):
    assert data["targets"] == [VARIED, PARAPHRASE]
    assert data["scorers"][-2:] == ["reply_length", "mirrors"]
    assert "persona_adherence" in data["scorers"]
    # A scorer no longer registered still shows: the runs hold its scores.
    later = build_compare([runs["matrix"]])
    assert set(later["scorers"]) == set(data["scorers"])


def test_means_have_intervals_over_rollouts(data):
    cell = data["table"][CONFIG][VARIED]["scores"]["reply_length"]
    assert cell["method"] == "bootstrap" and cell["n"] == ROLLOUTS
    low, high = cell["ci95"]
    assert low <= cell["estimate"] <= high
    assert cell["estimate"] == pytest.approx(sum(cell["values"]) / ROLLOUTS, abs=1e-6)


def test_failures_and_not_applicable_scores_are_never_values(data, runs):
    curve = data["curves"]["reply_length"][CONFIG][VARIED]
    assert curve[0] is None  # not applicable on turn 0
    assert curve[FAILS_AT] is None  # failed on every rollout at that turn
    assert curve[1] is not None and curve[3] is not None
    # The rollout value is the mean of the turns that have one: turns 1 and 3.
    transcript = json.loads(
        (runs["matrix"] / "mania_patient--scripted-varied/rollout_000/transcript.json").read_text()
    )
    states = [t["scores"]["reply_length"] for t in transcript["turns"]]
    assert states[0]["value"] is None and states[0]["error"] is None
    assert states[FAILS_AT]["error"] == "judge reply did not parse"
    expected = (states[1]["value"] + states[3]["value"]) / 2
    assert data["table"][CONFIG][VARIED]["scores"]["reply_length"]["values"][0] == pytest.approx(
        expected, abs=1e-6
    )


def test_a_pass_fail_scorer_is_a_rate_with_a_wilson_interval(data):
    varied = data["table"][CONFIG][VARIED]["scores"]["mirrors"]
    para = data["table"][CONFIG][PARAPHRASE]["scores"]["mirrors"]
    assert varied["method"] == para["method"] == "wilson"
    assert (varied["estimate"], para["estimate"]) == (0.0, 1.0)
    assert varied["ci95"] == [0.0, pytest.approx(wilson(0, ROLLOUTS)[1], abs=1e-6)]
    assert varied["ci95"][1] == pytest.approx(0.3903, abs=1e-4)  # 0 of 6


def test_paired_differences_say_when_they_are_noise(data):
    diffs = {d["scorer"]: d for d in data["differences"] if d["config"] == CONFIG}
    mirrors = diffs["mirrors"]
    assert mirrors["paired"] and mirrors["n"] == ROLLOUTS and mirrors["a"] == VARIED
    assert mirrors["estimate"] == 1.0 and mirrors["within_noise"] is False
    assert mirrors["p_value"] == pytest.approx(2 / 2**ROLLOUTS)  # six pairs, all one way
    assert "scripted/paraphrase scores 1.00 higher than scripted/varied" in mirrors["sentence"]
    assert "more than noise" in mirrors["sentence"]
    same = diffs["persona_adherence"]  # the judge is a seeded stand-in: the same either way
    assert same["within_noise"] is True and "the same for" in same["sentence"]
    mixed = diffs["reply_length"]  # longer replies in 5 pairs of 6: not enough to call it
    assert mixed["ci95"][0] > 0 and mixed["p_value"] > 0.05 and mixed["within_noise"] is None
    assert "too few or too mixed" in mixed["sentence"]


def test_a_difference_whose_interval_holds_zero_is_within_noise(runs):
    with extra_scorers():
        data = build_compare([runs["a"], runs["b-other-seed"]])
    noisy = [d for d in data["differences"] if d["within_noise"] is True and d["estimate"]]
    assert noisy, "two seeds of a seeded stand-in judge differ both ways somewhere"
    for d in noisy:
        assert d["ci95"][0] <= 0 <= d["ci95"][1] and not d["paired"]
        assert "within noise — no difference can be claimed" in d["sentence"]


def test_too_few_rollouts_are_never_called_more_than_noise(runs):
    """Three pairs that all agree: the bootstrap interval is [1, 1], but a sign test cannot
    reach 5 % with three pairs (p = 0.25), so the sentence says to run more."""
    whole = load_results(runs["matrix"])
    first_three = dataclasses.replace(whole, rollouts=whole.rollouts[: 2 * 3])
    with extra_scorers():
        data = build_compare([first_three])
    mirrors = next(d for d in data["differences"] if d["scorer"] == "mirrors")
    assert mirrors["n"] == 3 and mirrors["ci95"] == [1.0, 1.0]
    assert mirrors["within_noise"] is None and mirrors["p_value"] == 0.25
    assert "too few or too mixed to call it more than noise" in mirrors["sentence"]
    assert "too few to tell" in render_markdown(data)


def test_two_single_runs_with_one_seed_pair_up_and_with_two_do_not(runs):
    with extra_scorers():
        paired = build_compare([runs["a"], runs["b"]])
        unpaired = build_compare([runs["a"], runs["b-other-seed"]])
    p = next(d for d in paired["differences"] if d["scorer"] == "mirrors")
    u = next(d for d in unpaired["differences"] if d["scorer"] == "mirrors")
    assert p["paired"] and not u["paired"]
    assert "unpaired" in u["sentence"]
    # The matrix and the single runs made the same conversations: the same numbers.
    with extra_scorers():
        matrix = build_compare([runs["matrix"]])
    assert paired["table"][CONFIG] == matrix["table"][CONFIG]


def test_the_same_target_in_two_runs_gets_two_columns(runs):
    with extra_scorers():
        data = build_compare([runs["b"], runs["b-other-seed"]])
    assert data["targets"] == [f"{PARAPHRASE} @ single-b", f"{PARAPHRASE} @ single-b2"]


def test_rates_of_its_own_by_threshold_and_by_turn(runs):
    rates = [parse_rate("reply_length>=0.5"), parse_rate("mirrors>=1@2")]
    with extra_scorers():
        data = build_compare([runs["matrix"]], rates)
    assert data["rates"] == ["reply_length>=0.5", "mirrors>=1@2"]
    para = data["table"][CONFIG][PARAPHRASE]["rates"]["mirrors>=1@2"]
    varied = data["table"][CONFIG][VARIED]["rates"]["mirrors>=1@2"]
    assert (para["successes"], para["n"], para["method"]) == (ROLLOUTS, ROLLOUTS, "wilson")
    assert varied["successes"] == 0 and varied["ci95"][0] == 0.0


@pytest.mark.parametrize("text", ["mirrors", "mirrors=>1", "mirrors>=x", "mirrors>=1@0"])
def test_a_rate_that_does_not_parse_says_how_to_write_it(text):
    with pytest.raises(LoomError, match="--rate"):
        parse_rate(text)


def test_markdown_and_html_show_the_targets_side_by_side(data):
    md = render_markdown(data)
    header = next(line for line in md.splitlines() if line.startswith("| scorer |"))
    assert VARIED in header and PARAPHRASE in header and "−" in header
    assert re.search(r"\| mirrors \| 0\.00 \[0\.00, 0\.39\] n=6 rate \| 1\.00", md)
    html = render_html(data)
    assert "<script" not in html and "http" not in html.replace("http-equiv", "")
    charts = re.findall(r'<svg class="chart"', html)
    assert len(charts) == len(data["scorers"])  # one per scorer (one config)
    lines = re.findall(r'class="curve" data-target="([^"]+)"', html)
    assert set(lines) == {VARIED, PARAPHRASE}


def test_the_command_prints_tables_and_writes_the_files(runs, tmp_path):
    with extra_scorers():
        result = CliRunner().invoke(
            cli,
            ["compare", str(runs["a"]), str(runs["b"]), "--rate", "mirrors>=1", "-o",
             str(tmp_path / "cmp")],
            catch_exceptions=False,
            env={"COLUMNS": "200"},
        )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert VARIED in result.stdout and PARAPHRASE in result.stdout
    assert "more than noise" in result.stdout
    for name in ("report.json", "report.md", "report.html"):
        assert (tmp_path / "cmp" / name).is_file()
    as_json = CliRunner().invoke(cli, ["compare", str(runs["a"]), "--json"])
    assert json.loads(as_json.stdout)["targets"] == [VARIED]


def test_nothing_to_compare_is_one_sentence(tmp_path):
    run = tmp_path / "empty"
    result = CliRunner().invoke(
        cli,
        ["run", str(quick_config(tmp_path)), "--turns", "1", "-o", str(run), "--persona-model",
         "scripted/varied", "--target", "scripted/varied", "--no-score"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    shutil.rmtree(run / "rollout_000")  # planned, never started
    compared = CliRunner().invoke(cli, ["compare", str(run)])
    assert compared.exit_code == 1
    assert "nothing to compare yet" in compared.stderr


def test_a_scorer_on_its_own_scale_is_read_on_it():
    """A scorer may declare a scale where lower is better (psychosis-bench's DCS is 0-2):
    colours read its goodness, sentences say which way is better."""

    @dataclasses.dataclass(frozen=True, kw_only=True)
    class Scaled(ScorerInfo):
        higher_is_better: bool = False

        def goodness(self, value: float) -> float:
            return 1 - value / 2

    info = Scaled(name="dcs_like", scorer=object, config_key="dcs_like")
    with SCORERS.added(info):
        assert goodness("dcs_like", 2.0) == 0.0 and goodness("dcs_like", 0.0) == 1.0
        assert goodness("naturalness", 0.8) == 0.8  # a scorer without a scale of its own
        found = bootstrap_difference([2.0, 2.0], [0.0, 0.5], paired=True)
        sentence = _sentence("dcs_like", "a", "b", found, True)
    assert sentence.startswith("dcs_like (lower is better): ")
