"""The report's model-based truth (docs/design.md §5.6): Dawid–Skene on the categories, bias +
noise on the numbers, each grader's estimated reliability, and per-unit model columns for the
ground-truth export.

Hidden units (repeats and gold) never reach this: the judgments are graders' real judgments only.
They are read a slice of whole units at a time (``Judgments.chunks``); the fits, which need every
judgment together, get them as compact codes (``_coded``).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pandas as pd

from analysis.metrics._panels import Panels, PanelsBuilder
from analysis.metrics.dawid_skene import Coded, bias_noise, dawid_skene, row_maxima
from analysis.metrics.shapes import runs
from analysis.services.judgments import Judgments, judgments_of
from analysis.services.values import ValueSpec, arrow_memory_release, heap_release, places, valued
from grading.models.choices import Scheme

MODEL_COLUMNS = ["model_label", "model_probability", "model_score", "model_se"]


def model_truth(
    judgments: pd.DataFrame | Judgments,
    spec: ValueSpec,
    pseudonyms: dict[int, str],
) -> tuple[dict[str, Any], pd.DataFrame]:
    """The result section and a per-unit frame (unit + MODEL_COLUMNS; model_label is the category's
    position in the scale, like ``majority``)."""
    J = judgments_of(judgments, spec)
    valued(pd.DataFrame(columns=J.columns), spec)  # the value columns are there
    section: dict[str, Any] = {}
    units = pd.DataFrame(columns=["unit", *MODEL_COLUMNS])
    if J.empty:
        return section, units
    judged, _ = J.units()
    # each fit in a function of its own: its per-judgment arrays are gone before the next one
    per_unit = [
        part
        for part in (
            _ds_units(J, judged, spec, pseudonyms, section),
            _bias_noise_units(J, judged, spec, pseudonyms, section),
        )
        if part is not None
    ]
    if len(per_unit) == 2 and np.array_equal(per_unit[0]["unit"].to_numpy(), per_unit[1]["unit"].to_numpy()):
        # the same sorted units: the outer merge below would only set the columns side by side
        return section, pd.concat([per_unit[0], per_unit[1].drop(columns="unit")], axis=1)
    for part in per_unit:
        units = (
            part
            if units.empty
            else units.drop(columns=[c for c in part if c != "unit" and c in units]).merge(part, on="unit", how="outer")
        )
    return section, units.reindex(columns=["unit", *MODEL_COLUMNS])


def _ds_units(
    J: Judgments, judged: np.ndarray, spec: ValueSpec, pseudonyms: dict[int, str], section: dict[str, Any]
) -> pd.DataFrame | None:
    """Dawid–Skene on the categories in the scale: its section, and per unit the label's position and
    its probability (None: no fit)."""
    if not spec.has_categories or spec.scheme == Scheme.NUMERIC or len(spec.categories) < 2:
        return None
    # a category outside the scale is left out, as values.categorical_long leaves it out
    coded = _coded(J, judged, "place", _Positions(spec))
    if coded is None:
        return None
    fit = dawid_skene(coded, categories=spec.categories)
    del coded
    section["dawid_skene"] = _ds_section(fit, pseudonyms)
    # the label's position in the scale: fit.labels are spec.categories[argmax]
    label = row_maxima(fit.posterior)[0].astype(float)
    return pd.DataFrame({"unit": fit.units, "model_label": label, "model_probability": fit.probability})


def _bias_noise_units(
    J: Judgments, judged: np.ndarray, spec: ValueSpec, pseudonyms: dict[int, str], section: dict[str, Any]
) -> pd.DataFrame | None:
    """The numeric grader model: its section, and per unit the model score and its standard error
    (None: no fit)."""
    if not spec.has_numbers or spec.scheme not in (Scheme.NUMERIC, Scheme.BROAD_FINE):
        return None
    # rows without a number are left out
    coded = _numeric_panels(J, judged) or _coded(J, judged, "num", _numbers)
    if coded is None:
        return None
    fit = bias_noise(coded)
    del coded
    section["bias_noise"] = _bias_noise_section(fit, pseudonyms, spec)
    return pd.DataFrame({"unit": fit.units, "model_score": fit.score, "model_se": fit.score_se})


# Both fits are EMs over every judgment at once, so they need every judgment together: not as the
# judgments' frame (or its long copies, 80 MB a column at 10^7 judgments) but as ``Coded`` arrays,
# filled a slice at a time. A judgment takes 4 bytes for its unit, 1 (2, 4 with many graders) for its
# grader and 1 for its category or 8 for its number. The codes are those ``dawid_skene._coded``
# gives the long frame of the same rows, in the same order, so the fits are the same to the bit.


_BLOCK = 1 << 17  # rows renumbered at a time


def _numeric_panels(J: Judgments, judged: np.ndarray) -> Panels | None:
    """The judgments with a number by panel (``_panels``), as ``panels_of`` makes them of their
    codes, without the codes (two passes over the slices); None where it makes none (the codes
    are then made for the fit)."""
    graders = J.graders()
    if not PanelsBuilder.possible(graders):
        return None
    builder = PanelsBuilder(judged, graders)

    def rows(*columns: str) -> Iterator[tuple[pd.DataFrame, np.ndarray, np.ndarray, np.ndarray]]:
        """Each slice's rows with a number: the slice, their units' codes, which rows, their numbers."""
        for chunk in J.chunks(["unit", *columns, "num"]):
            kept, keep = _numbers(chunk)
            yield chunk, _unit_codes(judged, chunk["unit"].to_numpy())[keep], keep, kept

    looked = (
        builder.look(unit, np.searchsorted(graders, chunk["grader"].to_numpy()[keep]))
        for chunk, unit, keep, _ in rows("grader")
    )
    if not all(looked) or not builder.lay_out():
        return None
    for _, unit, _, kept in rows():  # the values alone: the graders were looked at
        builder.fill(unit, kept)
    arrow_memory_release()
    heap_release()
    return builder.panels()


def _coded(J: Judgments, judged: np.ndarray, column: str, values: Any) -> Coded | None:
    """The judgments with a value in ``column`` as codes (None: none has one). ``judged``: every unit
    judged, sorted; ``values(slice) -> (values, rows with one)``."""
    n = len(J)
    unit = np.empty(n, dtype=np.int32 if judged.size < 2**31 else np.int64)
    grader = _Graders(n)
    value: np.ndarray | None = None
    at = 0
    for chunk in J.chunks(["unit", "grader", column]):
        kept, keep = values(chunk)
        if value is None:
            value = np.empty(n, dtype=kept.dtype)
        rows = slice(at, at + kept.size)
        unit[rows] = _unit_codes(judged, chunk["unit"].to_numpy())[keep]
        grader.add(chunk["grader"].to_numpy()[keep], rows)
        value[rows] = kept
        at += kept.size
    # what reading the slices held (Arrow's pool, the C heap), given back before the fit's arrays
    arrow_memory_release()
    heap_release()
    if not at or value is None:
        return None
    for codes in (unit, value):
        codes.resize(at, refcheck=False)  # in place: no copy of the kept rows
    unit, units = _units_with_values(unit, judged)
    codes, graders = grader.sorted(at)
    return Coded(unit, codes, value, units, graders)


def _unit_codes(judged: np.ndarray, units: np.ndarray) -> np.ndarray:
    """``np.searchsorted(judged, units)``: each row's unit as its position among every unit judged.

    A slice holds whole units in order, so its distinct units are consecutive units of ``judged``:
    the codes count the changes of unit from the first one's position, without a binary search per
    row (1 s of the model stage at 10^7 judgments). Any other ``units`` are searched."""
    if not units.size:
        return np.searchsorted(judged, units)
    starts, n = runs(units)
    distinct = units[starts]
    first = int(np.searchsorted(judged, distinct[0]))
    if np.array_equal(judged[first : first + distinct.size], distinct):
        return np.repeat(np.arange(first, first + distinct.size), n)
    return np.searchsorted(judged, units)


def _units_with_values(unit: np.ndarray, judged: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The codes of ``unit`` (positions in ``judged``) renumbered among the units they hold, and those units."""
    present = np.zeros(judged.size, dtype=bool)
    present[unit] = True
    if present.all():
        return unit, judged
    _renumber(unit, (np.cumsum(present) - 1).astype(unit.dtype))
    return unit, judged[present]


def _renumber(codes: np.ndarray, table: np.ndarray) -> None:
    """``codes[:] = table[codes]``, a block at a time: no temporary the size of ``codes``."""
    for start in range(0, codes.size, _BLOCK):
        block = codes[start : start + _BLOCK]
        block[:] = table[block]


class _Graders:
    """Grader codes of ``n`` rows, filled slice by slice: numbered as the graders come, then in sorted
    order of their ids (as ``dawid_skene._coded`` numbers them)."""

    def __init__(self, n: int) -> None:
        self.codes = np.empty(n, dtype=np.int8)
        self.ids: dict[Any, int] = {}  # each grader's number in order of coming
        self.dtype: np.dtype | None = None

    def add(self, graders: np.ndarray, rows: slice) -> None:
        seen, distinct = pd.factorize(graders)
        for g in distinct:
            self.ids.setdefault(g, len(self.ids))
        if len(self.ids) > np.iinfo(self.codes.dtype).max:
            self.codes = self.codes.astype(np.int16 if len(self.ids) < 2**15 else np.int32)
        self.codes[rows] = np.array([self.ids[g] for g in distinct], dtype=self.codes.dtype)[seen]
        if self.dtype is None:
            self.dtype = graders.dtype

    def sorted(self, n: int) -> tuple[np.ndarray, np.ndarray]:
        """The first ``n`` codes renumbered in sorted order of the ids, and the sorted ids."""
        came = np.asarray(list(self.ids), dtype=self.dtype)
        if came.dtype.kind in "iu":
            ids = np.sort(came)
            rank = np.searchsorted(ids, came)
        else:
            rank, ids = pd.factorize(came, sort=True)
            ids = np.asarray(ids)
        self.codes.resize(n, refcheck=False)
        _renumber(self.codes, rank.astype(self.codes.dtype))
        return self.codes, ids


class _Positions:
    """A slice's categories in the scale as their positions in it (int8 for fewer than 128), and
    which rows have one: ``dawid_skene._value_coded``'s lookup, on the rows ``isin`` keeps, from the
    slice's places in the scale (``values.places``), not from hashing every label."""

    def __init__(self, spec: ValueSpec) -> None:
        self.spec = spec
        self.dtype = np.int8 if len(spec.categories) < 128 else np.int32

    def __call__(self, chunk: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
        position = places(chunk, self.spec)
        keep = position >= 0
        return position[keep].astype(self.dtype, copy=False), keep


def _numbers(chunk: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """A slice's numbers (floats), and which rows have one."""
    num = chunk["num"]
    keep = num.notna().to_numpy()
    return num.to_numpy(dtype=float)[keep], keep


def _id(grader: Any) -> Any:
    """A database grader id as an int; a grader named in a ratings file keeps its name."""
    return int(grader) if isinstance(grader, int | np.integer) else str(grader)


def _who(grader: Any, pseudonyms: dict[int, str]) -> str:
    return pseudonyms.get(_id(grader), f"grader-{grader}")


def _ds_section(fit: Any, pseudonyms: dict[int, str]) -> dict[str, Any]:
    graders = [
        {
            "grader": _id(g),
            "pseudonym": _who(g, pseudonyms),
            "judgments": int(fit.n_judgments[i]),
            "accuracy": float(fit.accuracy[i]),
            "confusion": fit.confusion[i].tolist(),
        }
        for i, g in enumerate(fit.graders)
    ]
    return {
        "categories": [str(c) for c in fit.categories],
        "priors": fit.priors.tolist(),
        "iterations": fit.iterations,
        "converged": fit.converged,
        "log_likelihood": fit.log_likelihood,
        "units": int(fit.units.size),
        "settled_95": int((fit.probability >= 0.95).sum()),
        "graders": sorted(graders, key=lambda r: r["pseudonym"]),
    }


def _bias_noise_section(fit: Any, pseudonyms: dict[int, str], spec: ValueSpec) -> dict[str, Any]:
    return {
        "scale": spec.num_label,
        "iterations": fit.iterations,
        "converged": fit.converged,
        "log_likelihood": fit.log_likelihood,
        "units": int(fit.units.size),
        "median_se": float(np.median(fit.score_se)),
        "graders": sorted(
            (
                {
                    "grader": _id(g),
                    "pseudonym": _who(g, pseudonyms),
                    "judgments": int(fit.n_judgments[i]),
                    "bias": float(fit.bias[i]),
                    "bias_se": float(fit.bias_se[i]),
                    "noise": float(fit.noise[i]),
                }
                for i, g in enumerate(fit.graders)
            ),
            key=lambda r: r["pseudonym"],
        ),
    }
