"""The agreement, confusability and FINE-within-BROAD sections of the report, from `analysis.metrics`.

Every function takes the judgments (a ``judgments.Judgments``, or the long judgment frame of
`analysis.selectors`, which it wraps) and reads them a slice of whole units at a time
(``Judgments.chunks``): per-unit figures are kept per unit, never per judgment, except the FINE
scores the quartiles need (a byte a judgment, ``_compact``). Each returns plain data for the
JSON result; none touches the database.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from contextlib import closing
from typing import Any

import numpy as np
import pandas as pd

from analysis import metrics as m
from analysis.metrics.agreement import rated_groups
from analysis.reports.serialize import jsonable
from analysis.services import slice_memo
from analysis.services.judgments import Judgments, judgments_of
from analysis.services.slice_memo import SliceMemo, pieces
from analysis.services.values import (
    OUTSIDE,
    ValueSpec,
    arrow_memory_release,
    categorical_long,
    heap_release,
    numeric_long,
    places,
    sorted_unit_codes,
    valued,
)
from grading.models.choices import Scheme

HIST_BINS = 20
CRESCENT_MAX_POINTS = 2500
CRESCENT_GRID = (40, 25)
# The report's tables of the most and of the least confusable units: how many of each.
EXTREMES = 10
# What the report shows of each of them (``extremes``), as the per-unit table names it.
EXTREME_COLUMNS = ["unit", "n", "mean", "dif", "std", "entropy", "n_ns", "n_ss", "n_vs"]
# The columns of a long frame (``values.categorical_long``, ``numeric_long``) less its value.
LONG = ["unit", "grader", "query"]


def estimate(est: m.Estimate, *, label: bool = True) -> dict[str, Any]:
    out = {"value": est.value, "ci_low": est.ci_low, "ci_high": est.ci_high, "reason": est.reason}
    if label:
        out["label"] = m.landis_koch(est.value)
    return out


def undefined_estimate(reason: str) -> m.Estimate:
    return m.Estimate(m.Undefined(reason), float("nan"), float("nan"), reason)


def _records(frame: pd.DataFrame) -> list[dict[str, Any]]:
    return frame.to_dict("records")


def _valued(judgments: pd.DataFrame | Judgments, spec: ValueSpec) -> Judgments:
    """``judgments`` as a ``Judgments``, once checked to carry the value columns ``spec`` asks for
    (``values.valued``, on the column names alone)."""
    judgments = judgments_of(judgments, spec)
    valued(pd.DataFrame(columns=judgments.columns), spec)
    return judgments


def _released() -> None:
    """Give back what a pass over the slices freed before the next step's arrays: the C heap's
    pages (``values.heap_release``) and Arrow's pool, from which ``StoredJudgments`` read the
    parts (at 10^7 judgments, 200 MB held after each pass, under the bootstrap's peak)."""
    heap_release()
    arrow_memory_release()


# --- the agreement report: one builder for the app and the `agreement` command -------------------


def agreement_report(
    judgments: pd.DataFrame | Judgments,
    spec: ValueSpec,
    *,
    n_boot: int,
    confidence: float,
    seed: int,
    kept: m.KeptSums | None = None,
    memo: SliceMemo | None = None,
) -> tuple[dict[str, Any], pd.DataFrame]:
    """The agreement, confusability and FINE-within-BROAD sections, and the per-unit table.

    The analysis runs (judgments from the database) and ``manage.py agreement`` (a ratings file)
    both call this, so the same judgments, ``n_boot``, ``confidence`` and ``seed`` give the same
    sections with the same keys (docs/design.md §5.1).

    Parameters
    ----------
    judgments : ``Judgments`` (an analysis run's, from the shards' parts) or a long frame (a ratings
        file), one row per (unit, grader), columns unit, grader, query, the value columns ``spec``
        names (broad, fine, score, label or verdict) and ``cat``/``num`` as ``values.with_values``
        derives them (once, where the judgments are loaded).
    seed : seeds the one ``np.random.Generator`` of the agreement section (``agreement`` spawns the
        generators its bootstrap intervals draw from).
    kept : the bootstrap's blocks kept by the run before, lent to alpha's interval, which keeps its own
        there (``metrics.KeptSums``); None for a ratings file.
    memo : the sums of slices kept by the run before (``slice_memo``), lent to the sections that
        keep sums per slice, which keep this run's there; None for a ratings file.
    """
    rng = np.random.default_rng(seed)
    judgments = _valued(judgments, spec)
    units = unit_table(judgments, spec, memo)
    sections = {
        "agreement": agreement(judgments, spec, rng=rng, n_boot=n_boot, confidence=confidence, kept=kept, memo=memo),
        "confusability": confusability(units),
        "fine_within_broad": fine_within_broad(judgments, spec, memo),
    }
    heap_release()
    return sections, units


# --- agreement ------------------------------------------------------------------------------------


def agreement(
    judgments: pd.DataFrame | Judgments,
    spec: ValueSpec,
    *,
    rng: np.random.Generator,
    n_boot: int,
    confidence: float,
    kept: m.KeptSums | None = None,
    memo: SliceMemo | None = None,
) -> dict[str, Any]:
    """Fleiss' kappa (all levels, collapsed levels), per-category kappas, patterns, χ² tests, alpha.

    The kappas' intervals and alpha's draw from two generators spawned from ``rng`` (design §5.1),
    so alpha's draws do not depend on how many words the kappas' took: the same units draw the
    same whatever the category counts, and a run can take the blocks ``kept`` lends."""
    judgments = _valued(judgments, spec)
    kappas, alphas = rng.spawn(2)
    out: dict[str, Any] = {
        "levels": [],
        "alpha": None,
        "chi2_graders": None,
        "chi2_queries": None,
        "confidence": confidence,
        "n_boot": n_boot,
    }
    if spec.has_categories:
        out.update(_categorical_agreement(judgments, spec, rng=kappas, n_boot=n_boot, confidence=confidence, memo=memo))
    if spec.has_numbers:
        out["alpha"] = _alpha(judgments, spec, rng=alphas, n_boot=n_boot, confidence=confidence, kept=kept)
    return out


def _categorical_agreement(
    judgments: Judgments,
    spec: ValueSpec,
    *,
    rng: np.random.Generator,
    n_boot: int,
    confidence: float,
    memo: SliceMemo | None = None,
) -> dict[str, Any]:
    # Counted a slice of whole units at a time (``_categorical_slice``): the long frame of every
    # judgment, and the groupbys over it, held most of a gigabyte at 10^7 judgments. A slice gives
    # its distinct count rows, its graders x categories table and its queries x kinds table; the
    # campaign's are their sums, the same as from the table of every unit, and a slice's are
    # taken from ``memo`` where a run before counted the same rows.
    k, cats = len(spec.categories), list(spec.categories)
    counted = pieces(judgments, memo, "categorical", [*LONG, "place"], lambda c: _categorical_slice(c, spec))
    counted = [piece for piece in counted if piece[0] is not None]
    _released()
    if not counted:
        return {"units_rated": 0, "units_excluded": 0}
    slices = [rows for rows, _, _ in counted]
    # every unit's count row among the distinct rows of them all, in distinct_rows' order: the rows
    # of the slices' distinct rows, equal ones merged (their dtype that of the slices' tables joined)
    every = _joined_arrays([rows.iloc[:, :k].to_numpy() for rows in slices])
    distinct, into, _ = m.distinct_rows(every)
    sizes = np.bincount(into, weights=np.concatenate([rows["units"].to_numpy() for rows in slices]))
    sizes = sizes.astype(np.intp)
    rated = distinct.sum(axis=1) >= 2
    # graders x categories, as pd.crosstab of graders and labels gave it: the graders (sorted) and
    # the categories used (in the order of their labels as text) with a judgment in the scale
    by_grader = _joined([graded for _, graded, _ in counted]).groupby(level=0).sum()
    by_grader = by_grader.loc[by_grader.sum(axis=1).to_numpy() > 0]
    used = [j for j in sorted(range(k), key=lambda j: str(cats[j])) if by_grader[j].sum() > 0]
    by_grader = by_grader[used]
    out: dict[str, Any] = {
        "units_rated": int(sizes[rated].sum()),
        "units_excluded": int(sizes[~rated].sum()),
        "chi2_graders": m.chi2_independence(by_grader.to_numpy())._asdict(),
    }
    # Each level's figures are sums over units of a function of the unit's count row, and units with
    # equal rows are alike: they are computed from the distinct rows and how many units have each
    # (a few dozen at 10^7 judgments, where each pass over the 2,000,000 rows cost 0.1-0.3 s), and
    # the bootstrap draws from the same groups, in the same order, as from the table of every unit.
    # The collapsed level's rows are the collapsed distinct rows, equal ones merged.
    level = {"rng": rng, "n_boot": n_boot, "confidence": confidence}
    out["levels"] = [_level(f"{len(cats)} levels", distinct, sizes, cats, **level)]
    if spec.collapse:
        merged, merged_sizes, new_cats = m.collapse_groups(distinct, sizes, cats, spec.collapse)
        out["levels"].append(_level(f"{len(new_cats)} levels", merged, merged_sizes, new_cats, **level))
    out["cohen"] = _cohen(judgments, spec, cats) if len(by_grader) == 2 else None
    kinds = [by_query for _, _, by_query in counted if by_query is not None]
    if rated.any() and kinds:
        # the queries in the order of their first unit, as factorizing each unit's query numbers them
        table = _joined(kinds).groupby(level=0, sort=False).sum()
        out["chi2_queries"] = m.chi2_queries_counted(table.to_numpy())._asdict()
    return out


def _categorical_slice(
    chunk: pd.DataFrame, spec: ValueSpec
) -> tuple[pd.DataFrame | None, pd.DataFrame | None, pd.DataFrame | None]:
    """A slice's count rows (``shapes.distinct_rows`` of its units' counts in each category, with
    how many units have each), its graders x categories counts, and its queries (in the order of
    their first unit) x places in ``["", *KINDS]``; Nones when no judgment of it is in the scale.

    Each judgment's category is read as its place in the scale (``values.places``): the rows of
    ``values.categorical_long``, counted as ``shapes.long_to_counts`` and a groupby of (grader,
    label) counted them, without hashing every label."""
    k = len(spec.categories)
    place = places(chunk, spec)
    inside = place >= 0
    if not inside.any():
        return None, None, None
    place = place[inside]
    unit, grader = chunk["unit"].to_numpy()[inside], chunk["grader"].to_numpy()[inside]
    codes, first = _unit_codes(unit)  # each judgment's unit as its place among the sorted ids
    size = first.size
    grader_codes, graders = pd.factorize(grader, sort=True)  # the graders, sorted, by hashing
    table = np.bincount(codes * k + place, minlength=size * k).reshape(size, k)
    # Counts are a unit's judgments (a few): the smallest integer type holds them
    distinct, inverse, sizes = m.distinct_rows(table.astype(np.min_scalar_type(int(table.max()))))
    rows = pd.DataFrame(distinct, columns=[f"count_{j}" for j in range(k)]).assign(units=sizes.astype(np.int64))
    by_place = np.bincount(grader_codes * k + place, minlength=graders.size * k).reshape(graders.size, k)
    graded = pd.DataFrame(by_place, index=graders)
    query = chunk["query"].to_numpy()[inside][first]  # each unit's, from its first row
    has_query = ~pd.isna(query)
    if not has_query.any():
        return rows, graded, None
    query_codes, queries = pd.factorize(query[has_query])  # in the order of their first unit
    by_query = m.kinds_per_query(query_codes, m.kind_codes(distinct)[inverse][has_query])
    return rows, graded, pd.DataFrame(by_query, index=queries)


def _joined(pieces: list[pd.Series]) -> pd.Series:
    """The pieces of the slices (``Judgments.chunks``) as one."""
    return pieces[0] if len(pieces) == 1 else pd.concat(pieces)


def _joined_arrays(pieces: list[np.ndarray]) -> np.ndarray:
    return pieces[0] if len(pieces) == 1 else np.concatenate(pieces)


def _cohen(judgments: Judgments, spec: ValueSpec, categories: list[Any]) -> dict[str, Any] | None:
    """Cohen's kappas (unweighted, linear, quadratic over the category order) when exactly two
    graders judged; None otherwise. Undefined kappas are None with the reason."""

    def codes(chunk: pd.DataFrame) -> pd.DataFrame:
        cat = categorical_long(chunk, spec)
        return cat.assign(value=pd.Index(categories).get_indexer(cat["value"]).astype(float))

    wide = _wide(judgments, "cat", codes)  # (units, 2): the two graders' category positions
    if wide is None or wide.shape[1] != 2:
        return None
    positions = list(range(len(categories)))
    out: dict[str, Any] = {"graders": 2, "reasons": {}}
    for weights in ("unweighted", "linear", "quadratic"):
        value = m.cohen_kappa(wide[:, 0], wide[:, 1], weights=weights, categories=positions)
        out[weights] = None if m.reason_of(value) else float(value)
        if m.reason_of(value):
            out["reasons"][weights] = m.reason_of(value)
    return out


def _level(
    name: str,
    rows: np.ndarray,
    sizes: np.ndarray,
    categories: list[Any],
    *,
    rng: np.random.Generator,
    n_boot: int,
    confidence: float,
) -> dict[str, Any]:
    """One level's kappa with its interval, per-category kappas, patterns and kinds, from the level's
    distinct count ``rows`` (``shapes.distinct_rows``' order) and how many units have each
    (``sizes``); rows of fewer than two judgments are left out."""
    labels = [str(c) for c in categories]
    rows, sizes = rated_groups(rows, sizes)
    if rows.shape[0] == 0:
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
        n_boot, m.fleiss_kappa_ci(rows, sizes=sizes, rng=rng, n_boot=max(n_boot, 1), confidence=confidence)
    )
    per_category = m.fleiss_kappa_per_category(rows, sizes=sizes)
    patterns = m.pattern_table(rows, labels, sizes=sizes)
    return {
        "name": name,
        "categories": labels,
        "kappa": estimate(kappa),
        "per_category": [
            {"category": c, "kappa": float(k), "label": m.landis_koch(float(k))}
            for c, k in zip(labels, per_category, strict=True)
        ],
        "patterns": _records(patterns),
        "kinds": m.kind_summary(rows, sizes=sizes),
    }


def _alpha(
    judgments: Judgments,
    spec: ValueSpec,
    *,
    rng: np.random.Generator,
    n_boot: int,
    confidence: float,
    kept: m.KeptSums | None = None,
) -> dict[str, Any]:
    out = {"level": spec.alpha_level, "scale": spec.num_label}
    draws = {"rng": rng, "n_boot": max(n_boot, 1), "confidence": confidence, "kept": kept}
    if spec.alpha_level == "interval":  # from each unit's numbers, without a units x graders matrix
        runs = _number_runs(judgments)
        if runs is None:
            return {**out, **estimate(undefined_estimate("no unit has two or more judgments"))}
        est = m.interval_alpha_ci(runs, **draws)
    else:
        wide = _wide(judgments, "num", numeric_long)
        if wide is None or (~np.isnan(wide)).sum(axis=1).max() < 2:
            return {**out, **estimate(undefined_estimate("no unit has two or more judgments"))}
        est = m.krippendorff_alpha_ci(wide, spec.alpha_level, **draws)
    return {**out, **estimate(_no_interval_unless(n_boot, est))}


def _number_runs(judgments: Judgments) -> list[tuple[np.ndarray, np.ndarray]] | None:
    """Each slice's numbers as runs of units (``metrics.interval_alpha_ci``): how many numbers each
    of its units judged twice or more has, and those numbers, unit after unit in the order of the
    unit ids (within a unit, the order of the slice's rows); None when no unit has two.

    A units x graders matrix held 8 bytes for every unit and grader of the campaign, judged or not:
    80 MB for the bench's five graders at 10^7 judgments, and a crowd's thousands of graders would
    make it thousands of times that."""
    runs = []
    for chunk in judgments.chunks(["unit", "num"]):
        num = chunk["num"].to_numpy(dtype=float)
        has = ~np.isnan(num)
        unit, num = chunk["unit"].to_numpy()[has], num[has]
        if not unit.size:
            continue
        codes, size = sorted_unit_codes(unit)
        if not (codes[1:] >= codes[:-1]).all():  # rows not in unit order (a ratings file's)
            order = np.argsort(codes, kind="stable")
            codes, num = codes[order], num[order]
        lengths = np.bincount(codes, minlength=size)
        if (lengths >= 2).any():
            twice = np.repeat(lengths >= 2, lengths)
            runs.append((lengths[lengths >= 2], num if twice.all() else num[twice]))
    _released()
    return runs or None


def _wide(judgments: Judgments, column: str, long_of: Callable[[pd.DataFrame], pd.DataFrame]) -> np.ndarray | None:
    """``long_to_wide`` of the long frame ``long_of`` makes of the judgments' ``column`` (None when
    it is empty), a slice of whole units at a time; the slices' matrices are laid side by side on
    the graders of them all."""
    pieces = []
    for chunk in judgments.chunks([*LONG, column]):
        long = long_of(chunk)
        if not long.empty:
            pieces.append(m.long_to_wide(long)[::2])  # it reads unit, grader and value
    _released()
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


def unit_table(judgments: pd.DataFrame | Judgments, spec: ValueSpec, memo: SliceMemo | None = None) -> pd.DataFrame:
    """Per unit: query, n, mean, median, majority, dif, std, entropy, and the BROAD/label distribution.

    Computed a slice of whole units at a time (``Judgments.chunks``), each slice's rows written
    into the table's columns: at 10^7 judgments, groupbys over every judgment, and pieces joined
    and concatenated, held several times the 200 MB table. The figures of the units' numbers
    (``metrics.unit_confusability``, most of the table's time) of a slice whose rows did not change
    are read from the per-unit rows the run before stored (``memo.units``), as it computed them."""
    judgments = _valued(judgments, spec)
    if judgments.empty or not (spec.has_numbers or spec.has_categories):
        return pd.DataFrame(columns=["unit", "query", "n"])
    index = judgments.units()[0]  # sorted
    columns: dict[str, Any] = {"unit": index}
    # A column after another (Fortran order): the stored figures of a slice's units are written a
    # column at a time, each into a run of the column, not every seventh number of the rows.
    numbers = np.full((len(index), len(m.confusability.COLUMNS)), np.nan, order="F") if spec.has_numbers else None
    counts = np.zeros((len(index), len(spec.categories)), dtype=np.int64)
    any_numbers = False
    value_columns = [c for c, wanted in (("place", spec.has_categories), ("num", spec.has_numbers)) if wanted]
    marks = _unit_rows_marks(judgments, memo) if numbers is not None else None
    with closing(_stored_numbers(judgments, memo, marks)) as stored:
        for i, chunk in enumerate(judgments.chunks([*LONG, *value_columns])):
            codes, first = _unit_codes(chunk["unit"].to_numpy())
            rows = _rows_in(index, chunk["unit"].to_numpy()[first])  # the slice's units' rows of the table
            query = chunk["query"].to_numpy()[first]  # each unit's, from its first row
            if "query" not in columns:  # every unit's, of the judgments' dtype
                columns["query"] = np.empty(len(index), query.dtype)
            columns["query"][rows] = query
            if numbers is not None:
                had = _lent_numbers(memo, marks[i]) if marks is not None else None
                if had:
                    _numbers_taken(next(stored), numbers, index)
                elif had is None:  # computed
                    num = numeric_long(chunk)
                    had = not num.empty
                    if had:
                        per_unit = m.unit_confusability(num)  # it reads unit, grader and value
                        numbers[_rows_in(index, per_unit.index.to_numpy())] = per_unit.to_numpy(dtype=float)
                any_numbers |= had
                if marks is not None:
                    memo.keep(marks[i], b"numbers" if had else b"none")
            if spec.has_categories:  # each unit's judgments in each category of the scale, from their places in it
                counts[rows] = _category_counts(codes, first.size, places(chunk, spec), len(spec.categories))
    _released()
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


def _unit_rows_marks(judgments: Judgments, memo: SliceMemo | None) -> list[str] | None:
    """Each slice's mark among the keys a run keeps (``slice_memo``): kept by every run that
    stores its per-unit rows, it says that the run's stored rows of the slice's units were computed
    from the slice's rows; b"numbers" or b"none" whether any of them had a number. None: no keys."""
    keys = judgments.slice_keys(memo) if memo is not None else None
    return None if keys is None else [slice_memo.key("slice", "unit rows", k) for k in keys]


def _lent_numbers(memo: SliceMemo, mark: str) -> bool | None:
    """Whether the per-unit rows the run before stored hold the figures of the units' numbers
    (``metrics.confusability.COLUMNS``) of the slice marked ``mark`` (``_unit_rows_marks``):
    True, or False when none of its units had a number; None when they are to be computed."""
    lent = memo.units
    if lent is None or mark not in lent.keys:
        return None
    had = memo.lend(mark)
    return True if had == b"numbers" else False if had == b"none" else None


def _stored_numbers(
    judgments: Judgments, memo: SliceMemo | None, marks: list[str] | None
) -> Iterator[dict[str, np.ndarray]]:
    """The stored figures of each slice whose figures are taken (``_lent_numbers``), in order,
    read ahead of the slices (``unit_blocks.RunUnits.spans``; closed, it stops reading)."""
    if memo is None or memo.units is None or marks is None:
        return
    spans = judgments.slice_spans()
    assert spans is not None, "a run that marks its slices knows their spans"
    taken = [span for span, mark in zip(spans, marks, strict=True) if _lent_numbers(memo, mark)]
    yield from memo.units.rows.spans(taken, m.confusability.COLUMNS)


def _numbers_taken(stored: dict[str, np.ndarray], numbers: np.ndarray, index: np.ndarray) -> None:
    """Fill the rows of ``numbers`` of a slice's units from the rows the run before ``stored`` of
    them. A unit of the slice had a number when its stored n is more than 0 (the table's n is the
    count of its numbers)."""
    had = stored["n"] > 0
    every = bool(had.all())  # as a unit with a judgment mostly has a number: no copy of the columns
    rows = _rows_in(index, stored["unit"] if every else stored["unit"][had])
    for j, name in enumerate(m.confusability.COLUMNS):
        numbers[rows, j] = stored[name] if every else stored[name][had]


def _category_counts(codes: np.ndarray, size: int, place: np.ndarray, k: int) -> np.ndarray:
    """How many judgments of each of ``size`` units (``codes``: each judgment's, 0..size-1) are in
    each of the ``k`` categories of the scale: ``shapes.count_table`` of ``values.categorical_long``'s
    rows, from each judgment's place in the scale (``values.places``) where the two hashed every
    judgment's label (1.5–2.5 s of the table's 6–7 s at 10^7)."""
    inside = place >= 0
    return np.bincount(codes[inside] * k + place[inside], minlength=size * k).reshape(size, k)


def _unit_codes(unit: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each row's unit as 0.. in the order of the sorted unit ids, and each unit's first row (the
    rows ``drop_duplicates`` keeps): from the runs of equal ids when the rows are sorted by unit
    (a slice of the judgments is), else by sorting."""
    if unit.size and (unit[1:] >= unit[:-1]).all():
        codes, _ = sorted_unit_codes(unit)
        starts = np.empty(unit.size, dtype=bool)
        starts[:1], starts[1:] = True, unit[1:] != unit[:-1]
        return codes, np.flatnonzero(starts)
    _, first, codes = np.unique(unit, return_index=True, return_inverse=True)
    return codes.ravel(), first


def _rows_in(index: np.ndarray, units: np.ndarray) -> slice | np.ndarray:
    """The places of ``units`` (sorted) in ``index`` (sorted, holding them): a slice when they are a
    run of ``index`` (a slice's units are), found by one search, else each one searched."""
    if units.size:
        start = int(np.searchsorted(index, units[0]))
        run = index[start : start + units.size]
        if run.size == units.size and np.array_equal(run, units):
            return slice(start, start + units.size)
    return np.searchsorted(index, units)


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
    # The four columns read here, of the units judged twice, as arrays: a frame of them taken with
    # ``.loc`` copied them through pandas' blocks (the table is 200 MB at 10^7 judgments).
    twice = (units["n"] >= 2).to_numpy()
    rated = {c: units[c].to_numpy(dtype=float)[twice] for c in ("mean", "dif", "std", "entropy")}
    std = rated["std"]
    out: dict[str, Any] = {
        "available": True,
        "summary": m.confusability_summary(units),
        "distributions": {c: _histogram(rated[c]) for c in ("dif", "std", "entropy")},
    }
    if std.size:
        low, high = np.quantile(std, [1 / 6, 5 / 6])
        out["precision"] = {
            "mean_std": float(std.mean()),
            "std_std": float(std.std(ddof=1)) if std.size > 1 else None,
            "band_67": [float(low), float(high)],
        }
    out["crescent"] = _crescent(rated["mean"], std)
    out["extremes"] = extremes(units)
    return out


def extremes(units: pd.DataFrame, limit: int = EXTREMES) -> dict[str, Any]:
    """The ``limit`` most and least confusable units by std, of the units judged twice or more:
    ``most`` by std from the highest, ``least`` from the lowest, ties by the unit's id (or name)
    both ways; each with the per-unit table's ``EXTREME_COLUMNS`` it has, as plain JSON (a NaN as None).

    Chosen here, when the run is computed, so that the stored per-unit rows need no index on std
    for the report to find them (docs/analysis.md, "Storing a run's results")."""
    keep = (units["n"] >= 2).to_numpy() & units["std"].notna().to_numpy()
    std = units["std"].to_numpy(dtype=float)[keep]
    rows = np.flatnonzero(keep)
    ids = units["unit"].to_numpy()[keep]
    # ids or names: their order (the table's units come sorted, and then it is their place)
    unit_rank = np.arange(ids.size) if _increasing(ids) else pd.factorize(ids, sort=True)[0]
    columns = [c for c in EXTREME_COLUMNS if c in units.columns]

    def first(key: np.ndarray) -> list[dict[str, Any]]:
        if key.size > limit:  # those that can be among the first `limit` (every tie of the last one)
            bound = np.partition(key, limit - 1)[limit - 1]
            candidates = np.flatnonzero(key <= bound)
        else:
            candidates = np.arange(key.size)
        order = candidates[np.lexsort((unit_rank[candidates], key[candidates]))][:limit]
        return jsonable(_records(units.iloc[rows[order]][columns]))

    return {"measure": "std", "most": first(-std), "least": first(std)}


def _increasing(ids: np.ndarray) -> bool:
    """Strictly increasing ids (numbers, or names in order)."""
    try:
        return bool((ids[1:] > ids[:-1]).all())
    except TypeError:  # names and numbers mixed: no order to read off
        return False


def _crescent(mean: np.ndarray, std: np.ndarray) -> dict[str, Any]:
    """Points (few units) or a 2-D count grid (many), so the plot stays small."""
    if mean.size <= CRESCENT_MAX_POINTS:
        return {"kind": "points", "points": np.column_stack([mean, std]).tolist()}
    grid, x_edges, y_edges = _histogram2d(mean, std, CRESCENT_GRID)
    return {
        "kind": "grid",
        "counts": grid.astype(int).tolist(),
        "x_edges": x_edges.tolist(),
        "y_edges": y_edges.tolist(),
        "n": int(mean.size),
    }


def _histogram2d(x: np.ndarray, y: np.ndarray, bins: tuple[int, int]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``np.histogram2d(x, y, bins)`` of finite values (the same edges and counts), each value's bin
    found by arithmetic on the evenly spaced edges and corrected against them, as ``np.histogram``
    finds it, where ``histogram2d`` searches the edges for every value of a column it copies
    (0.12 s over 2,000,000 units). A value that is not finite is left to ``histogram2d`` to refuse."""
    if not (np.isfinite(x).all() and np.isfinite(y).all()):
        return np.histogram2d(x, y, bins=bins)
    edges = [_even_edges(values, n) for values, n in zip((x, y), bins, strict=True)]
    ix, iy = (_bin_of(values, e) for values, e in zip((x, y), edges, strict=True))
    counts = np.bincount(ix * bins[1] + iy, minlength=bins[0] * bins[1]).reshape(bins).astype(float)
    return counts, edges[0], edges[1]


def _even_edges(values: np.ndarray, n: int) -> np.ndarray:
    """``histogramdd``'s edges of ``n`` bins over the values (a bin of 1 around them all if equal)."""
    low, high = (float(values.min()), float(values.max())) if values.size else (0.0, 1.0)
    if low == high:
        low, high = low - 0.5, high + 0.5
    return np.linspace(low, high, n + 1)


def _bin_of(values: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """Each value's bin: the last edge at or below it (``searchsorted(..., "right") - 1``), the top
    edge in the last bin."""
    n = edges.size - 1
    at = ((values - edges[0]) * (n / (edges[-1] - edges[0]))).astype(np.intp)
    np.clip(at, 0, n - 1, out=at)
    at -= values < edges[at]
    at += (values >= edges[at + 1]) & (at != n - 1)
    return at


def fine_within_broad(
    judgments: pd.DataFrame | Judgments, spec: ValueSpec, memo: SliceMemo | None = None
) -> list[dict[str, Any]] | None:
    """FINE's distribution (``metrics.fine_within_broad``) per BROAD category, of the judgments with
    both; None for another scheme than BROAD_FINE.

    When every score is a tenth (FINE's own values), each category's figures come from how many
    times each tenth occurs (``metrics.TenthCounts``), and those counts are sums over the slices:
    with ``memo``, a slice's counts are taken from the run before where its rows did not change
    (``slice_memo.pieces``). A score that is not a tenth anywhere makes every slice read again, as
    without ``memo``: such scores are figured from their values, in order."""
    if spec.scheme != Scheme.BROAD_FINE:
        return None
    judgments = judgments_of(judgments, spec)
    counted = _tenths_counted(judgments, spec, memo) if memo is not None else None
    if counted is not None:
        if not counted.any():
            return []
        # each category's counts, or no score, as ``_expanded`` gives them
        scores: Iterable[np.ndarray | m.TenthCounts] = (m.TenthCounts(c) if c.any() else np.empty(0) for c in counted)
    else:
        pieces_ = _fine_by_broad(judgments, spec)
        if pieces_ is None:
            return []
        scores = map(_expanded, pieces_)
    table = m.fine_distributions(scores, spec.categories)  # one category at a time
    return _records(table.reset_index())


def _tenths_counted(judgments: Judgments, spec: ValueSpec, memo: SliceMemo) -> np.ndarray | None:
    """Per BROAD category (rows), how many of its judgments with both have each FINE tenth
    (columns, 0.0 to 25.5): the sums of every slice's counts (``_slice_tenths``), taken where a run
    before counted the same rows; None if a slice has a score that is not a tenth."""
    counted = pieces(
        judgments, memo, "fine tenths", ["place", "fine"], lambda chunk: _slice_tenths(chunk, judgments, spec)
    )
    total = np.zeros((len(spec.categories), 256), dtype=np.int64)
    for (frame,) in counted:
        if frame is None:
            return None
        total += frame.to_numpy(dtype=np.int64).T
    return total


def _slice_tenths(chunk: pd.DataFrame, judgments: Judgments, spec: ValueSpec) -> tuple[pd.DataFrame | None]:
    """One slice's counts of each category's FINE tenths (``_compact``'s bytes), a column per
    category; None when one of its scores is not a tenth."""
    scores = _slice_scores(chunk, judgments, spec) or [np.empty(0, dtype=np.uint8)] * len(spec.categories)
    if any(kept.size and kept.dtype != np.uint8 for kept in scores):
        return (None,)
    counts = {str(j): np.bincount(kept.astype(np.intp), minlength=256) for j, kept in enumerate(scores)}
    return (pd.DataFrame(counts),)


def _fine_by_broad(judgments: Judgments, spec: ValueSpec) -> list[list[np.ndarray]] | None:
    """Each BROAD category's FINE scores, of the judgments with both, in their order, as pieces
    (``_compact``) a slice at a time; None when no judgment has both.

    The quartiles, and the moments as pandas sums them, need every score of a category together
    and in this order: the pieces are what they keep of a slice, a byte a judgment for FINE (80 MB
    of floats at 10^7 judgments). BROAD is read as its place in the scale (``values.places``), not
    as its labels (2.4 s of hashing labels at 10^7); a label outside the scale is refused as
    ``metrics.fine_by_broad`` refuses it (``_outside_refused``)."""
    scores: list[list[np.ndarray]] = [[] for _ in spec.categories]
    seen = False
    for chunk in judgments.chunks(["place", "fine"]):
        pieces_ = _slice_scores(chunk, judgments, spec)
        if pieces_ is None:
            continue
        seen = True
        for kept, piece in zip(scores, pieces_, strict=True):
            kept.append(piece)
    _released()
    return scores if seen else None


def _slice_scores(chunk: pd.DataFrame, judgments: Judgments, spec: ValueSpec) -> list[np.ndarray] | None:
    """One slice's FINE scores of each BROAD category, of its judgments with both, in their order
    (``_compact``); None when none has both. A BROAD label outside the scale is refused."""
    place, fine = places(chunk, spec), chunk["fine"].to_numpy(dtype=float)
    both = (place != -1) & ~np.isnan(fine)
    if not both.any():
        return None
    place, fine = place[both], fine[both]
    if (place == OUTSIDE).any():
        _outside_refused(judgments, spec.categories)
    return [_compact(fine[place == j]) for j in range(len(spec.categories))]


def _outside_refused(judgments: Judgments, categories: list[Any]) -> None:
    """Raise ``metrics.fine_by_broad``'s error for the first BROAD label outside the scale."""
    for chunk in judgments.chunks(["broad", "fine"]):
        both = (chunk["broad"].notna() & chunk["fine"].notna()).to_numpy()
        if both.any():
            m.fine_by_broad(chunk["broad"].to_numpy()[both], chunk["fine"].to_numpy(dtype=float)[both], categories)
    raise AssertionError("a BROAD label outside the scale was seen, then not found")


def _compact(scores: np.ndarray) -> np.ndarray:
    """``scores`` (floats) as bytes counting tenths when they are 0.0, 0.1, .. 25.5 (FINE is 0..10 in
    tenths), else as they are: ``_expanded`` gives the same floats back (checked here), from an
    eighth of the space."""
    tenths = np.round(scores * 10)
    if scores.size and not np.signbit(scores).any() and tenths.max() <= 255 and (tenths / 10 == scores).all():
        return tenths.astype(np.uint8)
    return scores


def _expanded(pieces: list[np.ndarray]) -> np.ndarray | m.TenthCounts:
    """One category's scores from the pieces ``_compact`` made: counted when every piece is tenths
    (``metrics.TenthCounts``: its figures without a float per score, 2.4 s less at 10^7 judgments),
    else as floats."""
    pieces = [p for p in pieces if p.size]  # an empty piece is kept as floats: it says nothing
    if pieces and all(p.dtype == np.uint8 for p in pieces):
        return m.TenthCounts(sum(np.bincount(p, minlength=256) for p in pieces))
    return np.concatenate([p / 10 if p.dtype == np.uint8 else p for p in pieces]) if pieces else np.empty(0)
