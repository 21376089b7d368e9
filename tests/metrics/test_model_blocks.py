"""The model's passes over the judgments in blocks (dawid_skene._coded, _ds_em.patterns_of, bias_noise) give
exactly (==) what the whole-array computations they replaced gave, blocks of a few rows included."""

import numpy as np
import pandas as pd
import pytest
from scipy import sparse

from analysis.metrics import _ds_em
from analysis.metrics.dawid_skene import _coded, bias_noise


@pytest.fixture(params=[7, 1 << 17], ids=["blocks of 7 rows", "one block"])
def chunk(request, monkeypatch):
    monkeypatch.setattr(_ds_em, "CHUNK", request.param)
    return request.param


def frame_of(unit, grader, value):
    return pd.DataFrame({"unit": unit, "grader": grader, "value": value}).sample(frac=1, random_state=0)


def whole_coded(frame, value_codes=None):
    """dawid_skene._coded as it was: drop missing values, factorize."""
    frame = frame.dropna(subset=["value"])
    unit, units = pd.factorize(frame["unit"], sort=True)
    grader, graders = pd.factorize(frame["grader"], sort=True)
    if value_codes is None:
        return unit, grader, frame["value"].to_numpy(dtype=float), np.asarray(units), np.asarray(graders)
    index = {v: i for i, v in enumerate(value_codes)}
    return unit, grader, np.array([index[v] for v in frame["value"]]), np.asarray(units), np.asarray(graders)


IDS = {
    "dense ints": lambda rng, n: rng.integers(100, 100 + n // 3, n),
    "negative ints": lambda rng, n: rng.integers(-50, 10, n),
    "small ints": lambda rng, n: rng.integers(-100, 100, n).astype(np.int8),
    "sparse ints (factorized)": lambda rng, n: rng.integers(0, 10**12, n),
    "strings (factorized)": lambda rng, n: np.array([f"u{i}" for i in rng.integers(0, 40, n)], dtype=object),
}


@pytest.mark.parametrize("ids", IDS.values(), ids=IDS.keys())
@pytest.mark.parametrize("missing", [0.0, 0.3])
def test_codes_equal_factorizing(ids, missing, chunk):
    rng = np.random.default_rng(1)
    n = 300
    unit = ids(rng, n)
    grader = np.arange(n)  # one judgment per grader: no pair twice
    value = np.where(rng.random(n) < missing, np.nan, rng.normal(size=n))
    frame = frame_of(unit, grader, value)
    c, expected = _coded(frame), whole_coded(frame)
    for got, want in zip((c.unit, c.grader, c.value, c.units, c.graders), expected, strict=True):
        assert got.dtype.kind == want.dtype.kind and got.tolist() == want.tolist()
    assert c.units.dtype == expected[3].dtype
    categorical = frame.assign(
        value=np.where(np.isnan(value), None, np.array(["a", "b", "c"], dtype=object)[grader % 3])
    )
    c, expected = _coded(categorical, value_codes=["c", "b", "a"]), whole_coded(categorical, ["c", "b", "a"])
    assert c.value.tolist() == expected[2].tolist() and c.unit.tolist() == expected[0].tolist()


def test_a_pair_twice_and_a_value_off_the_scale_are_still_named(chunk):
    frame = pd.DataFrame({"unit": [1, 2, 2, 3], "grader": [1, 1, 1, 2], "value": ["a", "a", "b", None]})
    with pytest.raises(ValueError, match=r"two values of grader \S*1\S* for unit \S*2"):
        _coded(frame, value_codes=["a", "b"])
    frame = pd.DataFrame({"unit": [1, 2, 3, 4], "grader": [1, 1, 1, 2], "value": ["a", None, "z", "b"]})
    with pytest.raises(ValueError, match="'z' is not one of the categories"):
        _coded(frame, value_codes=["a", "b"])


def padded_patterns(unit, cell, n_units, n_cells):
    """_ds_em.patterns_of as it was: units' sorted cells padded to one width, sorted, grouped."""
    lengths = np.bincount(unit, minlength=n_units)
    width = int(lengths.max())
    order = np.lexsort((cell, unit))
    u, c = unit[order], cell[order]
    padded = np.full((n_units, width), -1, dtype=np.int32)
    padded[u, np.arange(u.size) - (np.cumsum(lengths) - lengths)[u]] = c
    rows = np.lexsort(padded.T[::-1])
    ordered = padded[rows]
    first = np.ones(n_units, dtype=bool)
    first[1:] = (ordered[1:] != ordered[:-1]).any(axis=1)
    of_unit = np.empty(n_units, dtype=np.int64)
    of_unit[rows] = np.cumsum(first) - 1
    rep = ordered[first]
    held = rep >= 0
    p = np.repeat(np.arange(rep.shape[0]), width).reshape(rep.shape)[held]
    cells = sparse.csr_matrix((np.ones(p.size), (p, rep[held].astype(np.int64))), shape=(rep.shape[0], n_cells))
    return of_unit, np.bincount(of_unit, minlength=rep.shape[0]).astype(float), cells


@pytest.mark.parametrize("n_graders,k", [(5, 3), (20, 3), (30, 3)])  # 15, 60 cells as bit masks; 90 padded
def test_patterns_equal_the_padded_ones(n_graders, k, chunk):
    rng = np.random.default_rng(n_graders)
    n_units = 500
    held = rng.random((n_units, n_graders)) < 0.3
    held[np.arange(n_units), rng.integers(0, n_graders, n_units)] = True
    unit, grader = np.nonzero(held)
    shuffle = rng.permutation(unit.size)
    unit, cell = unit[shuffle], (grader * k + rng.integers(0, k, unit.size))[shuffle]
    pat = _ds_em.patterns_of(unit.astype(np.int32), cell.astype(np.int32), n_units=n_units, n_cells=n_graders * k)
    of_unit, weight, cells = padded_patterns(unit, cell, n_units, n_graders * k)
    assert pat.of_unit.tolist() == of_unit.tolist() and pat.weight.tolist() == weight.tolist()
    for name in ("indptr", "indices", "data"):
        assert getattr(pat.cells, name).tolist() == getattr(cells, name).tolist()


def whole_bias_noise(frame, tol=1e-6, max_iter=500):
    """bias_noise on whole arrays (np.bincount over every judgment): the residuals' squares from Σ r² − b Σ r,
    the leverages' sum from Σ 1 / (Σ w on the unit)."""
    unit, grader, y, units, graders = whole_coded(frame)
    n_units, n_graders = units.size, graders.size
    per_unit, per_grader = np.bincount(unit, minlength=n_units), np.bincount(grader, minlength=n_graders)
    spread = float(y.std())
    floor = 0.01 * spread if spread > 0 else 1e-6
    score = np.bincount(unit, weights=y, minlength=n_units) / per_unit
    bias = np.zeros(n_graders)
    var = np.full(n_graders, max(float(((y - score[unit]) ** 2).mean()), floor**2))
    iterations = 0
    while iterations < max_iter:
        w = 1.0 / var[grader]
        new = np.bincount(unit, weights=w * (y - bias[grader]), minlength=n_units) / np.bincount(
            unit, weights=w, minlength=n_units
        )
        off = np.bincount(grader, weights=y - new[unit], minlength=n_graders)
        bias = off / per_grader
        squares = np.bincount(grader, weights=(y - new[unit]) ** 2, minlength=n_graders) - bias * off
        shift = bias.mean()
        bias, new = bias - shift, new + shift
        weights = 1.0 / np.bincount(unit, weights=w, minlength=n_units)
        dof = np.maximum(per_grader - np.bincount(grader, weights=weights[unit], minlength=n_graders) / var, 1e-9)
        new_var = np.maximum(squares / dof, floor**2)
        change = max(float(np.abs(new - score).max()), float(np.abs(np.sqrt(new_var) - np.sqrt(var)).max()))
        score, var, iterations = new, new_var, iterations + 1
        if change < tol:
            break
    score_se = 1.0 / np.sqrt(np.bincount(unit, weights=(1.0 / var)[grader], minlength=n_units))
    residual = y - score[unit] - bias[grader]
    log_likelihood = float(-0.5 * (np.log(2 * np.pi * var)[grader] + residual**2 / var[grader]).sum())
    return score, score_se, bias, np.sqrt(var), log_likelihood, iterations


def test_bias_noise_equals_the_whole_array_computation(chunk):
    rng = np.random.default_rng(3)
    n_units, n_graders = 700, 6
    held = rng.random((n_units, n_graders)) < 0.5
    held[:, 0] = True
    unit, grader = np.nonzero(held)
    truth = rng.normal(5, 2, n_units)
    value = truth[unit] + rng.normal(0, 1, n_graders)[grader] + rng.normal(0, 0.3 + grader, unit.size)
    value[rng.random(unit.size) < 0.1] = np.nan
    frame = frame_of(unit * 3 + 11, grader + 7, value)
    fit = bias_noise(frame)
    score, score_se, bias, noise, log_likelihood, iterations = whole_bias_noise(frame)
    assert fit.score.tolist() == score.tolist() and fit.score_se.tolist() == score_se.tolist()
    assert fit.bias.tolist() == bias.tolist() and fit.noise.tolist() == noise.tolist()
    assert (fit.log_likelihood, fit.iterations) == (log_likelihood, iterations)


@pytest.mark.parametrize("ordered", [True, False])
def test_a_pair_held_twice_is_found_in_order_or_not(ordered):
    """Pairs in (unit, grader) order are checked by comparing neighbours, others by sorting: both
    find the pair held twice, and neither finds one where there is none."""
    from analysis.metrics.dawid_skene import _pair_twice

    rng = np.random.default_rng(5)
    unit = np.repeat(np.arange(1000), 3)
    grader = np.tile(np.arange(3), 1000)
    order = np.arange(unit.size) if ordered else rng.permutation(unit.size)
    assert _pair_twice(unit[order], grader[order], 3) is None
    grader_twice = grader.copy()
    grader_twice[1501] = 0  # unit 500: grader 0 twice
    assert _pair_twice(unit[order], grader_twice[order], 3) == (500, 0)
