"""Uploads that change what the report shows: systems' orderings or per-unit scores, evaluated by the next
analysis run."""

from __future__ import annotations

import secrets
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from django.contrib.auth.models import AbstractBaseUser

from analysis.models import AnalysisRun, RunStatus
from analysis.services import runs
from grading.models import Campaign
from grading.services.system_outputs import SystemOrderingsSummary, csv_line, system_orderings_import
from grading.services.system_scores import SystemScoresSummary, system_scores_import


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
