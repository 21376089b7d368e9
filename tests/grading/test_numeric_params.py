"""payloads.numeric_params: a numeric campaign's scale, remembered by the values it is made from."""

import pytest

from grading import schemes
from grading.errors import InvalidValue
from grading.models.choices import Scheme
from grading.services.payloads import numeric_params


@pytest.mark.parametrize(
    "params",
    [{}, {"min": 0, "max": 10, "step": 0.5}, {"min": 1.0, "max": 7, "step": 1}, {"min": -3, "max": 3, "labels": ["x"]}],
)
def test_it_is_what_normalise_params_makes_each_time_it_is_asked(params):
    for _ in range(2):
        assert dict(numeric_params(params)) == schemes.normalise_params(Scheme.NUMERIC, params)


def test_a_changed_scale_is_read_again():
    assert numeric_params({"min": 0, "max": 10, "step": 1})["max"] == 10
    assert numeric_params({"min": 0, "max": 5, "step": 1})["max"] == 5


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"min": True, "max": 10, "step": 1}, "scheme_params.min must be a number"),
        ({"min": 0, "max": [10], "step": 1}, "scheme_params.max must be a number"),
        ({"min": 5, "max": 1, "step": 1}, "must be greater than min"),
    ],
)
def test_a_bad_scale_is_refused_however_often_a_like_one_was_accepted(params, message):
    numeric_params({"min": 1, "max": 10, "step": 1})  # 1 == True as a dict key: the types keep them apart
    for _ in range(2):
        with pytest.raises(InvalidValue, match=message):
            numeric_params(params)


def test_the_remembered_scale_cannot_be_changed_by_a_caller():
    with pytest.raises(TypeError):
        numeric_params({"min": 0, "max": 10, "step": 1})["max"] = 99  # type: ignore[index]
