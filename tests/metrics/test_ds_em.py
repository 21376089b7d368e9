"""The pattern-compressed Dawid–Skene EM equals the per-judgment EM it replaced (tests/metrics/ds_reference.py)
to 1e-9, on seeded random data of several shapes: same posteriors, priors, confusion matrices,
log-likelihood, iterations and convergence."""

import numpy as np
import pandas as pd
import pytest

from analysis.metrics import _ds_em
from analysis.metrics.dawid_skene import _coded, dawid_skene, dawid_skene_codes

from .ds_reference import _em as reference_em


def random_frame(*, n_units, n_graders, per_unit, k, seed, heavy=0):
    """Units judged by ``per_unit`` of the graders (at least one each); ``heavy`` units judged by all."""
    rng = np.random.default_rng(seed)
    truth = rng.integers(0, k, n_units)
    skill = rng.uniform(0.3, 0.95, n_graders)
    rows = []
    for u in range(n_units):
        count = n_graders if u < heavy else int(rng.integers(1, per_unit + 1))
        for g in rng.choice(n_graders, count, replace=False):
            right = rng.random() < skill[g]
            rows.append((u * 7 + 3, f"g{g:03d}", int(truth[u] if right else rng.integers(0, k))))
    return pd.DataFrame(rows, columns=["unit", "grader", "value"]).sample(frac=1, random_state=seed)


SHAPES = {
    "five graders on every unit": dict(n_units=4000, n_graders=5, per_unit=5, k=3, seed=1),
    "many graders, few on each": dict(n_units=3000, n_graders=60, per_unit=3, k=3, seed=2),
    "two categories": dict(n_units=2000, n_graders=8, per_unit=4, k=2, seed=3),
    "five categories": dict(n_units=1500, n_graders=12, per_unit=6, k=5, seed=4),
    "a few units judged by all (no patterns)": dict(n_units=300, n_graders=200, per_unit=2, k=3, seed=5, heavy=20),
}


@pytest.mark.parametrize("shape", SHAPES.values(), ids=SHAPES.keys())
@pytest.mark.parametrize("tol,max_iter", [(1e-6, 100), (1e-9, 400), (1e-6, 3)])
def test_it_equals_the_per_judgment_em(shape, tol, max_iter):
    frame = random_frame(**shape)
    categories = list(range(shape["k"]))
    fit = dawid_skene(frame, categories=categories, tol=tol, max_iter=max_iter)
    posterior, priors, confusion, log_likelihood, iterations, converged = reference_em(
        _coded(frame, value_codes=categories), shape["k"], tol=tol, max_iter=max_iter
    )
    assert (fit.iterations, fit.converged) == (iterations, converged)
    np.testing.assert_allclose(fit.posterior, posterior, rtol=0, atol=1e-9)
    np.testing.assert_allclose(fit.priors, priors, rtol=0, atol=1e-9)
    np.testing.assert_allclose(fit.confusion, confusion, rtol=0, atol=1e-9)
    assert fit.log_likelihood == pytest.approx(log_likelihood, rel=1e-9)


def test_patterns_are_formed_when_they_pay_and_not_when_one_unit_is_huge():
    c = _coded(random_frame(**SHAPES["five graders on every unit"]), value_codes=[0, 1, 2])
    pat = _ds_em.patterns_of(c.unit, c.grader * 3 + c.value, n_units=c.units.size, n_cells=15)
    assert pat.cells.shape[0] <= 4**5 - 1 < c.units.size  # each grader absent or one of 3 answers
    assert pat.weight.sum() == c.units.size
    # every unit's pattern holds exactly its own cells
    own = {(u, cell) for u, cell in zip(c.unit.tolist(), (c.grader * 3 + c.value).tolist(), strict=True)}
    rebuilt = {(u, cell) for u in range(c.units.size) for cell in pat.cells[pat.of_unit[u]].indices.tolist()}
    assert rebuilt == own
    c = _coded(random_frame(**SHAPES["a few units judged by all (no patterns)"]), value_codes=[0, 1, 2])
    pat = _ds_em.patterns_of(c.unit, c.grader * 3 + c.value, n_units=c.units.size, n_cells=600)
    assert pat.cells.shape[0] == c.units.size and (pat.of_unit == np.arange(c.units.size)).all()


def test_a_start_posterior_per_unit_is_honoured_as_before():
    frame = random_frame(**SHAPES["many graders, few on each"])
    c = _coded(frame, value_codes=[0, 1, 2])
    start = np.random.default_rng(9).dirichlet(np.ones(3), size=c.units.size)
    posterior, priors, confusion = dawid_skene_codes(
        c.unit, c.grader, c.value, n_units=c.units.size, n_graders=c.graders.size, k=3, start=start, max_iter=50
    )
    expected, expected_priors, expected_confusion, *_ = reference_em(c, 3, start=start, max_iter=50)
    np.testing.assert_allclose(posterior, expected, rtol=0, atol=1e-9)
    np.testing.assert_allclose(priors, expected_priors, rtol=0, atol=1e-9)
    np.testing.assert_allclose(confusion, expected_confusion, rtol=0, atol=1e-9)
