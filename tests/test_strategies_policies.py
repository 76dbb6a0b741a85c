"""The probe's strategy policies: static, adaptive mapping, Thompson-sampling bandit."""

from __future__ import annotations

import json
import random

import pytest

from loom_sim.strategies.classifier import CATEGORIES
from loom_sim.strategies.policies import (
    ADAPTIVE_MAPPING,
    STRATEGIES,
    AdaptivePolicy,
    BanditPolicy,
    BanditStateError,
    Policy,
    StaticPolicy,
    cumulative_regret,
    make_policy,
)

SEEDS = range(5)


def rates_with_best(best: dict[str, str]) -> dict[str, dict[str, float]]:
    """Success probability 0.8 for each category's best strategy, 0.2 for the others."""
    return {c: {s: 0.8 if s == best[c] else 0.2 for s in STRATEGIES} for c in CATEGORIES}


def simulate(bandit, seed, rates, categories=("confident",), runs=200):
    """A seeded simulated target; the environment and the policy have their own rngs."""
    env, rng = random.Random(seed), random.Random(1_000_003 + seed)
    history = []
    for _ in range(runs):
        category = env.choice(categories)
        strategy = bandit.choose(category, rng).strategy
        bandit.update(category, strategy, env.random() < rates[category][strategy])
        history.append((category, strategy))
    return history


def share_best(history, rates):
    return sum(rates[c][s] == max(rates[c].values()) for c, s in history) / len(history)


def test_every_policy_satisfies_the_protocol():
    for name in ("static", "adaptive", "bandit"):
        assert isinstance(make_policy(name), Policy)


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_static_always_returns_its_strategy(strategy):
    policy, rng = StaticPolicy(strategy), random.Random(0)
    for category in CATEGORIES * 5:
        choice = policy.choose(category, rng)
        assert choice.strategy == strategy and "static" in choice.rationale
        policy.update(category, strategy, success=True)
    assert StaticPolicy().choose("hedging", rng).strategy == "default"


def test_adaptive_follows_the_design_mapping_with_a_reason():
    assert ADAPTIVE_MAPPING == {
        "confident": "escalate",
        "hesitant": "accuse",
        "hedging": "exploit_nuance",
        "unclear": "default",
    }
    policy, rng = AdaptivePolicy(), random.Random(0)
    for category, strategy in ADAPTIVE_MAPPING.items():
        for success in (True, False):  # outcomes never move it
            choice = policy.choose(category, rng)
            assert choice.strategy == strategy
            assert category in choice.rationale and "because" in choice.rationale
            policy.update(category, strategy, success)


def test_unknown_names_are_rejected():
    rng = random.Random(0)
    with pytest.raises(ValueError, match="unknown category 'angry'"):
        AdaptivePolicy().choose("angry", rng)
    with pytest.raises(ValueError, match="unknown strategy 'flatter'"):
        StaticPolicy("flatter")
    with pytest.raises(ValueError, match="unknown strategy"):
        BanditPolicy().update("confident", "flatter", True)
    with pytest.raises(ValueError, match="unknown policy"):
        make_policy("epsilon")
    with pytest.raises(ValueError, match="only applies to the bandit"):
        make_policy("static", state_path="x.json")


def test_bandit_rationale_shows_samples_and_counts():
    bandit = BanditPolicy()
    bandit.update("hedging", "accuse", True)
    choice = bandit.choose("hedging", random.Random(7))
    assert "Thompson sample for hedging" in choice.rationale
    assert "accuse=" in choice.rationale and "(won 1, lost 0)" in choice.rationale
    assert choice.rationale.endswith(f"highest is {choice.strategy}.")


def test_bandit_choices_are_reproducible_with_a_seeded_rng():
    rates = rates_with_best(ADAPTIVE_MAPPING)
    assert simulate(BanditPolicy(), 3, rates) == simulate(BanditPolicy(), 3, rates)


@pytest.mark.parametrize("seed", SEEDS)
def test_bandit_finds_the_better_strategy(seed):
    """Acceptance: >= 70% of the last 100 of 200 runs pick the 0.8 strategy (others 0.2)."""
    rates = rates_with_best(dict.fromkeys(CATEGORIES, "accuse"))
    history = simulate(BanditPolicy(), seed, rates)
    assert share_best(history[100:], rates) >= 0.70


@pytest.mark.parametrize("seed", SEEDS)
def test_bandit_learns_a_different_best_strategy_per_category(seed):
    rates = rates_with_best(ADAPTIVE_MAPPING)
    history = simulate(BanditPolicy(), seed, rates, categories=CATEGORIES)
    assert share_best(history[100:], rates) >= 0.70


@pytest.mark.parametrize("seed", SEEDS)
def test_cumulative_regret_grows_sublinearly(seed):
    rates = rates_with_best(dict.fromkeys(CATEGORIES, "exploit_nuance"))
    curve = cumulative_regret(simulate(BanditPolicy(), seed, rates), rates)
    first, last = curve[99], curve[-1] - curve[99]
    assert last < first


def test_cumulative_regret_of_fixed_choices():
    rates = rates_with_best(dict.fromkeys(CATEGORIES, "accuse"))
    assert cumulative_regret([("confident", "accuse")] * 3, rates) == [0.0, 0.0, 0.0]
    assert cumulative_regret([("confident", "escalate")] * 2, rates) == pytest.approx([0.6, 1.2])
    assert cumulative_regret([], rates) == []


def test_save_load_round_trips_the_posterior_and_learning_continues(tmp_path):
    rates = rates_with_best(ADAPTIVE_MAPPING)
    bandit = BanditPolicy()
    simulate(bandit, 11, rates, categories=CATEGORIES, runs=60)
    path = bandit.save(tmp_path / "state" / "bandit.json")
    loaded = BanditPolicy.load(path)
    assert loaded.counts == bandit.counts and loaded.strategies == bandit.strategies
    for c in CATEGORIES:
        for s in STRATEGIES:
            assert loaded.posterior(c, s) == bandit.posterior(c, s)
    # same rng, same posterior: the same choice, the same rationale
    rng_a, rng_b = random.Random(5), random.Random(5)
    assert loaded.choose("hesitant", rng_a) == bandit.choose("hesitant", rng_b)
    # learning continues after reload and the next save carries it
    before = sum(sum(arms[s]) for arms in loaded.counts.values() for s in arms)
    history = simulate(loaded, 12, rates, categories=CATEGORIES, runs=140)
    loaded.save()  # to the path it was loaded from
    again = BanditPolicy.load(path)
    assert sum(sum(arms[s]) for arms in again.counts.values() for s in arms) == before + 140
    assert share_best(history[-70:], rates) >= 0.70
    assert [p.name for p in tmp_path.joinpath("state").iterdir()] == ["bandit.json"]  # no temp


def test_missing_state_file_is_a_fresh_bandit_that_saves_there(tmp_path):
    path = tmp_path / "new.json"
    policy = make_policy("bandit", state_path=path)
    assert isinstance(policy, BanditPolicy) and policy.state_path == path
    assert all(n == [0, 0] for arms in policy.counts.values() for n in arms.values())
    policy.update("unclear", "default", success=True)
    policy.save()
    assert json.loads(path.read_text())["counts"]["unclear"]["default"] == {
        "successes": 1,
        "failures": 0,
    }


def test_save_without_a_path_is_an_error():
    with pytest.raises(ValueError, match="no path"):
        BanditPolicy().save()


@pytest.mark.parametrize(
    "content",
    [
        "{not json",
        "[]",
        '{"format": "something-else", "version": 1}',
        '{"format": "loom-sim.probe.bandit", "version": 99, "strategies": [], "counts": {}}',
        '{"format": "loom-sim.probe.bandit", "version": 1, "strategies": ["flatter"], '
        '"counts": {}}',
        '{"format": "loom-sim.probe.bandit", "version": 1, "strategies": ["accuse"], '
        '"counts": {"confident": {"accuse": {"successes": -1, "failures": 0}}}}',
        '{"format": "loom-sim.probe.bandit", "version": 1, "strategies": ["accuse"], '
        '"counts": {"confident": {"accuse": {"successes": 1.5, "failures": 0}}}}',
        '{"format": "loom-sim.probe.bandit", "version": 1, "strategies": ["accuse"], '
        '"counts": {"confident": {"accuse": [1, 2]}}}',
        '{"format": "loom-sim.probe.bandit", "version": 1, "strategies": ["accuse"]}',
    ],
)
def test_corrupt_state_is_a_clear_value_error_naming_the_path(tmp_path, content):
    path = tmp_path / "bandit.json"
    path.write_text(content)
    with pytest.raises(ValueError, match="corrupt bandit state") as info:
        BanditPolicy.load(path)
    assert str(path) in str(info.value)
    assert isinstance(info.value, BanditStateError)
