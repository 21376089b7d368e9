"""The orderings section of the report (ordering campaigns): consensus and ED per query (DESIGN.md §5.4)."""
from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from analysis import metrics as m

NOISE_MAX_QUERIES = 50


def _golds(group: pd.DataFrame) -> np.ndarray | None:
    """The query's orderings as an (n, k) array, or None when they are not permutations of one set."""
    items = [list(x) for x in group["items"]]
    if len(items) == 0 or any(sorted(x) != sorted(items[0]) for x in items) or len(items[0]) < 2:
        return None
    return np.array(items, dtype=object).astype(str)


def _query_row(golds: np.ndarray, graders: list[int], pseudonyms: dict[int, str]) -> dict[str, Any]:
    n, k = golds.shape
    row: dict[str, Any] = {"orderings": n, "items": k, "consensus": m.rba_consensus(golds).tolist()}
    if n >= 2:
        row["kendall_w"] = m.kendall_w(golds)
        row["mean_pairwise_tau"] = m.mean_pairwise_tau(golds)
        row["ed"] = m.evaluation_discriminativeness(golds)
        row["graders"] = [{"pseudonym": pseudonyms.get(g, f"grader-{g}"),
                           "ac_tau_with_others": m.ac_score(golds[i], np.delete(golds, i, axis=0))}
                          for i, g in enumerate(graders)]
    return row


def orderings(frame: pd.DataFrame, labels: dict[int, str], pseudonyms: dict[int, str], *,
              rng: np.random.Generator) -> dict[str, Any]:
    """Per query: consensus ordering (RBA), Kendall's W, ED of every method; the campaign's ED table."""
    rows, gold_sets = [], []
    for query_id, group in frame.groupby("query", sort=True):
        golds = _golds(group)
        row: dict[str, Any] = {"query": int(query_id), "label": labels.get(int(query_id), str(query_id))}
        if golds is None:
            row["problem"] = "the orderings of this query are not permutations of the same items"
        else:
            row.update(_query_row(golds, [int(g) for g in group["grader"]], pseudonyms))
            if golds.shape[0] >= 2:
                gold_sets.append(golds)
        rows.append(row)
    out: dict[str, Any] = {"queries": rows, "methods": list(m.METHODS)}
    eds = [r["ed"] for r in rows if "ed" in r]
    if eds:
        out["ed"] = {method: _mean([e[method] for e in eds]) for method in m.METHODS}
    if gold_sets and len(gold_sets) <= NOISE_MAX_QUERIES:
        noise = m.noise_robustness(gold_sets, rng=rng)
        out["noise"] = [{"ratio": float(ratio), "ed": {k: noise.loc[ratio, ("ed", k)] for k in m.METHODS},
                         "degradation_pct": {k: noise.loc[ratio, ("degradation_pct", k)] for k in m.METHODS}}
                        for ratio in noise.index]
    return out


def _mean(values: list[float]) -> float:
    finite = [v for v in values if v is not None and math.isfinite(v)]
    return float(np.mean(finite)) if finite else math.nan
