"""The orderings section of the report (ordering campaigns), docs/design.md §5.4.

Per query: the RBA consensus, agreement between graders, the ED of every method and the scores of
every uploaded system by every method. The numbers come from ``build_orderings_report`` (the same
builder as ``manage.py orderings``); this module only turns the database's frames into its long
``query, grader|system, rank, item`` input and keeps queries it cannot score, with the reason.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from analysis import metrics as m
from analysis.reports.orderings_report import build_orderings_report

NOISE_MAX_QUERIES = 50


def _golds(group: pd.DataFrame) -> np.ndarray | None:
    """The query's orderings as an (n, k) array, or None when they are not permutations of one set."""
    items = [list(x) for x in group["items"]]
    if len(items) == 0 or any(sorted(x) != sorted(items[0]) for x in items) or len(items[0]) < 2:
        return None
    return np.array(items, dtype=object).astype(str)


def _long(orderings: dict[str, tuple[list[str], np.ndarray]], who: str) -> pd.DataFrame:
    """``{query: (labels, (n, k) items)}`` as a long ``query, <who>, rank, item`` frame."""
    parts = []
    for query, (labels, items) in orderings.items():
        n, k = items.shape
        parts.append(
            pd.DataFrame(
                {
                    "query": query,
                    who: np.repeat(labels, k),
                    "rank": np.tile(np.arange(1, k + 1), n),
                    "item": items.ravel(),
                }
            )
        )
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=["query", who, "rank", "item"])


def _grader_rows(golds: np.ndarray, graders: list[int], pseudonyms: dict[int, str]) -> list[dict[str, Any]]:
    return [
        {
            "pseudonym": pseudonyms.get(g, f"grader-{g}"),
            "ac_tau_with_others": m.ac_score(golds[i], np.delete(golds, i, axis=0)),
        }
        for i, g in enumerate(graders)
    ]


def _system_sets(
    systems: pd.DataFrame | None, golds: dict[str, tuple[list[str], np.ndarray]], problems: dict[str, list[str]]
) -> dict[str, tuple[list[str], np.ndarray]]:
    """The systems' orderings of each scorable query; the others are noted under ``problems``."""
    out: dict[str, tuple[list[str], np.ndarray]] = {}
    if systems is None or systems.empty:
        return out
    for query_id, group in systems.sort_values(["query", "system"]).groupby("query", sort=True):
        query = str(int(query_id))
        if query not in golds:
            continue
        reference = sorted(golds[query][1][0].tolist())
        names, rows = [], []
        for name, items in zip(group["system"], group["ordering"], strict=True):
            if sorted(map(str, items)) != reference:
                problems.setdefault(query, []).append(
                    f"system {name!r} orders other items than the graders (candidates changed since the upload?)"
                )
                continue
            names.append(str(name))
            rows.append([str(i) for i in items])
        if names:
            out[query] = (names, np.array(rows, dtype=object).astype(str))
    return out


def orderings(
    frame: pd.DataFrame,
    labels: dict[int, str],
    pseudonyms: dict[int, str],
    *,
    rng: np.random.Generator,
    systems: pd.DataFrame | None = None,
    item_labels: dict[str, str] | None = None,
) -> dict[str, Any]:
    """The orderings section.

    Parameters
    ----------
    frame : ``query, grader, items`` (candidate public ids, first = most), one row per submitted ordering.
    systems : ``query, system, ordering`` (system name; public ids), one row per system and query.
    item_labels : public id -> what organizers see (candidate text, else its external id).

    Returns
    -------
    dict
        ``queries`` (per query: consensus, Kendall's W, mean pairwise τ, ED by method, ``systems``
        [{system, scores {method: value}}], or a ``problem``), ``methods``, ``ed`` (mean over
        queries), ``best_method`` (highest mean ED: the method the ED favours), ``systems`` (each
        system's mean score per method), ``noise`` (≤ 50 queries) and ``item_labels``.
    """
    rows, golds, graders = [], {}, {}
    for query_id, group in frame.groupby("query", sort=True):
        row: dict[str, Any] = {"query": int(query_id), "label": labels.get(int(query_id), str(query_id))}
        gold = _golds(group)
        if gold is None:
            row["problem"] = "the orderings of this query are not permutations of the same items"
        else:
            golds[str(int(query_id))] = ([str(g) for g in group["grader"]], gold)
            graders[str(int(query_id))] = [int(g) for g in group["grader"]]
        rows.append(row)
    problems: dict[str, list[str]] = {}
    system_sets = _system_sets(systems, golds, problems)
    n_multi = sum(1 for _, g in golds.values() if g.shape[0] >= 2)
    report = (
        build_orderings_report(
            _long(golds, "grader"),
            _long(system_sets, "system") if system_sets else None,
            noise=0 < n_multi <= NOISE_MAX_QUERIES,
            rng=rng,
        )
        if golds
        else {"queries": []}
    )
    built = {q["query"]: q for q in report["queries"]}
    for row in rows:
        query = str(row["query"])
        if query in built:
            row.update(_query_row(built[query], golds[query][1], graders[query], pseudonyms))
        if problems.get(query):
            row["problem"] = "; ".join(problems[query])
    return _section(rows, report, item_labels or {})


def _query_row(
    built: dict[str, Any], gold: np.ndarray, graders: list[int], pseudonyms: dict[int, str]
) -> dict[str, Any]:
    row: dict[str, Any] = {
        "orderings": built["n_graders"],
        "items": built["k"],
        "consensus": built["consensus"],
        "systems": built["systems"],
    }
    if built["n_graders"] >= 2:
        row.update(
            kendall_w=built["kendall_w"],
            mean_pairwise_tau=built["mean_tau"],
            ed=built["ed"],
            graders=_grader_rows(gold, graders, pseudonyms),
        )
    return row


def _section(rows: list[dict[str, Any]], report: dict[str, Any], item_labels: dict[str, str]) -> dict[str, Any]:
    out: dict[str, Any] = {"queries": rows, "methods": list(m.METHODS)}
    if report.get("best_method") is not None:
        out["ed"], out["best_method"] = report["ed"], report["best_method"]
    if report.get("noise"):
        out["noise"] = report["noise"]
    scored = [(s["system"], s["scores"]) for r in rows for s in r.get("systems", [])]
    if scored:
        names = sorted({name for name, _ in scored})
        out["systems"] = [
            {
                "system": name,
                "queries": sum(1 for n, _ in scored if n == name),
                "scores": {k: _mean([s[k] for n, s in scored if n == name]) for k in m.METHODS},
            }
            for name in names
        ]
    shown = {str(i) for r in rows for i in r.get("consensus", [])}
    out["item_labels"] = {i: item_labels[i] for i in sorted(shown) if i in item_labels}
    return out


def _mean(values: list[float | None]) -> float | None:
    finite = [v for v in values if v is not None and math.isfinite(v)]
    return float(np.mean(finite)) if finite else None
