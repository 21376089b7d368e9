"""Uploads that change what the report shows: systems' orderings or per-unit scores, evaluated by the next
analysis run."""

from __future__ import annotations

import secrets
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser

from analysis.models import AnalysisRun, RunStatus
from analysis.services import runs
from grading.errors import InvalidValue
from grading.jsontext import surrogate_problem
from grading.models import Campaign
from grading.services.system_outputs import (
    SystemOrderingsSummary,
    csv_line,
    json_row,
    system_orderings_import,
    system_orderings_rows_from_csv,
)
from grading.services.system_scores import SystemScoresSummary, system_scores_import, system_scores_rows_from_csv


def run_after_upload(*, campaign_id: int, trigger: str, user: AbstractBaseUser | None) -> AnalysisRun:
    """A run that will read the data as it is now.

    ``run_create`` hands back an identical run that is already queued or running; a running one
    may have loaded its data before the upload, so then a second run (another seed) is queued.
    """
    run = runs.run_create(campaign_id=campaign_id, trigger=trigger, user=user)
    if run.status == RunStatus.RUNNING:
        run = runs.run_create(campaign_id=campaign_id, trigger=trigger, user=user, seed=secrets.randbits(31))
    return run


def system_orderings_upload(
    *,
    campaign: Campaign,
    rows: Sequence[Mapping[str, Any]],
    trigger: str,
    user: AbstractBaseUser | None,
    where: Callable[[int], str] = csv_line,
) -> tuple[SystemOrderingsSummary, AnalysisRun]:
    """Import the systems' orderings (all or nothing), then start an analysis run to score them."""
    summary = system_orderings_import(campaign=campaign, rows=rows, where=where, actor=user)
    return summary, run_after_upload(campaign_id=campaign.pk, trigger=trigger, user=user)


def system_scores_upload(
    *,
    campaign: Campaign,
    rows: Sequence[Mapping[str, Any]],
    trigger: str,
    user: AbstractBaseUser | None,
    where: Callable[[int], str] = csv_line,
) -> tuple[SystemScoresSummary, AnalysisRun]:
    """Import the systems' per-unit scores (all or nothing), then start an analysis run to evaluate them."""
    summary = system_scores_import(campaign=campaign, rows=rows, where=where, actor=user)
    return summary, run_after_upload(campaign_id=campaign.pk, trigger=trigger, user=user)


@dataclass(frozen=True)
class SystemsUpload:
    """One kind of systems upload: the columns of its CSV file (or of its JSON rows), how its file is
    read, and the import that stores it and starts the run."""

    kind: str
    header: str
    read_csv: Callable[[bytes], list[dict[str, str]]]
    upload: Callable[..., tuple[Any, AnalysisRun]]


SYSTEMS_UPLOADS = {
    "orderings": SystemsUpload(
        "orderings", "query,system,rank,item", system_orderings_rows_from_csv, system_orderings_upload
    ),
    "scores": SystemsUpload("scores", "unit,system,score", system_scores_rows_from_csv, system_scores_upload),
}


def systems_upload(
    *,
    kind: str,
    campaign: Campaign,
    file: Any = None,
    data: Any = None,
    trigger: str,
    user: AbstractBaseUser | None,
) -> tuple[Any, AnalysisRun]:
    """The one way in for systems' orderings and scores, from the report page and from the API: a
    CSV ``file`` (an uploaded file, at most UPLOAD_MAX_BYTES), else JSON ``data`` (``{"rows": [...]}``
    or ``[...]``). Imports all or nothing, then starts the run; InvalidValue names the row and field."""
    spec = SYSTEMS_UPLOADS[kind]
    if file is not None:
        limit = settings.UPLOAD_MAX_BYTES
        if file.size > limit:
            raise InvalidValue(
                f"the file is {file.size} bytes, larger than the {limit // 2**20} MB a systems file may be",
                field="file",
                value=file.name,
            )
        rows, where = spec.read_csv(file.read()), csv_line
    elif data is not None:
        rows, where = _json_rows(data, spec.header), json_row
    else:
        raise InvalidValue(f"choose a CSV file with the header {spec.header}", field="file")
    return spec.upload(campaign=campaign, rows=rows, trigger=trigger, user=user, where=where)


def _json_rows(data: Any, header: str) -> list[Any]:
    problem = surrogate_problem(data)
    if problem:
        raise InvalidValue(
            f"{problem[0]} holds text that is not valid Unicode: {problem[1]}", field=problem[0], value=problem[1]
        )
    rows = data.get("rows") if isinstance(data, dict) else data
    if not isinstance(rows, list):
        keys = ", ".join(header.split(","))
        raise InvalidValue(
            f'send a CSV as the multipart field `file`, or JSON {{"rows": [{{{keys}}}, ...]}}',
            field="rows",
            value=type(rows).__name__,
        )
    return rows
