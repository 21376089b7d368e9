"""The bias + noise fit on panels (``_panels``): the same fit as over the judgments' rows, to
rounding; used only where it pays and where the rows allow it."""

import numpy as np
import pandas as pd
import pytest

from analysis.metrics import _ds_em, _panels
from analysis.metrics.dawid_skene import Coded, _coded, bias_noise
from tests.metrics.test_dawid_skene import loop_bias_noise


@pytest.fixture
def panels(monkeypatch):
    """Panels however few the judgments are."""
    monkeypatch.setattr(_panels, "PANEL_JUDGMENTS", 1)


@pytest.fixture
def rows(monkeypatch):
    """The fit over the rows, however few the panels are."""
    monkeypatch.setattr(_panels, "PANEL_JUDGMENTS", 10**15)


def judged(seed: int, n_units: int = 600, n_graders: int = 5, held: float = 0.7) -> pd.DataFrame:
    """Scores in (unit, grader) order by graders of different bias and noise, each unit judged by a
    random set of them (at least one): a few dozen panels."""
    rng = np.random.default_rng(seed)
    holds = rng.random((n_units, n_graders)) < held
    holds[np.arange(n_units), rng.integers(0, n_graders, n_units)] = True
    unit, grader = np.nonzero(holds)
    truth = rng.uniform(0, 10, n_units)
    value = truth[unit] + rng.normal(0, 1, n_graders)[grader] + rng.normal(0, 0.3 + 0.4 * grader, unit.size)
    return pd.DataFrame({"unit": unit * 3 + 17, "grader": grader + 100, "value": np.round(value, 1)})


def fitted(frame: pd.DataFrame, monkeypatch, threshold: int):
    monkeypatch.setattr(_panels, "PANEL_JUDGMENTS", threshold)
    return bias_noise(frame)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_the_panels_fit_is_the_rows_fit_to_rounding(seed, monkeypatch):
    frame = judged(seed)
    on_panels = fitted(frame, monkeypatch, 1)
    assert len(_panels_of(frame).members) > 10  # many panels, of every size
    on_rows = fitted(frame, monkeypatch, 10**15)
    assert on_panels.iterations == on_rows.iterations and on_panels.converged
    for name in ("score", "score_se", "bias", "bias_se", "noise"):
        np.testing.assert_allclose(getattr(on_panels, name), getattr(on_rows, name), rtol=1e-10, atol=1e-12)
    assert on_panels.log_likelihood == pytest.approx(on_rows.log_likelihood, rel=1e-12)
    assert on_panels.n_judgments.tolist() == on_rows.n_judgments.tolist()
    assert on_panels.units.tolist() == on_rows.units.tolist()
    assert on_panels.graders.tolist() == on_rows.graders.tolist()


def test_the_panels_fit_matches_a_plain_loop_implementation(panels):
    frame = judged(4, n_units=60)
    fit = bias_noise(frame)
    t, b, s = loop_bias_noise(frame, floor=0.01 * frame.value.std(ddof=0))
    np.testing.assert_allclose(fit.score, t, atol=1e-8)
    np.testing.assert_allclose(fit.bias, b, atol=1e-8)
    np.testing.assert_allclose(fit.noise, s, atol=1e-8)


def _panels_of(frame: pd.DataFrame) -> _panels.Panels:
    p = _panels.panels_of(_coded(frame))
    assert p is not None
    return p


@pytest.mark.parametrize("block", [7, 1 << 17])
def test_each_panel_holds_its_graders_values_of_its_units(block, panels, monkeypatch):
    monkeypatch.setattr(_ds_em, "CHUNK", block)
    frame = judged(5, n_units=200)
    p = _panels_of(frame)
    held = {(u, g): v for u, g, v in frame.itertuples(index=False)}
    seen = 0
    for members, rows, values in zip(p.members, p.rows, p.values, strict=True):
        assert values.shape == (members.size, rows.size) and (np.diff(rows) > 0).all()
        for j, g in enumerate(p.graders[members]):
            for i, u in enumerate(p.units[rows]):
                assert values[j, i] == held[(u, g)]
                seen += 1
        every = {g for (u, g) in held if u in set(p.units[rows].tolist())}
        assert set(p.graders[members].tolist()) <= every
    assert seen == len(frame) == p.judgments


def test_the_same_judgments_give_the_same_panels_fit_to_the_last_bit(panels):
    """The fit reads nothing but the panels: codes made from a frame, or given, fit the same."""
    frame = judged(6)
    c = _coded(frame)
    given = Coded(c.unit.astype(np.int64), c.grader.astype(np.int16), c.value.copy(), c.units, c.graders)
    for a, b in ((bias_noise(frame), bias_noise(given)), (bias_noise(frame), bias_noise(_panels.panels_of(c)))):
        assert a.score.tolist() == b.score.tolist() and a.noise.tolist() == b.noise.tolist()
        assert a.log_likelihood == b.log_likelihood


def test_panels_are_left_out_where_they_do_not_pay_or_the_rows_do_not_allow_them(panels, monkeypatch):
    frame = judged(7, n_units=100)
    assert _panels.panels_of(_coded(frame)) is not None
    shuffled = frame.sample(frac=1, random_state=0)
    assert _panels.panels_of(_coded(shuffled)) is None  # not in (unit, grader) order
    many = judged(8, n_units=100, n_graders=64)
    assert _panels.panels_of(_coded(many)) is None  # more graders than a bit mask holds
    monkeypatch.setattr(_panels, "PANEL_JUDGMENTS", 50)
    assert _panels.panels_of(_coded(frame)) is None  # more than one panel per 50 judgments
    # whichever way it is fitted, the figures are the same to rounding
    np.testing.assert_allclose(bias_noise(shuffled).score, bias_noise(frame).score, rtol=1e-10)


def test_a_pair_held_twice_is_named_as_before(panels):
    frame = judged(9, n_units=50)
    twice = pd.concat([frame.iloc[:3], frame.iloc[2:]], ignore_index=True)  # in order, one pair twice
    with pytest.raises(ValueError, match="two values of grader"):
        bias_noise(twice)


def test_values_that_are_not_finite_are_refused_on_panels(panels):
    frame = judged(10, n_units=50)
    c = _coded(frame)
    c.value[5] = np.inf
    p = _panels.panels_of(c)
    assert p is not None
    with pytest.raises(ValueError, match="finite"):
        bias_noise(p)


def test_the_builder_given_slices_makes_the_panels_of_the_codes(panels):
    """``PanelsBuilder`` (the model section's two passes over slices of whole units) leaves out
    the units and graders with no number, as the codes do, and lays the same values out."""
    frame = judged(11, n_units=300, n_graders=6)
    frame.loc[frame["grader"] == 102, "value"] = np.nan  # a grader with no number at all
    frame.loc[frame["unit"] % 7 == 0, "value"] = np.nan  # units with none
    expected = _panels_of(frame)
    units, graders = np.unique(frame["unit"]), np.unique(frame["grader"])
    builder = _panels.PanelsBuilder(units, graders)
    kept = frame[frame["value"].notna()]
    unit, grader = np.searchsorted(units, kept["unit"]), np.searchsorted(graders, kept["grader"])
    cuts = np.flatnonzero(np.diff(unit)) + 1
    blocks = [(a, b) for a, b in zip([0, *cuts[::40]], [*cuts[::40], unit.size], strict=True) if a < b]
    assert len(blocks) > 3 and all(builder.look(unit[a:b], grader[a:b]) for a, b in blocks)
    assert builder.lay_out()
    for a, b in blocks:
        builder.fill(unit[a:b], kept["value"].to_numpy()[a:b])
    got = builder.panels()
    assert got.units.tolist() == expected.units.tolist() and got.graders.tolist() == expected.graders.tolist()
    for name in ("members", "rows", "values"):
        assert [a.tolist() for a in getattr(got, name)] == [a.tolist() for a in getattr(expected, name)]
    assert 102 not in got.graders and not (got.units % 7 == 0).any()
    builder = _panels.PanelsBuilder(units, graders)
    assert builder.look(unit[blocks[1][0] : blocks[1][1]], grader[blocks[1][0] : blocks[1][1]])
    assert not builder.look(unit[: blocks[0][1]], grader[: blocks[0][1]])  # out of order: no panels
