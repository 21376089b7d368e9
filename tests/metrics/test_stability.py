"""Judgment stability and engagement from the event log (docs/design.md §5.2)."""

import numpy as np
import pandas as pd
import pytest

from analysis.metrics import (
    engagement,
    engagement_summary,
    event_flags,
    judgment_stability,
    stability_counts,
    stability_counts_per_grader,
)


def events(rows):
    return pd.DataFrame(rows, columns=["grader", "unit", "seq", "value"])


LOG = events(
    [
        ("g", "u1", 1, "SS"),
        ("g", "u1", 2, "VS"),
        ("g", "u1", 3, "VS"),
        ("g", "u1", 4, "SS"),
        ("g", "u2", 1, "NS"),
        ("h", "u1", 2, "NS"),
        ("h", "u1", 1, "NS"),
    ]
)


def test_changes_reverts_and_repeats():
    flags = event_flags(LOG)
    g_u1 = flags[(flags.grader == "g") & (flags.unit == "u1")]
    assert g_u1[["change", "revert", "repeat"]].values.tolist() == [
        [False, False, False],
        [True, False, False],
        [True, False, True],
        [True, True, False],
    ]


def test_overall_summary():
    overall = judgment_stability(LOG)["overall"]
    assert overall == {
        "opportunities": 3,
        "events": 7,
        "mean_events": pytest.approx(7 / 3),
        "max_events": 4,
        "mode_events": 1,
        "share_at_mode": pytest.approx(1 / 3),
        "pct_changed": pytest.approx(200 / 3),
        "changes": 4,
        "reverts": 1,
        "pct_reverts": 25.0,
        "repeats": 2,
    }


def test_per_grader_summary_and_order_independence():
    shuffled = LOG.sample(frac=1, random_state=3)
    per_grader = judgment_stability(shuffled)["per_grader"]
    assert per_grader.loc["g", "opportunities"] == 2 and per_grader.loc["h", "repeats"] == 1
    assert per_grader.loc["g", "mode_events"] == 1  # tie between 1 and 4 events: the lower


def test_fine_with_tolerance():
    log = events([("g", "u", 1, 5.0), ("g", "u", 2, 5.05), ("g", "u", 3, 7.0), ("g", "u", 4, 5.1)])
    strict = judgment_stability(log)["overall"]
    tolerant = judgment_stability(log, tolerance=0.1)["overall"]
    assert (strict["repeats"], strict["reverts"]) == (0, 0)
    assert (tolerant["repeats"], tolerant["reverts"]) == (1, 1)


def test_engagement_from_timestamps():
    ts = pd.to_datetime(["2024-01-01 10:00:00", "2024-01-01 10:00:30", "2024-01-01 10:01:00", "2024-01-01 11:00:00"])
    log = pd.DataFrame(
        {
            "grader": ["g", "g", "g", "h"],
            "unit": ["u", "u", "u", "u"],
            "ts": ts,
            "type": ["unit_viewed", "audition", "broad_set", "audition"],
        }
    )
    per = engagement(log)
    assert per.loc[("g", "u"), "seconds"] == 60 and per.loc[("g", "u"), "auditions"] == 1
    assert per.loc[("h", "u"), "seconds"] == 0  # a single event: no time between interactions
    assert engagement_summary(per)["mean_seconds"] == 30


def test_active_time_counts_visible_focused_time_between_interactions_with_idle_gaps_capped():
    # (seconds, unit, type): the grader looks at u1, rates it, moves to u2, hides the page for
    # 16 minutes, comes back, sets FINE, leaves the page open but idle for 16.5 minutes, then u1 again.
    g = [
        (0, "u1", "unit_viewed"),
        (10, "u1", "broad_set"),
        (20, "u2", "unit_viewed"),
        (30, "u2", "page_hidden"),
        (1000, "u2", "page_focus"),
        (1010, "u2", "fine_set"),
        (2000, "u1", "unit_viewed"),
        (2005, "u1", "broad_set"),
    ]
    # Another grader's events in between change nothing for this one.
    h = [(5, "u1", "unit_viewed"), (7, "u1", "audition"), (500, "u1", "broad_set")]
    log = pd.DataFrame([("g", *e) for e in g] + [("h", *e) for e in h], columns=["grader", "ts", "unit", "type"])
    log = log.sample(frac=1, random_state=1)  # the order of the rows does not matter
    per = engagement(log, idle_cap=300)
    assert len(per) == 3
    # u1: 0→10 and 10→20 (20 s), then 2000→2005 (5 s); the last event adds nothing.
    assert per.loc[("g", "u1"), "seconds"] == 25
    # u2: 20→30 (10 s); hidden 30→1000 (0); 1000→1010 (10 s); idle 1010→2000 capped at 300 s.
    assert per.loc[("g", "u2"), "seconds"] == 320
    # h: 5→7 (2 s), 7→500 capped (300 s).
    assert per.loc[("h", "u1"), "seconds"] == 302 and per.loc[("h", "u1"), "auditions"] == 1
    assert engagement(log, idle_cap=60).loc[("g", "u2"), "seconds"] == 80
    with pytest.raises(ValueError, match="`idle_cap` must be a number of seconds > 0"):
        engagement(log, idle_cap=0)


def test_errors():
    with pytest.raises(ValueError, match="`tolerance` must be a number >= 0"):
        judgment_stability(LOG, tolerance=-1)
    with pytest.raises(ValueError, match="lacks column"):
        judgment_stability(LOG.drop(columns="seq"))
    with pytest.raises(ValueError, match="two events with seq 1"):
        judgment_stability(pd.concat([LOG, LOG.iloc[:1]]))


def _random_log(rng, n, numeric):
    """Events of a few graders and units with few distinct values (repeats, reverts, ties in
    value within the tolerance), seq unique within an opportunity, rows in any order."""
    grader = rng.integers(0, 4, n) * 5 + 2
    unit = rng.integers(0, 7, n) - 3
    seq = np.empty(n, dtype=np.int64)
    for key in set(zip(grader, unit, strict=True)):
        rows = np.flatnonzero((grader == key[0]) & (unit == key[1]))
        seq[rows] = rng.permutation(len(rows)) * 3
    value = rng.choice([0.0, 0.05, 0.1, 0.2, 7.3], n) if numeric else rng.integers(0, 3, n)
    return grader, unit, seq, value


@pytest.mark.parametrize("numeric, tolerance", [(False, 0.0), (True, 0.0), (True, 0.05), (True, 0.1)])
def test_stability_counts_per_grader_are_those_of_event_flags(numeric, tolerance):
    rng = np.random.default_rng(7)
    for n in (1, 2, 5, 60, 400):
        grader, unit, seq, value = _random_log(rng, n, numeric)
        frame = pd.DataFrame({"grader": grader, "unit": unit, "seq": seq, "value": value})
        flags = event_flags(frame, tolerance=tolerance)
        expected = {int(g): stability_counts(part) for g, part in flags.groupby("grader", sort=True)}
        assert stability_counts_per_grader(grader, unit, seq, value, tolerance=tolerance) == expected


def test_stability_counts_per_grader_refuses_a_missing_number():
    with pytest.raises(ValueError, match="without missing values"):
        stability_counts_per_grader(np.array([1]), np.array([1]), np.array([0]), np.array([np.nan]))


def _engagement_by_two_column_groupby(events, idle_cap):
    """engagement as it was written first: the frame sorted, then a groupby on grader and unit."""
    ts = events["ts"]
    seconds = ts.astype("int64") / 1e9 if pd.api.types.is_datetime64_any_dtype(ts) else ts.astype(float)
    frame = pd.DataFrame(
        {
            "grader": events["grader"].to_numpy(),
            "unit": events["unit"].to_numpy(),
            "t": seconds.to_numpy(),
            "hidden": (events["type"] == "page_hidden").to_numpy(),
            "audition": (events["type"] == "audition").astype(int).to_numpy(),
        }
    ).sort_values(["grader", "t"], kind="stable")
    gap = frame.groupby("grader", sort=False)["t"].shift(-1) - frame["t"]
    frame["active"] = gap.clip(upper=float(idle_cap)).fillna(0.0).where(~frame["hidden"], 0.0)
    groups = frame.groupby(["grader", "unit"])
    return pd.DataFrame({"seconds": groups["active"].sum(), "auditions": groups["audition"].sum()})


def test_engagement_is_the_two_column_groupby_to_the_last_bit():
    rng = np.random.default_rng(11)
    for trial in range(60):
        n = int(rng.integers(1, 300))
        times = [rng.random(n) * 1e6, np.round(rng.random(n) * 20) * 100.0][trial % 2]  # ties in time
        log = pd.DataFrame(
            {
                "grader": rng.integers(0, 4, n) * 7 + 3,
                "unit": rng.integers(0, 6, n) - 2,
                "ts": times,
                "type": rng.choice(["audition", "page_hidden", "broad_set", "unit_viewed"], n),
            }
        )
        if trial % 3 == 1:
            log["ts"] = pd.to_datetime(1.7e18 + log["ts"].to_numpy() * 1e9, utc=True)
            log["type"] = log["type"].astype("category")
        cap = [300.0, 60, 0.5][trial % 3]
        expected, got = _engagement_by_two_column_groupby(log, cap), engagement(log, idle_cap=cap)
        assert got.equals(expected) and got.index.equals(expected.index) and got.index.names == ["grader", "unit"]
        assert list(got.dtypes) == list(expected.dtypes)
