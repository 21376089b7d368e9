"""The report's model-based truth (docs/design.md §5.6): Dawid–Skene on the categories, bias +
noise on the numbers, each grader's estimated reliability, and per-unit model columns for the
ground-truth export.

Hidden units (repeats and gold) never reach this: the judgments frame holds graders' real
judgments only.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from analysis.metrics.dawid_skene import bias_noise, dawid_skene
from analysis.services.values import ValueSpec, valued
from grading.models.choices import Scheme

MODEL_COLUMNS = ["model_label", "model_probability", "model_score", "model_se"]


def model_truth(
    judgments: pd.DataFrame,
    spec: ValueSpec,
    pseudonyms: dict[int, str],
) -> tuple[dict[str, Any], pd.DataFrame]:
    """The result section and a per-unit frame (unit + MODEL_COLUMNS; model_label is the category's
    position in the scale, like ``majority``)."""
    frame = valued(judgments, spec)
    section: dict[str, Any] = {}
    units = pd.DataFrame(columns=["unit", *MODEL_COLUMNS])
    if frame.empty:
        return section, units
    # each fit in a function of its own: its per-judgment temporaries are gone before the next one
    per_unit = [
        part
        for part in (_ds_units(frame, spec, pseudonyms, section), _bias_noise_units(frame, spec, pseudonyms, section))
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
    frame: pd.DataFrame, spec: ValueSpec, pseudonyms: dict[int, str], section: dict[str, Any]
) -> pd.DataFrame | None:
    """Dawid–Skene on the categories in the scale: its section, and per unit the label's position and
    its probability (None: no fit)."""
    if not spec.has_categories or spec.scheme == Scheme.NUMERIC:
        return None
    cat = frame["cat"]
    keep = cat.isin(spec.categories).to_numpy()  # the rows of values.categorical_long
    if not keep.any() or len(spec.categories) < 2:
        return None
    # a category outside the scale becomes missing, which dawid_skene leaves out
    fit = dawid_skene(_long(frame, cat if keep.all() else cat.where(keep)), categories=spec.categories)
    section["dawid_skene"] = _ds_section(fit, pseudonyms)
    # the label's position in the scale: fit.labels are spec.categories[argmax]
    label = fit.posterior.argmax(axis=1).astype(float)
    return pd.DataFrame({"unit": fit.units, "model_label": label, "model_probability": fit.probability})


def _bias_noise_units(
    frame: pd.DataFrame, spec: ValueSpec, pseudonyms: dict[int, str], section: dict[str, Any]
) -> pd.DataFrame | None:
    """The numeric grader model: its section, and per unit the model score and its standard error
    (None: no fit)."""
    if not spec.has_numbers or spec.scheme not in (Scheme.NUMERIC, Scheme.BROAD_FINE) or frame["num"].isna().all():
        return None
    fit = bias_noise(_long(frame, frame["num"]))  # bias_noise leaves out rows without a number
    section["bias_noise"] = _bias_noise_section(fit, pseudonyms, spec)
    return pd.DataFrame({"unit": fit.units, "model_score": fit.score, "model_se": fit.score_se})


def _long(frame: pd.DataFrame, value: pd.Series) -> pd.DataFrame:
    """The long shape (unit, grader, value) of the judgments, on their own columns: at 10^7 judgments
    each copy of a column is 80 MB (``values.categorical_long`` and ``numeric_long`` copy three)."""
    return pd.DataFrame({"unit": frame["unit"], "grader": frame["grader"], "value": value}, copy=False)


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
