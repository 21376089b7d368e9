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


@pytest.mark.parametrize(
    "kwargs,message",
    [
        ({"policy": "random"}, "`policy` must be one of"),
        ({"policy": "fixed", "initial_overlap": 6}, "initial_overlap"),
        ({"policy": "consensus", "budget": 10}, "smaller than the initial allocation"),
    ],
)
def test_bad_arguments_are_named(kwargs, message):
    args = {"initial_overlap": 2, "max_overlap": 5, **kwargs}
    with pytest.raises(ValueError, match=message):
        run_policy(campaign(), args.pop("policy"), **args)


def test_accuracies_that_are_not_probabilities_are_refused():
    with pytest.raises(ValueError, match="`accuracy` must hold"):
        simulate_judgments(
            np.array([0, 1]), np.array([1.2, 0.5, 0.5]), max_overlap=3, n_categories=2, rng=np.random.default_rng(0)
        )


def test_expected_entropy_drop_matches_the_apps_plain_implementation():
    from analysis.metrics.uncertainty_policy import expected_entropy_drop
    from grading.services.grader_model import expected_entropy_drop as plain

    rng = np.random.default_rng(5)
    theta = rng.dirichlet(np.ones(3), size=(2, 3))  # 2 graders, rows = truth
    priors = np.array([0.5, 0.3, 0.2])
    model = {"priors": priors.tolist(), "theta": {"7": theta[0].tolist(), "8": theta[1].tolist()}}
    judged = [(7, "b"), (8, "a")]
    # The posterior after those judgments, computed here by Bayes' rule.
    post = priors * theta[0][:, 1] * theta[1][:, 0]
    post /= post.sum()
    drops = expected_entropy_drop(post[None, :], theta)
    assert drops.shape == (1, 2)
    for g, grader_id in enumerate((7, 8)):
        assert drops[0, g] == pytest.approx(plain(model, judged, grader_id, categories=["a", "b", "c"]), abs=1e-12)


def test_an_uninformative_grader_is_expected_to_change_nothing():
    from analysis.metrics.uncertainty_policy import expected_entropy_drop

    uniform = np.full((1, 3, 3), 1 / 3)
    assert expected_entropy_drop(np.array([[0.5, 0.25, 0.25]]), uniform)[0, 0] == pytest.approx(0.0, abs=1e-12)


def test_uncertainty_with_dawid_skene_beats_consensus_for_fewer_judgments():
    sim = campaign(4, n=600)
    unc = run_policy(sim, "uncertainty", initial_overlap=2, max_overlap=5)
    cons = run_policy(sim, "consensus", initial_overlap=2, max_overlap=5)
    top = run_policy(sim, "fixed", initial_overlap=5, max_overlap=5)
    assert unc["judgments"] < cons["judgments"] and unc["judgments"] <= 0.65 * top["judgments"]
    assert unc["accuracy_ds"] >= top["accuracy"] - 0.01


def test_uncertainty_respects_budget_and_maximum_overlap():
    result = run_policy(campaign(1), "uncertainty", initial_overlap=2, max_overlap=3, budget=1000)
    assert 800 <= result["judgments"] <= 1000 and result["per_unit"] <= 3
