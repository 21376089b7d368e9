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


def stability_counts_per_grader(
    grader: np.ndarray, unit: np.ndarray, seq: np.ndarray, value: np.ndarray, *, tolerance: float = 0.0
) -> dict[int, dict[str, object]]:
    """Each grader's ``stability_counts`` of one scale's events, from arrays: what
    ``stability_counts`` gives of each grader's ``event_flags``, without a frame of the events.

    Parameters
    ----------
    grader, unit, seq : integer arrays, one element per event (see the module docstring; no two
        events of an opportunity with the same seq).
    value : the events' values: numbers, or integer codes of categories (compared for equality).
    tolerance : values within it count as equal (0 for BROAD; e.g. 0.05 for FINE).

    Returns
    -------
    grader (int) -> stability counts, by grader.
    """
    if not isinstance(tolerance, int | float) or not tolerance >= 0:
        raise ValueError(f"`tolerance` must be a number >= 0, got {short(tolerance)}")
    if value.dtype.kind == "f" and np.isnan(value).any():
        raise ValueError("`events` needs a `value` column without missing values")
    order = np.lexsort((seq, unit, grader))  # event_flags' order: grader, unit, then seq
    n = len(order)
    # One sorted copy of the events' length at a time (a shard holds millions of them).
    first = np.ones(n, dtype=bool)
    sorted_key = unit[order]
    first[1:] = sorted_key[1:] != sorted_key[:-1]
    sorted_key = grader[order]
    first[1:] |= sorted_key[1:] != sorted_key[:-1]
    starts = np.flatnonzero(first)
    graders, grader_starts = np.unique(sorted_key[starts], return_index=True)  # opportunities are by grader
    del sorted_key
    value = value[order]
    del order
    sizes = np.diff(np.append(starts, n))  # events of each opportunity
    repeat = np.zeros(n, dtype=bool)
    repeat[1:] = ~first[1:] & _same_arrays(value[1:], value[:-1], tolerance)
    initial = np.repeat(value[starts], sizes)  # each event's opportunity's first value
    revert = ~first & ~repeat & _same_arrays(value, initial, tolerance)
    del initial, value
    bounds = np.append(grader_starts, len(starts))
    event_bounds = np.append(starts, n)[bounds]
    reverts, repeats = (_sums(f, event_bounds) for f in (revert, repeat))
    out: dict[int, dict[str, object]] = {}
    for i, g in enumerate(graders):
        counts, how_many = np.unique(sizes[bounds[i] : bounds[i + 1]], return_counts=True)
        out[int(g)] = {
            "sizes": {int(k): int(v) for k, v in zip(counts, how_many, strict=True)},
            "changes": int(event_bounds[i + 1] - event_bounds[i] - (bounds[i + 1] - bounds[i])),
            "reverts": int(reverts[i]),
            "repeats": int(repeats[i]),
        }
    return out


def _sums(flags: np.ndarray, bounds: np.ndarray) -> np.ndarray:
    """How many of ``flags`` are set between each two consecutive ``bounds``."""
    return np.diff(np.concatenate([[0], np.cumsum(flags, dtype=np.int64)])[bounds])


def _same_arrays(a: np.ndarray, b: np.ndarray, tolerance: float) -> np.ndarray:
    """``_same`` on arrays."""
    if tolerance == 0 or a.dtype.kind not in "iufc":
        return a == b
    return np.abs(a - b) <= tolerance + 1e-12


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
    seconds = (ts.astype("int64") / 1e9 if pd.api.types.is_datetime64_any_dtype(ts) else ts.astype(float)).to_numpy()
    grader = events["grader"].to_numpy()
    # Each grader's events by time (a stable sort: events at the same instant keep their order).
    order = np.lexsort((seconds, grader))
    t, grader = seconds[order], grader[order]
    del seconds
    # The gap to the grader's next event, capped; their last event's, and one from a hidden page, 0.
    # In place, one array of the events' length at a time: a shard holds millions of them.
    active = np.empty(len(t))
    np.subtract(t[1:], t[:-1], out=active[:-1])
    del t
    np.minimum(active, float(idle_cap), out=active)
    active[:-1][grader[1:] != grader[:-1]] = 0.0
    active[-1:] = 0.0
    active[(events["type"] == PAGE_HIDDEN).to_numpy()[order]] = 0.0
    unit = events["unit"].to_numpy()[order]
    audition = (events["type"] == "audition").to_numpy()[order]
    del order
    # Opportunities as integer codes in (grader, unit) order; each one's sum taken in the events'
    # time order, as a groupby on the two columns sums them (the same last bits).
    by = np.lexsort((unit, grader))  # stable: each opportunity's events stay in time order
    grader, unit = grader[by], unit[by]
    new = np.ones(len(by), dtype=bool)
    new[1:] = (grader[1:] != grader[:-1]) | (unit[1:] != unit[:-1])
    keys = [grader[new], unit[new]]
    del grader, unit
    rank = np.cumsum(new, dtype=np.int64)
    rank -= 1
    del new
    code = np.empty_like(rank)
    code[by] = rank
    del rank, by
    seconds_sum = pd.Series(active).groupby(code, sort=True).sum().to_numpy()
    auditions = np.bincount(code[audition], minlength=len(keys[0])).astype(np.int64)
    index = pd.MultiIndex.from_arrays(keys, names=["grader", "unit"])
    return pd.DataFrame({"seconds": seconds_sum, "auditions": auditions}, index=index)


def engagement_summary(per_opportunity: pd.DataFrame) -> dict[str, float]:
    """Mean and median seconds on a unit and auditions per unit, over opportunities."""
    return {
        "mean_seconds": float(per_opportunity["seconds"].mean()),
        "median_seconds": float(per_opportunity["seconds"].median()),
        "mean_auditions": float(per_opportunity["auditions"].mean()),
        "median_auditions": float(per_opportunity["auditions"].median()),
    }
