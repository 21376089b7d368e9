"""The narrow entry point grading calls (through grading.hooks) after new judgments are committed."""
from __future__ import annotations


def schedule_auto_run(*, campaign_id: int) -> None:
    """Queue a debounced automatic analysis of the campaign; never more than one waits per campaign."""
    from analysis.services.runs import run_schedule_auto

    run_schedule_auto(campaign_id=campaign_id)
