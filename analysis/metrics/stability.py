"""Judgment stability and engagement from the event log (docs/design.md §5.2).

Input: one row per set-event of one scale (BROAD or FINE), columns ``grader``, ``unit``, ``seq``
(anything that orders a grader's events: a sequence number or a timestamp) and ``value``. A grading
opportunity is a (grader, unit) pair. Its first event sets the initial value; each later event is a
*change*; a change back to the initial value (from another) is a *revert*; a change to the value
already current is a *repeat*. FINE compares with a tolerance: ``|a - b| <= tolerance`` is equal.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ._checks import as_long, short

EVENT_COLUMNS = ("grader", "unit", "seq", "value")


def _as_events(events: pd.DataFrame, tolerance: float) -> pd.DataFrame:
    if not isinstance(tolerance, int | float) or not tolerance >= 0:
        raise ValueError(f"`tolerance` must be a number >= 0, got {short(tolerance)}")
    as_long(events, name="events", columns=EVENT_COLUMNS[:3])
    if "value" not in events.columns or events["value"].isna().any():
        raise ValueError("`events` needs a `value` column without missing values")
    if events.duplicated(["grader", "unit", "seq"]).any():
        row = events[events.duplicated(["grader", "unit", "seq"])].iloc[0]
        raise ValueError(
            f"`events` has two events with seq {short(row['seq'])} for grader {short(row['grader'])}, "
            f"unit {short(row['unit'])}"
        )
    return events.sort_values(["grader", "unit", "seq"], kind="stable").reset_index(drop=True)


def _same(a: pd.Series, b: pd.Series, tolerance: float) -> np.ndarray:
    if tolerance == 0 or not pd.api.types.is_numeric_dtype(a):
        return (a == b).to_numpy()
    return ((a - b).abs() <= tolerance + 1e-12).to_numpy()


def event_flags(events: pd.DataFrame, *, tolerance: float = 0.0) -> pd.DataFrame:
    """Each event flagged as ``first``, ``change``, ``revert`` and ``repeat``.

    Parameters
    ----------
    events : DataFrame with columns grader, unit, seq, value (see the module docstring).
    tolerance : values within it count as equal (0 for BROAD; e.g. 0.05 for FINE).

    Returns
    -------
    The events sorted by grader, unit, seq with boolean columns added.
    """
    frame = _as_events(events, tolerance)
    key = frame.groupby(["grader", "unit"], sort=False).ngroup()
    first = (key != key.shift()).to_numpy()
    initial = frame["value"].groupby(key).transform("first")
    previous = frame["value"].shift()
    repeat = ~first & _same(frame["value"], previous, tolerance)
    revert = ~first & ~repeat & _same(frame["value"], initial, tolerance)
    return frame.assign(opportunity=key.to_numpy(), first=first, change=~first, revert=revert, repeat=repeat)


def stability_counts(flags: pd.DataFrame) -> dict[str, object]:
    """What the stability figures of some opportunities are computed from, and can be summed over
    disjoint sets of opportunities (a run split into shards of graders adds them up):
    ``sizes`` maps a number of events to how many opportunities had that many; ``changes``,
    ``reverts`` and ``repeats`` count events."""
    per_opp = flags.groupby("opportunity")["first"].size()
    return {
        "sizes": {int(k): int(v) for k, v in per_opp.value_counts().sort_index().items()},
        "changes": int(flags["change"].sum()),
        "reverts": int(flags["revert"].sum()),
        "repeats": int(flags["repeat"].sum()),
    }


def stability_counts_add(a: dict[str, object], b: dict[str, object]) -> dict[str, object]:
    sizes = dict(a["sizes"])  # type: ignore[call-overload]
    for k, v in b["sizes"].items():  # type: ignore[attr-defined]
        sizes[k] = sizes.get(k, 0) + v
    return {
        "sizes": dict(sorted(sizes.items())),
        **{key: a[key] + b[key] for key in ("changes", "reverts", "repeats")},  # type: ignore[operator]
    }


def stability_summary(counts: dict[str, object]) -> dict[str, float | int]:
    """The stability figures (``judgment_stability``'s columns) from ``stability_counts``."""
    sizes: dict[int, int] = counts["sizes"]  # type: ignore[assignment]
    opportunities = sum(sizes.values())
    events = sum(k * v for k, v in sizes.items())
    top = max(sizes.values())
    mode = min(k for k, v in sizes.items() if v == top)  # lowest of the most frequent
    changes: int = counts["changes"]  # type: ignore[assignment]
    reverts: int = counts["reverts"]  # type: ignore[assignment]
    return {
        "opportunities": opportunities,
        "events": events,
        "mean_events": events / opportunities,
        "max_events": max(sizes),
        "mode_events": mode,
        "share_at_mode": sizes[mode] / opportunities,
        "pct_changed": 100.0 * (sum(v for k, v in sizes.items() if k > 1) / opportunities),
        "changes": changes,
        "reverts": reverts,
        "pct_reverts": 100.0 * reverts / changes if changes else 0.0,
        "repeats": counts["repeats"],  # type: ignore[dict-item]
    }


def _summarise(flags: pd.DataFrame) -> dict[str, float | int]:
    return stability_summary(stability_counts(flags))


def judgment_stability(events: pd.DataFrame, *, tolerance: float = 0.0) -> dict[str, object]:
    """Stability of judgments: overall and per grader.

    Parameters
    ----------
    events : DataFrame with columns grader, unit, seq, value -- one scale's set-events.
    tolerance : equality tolerance for numeric values (FINE).

    Returns
    -------
    dict with ``overall`` (opportunities, events, mean_events, max_events, mode_events,
    share_at_mode, pct_changed, changes, reverts, pct_reverts, repeats) and ``per_grader`` (a
    DataFrame with the same columns, indexed by grader).
    """
    flags = event_flags(events, tolerance=tolerance)
    per_grader = pd.DataFrame.from_dict(
        {g: _summarise(part) for g, part in flags.groupby("grader", sort=True)}, orient="index"
    )
    per_grader.index.name = "grader"
    return {"overall": _summarise(flags), "per_grader": per_grader}


# Event type that stops the clock: the page was hidden or lost focus (the log's page_focus events
# with visible = false; their visible = true counterpart is an ordinary event that starts it again).
PAGE_HIDDEN = "page_hidden"
IDLE_CAP = 300.0


def engagement(events: pd.DataFrame, *, idle_cap: float = IDLE_CAP) -> pd.DataFrame:
    """Active time on unit and auditions per grading opportunity.

    Active time counts only while the grader is on the unit with the page visible and focused,
    between interactions: each gap from one of a grader's events to their next is credited to the
    unit of the earlier event, capped at ``idle_cap`` seconds (a grader who walks away, or comes
    back the next day, adds at most that much); a gap that starts with the page hidden counts 0.
    Time after a grader's last event is not counted.

    Parameters
    ----------
    events : DataFrame with columns grader, unit, ``ts`` (datetime or seconds) and ``type`` (event
        type names of docs/design.md §2, plus ``page_hidden`` for the page leaving view; an
        ``audition`` row counts as one audition -- pass only the ``play`` actions if pauses and
        seeks should not count). All of a grader's unit events, not one unit's: the next event
        may be on another unit.
    idle_cap : the most one gap between two events may add, in seconds (default 300, 5 minutes).

    Returns
    -------
    DataFrame indexed by (grader, unit): ``seconds`` (active time) and ``auditions``.
    """
    if isinstance(idle_cap, bool) or not isinstance(idle_cap, int | float) or not idle_cap > 0:
        raise ValueError(f"`idle_cap` must be a number of seconds > 0, got {short(idle_cap)}")
    as_long(events, name="events", columns=("grader", "unit", "ts", "type"))
    ts = events["ts"]
    seconds = ts.astype("int64") / 1e9 if pd.api.types.is_datetime64_any_dtype(ts) else ts.astype(float)
    frame = pd.DataFrame(
        {
            "grader": events["grader"].to_numpy(),
            "unit": events["unit"].to_numpy(),
            "t": seconds.to_numpy(),
            "hidden": (events["type"] == PAGE_HIDDEN).to_numpy(),
            "audition": (events["type"] == "audition").astype(int).to_numpy(),
        }
    )
    frame = frame.sort_values(["grader", "t"], kind="stable")
    gap = frame.groupby("grader", sort=False)["t"].shift(-1) - frame["t"]
    frame["active"] = gap.clip(upper=float(idle_cap)).fillna(0.0).where(~frame["hidden"], 0.0)
    groups = frame.groupby(["grader", "unit"])
    return pd.DataFrame({"seconds": groups["active"].sum(), "auditions": groups["audition"].sum()})


def engagement_summary(per_opportunity: pd.DataFrame) -> dict[str, float]:
    """Mean and median seconds on a unit and auditions per unit, over opportunities."""
    return {
        "mean_seconds": float(per_opportunity["seconds"].mean()),
        "median_seconds": float(per_opportunity["seconds"].median()),
        "mean_auditions": float(per_opportunity["auditions"].mean()),
        "median_auditions": float(per_opportunity["auditions"].median()),
    }
