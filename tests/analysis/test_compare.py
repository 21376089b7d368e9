"""analysis.reports.compare: where two runs' results differ."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from analysis import unit_blocks
from analysis.models import AnalysisRun
from analysis.reports.compare import results_differences, unit_results_differences
from tests.factories import make_campaign

RESULT = {
    "agreement": {"levels": [{"kappa": {"value": 0.4121, "ci": [0.38, 0.44]}, "name": "broad"}]},
    "n_units": 200,
    "model": {"converged": True, "alpha": None},
}


def test_a_result_equals_itself_and_its_copy():
    assert results_differences(RESULT, RESULT) == []
    assert results_differences(RESULT, {**RESULT, "model": {"converged": True, "alpha": None}}) == []


def test_it_names_the_path_and_both_values_of_a_differing_number():
    other = {**RESULT, "agreement": {"levels": [{"kappa": {"value": 0.4122, "ci": [0.38, 0.44]}, "name": "broad"}]}}
    assert results_differences(RESULT, other) == ["agreement.levels[0].kappa.value: 0.4121 != 0.4122"]


def test_numbers_within_the_tolerance_are_equal_relative_to_large_ones_absolute_near_zero():
    assert results_differences({"x": 1e6}, {"x": 1e6 + 1e-4}) == []  # relative: 1e-10
    assert results_differences({"x": 0.0}, {"x": 1e-10}) == []  # absolute
    assert results_differences({"x": 0.0}, {"x": 1e-8}) == ["x: 0.0 != 1e-08"]
    assert results_differences({"x": 1.0}, {"x": 1.01}, tolerance=0.1) == []
    assert results_differences({"x": 1.0}, {"x": 1.0 + 1e-12}, tolerance=0) == ["x: 1.0 != 1.000000000001"]


def test_an_int_and_the_same_float_are_equal_but_not_a_bool():
    assert results_differences([3, 0.5], [3.0, 0.5]) == []
    assert results_differences([True], [1]) == ["[0]: True != 1"]


def test_nan_equals_nan_and_none_but_no_number():
    assert results_differences([math.nan, None, math.nan], [None, math.nan, math.nan]) == []
    assert results_differences([math.nan], [0.0]) == ["[0]: nan != 0.0"]
    assert results_differences([None], [0]) == ["[0]: None != 0"]


def test_infinities_equal_only_themselves():
    assert results_differences([math.inf], [math.inf]) == []
    assert results_differences([math.inf], [1e300]) == ["[0]: inf != 1e+300"]


def test_strings_and_kinds_compare_exactly():
    assert results_differences({"s": "VS"}, {"s": "SS"}) == ["s: 'VS' != 'SS'"]
    assert results_differences({"s": [1]}, {"s": {"0": 1}}) == ["s: [1] != {'0': 1}"]
    assert results_differences({"s": "1"}, {"s": 1}) == ["s: '1' != 1"]


def test_it_names_keys_on_one_side_only_and_lists_of_other_lengths():
    assert results_differences({"a": 1, "b": 2}, {"a": 1, "c": 2}) == ["b: only in the first", "c: only in the second"]
    assert results_differences({"xs": [1, 2, 3]}, {"xs": [1, 5]}) == ["xs: 3 items != 2 items", "xs[1]: 2 != 5"]


def test_keys_that_are_not_names_are_quoted():
    assert results_differences({"graders": {"g 1": 1, "7": 2}}, {"graders": {"g 1": 0, "7": 3}}) == [
        "graders['g 1']: 1 != 0",
        "graders['7']: 2 != 3",
    ]


def test_two_different_top_level_values():
    assert results_differences(1, 2) == ["(top): 1 != 2"]
    assert results_differences([], [1]) == ["(top): 0 items != 1 items"]


@pytest.mark.parametrize("tolerance", [-1e-9, math.nan])
def test_it_rejects_a_negative_tolerance(tolerance):
    with pytest.raises(ValueError, match="tolerance must be a number ≥ 0"):
        results_differences({}, {}, tolerance=tolerance)


@pytest.mark.django_db
def test_unit_rows_are_compared_unit_by_unit():
    campaign = make_campaign(n_queries=1, n_candidates=4)
    first, second = (AnalysisRun.objects.create(campaign=campaign, status="succeeded") for _ in range(2))
    units = list(campaign.units.order_by("pk"))

    def rows(run, means, first_distribution):
        stored = [
            {"unit": unit.pk, "n": 2, "mean": mean, "std": None, "distribution": {"NS": 1, "VS": 1}}
            for unit, mean in zip(units, means, strict=False)
        ]
        stored[0]["distribution"] = first_distribution
        unit_blocks.write(run.pk, pd.DataFrame(stored))

    rows(first, [1.0, 2.0, 3.0], {"NS": 1, "VS": 1})
    rows(second, [1.0, 2.0 + 1e-12, 3.5, 4.0], {"NS": 2})
    assert unit_results_differences(first, second) == [
        f"unit {units[0].pk}.distribution.NS: 1 != 2",
        f"unit {units[0].pk}.distribution.VS: only in the first",
        f"unit {units[2].pk}.mean: 3.0 != 3.5",
        f"unit {units[3].pk}: only in the second run",
    ]
    assert unit_results_differences(first.pk, first.pk) == []
    assert unit_results_differences(first, second, tolerance=0.2) == [
        f"unit {units[0].pk}.distribution.NS: 1 != 2",
        f"unit {units[0].pk}.distribution.VS: only in the first",
        f"unit {units[3].pk}: only in the second run",
    ]
