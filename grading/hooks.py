"""The narrow entry points through which grading tells other apps that something happened.

Grading never imports `analysis` at module level (docs/design.md §3): each hook imports its target
lazily, so grading works and tests alone, and the dependency stays one-way.
"""

from __future__ import annotations


def judgments_changed(campaign_id: int) -> None:
    """New grading events were committed for a campaign: schedule a (debounced) automatic analysis."""
    from analysis.scheduling import schedule_auto_run

    schedule_auto_run(campaign_id=campaign_id)


def runs_headline(*, campaign_ids: list[int]) -> dict[int, dict]:
    """The latest analysis of each campaign at a glance (agreement, a failed run) for the home page."""
    from analysis.headlines import runs_headline

    return runs_headline(campaign_ids=campaign_ids)
