"""Bootstrap intervals: seeded, vectorised, and equal to the naive resampling loop."""

import numpy as np
import pytest

from analysis.metrics import (
    cohen_kappa_ci,
    fleiss_kappa,
    fleiss_kappa_ci,
    krippendorff_alpha,
    krippendorff_alpha_ci,
    percentile_interval,
    wide_to_counts,
)
from analysis.metrics.bootstrap import resample_weights
from analysis.metrics.krippendorff import _Parts, _replicate


def noisy_wide(rng, n_units=60, n_graders=4, k=4):
    truth = rng.integers(0, k, (n_units, 1))
    wide = np.where(rng.random((n_units, n_graders)) < 0.6, truth, rng.integers(0, k, (n_units, n_graders)))
    return wide.astype(float)


def test_weights_are_resampling_counts():
    rng = np.random.default_rng(0)
    weights = np.vstack(list(resample_weights(rng, np.ones(7, dtype=int), 25)))
    assert weights.shape == (25, 7) and (weights.sum(1) == 7).all()
    grouped = np.vstack(list(resample_weights(rng, np.array([60, 20]), 2000)))
    assert grouped.shape == (2000, 2) and (grouped.sum(1) == 80).all()
    assert grouped[:, 0].mean() == pytest.approx(60, abs=0.5)  # multinomial with shares 3/4, 1/4


def test_fleiss_replicates_equal_the_statistic_on_the_resampled_units():
    rng = np.random.default_rng(1)
    counts = wide_to_counts(noisy_wide(rng))
    weights = next(resample_weights(np.random.default_rng(2), np.ones(counts.shape[0], dtype=int), 5))
    expected = [fleiss_kappa(np.repeat(counts, w.astype(int), axis=0)) for w in weights]
    from analysis.metrics.agreement import fleiss_from_sums, fleiss_parts

    agree, n_i, _ = fleiss_parts(counts)
    sums = weights @ np.column_stack([agree, n_i, counts])
    ours = fleiss_from_sums(sums[:, 0] / counts.shape[0], sums[:, 2:] / sums[:, 1:2])
    assert ours == pytest.approx(expected, abs=1e-12)


@pytest.mark.parametrize("level", ["nominal", "ordinal", "interval", "ratio"])
def test_alpha_replicates_equal_the_statistic_on_the_resampled_units(level):
    rng = np.random.default_rng(3)
    wide = noisy_wide(rng) + 1
    wide[rng.random(wide.shape) < 0.2] = np.nan
    parts = _Parts(wide)
    weights = next(resample_weights(np.random.default_rng(4), np.ones(parts.n_units, dtype=int), 6))
    expected = [krippendorff_alpha(np.repeat(parts.wide, w.astype(int), axis=0), level) for w in weights]
    assert _replicate(parts, level)(weights) == pytest.approx(expected, abs=1e-12)


def test_intervals_are_seeded_and_contain_the_estimate():
    wide = noisy_wide(np.random.default_rng(5))
    counts = wide_to_counts(wide)
    first = fleiss_kappa_ci(counts, rng=np.random.default_rng(0), n_boot=400)
    again = fleiss_kappa_ci(counts, rng=np.random.default_rng(0), n_boot=400)
    assert first == again
    assert first.ci_low < first.value < first.ci_high
    alpha = krippendorff_alpha_ci(wide, "nominal", rng=np.random.default_rng(0), n_boot=400)
    assert alpha.ci_low < alpha.value < alpha.ci_high
    cohen = cohen_kappa_ci(wide[:, 0], wide[:, 1], weights="quadratic", rng=np.random.default_rng(0), n_boot=400)
    assert cohen.ci_low < cohen.value < cohen.ci_high


def test_undefined_statistic_gives_nan_interval_with_reason():
    result = fleiss_kappa_ci([[2, 0], [2, 0]], rng=np.random.default_rng(0), n_boot=10)
    assert np.isnan(result.value) and np.isnan(result.ci_low) and "identical" in result.reason


def test_percentile_interval_ignores_undefined_replicates():
    assert percentile_interval(np.array([np.nan, 0.0, 1.0, 2.0, np.nan]), 0.5) == (0.5, 1.5)
    assert all(np.isnan(percentile_interval(np.array([np.nan]))))


def test_bad_arguments():
    with pytest.raises(ValueError, match="`rng` must be a numpy.random.Generator"):
        fleiss_kappa_ci([[2, 0], [0, 2]], rng=0)
    with pytest.raises(ValueError, match="`n_boot` must be a positive integer, got 0"):
        fleiss_kappa_ci([[2, 0], [0, 2]], rng=np.random.default_rng(0), n_boot=0)
    with pytest.raises(ValueError, match="`confidence` must lie in"):
        percentile_interval(np.array([1.0]), 95)


@pytest.mark.parametrize("level", ["nominal", "ordinal", "interval"])
def test_alpha_groups_of_alike_units_give_the_replicates_of_their_units(level):
    """Units with the same value counts are resampled as one group (``krippendorff._groups``): a
    group drawn k times gives the statistic of any k of its units drawn, so weights over groups
    give what the same weights on one unit of each group give."""
    from analysis.metrics.krippendorff import _groups

    rng = np.random.default_rng(6)
    wide = noisy_wide(rng, n_units=2_000, n_graders=3, k=3) + 1
    wide[rng.random(wide.shape) < 0.1] = np.nan
    parts = _Parts(wide)
    groups, sizes = _groups(parts, level)
    assert groups.n_units == sizes.size < parts.n_units / 8 and sizes.sum() == parts.n_units
    weights = next(resample_weights(np.random.default_rng(7), sizes, 8))
    _, inverse, _ = np.unique(parts.coded[1], axis=0, return_inverse=True, return_counts=True)
    first = np.array([np.flatnonzero(inverse == g)[0] for g in range(sizes.size)])
    per_unit = np.zeros((weights.shape[0], parts.n_units))
    per_unit[:, first] = weights
    assert _replicate(groups, level)(weights) == pytest.approx(_replicate(parts, level)(per_unit), abs=1e-12)


def test_alpha_is_not_grouped_for_ratio_or_when_units_are_mostly_unlike():
    from analysis.metrics.krippendorff import _groups

    rng = np.random.default_rng(8)
    alike = _Parts(noisy_wide(rng, n_units=2_000, n_graders=3, k=3))
    assert _groups(alike, "ratio")[0] is alike
    unlike = _Parts(noisy_wide(rng, n_units=60, n_graders=4, k=4))
    assert _groups(unlike, "interval")[0] is unlike


def test_many_units_are_drawn_a_block_at_a_time_with_the_distribution_of_uniform_draws(monkeypatch):
    """Beyond UNITS_AT_ONCE units, each replicate draws how many of its n draws fall in each block
    of UNIT_BLOCK units, then draws within the blocks: every unit still counts as a draw of n uniform draws would
    count it (mean 1, variance 1 - 1/n, rows summing to n), the shorter last block included."""
    from analysis.metrics import bootstrap

    monkeypatch.setattr(bootstrap, "UNIT_BLOCK", 64)
    monkeypatch.setattr(bootstrap, "UNITS_AT_ONCE", 500)
    n, n_boot = 1_000, 4_000  # 15 blocks of 64 units and one of 40
    weights = np.vstack(list(resample_weights(np.random.default_rng(11), np.ones(n, dtype=int), n_boot)))
    assert weights.shape == (n_boot, n) and (weights.sum(1) == n).all()
    per_unit = weights.mean(0)
    assert per_unit.mean() == pytest.approx(1.0, abs=1e-12)  # every row sums to n
    assert np.abs(per_unit - 1).max() < 0.08  # 5 standard errors of a mean of 4,000 counts
    assert per_unit[-40:].mean() == pytest.approx(1.0, abs=0.02) and per_unit[:64].mean() == pytest.approx(
        1.0, abs=0.02
    )
    assert weights.var(0).mean() == pytest.approx(1 - 1 / n, abs=0.02)
    pairs = np.corrcoef(weights[:, :128].T)[np.triu_indices(128, 1)]  # within a block and across two
    assert pairs.mean() == pytest.approx(-1 / (n - 1), abs=0.005)
    again = np.vstack(list(resample_weights(np.random.default_rng(11), np.ones(n, dtype=int), n_boot)))
    assert (again == weights).all()  # seeded


def test_many_units_in_groups_are_counted_per_group(monkeypatch):
    """Grouped units (too many groups to draw the groups at once) are drawn as units a block at a
    time and counted per group: each group's count is its units' draws."""
    from analysis.metrics import bootstrap

    monkeypatch.setattr(bootstrap, "UNIT_BLOCK", 64)
    monkeypatch.setattr(bootstrap, "UNITS_AT_ONCE", 500)
    rng = np.random.default_rng(12)
    sizes = rng.integers(1, 4, size=400)  # 400 groups, about 800 units: too many groups to draw them at once
    n = int(sizes.sum())
    weights = np.vstack(list(resample_weights(np.random.default_rng(13), sizes, 3_000)))
    assert weights.shape == (3_000, sizes.size) and (weights.sum(1) == n).all()
    assert np.abs(weights.mean(0) - sizes).max() < 0.2  # mean count of a group: its units
    assert np.corrcoef(weights.mean(0), sizes)[0, 1] > 0.99


def test_up_to_units_at_once_the_draws_are_made_over_all_units_as_before():
    """At or below UNITS_AT_ONCE units the draws are uniform draws over all units counted at once,
    so the intervals of such campaigns are what they were."""
    from analysis.metrics.bootstrap import UNITS_AT_ONCE

    n = UNITS_AT_ONCE
    got = next(resample_weights(np.random.default_rng(14), np.ones(n, dtype=int), 3))
    draws = np.random.default_rng(14).integers(0, n, size=(got.shape[0], n)) + np.arange(got.shape[0])[:, None] * n
    assert (got == np.bincount(draws.ravel(), minlength=got.size).reshape(got.shape)).all()


@pytest.mark.parametrize("units_at_once", [500, 5_000], ids=["drawn a block at a time", "drawn at once"])
def test_sums_over_the_units_are_the_sums_of_the_same_draws(monkeypatch, units_at_once):
    """``bootstrap_sums`` gives the statistic of ``weights @ rows`` for the weights
    ``resample_weights`` draws from the same generator: beyond UNITS_AT_ONCE units, summed a block
    at a time as the block's counts are drawn (equal up to the order of the additions), and at or
    below it, exactly the same arithmetic."""
    from analysis.metrics import bootstrap

    monkeypatch.setattr(bootstrap, "UNIT_BLOCK", 64)
    monkeypatch.setattr(bootstrap, "UNITS_AT_ONCE", units_at_once)
    n, n_boot = 1_000, 300  # 15 blocks of 64 units and one of 40
    rows = np.random.default_rng(20).normal(size=(n, 3))
    sizes = np.ones(n, dtype=int)
    seen = []

    def statistic(sums: np.ndarray) -> np.ndarray:
        seen.append(sums)
        return sums[:, 0] / sums[:, 2]

    got = bootstrap.bootstrap_sums(sizes, rows, statistic, rng=np.random.default_rng(21), n_boot=n_boot)
    weights = np.vstack(list(resample_weights(np.random.default_rng(21), sizes, n_boot)))
    sums = weights @ rows
    assert got.shape == (n_boot,) and np.vstack(seen).shape == (n_boot, 3)
    if units_at_once < n:
        np.testing.assert_allclose(np.vstack(seen), sums, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(got, sums[:, 0] / sums[:, 2], rtol=1e-10)
    else:
        assert (np.vstack(seen) == sums).all() and (got == sums[:, 0] / sums[:, 2]).all()
    # Grouped units (fewer groups than units) are drawn as before and then multiplied.
    grouped = bootstrap.bootstrap_sums(np.full(250, 4), rows[:250], statistic, rng=np.random.default_rng(22), n_boot=50)
    grouped_weights = np.vstack(list(resample_weights(np.random.default_rng(22), np.full(250, 4), 50)))
    product = grouped_weights @ rows[:250]
    assert (grouped == product[:, 0] / product[:, 2]).all()


def test_interval_alpha_over_many_units_keeps_its_interval_when_summed_a_block_at_a_time(monkeypatch):
    """Interval alpha's replicates, drawn over more than UNITS_AT_ONCE units, are those of the
    replicate function applied to the same weights."""
    from analysis.metrics import bootstrap
    from analysis.metrics.krippendorff import _groups

    monkeypatch.setattr(bootstrap, "UNIT_BLOCK", 64)
    monkeypatch.setattr(bootstrap, "UNITS_AT_ONCE", 500)
    wide = np.random.default_rng(23).normal(size=(900, 4))  # continuous scores: one group a unit
    got = krippendorff_alpha_ci(wide, "interval", rng=np.random.default_rng(24), n_boot=200)
    groups, sizes = _groups(_Parts(wide), "interval")
    assert sizes.size == 900
    weights = np.vstack(list(resample_weights(np.random.default_rng(24), sizes, 200)))
    replicates = _replicate(groups, "interval")(weights)
    low, high = np.quantile(replicates, [0.025, 0.975])
    assert got.ci_low == pytest.approx(low, rel=1e-10) and got.ci_high == pytest.approx(high, rel=1e-10)


def test_replicates_over_many_units_are_the_same_on_one_thread_or_many(monkeypatch):
    """Beyond UNITS_AT_ONCE units each replicate draws from its own generator, seeded by one number
    drawn from the run's generator and the replicate's index: the sums are bit for bit the same
    whether one thread draws every replicate or four draw them at once, and the run's generator
    moves on by that one number whatever the number of replicates."""
    from analysis.metrics import bootstrap

    monkeypatch.setattr(bootstrap, "UNIT_BLOCK", 64)
    monkeypatch.setattr(bootstrap, "UNITS_AT_ONCE", 500)
    rows = np.random.default_rng(30).normal(size=(1_000, 3))
    sizes = np.ones(1_000, dtype=int)

    def sums(threads: int, n_boot: int = 40) -> tuple[np.ndarray, float]:
        monkeypatch.setattr(bootstrap, "_threads", lambda tasks: threads)
        rng = np.random.default_rng(31)
        got = bootstrap.bootstrap_sums(sizes, rows, lambda s: s[:, 0] * 1e6 + s[:, 1], rng=rng, n_boot=n_boot)
        return got, rng.random()

    alone, after = sums(1)
    together, after_together = sums(4)
    assert (alone == together).all() and after == after_together
    assert sums(1, n_boot=7)[1] == after  # the run's later draws do not depend on n_boot
    assert np.unique(alone).size == alone.size  # the replicates differ from one another
    first = int(np.random.default_rng(31).integers(0, 2**63))
    sums_3, _ = bootstrap._unit_sums_blocked([np.random.default_rng([first, 3])], np.ascontiguousarray(rows.T))
    assert alone[3] == sums_3[0, 0] * 1e6 + sums_3[0, 1]
    monkeypatch.setattr(bootstrap, "REPLICATES_TOGETHER", 1)  # each replicate through the blocks alone
    assert (sums(1)[0] == alone).all() and (sums(4)[0] == alone).all()


@pytest.mark.parametrize("length", [1, 2, 3, 64, 100, 1 << 16, 1 << 20])
def test_a_blocks_counts_cut_from_raw_words_are_those_of_integers_and_leave_the_generator_where_it_leaves_it(length):
    """``_counts_drawn`` reads a power-of-two block's draws from the generator's raw 64-bit words; the
    counts, and every draw after them, are ``Generator.integers``' own, whether a 32-bit half was
    kept from an earlier draw or not, and whether the draws are odd or even in number."""
    from analysis.metrics.bootstrap import _counts_drawn

    for seed in range(6):
        ours, theirs = np.random.default_rng([seed, 3]), np.random.default_rng([seed, 3])
        for step in range(8):
            if step % 3 == 1:  # a draw of one 32-bit half: the other is kept by the generator
                assert ours.integers(0, 1000) == theirs.integers(0, 1000)
            drawn = int(theirs.bit_generator.random_raw() % (2 * length + 3)) + step % 2
            ours.bit_generator.random_raw()
            expected = np.bincount(theirs.integers(0, length, size=drawn), minlength=length)
            counts = _counts_drawn(ours, length, drawn)
            assert counts.dtype == expected.dtype and np.array_equal(counts, expected)
            assert ours.bit_generator.state == theirs.bit_generator.state
        assert ours.integers(0, 2**40, size=5).tolist() == theirs.integers(0, 2**40, size=5).tolist()


def test_a_generator_other_than_pcg64_draws_its_blocks_with_integers():
    from analysis.metrics.bootstrap import _counts_drawn

    ours, theirs = (np.random.Generator(np.random.Philox(5)) for _ in range(2))
    counts = _counts_drawn(ours, 1 << 16, 70_001)
    assert np.array_equal(counts, np.bincount(theirs.integers(0, 1 << 16, size=70_001), minlength=1 << 16))
    assert ours.random() == theirs.random()


@pytest.mark.parametrize("kept_half", [False, True])
@pytest.mark.parametrize("drawn", [0, 1, 2, 3, 64, 65, 1001])
def test_passing_over_a_blocks_draws_leaves_the_generator_where_drawing_them_leaves_it(drawn, kept_half):
    """Moving past a block's draws without making them (to draw only the blocks that changed) leaves
    the generator's state exactly as drawing them does, the half of a word it keeps included."""
    from analysis.metrics import bootstrap

    def fresh() -> np.random.Generator:
        rng = np.random.default_rng([40, drawn])
        if kept_half:
            rng.integers(0, 64, size=1)  # takes a word's low half and keeps its high half
        return rng

    made, passed = fresh(), fresh()
    bootstrap._counts_drawn(made, 64, drawn)
    bootstrap._passed_over(passed, drawn)
    assert passed.bit_generator.state == made.bit_generator.state
    assert (passed.integers(0, 1 << 16, size=5) == made.integers(0, 1 << 16, size=5)).all()


def test_only_pcg64s_draws_are_passed_over():
    from analysis.metrics import bootstrap

    with pytest.raises(ValueError, match="only PCG64's draws"):
        bootstrap._passed_over(np.random.Generator(np.random.MT19937(1)), 3)


def test_a_run_takes_the_kept_products_of_the_blocks_that_did_not_change_and_sums_to_the_last_bit(monkeypatch):
    """Beyond UNITS_AT_ONCE units a run keeps each block's products; a run after it whose rows
    changed in a few blocks draws only those blocks and takes the others' products: the sums are
    those of drawing every block, bit for bit, and every block's products are kept again."""
    from analysis.metrics import bootstrap

    monkeypatch.setattr(bootstrap, "UNIT_BLOCK", 64)
    monkeypatch.setattr(bootstrap, "UNITS_AT_ONCE", 500)
    rows = np.random.default_rng(50).normal(size=(1_000, 4))  # 16 blocks, the last of 40 units
    sizes = np.ones(1_000, dtype=int)

    def sums(
        values: np.ndarray, kept: bootstrap.KeptSums | None = None, n_boot: int = 37, seed: int = 51
    ) -> np.ndarray:
        rng = np.random.default_rng(seed)
        return bootstrap.bootstrap_sums(sizes, values, lambda s: s, rng=rng, n_boot=n_boot, kept=kept)

    first = bootstrap.KeptSums()
    assert (sums(rows, first) == sums(rows)).all()
    assert (first.taken, first.blocks, len(first.kept)) == (0, 16, 16)
    changed = rows.copy()
    changed[[130, 131, 700]] += 0.5  # blocks 2 and 10
    changed[-1, 3] = 7.0  # the last, shorter block
    again = bootstrap.KeptSums(before=first.kept)
    assert (sums(changed, again) == sums(changed)).all()
    assert (again.taken, again.blocks) == (13, 16)
    assert len(set(again.kept) & set(first.kept)) == 13
    fresh = bootstrap.KeptSums()
    sums(changed, fresh)
    assert again.kept == fresh.kept  # the products kept, taken or drawn, are those drawn afresh
    for other in ({"n_boot": 36}, {"seed": 52}):  # other replicates, other draws: nothing is taken
        elsewhere = bootstrap.KeptSums(before=first.kept)
        assert (sums(rows, elsewhere, **other) == sums(rows, **other)).all()
        assert elsewhere.taken == 0
    shorter = bootstrap.KeptSums(before=first.kept)
    assert (sums(rows[:-1], shorter) == sums(rows[:-1])).all()  # one unit fewer: every draw moves
    assert shorter.taken == 0


def test_blocks_whose_draws_cannot_be_passed_over_are_drawn_again(monkeypatch):
    """With blocks of a length other than a power of two, ``integers`` may reject draws, so a block's
    draws cannot be passed over by counting words: every block is drawn, and the sums are right."""
    from analysis.metrics import bootstrap

    monkeypatch.setattr(bootstrap, "UNIT_BLOCK", 48)
    monkeypatch.setattr(bootstrap, "UNITS_AT_ONCE", 500)
    rows = np.random.default_rng(60).normal(size=(1_000, 4))
    sizes = np.ones(1_000, dtype=int)

    def sums(kept: bootstrap.KeptSums | None = None) -> np.ndarray:
        rng = np.random.default_rng(61)
        return bootstrap.bootstrap_sums(sizes, rows, lambda s: s, rng=rng, n_boot=20, kept=kept)

    first = bootstrap.KeptSums()
    sums(first)
    again = bootstrap.KeptSums(before=first.kept)
    assert (sums(again) == sums()).all() and (again.taken, again.blocks) == (0, 21)
