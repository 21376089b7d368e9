"""Dawid–Skene (categorical) and bias + noise (numeric) models: against crowd-kit, against plain
loop implementations of the same definitions, a worked example, recovery of known parameters,
invariances and errors."""

import numpy as np
import pandas as pd
import pytest

from analysis.metrics.dawid_skene import bias_noise, dawid_skene


def simulate(n_units=600, accuracy=(0.9, 0.8, 0.7, 0.6, 0.5), k=3, per_unit=4, seed=0):
    rng = np.random.default_rng(seed)
    truth = rng.integers(0, k, n_units)
    rows = []
    for u in range(n_units):
        for g in rng.choice(len(accuracy), per_unit, replace=False):
            value = truth[u] if rng.random() < accuracy[g] else (truth[u] + rng.integers(1, k)) % k
            rows.append((f"u{u:04d}", f"g{g}", int(value)))
    return pd.DataFrame(rows, columns=["unit", "grader", "value"]), truth


def loop_dawid_skene(frame, categories, smoothing=0.01, tol=1e-6, max_iter=100):
    """The definition written out with dicts and loops (no vectorisation), for comparison."""
    units, graders, k = sorted(frame.unit.unique()), sorted(frame.grader.unique()), len(categories)
    code = {c: i for i, c in enumerate(categories)}
    by_unit = {
        u: [(g, code[v]) for g, v in zip(grp.grader, grp.value, strict=True)] for u, grp in frame.groupby("unit")
    }
    post = {u: [sum(1 for _, a in js if a == t) / len(js) for t in range(k)] for u, js in by_unit.items()}

    def m_step(post):
        priors = [(sum(post[u][t] for u in units) + smoothing) / (len(units) + k * smoothing) for t in range(k)]
        theta = {}
        for g in graders:
            m = [[smoothing] * k for _ in range(k)]
            for u in units:
                for gg, a in by_unit[u]:
                    if gg == g:
                        for t in range(k):
                            m[t][a] += post[u][t]
            theta[g] = [[x / sum(row) for x in row] for row in m]
        return priors, theta

    priors, theta = m_step(post)
    it = 0
    while it < max_iter:
        new = {}
        for u in units:
            w = [priors[t] * np.prod([theta[g][t][a] for g, a in by_unit[u]]) for t in range(k)]
            new[u] = [x / sum(w) for x in w]
        change = max(abs(new[u][t] - post[u][t]) for u in units for t in range(k))
        post, it = new, it + 1
        priors, theta = m_step(post)
        if change < tol:
            break
    return np.array([post[u] for u in units]), np.array(priors), np.array([theta[g] for g in graders]), it


def test_it_matches_a_plain_loop_implementation_of_the_definition():
    frame, _ = simulate(n_units=80, seed=1)
    fit = dawid_skene(frame)
    post, priors, theta, it = loop_dawid_skene(frame, [0, 1, 2])
    assert fit.posterior.shape == (80, 3) and fit.iterations == it
    np.testing.assert_allclose(fit.posterior, post, atol=1e-10)
    np.testing.assert_allclose(fit.priors, priors, atol=1e-12)
    np.testing.assert_allclose(fit.confusion, theta, atol=1e-12)


def test_it_agrees_with_crowd_kit():
    crowdkit = pytest.importorskip("crowdkit.aggregation")
    frame, _ = simulate(n_units=300, seed=2)
    fit = dawid_skene(frame, tol=1e-8, max_iter=300)
    ck = crowdkit.DawidSkene(n_iter=300, tol=1e-8).fit(
        frame.rename(columns={"unit": "task", "grader": "worker", "value": "label"})
    )
    ck_post = ck.probas_.loc[fit.units, [0, 1, 2]].to_numpy()
    assert ck_post.shape == fit.posterior.shape == (300, 3)
    # crowd-kit does not smooth (it clips at 1e-12); with 0.01 smoothing on counts of ~hundreds the
    # fits differ only slightly.
    assert (fit.labels == ck.labels_.loc[fit.units].to_numpy()).mean() >= 0.99
    assert np.abs(fit.posterior - ck_post).mean() < 0.01
    ck_theta = np.stack([ck.errors_.loc[g].loc[[0, 1, 2], [0, 1, 2]].to_numpy().T for g in fit.graders])
    np.testing.assert_allclose(fit.confusion, ck_theta, atol=0.02)


def test_worked_example_first_m_step_and_e_step():
    # Unit a: graders x, y, z say 0, 0, 1; unit b: all say 1. Soft majority: a = (2/3, 1/3), b = (0, 1).
    frame = pd.DataFrame({"unit": ["a"] * 3 + ["b"] * 3, "grader": list("xyz") * 2, "value": [0, 0, 1, 1, 1, 1]})
    fit = dawid_skene(frame, max_iter=1, smoothing=0.01)
    # After one E-step, the M-step gives priors (Σ_u post_u0 + 0.01) / 2.02; check the E-step by hand
    # from the initial parameters: π = (0.6767/2.02, 1.3433/2.02); θ_x = rows t=0: (2/3+.01, .01)/(2/3+.02),
    # t=1: (1/3+.01, 1+.01)/(4/3+.02) (x said 0 on a, 1 on b);
    # θ_z: t=0: (.01, 2/3+.01)/(2/3+.02), t=1: (.01, 4/3+.01)/(4/3+.02).
    pi = np.array([2 / 3 + 0.01, 4 / 3 + 0.01]) / 2.02
    tx = np.array([[2 / 3 + 0.01, 0.01], [1 / 3 + 0.01, 1 + 0.01]])
    tx /= tx.sum(axis=1, keepdims=True)
    tz = np.array([[0.01, 2 / 3 + 0.01], [0.01, 4 / 3 + 0.01]])
    tz /= tz.sum(axis=1, keepdims=True)
    like_a = pi * tx[:, 0] * tx[:, 0] * tz[:, 1]
    like_b = pi * tx[:, 1] * tx[:, 1] * tz[:, 1]
    np.testing.assert_allclose(fit.posterior[0], like_a / like_a.sum(), atol=1e-12)
    np.testing.assert_allclose(fit.posterior[1], like_b / like_b.sum(), atol=1e-12)
    assert fit.iterations == 1 and not fit.converged
    assert np.isclose(fit.log_likelihood, np.log(like_a.sum()) + np.log(like_b.sum()))


def test_it_recovers_grader_accuracies_and_beats_majority_vote():
    frame, truth = simulate(n_units=3000, seed=3)
    fit = dawid_skene(frame)
    assert fit.converged and fit.accuracy.shape == (5,)
    np.testing.assert_allclose(fit.accuracy, [0.9, 0.8, 0.7, 0.6, 0.5], atol=0.04)
    model_acc = (fit.labels.astype(int) == truth).mean()
    counts = pd.crosstab(frame.unit, frame.value).to_numpy()
    majority_acc = (counts.argmax(axis=1) == truth).mean()
    assert model_acc > majority_acc + 0.01


def test_shuffling_rows_and_renaming_graders_changes_nothing():
    frame, _ = simulate(n_units=100, seed=4)
    fit = dawid_skene(frame)
    shuffled = frame.sample(frac=1, random_state=0).assign(grader=lambda f: "r" + f.grader)
    again = dawid_skene(shuffled)
    np.testing.assert_allclose(again.posterior, fit.posterior, atol=1e-12)


def test_unused_categories_are_kept_and_labels_are_values():
    frame = pd.DataFrame({"unit": [1, 1, 2, 2], "grader": ["a", "b", "a", "b"], "value": ["VS", "VS", "NS", "NS"]})
    fit = dawid_skene(frame, categories=["NS", "SS", "VS"])
    assert list(fit.labels) == ["VS", "NS"] and fit.posterior.shape == (2, 3)
    assert (fit.probability > 0.9).all()


@pytest.mark.parametrize(
    ("frame", "kwargs", "message"),
    [
        (pd.DataFrame({"unit": [1], "grader": ["a"]}), {}, "columns unit, grader, value"),
        (pd.DataFrame({"unit": [1, 1], "grader": ["a", "a"], "value": [0, 1]}), {}, "two values of grader 'a'"),
        (pd.DataFrame({"unit": [1], "grader": ["a"], "value": ["x"]}), {"categories": ["y", "z"]}, "'x' is not one of"),
        (pd.DataFrame({"unit": [1], "grader": ["a"], "value": [0]}), {"smoothing": 0}, "smoothing > 0"),
    ],
)
def test_bad_input_is_named(frame, kwargs, message):
    with pytest.raises(ValueError, match=message):
        dawid_skene(frame, **kwargs)


# --- numeric: bias and noise ------------------------------------------------------------------------
def simulate_scores(n_units=400, bias=(1.0, -0.5, 0.0, -0.5), noise=(0.2, 0.5, 1.0, 2.0), seed=0):
    rng = np.random.default_rng(seed)
    truth = rng.uniform(0, 10, n_units)
    rows = [(u, g, truth[u] + bias[g] + rng.normal(0, noise[g])) for u in range(n_units) for g in range(len(bias))]
    return pd.DataFrame(rows, columns=["unit", "grader", "value"]), truth


def loop_bias_noise(frame, floor, tol=1e-6, max_iter=500):
    units, graders = sorted(frame.unit.unique()), sorted(frame.grader.unique())
    rows = list(zip(frame.unit, frame.grader, frame.value, strict=True))
    t = {u: np.mean([y for uu, _, y in rows if uu == u]) for u in units}
    b = dict.fromkeys(graders, 0.0)
    pooled = np.mean([(y - t[u]) ** 2 for u, _, y in rows])
    var = dict.fromkeys(graders, max(pooled, floor**2))
    for _ in range(max_iter):
        new = {
            u: sum((y - b[g]) / var[g] for uu, g, y in rows if uu == u)
            / sum(1 / var[g] for uu, g, _ in rows if uu == u)
            for u in units
        }
        b = {g: np.mean([y - new[u] for u, gg, y in rows if gg == g]) for g in graders}
        shift = np.mean(list(b.values()))
        b = {g: v - shift for g, v in b.items()}
        new = {u: v + shift for u, v in new.items()}
        total_w = {u: sum(1 / var[g] for uu, g, _ in rows if uu == u) for u in units}
        new_var = {
            g: max(
                sum((y - new[u] - b[g]) ** 2 for u, gg, y in rows if gg == g)
                / sum(1 - (1 / var[g]) / total_w[u] for u, gg, _ in rows if gg == g),
                floor**2,
            )
            for g in graders
        }
        change = max(
            max(abs(new[u] - t[u]) for u in units), max(abs(np.sqrt(new_var[g]) - np.sqrt(var[g])) for g in graders)
        )
        t, var = new, new_var
        if change < tol:
            break
    return np.array([t[u] for u in units]), np.array([b[g] for g in graders]), np.sqrt([var[g] for g in graders])


def test_bias_noise_matches_a_plain_loop_implementation():
    frame, _ = simulate_scores(n_units=40, seed=5)
    frame = frame.sample(frac=0.8, random_state=1)  # missing judgments
    fit = bias_noise(frame)
    t, b, s = loop_bias_noise(frame, floor=0.01 * frame.value.std(ddof=0))
    assert fit.score.shape == (40,) and fit.converged
    np.testing.assert_allclose(fit.score, t, atol=1e-8)
    np.testing.assert_allclose(fit.bias, b, atol=1e-8)
    np.testing.assert_allclose(fit.noise, s, atol=1e-8)


def test_bias_noise_recovers_known_bias_and_noise():
    frame, truth = simulate_scores(n_units=2000, seed=6)
    fit = bias_noise(frame)
    assert abs(fit.bias.sum()) < 1e-9
    np.testing.assert_allclose(fit.bias, [1.0, -0.5, 0.0, -0.5], atol=0.05)
    np.testing.assert_allclose(fit.noise, [0.2, 0.5, 1.0, 2.0], rtol=0.1, atol=0.04)
    # The standard errors are honest: about 95% of units within 1.96 SE of the truth.
    covered = (np.abs(fit.score - truth) <= 1.96 * fit.score_se).mean()
    assert 0.92 <= covered <= 0.98
    # Weighting by noise beats the plain mean.
    plain = frame.groupby("unit").value.mean().to_numpy() - 0.0
    assert np.abs(fit.score - truth).mean() < np.abs(plain - truth).mean()


def test_noise_free_scores_are_recovered_exactly():
    frame = pd.DataFrame({"unit": [1, 1, 2, 2, 3, 3], "grader": list("ababab"), "value": [5, 3, 7, 5, 2, 0]})
    fit = bias_noise(frame)
    np.testing.assert_allclose(fit.bias, [1, -1], atol=1e-6)
    np.testing.assert_allclose(fit.score, [4, 6, 1], atol=1e-6)


def test_row_maxima_are_numpys_argmax_and_max_ties_and_nan_included() -> None:
    from analysis.metrics.dawid_skene import row_maxima

    rng = np.random.default_rng(4)
    posterior = rng.random((1000, 4))
    posterior[:100, 2] = posterior[:100, 1]  # ties: the lower column
    posterior[100:200] = 0.25
    for p in (posterior, posterior[:, :1], np.empty((0, 3))):
        at, best = row_maxima(p)
        assert np.array_equal(at, p.argmax(axis=1)) and np.array_equal(best, p.max(axis=1))
    posterior[5, 3] = np.nan
    at, best = row_maxima(posterior)
    assert at[5] == 3 and np.isnan(best[5]) and np.array_equal(at, posterior.argmax(axis=1))
