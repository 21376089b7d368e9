"""A campaign's current judgments as the ratings CSV that ``manage.py agreement`` reads.

Columns ``unit,grader,query,value`` (``unit,grader,query,broad,fine`` for BROAD/FINE campaigns), ids
as numbers. The crowd-kit layout is ``worker,task,label`` (the grader, the unit, the categorical
value: the BROAD category, the score, the label), which crowd-kit's aggregators read as it is.
Running the command on this file with ``--scheme`` and the campaign's categories gives
the figures of an analysis run with the same seed, n_boot and confidence (judgments lacking a value,
e.g. a BROAD without its FINE yet, are left out of the file).
"""

from __future__ import annotations

import pandas as pd

from analysis.selectors import judgments_frame
from analysis.services.values import value_spec
from grading.models import Campaign
from grading.models.choices import Scheme

# campaign scheme -> (the agreement command's --scheme, the file's columns from the judgment frame)
RATINGS_LAYOUT = {
    Scheme.BROAD_FINE: ("broad_fine", {"broad": "broad", "fine": "fine"}),
    Scheme.NUMERIC: ("numeric", {"score": "value"}),
    Scheme.CATEGORICAL: ("categorical", {"label": "value"}),
}


def judgments_ratings_frame(campaign: Campaign) -> pd.DataFrame:
    """The campaign's complete judgments, one row per (unit, grader), in the ratings-file layout."""
    if campaign.scheme not in RATINGS_LAYOUT:
        raise ValueError(
            f"a {campaign.get_scheme_display()} campaign has no per-unit ratings to export; "
            f"expected one of {', '.join(RATINGS_LAYOUT)}"
        )
    _, columns = RATINGS_LAYOUT[campaign.scheme]
    frame = judgments_frame(campaign_id=campaign.pk)
    frame = frame.dropna(subset=list(columns)).rename(columns=columns)
    keep = ["unit", "grader", "query"] if frame["query"].notna().any() else ["unit", "grader"]
    return frame[[*keep, *columns.values()]].astype({"query": "Int64"} if "query" in keep else {})


def judgments_ratings_csv(campaign: Campaign) -> str:
    return judgments_ratings_frame(campaign).to_csv(index=False)


# campaign scheme -> the ratings column that is the crowd file's label
CROWDKIT_LABEL = {Scheme.BROAD_FINE: "broad", Scheme.NUMERIC: "value", Scheme.CATEGORICAL: "value"}


def judgments_crowdkit_csv(campaign: Campaign) -> str:
    """``worker,task,label``: one row per grader and unit with a value (BROAD for BROAD/FINE)."""
    frame = judgments_ratings_frame(campaign)
    label = frame[CROWDKIT_LABEL[campaign.scheme]]
    out = pd.DataFrame({"worker": frame["grader"], "task": frame["unit"], "label": label})
    return out.to_csv(index=False)


def crowdkit_agreement_arguments(campaign: Campaign) -> list[str]:
    """The ``manage.py agreement`` options that read the crowd-kit file as the campaign reads its labels."""
    if campaign.scheme == Scheme.BROAD_FINE:
        return ["--scheme", "categorical", "--categories", "NS,SS,VS", "--level", "ordinal"]
    return agreement_arguments(campaign)


def agreement_arguments(campaign: Campaign) -> list[str]:
    """The ``manage.py agreement`` options that read the exported file as the campaign reads it."""
    spec = value_spec(campaign)
    args = ["--scheme", RATINGS_LAYOUT[campaign.scheme][0], "--level", spec.alpha_level]
    if campaign.scheme == Scheme.NUMERIC:
        params = campaign.scheme_params or {}
        low, high, step = (float(params.get(k, d)) for k, d in (("min", 0), ("max", 10), ("step", 1)))
        args += ["--categories", ",".join(f"{low + i * step:g}" for i in range(int(round((high - low) / step)) + 1))]
    elif campaign.scheme == Scheme.CATEGORICAL:
        args += ["--categories", ",".join(map(str, spec.categories))]
    return args
