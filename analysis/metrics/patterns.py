"""Agreement patterns, chi-squared tests of disagreement, and FINE-within-BROAD distributions.

The pattern analysis and the two chi-squared tests follow the MIREX Audio Music Similarity
meta-evaluation: Jones, M. C., Downie, J. S. & Ehmann, A. F. (2007). Human similarity judgments:
implications for the design of formal evaluations. ISMIR 2007, 539-542.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike
from scipy.stats import chi2_contingency

from ._checks import as_count_table, as_labels, short
from .agreement import rated_groups
from .shapes import distinct_rows

KINDS = ("full", "partial", "none")
OTHER = "·"


class Chi2(NamedTuple):
    """Pearson's chi-squared test of independence (no continuity correction)."""

    chi2: float
    df: int
    p: float
    reason: str | None = None  # why the test is undefined, when chi2 is NaN


def pattern_kinds(counts: ArrayLike) -> np.ndarray:
    """Agreement pattern of each unit: "full" (all equal), "partial" (the most frequent value occurs
    at least twice, not all equal) or "none" (all different); "" for units with < 2 judgments.

    Parameters
    ----------
    counts : (n_units, n_categories) count table.

    Returns
    -------
    (n_units,) array of str.
    """
    return np.array(["", *KINDS])[kind_codes(as_count_table(counts))]


def kind_codes(table: np.ndarray) -> np.ndarray:
    """Each unit's place in ``["", *KINDS]`` (int8) from a count table (floats, as
    ``as_count_table`` gives them, or integers): ``pattern_kinds`` without a string per unit, which
    at 10^7 judgments were 56 MB per array of them."""
    n_i, top = table.sum(axis=1), table.max(axis=1)
    codes = np.full(table.shape[0], 1 + KINDS.index("none"), dtype=np.int8)
    codes[top >= 2] = 1 + KINDS.index("partial")  # the rules in reverse: the first that holds wins
    codes[top == n_i] = 1 + KINDS.index("full")
    codes[n_i < 2] = 0
    return codes


def _pattern_label(row: np.ndarray, categories: Sequence[Any]) -> str:
    """ "VS,VS,VS", "SS,SS,·" or "VS,SS,NS": modal labels repeated, "·" for each other judgment."""
    order = np.arange(len(categories))[::-1]  # highest category first, as in "VS,SS,NS"
    top = row.max()
    if top == 1:
        return ",".join(str(categories[j]) for j in order if row[j] == 1)
    modal = [str(categories[j]) for j in order if row[j] == top for _ in range(int(top))]
    return ",".join(modal + [OTHER] * int(row.sum() - len(modal)))


def pattern_table(counts: ArrayLike, categories: Sequence[Any], *, sizes: ArrayLike | None = None) -> pd.DataFrame:
    """Units tabulated by agreement pattern.

    Parameters
    ----------
    counts : (n_units, n_categories) count table; units with < 2 judgments are left out.
    categories : the column labels, in scale order (patterns list the highest first).
    sizes : how many units each row stands for (``shapes.distinct_rows``' counts); None, one a row.

    Returns
    -------
    DataFrame with columns ``pattern``, ``kind``, ``count``, ``percent``; sorted by kind (full,
    partial, none) then count descending.
    """
    table = as_count_table(counts)
    if len(categories) != table.shape[1]:
        raise ValueError(
            f"`categories` has {len(categories)} labels for {table.shape[1]} columns: {short(list(categories))}"
        )
    table, given = rated_groups(table, sizes)
    distinct, inverse, sizes = distinct_rows(table)
    if given is not None:  # the units of the rows that are equal
        sizes = np.bincount(inverse, weights=given, minlength=len(distinct)).astype(np.int64)
    labels = [_pattern_label(row, categories) for row in distinct]  # one per distinct count row
    frame = pd.DataFrame({"pattern": labels, "kind": pattern_kinds(distinct) if len(distinct) else [], "count": sizes})
    frame = frame.groupby(["pattern", "kind"], as_index=False)["count"].sum()
    frame["percent"] = 100.0 * frame["count"] / max(1, int(sizes.sum()))
    frame["rank"] = frame["kind"].map({k: i for i, k in enumerate(KINDS)})
    return (
        frame.sort_values(["rank", "count", "pattern"], ascending=[True, False, True])
        .drop(columns="rank")
        .reset_index(drop=True)
    )


def kind_summary(counts: ArrayLike, *, sizes: ArrayLike | None = None) -> dict[str, dict[str, float]]:
    """Count and percent of units per pattern kind (full / partial / none); ``sizes``: how many units
    each row stands for (None, one a row)."""
    table = as_count_table(counts)
    if sizes is not None:
        table, sizes = rated_groups(table, sizes)
    codes = kind_codes(table)
    per_kind = np.bincount(codes, weights=sizes, minlength=len(KINDS) + 1).astype(np.int64)
    total = max(1, int(per_kind[1:].sum()))
    return {
        k: {"count": int(per_kind[j]), "percent": 100.0 * per_kind[j] / total} for j, k in enumerate(KINDS, start=1)
    }


def chi2_independence(table: ArrayLike) -> Chi2:
    """Pearson's chi-squared test on a contingency table, after dropping empty rows and columns.

    Parameters
    ----------
    table : (r, c) array of non-negative counts.

    Returns
    -------
    Chi2(chi2, df, p, reason); NaN with a reason when fewer than two non-empty rows or columns remain.
    """
    observed = as_count_table(table, name="table")
    observed = observed[observed.sum(axis=1) > 0][:, observed.sum(axis=0) > 0]
    if min(observed.shape) < 2:
        return Chi2(
            float("nan"),
            0,
            float("nan"),
            f"table has shape {observed.shape} after dropping empty rows and columns; the test needs at least 2 x 2",
        )
    result = chi2_contingency(observed, correction=False)
    return Chi2(float(result.statistic), int(result.dof), float(result.pvalue))


def chi2_graders(graders: ArrayLike, values: ArrayLike) -> Chi2:
    """Do graders use the categories differently? chi-squared on the graders x categories table.

    Parameters
    ----------
    graders, values : (n_judgments,) grader ids and their category labels.
    """
    graders, values = as_labels(graders, name="graders"), as_labels(values, name="values")
    if graders.shape != values.shape:
        raise ValueError(f"`graders` and `values` differ in length: {graders.size} != {values.size}")
    return chi2_independence(pd.crosstab(graders, values).to_numpy())


def chi2_queries(queries: ArrayLike, kinds: ArrayLike) -> Chi2:
    """Does disagreement vary across queries? chi-squared on queries x {full, partial, none}.

    Parameters
    ----------
    queries : (n_units,) the query of each unit.
    kinds : (n_units,) pattern kinds from :func:`pattern_kinds`; units with "" are ignored.
    """
    queries, kinds = as_labels(queries, name="queries"), as_labels(kinds, name="kinds").astype(str, copy=False)
    if queries.shape != kinds.shape:
        raise ValueError(f"`queries` and `kinds` differ in length: {queries.size} != {kinds.size}")
    unknown = ~np.isin(kinds, [*KINDS, ""])
    if unknown.any():
        raise ValueError(f"`kinds` must be one of {KINDS}; got {short(kinds[unknown][0])}")
    codes = np.zeros(kinds.size, dtype=np.int8)
    for j, kind in enumerate(KINDS, start=1):
        codes[kinds == kind] = j
    return chi2_queries_coded(pd.factorize(queries, sort=True)[0], codes)


def chi2_queries_coded(query_codes: np.ndarray, codes: np.ndarray) -> Chi2:
    """``chi2_queries`` of each unit's query as a code (0.., -1 for none) and its kind as its place
    in ``["", *KINDS]`` (``kind_codes``): the same table, with no string per unit.

    ``pd.crosstab(queries, kinds)`` without "" by counting codes: rows the queries, columns the
    kinds in the order of their names, those without a count dropped (as crosstab has none). At
    10^7 judgments crosstab's groupby held 400 MB."""
    query_codes, codes = np.asarray(query_codes), np.asarray(codes)
    if query_codes.shape != codes.shape:
        raise ValueError(f"`query_codes` and `codes` differ in length: {query_codes.size} != {codes.size}")
    return chi2_queries_counted(kinds_per_query(query_codes, codes))


def kinds_per_query(query_codes: np.ndarray, codes: np.ndarray) -> np.ndarray:
    """How many units of each query (its code 0.., -1 for none: left out) are of each place in
    ``["", *KINDS]`` (``kind_codes``): a (queries, 1 + len(KINDS)) table of counts."""
    keep = query_codes >= 0
    width = len(KINDS) + 1
    size = (int(query_codes.max()) + 1) * width if query_codes.size else 0
    counts = np.bincount(query_codes[keep] * width + codes[keep].astype(np.intp), minlength=size)
    return counts.reshape(-1, width)


def chi2_queries_counted(counts: np.ndarray) -> Chi2:
    """``chi2_queries`` of a table of queries (in the order of their first unit) by places in
    ``["", *KINDS]`` (``kinds_per_query``): the crosstab's rows and columns, those without a
    count dropped, the kinds in the order of their names, "" left out."""
    by_name = np.argsort(KINDS)  # the kinds in the order of their names: full, none, partial
    table = np.asarray(counts)[:, 1:][:, by_name]
    return chi2_independence(table[table.sum(axis=1) > 0][:, table.sum(axis=0) > 0])


def fine_within_broad(broad: ArrayLike, fine: ArrayLike, categories: Sequence[Any]) -> pd.DataFrame:
    """Distribution of FINE scores per BROAD category.

    Parameters
    ----------
    broad : (n_judgments,) BROAD labels, one of ``categories``.
    fine : (n_judgments,) FINE scores of the same judgments.
    categories : BROAD labels in scale order (rows of the result, all present).

    Returns
    -------
    DataFrame indexed by category: ``n``, ``mean``, ``std`` (ddof=1), ``min``, ``q1``, ``median``,
    ``q3``, ``max``; NaN where a category has too few judgments.
    """
    return fine_distributions(fine_by_broad(broad, fine, categories), categories)


def fine_by_broad(broad: ArrayLike, fine: ArrayLike, categories: Sequence[Any]) -> list[np.ndarray]:
    """Each category's FINE scores, in the order of the judgments: the list of ``categories``
    (arguments as :func:`fine_within_broad`'s). Scores gathered so, a part of the judgments at a
    time, and joined in order give :func:`fine_distributions` the table of them all."""
    broad = as_labels(broad, name="broad")
    fine = np.asarray(as_labels(fine, name="fine"), dtype=float)
    if broad.shape != fine.shape:
        raise ValueError(f"`broad` and `fine` differ in length: {broad.size} != {fine.size}")
    codes = pd.Categorical(broad, categories=list(categories)).codes  # -1: a label outside them (or none)
    unknown = codes < 0
    if unknown.any():
        raise ValueError(f"`broad` has a label outside {list(categories)}: {short(broad[unknown][0])}")
    return [fine[codes == j] for j in range(len(categories))]


@dataclass(frozen=True)
class TenthCounts:
    """A category's FINE scores when each is a tenth (0.0, 0.1, …): ``counts[k]`` is how many are
    k / 10."""

    counts: np.ndarray


def fine_distributions(scores: Iterable[np.ndarray | TenthCounts], categories: Sequence[Any]) -> pd.DataFrame:
    """The table of :func:`fine_within_broad` from each category's FINE scores (floats, or
    ``TenthCounts``), one per category of ``categories``.

    One category's scores at a time, each grouped as before (a group's figures do not depend on the
    other groups): a groupby of every judgment, whose quantiles sort them all, held 500 MB at 10^7
    judgments. ``scores`` may be a generator, so that one category's array is held at a time.
    """
    out = pd.concat(
        [
            _tenths_distribution(fine.counts, category)
            if isinstance(fine, TenthCounts)
            else _distribution(fine, category)
            for fine, category in zip(scores, categories, strict=True)
        ]
    )
    out.index = pd.Index(list(categories), name="broad")
    return out


def _tenths_distribution(counts: np.ndarray, category: Any) -> pd.DataFrame:
    """``_distribution`` of the scores that ``counts`` counts (``TenthCounts``), without a value per
    score: the order statistics from the cumulative counts, so min, max, the quartiles and the
    median are ``_distribution``'s to the last bit (pandas' linear interpolation, and the median as
    the mean of the two middle scores); the mean and the standard deviation from exact integer sums
    of tenths, correctly rounded (pandas' compensated sums of the floats differ from them by up to
    3e-14 relative at 10^7 scores, and depend on the scores' order)."""
    n = int(counts.sum())
    if n == 0:
        return _distribution(np.empty(0), category)
    tenths = np.flatnonzero(counts)
    counted = counts[tenths].astype(np.int64)
    below = np.cumsum(counted)

    def order(i: int) -> float:  # the i-th smallest score, from 0
        return float(tenths[np.searchsorted(below, i, side="right")] / 10)

    def quantile(q: float) -> float:
        position = q * (n - 1)
        low = math.floor(position)
        fraction = position - low
        value = order(low)
        return value if fraction == 0 else value + (order(low + 1) - value) * fraction

    total = int((counted * tenths).sum())  # exact: below 2**63 for up to 10**16 scores of 0..255 tenths
    squares = sum(int(c) * int(t) ** 2 for c, t in zip(counted, tenths, strict=True))
    row = {
        "n": n,
        "mean": total / (10 * n),
        "std": math.sqrt((n * squares - total * total) / (100 * n * (n - 1))) if n > 1 else float("nan"),
        "min": float(tenths[0] / 10),
        "q1": quantile(0.25),
        "median": (order((n - 1) // 2) + order(n // 2)) / 2,
        "q3": quantile(0.75),
        "max": float(tenths[-1] / 10),
    }
    return pd.DataFrame({key: [value] for key, value in row.items()}, index=pd.CategoricalIndex([category]))


def _distribution(fine: np.ndarray, category: Any) -> pd.DataFrame:
    """The row of :func:`fine_within_broad` for one category's scores ``fine``."""
    groups = pd.Series(fine).groupby(
        pd.Categorical.from_codes(np.zeros(fine.size, dtype=np.int8), categories=[category]), observed=False
    )
    return pd.DataFrame(
        {
            "n": groups.size(),
            "mean": groups.mean(),
            "std": groups.std(ddof=1),
            "min": groups.min(),
            "q1": groups.quantile(0.25),
            "median": groups.median(),
            "q3": groups.quantile(0.75),
            "max": groups.max(),
        }
    )
