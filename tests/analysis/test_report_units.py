"""The per-unit table gets the model's columns as a left merge would give them."""

from __future__ import annotations

import numpy as np
import pandas as pd

from analysis.services.report import _with_model_columns


def _units(ids):
    return pd.DataFrame(
        {"unit": ids, "query": [7] * len(ids), "n": [2] * len(ids), "mean": np.linspace(0, 1, len(ids))}
    )


def _model(ids):
    return pd.DataFrame(
        {
            "unit": ids,
            "model_label": np.arange(len(ids), dtype=float),
            "model_probability": np.full(len(ids), 0.5),
            "model_score": np.nan,
            "model_se": np.linspace(1, 2, len(ids)),
        }
    )


def test_the_same_units_in_the_same_order_take_the_columns_in_place():
    units, model = _units([3, 5, 9]), _model([3, 5, 9])
    expected = units.merge(model, on="unit", how="left")
    out = _with_model_columns(units, model)
    assert out is units
    pd.testing.assert_frame_equal(out, expected)


def test_other_units_or_another_order_are_merged():
    for ids in ([3, 9], [9, 5, 3], [3, 5, 9, 11]):
        units, model = _units([3, 5, 9]), _model(ids)
        pd.testing.assert_frame_equal(
            _with_model_columns(units.copy(), model), units.merge(model, on="unit", how="left")
        )
