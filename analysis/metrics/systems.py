"""Systems judged by a campaign's ground truth, MIREX style (docs/design.md §5.7).

- :func:`system_scores`: each system's score from provenance (per query the mean ground truth of the
  candidates it returned, then the mean over queries), with a percentile bootstrap over queries;
- :func:`friedman` and :func:`nemenyi`: can the judgments tell the systems apart over queries, and
  which pairs; :func:`letter_groups`: the compact letter display of the pairs that cannot be told apart;
- uploaded per-unit system scores are evaluated in :mod:`.system_scores`.

References
----------
Downie, J. S. et al. (2010). The Music Information Retrieval Evaluation eXchange: some observations
and insights. Friedman, M. (1937). JASA 32(200). Nemenyi, P. (1963), as given by Demšar, J. (2006).
Statistical comparisons of classifiers over multiple data sets. JMLR 7. Piepho, H.-P. (2004). An
algorithm for a letter-based representation of all-pairwise comparisons. JCGS 13(2).
"""

from __future__ import annotations

import string
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from ._checks import as_long, as_positive_int, as_rng, short
from .bootstrap import percentile_interval

ALPHA = 0.05


def per_query_scores(truth: pd.Series, provenance: pd.DataFrame) -> pd.DataFrame:
    """The (queries × systems) matrix of per-query system scores.

    Parameters
    ----------
    truth : ground truth ``g_u`` indexed by unit (units without judgments absent or NaN).
    provenance : DataFrame (system, query, unit): system returned the unit's candidate for the query.

    Returns
    -------
    DataFrame indexed by query, one column per system (sorted): the mean ground truth of the
    candidates the system returned for the query; NaN where none of them has ground truth.
    """
    as_long(provenance, name="provenance", columns=("system", "query", "unit"))
    if not isinstance(truth, pd.Series):
        raise ValueError(f"`truth` must be a pandas Series indexed by unit, got {type(truth).__name__}")
    frame = (
        provenance.drop_duplicates(["system", "query", "unit"])
        .assign(g=lambda f: f["unit"].map(truth).astype(float))
        .dropna(subset=["g"])
    )
    if frame.empty:
        return pd.DataFrame(dtype=float)
    return frame.pivot_table(index="query", columns="system", values="g", aggfunc="mean").sort_index(axis=1)


def system_scores(
    per_query: pd.DataFrame, *, rng: np.random.Generator, n_boot: int = 1000, confidence: float = 0.95
) -> pd.DataFrame:
    """Each system's score ``S_s`` (mean over its queries) with a percentile bootstrap over queries.

    A replicate draws the campaign's queries with replacement (the same draw for every system, so
    the intervals of two systems share their queries) and averages each system's per-query scores
    over the drawn queries where it has one.

    Parameters
    ----------
    per_query : the (queries × systems) matrix of :func:`per_query_scores`.
    rng : seeded generator; n_boot : resamples; confidence : coverage of the interval.

    Returns
    -------
    DataFrame indexed by system: ``score``, ``ci_low``, ``ci_high``, ``n_queries``; sorted by score,
    best first.
    """
    rng = as_rng(rng)
    n_boot = as_positive_int(n_boot, name="n_boot")
    values = per_query.to_numpy(dtype=float)
    n = values.shape[0]
    if n == 0:
        return pd.DataFrame(columns=["score", "ci_low", "ci_high", "n_queries"], dtype=float)
    has = ~np.isnan(values)
    filled = np.where(has, values, 0.0)
    draws = rng.integers(0, n, size=(n_boot, n)) + np.arange(n_boot)[:, None] * n
    weights = np.bincount(draws.ravel(), minlength=n_boot * n).reshape(n_boot, n).astype(float)
    with np.errstate(invalid="ignore", divide="ignore"):
        replicates = (weights @ filled) / (weights @ has)  # (n_boot, k)
    bounds = np.array([percentile_interval(replicates[:, j], confidence) for j in range(values.shape[1])])
    out = pd.DataFrame(
        {
            "score": np.nanmean(np.where(has, values, np.nan), axis=0),
            "ci_low": bounds[:, 0],
            "ci_high": bounds[:, 1],
            "n_queries": has.sum(axis=0),
        },
        index=per_query.columns,
    )
    out.index.name = "system"
    return out.sort_values("score", ascending=False, kind="stable")


def _complete(per_query: pd.DataFrame) -> pd.DataFrame:
    complete = per_query.dropna(axis=0, how="any")
    if per_query.shape[1] < 3:
        raise ValueError(f"`per_query` has {per_query.shape[1]} systems; the Friedman test needs at least 3")
    if len(complete) < 2:
        raise ValueError(f"`per_query` has {len(complete)} queries scored for every system; at least 2 are needed")
    return complete


def friedman(per_query: pd.DataFrame) -> dict[str, Any]:
    """Friedman test over the queries where every system has a score, with Kendall's W.

    Returns
    -------
    dict: ``chi2``, ``df`` (k − 1), ``p``, ``w`` (= χ² / (n (k − 1))), ``n_queries`` (n),
    ``n_systems`` (k) and ``mean_ranks`` (system -> mean rank, 1 = lowest score).
    """
    complete = _complete(per_query)
    n, k = complete.shape
    result = stats.friedmanchisquare(*complete.to_numpy(dtype=float).T)
    ranks = stats.rankdata(complete.to_numpy(dtype=float), axis=1).mean(axis=0)
    chi2 = float(result.statistic)
    return {
        "chi2": chi2,
        "df": k - 1,
        "p": float(result.pvalue),
        "w": chi2 / (n * (k - 1)),
        "n_queries": int(n),
        "n_systems": int(k),
        "mean_ranks": dict(zip(map(str, complete.columns), ranks.tolist(), strict=True)),
    }


def nemenyi(per_query: pd.DataFrame) -> pd.DataFrame:
    """Nemenyi post hoc test on the Friedman ranks: the (k × k) matrix of p-values.

    ``q = |R̄_i − R̄_j| / sqrt(k (k + 1) / (6 n))`` and ``p = P(Q_{k,∞} > q √2)`` for the studentized
    range Q (Demšar 2006, eq. for the critical difference). Queries lacking a system's score are
    left out, as in :func:`friedman`.
    """
    complete = _complete(per_query)
    n, k = complete.shape
    ranks = stats.rankdata(complete.to_numpy(dtype=float), axis=1).mean(axis=0)
    upper = np.triu_indices(k, 1)  # the studentized range is slow to evaluate: each pair once
    q = np.abs(ranks[upper[0]] - ranks[upper[1]]) / np.sqrt(k * (k + 1) / (6 * n))
    p = np.ones((k, k))
    p[upper] = stats.studentized_range.sf(q * np.sqrt(2), k, np.inf)
    p.T[upper] = p[upper]
    return pd.DataFrame(np.minimum(p, 1.0), index=complete.columns, columns=complete.columns)


def letter_groups(order: list[Any], pvalues: pd.DataFrame, *, alpha: float = ALPHA) -> dict[Any, str]:
    """Compact letter display: systems sharing a letter cannot be told apart at ``alpha``.

    Piepho's (2004) insert-and-absorb algorithm: start with one group of all systems; for every pair
    that differs, split each group holding both into one without the first and one without the
    second; drop groups contained in another. Letters go to the groups in ``order`` (best first).

    Parameters
    ----------
    order : the systems, best first.
    pvalues : symmetric (k × k) DataFrame of pairwise p-values indexed by system.
    """
    if set(order) != set(pvalues.index) or set(order) != set(pvalues.columns):
        raise ValueError(f"`order` must name the systems of `pvalues`; got {short(list(order))}")
    groups: list[frozenset] = [frozenset(order)]
    for i, a in enumerate(order):
        for b in order[i + 1 :]:
            if not pvalues.loc[a, b] < alpha:
                continue
            split = []
            for g in groups:
                split.extend([g - {a}, g - {b}] if a in g and b in g else [g])
            groups = [g for g in dict.fromkeys(split) if g and not any(g < h for h in split)]
    position = {s: i for i, s in enumerate(order)}
    groups.sort(key=lambda g: sorted(position[s] for s in g))
    letters = string.ascii_lowercase + string.ascii_uppercase
    return {s: "".join(letters[j] for j, g in enumerate(groups) if s in g) for s in order}
