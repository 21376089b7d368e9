"""selectors.value_events and stability_reduce on arrays: the same rows and counts as the frame-wide
ways they replaced (a groupby's cumcount; ``astype(str)`` then ``event_flags`` per scale)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from analysis import metrics as m
from analysis.pgcopy import code_dtype
from analysis.selectors import VALUE_EVENTS, unit_events_frame, value_events
from analysis.services.sections.behaviour import SCALES, stability_reduce
from grading.models import Assignment
from tests.factories import make_campaign, record


def _unit_events(rng: np.random.Generator, n: int, categorical: bool) -> pd.DataFrame:
    """Events with ties in every time key, other event types, a missing value and the text "None"."""
    kinds = rng.choice([*VALUE_EVENTS, "unit_viewed", "audition"], n)
    broad = rng.choice(["NS", "SS", "VS", None, "None"], n)
    fine = rng.choice(["0.0", "0.05", "0.1", "1", "7.3"], n)
    value = np.where(np.isin(kinds, ["fine_set", "score_set"]), fine, broad)
    value[np.isin(kinds, ["unit_viewed", "audition"])] = None
    seconds = rng.integers(0, 5, n).astype("datetime64[s]").astype("datetime64[ns]")
    frame = pd.DataFrame(
        {
            "grader": rng.integers(0, 3, n) + 7,
            "unit": rng.integers(0, 4, n) * 10,
            "type": kinds.astype(object),
            "ts": pd.Series(seconds[rng.permutation(n)]).dt.tz_localize("UTC"),
            "session_seq": rng.integers(0, 3, n),
            "server_ts": pd.Series(seconds).dt.tz_localize("UTC"),
            "value": pd.Series(value, dtype=object),
        }
    )
    if categorical:  # as unit_events_frame reads them
        for column in ("type", "value"):
            frame[column] = frame[column].astype(code_dtype(frame[column].dropna()))
    return frame


def _value_events_by_groupby(unit_events: pd.DataFrame) -> pd.DataFrame:
    """value_events as it was first written: object columns, a three-key groupby's cumcount."""
    frame = unit_events.astype({"type": object, "value": object})
    frame = frame[frame["type"].isin(VALUE_EVENTS)]
    frame = frame.sort_values(["ts", "session_seq", "server_ts"], kind="stable")
    frame = frame[["grader", "unit", "type", "value"]].reset_index(drop=True)
    frame.insert(3, "seq", frame.groupby(["grader", "unit", "type"]).cumcount())
    frame["value"] = frame["value"].where(frame["value"].notna(), None).astype(str)
    return frame


@pytest.mark.parametrize("categorical", [True, False])
def test_value_events_are_the_groupbys(categorical):
    rng = np.random.default_rng(5)
    for n in (1, 3, 50, 500):
        events = _unit_events(rng, n, categorical)
        expected, got = _value_events_by_groupby(events), value_events(events)
        assert list(got.columns) == ["grader", "unit", "type", "seq", "value"]
        assert got.astype({"type": object, "value": object}).equals(expected)


def _stability_by_event_flags(values: pd.DataFrame, tolerance: float) -> dict:
    parts = {}
    for kind, (label, numeric) in SCALES.items():
        events = values[values["type"] == kind]
        if events.empty:
            continue
        value = events["value"].astype(float) if numeric else events["value"].astype(str)
        scale_tolerance = tolerance if numeric else 0.0
        frame = events[["grader", "unit", "seq"]].assign(value=value.to_numpy())
        flags = m.event_flags(frame, tolerance=scale_tolerance)
        parts[label] = {
            "tolerance": scale_tolerance,
            "per_grader": {int(g): m.stability_counts(p) for g, p in flags.groupby("grader", sort=True)},
        }
    return parts


def test_stability_reduce_is_event_flags_per_scale():
    rng = np.random.default_rng(9)
    for n in (1, 40, 600):
        values = value_events(_unit_events(rng, n, categorical=True))
        assert stability_reduce(values, tolerance=0.05) == _stability_by_event_flags(
            values.astype({"type": object, "value": object}), 0.05
        )


@pytest.mark.django_db
def test_event_texts_are_codes_and_a_json_number_reads_as_its_text_on_every_backend():
    """The ORM path (SQLite) gets a JSON number or boolean as one; COPY gets PostgreSQL's text."""
    campaign = make_campaign(graders=1)
    assignment = Assignment.objects.filter(campaign=campaign).select_related("grader").order_by("pk").first()
    grader, unit = assignment.grader, assignment.unit
    record(grader, campaign, "fine_set", {"value": 6.5}, unit=unit, seq=1)
    record(grader, campaign, "broad_set", {"value": "SS"}, unit=unit, seq=2)
    record(grader, campaign, "page_focus", {"visible": False}, unit=unit, seq=3)
    record(grader, campaign, "audition", {"action": "pause"}, unit=unit, seq=4)
    frame = unit_events_frame(campaign_id=campaign.pk)
    assert all(isinstance(frame[c].dtype, pd.CategoricalDtype) for c in ("type", "value"))
    assert list(frame["value"].cat.categories) == ["6.5", "SS"]
    assert sorted(frame["type"]) == ["audition_other", "broad_set", "fine_set", "page_hidden"]
    values = value_events(frame)
    assert sorted(values["value"]) == ["6.5", "SS"] and list(values["seq"]) == [0, 0]
