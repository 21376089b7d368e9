"""The ordering-aggregation report: per query, consensus, agreement, ED of each method, system scores.

Plain functions over pandas frames, shared by ``manage.py orderings`` and the app's report pages.
Long frames have one row per placed item: ``query, grader, rank, item`` for golds and
``query, system, rank, item`` for system orderings (rank 1 = first).
"""

from __future__ import annotations

import math
from dataclasses import asdict
from typing import Any

import numpy as np
import pandas as pd

from analysis.metrics.frespa import FrespaParams
from analysis.metrics.orderings import (
    METHODS,
    evaluation_discriminativeness,
    kendall_w,
    mean_pairwise_tau,
    noise_robustness,
    rba_consensus,
    score_orderings,
)

Orderings = dict[str, tuple[list[str], np.ndarray]]  # query -> (row labels, (n, k) items by place)


class OrderingsFrameError(ValueError):
    """A problem in a long orderings frame; ``who`` ("grader" or "system") tells which frame."""

    def __init__(self, message: str, *, who: str) -> None:
        super().__init__(message)
        self.who = who


def _where(frame: pd.DataFrame, index: Any) -> str:
    return f"{'line' if frame.index.name == 'line' else 'row'} {index}"


def orderings_from_frame(frame: pd.DataFrame, *, who: str = "grader") -> Orderings:
    """Validate a long ``(query, <who>, rank, item)`` frame and group it into orderings per query.

    Parameters
    ----------
    frame : DataFrame
        One row per placed item; values are read as strings (ranks as positive integers).
    who : "grader" or "system"
        Name of the column telling whose ordering a row belongs to.

    Messages name ``line N`` when the frame's index is named "line" and holds file line numbers
    (as the command's CSV reader makes it), ``row N`` of the index otherwise.

    Returns
    -------
    dict
        ``{query: (labels, orderings)}`` in order of first appearance; ``orderings`` is an
        ``(n, k)`` array of item labels, row i being ``labels[i]``'s ordering (labels sorted).

    Raises
    ------
    ValueError
        Naming the line and the problem: missing column, empty value, bad or repeated rank,
        repeated item, ranks not 1..k, or orderings of one query over different items.
    """
    columns = ["query", who, "rank", "item"]
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        where = "line 1: " if frame.index.name == "line" else ""
        raise OrderingsFrameError(f"{where}missing column(s) {missing}; expected header {','.join(columns)}", who=who)
    df = frame[columns].astype(str).apply(lambda col: col.str.strip())
    empty = df.eq("") | frame[columns].isna()
    if empty.any(axis=None):
        index = empty.any(axis=1).idxmax()
        column = empty.columns[empty.loc[index]][0]
        raise OrderingsFrameError(f"{_where(frame, index)}: empty `{column}`", who=who)
    rank = pd.to_numeric(df["rank"], errors="coerce")
    bad = rank.isna() | (rank < 1) | (rank % 1 != 0)
    if bad.any():
        index = bad.idxmax()
        raise OrderingsFrameError(
            f"{_where(frame, index)}: rank {df.loc[index, 'rank']!r} is not a positive integer", who=who
        )
    df["rank"] = rank.astype(np.int64)
    _check_duplicates(frame, df, who)
    _check_ranks(frame, df, who)
    return _group(frame, df, who)


def _check_duplicates(frame: pd.DataFrame, df: pd.DataFrame, who: str) -> None:
    for key, what in (("rank", "rank"), ("item", "item")):
        dup = df.duplicated(["query", who, key])
        if dup.any():
            row = df.loc[dup.idxmax()]
            value = int(row[key]) if key == "rank" else repr(row[key])
            raise OrderingsFrameError(
                f"{_where(frame, dup.idxmax())}: {who} {row[who]!r} gives "
                f"{what} {value} twice in query {row['query']!r}",
                who=who,
            )


def _check_ranks(frame: pd.DataFrame, df: pd.DataFrame, who: str) -> None:
    groups = df.groupby(["query", who], sort=False)["rank"]
    bad = groups.transform("max") != groups.transform("size")
    if bad.any():
        row = df.loc[bad.idxmax()]
        key = (row["query"], row[who])
        raise OrderingsFrameError(
            f"{_where(frame, bad.idxmax())}: ranks of {who} {row[who]!r} in "
            f"query {row['query']!r} are not 1..k (largest {groups.max()[key]}, "
            f"{groups.size()[key]} items)",
            who=who,
        )


def _group(frame: pd.DataFrame, df: pd.DataFrame, who: str) -> Orderings:
    out: Orderings = {}
    for query, part in df.sort_values([who, "rank"], kind="stable").groupby("query", sort=False):
        wide = part.pivot(index=who, columns="rank", values="item")
        labels = part[who].drop_duplicates().tolist()
        orderings = wide.loc[labels].to_numpy()
        if orderings.shape[1] < 2:
            raise OrderingsFrameError(
                f"{_where(frame, part.index[0])}: query {query!r} has fewer than 2 items", who=who
            )
        reference = np.sort(orderings[0])
        for label, row in zip(labels, np.sort(orderings, axis=1), strict=True):
            if not np.array_equal(row, reference):
                index = part.index[part[who] == label][0]
                raise OrderingsFrameError(
                    f"{_where(frame, index)}: {who} {label!r} in query {query!r} ranks items "
                    f"{sorted(row.tolist())} but {who} {labels[0]!r} ranks {sorted(reference.tolist())}",
                    who=who,
                )
        out[query] = (labels, orderings)
    return {q: out[q] for q in df["query"].drop_duplicates()}


def _num(value: float) -> float | None:
    value = float(value)
    return value if math.isfinite(value) else None


def _methods(values: dict[str, float] | pd.Series) -> dict[str, float | None]:
    return {m: _num(values[m]) for m in METHODS}


def _query_report(
    query: str,
    graders: list[str],
    golds: np.ndarray,
    systems: tuple[list[str], np.ndarray] | None,
    params: FrespaParams,
) -> dict[str, Any]:
    n, k = golds.shape
    ed = evaluation_discriminativeness(golds, frespa=params) if n >= 2 else dict.fromkeys(METHODS, math.nan)
    scored = []
    if systems is not None:
        names, orderings = systems
        table = score_orderings(golds, orderings, frespa=params)
        scored = [{"system": name, "scores": _methods(table.iloc[i])} for i, name in enumerate(names)]
    return {
        "query": query,
        "k": k,
        "n_graders": n,
        "graders": graders,
        "consensus": rba_consensus(golds).tolist(),
        "mean_tau": _num(mean_pairwise_tau(golds)),
        "kendall_w": _num(kendall_w(golds)),
        "ed": _methods(ed),
        "systems": scored,
    }


def build_orderings_report(
    golds: pd.DataFrame,
    systems: pd.DataFrame | None = None,
    *,
    frespa: FrespaParams | None = None,
    noise: bool = False,
    rng: np.random.Generator | None = None,
) -> dict[str, Any]:
    """The JSON-able ordering-aggregation report.

    Parameters
    ----------
    golds : DataFrame ``(query, grader, rank, item)``
    systems : DataFrame ``(query, system, rank, item)``, optional
        Scored against each query's golds by every method.
    frespa : FrespaParams, optional
        FreSPA's parameters (``max_len=None`` is each query's k).
    noise : bool
        Add the noise-robustness table (queries with at least 2 graders); needs ``rng``.
    rng : numpy.random.Generator, optional

    Returns
    -------
    dict
        ``queries`` (per query: ``query, k, n_graders, graders, consensus, mean_tau, kendall_w,
        ed {method: value}, systems [{system, scores {method: value}}]``), ``ed`` (mean over the
        queries where it is defined), ``best_method`` (highest mean ED), ``params`` and, with
        ``noise``, ``noise`` rows ``{ratio, ed, degradation_pct}``. Undefined values are None
        (ED needs 2 graders).
    """
    if noise and not isinstance(rng, np.random.Generator):
        raise ValueError(f"`rng` must be a numpy.random.Generator when `noise` is on, got {rng!r}")
    params = frespa or FrespaParams()
    gold_sets = orderings_from_frame(golds, who="grader")
    system_sets = {} if systems is None else orderings_from_frame(systems, who="system")
    if systems is not None:
        _check_systems(systems, gold_sets, system_sets)
    queries = [_query_report(q, labels, g, system_sets.get(q), params) for q, (labels, g) in gold_sets.items()]
    ed = {m: _mean([q["ed"][m] for q in queries]) for m in METHODS}
    defined = {m: v for m, v in ed.items() if v is not None}
    report: dict[str, Any] = {
        "queries": queries,
        "ed": ed,
        "best_method": max(defined, key=defined.__getitem__) if defined else None,
        "params": asdict(params),
    }
    if noise:
        report["noise"] = _noise_rows([g for _, g in gold_sets.values() if len(g) >= 2], rng, params)
    return report


def _check_systems(systems: pd.DataFrame, gold_sets: Orderings, system_sets: Orderings) -> None:
    for query, (names, orderings) in system_sets.items():
        index = systems.index[systems["query"].astype(str).str.strip() == query][0]
        where = _where(systems, index)
        if query not in gold_sets:
            raise OrderingsFrameError(f"{where}: query {query!r} has no gold orderings", who="system")
        gold_items = np.sort(gold_sets[query][1][0])
        if not np.array_equal(np.sort(orderings[0]), gold_items):
            raise OrderingsFrameError(
                f"{where}: system {names[0]!r} in query {query!r} ranks items "
                f"{sorted(orderings[0].tolist())} but the golds rank "
                f"{gold_items.tolist()}",
                who="system",
            )


def _mean(values: list[float | None]) -> float | None:
    kept = [v for v in values if v is not None]
    return float(np.mean(kept)) if kept else None


def _noise_rows(gold_sets: list[np.ndarray], rng: np.random.Generator, params: FrespaParams) -> list[dict]:
    if not gold_sets:
        return []
    table = noise_robustness(gold_sets, rng=rng, frespa=params)
    return [
        {
            "ratio": float(r),
            "ed": _methods(table.loc[r, "ed"]),
            "degradation_pct": _methods(table.loc[r, "degradation_pct"]),
        }
        for r in table.index
    ]


def format_orderings_table(report: dict[str, Any]) -> str:
    """Plain-text tables of a :func:`build_orderings_report` result, for terminals."""
    queries = pd.DataFrame(
        [
            {
                "query": q["query"],
                "k": q["k"],
                "graders": q["n_graders"],
                "mean_tau": q["mean_tau"],
                "kendall_w": q["kendall_w"],
                "consensus": " > ".join(map(str, q["consensus"])),
            }
            for q in report["queries"]
        ]
    )
    ed = pd.DataFrame({q["query"]: q["ed"] for q in report["queries"]}).T
    ed.loc["mean"] = pd.Series(report["ed"])
    parts = [
        "Queries",
        queries.to_string(index=False, float_format="{:.3f}".format),
        "",
        "ED by method (best: {})".format(report["best_method"]),
        ed[list(METHODS)].to_string(float_format="{:.3f}".format),
    ]
    rows = [
        {"query": q["query"], "system": s["system"], **s["scores"]} for q in report["queries"] for s in q["systems"]
    ]
    if rows:
        parts += ["", "System scores", pd.DataFrame(rows).to_string(index=False, float_format="{:.3f}".format)]
    if report.get("noise"):
        noise = pd.DataFrame([{"ratio": f"{r['ratio']:g}", **r["ed"]} for r in report["noise"]])
        deg = pd.DataFrame([{"ratio": f"{r['ratio']:g}", **r["degradation_pct"]} for r in report["noise"]])
        parts += [
            "",
            "ED with noise",
            noise.to_string(index=False, float_format="{:.3f}".format),
            "",
            "Degradation %",
            deg.to_string(index=False, float_format="{:.1f}".format),
        ]
    return "\n".join(parts) + "\n"
