"""model_truth reads the judgments' own columns: the same section and per-unit frame as the long frames
(values.categorical_long, numeric_long) and the outer merge it used before, on awkward judgments."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from analysis.metrics.dawid_skene import bias_noise, dawid_skene
from analysis.services.sections.model import MODEL_COLUMNS, _bias_noise_section, _id, _who, model_truth
from analysis.services.values import BROAD, BROAD_COLLAPSE, ValueSpec, categorical_long, numeric_long, with_values
from grading.models.choices import Scheme

SPEC = ValueSpec(Scheme.BROAD_FINE, "broad", BROAD, BROAD_COLLAPSE, "fine", "FINE", "interval")


def long_frames_model_truth(judgments, spec, pseudonyms):
    """model_truth as it was (a7317da): long frames, a groupby for the counts, an outer merge."""
    section, per_unit = {}, []
    cat = categorical_long(judgments, spec)
    if not cat.empty:
        fit = dawid_skene(cat[["unit", "grader", "value"]], categories=spec.categories)
        counts = cat.groupby("grader").size()
        graders = [
            {
                "grader": _id(g),
                "pseudonym": _who(g, pseudonyms),
                "judgments": int(counts.get(g, 0)),
                "accuracy": float(fit.accuracy[i]),
                "confusion": fit.confusion[i].tolist(),
            }
            for i, g in enumerate(fit.graders)
        ]
        section["dawid_skene"] = {
            "categories": [str(c) for c in fit.categories],
            "priors": fit.priors.tolist(),
            "iterations": fit.iterations,
            "converged": fit.converged,
            "log_likelihood": fit.log_likelihood,
            "units": int(fit.units.size),
            "settled_95": int((fit.probability >= 0.95).sum()),
            "graders": sorted(graders, key=lambda r: r["pseudonym"]),
        }
        position = {c: float(i) for i, c in enumerate(spec.categories)}
        labels = [position[v] for v in fit.labels]
        per_unit.append(pd.DataFrame({"unit": fit.units, "model_label": labels, "model_probability": fit.probability}))
    num = numeric_long(judgments)
    if not num.empty:
        fit = bias_noise(num[["unit", "grader", "value"]])
        section["bias_noise"] = _bias_noise_section(fit, pseudonyms, spec)
        per_unit.append(pd.DataFrame({"unit": fit.units, "model_score": fit.score, "model_se": fit.score_se}))
    units = pd.DataFrame(columns=["unit", *MODEL_COLUMNS])
    for part in per_unit:
        units = part if units.empty else units.merge(part, on="unit", how="outer")
    return section, units.reindex(columns=["unit", *MODEL_COLUMNS])


def judgments(*, seed, off_scale=0.0, no_fine=0.0, no_broad=0.0):
    rng = np.random.default_rng(seed)
    unit = np.repeat(np.arange(300) * 5 + 40, 4)
    grader = np.tile([7, 8, 9, 12], 300)
    truth = rng.integers(0, 3, 300)[unit // 5 - 8]
    broad = np.array(BROAD, dtype=object)[np.clip(truth + rng.integers(-1, 2, unit.size), 0, 2)]
    broad[rng.random(unit.size) < off_scale] = "??"
    broad[rng.random(unit.size) < no_broad] = None
    fine = np.round(truth * 3.5 + rng.normal(0, 1 + grader % 3, unit.size), 1)
    fine[rng.random(unit.size) < no_fine] = np.nan
    frame = pd.DataFrame({"unit": unit, "grader": grader, "query": unit // 50, "broad": broad, "fine": fine})
    return with_values(frame.sample(frac=0.9, random_state=seed), SPEC)


CASES = {
    "every judgment with both": {},
    "categories off the scale": dict(off_scale=0.1),
    "judgments without a number": dict(no_fine=0.2),
    "judgments without a category": dict(no_broad=0.2),
    "units with numbers only": dict(no_broad=0.6),
}


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_it_gives_what_the_long_frames_gave(case):
    frame = judgments(seed=len(case) + 1, **case)
    pseudonyms = {7: "ann", 8: "bob", 12: "cy"}
    section, units = model_truth(frame, SPEC, pseudonyms)
    expected_section, expected_units = long_frames_model_truth(frame, SPEC, pseudonyms)
    assert section == expected_section
    assert units.equals(expected_units) and (units.dtypes == expected_units.dtypes).all()
    assert units.index.equals(expected_units.index)
