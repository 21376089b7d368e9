"""The narrow entry point grading calls (through grading.hooks) after new judgments are committed."""

from __future__ import annotations

import time

from django.utils import timezone

from analysis.models import AnalysisRun, RunStatus, RunTrigger
from analysis.services.runs import run_schedule_auto

# campaign id -> time.monotonic() before which a queued automatic run is known not to have started.
# Until then new judgments need nothing: that run reads the database when it starts and sees them.
# This keeps the grading write path free of a scheduling query on almost every event.
_QUEUED_UNTIL: dict[int, float] = {}
_MARGIN_SECONDS = 2.0


def schedule_auto_run(*, campaign_id: int) -> None:
    """Queue a debounced automatic analysis of the campaign; never more than one waits per campaign."""
    if _QUEUED_UNTIL.get(campaign_id, 0.0) > time.monotonic():
        return
    run = run_schedule_auto(campaign_id=campaign_id)
    not_before = (
        run.not_before
        if run is not None
        else (
            AnalysisRun.objects.filter(campaign_id=campaign_id, trigger=RunTrigger.AUTO, status=RunStatus.QUEUED)
            .values_list("not_before", flat=True)
            .first()
        )
    )
    if not_before is not None:
        ahead = (not_before - timezone.now()).total_seconds() - _MARGIN_SECONDS
        if ahead > 0:
            _QUEUED_UNTIL[campaign_id] = time.monotonic() + ahead
