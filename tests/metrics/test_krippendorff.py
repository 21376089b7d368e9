"""Krippendorff's alpha: the published worked example, the `krippendorff` package, invariances."""

import krippendorff
import numpy as np
import pytest

from analysis.metrics import Undefined, krippendorff_alpha, reason_of

nan = np.nan
# Krippendorff (2011), "Computing Krippendorff's Alpha-Reliability", section C: 4 observers x 12
# units with missing values; the paper gives alpha = 0.743 (nominal), 0.815 (ordinal), 0.849
# (interval) and 0.797 (ratio).
KRIPPENDORFF_2011 = np.array(
    [
        [1, 2, 3, 3, 2, 1, 4, 1, 2, nan, nan, nan],
        [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, nan, 3],
        [nan, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, nan],
        [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, nan],
    ]
).T  # (units, observers)


@pytest.mark.parametrize(
    "level, expected", [("nominal", 0.743), ("ordinal", 0.815), ("interval", 0.849), ("ratio", 0.797)]
)
def test_krippendorff_2011_worked_example(level, expected):
    assert krippendorff_alpha(KRIPPENDORFF_2011, level) == pytest.approx(expected, abs=5e-4)


def test_krippendorff_2011_binary_example():
    # Krippendorff (2011), section A: two observers, ten units, binary data; alpha = 0.095.
    a = [0, 1, 0, 0, 0, 0, 0, 0, 1, 0]
    b = [1, 1, 1, 0, 0, 1, 0, 0, 0, 0]
    assert krippendorff_alpha(np.column_stack([a, b]), "nominal") == pytest.approx(0.095, abs=5e-4)


@pytest.mark.parametrize("level", ["nominal", "ordinal", "interval", "ratio"])
def test_matches_the_krippendorff_package_on_random_data(level):
    rng = np.random.default_rng(["nominal", "ordinal", "interval", "ratio"].index(level))
    compared = 0
    for _ in range(100):
        n_units, n_graders = int(rng.integers(2, 40)), int(rng.integers(2, 7))
        scale = rng.choice([3, 5, 11])
        wide = rng.integers(1, scale + 1, size=(n_units, n_graders)).astype(float)
        wide[rng.random(wide.shape) < rng.uniform(0, 0.5)] = nan
        pairable = (~np.isnan(wide)).sum(1) >= 2
        if pairable.sum() < 1 or np.unique(wide[pairable][~np.isnan(wide[pairable])]).size < 2:
            continue
        expected = krippendorff.alpha(reliability_data=wide.T, level_of_measurement=level)
        assert krippendorff_alpha(wide, level) == pytest.approx(expected, abs=1e-9)
        compared += 1
    assert compared > 80


def test_continuous_values_interval():
    rng = np.random.default_rng(5)
    wide = rng.normal(size=(50, 4)) + rng.normal(size=(50, 1)) * 2
    wide[rng.random(wide.shape) < 0.2] = nan
    expected = krippendorff.alpha(reliability_data=wide.T, level_of_measurement="interval")
    assert krippendorff_alpha(wide, "interval") == pytest.approx(expected, abs=1e-9)


@pytest.mark.parametrize("level", ["nominal", "ordinal", "interval", "ratio"])
def test_invariant_to_shuffling_units_and_graders(level):
    rng = np.random.default_rng(0)
    shuffled = KRIPPENDORFF_2011[rng.permutation(12)][:, rng.permutation(4)]
    assert krippendorff_alpha(shuffled, level) == pytest.approx(krippendorff_alpha(KRIPPENDORFF_2011, level))


def test_nominal_is_invariant_to_relabelling_and_interval_to_affine_maps():
    relabelled = np.array([0, 7, 3, 9, 1, 4])[np.nan_to_num(KRIPPENDORFF_2011).astype(int)]
    relabelled = np.where(np.isnan(KRIPPENDORFF_2011), nan, relabelled)
    assert krippendorff_alpha(relabelled, "nominal") == pytest.approx(0.743, abs=5e-4)
    assert krippendorff_alpha(3 * KRIPPENDORFF_2011 - 7, "interval") == pytest.approx(0.849, abs=5e-4)


def test_perfect_agreement_gives_one_and_no_variation_gives_nan():
    assert krippendorff_alpha([[1, 1], [2, 2], [3, nan]], "ordinal") == 1.0
    alpha = krippendorff_alpha(
        [
            [2, 2],
            [
                2,
                2,
            ],
        ],
        "interval",
    )
    assert isinstance(alpha, Undefined) and "identical" in reason_of(alpha)
    assert "no unit" in reason_of(krippendorff_alpha([[1, nan], [nan, 2]], "nominal"))


def test_errors_name_the_argument():
    with pytest.raises(
        ValueError, match="`level` must be one of 'nominal', 'ordinal', 'interval', 'ratio'; got 'metric'"
    ):
        krippendorff_alpha(KRIPPENDORFF_2011, "metric")
    with pytest.raises(ValueError, match="all NaN"):
        krippendorff_alpha([[nan, nan]], "nominal")
    with pytest.raises(ValueError, match=r"ratings\[0, 1\] = inf"):
        krippendorff_alpha([[1, np.inf]], "nominal")
    with pytest.raises(ValueError, match="rectangular"):
        krippendorff_alpha([[1, 2], [3]], "nominal")


@pytest.mark.parametrize("level", ["nominal", "ordinal", "ratio"])
def test_many_distinct_values_use_the_sparse_path(level):
    rng = np.random.default_rng(9)
    wide = rng.integers(1, 200, size=(80, 4)).astype(float)  # > 64 distinct values
    wide[rng.random(wide.shape) < 0.25] = nan
    expected = krippendorff.alpha(reliability_data=wide.T, level_of_measurement=level)
    assert krippendorff_alpha(wide, level) == pytest.approx(expected, abs=1e-9)


def test_moments_by_blocks_equal_the_whole_matrix(monkeypatch: pytest.MonkeyPatch) -> None:
    from analysis.metrics import krippendorff as k

    rng = np.random.default_rng(7)
    wide = rng.integers(0, 101, (1000, 5)) / 10
    wide[rng.random(wide.shape) < 0.3] = np.nan
    observed = ~np.isnan(wide)
    m = observed.sum(axis=1)
    kept, m = wide[m >= 2], m[m >= 2].astype(float)
    x = np.where(~np.isnan(kept), kept, 0.0)
    x = np.where(~np.isnan(kept), x - k._centre(kept, ~np.isnan(kept)), 0.0)  # the one-array form
    s1, s2 = x.sum(axis=1), (x * x).sum(axis=1)
    expected = np.column_stack([2 * (m * s2 - s1**2) / (m - 1), m, s1, s2])
    monkeypatch.setattr(k, "BLOCK_UNITS", 37)
    parts = k._Parts(wide)
    assert np.array_equal(parts.moments, expected)
    assert parts.n_values == np.unique(kept[~np.isnan(kept)]).size == parts.coded[0].size
    signed = k._Parts(np.array([[0.0, -0.0, np.nan], [1.0, 0.0, 1.0]]))  # -0.0 is 0.0, as np.unique holds it
    assert signed.n_values == 2 == signed.coded[0].size


def test_the_moments_centre_is_the_mean_rounded_so_that_a_few_changed_values_leave_the_others_moments() -> None:
    """The interval moments are centred on the mean rounded to a power of two at or above four
    standard deviations: FINE's scores on 0, scores far from zero near their mean. Changing a few
    values leaves the centre, so every other unit's moments stay the same to the last bit, and
    alpha keeps its accuracy far from zero."""
    import krippendorff

    from analysis.metrics import krippendorff as k

    rng = np.random.default_rng(8)
    fine = rng.integers(0, 101, (2000, 5)) / 10
    assert k._centre(fine, ~np.isnan(fine)) == 0.0
    far = 1e6 + rng.integers(0, 11, (2000, 5)) / 10 + rng.integers(0, 2, (2000, 1))
    assert k._centre(far, ~np.isnan(far)) == 1e6
    for wide in (fine, far):
        changed = wide.copy()
        changed[:20, 0] = changed[:20, 0] + 0.7
        before, after = k._Parts(wide).moments, k._Parts(changed).moments
        assert np.array_equal(before[20:], after[20:]) and not np.array_equal(before[:20], after[:20])
    expected = krippendorff.alpha(reliability_data=far.T, level_of_measurement="interval")
    every_unit_once = k._Parts(far).moments.sum(axis=0)[None]  # the sums a replicate that drew each unit once has
    assert k._interval_of_sums(every_unit_once)[0] == pytest.approx(expected, rel=1e-9)


def _runs(wide: np.ndarray, units: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """``wide``'s values as runs of units (``interval_alpha_ci``'s pieces), ``units`` a piece."""
    pieces = []
    for start in range(0, wide.shape[0], units):
        rows = wide[start : start + units]
        observed = ~np.isnan(rows)
        pieces.append((observed.sum(axis=1), rows[observed]))  # row by row: unit after unit
    return pieces


@pytest.mark.parametrize(
    "values, n_units, n_graders",
    [(101, 3000, 6), (11, 3000, 5), (101, 200, 40), (3, 2000, 3)],  # few values are grouped, many not
)
def test_interval_alpha_from_runs_of_units_is_alpha_from_the_matrix(values, n_units, n_graders) -> None:
    """The runs' form sums a unit's values in their order where the matrix sums a row's in the
    graders' (with zeros for the gaps): the same alpha and interval, to rounding; and the value of
    the `krippendorff` package."""
    from analysis.metrics import interval_alpha_ci, krippendorff_alpha_ci

    rng = np.random.default_rng(values + n_graders)
    wide = rng.integers(0, values, (n_units, n_graders)) / 10
    wide[rng.random(wide.shape) < 0.4] = np.nan
    wide[:7] = np.nan  # units with no value, and with one
    wide[7:14, 1:] = np.nan
    matrix = krippendorff_alpha_ci(wide, "interval", rng=np.random.default_rng(1), n_boot=300)
    for units in (37, n_units):
        runs = interval_alpha_ci(_runs(wide, units), rng=np.random.default_rng(1), n_boot=300)
        assert runs == pytest.approx(matrix, rel=1e-12, abs=1e-13)  # alpha near 0: 1 - D_o / D_e cancels
    expected = krippendorff.alpha(reliability_data=wide.T, level_of_measurement="interval")
    assert runs.value == pytest.approx(expected, rel=1e-9)


def test_interval_alpha_from_runs_keeps_no_matrix_of_a_crowds_graders() -> None:
    """A crowd: 20,000 units, three of 5,000 graders on each. The matrix would be 800 MB; the runs
    hold the 60,000 values and each unit's count."""
    import tracemalloc

    from analysis.metrics import interval_alpha_ci

    rng = np.random.default_rng(5)
    lengths = np.full(20_000, 3)
    values = rng.integers(0, 101, lengths.sum()) / 10
    tracemalloc.start()
    try:
        est = interval_alpha_ci([(lengths, values)], rng=np.random.default_rng(2), n_boot=50)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 20 * 2**20
    crowd = np.full((4000, 1000), np.nan)  # a smaller crowd in the package's form, here only
    graders = np.stack([rng.choice(1000, 3, replace=False) for _ in range(4000)])
    np.put_along_axis(crowd, graders, values[:12_000].reshape(-1, 3), axis=1)
    expected = krippendorff.alpha(reliability_data=crowd.T, level_of_measurement="interval")
    got = interval_alpha_ci([(lengths[:4000], values[:12_000])], rng=np.random.default_rng(2), n_boot=50)
    assert got.value == pytest.approx(expected, rel=1e-9)
    assert est.value != got.value


def test_interval_alpha_from_runs_refuses_runs_that_do_not_add_up() -> None:
    from analysis.metrics import interval_alpha_ci

    with pytest.raises(ValueError, match="a piece has 3 values for units of 4"):
        interval_alpha_ci([(np.array([2, 2]), np.array([1.0, 2.0, 3.0]))], rng=np.random.default_rng(0))
    with pytest.raises(ValueError, match="NaN"):
        interval_alpha_ci([(np.array([2]), np.array([1.0, nan]))], rng=np.random.default_rng(0))
    assert reason_of(interval_alpha_ci([(np.array([1, 1]), np.array([1.0, 2.0]))], rng=np.random.default_rng(0)).value)
