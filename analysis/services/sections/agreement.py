"""The agreement, confusability and FINE-within-BROAD sections of the report, from `analysis.metrics`.

Every function takes DataFrames (the long judgment frame of `analysis.selectors`) and returns plain
data for the JSON result; none touches the database.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from analysis import metrics as m
from analysis.services.values import (
    ValueSpec,
    categorical_long,
    heap_release,
    numeric_long,
    unit_chunks,
    valued,
)
from grading.models.choices import Scheme

HIST_BINS = 20
CRESCENT_MAX_POINTS = 2500
CRESCENT_GRID = (40, 25)


def estimate(est: m.Estimate, *, label: bool = True) -> dict[str, Any]:
    out = {"value": est.value, "ci_low": est.ci_low, "ci_high": est.ci_high, "reason": est.reason}
    if label:
        out["label"] = m.landis_koch(est.value)
    return out


def undefined_estimate(reason: str) -> m.Estimate:
    return m.Estimate(m.Undefined(reason), float("nan"), float("nan"), reason)


def _records(frame: pd.DataFrame) -> list[dict[str, Any]]:
    return frame.to_dict("records")


# --- the agreement report: one builder for the app and the `agreement` command -------------------


def agreement_report(
    judgments: pd.DataFrame, spec: ValueSpec, *, n_boot: int, confidence: float, seed: int
) -> tuple[dict[str, Any], pd.DataFrame]:
    """The agreement, confusability and FINE-within-BROAD sections, and the per-unit table.

    The analysis runs (judgments from the database) and ``manage.py agreement`` (a ratings file)
    both call this, so the same judgments, ``n_boot``, ``confidence`` and ``seed`` give the same
    sections with the same keys (docs/design.md §5.1).

    Parameters
    ----------
    judgments : long frame, one row per (unit, grader), columns unit, grader, query, the value
        columns ``spec`` names (broad, fine, score, label or verdict) and ``cat``/``num`` as
        ``values.with_values`` derives them (once, where the judgments are loaded).
    seed : seeds the one ``np.random.Generator`` of the agreement section; its bootstrap intervals
        draw from it in a fixed order (each kappa level in turn, then alpha).
    """
    rng = np.random.default_rng(seed)
    units = unit_table(judgments, spec)
    heap_release()  # what the slices freed, before the agreement's own arrays
    sections = {
        "agreement": agreement(judgments, spec, rng=rng, n_boot=n_boot, confidence=confidence),
        "confusability": confusability(units),
        "fine_within_broad": fine_within_broad(judgments, spec),
    }
    heap_release()
    return sections, units


# --- agreement ------------------------------------------------------------------------------------


def agreement(
    judgments: pd.DataFrame, spec: ValueSpec, *, rng: np.random.Generator, n_boot: int, confidence: float
) -> dict[str, Any]:
    """Fleiss' kappa (all levels, collapsed levels), per-category kappas, patterns, χ² tests, alpha."""
    frame = valued(judgments, spec)
    out: dict[str, Any] = {
        "levels": [],
        "alpha": None,
        "chi2_graders": None,
        "chi2_queries": None,
        "confidence": confidence,
        "n_boot": n_boot,
    }
    if spec.has_categories:
        out.update(_categorical_agreement(frame, spec, rng=rng, n_boot=n_boot, confidence=confidence))
    if spec.has_numbers:
        out["alpha"] = _alpha(frame, spec, rng=rng, n_boot=n_boot, confidence=confidence)
    return out


def _categorical_agreement(
    frame: pd.DataFrame, spec: ValueSpec, *, rng: np.random.Generator, n_boot: int, confidence: float
) -> dict[str, Any]:
    # The count table, each unit's query and the graders x categories table, a slice of whole units
    # at a time (``values.unit_chunks``): the long frame of every judgment, and the groupbys over
    # it, held most of a gigabyte at 10^7 judgments.
    tables, queries, graded = [], [], []
    for rows in unit_chunks(frame):
        cat = categorical_long(frame.iloc[rows], spec)
        if cat.empty:
            continue
        table, units, cats = m.long_to_counts(cat[["unit", "grader", "value"]], spec.categories)
        # Counts are a unit's judgments (a few): the smallest integer type holds them, an eighth of
        # int64's 48 MB at 10^7; every metric reads them through as_count_table, as floats.
        tables.append(table.astype(np.min_scalar_type(int(table.max()))))
        queries.append(cat.drop_duplicates("unit").set_index("unit")["query"].reindex(units).to_numpy())
        graded.append(cat.groupby([cat["grader"], cat["value"].astype(str)]).size())
    if not tables:
        return {"units_rated": 0, "units_excluded": 0}
    counts = _joined_arrays(tables)
    del tables
    rated = counts.sum(axis=1) >= 2
    by_grader = _joined(graded).groupby(level=[0, 1]).sum().unstack(fill_value=0)  # as pd.crosstab
    out: dict[str, Any] = {
        "units_rated": int(rated.sum()),
        "units_excluded": int((~rated).sum()),
        "chi2_graders": m.chi2_independence(by_grader.to_numpy())._asdict(),
    }
    every = bool(rated.all())  # then the levels read the count table itself, not a copy of its rows
    out["levels"] = [
        _level(
            f"{len(cats)} levels",
            counts if every else counts[rated],
            cats,
            rng=rng,
            n_boot=n_boot,
            confidence=confidence,
        )
    ]
    if spec.collapse:  # collapsed once the first level is done with its temporaries
        collapsed, new_cats = m.collapse_counts(counts, cats, spec.collapse)
        table = collapsed if every else collapsed[rated]
        del collapsed
        out["levels"].append(
            _level(f"{len(new_cats)} levels", table, new_cats, rng=rng, n_boot=n_boot, confidence=confidence)
        )
        del table
    out["cohen"] = _cohen(frame, spec, cats) if len(by_grader) == 2 else None
    query_of = pd.Series(_joined_arrays(queries))
    if rated.any() and query_of.notna().any():
        kinds = m.pattern_kinds(counts)
        has_query = query_of.notna().to_numpy()
        query_codes, _ = pd.factorize(query_of.to_numpy()[has_query])  # ids or names: only groups matter
        out["chi2_queries"] = m.chi2_queries(query_codes, kinds[has_query])._asdict()
    return out


def _joined(pieces: list[pd.Series]) -> pd.Series:
    """The pieces of ``unit_chunks``'s slices as one."""
    return pieces[0] if len(pieces) == 1 else pd.concat(pieces)


def _joined_arrays(pieces: list[np.ndarray]) -> np.ndarray:
    return pieces[0] if len(pieces) == 1 else np.concatenate(pieces)


def _cohen(frame: pd.DataFrame, spec: ValueSpec, categories: list[Any]) -> dict[str, Any] | None:
    """Cohen's kappas (unweighted, linear, quadratic over the category order) when exactly two
    graders judged; None otherwise. Undefined kappas are None with the reason."""
    cat = categorical_long(frame, spec)
    graders = pd.unique(cat["grader"])
    if len(graders) != 2:
        return None
    codes = cat.assign(value=pd.Index(categories).get_indexer(cat["value"]).astype(float))
    wide, _, _ = m.long_to_wide(codes[["unit", "grader", "value"]])
    positions = list(range(len(categories)))
    out: dict[str, Any] = {"graders": 2, "reasons": {}}
    for weights in ("unweighted", "linear", "quadratic"):
        value = m.cohen_kappa(wide[:, 0], wide[:, 1], weights=weights, categories=positions)
        out[weights] = None if m.reason_of(value) else float(value)
        if m.reason_of(value):
            out["reasons"][weights] = m.reason_of(value)
    return out


def _level(
    name: str, counts: np.ndarray, categories: list[Any], *, rng: np.random.Generator, n_boot: int, confidence: float
) -> dict[str, Any]:
    labels = [str(c) for c in categories]
    if counts.shape[0] == 0:
        reason = "no unit has two or more judgments"
        return {
            "name": name,
            "categories": labels,
            "kappa": estimate(undefined_estimate(reason)),
            "per_category": [],
            "patterns": [],
            "kinds": {},
        }
    kappa = _no_interval_unless(
        n_boot, m.fleiss_kappa_ci(counts, rng=rng, n_boot=max(n_boot, 1), confidence=confidence)
    )
    per_category = m.fleiss_kappa_per_category(counts)
    patterns = m.pattern_table(counts, labels)
    return {
        "name": name,
        "categories": labels,
        "kappa": estimate(kappa),
        "per_category": [
            {"category": c, "kappa": float(k), "label": m.landis_koch(float(k))}
            for c, k in zip(labels, per_category, strict=True)
        ],
        "patterns": _records(patterns),
        "kinds": m.kind_summary(counts),
    }


def _alpha(
    frame: pd.DataFrame, spec: ValueSpec, *, rng: np.random.Generator, n_boot: int, confidence: float
) -> dict[str, Any]:
    out = {"level": spec.alpha_level, "scale": spec.num_label}
    wide = _wide(frame)
    if wide is None or (~np.isnan(wide)).sum(axis=1).max() < 2:
        return {**out, **estimate(undefined_estimate("no unit has two or more judgments"))}
    est = _no_interval_unless(
        n_boot, m.krippendorff_alpha_ci(wide, spec.alpha_level, rng=rng, n_boot=max(n_boot, 1), confidence=confidence)
    )
    return {**out, **estimate(est)}


def _wide(frame: pd.DataFrame) -> np.ndarray | None:
    """``long_to_wide`` of the judgments with a number (None when none has one), a slice of whole
    units at a time (``values.unit_chunks``); the slices' matrices are laid side by side on the
    graders of them all."""
    pieces = []
    for rows in unit_chunks(frame):
        num = numeric_long(frame.iloc[rows])
        if not num.empty:
            pieces.append(m.long_to_wide(num[["unit", "grader", "value"]])[::2])
    if not pieces:
        return None
    graders = pieces[0][1]
    for _, more in pieces[1:]:
        graders = graders if more.equals(graders) else graders.union(more)
    if len(pieces) == 1 and pieces[0][1].equals(graders):
        return pieces[0][0]
    wide = np.empty((sum(p.shape[0] for p, _ in pieces), len(graders)))
    start = 0
    while pieces:  # each piece let go once copied, as the matrix's rows are first written
        piece, columns = pieces.pop(0)
        rows = wide[start : start + piece.shape[0]]
        rows.fill(np.nan)
        rows[:, graders.get_indexer(columns)] = piece
        start += piece.shape[0]
        del piece, rows
    return wide


def _no_interval_unless(n_boot: int, est: m.Estimate) -> m.Estimate:
    """``n_boot`` 0 (the agreement command's --bootstrap 0) asks for the point estimate alone."""
    return est if n_boot else est._replace(ci_low=float("nan"), ci_high=float("nan"))


# --- per unit ---------------------------------------------------------------------------------------


def unit_table(judgments: pd.DataFrame, spec: ValueSpec) -> pd.DataFrame:
    """Per unit: query, n, mean, median, majority, dif, std, entropy, and the BROAD/label distribution.

    Computed a slice of whole units at a time (``values.unit_chunks``), each slice's rows written
    into the table's columns: at 10^7 judgments, groupbys over every judgment, and pieces joined
    and concatenated, held several times the 200 MB table."""
    frame = valued(judgments, spec)
    if frame.empty or not (spec.has_numbers or spec.has_categories):
        return pd.DataFrame(columns=["unit", "query", "n"])
    chunks = unit_chunks(frame)
    index = _sorted_units(frame["unit"], split=len(chunks) > 1)
    columns: dict[str, Any] = {"unit": index.to_numpy(), "query": np.empty(len(index), frame["query"].dtype)}
    numbers = np.full((len(index), len(m.confusability.COLUMNS)), np.nan) if spec.has_numbers else None
    counts = np.zeros((len(index), len(spec.categories)), dtype=np.int64)
    any_numbers = False
    for rows in chunks:
        chunk = frame.iloc[rows]
        query_of = chunk[["unit", "query"]].drop_duplicates("unit")
        columns["query"][index.searchsorted(query_of["unit"])] = query_of["query"].to_numpy()
        if numbers is not None:
            num = numeric_long(chunk)
            if not num.empty:
                per_unit = m.unit_confusability(num[["unit", "grader", "value"]])
                numbers[index.searchsorted(per_unit.index)] = per_unit.to_numpy(dtype=float)
                any_numbers = True
        if spec.has_categories:
            cat = categorical_long(chunk, spec)
            counted = m.count_table(cat["unit"], cat["value"], spec.categories)
            counts[index.searchsorted(counted.index)] = counted.to_numpy()
    if any_numbers:  # the columns of unit_confusability, as its left join on the units gave them
        columns.update(zip(m.confusability.COLUMNS, numbers.T, strict=True))
    del numbers
    if spec.has_categories:
        if spec.scheme == Scheme.BROAD_FINE:
            for j, label in enumerate(spec.categories):
                columns[f"n_{label.lower()}"] = counts[:, j]
        else:
            columns["distribution"] = [
                dict(zip(map(str, spec.categories), map(int, row), strict=True)) for row in counts
            ]
        if "n" not in columns:
            columns["n"] = counts.sum(axis=1)
    columns["n"] = pd.Series(columns["n"]).fillna(0).astype(int).to_numpy()
    return pd.DataFrame(columns, copy=False)  # the columns are laid out by dtype once (copy=True: twice)


def _sorted_units(units: pd.Series, *, split: bool) -> pd.Index:
    """The distinct units, sorted; ``split``: ``units`` is sorted (``unit_chunks`` split it), so
    they are the first of each run."""
    if not split:
        return pd.Index(sorted(units.drop_duplicates()), name="unit")
    values = units.to_numpy()
    return pd.Index(values[np.flatnonzero(np.r_[True, values[1:] != values[:-1]])], name="unit")


def _histogram(values: np.ndarray) -> dict[str, list[float]]:
    values = values[np.isfinite(values)]
    if values.size == 0:
        return {"edges": [], "counts": []}
    counts, edges = np.histogram(values, bins=HIST_BINS)
    return {"edges": edges.tolist(), "counts": counts.tolist()}


def confusability(units: pd.DataFrame) -> dict[str, Any]:
    """Summary, distributions of dif/std/entropy, instrument precision and the crescent's data."""
    if units.empty or "std" not in units:
        return {"available": False}
    # The four columns read here, of the units judged twice: the table's other columns would be
    # copied with them (the table is 200 MB at 10^7 judgments).
    rated = units.loc[units["n"] >= 2, ["mean", "dif", "std", "entropy"]]
    std = rated["std"].to_numpy(dtype=float)
    out: dict[str, Any] = {
        "available": True,
        "summary": m.confusability_summary(units),
        "distributions": {c: _histogram(rated[c].to_numpy(dtype=float)) for c in ("dif", "std", "entropy")},
    }
    if std.size:
        low, high = np.quantile(std, [1 / 6, 5 / 6])
        out["precision"] = {
            "mean_std": float(std.mean()),
            "std_std": float(std.std(ddof=1)) if std.size > 1 else None,
            "band_67": [float(low), float(high)],
        }
    out["crescent"] = _crescent(rated["mean"].to_numpy(dtype=float), std)
    return out


def _crescent(mean: np.ndarray, std: np.ndarray) -> dict[str, Any]:
    """Points (few units) or a 2-D count grid (many), so the plot stays small."""
    if mean.size <= CRESCENT_MAX_POINTS:
        return {"kind": "points", "points": np.column_stack([mean, std]).tolist()}
    grid, x_edges, y_edges = np.histogram2d(mean, std, bins=CRESCENT_GRID)
    return {
        "kind": "grid",
        "counts": grid.astype(int).tolist(),
        "x_edges": x_edges.tolist(),
        "y_edges": y_edges.tolist(),
        "n": int(mean.size),
    }


def fine_within_broad(judgments: pd.DataFrame, spec: ValueSpec) -> list[dict[str, Any]] | None:
    if spec.scheme != Scheme.BROAD_FINE:
        return None
    both = (judgments["broad"].notna() & judgments["fine"].notna()).to_numpy()
    if not both.any():
        return []
    broad, fine = judgments["broad"].to_numpy(), judgments["fine"].to_numpy(dtype=float)
    if not both.all():  # the common case, every judgment with both, copies neither column (80 MB each at 10^7)
        broad, fine = broad[both], fine[both]
    table = m.fine_within_broad(broad, fine, spec.categories)
    return _records(table.reset_index())
