"""Allocation policies compared by simulation (docs/design.md §5.6)."""
import numpy as np
import pytest

from analysis.metrics.allocation import compare_policies, run_policy, simulate_judgments


def campaign(seed=0, n=400, accuracy=(0.9, 0.8, 0.7, 0.6, 0.55, 0.5), queries=None):
    rng = np.random.default_rng(seed)
    truth = rng.integers(0, 3, n)
    return simulate_judgments(truth, np.array(accuracy), max_overlap=5, n_categories=3, rng=rng, queries=queries)


def test_the_same_seed_gives_the_same_judgments():
    assert np.array_equal(campaign(7).judgments, campaign(7).judgments)


def test_perfect_graders_reach_consensus_at_once():
    sim = campaign(accuracy=(1, 1, 1, 1, 1))
    result = run_policy(sim, "consensus", initial_overlap=2, max_overlap=5)
    assert result["judgments"] == 2 * 400 and result["accuracy"] == 1.0 and result["rounds"] == 0


def test_fixed_spends_exactly_the_initial_overlap():
    result = run_policy(campaign(), "fixed", initial_overlap=3, max_overlap=5)
    assert result["judgments"] == 1200 and result["per_unit"] == 3


def test_policies_respect_the_budget_and_the_maximum_overlap():
    sim = campaign(1)
    for policy in ("consensus", "confusability", "query_deviation"):
        result = run_policy(sim, policy, initial_overlap=2, max_overlap=4, budget=1000)
        assert 800 <= result["judgments"] <= 1000
        assert result["per_unit"] <= 4


def test_consensus_beats_fixed_at_the_same_start_and_spends_less_than_the_maximum():
    table = compare_policies(campaign(2), initial_overlap=2, max_overlap=5)
    assert table.loc["consensus", "accuracy"] > table.loc["fixed", "accuracy"]
    assert table.loc["fixed", "judgments"] < table.loc["consensus", "judgments"] < table.loc["fixed@max", "judgments"]


def test_query_deviation_only_spends_on_deviating_queries():
    # Query 1's units are judged by coin-flippers: its disagreement rate deviates from the campaign's.
    rng = np.random.default_rng(3)
    truth = rng.integers(0, 3, 200)
    queries = np.repeat([0, 1, 2, 3], 50)
    sim = simulate_judgments(truth, np.full(6, 0.95), max_overlap=5, n_categories=3, rng=rng, queries=queries)
    noisy = simulate_judgments(truth, np.full(6, 0.34), max_overlap=5, n_categories=3, rng=rng, queries=queries)
    sim.judgments[queries == 1] = noisy.judgments[queries == 1]
    result = run_policy(sim, "query_deviation", initial_overlap=2, max_overlap=5)
    consensus = run_policy(sim, "consensus", initial_overlap=2, max_overlap=5)
    assert 400 < result["judgments"] < consensus["judgments"]


@pytest.mark.parametrize("kwargs,message", [
    ({"policy": "random"}, "`policy` must be one of"),
    ({"policy": "fixed", "initial_overlap": 6}, "initial_overlap"),
    ({"policy": "consensus", "budget": 10}, "smaller than the initial allocation"),
])
def test_bad_arguments_are_named(kwargs, message):
    args = {"initial_overlap": 2, "max_overlap": 5, **kwargs}
    with pytest.raises(ValueError, match=message):
        run_policy(campaign(), args.pop("policy"), **args)


def test_accuracies_that_are_not_probabilities_are_refused():
    with pytest.raises(ValueError, match="`accuracy` must hold"):
        simulate_judgments(np.array([0, 1]), np.array([1.2, 0.5, 0.5]), max_overlap=3, n_categories=2, rng=np.random.default_rng(0))
